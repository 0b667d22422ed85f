//! The one query builder behind `GET /issues`, `/groups/:id/issues` and `/projects/:id/issues`:
//! which issues the viewer may see (project visibility, the issues feature, confidentiality) and
//! the filters of the spec's table.

use super::issues::{IssueRow, issue_columns};
use super::namespaces::escape_like;
use super::projects::{Viewer, push_authorized};
use super::sql::Sql;
use super::window::Window;
use super::{Engine, TenantDb};

/// Which issues the list starts from.
#[derive(Debug, Clone)]
pub enum IssueSource {
    /// One project whose issues the caller may read; `see_confidential` when they are a
    /// reporter or above (or an administrator).
    Project { id: i64, see_confidential: bool },
    /// The projects below a group (traversal prefix) that the viewer may see.
    Group { traversal: String },
    /// Every project the viewer may see.
    All,
}

#[derive(Debug, Clone, Default)]
pub enum Wildcard<T> {
    #[default]
    Unset,
    None,
    Any,
    Value(T),
}

#[derive(Debug, Clone)]
pub struct IssueFilter {
    pub source: IssueSource,
    pub viewer: Viewer,
    pub today: String,
    pub state: Option<String>,
    /// `None` / `Any` / all of these names (lower-cased).
    pub labels: Wildcard<Vec<String>>,
    pub milestone: Wildcard<String>,
    pub author_id: Option<i64>,
    pub assignee: Wildcard<i64>,
    pub my_reaction_emoji: Wildcard<String>,
    pub iids: Option<Vec<i64>>,
    pub search: Option<String>,
    pub search_title: bool,
    pub search_description: bool,
    pub created_after: Option<i64>,
    pub created_before: Option<i64>,
    pub updated_after: Option<i64>,
    pub updated_before: Option<i64>,
    pub confidential: Option<bool>,
    /// Projects left out (refused by external authorization).
    pub excluded_projects: Vec<i64>,
}

impl IssueFilter {
    pub fn new(source: IssueSource, viewer: Viewer, today: String) -> Self {
        IssueFilter {
            source,
            viewer,
            today,
            state: None,
            labels: Wildcard::Unset,
            milestone: Wildcard::Unset,
            author_id: None,
            assignee: Wildcard::Unset,
            my_reaction_emoji: Wildcard::Unset,
            iids: None,
            search: None,
            search_title: true,
            search_description: true,
            created_after: None,
            created_before: None,
            updated_after: None,
            updated_before: None,
            confidential: None,
            excluded_projects: Vec::new(),
        }
    }

    /// The projects (alias `p`) whose issues the viewer may read: visible projects with the
    /// issues feature enabled, or `private` to members.
    fn push_readable_projects(&self, sql: &mut Sql, tenant_id: i64) {
        sql.push("SELECT p.id FROM projects p");
        if let IssueSource::Group { .. } = self.source {
            sql.push(
                " JOIN namespaces pn ON pn.tenant_id = p.tenant_id AND pn.id = p.namespace_id",
            );
        }
        sql.push(" WHERE p.tenant_id = ")
            .bind(tenant_id)
            .push(" AND p.issues_access_level <> 'disabled'");
        if let IssueSource::Group { traversal } = &self.source {
            sql.push(" AND pn.traversal LIKE ")
                .bind(format!("{}%", escape_like(traversal)))
                .push(" ESCAPE '\\'");
        }
        super::projects::push_excluded(sql, &self.excluded_projects);
        match self.viewer {
            Viewer::Admin { .. } => {}
            Viewer::Anonymous => {
                sql.push(" AND p.visibility_level = 20 AND p.issues_access_level = 'enabled'");
            }
            Viewer::User { id, external } => {
                let floor = if external { 20 } else { 10 };
                sql.push(" AND ((p.visibility_level >= ")
                    .bind(floor)
                    .push(" AND p.issues_access_level = 'enabled') OR");
                push_authorized(sql, tenant_id, id, 10, &self.today);
                sql.push(")");
            }
        }
    }

    /// Confidential issues only for their author, assignees, reporters and above, admins.
    fn push_confidentiality(&self, sql: &mut Sql, tenant_id: i64) {
        let see_all = match self.source {
            IssueSource::Project {
                see_confidential, ..
            } => see_confidential,
            _ => matches!(self.viewer, Viewer::Admin { .. }),
        };
        if see_all {
            return;
        }
        match self.viewer {
            Viewer::Anonymous => {
                sql.push(" AND i.confidential = 0");
            }
            Viewer::User { id, .. } | Viewer::Admin { id } => {
                sql.push(" AND (i.confidential = 0 OR i.author_id = ")
                    .bind(id)
                    .push(" OR EXISTS (SELECT 1 FROM issue_assignees ca WHERE ca.tenant_id = i.tenant_id AND ca.issue_id = i.id AND ca.user_id = ")
                    .bind(id)
                    .push(")");
                if !matches!(self.source, IssueSource::Project { .. }) {
                    sql.push(
                        " OR i.project_id IN (SELECT p.id FROM projects p WHERE p.tenant_id = ",
                    )
                    .bind(tenant_id)
                    .push(" AND");
                    push_authorized(sql, tenant_id, id, 20, &self.today);
                    sql.push(")");
                }
                sql.push(")");
            }
        }
    }

    /// `counting`: the query counts matches (up to the cap) instead of fetching a page, which
    /// changes the cheapest form of the label filter. `engine` picks the case-insensitive match.
    fn apply(&self, sql: &mut Sql, tenant_id: i64, counting: bool, engine: Engine) {
        sql.push(" WHERE i.tenant_id = ").bind(tenant_id);
        sql.push(" AND i.deleted_at IS NULL");
        match &self.source {
            IssueSource::Project { id, .. } => {
                sql.push(" AND i.project_id = ").bind(*id);
            }
            IssueSource::Group { .. } | IssueSource::All => {
                sql.push(" AND i.project_id IN (");
                self.push_readable_projects(sql, tenant_id);
                sql.push(")");
            }
        }
        self.push_confidentiality(sql, tenant_id);
        if let Some(state) = &self.state {
            sql.push(" AND i.state = ").bind(state);
        }
        match &self.labels {
            Wildcard::Unset => {}
            Wildcard::None => {
                sql.push(" AND NOT EXISTS (SELECT 1 FROM issue_labels il WHERE il.tenant_id = i.tenant_id AND il.issue_id = i.id)");
            }
            Wildcard::Any => {
                sql.push(" AND EXISTS (SELECT 1 FROM issue_labels il WHERE il.tenant_id = i.tenant_id AND il.issue_id = i.id)");
            }
            Wildcard::Value(names) => {
                for name in names {
                    // A page walks the issues newest first and probes `issue_labels` by primary
                    // key (cheap while the label is common); a count walks the label's own
                    // index entries instead (cheap while the label is rare, and bounded by the
                    // count cap either way). The label ids are computed once.
                    if counting {
                        sql.push(" AND i.id IN (SELECT il.issue_id FROM issue_labels il WHERE il.tenant_id = ")
                            .bind(tenant_id)
                            .push(" AND il.label_id IN (");
                    } else {
                        sql.push(" AND EXISTS (SELECT 1 FROM issue_labels il WHERE il.tenant_id = i.tenant_id AND il.issue_id = i.id \
                                  AND il.label_id IN (");
                    }
                    sql.push("SELECT l.id FROM labels l WHERE l.tenant_id = ")
                        .bind(tenant_id)
                        .push(" AND l.name_lower = ")
                        .bind(name.as_str())
                        .push("))");
                }
            }
        }
        match &self.milestone {
            Wildcard::Unset => {}
            Wildcard::None => {
                sql.push(" AND i.milestone_id IS NULL");
            }
            Wildcard::Any => {
                sql.push(" AND i.milestone_id IS NOT NULL");
            }
            Wildcard::Value(title) => {
                sql.push(" AND i.milestone_id IN (SELECT m.id FROM milestones m WHERE m.tenant_id = i.tenant_id AND m.title = ")
                    .bind(title.as_str())
                    .push(")");
            }
        }
        if let Some(author) = self.author_id {
            sql.push(" AND i.author_id = ").bind(author);
        }
        match &self.assignee {
            Wildcard::Unset => {}
            Wildcard::None => {
                sql.push(" AND NOT EXISTS (SELECT 1 FROM issue_assignees a WHERE a.tenant_id = i.tenant_id AND a.issue_id = i.id)");
            }
            Wildcard::Any => {
                sql.push(" AND EXISTS (SELECT 1 FROM issue_assignees a WHERE a.tenant_id = i.tenant_id AND a.issue_id = i.id)");
            }
            Wildcard::Value(user) => {
                sql.push(" AND EXISTS (SELECT 1 FROM issue_assignees a WHERE a.tenant_id = i.tenant_id AND a.issue_id = i.id AND a.user_id = ")
                    .bind(*user)
                    .push(")");
            }
        }
        let me = self.viewer.user_id().unwrap_or(0);
        match &self.my_reaction_emoji {
            Wildcard::Unset => {}
            Wildcard::None => {
                sql.push(" AND NOT EXISTS (SELECT 1 FROM issue_award_emoji e WHERE e.tenant_id = i.tenant_id AND e.issue_id = i.id AND e.user_id = ")
                    .bind(me)
                    .push(")");
            }
            Wildcard::Any => {
                sql.push(" AND EXISTS (SELECT 1 FROM issue_award_emoji e WHERE e.tenant_id = i.tenant_id AND e.issue_id = i.id AND e.user_id = ")
                    .bind(me)
                    .push(")");
            }
            Wildcard::Value(name) => {
                sql.push(" AND EXISTS (SELECT 1 FROM issue_award_emoji e WHERE e.tenant_id = i.tenant_id AND e.issue_id = i.id AND e.user_id = ")
                    .bind(me)
                    .push(" AND e.name = ")
                    .bind(name.as_str())
                    .push(")");
            }
        }
        if let Some(iids) = &self.iids {
            if iids.is_empty() {
                sql.push(" AND 1 = 0");
            } else {
                sql.push(" AND i.iid IN (")
                    .bind_list(iids.iter().copied())
                    .push(")");
            }
        }
        if let Some(search) = &self.search {
            let pattern = format!("%{}%", escape_like(&search.to_lowercase()));
            // SQLite's LIKE ignores ASCII case by itself (and its LOWER() knows no more than
            // ASCII), so only PostgreSQL needs LOWER(), which would cost SQLite a third.
            let lower = |column: &'static str| match engine {
                Engine::Sqlite => column,
                Engine::Postgres if column == "i.title" => "LOWER(i.title)",
                Engine::Postgres => "LOWER(i.description)",
            };
            let mut terms = Vec::new();
            if self.search_title {
                terms.push(lower("i.title"));
            }
            if self.search_description {
                terms.push(lower("i.description"));
            }
            sql.push(" AND (");
            for (n, term) in terms.iter().enumerate() {
                if n > 0 {
                    sql.push(" OR ");
                }
                sql.push(&format!("{term} LIKE "))
                    .bind(pattern.clone())
                    .push(" ESCAPE '\\'");
            }
            sql.push(")");
        }
        for (column, op, value) in [
            ("created_at", ">=", self.created_after),
            ("created_at", "<=", self.created_before),
            ("updated_at", ">=", self.updated_after),
            ("updated_at", "<=", self.updated_before),
        ] {
            if let Some(value) = value {
                sql.push(&format!(" AND i.{column} {op} ")).bind(value);
            }
        }
        if let Some(confidential) = self.confidential {
            sql.push(" AND i.confidential = ").bind(confidential);
        }
    }
}

impl TenantDb {
    pub async fn list_issues(
        &self,
        filter: &IssueFilter,
        window: &Window,
    ) -> sqlx::Result<Vec<IssueRow>> {
        let mut sql = Sql::new(&format!("SELECT {} FROM issues i", issue_columns("i")));
        filter.apply(&mut sql, self.tenant_id(), false, self.engine());
        window.apply_on(&mut sql, "i.");
        sql.query_as().fetch_all(self.reader()).await
    }

    pub async fn count_issues(&self, filter: &IssueFilter, cap: i64) -> sqlx::Result<i64> {
        let mut sql = Sql::new("SELECT 1 FROM issues i");
        filter.apply(&mut sql, self.tenant_id(), true, self.engine());
        sql.count_capped(cap)
            .query_scalar()
            .fetch_one(self.reader())
            .await
    }
}
