//! Notes on merge requests and their discussions: create (a note alone, a new thread, or a
//! reply), edit, delete, resolve a thread; each with its event in the same transaction, and the
//! MR's `user_notes_count` kept with them.

use sqlx::AssertSqlSafe;

use super::ids::next_id;
use super::issue_notes::NoteOrder;
use super::outbox;
use super::{TenantDb, locked_row, now_ms, row_by_id};
use crate::events::{Event, EventKind};
use crate::model::merge_requests::{
    MERGE_REQUEST_NOTE_COLUMNS, MergeRequestNoteRow, MergeRequestRow,
};

/// A note to write, and where it goes.
#[derive(Debug, Clone)]
pub struct NewMergeRequestNote<'a> {
    pub author_id: i64,
    pub body: &'a str,
    pub internal: bool,
    /// The discussion it starts or joins (40 hex digits).
    pub discussion_id: &'a str,
    /// Alone in its discussion (`POST .../notes`), not a thread.
    pub individual_note: bool,
    /// `DiscussionNote` or `DiffNote` for thread notes; none for a note alone.
    pub note_type: Option<&'a str>,
    pub position: Option<&'a str>,
    pub resolvable: bool,
    pub created_at: Option<i64>,
}

const TABLE: &str = "merge_request_notes";

impl TenantDb {
    /// A page of `mr_id`'s notes (system notes included) in `order`.
    pub async fn merge_request_notes(
        &self,
        mr_id: i64,
        order: NoteOrder,
        limit: i64,
        offset: i64,
    ) -> crate::Result<Vec<MergeRequestNoteRow>> {
        let column = if order.updated {
            "updated_at"
        } else {
            "created_at"
        };
        let direction = if order.ascending { "ASC" } else { "DESC" };
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {MERGE_REQUEST_NOTE_COLUMNS} FROM {TABLE} WHERE tenant_id = $1 \
                 AND merge_request_id = $2 ORDER BY {column} {direction}, id {direction} \
                 LIMIT $3 OFFSET $4"
            )))
            .bind(mr_id)
            .bind(limit)
            .bind(offset)
            .fetch_all(self.reader())
            .await?)
    }

    pub async fn count_merge_request_notes(&self, mr_id: i64) -> crate::Result<i64> {
        Ok(self
            .query_scalar(AssertSqlSafe(format!(
                "SELECT COUNT(*) FROM {TABLE} WHERE tenant_id = $1 AND merge_request_id = $2"
            )))
            .bind(mr_id)
            .fetch_one(self.reader())
            .await?)
    }

    /// Every note of `mr_id`, oldest first (what the discussions list groups), or only those
    /// of `discussion_id`.
    pub async fn merge_request_discussion_notes(
        &self,
        mr_id: i64,
        discussion_id: Option<&str>,
    ) -> crate::Result<Vec<MergeRequestNoteRow>> {
        let mut sql = self.sql(&format!(
            "SELECT {MERGE_REQUEST_NOTE_COLUMNS} FROM {TABLE} WHERE tenant_id = "
        ));
        sql.push(" AND merge_request_id = ").bind(mr_id);
        if let Some(discussion_id) = discussion_id {
            sql.push(" AND discussion_id = ").bind(discussion_id);
        }
        sql.push(" ORDER BY created_at, id");
        Ok(sql.query_as().fetch_all(self.reader()).await?)
    }

    /// The distinct authors of `mr_id`'s notes (system notes left out), in order of their
    /// first note.
    pub async fn merge_request_note_author_ids(&self, mr_id: i64) -> crate::Result<Vec<i64>> {
        Ok(self
            .query_scalar(AssertSqlSafe(format!(
                "SELECT author_id FROM {TABLE} WHERE tenant_id = $1 AND merge_request_id = $2 \
                 AND system = 0 GROUP BY author_id ORDER BY MIN(id)"
            )))
            .bind(mr_id)
            .fetch_all(self.reader())
            .await?)
    }

    pub async fn merge_request_note(
        &self,
        mr_id: i64,
        note_id: i64,
    ) -> crate::Result<Option<MergeRequestNoteRow>> {
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {MERGE_REQUEST_NOTE_COLUMNS} FROM {TABLE} WHERE tenant_id = $1 \
                 AND merge_request_id = $2 AND id = $3"
            )))
            .bind(mr_id)
            .bind(note_id)
            .fetch_optional(self.reader())
            .await?)
    }

    /// How many of each MR's threads wait to be resolved (`ids` without any are left out).
    pub async fn unresolved_discussions(&self, ids: &[i64]) -> crate::Result<Vec<(i64, i64)>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = self.sql(&format!(
            "SELECT merge_request_id, COUNT(DISTINCT discussion_id) FROM {TABLE} WHERE tenant_id = "
        ));
        sql.push(" AND resolvable = 1 AND resolved_at IS NULL AND merge_request_id IN (")
            .bind_list(ids.iter().copied())
            .push(") GROUP BY merge_request_id");
        Ok(sql.query_as().fetch_all(self.reader()).await?)
    }

    /// Writes a note on `mr` with its `note.created` event; a user's note counts in the MR's
    /// `user_notes_count`.
    pub async fn create_merge_request_note(
        &self,
        mr: &MergeRequestRow,
        note: &NewMergeRequestNote<'_>,
    ) -> crate::Result<MergeRequestNoteRow> {
        let tenant_id = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        let id = next_id(&mut *tx, tenant_id, "notes").await?;
        let now = note.created_at.unwrap_or_else(now_ms);
        sqlx::query(AssertSqlSafe(format!(
            "INSERT INTO {TABLE} (tenant_id, id, merge_request_id, author_id, body, internal, \
             discussion_id, individual_note, note_type, position, resolvable, created_at, \
             updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)"
        )))
        .bind(tenant_id)
        .bind(id)
        .bind(mr.id)
        .bind(note.author_id)
        .bind(note.body)
        .bind(i64::from(note.internal))
        .bind(note.discussion_id)
        .bind(i64::from(note.individual_note))
        .bind(note.note_type)
        .bind(note.position)
        .bind(i64::from(note.resolvable))
        .bind(now)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "UPDATE merge_requests SET user_notes_count = user_notes_count + 1 \
             WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant_id)
        .bind(mr.id)
        .execute(&mut *tx)
        .await?;
        let row: MergeRequestNoteRow =
            row_by_id(&mut *tx, TABLE, MERGE_REQUEST_NOTE_COLUMNS, tenant_id, id).await?;
        let event = Event::new(EventKind::NoteCreated, Some(note.author_id), id)
            .in_project(mr.project_id)
            .after(&row);
        outbox::commit(tx, tenant_id, &[event]).await?;
        Ok(row)
    }

    /// Replaces a note's body, with its `note.updated` event.
    pub async fn update_merge_request_note(
        &self,
        mr: &MergeRequestRow,
        note_id: i64,
        body: &str,
        editor: i64,
    ) -> crate::Result<MergeRequestNoteRow> {
        let tenant_id = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        let before: MergeRequestNoteRow = locked_row(
            &mut tx,
            self.engine(),
            TABLE,
            MERGE_REQUEST_NOTE_COLUMNS,
            tenant_id,
            note_id,
        )
        .await?;
        sqlx::query(AssertSqlSafe(format!(
            "UPDATE {TABLE} SET body = $3, updated_at = $4 WHERE tenant_id = $1 AND id = $2"
        )))
        .bind(tenant_id)
        .bind(note_id)
        .bind(body)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        let after: MergeRequestNoteRow = row_by_id(
            &mut *tx,
            TABLE,
            MERGE_REQUEST_NOTE_COLUMNS,
            tenant_id,
            note_id,
        )
        .await?;
        let event = Event::new(EventKind::NoteUpdated, Some(editor), note_id)
            .in_project(mr.project_id)
            .before(&before)
            .after(&after);
        outbox::commit(tx, tenant_id, &[event]).await?;
        Ok(after)
    }

    /// Deletes a note, with its `note.deleted` event.
    pub async fn delete_merge_request_note(
        &self,
        mr: &MergeRequestRow,
        note_id: i64,
        deleter: i64,
    ) -> crate::Result<()> {
        let tenant_id = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        let note: MergeRequestNoteRow = locked_row(
            &mut tx,
            self.engine(),
            TABLE,
            MERGE_REQUEST_NOTE_COLUMNS,
            tenant_id,
            note_id,
        )
        .await?;
        sqlx::query(AssertSqlSafe(format!(
            "DELETE FROM {TABLE} WHERE tenant_id = $1 AND id = $2"
        )))
        .bind(tenant_id)
        .bind(note_id)
        .execute(&mut *tx)
        .await?;
        if !note.system {
            sqlx::query(
                "UPDATE merge_requests SET user_notes_count = user_notes_count - 1 \
                 WHERE tenant_id = $1 AND id = $2",
            )
            .bind(tenant_id)
            .bind(mr.id)
            .execute(&mut *tx)
            .await?;
        }
        let event = Event::new(EventKind::NoteDeleted, Some(deleter), note_id)
            .in_project(mr.project_id)
            .before(&note);
        outbox::commit(tx, tenant_id, &[event]).await
    }

    /// Resolves (or unresolves) the resolvable notes of a discussion of `mr_id`; no event (as
    /// GitLab sends no hook for it). Returns whether the discussion has any.
    pub async fn resolve_discussion(
        &self,
        mr_id: i64,
        discussion_id: &str,
        resolved_by: Option<i64>,
    ) -> crate::Result<bool> {
        let at = resolved_by.map(|_| now_ms());
        let changed = self
            .query(AssertSqlSafe(format!(
                "UPDATE {TABLE} SET resolved_by_id = $4, resolved_at = $5 WHERE tenant_id = $1 \
                 AND merge_request_id = $2 AND discussion_id = $3 AND resolvable = 1"
            )))
            .bind(mr_id)
            .bind(discussion_id)
            .bind(resolved_by)
            .bind(at)
            .execute(self.writer())
            .await?
            .rows_affected();
        Ok(changed > 0)
    }
}
