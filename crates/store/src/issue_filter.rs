//! The one query builder behind `GET /issues`, `/groups/:id/issues` and `/projects/:id/issues`:
//! which issues the viewer may see (project visibility, the issues feature, confidentiality) and
//! the filters of the spec's table.

use super::issue_search::{MIN_INDEXED_CHARS, ROWID_TENANT_STRIDE};
use super::issues::issue_columns;
use super::noteables::push_my_reaction;
use super::projects::{Viewer, push_authorized};
use super::sql::{Sql, escape_like};
use super::window::Window;
use super::{Engine, TenantDb};
use crate::model::issues::IssueRow;
use crate::model::noteables::Noteable;
use crate::model::states::{IssueState, UserState};
use crate::model::users::UserRow;

/// How one query of a list is built.
#[derive(Debug, Clone, Copy)]
struct Mode {
    engine: Engine,
    /// Filter on labels (false when the query walks a label's index instead).
    labels: bool,
    /// The query counts (capped) rather than fetching a page, which changes the cheapest form
    /// of the label filter.
    counting: bool,
    /// Answer `search` from SQLite's trigram index (a rare enough term; see `search_plan`).
    search_index: bool,
}

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

/// The criteria of an issue list that the API passes through as the client gave them.
#[derive(Debug, Clone)]
pub struct IssueCriteria {
    /// `None` for all.
    pub state: Option<IssueState>,
    /// `None` / `Any` / all of these names (lower-cased).
    pub labels: Wildcard<Vec<String>>,
    /// `None`, `Any` or a title.
    pub milestone: Wildcard<String>,
    pub search: Option<String>,
    /// Which fields `search` looks at (both by default).
    pub search_title: bool,
    pub search_description: bool,
    /// Bounds on `created_at` and `updated_at`, in milliseconds since the epoch.
    pub created_after: Option<i64>,
    pub created_before: Option<i64>,
    pub updated_after: Option<i64>,
    pub updated_before: Option<i64>,
    pub confidential: Option<bool>,
}

impl Default for IssueCriteria {
    fn default() -> Self {
        IssueCriteria {
            state: None,
            labels: Wildcard::Unset,
            milestone: Wildcard::Unset,
            search: None,
            search_title: true,
            search_description: true,
            created_after: None,
            created_before: None,
            updated_after: None,
            updated_before: None,
            confidential: None,
        }
    }
}

/// An issue list's query, resolved: the criteria, and what the API worked out from the caller
/// and the lookups (authors and assignees by id, the reaction filter, refused projects).
#[derive(Debug, Clone)]
pub struct IssueFilter {
    pub source: IssueSource,
    pub viewer: Viewer,
    pub today: String,
    pub criteria: IssueCriteria,
    pub author_id: Option<i64>,
    pub assignee: Wildcard<i64>,
    pub my_reaction_emoji: Wildcard<String>,
    pub iids: Option<Vec<i64>>,
    /// Projects left out (refused by external authorization).
    pub excluded_projects: Vec<i64>,
}

impl IssueFilter {
    pub fn new(source: IssueSource, viewer: Viewer, today: String) -> Self {
        IssueFilter {
            source,
            viewer,
            today,
            criteria: IssueCriteria::default(),
            author_id: None,
            assignee: Wildcard::Unset,
            my_reaction_emoji: Wildcard::Unset,
            iids: None,
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

    /// Where the issues come from: the tenant's live issues of the project, or of the readable
    /// projects (group and global lists).
    fn push_source(&self, sql: &mut Sql, tenant_id: i64) {
        sql.push(" WHERE i.tenant_id = ")
            .bind(tenant_id)
            .push(" AND i.deleted_at IS NULL");
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
    }

    /// The label filter when the list is not driven by a label's own index.
    fn push_labels(&self, sql: &mut Sql, tenant_id: i64, counting: bool) {
        match &self.criteria.labels {
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
    }

    /// The `search` term: SQLite's trigram index for terms it can answer, else a substring
    /// scan (`LOWER(...)` on PostgreSQL, where the `pg_trgm` indexes answer it).
    fn push_search(&self, sql: &mut Sql, tenant_id: i64, mode: Mode) {
        let Some(search) = &self.criteria.search else {
            return;
        };
        if mode.search_index {
            sql.push(" AND i.id IN (SELECT rowid - ")
                .bind(tenant_id * ROWID_TENANT_STRIDE)
                .push(" FROM issue_search WHERE");
            self.push_search_match(sql, tenant_id, search);
            sql.push(")");
            return;
        }
        let engine = mode.engine;
        let pattern = format!("%{}%", escape_like(&search.to_lowercase()));
        // SQLite's LIKE ignores ASCII case by itself (and its LOWER() knows no more than
        // ASCII), so only PostgreSQL needs LOWER(), which its trigram indexes are built on.
        let lower = |column: &'static str| match engine {
            Engine::Sqlite => column,
            Engine::Postgres if column == "i.title" => "LOWER(i.title)",
            Engine::Postgres => "LOWER(i.description)",
        };
        let mut terms = Vec::new();
        if self.criteria.search_title {
            terms.push(lower("i.title"));
        }
        if self.criteria.search_description {
            terms.push(lower("i.description"));
        }
        sql.plan_per_call().push(" AND (");
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

    /// `issue_search MATCH` the term as one quoted FTS5 string (a substring: the trigram
    /// tokenizer's phrase), within the tenant's rowid range.
    fn push_search_match(&self, sql: &mut Sql, tenant_id: i64, search: &str) {
        let columns = match (self.criteria.search_title, self.criteria.search_description) {
            (true, false) => "title",
            (false, true) => "description",
            _ => "{title description}",
        };
        let base = tenant_id * ROWID_TENANT_STRIDE;
        sql.push(" issue_search MATCH ")
            .bind(format!("{columns} : \"{}\"", search.replace('"', "\"\"")))
            .push(" AND rowid >= ")
            .bind(base)
            .push(" AND rowid < ")
            .bind(base + ROWID_TENANT_STRIDE);
    }

    /// Every condition on the issue row beyond its source: `labels` unless the list walks a
    /// label's index, `counting` picking the cheaper label form for a count.
    fn push_conditions(&self, sql: &mut Sql, tenant_id: i64, mode: Mode) {
        self.push_confidentiality(sql, tenant_id);
        if let Some(state) = self.criteria.state {
            sql.push(" AND i.state = ").bind(state.as_str());
        }
        if mode.labels {
            self.push_labels(sql, tenant_id, mode.counting);
        }
        match &self.criteria.milestone {
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
        push_my_reaction(sql, "i", Noteable::Issue(0), me, &self.my_reaction_emoji);
        if let Some(iids) = &self.iids {
            if iids.is_empty() {
                sql.push(" AND 1 = 0");
            } else {
                sql.push(" AND i.iid IN (")
                    .bind_list(iids.iter().copied())
                    .push(")");
            }
        }
        self.push_search(sql, tenant_id, mode);
        for (column, op, value) in [
            ("created_at", ">=", self.criteria.created_after),
            ("created_at", "<=", self.criteria.created_before),
            ("updated_at", ">=", self.criteria.updated_after),
            ("updated_at", "<=", self.criteria.updated_before),
        ] {
            if let Some(value) = value {
                sql.push(&format!(" AND i.{column} {op} ")).bind(value);
            }
        }
        if let Some(confidential) = self.criteria.confidential {
            sql.push(" AND i.confidential = ").bind(confidential);
        }
    }
}

/// How a list finds its issues.
#[derive(Clone, Copy)]
enum Plan<'a> {
    /// Walk the issues (an index of `issues` or the search index) and filter.
    Issues,
    /// Walk the first label's entries in `issue_labels_walk` (project, newest first): the
    /// page reads `per_page` of them, the count (when nothing else needs the issue row) is a
    /// covering walk of at most the cap. Every issue must also carry the other labels.
    Label {
        project_id: i64,
        names: &'a [String],
    },
}

impl<'a> Plan<'a> {
    /// Project lists filtered by label names walk the first label's index in creation order.
    fn of(filter: &'a IssueFilter, order_by: &str) -> Plan<'a> {
        match (&filter.source, &filter.criteria.labels) {
            (IssueSource::Project { id, .. }, Wildcard::Value(names))
                if order_by == "created_at" && !names.is_empty() =>
            {
                Plan::Label {
                    project_id: *id,
                    names,
                }
            }
            _ => Plan::Issues,
        }
    }
}

/// The project's label id named `name` (lower-cased), as a subquery: evaluated once, and an
/// unknown name matches nothing.
fn push_label_id(sql: &mut Sql, tenant_id: i64, project_id: i64, name: &str) {
    sql.push("(SELECT l.id FROM labels l WHERE l.tenant_id = ")
        .bind(tenant_id)
        .push(" AND l.project_id = ")
        .bind(project_id)
        .push(" AND l.name_lower = ")
        .bind(name)
        .push(")");
}

/// A search term with at least this many matches in the tenant is answered by walking the
/// list (matches are common, so pages and the capped count end early); below it, from the
/// trigram index, whose cost grows with the matches.
const SEARCH_INDEX_MAX_MATCHES: i64 = 2_000;

/// Who may be assigned: an active user who can read the project's issues (GitLab's
/// `user_can_read?` on assignees); for an existing confidential issue, one who can read it
/// (reporter access, its author or a current assignee).
pub struct AssignableCheck<'a> {
    pub project_id: i64,
    /// The issue as stored, when updating one: `(confidential, author, assignees)`.
    pub issue: Option<(bool, i64, &'a [UserRow])>,
    pub today: &'a str,
}

impl TenantDb {
    /// The ids among `users` that may be assigned an issue of the project, in their order.
    pub async fn assignable_among(
        &self,
        check: &AssignableCheck<'_>,
        users: &[UserRow],
    ) -> crate::Result<Vec<i64>> {
        let tenant_id = self.tenant_id();
        let mut kept = Vec::new();
        for user in users {
            if user.state != UserState::Active {
                continue;
            }
            let confidential = match check.issue {
                Some((true, author, assignees)) => {
                    if user.id == author || assignees.iter().any(|a| a.id == user.id) {
                        kept.push(user.id);
                        continue;
                    }
                    true
                }
                _ => false,
            };
            if user.is_admin {
                kept.push(user.id);
                continue;
            }
            let viewer = Viewer::User {
                id: user.id,
                external: user.external,
            };
            let filter = IssueFilter::new(IssueSource::All, viewer, check.today.to_string());
            let mut sql = Sql::new("SELECT COUNT(*) FROM projects p WHERE p.tenant_id = ");
            sql.bind(tenant_id)
                .push(" AND p.id = ")
                .bind(check.project_id)
                .push(" AND p.id IN (");
            filter.push_readable_projects(&mut sql, tenant_id);
            sql.push(")");
            if confidential {
                sql.push(" AND");
                push_authorized(&mut sql, tenant_id, user.id, 20, check.today);
            }
            let readable: i64 = sql.query_scalar().fetch_one(self.reader()).await?;
            if readable > 0 {
                kept.push(user.id);
            }
        }
        Ok(kept)
    }
}

impl TenantDb {
    /// Whether SQLite's trigram index should answer the search term: it must be long enough
    /// for trigrams, and rare enough (counted up to the threshold in the index itself).
    async fn search_plan(&self, filter: &IssueFilter) -> crate::Result<bool> {
        let Some(search) = &filter.criteria.search else {
            return Ok(false);
        };
        if self.engine() != Engine::Sqlite || search.chars().count() < MIN_INDEXED_CHARS {
            return Ok(false);
        }
        let mut sql = Sql::new("SELECT COUNT(*) FROM (SELECT 1 FROM issue_search WHERE");
        filter.push_search_match(&mut sql, self.tenant_id(), search);
        sql.push(" LIMIT ")
            .bind(SEARCH_INDEX_MAX_MATCHES)
            .push(") probe");
        let matches: i64 = sql.query_scalar().fetch_one(self.reader()).await?;
        Ok(matches < SEARCH_INDEX_MAX_MATCHES)
    }

    /// `SELECT {columns}` of the issues the plan walks, with every filter; a count leaves out
    /// the issue row when no condition needs it.
    fn issue_query(&self, filter: &IssueFilter, plan: &Plan, columns: &str, mode: Mode) -> Sql {
        let tenant_id = self.tenant_id();
        let Plan::Label { project_id, names } = *plan else {
            let mut sql = Sql::new(&format!("SELECT {columns} FROM issues i"));
            filter.push_source(&mut sql, tenant_id);
            filter.push_conditions(&mut sql, tenant_id, mode);
            return sql;
        };
        let mode = Mode {
            labels: false,
            ..mode
        };
        let mut conditions = Sql::default();
        filter.push_conditions(&mut conditions, tenant_id, mode);
        let row_needed = !mode.counting || !conditions.text().is_empty();
        // CROSS JOIN keeps `issue_labels` the outer loop on SQLite (PostgreSQL plans it freely).
        let mut sql = Sql::new(&format!("SELECT {columns} FROM issue_labels il"));
        if row_needed {
            sql.push(" CROSS JOIN issues i");
        }
        sql.push(" WHERE il.tenant_id = ")
            .bind(tenant_id)
            .push(" AND il.label_id = ");
        push_label_id(&mut sql, tenant_id, project_id, &names[0]);
        sql.push(" AND il.project_id = ")
            .bind(project_id)
            .push(" AND il.deleted_at IS NULL");
        for name in &names[1..] {
            sql.push(
                " AND EXISTS (SELECT 1 FROM issue_labels ol WHERE ol.tenant_id = il.tenant_id \
                 AND ol.issue_id = il.issue_id AND ol.label_id = ",
            );
            push_label_id(&mut sql, tenant_id, project_id, name);
            sql.push(")");
        }
        if row_needed {
            sql.push(" AND i.tenant_id = il.tenant_id AND i.id = il.issue_id");
            filter.push_conditions(&mut sql, tenant_id, mode);
        }
        if mode.counting {
            // The walk's own order: without it PostgreSQL, which cannot know the label id when
            // planning, may count by scanning the whole table instead of the capped index walk.
            sql.push(" ORDER BY il.created_at DESC");
        }
        sql
    }

    /// One page of the list (`window`) and the number of matches up to `cap`, read side by
    /// side.
    pub async fn issue_page(
        &self,
        filter: &IssueFilter,
        window: &Window,
        cap: i64,
    ) -> crate::Result<(Vec<IssueRow>, i64)> {
        let search_index = self.search_plan(filter).await?;
        let (page, count) = self.issue_page_queries(filter, window, cap, search_index);
        Ok(tokio::try_join!(
            page.query_as().fetch_all(self.reader()),
            count.query_scalar().fetch_one(self.reader()),
        )?)
    }

    /// The page's query and the capped count's.
    fn issue_page_queries(
        &self,
        filter: &IssueFilter,
        window: &Window,
        cap: i64,
        search_index: bool,
    ) -> (Sql, Sql) {
        let plan = Plan::of(filter, window.order_by);
        let mode = Mode {
            engine: self.engine(),
            labels: true,
            counting: false,
            search_index,
        };
        let mut page = self.issue_query(filter, &plan, &issue_columns("i"), mode);
        match plan {
            Plan::Label { .. } => window.apply_to(&mut page, "il.created_at", "il.issue_id"),
            Plan::Issues => window.apply_on(&mut page, "i."),
        }
        // The count may walk a label's index whatever the page's order.
        let counting = Mode {
            counting: true,
            ..mode
        };
        let count = self
            .issue_query(filter, &Plan::of(filter, "created_at"), "1", counting)
            .count_capped(cap);
        (page, count)
    }
}

/// The plans PostgreSQL makes for the lists at 100,000 issues: every page and every capped
/// count must stay a bounded walk, never a scan of the table. Runs when
/// `TRELLIS_TEST_DATABASE_URL` names a PostgreSQL server (as in CI), on a database of its own.
#[cfg(test)]
mod plans {
    use std::path::Path;

    use sqlx::Executor;

    use super::*;
    use crate::window::Direction;
    use crate::{Db, DbOptions};

    const ISSUES: i64 = 100_000;
    /// Rows a page may visit: a label's walk reads about ten entries per `bug` issue shown.
    const PAGE_ROWS: i64 = 5_000;
    /// Rows a count may visit: the capped walk and what its filter removes on the way.
    const COUNT_ROWS: i64 = 25_000;

    /// Rows the plan's scans produced or removed, from `EXPLAIN ANALYZE`'s text: each scan
    /// node's `rows=` times its `loops=`, and the rows its filters removed (reported per loop).
    fn rows_visited(plan: &str) -> i64 {
        let number_after = |line: &str, key: &str| -> Option<i64> {
            let rest = &line[line.find(key)? + key.len()..];
            rest.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        };
        let mut visited = 0;
        let mut loops = 1;
        for line in plan.lines() {
            if let Some(actual) = line.find("(actual time=").filter(|_| line.contains("Scan")) {
                let actual = &line[actual..];
                loops = number_after(actual, "loops=").unwrap_or(1);
                visited += number_after(actual, " rows=").unwrap_or(0) * loops;
            } else if line.contains("Rows Removed by") {
                visited += number_after(line, ": ").unwrap_or(0) * loops;
            }
        }
        visited
    }

    async fn visited(db: &TenantDb, sql: &Sql) -> (i64, String) {
        let lines: Vec<String> = sql
            .explained()
            .query_scalar()
            .fetch_all(db.reader())
            .await
            .unwrap();
        let plan = lines.join("\n");
        (rows_visited(&plan), plan)
    }

    #[tokio::test]
    async fn every_list_stays_a_bounded_walk_at_100000_issues() {
        let Ok(url) = std::env::var("TRELLIS_TEST_DATABASE_URL") else {
            eprintln!("skipped: TRELLIS_TEST_DATABASE_URL is not set");
            return;
        };
        let name = format!("trellis_plans_{}", std::process::id());
        sqlx::any::install_default_drivers();
        let admin = sqlx::AnyPool::connect(&url).await.unwrap();
        admin
            .execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .await
            .unwrap();
        let own_url = format!("{}/{name}", url.rsplit_once('/').unwrap().0);
        let db = Db::connect(DbOptions {
            database_url: Some(&own_url),
            data_dir: Path::new("."),
            max_connections: 4,
        })
        .await
        .unwrap();
        db.migrate().await.unwrap();
        let mut seed = db.writer().acquire().await.unwrap();
        // The rows the lists read, without the tenant, project and users they belong to.
        for statement in [
            "SET session_replication_role = replica".to_string(),
            "INSERT INTO labels (tenant_id, id, project_id, name, name_lower, color, created_at, updated_at) \
             VALUES (1, 1, 1, 'bug', 'bug', '#ff0000', 0, 0), (1, 2, 1, 'ui', 'ui', '#00ff00', 0, 0)".to_string(),
            format!(
                "INSERT INTO issues (tenant_id, id, project_id, iid, author_id, title, description, state, created_at, updated_at) \
                 SELECT 1, n, 1, n, 1, 'Issue ' || n || CASE WHEN n % 1000 = 0 THEN ' needle' ELSE ' lorem ipsum' END, \
                 'Seeded description ' || n, CASE WHEN n % 5 = 0 THEN 'closed' ELSE 'opened' END, \
                 1700000000000 + n * 1000, 1700000000000 + n * 1000 FROM generate_series(1, {ISSUES}) n"
            ),
            "INSERT INTO issue_labels (tenant_id, issue_id, label_id, project_id, created_at) \
             SELECT 1, id, 1, 1, created_at FROM issues WHERE id % 10 = 0".to_string(),
            "INSERT INTO issue_labels (tenant_id, issue_id, label_id, project_id, created_at) \
             SELECT 1, id, 2, 1, created_at FROM issues WHERE id % 7 = 0".to_string(),
            "VACUUM ANALYZE".to_string(),
        ] {
            seed.execute(sqlx::AssertSqlSafe(statement)).await.unwrap();
        }
        drop(seed);
        let tenant = db.tenant(1);
        let source = || IssueSource::Project {
            id: 1,
            see_confidential: true,
        };
        let cases: Vec<(&str, IssueCriteria, &'static str)> = vec![
            ("default page", IssueCriteria::default(), "created_at"),
            (
                "state=opened",
                IssueCriteria {
                    state: Some(IssueState::Opened),
                    ..Default::default()
                },
                "created_at",
            ),
            (
                "order_by=updated_at",
                IssueCriteria::default(),
                "updated_at",
            ),
            (
                "labels=bug",
                IssueCriteria {
                    labels: Wildcard::Value(vec!["bug".into()]),
                    ..Default::default()
                },
                "created_at",
            ),
            (
                "search=needle",
                IssueCriteria {
                    search: Some("needle".into()),
                    ..Default::default()
                },
                "created_at",
            ),
            (
                "search=ipsum",
                IssueCriteria {
                    search: Some("ipsum".into()),
                    ..Default::default()
                },
                "created_at",
            ),
        ];
        let mut failures = Vec::new();
        for (name, criteria, order_by) in cases {
            let mut filter =
                IssueFilter::new(source(), Viewer::Admin { id: 1 }, "2026-01-01".into());
            filter.criteria = criteria;
            let window = Window {
                order_by,
                direction: Direction::Desc,
                limit: 21,
                offset: 0,
                id_after: None,
                id_before: None,
            };
            let (page, count) = tenant.issue_page_queries(&filter, &window, 10_001, false);
            for (what, sql, bound) in [("page", &page, PAGE_ROWS), ("count", &count, COUNT_ROWS)] {
                let (rows, plan) = visited(&tenant, sql).await;
                if rows > bound {
                    failures.push(format!(
                        "{name}: the {what} visits {rows} rows (at most {bound}):\n{plan}"
                    ));
                }
            }
        }
        drop(tenant);
        db.close().await;
        admin
            .execute(sqlx::AssertSqlSafe(format!(
                "DROP DATABASE {name} WITH (FORCE)"
            )))
            .await
            .unwrap();
        assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    }
}
