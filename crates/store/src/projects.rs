//! Projects: rows, the filtered and visibility-limited lists, create/update/delete, stars.
//! Feature flags and settings beyond the filtered columns live in the `settings` JSON object.

use sqlx::{Any, AssertSqlSafe, Transaction};

use super::changes::{Changes, Table};
use super::members::PROJECT;
use super::namespaces::push_member_groups;
use super::project_state::count_forks;
use super::sql::{Arg, Sql, escape_like};
use super::users::user_columns;
use super::window::Window;
use super::{Result, TenantDb, ids::next_id, now_ms, outbox, redirects, row_in};
use crate::access_level::AccessLevel;
use crate::events::{Event, EventKind};
use crate::model::projects::{ProjectRow, classification_label};
use crate::model::users::UserRow;
use crate::model::visibility::Visibility;

pub const PROJECT_COLUMNS: &str = "id, namespace_id, creator_id, name, path, description, default_branch, \
    visibility, archived, star_count, forks_count, open_issues_count, tag_list, avatar_path, import_url, \
    import_status, import_error, issues_access_level, merge_requests_access_level, repository_size, \
    storage_size, wiki_size, packages_size, settings, marked_for_deletion_at, forked_from_id, commit_count, \
    repository_languages, created_at, updated_at, last_activity_at";

fn project_columns(alias: &str) -> String {
    PROJECT_COLUMNS
        .split(", ")
        .map(|c| format!("{alias}.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Who is looking: lists show only what this viewer may see.
#[derive(Debug, Clone, Copy, Default)]
pub enum Viewer {
    #[default]
    Anonymous,
    User {
        id: i64,
        external: bool,
    },
    Admin {
        id: i64,
    },
}

impl Viewer {
    pub fn user_id(self) -> Option<i64> {
        match self {
            Viewer::Anonymous => None,
            Viewer::User { id, .. } | Viewer::Admin { id } => Some(id),
        }
    }
}

/// The filters of the project lists.
#[derive(Debug, Default, Clone)]
pub struct ProjectFilter {
    pub viewer: Viewer,
    pub today: String,
    pub archived: Option<bool>,
    pub visibility: Option<Visibility>,
    pub search: Option<String>,
    pub search_namespaces: bool,
    pub owned: bool,
    pub membership: bool,
    pub min_access_level: Option<i64>,
    pub starred: bool,
    pub last_activity_after: Option<i64>,
    pub last_activity_before: Option<i64>,
    pub with_issues_enabled: bool,
    pub with_merge_requests_enabled: bool,
    /// Projects whose default branch has this language (any case).
    pub with_programming_language: Option<String>,
    /// Only forks of this project (`GET /projects/:id/forks`).
    pub forked_from: Option<i64>,
    pub custom_attributes: Vec<(String, String)>,
    /// Only projects in this namespace (`GET /users/:id/projects`).
    pub namespace_id: Option<i64>,
    /// Only a group's projects (`GET /groups/:id/projects`, `/groups/:id/projects/shared`).
    pub group: Option<GroupScope>,
    /// Only projects starred by this user (`GET /users/:id/starred_projects`).
    pub starred_by: Option<i64>,
    /// Projects left out (refused by external authorization).
    pub excluded: Vec<i64>,
}

/// Which projects of a group a list shows.
#[derive(Debug, Clone)]
pub struct GroupScope {
    pub group_id: i64,
    /// Projects in the group itself.
    pub own: bool,
    /// The group's `traversal` when projects in its subgroups count too.
    pub subgroups_of: Option<String>,
    /// Projects shared with the group (live shares only).
    pub shared: bool,
}

impl GroupScope {
    fn apply(&self, sql: &mut Sql, tenant_id: i64, today: &str) {
        sql.push(" AND (1 = 0");
        if self.own {
            match &self.subgroups_of {
                Some(traversal) => {
                    sql.push(" OR p.namespace_id IN (SELECT id FROM namespaces WHERE tenant_id = ")
                        .bind(tenant_id)
                        .push(" AND traversal LIKE ")
                        .bind(format!("{traversal}%"))
                        .push(")");
                }
                None => {
                    sql.push(" OR p.namespace_id = ").bind(self.group_id);
                }
            }
        }
        if self.shared {
            sql.push(" OR p.id IN (SELECT project_id FROM project_group_links WHERE tenant_id = ")
                .bind(tenant_id)
                .push(" AND group_id = ")
                .bind(self.group_id)
                .push(" AND (expires_at IS NULL OR expires_at > ")
                .bind(today)
                .push("))");
        }
        sql.push(")");
    }
}

/// `p.id` is among the projects `user` reaches at `min` or above (direct membership, a
/// membership of an ancestor group of the project's namespace, the personal namespace, or a
/// group the project is shared with at `min` or above).
pub(crate) fn push_authorized(sql: &mut Sql, tenant_id: i64, user: i64, min: i64, today: &str) {
    sql.push(" (p.id IN (SELECT source_id FROM members WHERE tenant_id = ")
        .bind(tenant_id)
        .push(" AND source_type = 'Project' AND user_id = ")
        .bind(user)
        .push(" AND access_level >= ")
        .bind(min)
        .push(" AND (expires_at IS NULL OR expires_at > ")
        .bind(today)
        .push(")) OR p.namespace_id IN (");
    push_member_groups(sql, tenant_id, user, min, today);
    sql.push(") OR p.namespace_id IN (SELECT id FROM namespaces WHERE tenant_id = ")
        .bind(tenant_id)
        .push(" AND owner_id = ")
        .bind(user)
        .push(") OR p.id IN (SELECT project_id FROM project_group_links WHERE tenant_id = ")
        .bind(tenant_id)
        .push(" AND group_access >= ")
        .bind(min)
        .push(" AND (expires_at IS NULL OR expires_at > ")
        .bind(today)
        .push(") AND group_id IN (");
    push_member_groups(sql, tenant_id, user, min, today);
    sql.push(")))");
}

/// `AND p.id NOT IN (excluded)` when there are any.
pub(crate) fn push_excluded(sql: &mut Sql, excluded: &[i64]) {
    if excluded.is_empty() {
        return;
    }
    sql.push(" AND p.id NOT IN (");
    for (i, id) in excluded.iter().enumerate() {
        if i > 0 {
            sql.push(", ");
        }
        sql.bind(*id);
    }
    sql.push(")");
}

impl ProjectFilter {
    fn apply(&self, sql: &mut Sql, tenant_id: i64) {
        sql.push(" WHERE p.tenant_id = ").bind(tenant_id);
        match self.viewer {
            Viewer::Admin { .. } => {}
            Viewer::Anonymous => {
                sql.push(" AND p.visibility_level = 20");
            }
            Viewer::User { id, external } => {
                let floor = if external { 20 } else { 10 };
                sql.push(" AND (p.visibility_level >= ")
                    .bind(floor)
                    .push(" OR");
                push_authorized(sql, tenant_id, id, 10, &self.today);
                sql.push(")");
            }
        }
        push_excluded(sql, &self.excluded);
        if let Some(user) = self.viewer.user_id() {
            if self.owned {
                sql.push(" AND (p.namespace_id IN (SELECT id FROM namespaces WHERE tenant_id = ")
                    .bind(tenant_id)
                    .push(" AND owner_id = ")
                    .bind(user)
                    .push(") OR p.namespace_id IN (");
                push_member_groups(
                    sql,
                    tenant_id,
                    user,
                    AccessLevel::Owner.as_i64(),
                    &self.today,
                );
                sql.push("))");
            }
            if self.membership || self.min_access_level.is_some() {
                sql.push(" AND");
                push_authorized(
                    sql,
                    tenant_id,
                    user,
                    self.min_access_level.unwrap_or(AccessLevel::Guest.as_i64()),
                    &self.today,
                );
            }
            if self.starred {
                sql.push(" AND p.id IN (SELECT project_id FROM project_stars WHERE tenant_id = ")
                    .bind(tenant_id)
                    .push(" AND user_id = ")
                    .bind(user)
                    .push(")");
            }
        }
        if let Some(user) = self.starred_by {
            sql.push(" AND p.id IN (SELECT project_id FROM project_stars WHERE tenant_id = ")
                .bind(tenant_id)
                .push(" AND user_id = ")
                .bind(user)
                .push(")");
        }
        if let Some(namespace) = self.namespace_id {
            sql.push(" AND p.namespace_id = ").bind(namespace);
        }
        if let Some(scope) = &self.group {
            scope.apply(sql, tenant_id, &self.today);
        }
        if let Some(archived) = self.archived {
            sql.push(" AND p.archived = ").bind(archived);
        }
        if let Some(visibility) = self.visibility {
            sql.push(" AND p.visibility_level = ")
                .bind(visibility.level());
        }
        if let Some(search) = &self.search {
            let pattern = format!("%{}%", escape_like(&search.to_lowercase()));
            sql.push(" AND (p.name_lower LIKE ")
                .bind(pattern.clone())
                .push(" ESCAPE '\\' OR p.path_lower LIKE ")
                .bind(pattern.clone())
                .push(" ESCAPE '\\' OR LOWER(p.description) LIKE ")
                .bind(pattern.clone())
                .push(" ESCAPE '\\'");
            if self.search_namespaces {
                sql.push(" OR EXISTS (SELECT 1 FROM namespaces sn WHERE sn.tenant_id = p.tenant_id AND sn.id = p.namespace_id \
                          AND (sn.full_path_lower || '/' || p.path_lower LIKE ")
                    .bind(pattern.clone())
                    .push(" ESCAPE '\\' OR LOWER(sn.full_name) || ' / ' || p.name_lower LIKE ")
                    .bind(pattern)
                    .push(" ESCAPE '\\'))");
            }
            sql.push(")");
        }
        if let Some(after) = self.last_activity_after {
            sql.push(" AND p.last_activity_at > ").bind(after);
        }
        if let Some(before) = self.last_activity_before {
            sql.push(" AND p.last_activity_at < ").bind(before);
        }
        if self.with_issues_enabled {
            sql.push(" AND p.issues_access_level <> 'disabled'");
        }
        if self.with_merge_requests_enabled {
            sql.push(" AND p.merge_requests_access_level <> 'disabled'");
        }
        if let Some(language) = &self.with_programming_language {
            // The stored JSON object's keys are `"Name":`; match one of them case-insensitively.
            let key = serde_json::to_string(&language.to_lowercase()).unwrap_or_default();
            sql.push(" AND LOWER(p.repository_languages) LIKE ")
                .bind(format!("%{}:%", escape_like(&key)))
                .push(" ESCAPE '\\'");
        }
        if let Some(source) = self.forked_from {
            sql.push(" AND p.forked_from_id = ").bind(source);
        }
        sql.push_custom_attributes(
            "p.id",
            "project_custom_attributes",
            "project_id",
            tenant_id,
            &self.custom_attributes,
        );
    }
}

/// The `projects` table, for [`ProjectChanges`].
pub struct Projects;

impl Table for Projects {
    const NAME: &'static str = "projects";
    const COLUMNS: &'static str = "namespace_id, name, name_lower, path, path_lower, description, default_branch, \
         visibility, visibility_level, archived, star_count, forks_count, open_issues_count, \
         tag_list, avatar_path, import_url, import_status, import_error, \
         issues_access_level, merge_requests_access_level, repository_size, storage_size, \
         wiki_size, packages_size, settings, marked_for_deletion_at, forked_from_id, \
         commit_count, repository_languages";
}

/// Column values for an insert or update of a project.
pub type ProjectChanges = Changes<Projects>;

impl ProjectChanges {
    /// Name and path with their lower-cased lookup columns.
    pub fn set_name_and_path(&mut self, name: &str, path: &str) {
        self.set("name", name);
        self.set("name_lower", name.to_lowercase());
        self.set("path", path);
        self.set("path_lower", path.to_lowercase());
    }

    /// The text set for `column` (`None` when it is unset, null or not text).
    pub fn text(&self, column: &str) -> Option<&str> {
        match self.get(column)? {
            Arg::Text(text) => Some(text),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StarrerRow {
    pub starred_at: i64,
    #[sqlx(flatten)]
    pub user: UserRow,
}

impl TenantDb {
    /// Every project's id and classification label (`""` when none), for external
    /// authorization of lists.
    pub async fn project_classification_labels(&self) -> crate::Result<Vec<(i64, String)>> {
        let rows: Vec<(i64, String)> = self
            .query_as("SELECT id, settings FROM projects WHERE tenant_id = $1")
            .fetch_all(self.reader())
            .await?;
        Ok(rows
            .into_iter()
            .map(|(id, settings)| (id, classification_label(&settings)))
            .collect())
    }

    pub async fn project_by_id(&self, id: i64) -> crate::Result<Option<ProjectRow>> {
        self.find_by_id("projects", PROJECT_COLUMNS, id).await
    }

    /// Projects by id, in no particular order (the sources a page of forks shows).
    pub async fn projects_by_ids(&self, ids: &[i64]) -> crate::Result<Vec<ProjectRow>> {
        let select = format!("SELECT {PROJECT_COLUMNS} FROM projects");
        self.rows_with_keys(&select, "id", ids, "").await
    }

    /// A project by its full path (`group/sub/project`), case-insensitively.
    pub async fn project_by_full_path(&self, full_path: &str) -> crate::Result<Option<ProjectRow>> {
        let Some((namespace, path)) = full_path.rsplit_once('/') else {
            return Ok(None);
        };
        Ok(self.query_as(AssertSqlSafe(format!(
            "SELECT {} FROM projects p JOIN namespaces n ON n.tenant_id = p.tenant_id AND n.id = p.namespace_id \
             WHERE p.tenant_id = $1 AND n.full_path_lower = $2 AND p.path_lower = $3",
            project_columns("p")
        )))
        .bind(namespace.to_lowercase())
        .bind(path.to_lowercase())
        .fetch_optional(self.reader())
        .await?)
    }

    pub async fn list_projects(
        &self,
        filter: &ProjectFilter,
        window: &Window,
    ) -> crate::Result<Vec<ProjectRow>> {
        let scope = |sql: &mut Sql| filter.apply(sql, self.tenant_id());
        let columns = project_columns("p");
        self.page(&columns, "projects p", scope, window, "p.").await
    }

    pub async fn count_projects(&self, filter: &ProjectFilter, cap: i64) -> crate::Result<i64> {
        let scope = |sql: &mut Sql| filter.apply(sql, self.tenant_id());
        self.count_up_to("projects p", scope, cap).await
    }

    /// How many projects a namespace holds (a user's personal project count).
    pub async fn count_namespace_projects(&self, namespace_id: i64) -> crate::Result<i64> {
        Ok(self
            .query_scalar(
                "SELECT COUNT(*) FROM projects WHERE tenant_id = $1 AND namespace_id = $2",
            )
            .bind(namespace_id)
            .fetch_one(self.reader())
            .await?)
    }

    /// Takes the next project id in a write of its own. A project's repository is made under
    /// its id before the row exists (no git runs inside a transaction), so the id is taken
    /// first; one whose creation then fails is never used, and project ids may have gaps.
    pub async fn reserve_project_id(&self) -> Result<i64> {
        next_id(self.writer(), self.tenant_id(), "projects").await
    }

    /// Inserts a project under a reserved `id` with `changes` (and its creator as a direct
    /// member at `creator_level`, when given), in one short transaction. A fork's source gets its
    /// `forks_count` raised in the same transaction.
    pub async fn insert_project(
        &self,
        id: i64,
        namespace_id: i64,
        creator_id: i64,
        creator_level: Option<AccessLevel>,
        changes: &ProjectChanges,
    ) -> Result<ProjectRow> {
        let mut tx = self.writer().begin().await?;
        let now = now_ms();
        let mut sql = Sql::new(
            "INSERT INTO projects (tenant_id, id, namespace_id, creator_id, created_at, updated_at, last_activity_at",
        );
        changes.push_columns(&mut sql);
        sql.push(") VALUES (")
            .bind(self.tenant_id())
            .push(", ")
            .bind(id)
            .push(", ")
            .bind(namespace_id)
            .push(", ")
            .bind(creator_id)
            .push(", ")
            .bind(now)
            .push(", ")
            .bind(now)
            .push(", ")
            .bind(now);
        changes.push_values(&mut sql);
        sql.push(&format!(") RETURNING {PROJECT_COLUMNS}"));
        let row: ProjectRow = sql.query_as().fetch_one(&mut *tx).await?;
        redirects::release_project_path(&mut tx, self.tenant_id(), id).await?;
        if let Some(level) = creator_level {
            self.query(
                "INSERT INTO members (tenant_id, source_type, source_id, user_id, access_level, created_by_id, created_at, updated_at) \
                 VALUES ($1, 'Project', $2, $3, $5, $3, $4, $4)",
            )
            .bind(id)
            .bind(creator_id)
            .bind(now)
            .bind(level as i64)
            .execute(&mut *tx)
            .await?;
        }
        if let Some(source) = row.forked_from_id {
            count_forks(&mut tx, self.tenant_id(), source).await?;
        }
        let event = Event::new(EventKind::ProjectCreated, Some(creator_id), id)
            .in_project(id)
            .after(&row);
        outbox::commit(tx, self.tenant_id(), &[event]).await?;
        Ok(row)
    }

    /// Applies `changes` to a project as `actor` (none when the server does it, as for a
    /// mirror's settings); `None` when it does not exist. Its event says what changed most:
    /// a transfer, a rename (new path), archiving, or else an update.
    pub async fn update_project(
        &self,
        id: i64,
        changes: &ProjectChanges,
        actor: Option<i64>,
    ) -> crate::Result<Option<ProjectRow>> {
        let mut tx = self.writer().begin().await?;
        let Some(before) = project_in(&mut tx, self.tenant_id(), id).await? else {
            return Ok(None);
        };
        let now = now_ms();
        // A new name sets the path too; only a path that changes (beyond its case) moves.
        let moves = changes.get("namespace_id").is_some()
            || changes
                .text("path_lower")
                .is_some_and(|path| path != before.path.to_lowercase());
        if moves {
            redirects::record_project_move(&mut tx, self.tenant_id(), id).await?;
        }
        let mut sql = Sql::new("UPDATE projects SET updated_at = ");
        sql.bind(now).push(", last_activity_at = ").bind(now);
        changes.push_assignments(&mut sql);
        sql.push(" WHERE tenant_id = ")
            .bind(self.tenant_id())
            .push(" AND id = ")
            .bind(id)
            .push(&format!(" RETURNING {PROJECT_COLUMNS}"));
        let after: ProjectRow = sql.query_as().fetch_one(&mut *tx).await?;
        if moves {
            redirects::release_project_path(&mut tx, self.tenant_id(), id).await?;
        }
        let kind = if before.namespace_id != after.namespace_id {
            EventKind::ProjectTransferred
        } else if before.path != after.path {
            EventKind::ProjectRenamed
        } else if before.archived != after.archived {
            if after.archived {
                EventKind::ProjectArchived
            } else {
                EventKind::ProjectUnarchived
            }
        } else {
            EventKind::ProjectUpdated
        };
        let event = project_event(kind, actor, &before, &after);
        outbox::commit(tx, self.tenant_id(), &[event]).await?;
        Ok(Some(after))
    }

    /// Deletes a project with its memberships (stars, attributes and shares cascade); its
    /// forks lose their relation and its source gets its fork count lowered.
    /// `actor` is who deletes it (none for the sweep of projects whose deletion was delayed).
    pub async fn delete_project(&self, id: i64, actor: Option<i64>) -> Result<bool> {
        let mut tx = self.writer().begin().await?;
        let Some(before) = project_in(&mut tx, self.tenant_id(), id).await? else {
            return Ok(false);
        };
        self.query(
            "UPDATE projects SET forked_from_id = NULL WHERE tenant_id = $1 AND forked_from_id = $2",
        )
        .bind(id)
        .execute(&mut *tx)
        .await?;
        self.query(
            "DELETE FROM members WHERE tenant_id = $1 AND source_type = $2 AND source_id = $3",
        )
        .bind(PROJECT)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        let done = self
            .query("DELETE FROM projects WHERE tenant_id = $1 AND id = $2")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        if let Some(source) = before.forked_from_id {
            count_forks(&mut tx, self.tenant_id(), source).await?;
        }
        let event = Event::new(EventKind::ProjectDestroyed, actor, id)
            .in_project(id)
            .before(&before);
        outbox::commit(tx, self.tenant_id(), &[event]).await?;
        Ok(done.rows_affected() == 1)
    }

    /// Stars (`true`) or unstars a project for a user; `None` when it already was in that state.
    pub async fn set_star(
        &self,
        project_id: i64,
        user_id: i64,
        star: bool,
    ) -> crate::Result<Option<ProjectRow>> {
        let mut tx = self.writer().begin().await?;
        let changed = if star {
            self.query(
                "INSERT INTO project_stars (tenant_id, project_id, user_id, created_at) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (tenant_id, project_id, user_id) DO NOTHING",
            )
            .bind(project_id)
            .bind(user_id)
            .bind(now_ms())
            .execute(&mut *tx)
            .await?
            .rows_affected()
        } else {
            self.query(
                "DELETE FROM project_stars WHERE tenant_id = $1 AND project_id = $2 AND user_id = $3",
            )
            .bind(project_id)
            .bind(user_id)
            .execute(&mut *tx)
            .await?
            .rows_affected()
        };
        if changed == 0 {
            return Ok(None);
        }
        let row = self.query_as(AssertSqlSafe(format!(
            "UPDATE projects SET star_count = (SELECT COUNT(*) FROM project_stars WHERE tenant_id = $1 AND project_id = $2) \
             WHERE tenant_id = $1 AND id = $2 RETURNING {PROJECT_COLUMNS}"
        )))
        .bind(project_id)
        .fetch_optional(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(row)
    }

    /// Who starred a project, most recent first, optionally matching `search`.
    pub async fn starrers(
        &self,
        project_id: i64,
        search: Option<&str>,
        limit: i64,
        offset: i64,
    ) -> crate::Result<Vec<StarrerRow>> {
        let mut sql = self.sql(&format!(
            "SELECT s.created_at AS starred_at, {} FROM project_stars s JOIN users u ON u.tenant_id = s.tenant_id \
             AND u.id = s.user_id WHERE s.tenant_id = ",
            user_columns("u")
        ));
        sql.push(" AND s.project_id = ").bind(project_id);
        if let Some(search) = search {
            let pattern = format!("%{}%", escape_like(&search.to_lowercase()));
            sql.push(" AND (LOWER(u.name) LIKE ")
                .bind(pattern.clone())
                .push(" ESCAPE '\\' OR u.username_lower LIKE ")
                .bind(pattern)
                .push(" ESCAPE '\\')");
        }
        sql.push(" ORDER BY s.created_at DESC, u.id DESC LIMIT ")
            .bind(limit)
            .push(" OFFSET ")
            .bind(offset);
        Ok(sql.query_as().fetch_all(self.reader()).await?)
    }

    pub async fn project_custom_attributes_of(
        &self,
        ids: &[i64],
    ) -> crate::Result<Vec<(i64, String, String)>> {
        self.rows_with_keys(
            "SELECT project_id, key, value FROM project_custom_attributes",
            "project_id",
            ids,
            " ORDER BY key",
        )
        .await
    }

    /// Whether `name` and `path` are taken in a namespace (by a project other than `except`).
    pub async fn project_taken(
        &self,
        namespace_id: i64,
        name: &str,
        path: &str,
        except: Option<i64>,
    ) -> crate::Result<(bool, bool)> {
        let rows: Vec<(String, String)> = self
            .query_as(
                "SELECT name, path_lower FROM projects WHERE tenant_id = $1 AND namespace_id = $2 \
             AND (name = $3 OR path_lower = $4) AND id <> $5",
            )
            .bind(namespace_id)
            .bind(name)
            .bind(path.to_lowercase())
            .bind(except.unwrap_or(0))
            .fetch_all(self.reader())
            .await?;
        Ok((
            rows.iter().any(|(n, _)| n == name),
            rows.iter().any(|(_, p)| *p == path.to_lowercase()),
        ))
    }
}

/// Project `id` as it stands inside `tx` (what an event's `before` shows).
pub(super) async fn project_in(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    id: i64,
) -> crate::Result<Option<ProjectRow>> {
    row_in(
        tx,
        "projects",
        PROJECT_COLUMNS,
        tenant_id,
        &[("id", id.into())],
    )
    .await
}

/// The event of a change to a project, with the project before and after it.
pub(super) fn project_event(
    kind: EventKind,
    actor: Option<i64>,
    before: &ProjectRow,
    after: &ProjectRow,
) -> Event {
    Event::new(kind, actor, after.id)
        .in_project(after.id)
        .before(before)
        .after(after)
}
