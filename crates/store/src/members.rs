//! Members of projects (`source_type` 'Project') and groups ('Namespace'), and the access a
//! user has through them: direct, or inherited from the ancestors of a group or of the
//! project's namespace.

use sqlx::{Any, AssertSqlSafe, Transaction};

use super::sql::{Sql, escape_like};
use super::users::USER_COLUMNS;
use super::{TenantDb, now_ms, outbox, row_in};
use crate::access_level::AccessLevel;
use crate::events::{Event, EventKind};
use crate::model::members::MemberRow;
use crate::model::users::UserRow;

pub const PROJECT: &str = "Project";
pub const NAMESPACE: &str = "Namespace";

const MEMBER_COLUMNS: &str = "source_type, source_id, user_id, access_level, created_by_id, expires_at, created_at, updated_at";

/// Direct members of one source matching the list filters.
pub struct MemberFilter<'a> {
    pub source_type: &'a str,
    pub source_id: i64,
    pub today: &'a str,
    /// Part of the username or name (lower case).
    pub query: Option<&'a str>,
    pub user_ids: Option<&'a [i64]>,
}

impl MemberFilter<'_> {
    fn apply(&self, sql: &mut Sql, tenant_id: i64) {
        sql.push(" FROM members m JOIN users u ON u.tenant_id = m.tenant_id AND u.id = m.user_id WHERE m.tenant_id = ")
            .bind(tenant_id)
            .push(" AND m.source_type = ")
            .bind(self.source_type)
            .push(" AND m.source_id = ")
            .bind(self.source_id)
            .push(" AND (m.expires_at IS NULL OR m.expires_at > ")
            .bind(self.today)
            .push(")");
        if let Some(query) = self.query {
            let pattern = format!("%{}%", escape_like(query));
            sql.push(" AND (u.username_lower LIKE ")
                .bind(pattern.clone())
                .push(" ESCAPE '\\' OR LOWER(u.name) LIKE ")
                .bind(pattern)
                .push(" ESCAPE '\\')");
        }
        if let Some(ids) = self.user_ids {
            if ids.is_empty() {
                sql.push(" AND 1 = 0");
            } else {
                sql.push(" AND m.user_id IN (")
                    .bind_list(ids.iter().copied())
                    .push(")");
            }
        }
    }
}

/// The active users with access to a project through membership: of the project, of the
/// groups in `group_ids` (its namespace's ancestry and the groups it is shared with).
pub struct ProjectUsersFilter<'a> {
    pub project_id: i64,
    pub group_ids: &'a [i64],
    pub today: &'a str,
    pub search: Option<&'a str>,
    pub skip: &'a [i64],
}

impl ProjectUsersFilter<'_> {
    fn apply(&self, sql: &mut Sql, tenant_id: i64) {
        sql.push(" FROM users u WHERE u.tenant_id = ")
            .bind(tenant_id)
            .push(" AND u.state = 'active' AND u.id IN (SELECT user_id FROM members WHERE tenant_id = ")
            .bind(tenant_id)
            .push(" AND (expires_at IS NULL OR expires_at > ")
            .bind(self.today)
            .push(") AND ((source_type = 'Project' AND source_id = ")
            .bind(self.project_id)
            .push(")");
        if !self.group_ids.is_empty() {
            sql.push(" OR (source_type = 'Namespace' AND source_id IN (")
                .bind_list(self.group_ids.iter().copied())
                .push("))");
        }
        sql.push("))");
        if let Some(search) = self.search {
            let pattern = format!("%{}%", escape_like(search));
            sql.push(" AND (u.username_lower LIKE ")
                .bind(pattern.clone())
                .push(" ESCAPE '\\' OR LOWER(u.name) LIKE ")
                .bind(pattern)
                .push(" ESCAPE '\\')");
        }
        if !self.skip.is_empty() {
            sql.push(" AND u.id NOT IN (")
                .bind_list(self.skip.iter().copied())
                .push(")");
        }
    }
}

impl TenantDb {
    /// One page of a project's users, by name.
    pub async fn project_users(
        &self,
        filter: &ProjectUsersFilter<'_>,
        limit: i64,
        offset: i64,
    ) -> crate::Result<Vec<UserRow>> {
        let mut sql = Sql::new(&format!("SELECT {}", super::users::user_columns("u")));
        filter.apply(&mut sql, self.tenant_id());
        sql.push(" ORDER BY LOWER(u.name), u.id LIMIT ")
            .bind(limit)
            .push(" OFFSET ")
            .bind(offset);
        Ok(sql.query_as().fetch_all(self.reader()).await?)
    }

    pub async fn count_project_users(&self, filter: &ProjectUsersFilter<'_>) -> crate::Result<i64> {
        let mut sql = Sql::new("SELECT COUNT(*)");
        filter.apply(&mut sql, self.tenant_id());
        Ok(sql.query_scalar().fetch_one(self.reader()).await?)
    }

    /// One page of a source's direct members, in the order they joined.
    pub async fn members_page(
        &self,
        filter: &MemberFilter<'_>,
        limit: i64,
        offset: i64,
    ) -> crate::Result<Vec<MemberRow>> {
        let columns = MEMBER_COLUMNS
            .split(", ")
            .map(|c| format!("m.{c}"))
            .collect::<Vec<_>>()
            .join(", ");
        let mut sql = Sql::new(&format!("SELECT {columns}"));
        filter.apply(&mut sql, self.tenant_id());
        sql.push(" ORDER BY m.created_at, m.user_id LIMIT ")
            .bind(limit)
            .push(" OFFSET ")
            .bind(offset);
        Ok(sql.query_as().fetch_all(self.reader()).await?)
    }

    pub async fn count_members(&self, filter: &MemberFilter<'_>) -> crate::Result<i64> {
        let mut sql = Sql::new("SELECT COUNT(*)");
        filter.apply(&mut sql, self.tenant_id());
        Ok(sql.query_scalar().fetch_one(self.reader()).await?)
    }

    /// Direct members of one source, in the order they joined.
    pub async fn members_of(
        &self,
        source_type: &str,
        source_ids: &[i64],
        today: &str,
    ) -> crate::Result<Vec<MemberRow>> {
        if source_ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = self.sql(&format!(
            "SELECT {MEMBER_COLUMNS} FROM members WHERE tenant_id = "
        ));
        sql.push(" AND source_type = ")
            .bind(source_type)
            .push(" AND source_id IN (")
            .bind_list(source_ids.iter().copied())
            .push(") AND (expires_at IS NULL OR expires_at > ")
            .bind(today)
            .push(") ORDER BY created_at, user_id");
        Ok(sql.query_as().fetch_all(self.reader()).await?)
    }

    pub async fn member(
        &self,
        source_type: &str,
        source_id: i64,
        user_id: i64,
    ) -> crate::Result<Option<MemberRow>> {
        Ok(self.query_as(AssertSqlSafe(format!(
            "SELECT {MEMBER_COLUMNS} FROM members WHERE tenant_id = $1 AND source_type = $2 AND source_id = $3 AND user_id = $4"
        )))
        .bind(source_type)
        .bind(source_id)
        .bind(user_id)
        .fetch_optional(self.reader())
        .await?)
    }

    /// Adds a member; `None` when the user already is one.
    pub async fn add_member(
        &self,
        source_type: &str,
        source_id: i64,
        user_id: i64,
        access_level: i64,
        expires_at: Option<&str>,
        created_by: i64,
    ) -> crate::Result<Option<MemberRow>> {
        let now = now_ms();
        let mut tx = self.writer().begin().await?;
        let added: Option<MemberRow> = self.query_as(AssertSqlSafe(format!(
            "INSERT INTO members (tenant_id, source_type, source_id, user_id, access_level, created_by_id, expires_at, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) ON CONFLICT (tenant_id, source_type, source_id, user_id) DO NOTHING \
             RETURNING {MEMBER_COLUMNS}"
        )))
        .bind(source_type)
        .bind(source_id)
        .bind(user_id)
        .bind(access_level)
        .bind(created_by)
        .bind(expires_at)
        .bind(now)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(row) = &added {
            let event = member_event(EventKind::MemberAdded, created_by, row).after(row);
            outbox::record(&mut tx, self.tenant_id(), &[event]).await?;
        }
        tx.commit().await?;
        Ok(added)
    }

    /// Changes a member's level (and expiry, when given) as `actor`; `None` when not a member.
    pub async fn update_member(
        &self,
        source_type: &str,
        source_id: i64,
        user_id: i64,
        access_level: i64,
        expires_at: Option<Option<&str>>,
        actor: i64,
    ) -> crate::Result<Option<MemberRow>> {
        let mut tx = self.writer().begin().await?;
        let Some(before) =
            member_in(&mut tx, self.tenant_id(), source_type, source_id, user_id).await?
        else {
            return Ok(None);
        };
        let mut sql = Sql::new("UPDATE members SET updated_at = ");
        sql.bind(now_ms())
            .push(", access_level = ")
            .bind(access_level);
        if let Some(expires_at) = expires_at {
            sql.push(", expires_at = ").bind(expires_at);
        }
        sql.push(" WHERE tenant_id = ")
            .bind(self.tenant_id())
            .push(" AND source_type = ")
            .bind(source_type)
            .push(" AND source_id = ")
            .bind(source_id)
            .push(" AND user_id = ")
            .bind(user_id)
            .push(&format!(" RETURNING {MEMBER_COLUMNS}"));
        let after: MemberRow = sql.query_as().fetch_one(&mut *tx).await?;
        let event = member_event(EventKind::MemberUpdated, actor, &after)
            .before(&before)
            .after(&after);
        outbox::commit(tx, self.tenant_id(), &[event]).await?;
        Ok(Some(after))
    }

    /// Removes a member as `actor`; whether there was one.
    pub async fn remove_member(
        &self,
        source_type: &str,
        source_id: i64,
        user_id: i64,
        actor: i64,
    ) -> crate::Result<bool> {
        let mut tx = self.writer().begin().await?;
        let removed: Option<MemberRow> = self
            .query_as(AssertSqlSafe(format!(
                "DELETE FROM members WHERE tenant_id = $1 AND source_type = $2 AND source_id = $3 AND user_id = $4 \
                 RETURNING {MEMBER_COLUMNS}"
            )))
        .bind(source_type)
        .bind(source_id)
        .bind(user_id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(removed) = removed else {
            return Ok(false);
        };
        let event = member_event(EventKind::MemberRemoved, actor, &removed).before(&removed);
        outbox::commit(tx, self.tenant_id(), &[event]).await?;
        Ok(true)
    }

    /// How many owners a source has (the last one may not leave).
    pub async fn owner_count(&self, source_type: &str, source_id: i64) -> crate::Result<i64> {
        Ok(self.query_scalar(
            "SELECT COUNT(*) FROM members WHERE tenant_id = $1 AND source_type = $2 AND source_id = $3 AND access_level = $4",
        )
        .bind(source_type)
        .bind(source_id)
        .bind(AccessLevel::Owner.as_i64())
        .fetch_one(self.reader())
        .await?)
    }

    /// The highest level `user_id` holds in any of the groups `group_ids` (a namespace's
    /// ancestry), or `None`.
    pub async fn group_access(
        &self,
        user_id: i64,
        group_ids: &[i64],
        today: &str,
    ) -> crate::Result<Option<i64>> {
        if group_ids.is_empty() {
            return Ok(None);
        }
        let mut sql = self.sql("SELECT MAX(access_level) FROM members WHERE tenant_id = ");
        sql.push(" AND source_type = 'Namespace' AND user_id = ")
            .bind(user_id)
            .push(" AND source_id IN (")
            .bind_list(group_ids.iter().copied())
            .push(") AND (expires_at IS NULL OR expires_at > ")
            .bind(today)
            .push(")");
        Ok(sql
            .query_scalar::<Option<i64>>()
            .fetch_one(self.reader())
            .await?)
    }

    /// Users by id, in no particular order.
    pub async fn users_by_ids(&self, ids: &[i64]) -> crate::Result<Vec<UserRow>> {
        let select = format!("SELECT {USER_COLUMNS} FROM users");
        self.rows_with_keys(&select, "id", ids, "").await
    }

    /// `(source_id, access_level)` of a user's live memberships of one kind (all sources
    /// when `ids` is `None`).
    pub async fn levels_of(
        &self,
        user_id: i64,
        source_type: &str,
        ids: Option<&[i64]>,
        today: &str,
    ) -> crate::Result<Vec<(i64, i64)>> {
        if ids.is_some_and(|ids| ids.is_empty()) {
            return Ok(Vec::new());
        }
        let mut sql = self.sql("SELECT source_id, access_level FROM members WHERE tenant_id = ");
        sql.push(" AND source_type = ")
            .bind(source_type)
            .push(" AND user_id = ")
            .bind(user_id)
            .push(" AND (expires_at IS NULL OR expires_at > ")
            .bind(today)
            .push(")");
        if let Some(ids) = ids {
            sql.push(" AND source_id IN (")
                .bind_list(ids.iter().copied())
                .push(")");
        }
        Ok(sql.query_as().fetch_all(self.reader()).await?)
    }

    /// Whether `user_id` is a member of a group or project anywhere below `traversal`
    /// (members of a subgroup or project see the ancestors of it).
    pub async fn member_below(&self, user_id: i64, traversal: &str) -> crate::Result<bool> {
        let found: Option<i64> = self.query_scalar(
            "SELECT 1 FROM members m JOIN namespaces d ON d.tenant_id = m.tenant_id AND d.id = m.source_id \
             WHERE m.tenant_id = $1 AND m.user_id = $2 AND m.source_type = 'Namespace' AND d.traversal LIKE $3 \
             UNION ALL SELECT 1 FROM members m JOIN projects p ON p.tenant_id = m.tenant_id AND p.id = m.source_id \
             JOIN namespaces d ON d.tenant_id = p.tenant_id AND d.id = p.namespace_id \
             WHERE m.tenant_id = $1 AND m.user_id = $2 AND m.source_type = 'Project' AND d.traversal LIKE $3 LIMIT 1",
        )
        .bind(user_id)
        .bind(format!("{traversal}%"))
        .fetch_optional(self.reader())
        .await?;
        Ok(found.is_some())
    }
}

/// A membership event: its subject is the member's user, and a project membership is an event
/// of that project.
fn member_event(kind: EventKind, actor: i64, member: &MemberRow) -> Event {
    let event = Event::new(kind, Some(actor), member.user_id);
    if member.source_type == "Project" {
        event.in_project(member.source_id)
    } else {
        event
    }
}

/// The membership of `user_id` in a source as it stands inside `tx`.
async fn member_in(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    source_type: &str,
    source_id: i64,
    user_id: i64,
) -> crate::Result<Option<MemberRow>> {
    let key = [
        ("source_type", source_type.into()),
        ("source_id", source_id.into()),
        ("user_id", user_id.into()),
    ];
    row_in(tx, "members", MEMBER_COLUMNS, tenant_id, &key).await
}
