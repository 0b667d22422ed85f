//! User queries beyond single lookups: filtered lists, profile changes, states, deletion,
//! identities, custom attributes and activity.

use sqlx::{Any, AssertSqlSafe, Transaction};

use super::changes::{Changes, Table};
use super::issues::{delete_contributions, reassign_contributions};
use super::namespaces::{delete_group_in, insert_user_namespace, sync_user_namespace};
use super::sessions::end_web_sessions;
use super::sql::{Sql, escape_like};
use super::users::USER_COLUMNS;
use super::window::Window;
use super::{TenantDb, ids::next_id, now_ms, outbox, row_in};
use crate::access_level::AccessLevel;
use crate::events::{Event, EventKind};
use crate::model::namespaces::NamespaceRow;
use crate::model::states::UserState;
use crate::model::user_admin::IdentityRow;
use crate::model::users::UserRow;

/// What a user's delete takes with it besides the user's own rows.
pub struct UserDeletion<'a> {
    /// The groups the user solely owns (deleted only with `hard_delete`).
    pub groups: &'a [NamespaceRow],
    pub contributions: Contributions,
}

/// What becomes of a deleted user's issues and notes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contributions {
    /// They pass to the ghost user (GitLab's default).
    Reassign,
    /// They are deleted (`hard_delete`).
    Delete,
}

/// The filters of `GET /users` (admin-only ones are left `None` by the handler for others).
#[derive(Debug, Default)]
pub struct UserFilter {
    pub username: Option<String>,
    /// Matches name and username anywhere, email exactly unless `search_emails`.
    pub search: Option<String>,
    pub search_emails: bool,
    pub active: bool,
    pub blocked: bool,
    pub external: bool,
    pub exclude_external: bool,
    pub two_factor: Option<bool>,
    pub created_after: Option<i64>,
    pub created_before: Option<i64>,
    pub identity: Option<(String, String)>,
    pub custom_attributes: Vec<(String, String)>,
    /// Only users who are members of no project.
    pub without_projects: bool,
}

impl UserFilter {
    fn apply(&self, sql: &mut Sql, tenant_id: i64) {
        sql.push(" WHERE tenant_id = ")
            .bind(tenant_id)
            .push(" AND user_type = 'human'");
        if let Some(username) = &self.username {
            sql.push(" AND username_lower = ")
                .bind(username.to_lowercase());
        }
        if let Some(search) = &self.search {
            let pattern = format!("%{}%", escape_like(&search.to_lowercase()));
            sql.push(" AND (LOWER(name) LIKE ")
                .bind(pattern.clone())
                .push(" ESCAPE '\\'");
            sql.push(" OR username_lower LIKE ")
                .bind(pattern.clone())
                .push(" ESCAPE '\\'");
            if self.search_emails {
                sql.push(" OR email_lower LIKE ")
                    .bind(pattern)
                    .push(" ESCAPE '\\'");
            } else {
                sql.push(" OR email_lower = ").bind(search.to_lowercase());
            }
            sql.push(")");
        }
        if self.active {
            sql.push(" AND state = 'active'");
        }
        if self.blocked {
            sql.push(" AND state IN ('blocked', 'ldap_blocked')");
        }
        if self.external {
            sql.push(" AND external = 1");
        }
        if self.exclude_external {
            sql.push(" AND external = 0");
        }
        if let Some(enabled) = self.two_factor {
            sql.push(" AND two_factor_enabled = ").bind(enabled);
        }
        if let Some(after) = self.created_after {
            sql.push(" AND created_at >= ").bind(after);
        }
        if let Some(before) = self.created_before {
            sql.push(" AND created_at <= ").bind(before);
        }
        if let Some((provider, extern_uid)) = &self.identity {
            sql.push(" AND id IN (SELECT user_id FROM identities WHERE tenant_id = ")
                .bind(tenant_id)
                .push(" AND provider = ")
                .bind(provider.as_str())
                .push(" AND extern_uid = ")
                .bind(extern_uid.as_str())
                .push(")");
        }
        if self.without_projects {
            sql.push(" AND id NOT IN (SELECT user_id FROM members WHERE tenant_id = ")
                .bind(tenant_id)
                .push(" AND source_type = 'Project')");
        }
        sql.push_custom_attributes(
            "id",
            "user_custom_attributes",
            "user_id",
            tenant_id,
            &self.custom_attributes,
        );
    }
}

/// The `users` table, for [`UserChanges`].
pub struct Users;

impl Table for Users {
    const NAME: &'static str = "users";
    const COLUMNS: &'static str = "username, username_lower, email, email_lower, name, state, user_type, is_admin, \
         password_digest, password_expires_at, bio, location, public_email, skype, linkedin, \
         twitter, discord, website_url, organization, job_title, pronouns, note, theme_id, \
         color_scheme_id, projects_limit, can_create_group, external, private_profile, \
         two_factor_enabled, avatar_path, shared_runners_minutes_limit, \
         extra_shared_runners_minutes_limit, confirmed_at, last_sign_in_at, \
         current_sign_in_at, last_sign_in_ip, current_sign_in_ip, last_activity_on, \
         failed_attempts, locked_until, reset_password_token_digest, reset_password_sent_at, \
         confirmation_token_digest";
}

/// Column values for an insert or update of a user.
pub type UserChanges = Changes<Users>;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StatusRow {
    pub emoji: String,
    pub message: String,
    pub availability: String,
    pub clear_status_at: Option<i64>,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MembershipRow {
    pub source_id: i64,
    pub source_type: String,
    pub access_level: i64,
    pub source_name: String,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ActivityRow {
    pub id: i64,
    pub username: String,
    pub last_activity_on: String,
}

impl TenantDb {
    pub async fn list_users(
        &self,
        filter: &UserFilter,
        window: &Window,
    ) -> crate::Result<Vec<UserRow>> {
        let scope = |sql: &mut Sql| filter.apply(sql, self.tenant_id());
        self.page(USER_COLUMNS, "users", scope, window, "").await
    }

    pub async fn count_users(&self, filter: &UserFilter, cap: i64) -> crate::Result<i64> {
        let scope = |sql: &mut Sql| filter.apply(sql, self.tenant_id());
        self.count_up_to("users", scope, cap).await
    }

    /// Inserts a user with `changes` and an optional identity, all or nothing; `actor` is the
    /// administrator who creates it (none for the bootstrap's root).
    pub async fn create_user(
        &self,
        user: super::users::NewUser<'_>,
        changes: &UserChanges,
        identity: Option<(&str, &str)>,
        actor: Option<i64>,
    ) -> crate::Result<UserRow> {
        let mut tx = self.writer().begin().await?;
        let id = next_id(&mut *tx, self.tenant_id(), "users").await?;
        let now = now_ms();
        self.query(
            "INSERT INTO users (tenant_id, id, username, username_lower, email, email_lower, name, state, \
             is_admin, password_digest, projects_limit, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, 'active', $8, $9, $10, $11, $11)",
        )
        .bind(id)
        .bind(user.username)
        .bind(user.username.to_lowercase())
        .bind(user.email)
        .bind(user.email.to_lowercase())
        .bind(user.name)
        .bind(i64::from(user.is_admin))
        .bind(user.password_digest)
        .bind(user.projects_limit)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let keys = [("tenant_id", self.tenant_id()), ("id", id)];
        changes
            .update_sql(&keys, now)
            .query()
            .execute(&mut *tx)
            .await?;
        if let Some((provider, extern_uid)) = identity {
            insert_identity(&mut tx, self.tenant_id(), id, provider, extern_uid).await?;
        }
        let row: UserRow = self
            .query_as(AssertSqlSafe(format!(
                "SELECT {USER_COLUMNS} FROM users WHERE tenant_id = $1 AND id = $2"
            )))
            .bind(id)
            .fetch_one(&mut *tx)
            .await?;
        insert_user_namespace(&mut tx, self.tenant_id(), id, &row.username, &row.name).await?;
        let event = Event::new(EventKind::UserCreated, actor, id).after(&row);
        outbox::commit(tx, self.tenant_id(), &[event]).await?;
        self.auth_changed().await;
        Ok(row)
    }

    /// Applies `changes` (and an identity, when given) to a user as `actor`; `None` when it
    /// does not exist.
    pub async fn update_user(
        &self,
        id: i64,
        changes: &UserChanges,
        identity: Option<(&str, &str)>,
        actor: i64,
    ) -> crate::Result<Option<UserRow>> {
        let mut tx = self.writer().begin().await?;
        let Some(before) = user_in(&mut tx, self.tenant_id(), id).await? else {
            return Ok(None);
        };
        let keys = [("tenant_id", self.tenant_id()), ("id", id)];
        let mut sql = changes.update_sql(&keys, now_ms());
        sql.push(&format!(" RETURNING {USER_COLUMNS}"));
        let Some(row) = sql.query_as::<UserRow>().fetch_optional(&mut *tx).await? else {
            return Ok(None);
        };
        sync_user_namespace(&mut tx, self.tenant_id(), id, &row.username, &row.name).await?;
        if row.password_digest != before.password_digest {
            end_web_sessions(&mut tx, self.tenant_id(), id).await?;
        }
        if let Some((provider, extern_uid)) = identity {
            self.query(
                "DELETE FROM identities WHERE tenant_id = $1 AND user_id = $2 AND provider = $3",
            )
            .bind(id)
            .bind(provider)
            .execute(&mut *tx)
            .await?;
            insert_identity(&mut tx, self.tenant_id(), id, provider, extern_uid).await?;
        }
        let kind = if before.username != row.username {
            EventKind::UserRenamed
        } else {
            EventKind::UserUpdated
        };
        let event = Event::new(kind, Some(actor), id)
            .before(&before)
            .after(&row);
        outbox::commit(tx, self.tenant_id(), &[event]).await?;
        self.auth_changed().await;
        Ok(Some(row))
    }

    /// Sets a user's state, recording `kind` (block, unblock, deactivate or activate, as the
    /// caller decided) by `actor` (none when the system does it, e.g. a spam verdict); `false`
    /// when the user does not exist.
    pub async fn set_user_state(
        &self,
        id: i64,
        state: UserState,
        kind: EventKind,
        actor: Option<i64>,
    ) -> crate::Result<bool> {
        let mut tx = self.writer().begin().await?;
        let Some(before) = user_in(&mut tx, self.tenant_id(), id).await? else {
            return Ok(false);
        };
        let after: UserRow = sqlx::query_as(AssertSqlSafe(format!(
            "UPDATE users SET state = $1, updated_at = $2 WHERE tenant_id = $3 AND id = $4 \
             RETURNING {USER_COLUMNS}"
        )))
        .bind(state.as_str())
        .bind(now_ms())
        .bind(self.tenant_id())
        .bind(id)
        .fetch_one(&mut *tx)
        .await?;
        let event = Event::new(kind, actor, id).before(&before).after(&after);
        outbox::commit(tx, self.tenant_id(), &[event]).await?;
        self.auth_changed().await;
        Ok(true)
    }

    /// Removes a user and what hangs off it, all in one transaction: the groups of
    /// `deletion` (those the user solely owns) with their projects, the user's issue
    /// contributions (reassigned to the ghost user, made when missing, or deleted), tokens,
    /// identities, statuses, memberships and the personal namespace with its projects
    /// (which cascade; the members of those projects go here). Returns whether the user
    /// existed and the ids of the deleted projects (whose repositories and files the caller
    /// removes after the commit).
    pub async fn delete_user(
        &self,
        id: i64,
        deletion: &UserDeletion<'_>,
        actor: i64,
    ) -> crate::Result<(bool, Vec<i64>)> {
        let t = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        let Some(before) = user_in(&mut tx, t, id).await? else {
            return Ok((false, Vec::new()));
        };
        let mut events = Vec::new();
        let mut projects = Vec::new();
        for group in deletion.groups {
            let (deleted, event) = delete_group_in(&mut tx, t, group, actor).await?;
            projects.extend(deleted);
            events.push(event);
        }
        match deletion.contributions {
            Contributions::Reassign => {
                let ghost = ghost_in(&mut tx, t).await?;
                reassign_contributions(&mut tx, t, id, ghost.id).await?;
            }
            Contributions::Delete => delete_contributions(&mut tx, t, id).await?,
        }
        let personal: Vec<i64> = self
            .query_scalar(
                "SELECT p.id FROM projects p JOIN namespaces n ON n.tenant_id = p.tenant_id \
             AND n.id = p.namespace_id WHERE p.tenant_id = $1 AND n.owner_id = $2",
            )
            .bind(id)
            .fetch_all(&mut *tx)
            .await?;
        let sources = super::project_state::unlink_projects(&mut tx, t, &personal).await?;
        self.query(
            "DELETE FROM members WHERE tenant_id = $1 AND source_type = 'Project' AND source_id IN \
             (SELECT p.id FROM projects p JOIN namespaces n ON n.tenant_id = p.tenant_id AND n.id = p.namespace_id \
              WHERE p.tenant_id = $1 AND n.owner_id = $2)",
        )
        .bind(id)
        .execute(&mut *tx)
        .await?;
        let done = self
            .query("DELETE FROM users WHERE tenant_id = $1 AND id = $2")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        for source in sources {
            super::project_state::count_forks(&mut tx, t, source).await?;
        }
        projects.extend(personal);
        events.push(Event::new(EventKind::UserDestroyed, Some(actor), id).before(&before));
        outbox::commit(tx, t, &events).await?;
        self.auth_changed().await;
        Ok((done.rows_affected() == 1, projects))
    }

    /// Groups in which the user is the only owner (GitLab refuses to delete such a user
    /// unless the groups go too).
    pub async fn solely_owned_groups(&self, user_id: i64) -> crate::Result<Vec<i64>> {
        Ok(self.query_scalar(
            "SELECT m.source_id FROM members m WHERE m.tenant_id = $1 AND m.user_id = $2 \
             AND m.source_type = 'Namespace' AND m.access_level = $3 AND (SELECT COUNT(*) FROM members o \
             WHERE o.tenant_id = m.tenant_id AND o.source_type = 'Namespace' AND o.source_id = m.source_id \
             AND o.access_level = $3) = 1 ORDER BY m.source_id",
        )
        .bind(user_id)
        .bind(AccessLevel::Owner.as_i64())
        .fetch_all(self.reader())
        .await?)
    }

    /// A user's direct memberships of projects (`Project`) and groups (`Namespace`).
    pub async fn memberships(
        &self,
        user_id: i64,
        source_type: Option<&str>,
        limit: i64,
        offset: i64,
    ) -> crate::Result<Vec<MembershipRow>> {
        let mut sql = self.sql(
            "SELECT m.source_id, m.source_type, m.access_level, COALESCE(p.name, n.name, '') AS source_name \
             FROM members m LEFT JOIN projects p ON m.source_type = 'Project' AND p.tenant_id = m.tenant_id \
             AND p.id = m.source_id LEFT JOIN namespaces n ON m.source_type = 'Namespace' \
             AND n.tenant_id = m.tenant_id AND n.id = m.source_id WHERE m.tenant_id = ",
        );
        sql.push(" AND m.user_id = ").bind(user_id);
        if let Some(source_type) = source_type {
            sql.push(" AND m.source_type = ").bind(source_type);
        }
        sql.push(" ORDER BY m.source_type DESC, m.source_id LIMIT ")
            .bind(limit)
            .push(" OFFSET ")
            .bind(offset);
        Ok(sql.query_as().fetch_all(self.reader()).await?)
    }

    pub async fn count_memberships(
        &self,
        user_id: i64,
        source_type: Option<&str>,
    ) -> crate::Result<i64> {
        let mut sql = self.sql("SELECT COUNT(*) FROM members WHERE tenant_id = ");
        sql.push(" AND user_id = ").bind(user_id);
        if let Some(source_type) = source_type {
            sql.push(" AND source_type = ").bind(source_type);
        }
        Ok(sql.query_scalar().fetch_one(self.reader()).await?)
    }

    pub async fn identities_of(&self, user_ids: &[i64]) -> crate::Result<Vec<IdentityRow>> {
        self.rows_with_keys(
            "SELECT user_id, provider, extern_uid FROM identities",
            "user_id",
            user_ids,
            " ORDER BY provider",
        )
        .await
    }

    pub async fn delete_identity(&self, user_id: i64, provider: &str) -> crate::Result<bool> {
        let done = self
            .query("DELETE FROM identities WHERE tenant_id = $1 AND user_id = $2 AND provider = $3")
            .bind(user_id)
            .bind(provider)
            .execute(self.writer())
            .await?;
        self.auth_changed().await;
        Ok(done.rows_affected() == 1)
    }

    /// The user whose secondary email `email` is (case-insensitive), if any.
    pub async fn secondary_email_owner(&self, email: &str) -> crate::Result<Option<i64>> {
        Ok(self
            .query_scalar("SELECT user_id FROM emails WHERE tenant_id = $1 AND email_lower = $2")
            .bind(email.to_lowercase())
            .fetch_optional(self.reader())
            .await?)
    }

    /// A user's confirmed secondary emails (what `public_email` may be set to besides the primary).
    pub async fn confirmed_secondary_emails(&self, user_id: i64) -> crate::Result<Vec<String>> {
        Ok(self.query_scalar(
            "SELECT email FROM emails WHERE tenant_id = $1 AND user_id = $2 AND confirmed_at IS NOT NULL ORDER BY id",
        )
        .bind(user_id)
        .fetch_all(self.reader())
        .await?)
    }

    pub async fn custom_attributes_of(
        &self,
        user_ids: &[i64],
    ) -> crate::Result<Vec<(i64, String, String)>> {
        self.rows_with_keys(
            "SELECT user_id, key, value FROM user_custom_attributes",
            "user_id",
            user_ids,
            " ORDER BY key",
        )
        .await
    }

    pub async fn user_status(&self, user_id: i64) -> crate::Result<Option<StatusRow>> {
        Ok(self.query_as(
            "SELECT emoji, message, availability, clear_status_at FROM user_statuses WHERE tenant_id = $1 AND user_id = $2",
        )
        .bind(user_id)
        .fetch_optional(self.reader())
        .await?)
    }

    /// Replaces a user's status; `None` clears it.
    pub async fn set_user_status(
        &self,
        user_id: i64,
        status: Option<&StatusRow>,
    ) -> crate::Result<()> {
        let mut tx = self.writer().begin().await?;
        self.query("DELETE FROM user_statuses WHERE tenant_id = $1 AND user_id = $2")
            .bind(user_id)
            .execute(&mut *tx)
            .await?;
        if let Some(status) = status {
            self.query(
                "INSERT INTO user_statuses (tenant_id, user_id, emoji, message, availability, clear_status_at) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(user_id)
            .bind(&status.emoji)
            .bind(&status.message)
            .bind(&status.availability)
            .bind(status.clear_status_at)
            .execute(&mut *tx)
            .await?;
        }
        Ok(tx.commit().await?)
    }

    /// Records API activity for today (callers write at most once per user per day).
    pub async fn record_activity(&self, user_id: i64, today: &str) -> crate::Result<()> {
        let done = sqlx::query(
            "UPDATE users SET last_activity_on = $1 WHERE tenant_id = $2 AND id = $3 \
             AND (last_activity_on IS NULL OR last_activity_on < $1)",
        )
        .bind(today)
        .bind(self.tenant_id())
        .bind(user_id)
        .execute(self.writer())
        .await?;
        // Most calls find today already recorded: only a real change drops cached callers.
        if done.rows_affected() > 0 {
            self.usage_recorded();
        }
        Ok(())
    }

    /// Users active on or after `from` (`YYYY-MM-DD`), oldest activity first.
    pub async fn activities(&self, from: &str, window: &Window) -> crate::Result<Vec<ActivityRow>> {
        let columns = "id, username, last_activity_on";
        let scope = self.active_since(from);
        self.page(columns, "users", scope, window, "").await
    }

    pub async fn count_activities(&self, from: &str, cap: i64) -> crate::Result<i64> {
        let scope = self.active_since(from);
        self.count_up_to("users", scope, cap).await
    }

    /// `WHERE` the tenant's people active on or after `from`.
    fn active_since(&self, from: &str) -> impl FnOnce(&mut Sql) {
        let tenant_id = self.tenant_id();
        let from = from.to_string();
        move |sql| {
            sql.push(" WHERE tenant_id = ")
                .bind(tenant_id)
                .push(" AND user_type = 'human' AND last_activity_on >= ")
                .bind(from);
        }
    }
}

async fn insert_identity(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    tenant_id: i64,
    user_id: i64,
    provider: &str,
    extern_uid: &str,
) -> crate::Result<()> {
    Ok(sqlx::query(
        "INSERT INTO identities (tenant_id, user_id, provider, extern_uid, created_at) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(tenant_id)
    .bind(user_id)
    .bind(provider)
    .bind(extern_uid)
    .bind(now_ms())
    .execute(&mut **tx)
    .await
    .map(|_| ())?)
}

/// GitLab's placeholder that inherits the contributions of deleted users, made inside `tx`
/// when the tenant has none yet.
async fn ghost_in(tx: &mut Transaction<'_, Any>, tenant_id: i64) -> crate::Result<UserRow> {
    let existing: Option<UserRow> = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {USER_COLUMNS} FROM users WHERE tenant_id = $1 AND user_type = 'ghost'"
    )))
    .bind(tenant_id)
    .fetch_optional(&mut **tx)
    .await?;
    if let Some(ghost) = existing {
        return Ok(ghost);
    }
    let id = next_id(&mut **tx, tenant_id, "users").await?;
    // "ghost", or "ghost1", "ghost2"... when a person already has the name, as GitLab does.
    let taken: Vec<String> = sqlx::query_scalar(
        "SELECT username_lower FROM users WHERE tenant_id = $1 AND username_lower LIKE 'ghost%'",
    )
    .bind(tenant_id)
    .fetch_all(&mut **tx)
    .await?;
    let username = std::iter::once("ghost".to_string())
        .chain((1..).map(|n| format!("ghost{n}")))
        .find(|name| !taken.contains(name))
        .expect("an unused name");
    Ok(sqlx::query_as(AssertSqlSafe(format!(
        "INSERT INTO users (tenant_id, id, username, username_lower, email, email_lower, name, state, \
         user_type, bio, created_at, updated_at) VALUES ($1, $2, $6, $6, $3, $3, 'Ghost User', \
         'blocked', 'ghost', $4, $5, $5) RETURNING {USER_COLUMNS}"
    )))
    .bind(tenant_id)
    .bind(id)
    .bind(format!("ghost-{id}@noreply.trellis"))
    .bind("This is a \"Ghost User\", created to hold all issues authored by users that have since been deleted. This user cannot be removed.")
    .bind(now_ms())
    .bind(&username)
    .fetch_one(&mut **tx)
    .await?)
}

/// User `id` as it stands inside `tx` (the state an event's `before` shows).
async fn user_in(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    id: i64,
) -> crate::Result<Option<UserRow>> {
    row_in(tx, "users", USER_COLUMNS, tenant_id, &[("id", id.into())]).await
}
