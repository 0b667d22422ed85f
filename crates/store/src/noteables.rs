//! What a user does to an issue or a merge request for themselves: award emoji (on it or on
//! one of its notes), subscriptions, to-do items. Each write comes with its event in one
//! transaction; the thumbs on the noteable itself are its `upvotes` and `downvotes`, kept on
//! its row in the same transaction.

use sqlx::{Any, AssertSqlSafe, Transaction};

use super::issue_filter::Wildcard;
use super::issue_notes::{SystemNotes, insert_system_notes};
use super::outbox;
use super::sql::Sql;
use super::{TenantDb, ids::next_id, now_ms, row_by_id};
use crate::events::{Event, EventKind};
use crate::model::issue_notes::{AwardRow, TodoRow};
use crate::model::noteables::Noteable;

fn award_columns(on: Noteable) -> String {
    format!(
        "id, {}_id AS awardable_id, note_id, user_id, name, created_at, updated_at",
        on.prefix()
    )
}

fn todo_columns(on: Noteable) -> String {
    format!(
        "id, user_id, author_id, project_id, {}_id AS target_id, action_name, body, state, created_at",
        on.prefix()
    )
}

/// The column of the noteable's row that counts award `name`, if it is a vote.
fn vote_column(name: &str) -> Option<&'static str> {
    match name {
        "thumbsup" => Some("upvotes"),
        "thumbsdown" => Some("downvotes"),
        _ => None,
    }
}

/// `my_reaction_emoji`: the rows (alias `alias`, of kind `on`'s tables) `me` awarded some
/// emoji (`Any`), none (`None`) or emoji `name` to, themselves and not on their notes.
pub(super) fn push_my_reaction(
    sql: &mut Sql,
    alias: &str,
    on: Noteable,
    me: i64,
    reaction: &Wildcard<String>,
) {
    let prefix = on.prefix();
    let awarded = format!(
        "EXISTS (SELECT 1 FROM {prefix}_award_emoji e WHERE e.tenant_id = {alias}.tenant_id \
         AND e.{prefix}_id = {alias}.id AND e.note_id = 0 AND e.user_id = "
    );
    match reaction {
        Wildcard::Unset => return,
        Wildcard::None => sql.push(&format!(" AND NOT {awarded}")).bind(me),
        Wildcard::Any => sql.push(&format!(" AND {awarded}")).bind(me),
        Wildcard::Value(name) => sql
            .push(&format!(" AND {awarded}"))
            .bind(me)
            .push(" AND e.name = ")
            .bind(name.as_str()),
    };
    sql.push(")");
}

/// Logs `delta` seconds (negative subtracts) by `user_id` on `on`, whose total was `total`,
/// inside the caller's transaction: the time log entry, the new total on its row and
/// `notes`, all at the notes' time (now when they have none).
pub(super) async fn log_time(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    on: Noteable,
    user_id: i64,
    total: i64,
    delta: i64,
    notes: &SystemNotes,
) -> crate::Result<()> {
    let prefix = on.prefix();
    let id = next_id(&mut **tx, tenant_id, "timelogs").await?;
    let now = notes.at.unwrap_or_else(now_ms);
    sqlx::query(AssertSqlSafe(format!(
        "INSERT INTO {prefix}_timelogs (tenant_id, id, {prefix}_id, user_id, time_spent, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6)"
    )))
    .bind(tenant_id)
    .bind(id)
    .bind(on.id())
    .bind(user_id)
    .bind(delta)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    sqlx::query(AssertSqlSafe(format!(
        "UPDATE {} SET total_time_spent = $3, updated_at = $4 WHERE tenant_id = $1 AND id = $2",
        on.table()
    )))
    .bind(tenant_id)
    .bind(on.id())
    .bind(total + delta)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    let notes = SystemNotes {
        at: Some(now),
        ..notes.clone()
    };
    insert_system_notes(tx, tenant_id, on, &notes).await
}

impl TenantDb {
    /// The award emoji of `on` (`note_id` 0) or of one of its notes.
    pub async fn awards(&self, on: Noteable, note_id: i64) -> crate::Result<Vec<AwardRow>> {
        let prefix = on.prefix();
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {} FROM {prefix}_award_emoji WHERE tenant_id = $1 AND {prefix}_id = $2 \
                 AND note_id = $3 ORDER BY id",
                award_columns(on)
            )))
            .bind(on.id())
            .bind(note_id)
            .fetch_all(self.reader())
            .await?)
    }

    pub async fn award(
        &self,
        on: Noteable,
        note_id: i64,
        award_id: i64,
    ) -> crate::Result<Option<AwardRow>> {
        let prefix = on.prefix();
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {} FROM {prefix}_award_emoji WHERE tenant_id = $1 AND {prefix}_id = $2 \
                 AND note_id = $3 AND id = $4",
                award_columns(on)
            )))
            .bind(on.id())
            .bind(note_id)
            .bind(award_id)
            .fetch_optional(self.reader())
            .await?)
    }

    /// Awards `name` to `on` (`note_id` 0) or one of its notes, in project `project_id`; a
    /// duplicate is a unique violation. Only the noteable's own thumbs count as its votes.
    pub async fn create_award(
        &self,
        on: Noteable,
        project_id: i64,
        note_id: i64,
        user_id: i64,
        name: &str,
    ) -> crate::Result<AwardRow> {
        let prefix = on.prefix();
        let tenant_id = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        let id = next_id(&mut *tx, tenant_id, "award_emoji").await?;
        let now = now_ms();
        sqlx::query(AssertSqlSafe(format!(
            "INSERT INTO {prefix}_award_emoji (tenant_id, id, {prefix}_id, note_id, user_id, name, \
             created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7)"
        )))
        .bind(tenant_id)
        .bind(id)
        .bind(on.id())
        .bind(note_id)
        .bind(user_id)
        .bind(name)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        if let Some(column) = vote_column(name).filter(|_| note_id == 0) {
            sqlx::query(AssertSqlSafe(format!(
                "UPDATE {} SET {column} = {column} + 1 WHERE tenant_id = $1 AND id = $2",
                on.table()
            )))
            .bind(tenant_id)
            .bind(on.id())
            .execute(&mut *tx)
            .await?;
        }
        let table = format!("{prefix}_award_emoji");
        let row: AwardRow = row_by_id(&mut *tx, &table, &award_columns(on), tenant_id, id).await?;
        let event = Event::new(EventKind::AwardEmojiAwarded, Some(user_id), id)
            .in_project(project_id)
            .after(&row);
        outbox::commit(tx, tenant_id, &[event]).await?;
        Ok(row)
    }

    /// Revokes `award` (of `on`, in project `project_id`); `revoker` is who revokes it.
    pub async fn delete_award(
        &self,
        on: Noteable,
        project_id: i64,
        award: &AwardRow,
        revoker: i64,
    ) -> crate::Result<()> {
        let tenant_id = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        sqlx::query(AssertSqlSafe(format!(
            "DELETE FROM {}_award_emoji WHERE tenant_id = $1 AND id = $2",
            on.prefix()
        )))
        .bind(tenant_id)
        .bind(award.id)
        .execute(&mut *tx)
        .await?;
        if let Some(column) = vote_column(&award.name).filter(|_| award.note_id == 0) {
            sqlx::query(AssertSqlSafe(format!(
                "UPDATE {} SET {column} = {column} - 1 WHERE tenant_id = $1 AND id = $2",
                on.table()
            )))
            .bind(tenant_id)
            .bind(on.id())
            .execute(&mut *tx)
            .await?;
        }
        let event = Event::new(EventKind::AwardEmojiRevoked, Some(revoker), award.id)
            .in_project(project_id)
            .before(award);
        outbox::commit(tx, tenant_id, &[event]).await
    }

    pub async fn pending_todo(&self, user_id: i64, on: Noteable) -> crate::Result<Option<TodoRow>> {
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {} FROM {} WHERE tenant_id = $1 AND user_id = $2 AND {}_id = $3 \
                 AND state = 'pending'",
                todo_columns(on),
                on.todos_table(),
                on.prefix()
            )))
            .bind(user_id)
            .bind(on.id())
            .fetch_optional(self.reader())
            .await?)
    }

    /// A manual ("marked") to-do for `user_id` on `on`, in project `project_id`.
    pub async fn create_todo(
        &self,
        user_id: i64,
        project_id: i64,
        on: Noteable,
        body: &str,
    ) -> crate::Result<TodoRow> {
        let tenant_id = self.tenant_id();
        let table = on.todos_table();
        let mut tx = self.writer().begin().await?;
        let id = next_id(&mut *tx, tenant_id, "todos").await?;
        sqlx::query(AssertSqlSafe(format!(
            "INSERT INTO {table} (tenant_id, id, user_id, author_id, project_id, {}_id, \
             action_name, body, created_at, updated_at) \
             VALUES ($1, $2, $3, $3, $4, $5, 'marked', $6, $7, $7)",
            on.prefix()
        )))
        .bind(tenant_id)
        .bind(id)
        .bind(user_id)
        .bind(project_id)
        .bind(on.id())
        .bind(body)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        let row: TodoRow = row_by_id(&mut *tx, table, &todo_columns(on), tenant_id, id).await?;
        let event = Event::new(EventKind::TodoMarked, Some(user_id), id)
            .in_project(project_id)
            .after(&row);
        outbox::commit(tx, tenant_id, &[event]).await?;
        Ok(row)
    }

    /// Which of `ids` (issues or merge requests, as `kind` says) `user_id` is subscribed to:
    /// an explicit choice wins, otherwise participants (author, assignees, commenters; system
    /// notes do not count) are.
    pub async fn subscribed_among(
        &self,
        user_id: i64,
        kind: fn(i64) -> Noteable,
        ids: &[i64],
    ) -> crate::Result<Vec<i64>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let probe = kind(0);
        let (table, prefix) = (probe.table(), probe.prefix());
        let mut sql = Sql::new(&format!(
            "SELECT i.id FROM {table} i LEFT JOIN {prefix}_subscriptions s \
             ON s.tenant_id = i.tenant_id AND s.{prefix}_id = i.id AND s.user_id = "
        ));
        sql.bind(user_id)
            .push(" WHERE i.tenant_id = ")
            .bind(self.tenant_id())
            .push(" AND i.id IN (")
            .bind_list(ids.iter().copied())
            .push(") AND (s.subscribed = 1 OR (s.subscribed IS NULL AND (i.author_id = ")
            .bind(user_id)
            .push(&format!(
                " OR EXISTS (SELECT 1 FROM {prefix}_assignees a WHERE a.tenant_id = i.tenant_id \
                 AND a.{prefix}_id = i.id AND a.user_id = "
            ))
            .bind(user_id)
            .push(&format!(
                ") OR EXISTS (SELECT 1 FROM {prefix}_notes n WHERE n.tenant_id = i.tenant_id \
                 AND n.{prefix}_id = i.id AND n.system = 0 AND n.author_id = "
            ))
            .bind(user_id)
            .push("))))");
        Ok(sql.query_scalar().fetch_all(self.reader()).await?)
    }

    /// Subscribes `user_id` to `on` (in project `project_id`) or unsubscribes them, with the
    /// event.
    pub async fn set_subscription(
        &self,
        on: Noteable,
        project_id: i64,
        user_id: i64,
        subscribed: bool,
    ) -> crate::Result<()> {
        let tenant_id = self.tenant_id();
        let prefix = on.prefix();
        let mut tx = self.writer().begin().await?;
        sqlx::query(AssertSqlSafe(format!(
            "INSERT INTO {prefix}_subscriptions (tenant_id, {prefix}_id, user_id, subscribed) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (tenant_id, {prefix}_id, user_id) \
             DO UPDATE SET subscribed = $4"
        )))
        .bind(tenant_id)
        .bind(on.id())
        .bind(user_id)
        .bind(i64::from(subscribed))
        .execute(&mut *tx)
        .await?;
        let kind = match (on, subscribed) {
            (Noteable::Issue(_), true) => EventKind::IssueSubscribed,
            (Noteable::Issue(_), false) => EventKind::IssueUnsubscribed,
            (Noteable::MergeRequest(_), true) => EventKind::MergeRequestSubscribed,
            (Noteable::MergeRequest(_), false) => EventKind::MergeRequestUnsubscribed,
        };
        let event = Event::new(kind, Some(user_id), on.id()).in_project(project_id);
        outbox::commit(tx, tenant_id, &[event]).await
    }
}
