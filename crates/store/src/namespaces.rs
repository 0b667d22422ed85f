//! Namespaces: every user's personal namespace and groups (nested through `parent_id`).
//! A namespace's `traversal` (`/1/5/9/`) names its ancestors, so "this group and everything
//! below it" is one prefix match, and renaming a group rewrites its descendants' full paths.

use sqlx::AssertSqlSafe;

use super::changes::{Changes, Table};
use super::sql::{Sql, escape_like};
use super::window::Window;
use super::{TenantDb, ids::next_id, now_ms, outbox, redirects};
use crate::access_level::AccessLevel;
use crate::events::{Event, EventKind};
use crate::model::namespaces::NamespaceRow;
use crate::model::visibility::Visibility;

pub const NAMESPACE_COLUMNS: &str = "id, kind, owner_id, parent_id, name, path, full_path, full_name, \
    traversal, description, visibility, avatar_path, settings, created_at, updated_at";

pub fn namespace_columns(alias: &str) -> String {
    NAMESPACE_COLUMNS
        .split(", ")
        .map(|c| format!("{alias}.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What creating a group needs.
pub struct NewGroup<'a> {
    pub name: &'a str,
    pub path: &'a str,
    pub description: &'a str,
    pub visibility: Visibility,
    pub parent: Option<&'a NamespaceRow>,
    pub settings: &'a str,
    /// Becomes the group's first owner.
    pub creator_id: i64,
}

/// The filters of `GET /groups` and `GET /namespaces`.
#[derive(Debug, Default)]
pub struct NamespaceFilter {
    pub kind: Option<&'static str>,
    pub search: Option<String>,
    /// Only namespaces with this parent (`Some(None)`: top level only).
    pub parent: Option<Option<i64>>,
    /// Only the descendants, at any depth, of the group with this traversal path.
    pub descendants_of: Option<String>,
    /// Restrict to what this user can see (`None` with `admin`: everything).
    pub viewer: Option<i64>,
    pub viewer_external: bool,
    pub admin: bool,
    /// Only groups the viewer is a member of (directly or through an ancestor).
    pub member_of: Option<i64>,
    pub min_access_level: Option<i64>,
    /// Only groups the viewer owns (`GET /groups?owned=true`).
    pub owned: bool,
    pub visibility: Option<Visibility>,
    pub skip: Vec<i64>,
    pub today: String,
    /// Only the viewer's own namespace and the groups they belong to (`GET /namespaces`).
    pub mine: bool,
}

/// `n.id IN (groups where `user` is a member, directly or through an ancestor, at `min` or above)`.
pub fn push_member_groups(sql: &mut Sql, tenant_id: i64, user: i64, min: i64, today: &str) {
    sql.push("SELECT d.id FROM namespaces d JOIN namespaces g ON g.tenant_id = d.tenant_id AND d.traversal LIKE g.traversal || '%' \
              JOIN members m ON m.tenant_id = g.tenant_id AND m.source_type = 'Namespace' AND m.source_id = g.id \
              WHERE d.tenant_id = ")
        .bind(tenant_id)
        .push(" AND m.user_id = ")
        .bind(user)
        .push(" AND m.access_level >= ")
        .bind(min)
        .push(" AND (m.expires_at IS NULL OR m.expires_at > ")
        .bind(today)
        .push(")");
}

impl NamespaceFilter {
    fn apply(&self, sql: &mut Sql, tenant_id: i64) {
        sql.push(" WHERE n.tenant_id = ").bind(tenant_id);
        if let Some(kind) = self.kind {
            sql.push(" AND n.kind = ").bind(kind);
        }
        if let Some(search) = &self.search {
            let pattern = format!("%{}%", escape_like(&search.to_lowercase()));
            sql.push(" AND (LOWER(n.name) LIKE ")
                .bind(pattern.clone())
                .push(" ESCAPE '\\' OR n.full_path_lower LIKE ")
                .bind(pattern)
                .push(" ESCAPE '\\')");
        }
        match self.parent {
            Some(Some(parent)) => {
                sql.push(" AND n.parent_key = ").bind(parent);
            }
            Some(None) => {
                sql.push(" AND n.parent_key = 0");
            }
            None => {}
        }
        if let Some(traversal) = &self.descendants_of {
            // A traversal path holds digits and `/` only: no LIKE wildcard to escape.
            sql.push(" AND n.traversal LIKE ")
                .bind(format!("{traversal}%"))
                .push(" AND n.traversal <> ")
                .bind(traversal.as_str());
        }
        if let Some(visibility) = self.visibility {
            sql.push(" AND n.visibility = ").bind(visibility.as_str());
        }
        if !self.skip.is_empty() {
            sql.push(" AND n.id NOT IN (")
                .bind_list(self.skip.iter().copied())
                .push(")");
        }
        if let Some(user) = self.member_of.or(self.owned.then_some(0).and(self.viewer)) {
            let min = if self.owned {
                AccessLevel::Owner.as_i64()
            } else {
                self.min_access_level.unwrap_or(AccessLevel::Guest.as_i64())
            };
            sql.push(" AND n.id IN (");
            push_member_groups(sql, tenant_id, user, min, &self.today);
            sql.push(")");
        }
        if self.mine
            && let Some(user) = self.viewer
        {
            sql.push(" AND (n.owner_id = ")
                .bind(user)
                .push(" OR n.id IN (");
            push_member_groups(sql, tenant_id, user, 10, &self.today);
            sql.push("))");
        }
        if self.admin {
            return;
        }
        match self.viewer {
            None => {
                sql.push(" AND n.kind = 'group' AND n.visibility_level = 20");
            }
            Some(user) => {
                sql.push(" AND (n.owner_id = ").bind(user);
                if self.viewer_external {
                    sql.push(" OR (n.kind = 'group' AND n.visibility_level = 20)");
                } else {
                    sql.push(" OR (n.kind = 'group' AND n.visibility_level >= 10)");
                }
                // members of the group or an ancestor
                sql.push(" OR n.id IN (");
                push_member_groups(sql, tenant_id, user, 10, &self.today);
                // members of a descendant group see its ancestors
                sql.push(") OR EXISTS (SELECT 1 FROM namespaces d JOIN members m ON m.tenant_id = d.tenant_id \
                          AND m.source_type = 'Namespace' AND m.source_id = d.id WHERE d.tenant_id = n.tenant_id \
                          AND d.traversal LIKE n.traversal || '%' AND m.user_id = ")
                    .bind(user)
                    .push(")");
                // members of a project below the group see it
                sql.push(" OR EXISTS (SELECT 1 FROM projects p JOIN namespaces d ON d.tenant_id = p.tenant_id \
                          AND d.id = p.namespace_id JOIN members m ON m.tenant_id = p.tenant_id \
                          AND m.source_type = 'Project' AND m.source_id = p.id WHERE p.tenant_id = n.tenant_id \
                          AND d.traversal LIKE n.traversal || '%' AND m.user_id = ")
                    .bind(user)
                    .push("))");
            }
        }
    }
}

/// The `namespaces` table, for [`NamespaceChanges`].
pub struct Namespaces;

impl Table for Namespaces {
    const NAME: &'static str = "namespaces";
    const COLUMNS: &'static str = "kind, owner_id, parent_id, parent_key, name, path, path_lower, full_path, \
         full_path_lower, full_name, traversal, description, visibility, visibility_level, \
         avatar_path, settings";
}

/// Column values for a group update.
pub type NamespaceChanges = Changes<Namespaces>;

impl TenantDb {
    pub async fn namespace_by_id(&self, id: i64) -> crate::Result<Option<NamespaceRow>> {
        self.find_by_id("namespaces", NAMESPACE_COLUMNS, id).await
    }

    pub async fn namespace_by_full_path(&self, path: &str) -> crate::Result<Option<NamespaceRow>> {
        Ok(self.query_as(AssertSqlSafe(format!(
            "SELECT {NAMESPACE_COLUMNS} FROM namespaces WHERE tenant_id = $1 AND full_path_lower = $2"
        )))
        .bind(path.to_lowercase())
        .fetch_optional(self.reader())
        .await?)
    }

    /// A namespace named by id (all digits) or full path.
    pub async fn namespace_by_key(&self, key: &str) -> crate::Result<Option<NamespaceRow>> {
        match key.parse::<i64>() {
            Ok(id) if key.bytes().all(|b| b.is_ascii_digit()) => self.namespace_by_id(id).await,
            _ => self.namespace_by_full_path(key).await,
        }
    }

    pub async fn namespaces_by_ids(&self, ids: &[i64]) -> crate::Result<Vec<NamespaceRow>> {
        let select = format!("SELECT {NAMESPACE_COLUMNS} FROM namespaces");
        self.rows_with_keys(&select, "id", ids, "").await
    }

    /// The user's personal namespace, created when missing (users made before namespaces
    /// existed, or by the bootstrap, get theirs on first use).
    pub async fn user_namespace(&self, user_id: i64) -> crate::Result<Option<NamespaceRow>> {
        let existing: Option<NamespaceRow> = self
            .query_as(AssertSqlSafe(format!(
                "SELECT {NAMESPACE_COLUMNS} FROM namespaces WHERE tenant_id = $1 AND owner_id = $2"
            )))
            .bind(user_id)
            .fetch_optional(self.reader())
            .await?;
        if existing.is_some() {
            return Ok(existing);
        }
        let Some(user) = self.user_by_id(user_id).await? else {
            return Ok(None);
        };
        let mut tx = self.writer().begin().await?;
        let inserted = insert_user_namespace(
            &mut tx,
            self.tenant_id(),
            user.id,
            &user.username,
            &user.name,
        )
        .await;
        match inserted {
            Ok(row) => {
                tx.commit().await?;
                Ok(Some(row))
            }
            Err(error) => {
                drop(tx);
                // Another request may have made it meanwhile.
                let again: Option<NamespaceRow> = self.query_as(AssertSqlSafe(format!(
                    "SELECT {NAMESPACE_COLUMNS} FROM namespaces WHERE tenant_id = $1 AND owner_id = $2"
                )))
                .bind(user_id)
                .fetch_optional(self.reader())
                .await?;
                again.map(Some).ok_or(error)
            }
        }
    }

    pub async fn list_namespaces(
        &self,
        filter: &NamespaceFilter,
        window: &Window,
    ) -> crate::Result<Vec<NamespaceRow>> {
        let scope = |sql: &mut Sql| filter.apply(sql, self.tenant_id());
        let columns = namespace_columns("n");
        self.page(&columns, "namespaces n", scope, window, "n.")
            .await
    }

    pub async fn count_namespaces(&self, filter: &NamespaceFilter, cap: i64) -> crate::Result<i64> {
        let scope = |sql: &mut Sql| filter.apply(sql, self.tenant_id());
        self.count_up_to("namespaces n", scope, cap).await
    }

    /// Creates a group with its creator as owner, all or nothing.
    pub async fn create_group(&self, group: NewGroup<'_>) -> crate::Result<NamespaceRow> {
        let mut tx = self.writer().begin().await?;
        let id = next_id(&mut *tx, self.tenant_id(), "namespaces").await?;
        let now = now_ms();
        let (full_path, full_name, traversal) = match group.parent {
            Some(parent) => (
                format!("{}/{}", parent.full_path, group.path),
                format!("{} / {}", parent.full_name, group.name),
                format!("{}{id}/", parent.traversal),
            ),
            None => (
                group.path.to_string(),
                group.name.to_string(),
                format!("/{id}/"),
            ),
        };
        let parent_id = group.parent.map(|p| p.id);
        let row = self.query_as(AssertSqlSafe(format!(
            "INSERT INTO namespaces (tenant_id, id, kind, parent_id, parent_key, name, path, path_lower, full_path, \
             full_path_lower, full_name, traversal, description, visibility, visibility_level, settings, created_at, updated_at) \
             VALUES ($1, $2, 'group', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $16) \
             RETURNING {NAMESPACE_COLUMNS}"
        )))
        .bind(id)
        .bind(parent_id)
        .bind(parent_id.unwrap_or(0))
        .bind(group.name)
        .bind(group.path)
        .bind(group.path.to_lowercase())
        .bind(&full_path)
        .bind(full_path.to_lowercase())
        .bind(&full_name)
        .bind(&traversal)
        .bind(group.description)
        .bind(group.visibility.as_str())
        .bind(group.visibility.level())
        .bind(group.settings)
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        redirects::release_path(&mut tx, self.tenant_id(), &full_path).await?;
        self.query(
            "INSERT INTO members (tenant_id, source_type, source_id, user_id, access_level, created_by_id, created_at, updated_at) \
             VALUES ($1, 'Namespace', $2, $3, 50, $3, $4, $4)",
        )
        .bind(id)
        .bind(group.creator_id)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let row: NamespaceRow = row;
        let event = Event::new(EventKind::GroupCreated, Some(group.creator_id), id).after(&row);
        outbox::commit(tx, self.tenant_id(), &[event]).await?;
        Ok(row)
    }

    /// Updates a group as `actor`; a new name or path is carried into the full names and
    /// paths of everything below it.
    pub async fn update_group(
        &self,
        group: &NamespaceRow,
        changes: &NamespaceChanges,
        name: &str,
        path: &str,
        actor: i64,
    ) -> crate::Result<NamespaceRow> {
        let mut tx = self.writer().begin().await?;
        let now = now_ms();
        let mut sql = Sql::new("UPDATE namespaces SET updated_at = ");
        sql.bind(now);
        changes.push_assignments(&mut sql);
        sql.push(" WHERE tenant_id = ")
            .bind(self.tenant_id())
            .push(" AND id = ")
            .bind(group.id);
        sql.query().execute(&mut *tx).await?;
        if name != group.name || path != group.path {
            let (parent_path, parent_name) = match group.full_path.rsplit_once('/') {
                Some((parent, _)) => (
                    format!("{parent}/"),
                    group
                        .full_name
                        .rsplit_once(" / ")
                        .map(|(n, _)| format!("{n} / "))
                        .unwrap_or_default(),
                ),
                None => (String::new(), String::new()),
            };
            let new_full_path = format!("{parent_path}{path}");
            let new_full_name = format!("{parent_name}{name}");
            let moves = !new_full_path.eq_ignore_ascii_case(&group.full_path);
            if moves {
                redirects::record_subtree_move(&mut tx, self.tenant_id(), &group.traversal).await?;
            }
            rename_subtree(
                &mut tx,
                self.tenant_id(),
                &group.traversal,
                (&group.full_path, &new_full_path),
                (&group.full_name, &new_full_name),
            )
            .await?;
            if moves {
                redirects::release_path(&mut tx, self.tenant_id(), &new_full_path).await?;
            }
        }
        let row: NamespaceRow = self
            .query_as(AssertSqlSafe(format!(
                "SELECT {NAMESPACE_COLUMNS} FROM namespaces WHERE tenant_id = $1 AND id = $2"
            )))
            .bind(group.id)
            .fetch_one(&mut *tx)
            .await?;
        let event = Event::new(EventKind::GroupUpdated, Some(actor), group.id)
            .before(group)
            .after(&row);
        outbox::commit(tx, self.tenant_id(), &[event]).await?;
        Ok(row)
    }

    /// Deletes a group with its subgroups, their projects and memberships; returns the ids of
    /// the deleted projects (whose repositories and files the caller removes). Forks of those
    /// projects lose their relation, and their sources get their fork counts recounted.
    /// `actor` is who deletes it.
    pub async fn delete_group(&self, group: &NamespaceRow, actor: i64) -> crate::Result<Vec<i64>> {
        let mut tx = self.writer().begin().await?;
        let (projects, event) = delete_group_in(&mut tx, self.tenant_id(), group, actor).await?;
        outbox::commit(tx, self.tenant_id(), &[event]).await?;
        Ok(projects)
    }
}

/// Deletes a group inside the caller's transaction (see `TenantDb::delete_group`), so a user's
/// delete takes the groups they solely own in its own transaction. Returns the deleted
/// projects and the event, which the caller records with its others as the last write.
pub(super) async fn delete_group_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    t: i64,
    group: &NamespaceRow,
    actor: i64,
) -> crate::Result<(Vec<i64>, Event)> {
    let like = format!("{}%", group.traversal);
    let projects: Vec<i64> = sqlx::query_scalar(
        "SELECT p.id FROM projects p JOIN namespaces n ON n.tenant_id = p.tenant_id \
         AND n.id = p.namespace_id WHERE p.tenant_id = $1 AND n.traversal LIKE $2",
    )
    .bind(t)
    .bind(&like)
    .fetch_all(&mut **tx)
    .await?;
    let sources = super::project_state::unlink_projects(tx, t, &projects).await?;
    sqlx::query(
        "DELETE FROM members WHERE tenant_id = $1 AND source_type = 'Project' AND source_id IN \
         (SELECT p.id FROM projects p JOIN namespaces n ON n.tenant_id = p.tenant_id AND n.id = p.namespace_id \
          WHERE p.tenant_id = $1 AND n.traversal LIKE $2)",
    )
    .bind(t)
    .bind(&like)
    .execute(&mut **tx)
    .await?;
    sqlx::query(
        "DELETE FROM members WHERE tenant_id = $1 AND source_type = 'Namespace' AND source_id IN \
         (SELECT id FROM namespaces WHERE tenant_id = $1 AND traversal LIKE $2)",
    )
    .bind(t)
    .bind(&like)
    .execute(&mut **tx)
    .await?;
    sqlx::query("DELETE FROM namespaces WHERE tenant_id = $1 AND traversal LIKE $2")
        .bind(t)
        .bind(&like)
        .execute(&mut **tx)
        .await?;
    for source in sources {
        super::project_state::count_forks(tx, t, source).await?;
    }
    let event = Event::new(EventKind::GroupDestroyed, Some(actor), group.id).before(group);
    Ok((projects, event))
}

/// Inserts a user's personal namespace inside the caller's transaction.
pub async fn insert_user_namespace(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    tenant_id: i64,
    user_id: i64,
    username: &str,
    name: &str,
) -> crate::Result<NamespaceRow> {
    let id = next_id(&mut **tx, tenant_id, "namespaces").await?;
    let now = now_ms();
    let row: NamespaceRow = sqlx::query_as(AssertSqlSafe(format!(
        "INSERT INTO namespaces (tenant_id, id, kind, owner_id, parent_key, name, path, path_lower, full_path, \
         full_path_lower, full_name, traversal, created_at, updated_at) \
         VALUES ($1, $2, 'user', $3, 0, $4, $5, $6, $5, $6, $4, $7, $8, $8) RETURNING {NAMESPACE_COLUMNS}"
    )))
    .bind(tenant_id)
    .bind(id)
    .bind(user_id)
    .bind(name)
    .bind(username)
    .bind(username.to_lowercase())
    .bind(format!("/{id}/"))
    .bind(now)
    .fetch_one(&mut **tx)
    .await?;
    redirects::release_path(tx, tenant_id, username).await?;
    Ok(row)
}

/// Keeps a user's personal namespace in step with a new username and name.
pub async fn sync_user_namespace(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    tenant_id: i64,
    user_id: i64,
    username: &str,
    name: &str,
) -> crate::Result<()> {
    let (namespace_id, traversal, old_path): (i64, String, String) = sqlx::query_as(
        "SELECT id, traversal, path FROM namespaces WHERE tenant_id = $1 AND owner_id = $2",
    )
    .bind(tenant_id)
    .bind(user_id)
    .fetch_one(&mut **tx)
    .await?;
    let moves = !old_path.eq_ignore_ascii_case(username);
    if moves {
        redirects::record_subtree_move(tx, tenant_id, &traversal).await?;
    }
    sqlx::query(
        "UPDATE namespaces SET name = $1, full_name = $1, path = $2, path_lower = $3, full_path = $2, \
         full_path_lower = $3, updated_at = $4 WHERE tenant_id = $5 AND id = $6",
    )
    .bind(name)
    .bind(username)
    .bind(username.to_lowercase())
    .bind(now_ms())
    .bind(tenant_id)
    .bind(namespace_id)
    .execute(&mut **tx)
    .await?;
    if moves {
        redirects::release_path(tx, tenant_id, username).await?;
    }
    Ok(())
}

/// Rewrites the full paths and names of a namespace and its descendants.
async fn rename_subtree(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    tenant_id: i64,
    traversal: &str,
    (old_path, new_path): (&str, &str),
    (old_name, new_name): (&str, &str),
) -> crate::Result<()> {
    let path_len = old_path.chars().count() as i64;
    let name_len = old_name.chars().count() as i64;
    Ok(sqlx::query(
        "UPDATE namespaces SET full_path = $1 || SUBSTR(full_path, CAST($2 AS INTEGER)), full_path_lower = LOWER($1 || SUBSTR(full_path, CAST($2 AS INTEGER))), \
         full_name = $3 || SUBSTR(full_name, CAST($4 AS INTEGER)) WHERE tenant_id = $5 AND traversal LIKE $6",
    )
    .bind(new_path)
    .bind(path_len + 1)
    .bind(new_name)
    .bind(name_len + 1)
    .bind(tenant_id)
    .bind(format!("{traversal}%"))
    .execute(&mut **tx)
    .await
    .map(|_| ())?)
}
