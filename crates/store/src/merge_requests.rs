//! Merge requests: create (with its iid, labels, assignees and reviewers in one transaction),
//! update, merge, approvals, the versions of its diff, the mergeability check's result, and
//! the per-page loaders lists use. The list filters live in `merge_request_filter`.

use sqlx::{Any, AssertSqlSafe, Transaction};

use super::changes::{Changes, Table};
use super::issue_notes::{SystemNotes, insert_system_notes};
use super::issues::{LabelChange, ensure_labels};
use super::labels::label_columns;
use super::noteables::log_time;
use super::outbox;
use super::sql::{Arg, Sql};
use super::users::user_columns;
use super::{TenantDb, ids::next_id, locked_row, now_ms, row_by_id};
use crate::events::{Event, EventKind};
use crate::model::labels::LabelRow;
use crate::model::merge_requests::{
    MERGE_REQUEST_COLUMNS, MergeRequestRow, MergeRequestState, MergeRequestVersionRow, MergeStatus,
    draft_title, merge_request_columns,
};
use crate::model::noteables::Noteable;
use crate::model::users::UserRow;

/// The source and target heads a diff was taken from, and their merge base.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffHeads {
    pub head_sha: String,
    pub start_sha: String,
    pub base_sha: String,
}

/// Everything a new merge request is made of. Labels are names: unknown ones are created.
#[derive(Debug, Clone, Default)]
pub struct NewMergeRequest {
    pub project_id: i64,
    pub source_project_id: i64,
    pub source_branch: String,
    pub target_branch: String,
    pub author_id: i64,
    pub title: String,
    pub description: Option<String>,
    pub milestone_id: Option<i64>,
    pub squash: bool,
    pub force_remove_source_branch: bool,
    pub assignee_ids: Vec<i64>,
    pub reviewer_ids: Vec<i64>,
    pub labels: Vec<String>,
    /// The first version of its diff (none when the branches share no history).
    pub diff: Option<DiffHeads>,
    /// The iids of the project's issues its description closes.
    pub closes_issue_iids: Vec<i64>,
    /// What its creation writes in its activity (assignees, reviewers).
    pub notes: SystemNotes,
}

/// Column changes of an update, plus replacement assignee, reviewer and label sets.
#[derive(Debug, Default)]
pub struct MergeRequestChanges {
    pub columns: Changes<MergeRequests>,
    pub assignee_ids: Option<Vec<i64>>,
    pub reviewer_ids: Option<Vec<i64>>,
    pub labels: Option<LabelChange>,
    /// The state the update moves to (close or reopen), if any.
    pub state: Option<MergeRequestState>,
    /// The issues a new description closes, by iid.
    pub closes_issue_iids: Option<Vec<i64>>,
    /// The system notes that record the update.
    pub notes: SystemNotes,
}

impl MergeRequestChanges {
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
            && self.assignee_ids.is_none()
            && self.reviewer_ids.is_none()
            && self.labels.is_none()
            && self.state.is_none()
            && self.closes_issue_iids.is_none()
    }
}

/// The `merge_requests` table, for [`MergeRequestChanges`].
pub struct MergeRequests;

impl Table for MergeRequests {
    const NAME: &'static str = "merge_requests";
    const COLUMNS: &'static str = "title, description, target_branch, draft, milestone_id, \
         discussion_locked, squash, force_remove_source_branch, merge_status, checked_heads, time_estimate";
}

/// What a finished merge wrote to the repository.
#[derive(Debug, Clone)]
pub struct MergeRecord {
    pub merged_by_id: i64,
    /// The commit the target branch now points at because of the merge (the merge commit, or
    /// the source head for a fast-forward).
    pub merge_commit_sha: Option<String>,
    pub squash_commit_sha: Option<String>,
    /// Whether the merge removes the source branch.
    pub remove_source_branch: bool,
    /// Whether the merge squashed (the MR's `squash` follows the merge's choice).
    pub squash: bool,
}

/// A merge request as its events carry it: the row with its label names, assignee and
/// reviewer ids.
#[derive(serde::Serialize)]
pub(crate) struct MergeRequestObject<'a> {
    #[serde(flatten)]
    row: &'a MergeRequestRow,
    labels: Vec<String>,
    assignee_ids: Vec<i64>,
    reviewer_ids: Vec<i64>,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MergeRequestLabelRow {
    pub merge_request_id: i64,
    #[sqlx(flatten)]
    pub label: LabelRow,
}

/// A user linked to a merge request: an assignee, a reviewer or an approver.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MergeRequestUserRow {
    pub merge_request_id: i64,
    #[sqlx(flatten)]
    pub user: UserRow,
}

fn iid_counter(project_id: i64) -> String {
    format!("merge_request_iid:{project_id}")
}

async fn locked_merge_request(
    tx: &mut Transaction<'_, Any>,
    db: &TenantDb,
    id: i64,
) -> crate::Result<MergeRequestRow> {
    locked_row(
        tx,
        db.engine(),
        "merge_requests",
        MERGE_REQUEST_COLUMNS,
        db.tenant_id(),
        id,
    )
    .await
}

async fn reread(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    id: i64,
) -> crate::Result<MergeRequestRow> {
    row_by_id(
        &mut **tx,
        "merge_requests",
        MERGE_REQUEST_COLUMNS,
        tenant_id,
        id,
    )
    .await
}

/// `row` with its labels, assignees and reviewers as they stand inside `tx`, for an event.
async fn object<'a>(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    row: &'a MergeRequestRow,
) -> crate::Result<MergeRequestObject<'a>> {
    let labels = sqlx::query_scalar(
        "SELECT l.name FROM merge_request_labels ml JOIN labels l ON l.tenant_id = ml.tenant_id \
         AND l.id = ml.label_id WHERE ml.tenant_id = $1 AND ml.merge_request_id = $2 \
         ORDER BY l.name_lower, l.id",
    )
    .bind(tenant_id)
    .bind(row.id)
    .fetch_all(&mut **tx)
    .await?;
    let assignee_ids = linked_users(tx, "merge_request_assignees", tenant_id, row.id).await?;
    let reviewer_ids = linked_users(tx, "merge_request_reviewers", tenant_id, row.id).await?;
    Ok(MergeRequestObject {
        row,
        labels,
        assignee_ids,
        reviewer_ids,
    })
}

async fn linked_users(
    tx: &mut Transaction<'_, Any>,
    table: &str,
    tenant_id: i64,
    id: i64,
) -> crate::Result<Vec<i64>> {
    Ok(sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT user_id FROM {table} WHERE tenant_id = $1 AND merge_request_id = $2 \
         ORDER BY position, user_id"
    )))
    .bind(tenant_id)
    .bind(id)
    .fetch_all(&mut **tx)
    .await?)
}

/// Replaces the users of `table` (assignees or reviewers) with `user_ids`, in this order.
async fn set_users(
    tx: &mut Transaction<'_, Any>,
    table: &str,
    tenant_id: i64,
    id: i64,
    user_ids: &[i64],
) -> crate::Result<()> {
    sqlx::query(AssertSqlSafe(format!(
        "DELETE FROM {table} WHERE tenant_id = $1 AND merge_request_id = $2"
    )))
    .bind(tenant_id)
    .bind(id)
    .execute(&mut **tx)
    .await?;
    if user_ids.is_empty() {
        return Ok(());
    }
    let mut sql = Sql::new(&format!(
        "INSERT INTO {table} (tenant_id, merge_request_id, user_id, position) VALUES "
    ));
    for (position, user_id) in user_ids.iter().enumerate() {
        sql.push_row(
            position == 0,
            [
                Arg::from(tenant_id),
                Arg::from(id),
                Arg::from(*user_id),
                Arg::from(position as i64),
            ],
        );
    }
    sql.query().execute(&mut **tx).await?;
    Ok(())
}

/// Replaces the MR's labels with `names` (created where missing); returns their names in the
/// order views show them.
async fn set_labels(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    project_id: i64,
    id: i64,
    names: &[String],
) -> crate::Result<Vec<String>> {
    sqlx::query("DELETE FROM merge_request_labels WHERE tenant_id = $1 AND merge_request_id = $2")
        .bind(tenant_id)
        .bind(id)
        .execute(&mut **tx)
        .await?;
    let mut labels = ensure_labels(tx, tenant_id, project_id, names).await?;
    if labels.is_empty() {
        return Ok(Vec::new());
    }
    let mut sql = Sql::new(
        "INSERT INTO merge_request_labels (tenant_id, merge_request_id, label_id) VALUES ",
    );
    for (n, label) in labels.iter().enumerate() {
        sql.push_row(
            n == 0,
            [Arg::from(tenant_id), Arg::from(id), Arg::from(label.id)],
        );
    }
    sql.query().execute(&mut **tx).await?;
    labels.sort_by_key(|l| (l.name.to_lowercase(), l.id));
    Ok(labels.into_iter().map(|l| l.name).collect())
}

/// Makes `issue_iids` (of `project_id`, where they exist) the issues MR `id` closes.
async fn link_closing_issues(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    project_id: i64,
    id: i64,
    issue_iids: &[i64],
) -> crate::Result<()> {
    sqlx::query(
        "DELETE FROM merge_request_closing_issues WHERE tenant_id = $1 AND merge_request_id = $2",
    )
    .bind(tenant_id)
    .bind(id)
    .execute(&mut **tx)
    .await?;
    if issue_iids.is_empty() {
        return Ok(());
    }
    let mut sql = Sql::new(
        "INSERT INTO merge_request_closing_issues (tenant_id, merge_request_id, issue_id) \
         SELECT tenant_id, ",
    );
    sql.bind(id)
        .push(", id FROM issues WHERE tenant_id = ")
        .bind(tenant_id)
        .push(" AND project_id = ")
        .bind(project_id)
        .push(" AND deleted_at IS NULL AND iid IN (")
        .bind_list(issue_iids.iter().copied())
        .push(")");
    sql.query().execute(&mut **tx).await?;
    Ok(())
}

async fn insert_version(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    merge_request_id: i64,
    heads: &DiffHeads,
    at: i64,
) -> crate::Result<i64> {
    let id = next_id(&mut **tx, tenant_id, "merge_request_versions").await?;
    sqlx::query(
        "INSERT INTO merge_request_versions (tenant_id, id, merge_request_id, head_sha, start_sha, \
         base_sha, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(tenant_id)
    .bind(id)
    .bind(merge_request_id)
    .bind(&heads.head_sha)
    .bind(&heads.start_sha)
    .bind(&heads.base_sha)
    .bind(at)
    .execute(&mut **tx)
    .await?;
    Ok(id)
}

fn event(
    kind: EventKind,
    actor_id: i64,
    before: Option<&MergeRequestObject<'_>>,
    after: &MergeRequestObject<'_>,
) -> Event {
    let event = Event::new(kind, Some(actor_id), after.row.id).in_project(after.row.project_id);
    match before {
        Some(before) => event.before(before).after(after),
        None => event.after(after),
    }
}

impl TenantDb {
    /// Creates a merge request with its labels, assignees, reviewers and first diff version,
    /// and its `merge_request.opened` event, in one transaction.
    pub async fn create_merge_request(
        &self,
        new: &NewMergeRequest,
    ) -> crate::Result<MergeRequestRow> {
        let tenant_id = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        // Labels first, as issues take them: the label counter before the MR counters.
        let labels = ensure_labels(&mut tx, tenant_id, new.project_id, &new.labels).await?;
        let names: Vec<String> = labels.iter().map(|l| l.name.clone()).collect();
        let id = next_id(&mut *tx, tenant_id, "merge_requests").await?;
        let iid = next_id(&mut *tx, tenant_id, &iid_counter(new.project_id)).await?;
        let now = now_ms();
        let diff = new.diff.as_ref();
        sqlx::query(
            "INSERT INTO merge_requests (tenant_id, id, project_id, iid, source_project_id, \
             source_branch, target_branch, author_id, title, description, draft, milestone_id, \
             squash, force_remove_source_branch, head_sha, start_sha, base_sha, created_at, \
             updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, \
             $15, $16, $17, $18, $18)",
        )
        .bind(tenant_id)
        .bind(id)
        .bind(new.project_id)
        .bind(iid)
        .bind(new.source_project_id)
        .bind(&new.source_branch)
        .bind(&new.target_branch)
        .bind(new.author_id)
        .bind(&new.title)
        .bind(new.description.as_deref())
        .bind(i64::from(draft_title(&new.title)))
        .bind(new.milestone_id)
        .bind(i64::from(new.squash))
        .bind(i64::from(new.force_remove_source_branch))
        .bind(diff.map(|d| d.head_sha.as_str()))
        .bind(diff.map(|d| d.start_sha.as_str()))
        .bind(diff.map(|d| d.base_sha.as_str()))
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let names = set_labels(&mut tx, tenant_id, new.project_id, id, &names).await?;
        set_users(
            &mut tx,
            "merge_request_assignees",
            tenant_id,
            id,
            &new.assignee_ids,
        )
        .await?;
        set_users(
            &mut tx,
            "merge_request_reviewers",
            tenant_id,
            id,
            &new.reviewer_ids,
        )
        .await?;
        if let Some(diff) = diff {
            insert_version(&mut tx, tenant_id, id, diff, now).await?;
        }
        link_closing_issues(
            &mut tx,
            tenant_id,
            new.project_id,
            id,
            &new.closes_issue_iids,
        )
        .await?;
        insert_system_notes(&mut tx, tenant_id, Noteable::MergeRequest(id), &new.notes).await?;
        let row = reread(&mut tx, tenant_id, id).await?;
        let after = MergeRequestObject {
            row: &row,
            labels: names,
            assignee_ids: new.assignee_ids.clone(),
            reviewer_ids: new.reviewer_ids.clone(),
        };
        let opened = event(EventKind::MergeRequestOpened, new.author_id, None, &after);
        outbox::commit(tx, tenant_id, &[opened]).await?;
        Ok(row)
    }

    /// Applies `changes` to `mr` by `actor_id` in one transaction with its event (closed,
    /// reopened or updated). A state change applies only from the state the locked row is in
    /// (closing an open MR, reopening a closed one); otherwise nothing about the state moves.
    pub async fn update_merge_request(
        &self,
        mr: &MergeRequestRow,
        changes: &MergeRequestChanges,
        actor_id: i64,
    ) -> crate::Result<MergeRequestRow> {
        let tenant_id = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        let locked = locked_merge_request(&mut tx, self, mr.id).await?;
        let before = object(&mut tx, tenant_id, &locked).await?;
        let now = now_ms();
        let mut sql = Sql::new("UPDATE merge_requests SET updated_at = ");
        sql.bind(now);
        for (column, value) in changes.columns.iter() {
            sql.push(&format!(", {column} = ")).bind(value.clone());
        }
        let state_kind = match (changes.state, locked.state) {
            (Some(MergeRequestState::Closed), MergeRequestState::Opened) => {
                sql.push(", state = 'closed', closed_at = ")
                    .bind(now)
                    .push(", closed_by_id = ")
                    .bind(actor_id);
                Some(EventKind::MergeRequestClosed)
            }
            (Some(MergeRequestState::Opened), MergeRequestState::Closed) => {
                sql.push(
                    ", state = 'opened', closed_at = NULL, closed_by_id = NULL, \
                     merge_status = 'unchecked', checked_heads = NULL",
                );
                Some(EventKind::MergeRequestReopened)
            }
            _ => None,
        };
        sql.push(" WHERE tenant_id = ")
            .bind(tenant_id)
            .push(" AND id = ")
            .bind(mr.id);
        sql.query().execute(&mut *tx).await?;
        let labels = match &changes.labels {
            Some(change) => {
                let names = change.apply(&before.labels);
                set_labels(&mut tx, tenant_id, locked.project_id, mr.id, &names).await?
            }
            None => before.labels.clone(),
        };
        let assignee_ids = match &changes.assignee_ids {
            Some(ids) => {
                set_users(&mut tx, "merge_request_assignees", tenant_id, mr.id, ids).await?;
                ids.clone()
            }
            None => before.assignee_ids.clone(),
        };
        let reviewer_ids = match &changes.reviewer_ids {
            Some(ids) => {
                set_users(&mut tx, "merge_request_reviewers", tenant_id, mr.id, ids).await?;
                ids.clone()
            }
            None => before.reviewer_ids.clone(),
        };
        if let Some(iids) = &changes.closes_issue_iids {
            link_closing_issues(&mut tx, tenant_id, locked.project_id, mr.id, iids).await?;
        }
        let notes = Noteable::MergeRequest(mr.id);
        insert_system_notes(&mut tx, tenant_id, notes, &changes.notes).await?;
        let row = reread(&mut tx, tenant_id, mr.id).await?;
        let after = MergeRequestObject {
            row: &row,
            labels,
            assignee_ids,
            reviewer_ids,
        };
        let kind = state_kind.unwrap_or(EventKind::MergeRequestUpdated);
        let event = event(kind, actor_id, Some(&before), &after);
        outbox::commit(tx, tenant_id, &[event]).await?;
        Ok(row)
    }

    /// Marks `mr` merged by what `record` says, with its `merge_request.merged` event; `None`
    /// when it was no longer open (another merge or a close got there first).
    pub async fn record_merge(
        &self,
        mr: &MergeRequestRow,
        record: &MergeRecord,
    ) -> crate::Result<Option<MergeRequestRow>> {
        let tenant_id = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        let locked = locked_merge_request(&mut tx, self, mr.id).await?;
        if !matches!(
            locked.state,
            MergeRequestState::Opened | MergeRequestState::Locked
        ) {
            return Ok(None);
        }
        let before = object(&mut tx, tenant_id, &locked).await?;
        let now = now_ms();
        sqlx::query(
            "UPDATE merge_requests SET state = 'merged', merged_at = $3, merged_by_id = $4, \
             merge_commit_sha = $5, squash_commit_sha = $6, should_remove_source_branch = $7, squash = $8, \
             merge_error = NULL, updated_at = $3 \
             WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant_id)
        .bind(mr.id)
        .bind(now)
        .bind(record.merged_by_id)
        .bind(record.merge_commit_sha.as_deref())
        .bind(record.squash_commit_sha.as_deref())
        .bind(i64::from(record.remove_source_branch))
        .bind(i64::from(record.squash))
        .execute(&mut *tx)
        .await?;
        let row = reread(&mut tx, tenant_id, mr.id).await?;
        let after = MergeRequestObject {
            row: &row,
            labels: before.labels.clone(),
            assignee_ids: before.assignee_ids.clone(),
            reviewer_ids: before.reviewer_ids.clone(),
        };
        let merged = event(
            EventKind::MergeRequestMerged,
            record.merged_by_id,
            Some(&before),
            &after,
        );
        outbox::commit(tx, tenant_id, &[merged]).await?;
        Ok(Some(row))
    }

    /// Records the result of a mergeability check made for `heads` (`<source>:<target>`),
    /// unless the MR moved on to other heads meanwhile. No event: nothing a user did.
    pub async fn record_merge_status(
        &self,
        id: i64,
        heads: &str,
        status: MergeStatus,
        target_diverged: bool,
    ) -> crate::Result<()> {
        self.query(
            "UPDATE merge_requests SET merge_status = $3, checked_heads = $4, target_diverged = $5 \
             WHERE tenant_id = $1 AND id = $2 AND state = 'opened' \
             AND (checked_heads IS NULL OR checked_heads = $4)",
        )
        .bind(id)
        .bind(status.as_str())
        .bind(heads)
        .bind(i64::from(target_diverged))
        .execute(self.writer())
        .await?;
        Ok(())
    }

    /// Starts a check of `mr` for `heads`: its status becomes `checking` for them. `false`
    /// when the status is for these heads already (checked, or being checked).
    pub async fn start_merge_check(&self, id: i64, heads: &str) -> crate::Result<bool> {
        let changed = self
            .query(
                "UPDATE merge_requests SET merge_status = 'checking', checked_heads = $3 \
                 WHERE tenant_id = $1 AND id = $2 AND state = 'opened' \
                 AND (checked_heads IS NULL OR checked_heads <> $3)",
            )
            .bind(id)
            .bind(heads)
            .execute(self.writer())
            .await?
            .rows_affected();
        Ok(changed > 0)
    }

    /// Records a new version of `mr`'s diff after its source (or target) moved: the row's
    /// heads, a version row and the system notes `notes` makes of the version's id. No event.
    pub async fn record_merge_request_version(
        &self,
        id: i64,
        heads: &DiffHeads,
        notes: impl FnOnce(i64) -> SystemNotes,
    ) -> crate::Result<()> {
        let tenant_id = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        let now = now_ms();
        sqlx::query(
            "UPDATE merge_requests SET head_sha = $3, start_sha = $4, base_sha = $5, updated_at = $6, \
             merge_status = 'unchecked' WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant_id)
        .bind(id)
        .bind(&heads.head_sha)
        .bind(&heads.start_sha)
        .bind(&heads.base_sha)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let version_id = insert_version(&mut tx, tenant_id, id, heads, now).await?;
        let notes = notes(version_id);
        insert_system_notes(&mut tx, tenant_id, Noteable::MergeRequest(id), &notes).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Adds `seconds` (negative subtracts) to `mr`'s spent time with a time log entry; `None`
    /// (reset) logs minus the current total. `notes` are written with it, and the update's
    /// event. Returns the new total.
    pub async fn add_merge_request_spent_time(
        &self,
        mr: &MergeRequestRow,
        user_id: i64,
        seconds: Option<i64>,
        notes: &SystemNotes,
    ) -> crate::Result<i64> {
        let tenant_id = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        let locked = locked_merge_request(&mut tx, self, mr.id).await?;
        let total = locked.total_time_spent;
        let delta = seconds.unwrap_or(-total);
        let on = Noteable::MergeRequest(mr.id);
        log_time(&mut tx, tenant_id, on, user_id, total, delta, notes).await?;
        let before = object(&mut tx, tenant_id, &locked).await?;
        let row = reread(&mut tx, tenant_id, mr.id).await?;
        let after = object(&mut tx, tenant_id, &row).await?;
        let event = event(
            EventKind::MergeRequestUpdated,
            user_id,
            Some(&before),
            &after,
        );
        outbox::commit(tx, tenant_id, &[event]).await?;
        Ok(total + delta)
    }

    /// Sets or clears `rebase_in_progress` (and the last merge error). No event.
    pub async fn set_rebase_in_progress(
        &self,
        id: i64,
        in_progress: bool,
        error: Option<&str>,
    ) -> crate::Result<()> {
        self.query(
            "UPDATE merge_requests SET rebase_in_progress = $3, merge_error = $4 \
             WHERE tenant_id = $1 AND id = $2",
        )
        .bind(id)
        .bind(i64::from(in_progress))
        .bind(error)
        .execute(self.writer())
        .await?;
        Ok(())
    }

    /// Deletes `mr` (and its links) with its `merge_request.deleted` event.
    pub async fn delete_merge_request(
        &self,
        mr: &MergeRequestRow,
        actor_id: i64,
    ) -> crate::Result<()> {
        let tenant_id = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        let locked = locked_merge_request(&mut tx, self, mr.id).await?;
        let before = object(&mut tx, tenant_id, &locked).await?;
        let deleted = Event::new(EventKind::MergeRequestDeleted, Some(actor_id), mr.id)
            .in_project(mr.project_id)
            .before(&before);
        sqlx::query("DELETE FROM merge_requests WHERE tenant_id = $1 AND id = $2")
            .bind(tenant_id)
            .bind(mr.id)
            .execute(&mut *tx)
            .await?;
        outbox::commit(tx, tenant_id, &[deleted]).await?;
        Ok(())
    }

    /// Adds (`approve`) or removes `user_id`'s approval of `mr`, with its event and `notes`;
    /// `false` when there was nothing to change (approved already, or not approved).
    pub async fn set_approval(
        &self,
        mr: &MergeRequestRow,
        user_id: i64,
        approve: bool,
        notes: &SystemNotes,
    ) -> crate::Result<bool> {
        let tenant_id = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        let locked = locked_merge_request(&mut tx, self, mr.id).await?;
        let changed = if approve {
            sqlx::query(
                "INSERT INTO merge_request_approvals (tenant_id, merge_request_id, user_id, created_at) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
            )
            .bind(tenant_id)
            .bind(mr.id)
            .bind(user_id)
            .bind(now_ms())
            .execute(&mut *tx)
            .await?
        } else {
            sqlx::query(
                "DELETE FROM merge_request_approvals WHERE tenant_id = $1 AND merge_request_id = $2 \
                 AND user_id = $3",
            )
            .bind(tenant_id)
            .bind(mr.id)
            .bind(user_id)
            .execute(&mut *tx)
            .await?
        }
        .rows_affected()
            > 0;
        if !changed {
            return Ok(false);
        }
        let after = object(&mut tx, tenant_id, &locked).await?;
        let kind = match approve {
            true => EventKind::MergeRequestApproved,
            false => EventKind::MergeRequestUnapproved,
        };
        let event = event(kind, user_id, None, &after);
        insert_system_notes(&mut tx, tenant_id, Noteable::MergeRequest(mr.id), notes).await?;
        outbox::commit(tx, tenant_id, &[event]).await?;
        Ok(true)
    }

    pub async fn merge_request_by_iid(
        &self,
        project_id: i64,
        iid: i64,
    ) -> crate::Result<Option<MergeRequestRow>> {
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {MERGE_REQUEST_COLUMNS} FROM merge_requests \
                 WHERE tenant_id = $1 AND project_id = $2 AND iid = $3"
            )))
            .bind(project_id)
            .bind(iid)
            .fetch_optional(self.reader())
            .await?)
    }

    pub async fn merge_request_by_id(&self, id: i64) -> crate::Result<Option<MergeRequestRow>> {
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {MERGE_REQUEST_COLUMNS} FROM merge_requests WHERE tenant_id = $1 AND id = $2"
            )))
            .bind(id)
            .fetch_optional(self.reader())
            .await?)
    }

    /// The iid of an open MR from `source_branch` of `source_project_id` into `target_branch`
    /// of `project_id`, other than `except` (GitLab allows one at a time).
    pub async fn open_merge_request_between(
        &self,
        source_project_id: i64,
        source_branch: &str,
        project_id: i64,
        target_branch: &str,
        except: Option<i64>,
    ) -> crate::Result<Option<i64>> {
        Ok(self
            .query_scalar(
                "SELECT iid FROM merge_requests WHERE tenant_id = $1 AND source_project_id = $2 \
                 AND source_branch = $3 AND project_id = $4 AND target_branch = $5 \
                 AND state IN ('opened', 'locked') AND id <> $6 ORDER BY iid LIMIT 1",
            )
            .bind(source_project_id)
            .bind(source_branch)
            .bind(project_id)
            .bind(target_branch)
            .bind(except.unwrap_or(0))
            .fetch_optional(self.reader())
            .await?)
    }

    /// The open MRs a push to `branch` of `project_id` concerns: those from it (their source
    /// moved) and those into it (their target moved).
    pub async fn open_merge_requests_on_branch(
        &self,
        project_id: i64,
        branch: &str,
    ) -> crate::Result<Vec<MergeRequestRow>> {
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {MERGE_REQUEST_COLUMNS} FROM merge_requests WHERE tenant_id = $1 \
                 AND state = 'opened' AND ((source_project_id = $2 AND source_branch = $3) \
                 OR (project_id = $2 AND target_branch = $3)) ORDER BY id"
            )))
            .bind(project_id)
            .bind(branch)
            .fetch_all(self.reader())
            .await?)
    }

    pub async fn labels_of_merge_requests(
        &self,
        ids: &[i64],
    ) -> crate::Result<Vec<MergeRequestLabelRow>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = self.sql(&format!(
            "SELECT ml.merge_request_id, {} FROM merge_request_labels ml JOIN labels l \
             ON l.tenant_id = ml.tenant_id AND l.id = ml.label_id WHERE ml.tenant_id = ",
            label_columns("l")
        ));
        sql.push(" AND ml.merge_request_id IN (")
            .bind_list(ids.iter().copied())
            .push(") ORDER BY l.name_lower, l.id");
        Ok(sql.query_as().fetch_all(self.reader()).await?)
    }

    /// The assignees, reviewers or approvers (`which`) of `ids`, in the order they were given.
    pub async fn users_of_merge_requests(
        &self,
        which: MergeRequestUsers,
        ids: &[i64],
    ) -> crate::Result<Vec<MergeRequestUserRow>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let (table, order) = match which {
            MergeRequestUsers::Assignees => ("merge_request_assignees", "a.position"),
            MergeRequestUsers::Reviewers => ("merge_request_reviewers", "a.position"),
            MergeRequestUsers::Approvers => ("merge_request_approvals", "a.created_at"),
        };
        let mut sql = self.sql(&format!(
            "SELECT a.merge_request_id, {} FROM {table} a JOIN users u ON u.tenant_id = a.tenant_id \
             AND u.id = a.user_id WHERE a.tenant_id = ",
            user_columns("u")
        ));
        sql.push(" AND a.merge_request_id IN (")
            .bind_list(ids.iter().copied())
            .push(&format!(
                ") ORDER BY a.merge_request_id, {order}, a.user_id"
            ));
        Ok(sql.query_as().fetch_all(self.reader()).await?)
    }

    /// Who approved `id` and when, in the order they approved.
    pub async fn approval_times(&self, id: i64) -> crate::Result<Vec<(i64, i64)>> {
        Ok(self
            .query_as(
                "SELECT user_id, created_at FROM merge_request_approvals \
                 WHERE tenant_id = $1 AND merge_request_id = $2 ORDER BY created_at, user_id",
            )
            .bind(id)
            .fetch_all(self.reader())
            .await?)
    }

    /// The versions of `id`'s diff, newest first.
    pub async fn merge_request_versions(
        &self,
        id: i64,
    ) -> crate::Result<Vec<MergeRequestVersionRow>> {
        Ok(self
            .query_as(
                "SELECT id, merge_request_id, head_sha, start_sha, base_sha, created_at \
                 FROM merge_request_versions WHERE tenant_id = $1 AND merge_request_id = $2 \
                 ORDER BY id DESC",
            )
            .bind(id)
            .fetch_all(self.reader())
            .await?)
    }
}

/// Which users of a merge request [`TenantDb::users_of_merge_requests`] reads.
#[derive(Debug, Clone, Copy)]
pub enum MergeRequestUsers {
    Assignees,
    Reviewers,
    Approvers,
}

impl TenantDb {
    /// What each of `project_ids` requires of a merge: its `merge_method` (GitLab's default
    /// `merge` when unset) and `only_allow_merge_if_all_discussions_are_resolved`.
    pub async fn merge_rules_of(
        &self,
        project_ids: &[i64],
    ) -> crate::Result<Vec<(i64, ProjectMergeRules)>> {
        let rows: Vec<(i64, String)> = self
            .rows_with_keys("SELECT id, settings FROM projects", "id", project_ids, "")
            .await?;
        Ok(rows
            .into_iter()
            .map(|(id, settings)| {
                let settings = serde_json::from_str(&settings).unwrap_or_default();
                let setting = |key| crate::model::project_settings::setting(&settings, key);
                let rules = ProjectMergeRules {
                    merge_method: setting("merge_method")
                        .as_str()
                        .unwrap_or("merge")
                        .to_string(),
                    discussions_must_be_resolved: setting(
                        "only_allow_merge_if_all_discussions_are_resolved",
                    )
                    .as_bool()
                    .unwrap_or(false),
                };
                (id, rules)
            })
            .collect())
    }
}

/// What a project requires of a merge, as MR views show it.
#[derive(Debug, Clone, Default)]
pub struct ProjectMergeRules {
    pub merge_method: String,
    pub discussions_must_be_resolved: bool,
}

impl TenantDb {
    /// The issues `mr_id` closes, by iid.
    pub async fn closing_issue_ids(&self, mr_id: i64) -> crate::Result<Vec<i64>> {
        Ok(self
            .query_scalar(
                "SELECT c.issue_id FROM merge_request_closing_issues c JOIN issues i \
                 ON i.tenant_id = c.tenant_id AND i.id = c.issue_id \
                 WHERE c.tenant_id = $1 AND c.merge_request_id = $2 ORDER BY i.iid",
            )
            .bind(mr_id)
            .fetch_all(self.reader())
            .await?)
    }

    /// The open or merged MRs that close `issue_id`, oldest first.
    pub async fn merge_requests_closing(
        &self,
        issue_id: i64,
    ) -> crate::Result<Vec<MergeRequestRow>> {
        let columns = merge_request_columns("m");
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {columns} FROM merge_request_closing_issues c JOIN merge_requests m \
                 ON m.tenant_id = c.tenant_id AND m.id = c.merge_request_id \
                 WHERE c.tenant_id = $1 AND c.issue_id = $2 AND m.state IN ('opened', 'merged') \
                 ORDER BY m.id"
            )))
            .bind(issue_id)
            .fetch_all(self.reader())
            .await?)
    }
}
