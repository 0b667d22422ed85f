//! The one query builder behind `GET /merge_requests`, `/groups/:id/merge_requests` and
//! `/projects/:id/merge_requests`: which MRs the viewer may see (project visibility and the
//! merge requests feature) and GitLab's filters.

use super::TenantDb;
use super::issue_filter::Wildcard;
use super::noteables::push_my_reaction;
use super::projects::{Viewer, push_authorized, push_excluded};
use super::sql::{Sql, escape_like};
use super::window::Window;
use crate::model::merge_requests::{MergeRequestRow, MergeRequestState, merge_request_columns};
use crate::model::noteables::Noteable;

/// Which MRs the list starts from.
#[derive(Debug, Clone)]
pub enum MergeRequestSource {
    /// One project whose MRs the caller may read.
    Project { id: i64 },
    /// The projects below a group (traversal prefix) that the viewer may see.
    Group { traversal: String },
    /// Every project the viewer may see.
    All,
}

/// A merge request list's query: the criteria as the client gave them, resolved to ids.
#[derive(Debug, Clone)]
pub struct MergeRequestFilter {
    pub source: MergeRequestSource,
    pub viewer: Viewer,
    pub today: String,
    /// `None` for all.
    pub state: Option<MergeRequestState>,
    pub iids: Option<Vec<i64>>,
    pub source_branch: Option<String>,
    pub target_branch: Option<String>,
    pub author_id: Option<i64>,
    pub assignee: Wildcard<i64>,
    pub reviewer: Wildcard<i64>,
    /// `None` / `Any` / all of these names (lower-cased).
    pub labels: Wildcard<Vec<String>>,
    /// `None`, `Any` or a title.
    pub milestone: Wildcard<String>,
    pub search: Option<String>,
    pub search_title: bool,
    pub search_description: bool,
    pub draft: Option<bool>,
    /// The viewer's own award on the MR (`None`, `Any` or an emoji name).
    pub my_reaction_emoji: Wildcard<String>,
    pub created_after: Option<i64>,
    pub created_before: Option<i64>,
    pub updated_after: Option<i64>,
    pub updated_before: Option<i64>,
    /// Projects left out (refused by external authorization).
    pub excluded_projects: Vec<i64>,
}

impl MergeRequestFilter {
    pub fn new(source: MergeRequestSource, viewer: Viewer, today: String) -> Self {
        MergeRequestFilter {
            source,
            viewer,
            today,
            state: None,
            iids: None,
            source_branch: None,
            target_branch: None,
            author_id: None,
            assignee: Wildcard::Unset,
            reviewer: Wildcard::Unset,
            labels: Wildcard::Unset,
            milestone: Wildcard::Unset,
            search: None,
            my_reaction_emoji: Wildcard::Unset,
            search_title: true,
            search_description: true,
            draft: None,
            created_after: None,
            created_before: None,
            updated_after: None,
            updated_before: None,
            excluded_projects: Vec::new(),
        }
    }

    /// The projects (alias `p`) whose MRs the viewer may read: visible projects with the
    /// feature enabled, or `private` to reporters and above.
    fn push_readable_projects(&self, sql: &mut Sql, tenant_id: i64) {
        sql.push("SELECT p.id FROM projects p");
        if let MergeRequestSource::Group { .. } = self.source {
            sql.push(
                " JOIN namespaces pn ON pn.tenant_id = p.tenant_id AND pn.id = p.namespace_id",
            );
        }
        sql.push(" WHERE p.tenant_id = ")
            .bind(tenant_id)
            .push(" AND p.merge_requests_access_level <> 'disabled'");
        if let MergeRequestSource::Group { traversal } = &self.source {
            sql.push(" AND pn.traversal LIKE ")
                .bind(format!("{}%", escape_like(traversal)))
                .push(" ESCAPE '\\'");
        }
        push_excluded(sql, &self.excluded_projects);
        match self.viewer {
            Viewer::Admin { .. } => {}
            Viewer::Anonymous => {
                sql.push(
                    " AND p.visibility_level = 20 AND p.merge_requests_access_level = 'enabled'",
                );
            }
            Viewer::User { id, external } => {
                let floor = if external { 20 } else { 10 };
                sql.push(" AND ((p.visibility_level >= ")
                    .bind(floor)
                    .push(" AND p.merge_requests_access_level = 'enabled') OR");
                push_authorized(sql, tenant_id, id, 20, &self.today);
                sql.push(")");
            }
        }
    }

    fn push_users(sql: &mut Sql, table: &str, wildcard: &Wildcard<i64>) {
        let link = format!(
            "SELECT 1 FROM {table} x WHERE x.tenant_id = m.tenant_id AND x.merge_request_id = m.id"
        );
        match wildcard {
            Wildcard::Unset => {}
            Wildcard::None => {
                sql.push(&format!(" AND NOT EXISTS ({link})"));
            }
            Wildcard::Any => {
                sql.push(&format!(" AND EXISTS ({link})"));
            }
            Wildcard::Value(id) => {
                sql.push(&format!(" AND EXISTS ({link} AND x.user_id = "))
                    .bind(*id)
                    .push(")");
            }
        }
    }

    /// `SELECT <columns> FROM merge_requests m WHERE ...` with every filter.
    fn query(&self, tenant_id: i64, columns: &str) -> Sql {
        let mut sql = Sql::new(&format!(
            "SELECT {columns} FROM merge_requests m WHERE m.tenant_id = "
        ));
        sql.bind(tenant_id);
        match &self.source {
            MergeRequestSource::Project { id } => {
                sql.push(" AND m.project_id = ").bind(*id);
            }
            MergeRequestSource::Group { .. } | MergeRequestSource::All => {
                sql.push(" AND m.project_id IN (");
                self.push_readable_projects(&mut sql, tenant_id);
                sql.push(")");
            }
        }
        if let Some(state) = self.state {
            sql.push(" AND m.state = ").bind(state.as_str());
        }
        if let Some(iids) = &self.iids {
            sql.push(" AND m.iid IN (");
            if iids.is_empty() {
                sql.push("NULL");
            } else {
                sql.bind_list(iids.iter().copied());
            }
            sql.push(")");
        }
        if let Some(branch) = &self.source_branch {
            sql.push(" AND m.source_branch = ").bind(branch.as_str());
        }
        if let Some(branch) = &self.target_branch {
            sql.push(" AND m.target_branch = ").bind(branch.as_str());
        }
        if let Some(author) = self.author_id {
            sql.push(" AND m.author_id = ").bind(author);
        }
        Self::push_users(&mut sql, "merge_request_assignees", &self.assignee);
        Self::push_users(&mut sql, "merge_request_reviewers", &self.reviewer);
        let me = self.viewer.user_id().unwrap_or(0);
        let on = Noteable::MergeRequest(0);
        push_my_reaction(&mut sql, "m", on, me, &self.my_reaction_emoji);
        let labelled = "SELECT 1 FROM merge_request_labels ml WHERE ml.tenant_id = m.tenant_id \
                        AND ml.merge_request_id = m.id";
        match &self.labels {
            Wildcard::Unset => {}
            Wildcard::None => {
                sql.push(&format!(" AND NOT EXISTS ({labelled})"));
            }
            Wildcard::Any => {
                sql.push(&format!(" AND EXISTS ({labelled})"));
            }
            Wildcard::Value(names) => {
                for name in names {
                    sql.push(&format!(
                        " AND EXISTS ({labelled} AND ml.label_id IN (SELECT l.id FROM labels l \
                         WHERE l.tenant_id = m.tenant_id AND l.name_lower = "
                    ))
                    .bind(name.as_str())
                    .push("))");
                }
            }
        }
        let milestone = "SELECT ms.id FROM milestones ms WHERE ms.tenant_id = m.tenant_id";
        match &self.milestone {
            Wildcard::Unset => {}
            Wildcard::None => {
                sql.push(" AND m.milestone_id IS NULL");
            }
            Wildcard::Any => {
                sql.push(" AND m.milestone_id IS NOT NULL");
            }
            Wildcard::Value(title) => {
                sql.push(&format!(
                    " AND m.milestone_id IN ({milestone} AND ms.title = "
                ))
                .bind(title.as_str())
                .push(")");
            }
        }
        if let Some(term) = &self.search {
            let pattern = format!("%{}%", escape_like(&term.to_lowercase()));
            let mut fields = Vec::new();
            if self.search_title {
                fields.push("LOWER(m.title)");
            }
            if self.search_description {
                fields.push("LOWER(COALESCE(m.description, ''))");
            }
            sql.push(" AND (");
            for (n, field) in fields.iter().enumerate() {
                if n > 0 {
                    sql.push(" OR ");
                }
                sql.push(&format!("{field} LIKE "))
                    .bind(pattern.as_str())
                    .push(" ESCAPE '\\'");
            }
            sql.push(")");
            sql.plan_per_call();
        }
        if let Some(draft) = self.draft {
            sql.push(" AND m.draft = ").bind(i64::from(draft));
        }
        for (bound, column, op) in [
            (self.created_after, "created_at", ">="),
            (self.created_before, "created_at", "<="),
            (self.updated_after, "updated_at", ">="),
            (self.updated_before, "updated_at", "<="),
        ] {
            if let Some(at) = bound {
                sql.push(&format!(" AND m.{column} {op} ")).bind(at);
            }
        }
        sql
    }
}

impl TenantDb {
    /// One page of the list (`window`) and the number of matches up to `cap`.
    pub async fn merge_request_page(
        &self,
        filter: &MergeRequestFilter,
        window: &Window,
        cap: i64,
    ) -> crate::Result<(Vec<MergeRequestRow>, i64)> {
        let mut page = filter.query(self.tenant_id(), &merge_request_columns("m"));
        window.apply_on(&mut page, "m.");
        let count = filter.query(self.tenant_id(), "1").count_capped(cap);
        Ok(tokio::try_join!(
            page.query_as().fetch_all(self.reader()),
            count.query_scalar().fetch_one(self.reader()),
        )?)
    }
}
