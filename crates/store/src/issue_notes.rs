//! What hangs off an issue besides labels and assignees: notes (comments), award emoji, todos,
//! time logs and the creating request's user agent. Counters kept on the issue row
//! (`user_notes_count`, `upvotes`, `downvotes`, `total_time_spent`) change in the same
//! transaction as the rows they count.

use sqlx::{Any, AssertSqlSafe, Transaction};

use super::outbox;
use super::sql::{Arg, Sql};
use super::{Engine, Flag, TenantDb, ids::next_id, ids::next_ids, locked_row, now_ms, row_by_id};
use crate::events::{Event, EventKind};
use crate::model::issue_notes::NoteRow;
use crate::model::issues::IssueRow;
use crate::model::noteables::Noteable;

const NOTE_COLUMNS: &str =
    "id, issue_id, author_id, body, system, internal, created_at, updated_at";

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct UserAgentRow {
    pub user_agent: String,
    pub ip_address: String,
    #[sqlx(try_from = "Flag")]
    pub submitted: bool,
}

/// System notes a change writes on its issue (GitLab's bodies, in order), by the user who made
/// it. They are listed with the issue's notes (`system: true`) but are not counted in
/// `user_notes_count`, make nobody a participant and cannot be edited or deleted.
#[derive(Debug, Clone, Default)]
pub struct SystemNotes {
    pub author_id: i64,
    pub bodies: Vec<String>,
    /// When they were written (GitLab's `system_note_timestamp`); now when `None`.
    pub at: Option<i64>,
}

impl SystemNotes {
    pub fn by(author_id: i64) -> Self {
        SystemNotes {
            author_id,
            ..SystemNotes::default()
        }
    }

    pub fn push(&mut self, body: impl Into<String>) {
        self.bodies.push(body.into());
    }

    pub fn extend(&mut self, bodies: impl IntoIterator<Item = String>) {
        self.bodies.extend(bodies);
    }
}

/// Writes `notes` on `on` inside the transaction of the change they record. On a merge request
/// each is alone in its discussion, whose id is derived from the note's (unique per tenant).
pub(super) async fn insert_system_notes(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    on: Noteable,
    notes: &SystemNotes,
) -> crate::Result<()> {
    if notes.bodies.is_empty() {
        return Ok(());
    }
    let first = next_ids(&mut **tx, tenant_id, "notes", notes.bodies.len() as i64).await?;
    let at = notes.at.unwrap_or_else(now_ms);
    let prefix = on.prefix();
    let mut sql = Sql::new(&format!(
        "INSERT INTO {prefix}_notes (tenant_id, id, {prefix}_id, author_id, body, system, internal, created_at, updated_at{}) VALUES ",
        match on {
            Noteable::Issue(_) => "",
            Noteable::MergeRequest(_) => ", discussion_id",
        }
    ));
    for (n, body) in notes.bodies.iter().enumerate() {
        let id = first + n as i64;
        let mut row = vec![
            Arg::from(tenant_id),
            Arg::from(id),
            Arg::from(on.id()),
            Arg::from(notes.author_id),
            Arg::from(body.as_str()),
            Arg::from(1),
            Arg::from(0),
            Arg::from(at),
            Arg::from(at),
        ];
        if let Noteable::MergeRequest(_) = on {
            row.push(Arg::from(format!("{tenant_id:020x}{id:020x}")));
        }
        sql.push_row(n == 0, row);
    }
    Ok(sql.query().execute(&mut **tx).await.map(|_| ())?)
}

/// Copies the notes (user and system notes, with their authors, bodies, `internal` flags and
/// times) and the award emoji (awarded anew, now) of issue `from` to issue `to`, as GitLab's
/// move does, and sets `to`'s `user_notes_count`, `upvotes` and `downvotes` from the copies.
pub(super) async fn copy_notes_and_awards(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    from: i64,
    to: i64,
) -> crate::Result<()> {
    // The issue's own award emoji only: awards on its notes stay with the original notes.
    for (table, sequence, columns, values, only) in [
        (
            "issue_notes",
            "notes",
            "author_id, body, system, internal, created_at, updated_at",
            "author_id, body, system, internal, created_at, updated_at",
            "",
        ),
        (
            "issue_award_emoji",
            "award_emoji",
            "user_id, name, created_at, updated_at",
            "user_id, name, $5, $5",
            " AND note_id = 0",
        ),
    ] {
        let count: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
            "SELECT COUNT(*) FROM {table} WHERE tenant_id = $1 AND issue_id = $2{only}"
        )))
        .bind(tenant_id)
        .bind(from)
        .fetch_one(&mut **tx)
        .await?;
        if count == 0 {
            continue;
        }
        let first = next_ids(&mut **tx, tenant_id, sequence, count).await?;
        // The copies are numbered in the originals' order, from the ids just taken.
        let mut insert = sqlx::query(AssertSqlSafe(format!(
            "INSERT INTO {table} (tenant_id, id, issue_id, {columns}) \
             SELECT tenant_id, $3 + ROW_NUMBER() OVER (ORDER BY id) - 1, $4, {values} \
             FROM {table} WHERE tenant_id = $1 AND issue_id = $2{only}"
        )))
        .bind(tenant_id)
        .bind(from)
        .bind(first)
        .bind(to);
        if table == "issue_award_emoji" {
            insert = insert.bind(now_ms());
        }
        insert.execute(&mut **tx).await?;
    }
    Ok(sqlx::query(
        "UPDATE issues SET \
         user_notes_count = (SELECT COUNT(*) FROM issue_notes n WHERE n.tenant_id = $1 AND n.issue_id = $2 AND n.system = 0), \
         upvotes = (SELECT COUNT(*) FROM issue_award_emoji a WHERE a.tenant_id = $1 AND a.issue_id = $2 AND a.name = 'thumbsup'), \
         downvotes = (SELECT COUNT(*) FROM issue_award_emoji a WHERE a.tenant_id = $1 AND a.issue_id = $2 AND a.name = 'thumbsdown') \
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant_id)
    .bind(to)
    .execute(&mut **tx)
    .await
    .map(|_| ())?)
}

/// Sort for note lists: `created_at` or `updated_at`, asc or desc.
#[derive(Debug, Clone, Copy)]
pub struct NoteOrder {
    pub updated: bool,
    pub ascending: bool,
}

impl TenantDb {
    pub async fn issue_notes(
        &self,
        issue_id: i64,
        order: NoteOrder,
        limit: i64,
        offset: i64,
    ) -> crate::Result<Vec<NoteRow>> {
        let column = if order.updated {
            "updated_at"
        } else {
            "created_at"
        };
        let direction = if order.ascending { "ASC" } else { "DESC" };
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {NOTE_COLUMNS} FROM issue_notes WHERE tenant_id = $1 AND issue_id = $2 \
             ORDER BY {column} {direction}, id {direction} LIMIT $3 OFFSET $4"
            )))
            .bind(issue_id)
            .bind(limit)
            .bind(offset)
            .fetch_all(self.reader())
            .await?)
    }

    pub async fn count_issue_notes(&self, issue_id: i64) -> crate::Result<i64> {
        Ok(self
            .query_scalar("SELECT COUNT(*) FROM issue_notes WHERE tenant_id = $1 AND issue_id = $2")
            .bind(issue_id)
            .fetch_one(self.reader())
            .await?)
    }

    pub async fn issue_note(&self, issue_id: i64, note_id: i64) -> crate::Result<Option<NoteRow>> {
        Ok(self.query_as(AssertSqlSafe(format!(
            "SELECT {NOTE_COLUMNS} FROM issue_notes WHERE tenant_id = $1 AND issue_id = $2 AND id = $3"
        )))
        .bind(issue_id)
        .bind(note_id)
        .fetch_optional(self.reader())
        .await?)
    }

    /// The distinct authors of an issue's notes, in order of their first note.
    pub async fn note_author_ids(&self, issue_id: i64) -> crate::Result<Vec<i64>> {
        Ok(self.query_scalar(
            "SELECT author_id FROM issue_notes WHERE tenant_id = $1 AND issue_id = $2 AND system = 0 \
             GROUP BY author_id ORDER BY MIN(id)",
        )
        .bind(issue_id)
        .fetch_all(self.reader())
        .await?)
    }

    pub async fn create_note(
        &self,
        issue: &IssueRow,
        author_id: i64,
        body: &str,
        internal: bool,
        created_at: Option<i64>,
    ) -> crate::Result<NoteRow> {
        let tenant_id = self.tenant_id();
        let issue_id = issue.id;
        let mut tx = self.writer().begin().await?;
        let id = next_id(&mut *tx, tenant_id, "notes").await?;
        let now = created_at.unwrap_or_else(now_ms);
        sqlx::query(
            "INSERT INTO issue_notes (tenant_id, id, issue_id, author_id, body, internal, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $7)",
        )
        .bind(tenant_id)
        .bind(id)
        .bind(issue_id)
        .bind(author_id)
        .bind(body)
        .bind(i64::from(internal))
        .bind(now)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "UPDATE issues SET user_notes_count = user_notes_count + 1 WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant_id)
        .bind(issue_id)
        .execute(&mut *tx)
        .await?;
        let row: NoteRow = row_by_id(&mut *tx, "issue_notes", NOTE_COLUMNS, tenant_id, id).await?;
        let event = Event::new(EventKind::NoteCreated, Some(author_id), id)
            .in_project(issue.project_id)
            .after(&row);
        outbox::commit(tx, tenant_id, &[event]).await?;
        Ok(row)
    }

    /// Replaces a note's body; `issue` is the note's issue, `editor` who edits it. Returns the
    /// note as it is now; its event's "before" is read inside the transaction.
    pub async fn update_note_body(
        &self,
        issue: &IssueRow,
        note_id: i64,
        body: &str,
        editor: i64,
    ) -> crate::Result<NoteRow> {
        let tenant_id = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        let before = locked_note(&mut tx, self.engine(), tenant_id, note_id).await?;
        self.query(
            "UPDATE issue_notes SET body = $3, updated_at = $4 WHERE tenant_id = $1 AND id = $2",
        )
        .bind(note_id)
        .bind(body)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        let after: NoteRow =
            row_by_id(&mut *tx, "issue_notes", NOTE_COLUMNS, tenant_id, note_id).await?;
        let event = Event::new(EventKind::NoteUpdated, Some(editor), note_id)
            .in_project(issue.project_id)
            .before(&before)
            .after(&after);
        outbox::commit(tx, tenant_id, &[event]).await?;
        Ok(after)
    }

    /// Deletes note `note_id` of `issue` with its award emoji; `deleter` is who deletes it.
    /// Its event's "before" is read inside the transaction.
    pub async fn delete_note(
        &self,
        issue: &IssueRow,
        note_id: i64,
        deleter: i64,
    ) -> crate::Result<()> {
        let tenant_id = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        let note = locked_note(&mut tx, self.engine(), tenant_id, note_id).await?;
        sqlx::query(
            "DELETE FROM issue_award_emoji WHERE tenant_id = $1 AND issue_id = $2 AND note_id = $3",
        )
        .bind(tenant_id)
        .bind(note.issue_id)
        .bind(note.id)
        .execute(&mut *tx)
        .await?;
        sqlx::query("DELETE FROM issue_notes WHERE tenant_id = $1 AND id = $2")
            .bind(tenant_id)
            .bind(note.id)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "UPDATE issues SET user_notes_count = user_notes_count - 1 WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant_id)
        .bind(note.issue_id)
        .execute(&mut *tx)
        .await?;
        let event = Event::new(EventKind::NoteDeleted, Some(deleter), note.id)
            .in_project(issue.project_id)
            .before(&note);
        outbox::commit(tx, tenant_id, &[event]).await
    }

    pub async fn issue_user_agent(&self, issue_id: i64) -> crate::Result<Option<UserAgentRow>> {
        Ok(self.query_as(
            "SELECT user_agent, ip_address, submitted FROM issue_user_agent_details WHERE tenant_id = $1 AND issue_id = $2",
        )
        .bind(issue_id)
        .fetch_optional(self.reader())
        .await?)
    }
}

/// Note `id`, read (and on PostgreSQL locked) inside `tx` before it changes.
async fn locked_note(
    tx: &mut Transaction<'_, Any>,
    engine: Engine,
    tenant_id: i64,
    id: i64,
) -> crate::Result<NoteRow> {
    locked_row(tx, engine, "issue_notes", NOTE_COLUMNS, tenant_id, id).await
}
