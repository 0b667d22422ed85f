//! Issues: rows, create (with its iid, labels, assignees and user agent in one transaction),
//! update, delete, and the per-page loaders lists use (labels, assignees, project paths).
//! Subscriptions are here too. The list filters live in `issue_filter` (the `search=` index in
//! `issue_search`), notes and the rest of an issue's satellites (award emoji, todos, time logs,
//! the user agent) in `issue_notes`.

use sqlx::{Any, AssertSqlSafe, Executor, Transaction};

use super::changes::{Changes, Table};
use super::issue_notes::{SystemNotes, copy_notes_and_awards, insert_system_notes};
use super::labels::{DEFAULT_LABEL_COLOR, LABEL_COLUMNS, label_columns};
use super::noteables::log_time;
use super::outbox;
use super::sql::{Arg, Sql};
use super::users::user_columns;
use super::{Engine, TenantDb, ids::next_id, locked_row, now_ms, row_by_id};
use crate::events::{Event, EventKind};
use crate::model::issues::{IssueRow, ProjectRef};
use crate::model::labels::LabelRow;
use crate::model::noteables::Noteable;
use crate::model::states::IssueState;
use crate::model::users::UserRow;

pub const ISSUE_COLUMNS: &str = "id, project_id, iid, author_id, title, description, state, confidential, \
    discussion_locked, milestone_id, due_date, time_estimate, total_time_spent, upvotes, downvotes, \
    user_notes_count, closed_at, closed_by_id, moved_to_id, created_at, updated_at";

pub fn issue_columns(alias: &str) -> String {
    ISSUE_COLUMNS
        .split(", ")
        .map(|c| format!("{alias}.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The request an issue was created by (kept for `user_agent_detail` and spam review).
#[derive(Debug, Clone, Default)]
pub struct RequestOrigin {
    pub user_agent: String,
    pub ip_address: String,
}

/// Everything a new issue is made of. Labels are names: unknown ones are created.
#[derive(Debug, Clone, Default)]
pub struct NewIssue {
    pub project_id: i64,
    pub iid: Option<i64>,
    pub author_id: i64,
    pub title: String,
    pub description: Option<String>,
    pub confidential: bool,
    pub discussion_locked: bool,
    pub milestone_id: Option<i64>,
    pub due_date: Option<String>,
    pub state: Option<IssueState>,
    pub time_estimate: i64,
    pub total_time_spent: i64,
    pub created_at: Option<i64>,
    pub updated_at: Option<i64>,
    pub assignee_ids: Vec<i64>,
    pub labels: Vec<String>,
    pub origin: RequestOrigin,
    /// A spam check passed it (`user_agent_detail.spam_filter_submitted`).
    pub spam_checked: bool,
    /// The system notes its creation writes (due date, assignees).
    pub notes: SystemNotes,
}

/// Column changes of an update, plus replacement assignee and label sets.
#[derive(Debug, Default)]
pub struct IssueChanges {
    pub columns: Changes<Issues>,
    pub assignee_ids: Option<Vec<i64>>,
    /// Applied to the labels the issue has inside the update's transaction.
    pub labels: Option<LabelChange>,
    /// A spam check passed the new text (`user_agent_detail.spam_filter_submitted`).
    pub spam_checked: bool,
    /// +1 when the update reopens, -1 when it closes (the project's open issue count).
    pub open_delta: i64,
    /// The system notes recording the change, written with it.
    pub notes: SystemNotes,
}

/// The `issues` table, for [`IssueChanges`].
pub struct Issues;

impl Table for Issues {
    const NAME: &'static str = "issues";
    const COLUMNS: &'static str = "project_id, iid, author_id, title, description, state, confidential, \
         discussion_locked, milestone_id, due_date, time_estimate, total_time_spent, \
         upvotes, downvotes, user_notes_count, closed_at, closed_by_id, moved_to_id, \
         created_at, updated_at, deleted_at, deleted_by_id";
}

impl IssueChanges {
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty() && self.assignee_ids.is_none() && self.labels.is_none()
    }
}

/// A change of an issue's label names: `replace` them (else keep the current ones), then
/// `add` and `remove` (case-insensitive), as GitLab's `labels`, `add_labels`, `remove_labels`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelChange {
    pub replace: Option<Vec<String>>,
    pub add: Vec<String>,
    pub remove: Vec<String>,
}

impl LabelChange {
    /// The label names after the change of `current`: in order, without case-insensitive
    /// repeats.
    pub fn apply(&self, current: &[String]) -> Vec<String> {
        let base = self.replace.as_deref().unwrap_or(current);
        let mut out: Vec<String> = Vec::new();
        for name in base.iter().chain(&self.add) {
            let removed = self.remove.iter().any(|r| r.eq_ignore_ascii_case(name));
            if !removed && !out.iter().any(|n| n.eq_ignore_ascii_case(name)) {
                out.push(name.clone());
            }
        }
        out
    }
}

/// How a move's two issues name each other in their "moved" notes: `from` is the original
/// as written in the target project (`group/project#3`), `to_project` the target project as
/// written in the original's (its new iid is appended).
#[derive(Debug, Clone)]
pub struct MoveReferences {
    pub from: String,
    pub to_project: String,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct IssueLabelRow {
    pub issue_id: i64,
    #[sqlx(flatten)]
    pub label: LabelRow,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AssigneeRow {
    pub issue_id: i64,
    #[sqlx(flatten)]
    pub user: UserRow,
}

fn iid_counter(project_id: i64) -> String {
    format!("issue_iid:{project_id}")
}

/// Raises the project's iid counter to at least `iid` (an explicit iid given at creation).
async fn raise_iid_counter<'c, E>(
    executor: E,
    tenant_id: i64,
    project_id: i64,
    iid: i64,
) -> crate::Result<()>
where
    E: Executor<'c, Database = Any>,
{
    Ok(sqlx::query(
        "INSERT INTO id_sequences (tenant_id, name, last_value) VALUES ($1, $2, $3) \
         ON CONFLICT (tenant_id, name) DO UPDATE SET last_value = CASE \
         WHEN id_sequences.last_value < $3 THEN $3 ELSE id_sequences.last_value END",
    )
    .bind(tenant_id)
    .bind(iid_counter(project_id))
    .bind(iid)
    .execute(executor)
    .await
    .map(|_| ())?)
}

/// The project's labels named `names` (case-insensitive), in one read, creating the missing
/// ones with the default color, as GitLab does for labels named on an issue.
pub(crate) async fn ensure_labels(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    project_id: i64,
    names: &[String],
) -> crate::Result<Vec<LabelRow>> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let lower: Vec<String> = names.iter().map(|n| n.to_lowercase()).collect();
    let mut sql = Sql::new(&format!(
        "SELECT name_lower, {LABEL_COLUMNS} FROM labels WHERE tenant_id = "
    ));
    sql.bind(tenant_id)
        .push(" AND project_id = ")
        .bind(project_id)
        .push(" AND name_lower IN (")
        .bind_list(lower.iter().map(String::as_str))
        .push(")");
    let found: Vec<NamedLabel> = sql.query_as().fetch_all(&mut **tx).await?;
    let now = now_ms();
    let mut labels: Vec<LabelRow> = Vec::new();
    for (name, lower) in names.iter().zip(&lower) {
        let label = match found.iter().find(|f| &f.name_lower == lower) {
            Some(found) => found.label.clone(),
            None if labels.iter().any(|l| l.name.to_lowercase() == *lower) => continue,
            None => {
                let id = next_id(&mut **tx, tenant_id, "labels").await?;
                sqlx::query(
                    "INSERT INTO labels (tenant_id, id, project_id, name, name_lower, color, created_at, updated_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $7)",
                )
                .bind(tenant_id)
                .bind(id)
                .bind(project_id)
                .bind(name)
                .bind(lower)
                .bind(DEFAULT_LABEL_COLOR)
                .bind(now)
                .execute(&mut **tx)
                .await?;
                LabelRow {
                    id,
                    project_id,
                    name: name.clone(),
                    color: DEFAULT_LABEL_COLOR.to_string(),
                    description: None,
                    priority: None,
                }
            }
        };
        if !labels.iter().any(|l| l.id == label.id) {
            labels.push(label);
        }
    }
    Ok(labels)
}

#[derive(sqlx::FromRow)]
struct NamedLabel {
    name_lower: String,
    #[sqlx(flatten)]
    label: LabelRow,
}

/// Where an issue's label rows sit in `issue_labels_walk`: copies of its project and creation
/// time, kept in step with the issue.
struct LabelSlot {
    project_id: i64,
    issue_id: i64,
    created_at: Arg,
}

/// Attaches `names` (created where missing) to an issue without labels, in one insert, and
/// returns them in the order lists show them (by name).
async fn add_labels(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    slot: &LabelSlot,
    names: &[String],
) -> crate::Result<Vec<LabelRow>> {
    let labels = ensure_labels(tx, tenant_id, slot.project_id, names).await?;
    link_labels(tx, tenant_id, slot, labels).await
}

/// Gives the issue of `slot` the `labels` (which exist), in one insert; returns them in the
/// order views show them.
async fn link_labels(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    slot: &LabelSlot,
    mut labels: Vec<LabelRow>,
) -> crate::Result<Vec<LabelRow>> {
    if labels.is_empty() {
        return Ok(labels);
    }
    let mut sql = Sql::new(
        "INSERT INTO issue_labels (tenant_id, issue_id, label_id, project_id, created_at) VALUES ",
    );
    for (n, label) in labels.iter().enumerate() {
        sql.push_row(
            n == 0,
            [
                Arg::from(tenant_id),
                Arg::from(slot.issue_id),
                Arg::from(label.id),
                Arg::from(slot.project_id),
                slot.created_at.clone(),
            ],
        );
    }
    sql.query().execute(&mut **tx).await?;
    sort_for_views(&mut labels);
    Ok(labels)
}

fn sort_for_views(labels: &mut [LabelRow]) {
    labels.sort_by_key(|l| (l.name.to_lowercase(), l.id));
}

/// Assigns `user_ids` (in this order) to an issue without assignees, in one insert.
async fn add_assignees(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    issue_id: i64,
    user_ids: &[i64],
) -> crate::Result<()> {
    if user_ids.is_empty() {
        return Ok(());
    }
    let mut sql =
        Sql::new("INSERT INTO issue_assignees (tenant_id, issue_id, user_id, position) VALUES ");
    for (position, user_id) in user_ids.iter().enumerate() {
        sql.push_row(
            position == 0,
            [
                Arg::from(tenant_id),
                Arg::from(issue_id),
                Arg::from(*user_id),
                Arg::from(position as i64),
            ],
        );
    }
    Ok(sql.query().execute(&mut **tx).await.map(|_| ())?)
}

/// Removes an issue's labels (`issue_labels`) or assignees (`issue_assignees`) before they are
/// replaced.
async fn clear(
    tx: &mut Transaction<'_, Any>,
    table: &str,
    tenant_id: i64,
    issue_id: i64,
) -> crate::Result<()> {
    Ok(sqlx::query(AssertSqlSafe(format!(
        "DELETE FROM {table} WHERE tenant_id = $1 AND issue_id = $2"
    )))
    .bind(tenant_id)
    .bind(issue_id)
    .execute(&mut **tx)
    .await
    .map(|_| ())?)
}

async fn adjust_open_count(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    project_id: i64,
    delta: i64,
) -> crate::Result<()> {
    if delta == 0 {
        return Ok(());
    }
    Ok(sqlx::query(
        "UPDATE projects SET open_issues_count = open_issues_count + $3 WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant_id)
    .bind(project_id)
    .bind(delta)
    .execute(&mut **tx)
    .await
    .map(|_| ())?)
}

/// How an update asking for `requested` (+1 reopen, -1 close) moves the project's open issue
/// count, given the state the locked row had: a concurrent close or reopen that got there
/// first leaves nothing to count.
fn open_delta(locked_state: IssueState, requested: i64) -> i64 {
    match (requested, locked_state) {
        (d, IssueState::Opened) if d < 0 => d,
        (d, IssueState::Closed) if d > 0 => d,
        _ => 0,
    }
}

/// An issue as its events carry it: the row with its label names and assignee ids.
#[derive(serde::Serialize)]
pub(crate) struct IssueObject<'a> {
    #[serde(flatten)]
    row: &'a IssueRow,
    labels: Vec<String>,
    assignee_ids: Vec<i64>,
}

/// Issue `id`, read (and on PostgreSQL locked) inside `tx` before it changes.
pub(crate) async fn locked_issue(
    tx: &mut Transaction<'_, Any>,
    engine: Engine,
    tenant_id: i64,
    id: i64,
) -> crate::Result<IssueRow> {
    locked_row(tx, engine, "issues", ISSUE_COLUMNS, tenant_id, id).await
}

/// `row` with its labels and assignees as they stand inside `tx`, for an event.
pub(crate) async fn issue_object<'a>(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    row: &'a IssueRow,
) -> crate::Result<IssueObject<'a>> {
    let labels = sqlx::query_scalar(
        "SELECT l.name FROM issue_labels il JOIN labels l ON l.tenant_id = il.tenant_id AND l.id = il.label_id \
         WHERE il.tenant_id = $1 AND il.issue_id = $2 ORDER BY l.name_lower, l.id",
    )
    .bind(tenant_id)
    .bind(row.id)
    .fetch_all(&mut **tx)
    .await?;
    let assignee_ids = sqlx::query_scalar(
        "SELECT user_id FROM issue_assignees WHERE tenant_id = $1 AND issue_id = $2 ORDER BY position, user_id",
    )
    .bind(tenant_id)
    .bind(row.id)
    .fetch_all(&mut **tx)
    .await?;
    Ok(IssueObject {
        row,
        labels,
        assignee_ids,
    })
}

/// The event of a new issue, from what its insert wrote (nothing is read back).
fn opened_event(created: &CreatedIssue, issue: &NewIssue, actor_id: i64) -> Event {
    let object = IssueObject {
        row: &created.row,
        labels: created.labels.iter().map(|l| l.name.clone()).collect(),
        assignee_ids: issue.assignee_ids.clone(),
    };
    Event::new(EventKind::IssueOpened, Some(actor_id), created.row.id)
        .in_project(created.row.project_id)
        .after(&object)
}

/// A new issue as written, with its labels: what the response shows, without reading back.
pub struct CreatedIssue {
    pub row: IssueRow,
    pub labels: Vec<LabelRow>,
}

/// The next issue id of the tenant and iid of the project, in one statement. The rows are
/// taken in this order by every create (also one with an explicit iid), so concurrent
/// creates on PostgreSQL queue on them instead of deadlocking.
async fn next_issue_numbers(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    project_id: i64,
) -> crate::Result<(i64, i64)> {
    let counter = iid_counter(project_id);
    let taken: Vec<(String, i64)> = sqlx::query_as(
        "INSERT INTO id_sequences (tenant_id, name, last_value) VALUES ($1, 'issues', 1), ($1, $2, 1) \
         ON CONFLICT (tenant_id, name) DO UPDATE SET last_value = id_sequences.last_value + 1 \
         RETURNING name, last_value",
    )
    .bind(tenant_id)
    .bind(&counter)
    .fetch_all(&mut **tx)
    .await?;
    let value = |name: &str| {
        taken
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
            .ok_or(sqlx::Error::RowNotFound)
    };
    Ok((value("issues")?, value(&counter)?))
}

/// Inserts an issue and its labels, assignees and user agent inside `tx`. The author needs no
/// subscription row: participants are subscribed unless they chose otherwise.
async fn insert_issue(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    issue: &NewIssue,
) -> crate::Result<CreatedIssue> {
    // Labels a create makes take the tenant's label counter: before the issue counters, on
    // every path, so two creates never take them in opposite orders.
    let labels = ensure_labels(tx, tenant_id, issue.project_id, &issue.labels).await?;
    if issue.iid.is_none() && Engine::of(tx) == Engine::Postgres {
        return insert_issue_at_once(tx, tenant_id, issue, labels).await;
    }
    let (id, iid) = match issue.iid {
        Some(iid) => {
            let id = next_id(&mut **tx, tenant_id, "issues").await?;
            raise_iid_counter(&mut **tx, tenant_id, issue.project_id, iid).await?;
            (id, iid)
        }
        None => next_issue_numbers(tx, tenant_id, issue.project_id).await?,
    };
    let created_at = issue.created_at.unwrap_or_else(now_ms);
    let updated_at = issue.updated_at.unwrap_or(created_at);
    let state = issue.state.unwrap_or(IssueState::Opened);
    sqlx::query(
        "INSERT INTO issues (tenant_id, id, project_id, iid, author_id, title, description, state, confidential, \
         discussion_locked, milestone_id, due_date, time_estimate, total_time_spent, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
    )
    .bind(tenant_id)
    .bind(id)
    .bind(issue.project_id)
    .bind(iid)
    .bind(issue.author_id)
    .bind(&issue.title)
    .bind(issue.description.as_deref())
    .bind(state.as_str())
    .bind(i64::from(issue.confidential))
    .bind(i64::from(issue.discussion_locked))
    .bind(issue.milestone_id)
    .bind(issue.due_date.as_deref())
    .bind(issue.time_estimate)
    .bind(issue.total_time_spent)
    .bind(created_at)
    .bind(updated_at)
    .execute(&mut **tx)
    .await?;
    let slot = LabelSlot {
        project_id: issue.project_id,
        issue_id: id,
        created_at: Arg::Int(created_at),
    };
    let labels = link_labels(tx, tenant_id, &slot, labels).await?;
    add_assignees(tx, tenant_id, id, &issue.assignee_ids).await?;
    sqlx::query(
        "INSERT INTO issue_user_agent_details (tenant_id, issue_id, user_agent, ip_address, submitted) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(tenant_id)
    .bind(id)
    .bind(&issue.origin.user_agent)
    .bind(&issue.origin.ip_address)
    .bind(i64::from(issue.spam_checked))
    .execute(&mut **tx)
    .await?;
    adjust_open_count(
        tx,
        tenant_id,
        issue.project_id,
        i64::from(state == IssueState::Opened),
    )
    .await?;
    insert_system_notes(tx, tenant_id, Noteable::Issue(id), &issue.notes).await?;
    Ok(CreatedIssue {
        row: new_row(issue, id, iid, created_at),
        labels,
    })
}

/// On PostgreSQL, the issue with its numbers, labels, assignees, user agent and the project's
/// open count in one statement: concurrent creates queue on the tenant's and the project's
/// counter rows from this statement to the commit, so the fewer round trips under them, the
/// more creates per second. The counters are taken first (the statement reads them before
/// anything else), then the project row, as everywhere else.
async fn insert_issue_at_once(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    issue: &NewIssue,
    mut labels: Vec<LabelRow>,
) -> crate::Result<CreatedIssue> {
    let created_at = issue.created_at.unwrap_or_else(now_ms);
    let state = issue.state.unwrap_or(IssueState::Opened);
    let mut sql =
        Sql::new("WITH taken AS (INSERT INTO id_sequences (tenant_id, name, last_value) VALUES (");
    sql.bind(tenant_id)
        .push(", 'issues', 1), (")
        .bind(tenant_id)
        .push(", ")
        .bind(iid_counter(issue.project_id))
        .push(
            ", 1) ON CONFLICT (tenant_id, name) DO UPDATE SET last_value = id_sequences.last_value + 1 \
             RETURNING name, last_value), \
             numbers AS (SELECT MAX(CASE WHEN name = 'issues' THEN last_value END) AS id, \
             MAX(CASE WHEN name <> 'issues' THEN last_value END) AS iid FROM taken), \
             issue AS (INSERT INTO issues (tenant_id, id, project_id, iid, author_id, title, description, state, \
             confidential, discussion_locked, milestone_id, due_date, time_estimate, total_time_spent, \
             created_at, updated_at) SELECT ",
        )
        .bind(tenant_id)
        .push(", numbers.id, ")
        .bind(issue.project_id)
        .push(", numbers.iid, ")
        .bind_list([
            Arg::from(issue.author_id),
            Arg::from(issue.title.as_str()),
            Arg::from(issue.description.as_deref()),
            Arg::from(state.as_str()),
            Arg::from(i64::from(issue.confidential)),
            Arg::from(i64::from(issue.discussion_locked)),
            Arg::from(issue.milestone_id),
            Arg::from(issue.due_date.as_deref()),
            Arg::from(issue.time_estimate),
            Arg::from(issue.total_time_spent),
            Arg::from(created_at),
            Arg::from(issue.updated_at.unwrap_or(created_at)),
        ])
        .push(" FROM numbers RETURNING id, iid)");
    if !labels.is_empty() {
        sql.push(
            ", labelled AS (INSERT INTO issue_labels (tenant_id, issue_id, label_id, project_id, created_at) \
             SELECT ",
        )
        .bind(tenant_id)
        .push(", issue.id, l.id, ")
        .bind(issue.project_id)
        .push(", ")
        .bind(created_at)
        .push(" FROM issue, (VALUES ");
        for (n, label) in labels.iter().enumerate() {
            sql.push_row(n == 0, [Arg::from(label.id)]);
        }
        sql.push(") AS l (id))");
    }
    if !issue.assignee_ids.is_empty() {
        sql.push(
            ", assigned AS (INSERT INTO issue_assignees (tenant_id, issue_id, user_id, position) SELECT ",
        )
        .bind(tenant_id)
        .push(", issue.id, a.user_id, a.position FROM issue, (VALUES ");
        for (position, user_id) in issue.assignee_ids.iter().enumerate() {
            sql.push_row(
                position == 0,
                [Arg::from(*user_id), Arg::from(position as i64)],
            );
        }
        sql.push(") AS a (user_id, position))");
    }
    sql.push(
        ", agent AS (INSERT INTO issue_user_agent_details (tenant_id, issue_id, user_agent, ip_address, submitted) \
         SELECT ",
    )
    .bind(tenant_id)
    .push(", issue.id, ")
    .bind_list([
        Arg::from(issue.origin.user_agent.as_str()),
        Arg::from(issue.origin.ip_address.as_str()),
        Arg::from(i64::from(issue.spam_checked)),
    ])
    .push(" FROM issue)");
    if state == IssueState::Opened {
        // Reads `issue`, so it runs after the counters are taken.
        sql.push(", counted AS (UPDATE projects SET open_issues_count = open_issues_count + 1 WHERE tenant_id = ")
            .bind(tenant_id)
            .push(" AND id = ")
            .bind(issue.project_id)
            .push(" AND EXISTS (SELECT 1 FROM issue))");
    }
    sql.push(" SELECT id, iid FROM issue");
    let (id, iid): (i64, i64) = sql.query_as().fetch_one(&mut **tx).await?;
    insert_system_notes(tx, tenant_id, Noteable::Issue(id), &issue.notes).await?;
    sort_for_views(&mut labels);
    Ok(CreatedIssue {
        row: new_row(issue, id, iid, created_at),
        labels,
    })
}

/// The row of a new issue as inserted: what the response shows, without reading it back.
fn new_row(issue: &NewIssue, id: i64, iid: i64, created_at: i64) -> IssueRow {
    IssueRow {
        id,
        project_id: issue.project_id,
        iid,
        author_id: issue.author_id,
        title: issue.title.clone(),
        description: issue.description.clone(),
        state: issue.state.unwrap_or(IssueState::Opened),
        confidential: issue.confidential,
        discussion_locked: issue.discussion_locked,
        milestone_id: issue.milestone_id,
        due_date: issue.due_date.clone(),
        time_estimate: issue.time_estimate,
        total_time_spent: issue.total_time_spent,
        upvotes: 0,
        downvotes: 0,
        user_notes_count: 0,
        closed_at: None,
        closed_by_id: None,
        moved_to_id: None,
        created_at,
        updated_at: issue.updated_at.unwrap_or(created_at),
    }
}

impl TenantDb {
    pub async fn create_issue(&self, issue: &NewIssue) -> crate::Result<CreatedIssue> {
        let mut tx = self.writer().begin().await?;
        let created = insert_issue(&mut tx, self.tenant_id(), issue).await?;
        let opened = opened_event(&created, issue, issue.author_id);
        outbox::commit(tx, self.tenant_id(), &[opened]).await?;
        Ok(created)
    }

    /// Moves `old` into another project, in one transaction: `new` is created there (new iid)
    /// with copies of `old`'s notes and award emoji, and `old` is closed by `closer` and points
    /// at it; each gets its "moved" system note by `closer` (GitLab's `Issues::MoveService`).
    pub async fn move_issue(
        &self,
        old: &IssueRow,
        new: &NewIssue,
        closer: i64,
        references: &MoveReferences,
    ) -> crate::Result<IssueRow> {
        let tenant_id = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        let locked = locked_issue(&mut tx, self.engine(), tenant_id, old.id).await?;
        let before = issue_object(&mut tx, tenant_id, &locked).await?;
        let created = insert_issue(&mut tx, tenant_id, new).await?;
        let opened = opened_event(&created, new, closer);
        let moved = created.row;
        copy_notes_and_awards(&mut tx, tenant_id, old.id, moved.id).await?;
        let mut from = SystemNotes::by(closer);
        from.push(format!("moved from {}", references.from));
        insert_system_notes(&mut tx, tenant_id, Noteable::Issue(moved.id), &from).await?;
        let mut to = SystemNotes::by(closer);
        to.push(format!("moved to {}#{}", references.to_project, moved.iid));
        insert_system_notes(&mut tx, tenant_id, Noteable::Issue(old.id), &to).await?;
        let now = now_ms();
        sqlx::query(
            "UPDATE issues SET state = 'closed', closed_at = COALESCE(closed_at, $3), \
             closed_by_id = COALESCE(closed_by_id, $4), moved_to_id = $5, updated_at = $3 \
             WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant_id)
        .bind(old.id)
        .bind(now)
        .bind(closer)
        .bind(moved.id)
        .execute(&mut *tx)
        .await?;
        if locked.state == IssueState::Opened {
            adjust_open_count(&mut tx, tenant_id, old.project_id, -1).await?;
        }
        let closed: IssueRow =
            row_by_id(&mut *tx, "issues", ISSUE_COLUMNS, tenant_id, old.id).await?;
        // Closing changes neither labels nor assignees.
        let after = IssueObject {
            row: &closed,
            labels: before.labels.clone(),
            assignee_ids: before.assignee_ids.clone(),
        };
        let moved_event = Event::new(EventKind::IssueMoved, Some(closer), old.id)
            .in_project(old.project_id)
            .before(&before)
            .after(&after);
        outbox::record(&mut tx, tenant_id, &[moved_event, opened]).await?;
        let moved = row_by_id(&mut *tx, "issues", ISSUE_COLUMNS, tenant_id, moved.id).await?;
        tx.commit().await?;
        Ok(moved)
    }

    /// Applies `changes` to `issue` in one transaction, with its system notes and its event
    /// (closed, reopened or updated). The row is read again, locked, for the event's "before"
    /// and the open issue count; labels and assignees are read once.
    pub async fn update_issue(
        &self,
        issue: &IssueRow,
        changes: &IssueChanges,
    ) -> crate::Result<IssueRow> {
        let tenant_id = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        let locked = locked_issue(&mut tx, self.engine(), tenant_id, issue.id).await?;
        let before = issue_object(&mut tx, tenant_id, &locked).await?;
        let mut sql = Sql::new("UPDATE issues SET updated_at = ");
        let updated_at = changes
            .columns
            .get("updated_at")
            .cloned()
            .unwrap_or(Arg::Int(now_ms()));
        sql.bind(updated_at);
        for (column, value) in changes.columns.iter().filter(|(c, _)| *c != "updated_at") {
            sql.push(&format!(", {column} = ")).bind(value.clone());
        }
        sql.push(" WHERE tenant_id = ")
            .bind(tenant_id)
            .push(" AND id = ")
            .bind(issue.id);
        sql.query().execute(&mut *tx).await?;
        let created_at = changes.columns.get("created_at").cloned();
        let labels = match &changes.labels {
            Some(change) => {
                clear(&mut tx, "issue_labels", tenant_id, issue.id).await?;
                let slot = LabelSlot {
                    project_id: issue.project_id,
                    issue_id: issue.id,
                    created_at: created_at.unwrap_or(Arg::Int(locked.created_at)),
                };
                let names = change.apply(&before.labels);
                let added = add_labels(&mut tx, tenant_id, &slot, &names).await?;
                added.into_iter().map(|l| l.name).collect()
            }
            None => {
                if let Some(created_at) = created_at {
                    let mut sql = Sql::new("UPDATE issue_labels SET created_at = ");
                    sql.bind(created_at)
                        .push(" WHERE tenant_id = ")
                        .bind(tenant_id)
                        .push(" AND issue_id = ")
                        .bind(issue.id);
                    sql.query().execute(&mut *tx).await?;
                }
                before.labels.clone()
            }
        };
        let assignee_ids = match &changes.assignee_ids {
            Some(assignees) => {
                clear(&mut tx, "issue_assignees", tenant_id, issue.id).await?;
                add_assignees(&mut tx, tenant_id, issue.id, assignees).await?;
                assignees.clone()
            }
            None => before.assignee_ids.clone(),
        };
        if changes.spam_checked {
            sqlx::query(
                "UPDATE issue_user_agent_details SET submitted = 1 WHERE tenant_id = $1 AND issue_id = $2",
            )
            .bind(tenant_id)
            .bind(issue.id)
            .execute(&mut *tx)
            .await?;
        }
        let open_delta = open_delta(locked.state, changes.open_delta);
        adjust_open_count(&mut tx, tenant_id, issue.project_id, open_delta).await?;
        insert_system_notes(
            &mut tx,
            tenant_id,
            Noteable::Issue(issue.id),
            &changes.notes,
        )
        .await?;
        let row = row_by_id(&mut *tx, "issues", ISSUE_COLUMNS, tenant_id, issue.id).await?;
        let kind = match changes.open_delta {
            d if d < 0 => EventKind::IssueClosed,
            d if d > 0 => EventKind::IssueReopened,
            _ => EventKind::IssueUpdated,
        };
        let after = IssueObject {
            row: &row,
            labels,
            assignee_ids,
        };
        let event = Event::new(kind, Some(changes.notes.author_id), issue.id)
            .in_project(issue.project_id)
            .before(&before)
            .after(&after);
        outbox::commit(tx, tenant_id, &[event]).await?;
        Ok(row)
    }

    /// Adds `seconds` (negative subtracts) to the issue's spent time with a time log entry;
    /// `None` (reset) logs minus the current total. `notes` are written with it (their time
    /// is the log's). Returns the new total.
    pub async fn add_spent_time(
        &self,
        issue_id: i64,
        user_id: i64,
        seconds: Option<i64>,
        notes: &SystemNotes,
    ) -> crate::Result<i64> {
        let tenant_id = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        let locked = locked_issue(&mut tx, self.engine(), tenant_id, issue_id).await?;
        let total = locked.total_time_spent;
        let delta = seconds.unwrap_or(-total);
        let on = Noteable::Issue(issue_id);
        log_time(&mut tx, tenant_id, on, user_id, total, delta, notes).await?;
        let before = issue_object(&mut tx, tenant_id, &locked).await?;
        let row: IssueRow =
            row_by_id(&mut *tx, "issues", ISSUE_COLUMNS, tenant_id, issue_id).await?;
        let after = issue_object(&mut tx, tenant_id, &row).await?;
        let event = Event::new(EventKind::IssueUpdated, Some(user_id), issue_id)
            .in_project(locked.project_id)
            .before(&before)
            .after(&after);
        outbox::commit(tx, tenant_id, &[event]).await?;
        Ok(total + delta)
    }

    /// Soft delete: the row stays, marked, and every read leaves it out. Only the call that
    /// marks it lowers the project's open count (a concurrent second delete changes nothing).
    pub async fn delete_issue(&self, issue: &IssueRow, deleter: i64) -> crate::Result<()> {
        let tenant_id = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        let marked = sqlx::query(
            "UPDATE issues SET deleted_at = $3, deleted_by_id = $4 \
             WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL",
        )
        .bind(tenant_id)
        .bind(issue.id)
        .bind(now_ms())
        .bind(deleter)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if marked > 0 {
            sqlx::query(
                "UPDATE issue_labels SET deleted_at = $3 WHERE tenant_id = $1 AND issue_id = $2",
            )
            .bind(tenant_id)
            .bind(issue.id)
            .bind(now_ms())
            .execute(&mut *tx)
            .await?;
            let open = i64::from(issue.state == IssueState::Opened);
            adjust_open_count(&mut tx, tenant_id, issue.project_id, -open).await?;
            let event = Event::new(EventKind::IssueDeleted, Some(deleter), issue.id)
                .in_project(issue.project_id)
                .before(issue);
            outbox::record(&mut tx, tenant_id, &[event]).await?;
        }
        Ok(tx.commit().await?)
    }

    pub async fn issue_by_iid(&self, project_id: i64, iid: i64) -> crate::Result<Option<IssueRow>> {
        Ok(self.query_as(AssertSqlSafe(format!(
            "SELECT {ISSUE_COLUMNS} FROM issues WHERE tenant_id = $1 AND project_id = $2 AND iid = $3 \
             AND deleted_at IS NULL"
        )))
        .bind(project_id)
        .bind(iid)
        .fetch_optional(self.reader())
        .await?)
    }

    /// The live issues among `ids`, by iid.
    pub async fn issues_by_ids(&self, ids: &[i64]) -> crate::Result<Vec<IssueRow>> {
        let select = format!("SELECT {ISSUE_COLUMNS} FROM issues");
        self.rows_with_keys(&select, "id", ids, " AND deleted_at IS NULL ORDER BY iid")
            .await
    }

    pub async fn issue_by_id(&self, id: i64) -> crate::Result<Option<IssueRow>> {
        Ok(self.query_as(AssertSqlSafe(format!(
            "SELECT {ISSUE_COLUMNS} FROM issues WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL"
        )))
        .bind(id)
        .fetch_optional(self.reader())
        .await?)
    }

    /// The labels of `issue_ids`, by name.
    pub async fn labels_of_issues(&self, issue_ids: &[i64]) -> crate::Result<Vec<IssueLabelRow>> {
        if issue_ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = self.sql(&format!(
            "SELECT il.issue_id, {} FROM issue_labels il JOIN labels l ON l.tenant_id = il.tenant_id \
             AND l.id = il.label_id WHERE il.tenant_id = ",
            label_columns("l")
        ));
        sql.push(" AND il.issue_id IN (")
            .bind_list(issue_ids.iter().copied())
            .push(") ORDER BY l.name_lower, l.id");
        Ok(sql.query_as().fetch_all(self.reader()).await?)
    }

    /// The assignees of `issue_ids`, in the order they were given.
    pub async fn assignees_of_issues(&self, issue_ids: &[i64]) -> crate::Result<Vec<AssigneeRow>> {
        if issue_ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = self.sql(&format!(
            "SELECT a.issue_id, {} FROM issue_assignees a JOIN users u ON u.tenant_id = a.tenant_id \
             AND u.id = a.user_id WHERE a.tenant_id = ",
            user_columns("u")
        ));
        sql.push(" AND a.issue_id IN (")
            .bind_list(issue_ids.iter().copied())
            .push(") ORDER BY a.issue_id, a.position");
        Ok(sql.query_as().fetch_all(self.reader()).await?)
    }

    pub async fn project_refs(&self, project_ids: &[i64]) -> crate::Result<Vec<ProjectRef>> {
        if project_ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = self.sql(
            "SELECT p.id, p.name, p.path, n.full_path AS namespace_full_path, n.full_name AS namespace_full_name \
             FROM projects p JOIN namespaces n ON n.tenant_id = p.tenant_id AND n.id = p.namespace_id \
             WHERE p.tenant_id = ",
        );
        sql.push(" AND p.id IN (")
            .bind_list(project_ids.iter().copied())
            .push(")");
        Ok(sql.query_as().fetch_all(self.reader()).await?)
    }
}

/// A deleted user's issues, merge requests, notes, closings and merges pass to the ghost user
/// (GitLab's user delete without `hard_delete`), inside the user delete's transaction.
pub(super) async fn reassign_contributions(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    from: i64,
    ghost: i64,
) -> crate::Result<()> {
    for statement in [
        "UPDATE issues SET author_id = $3 WHERE tenant_id = $1 AND author_id = $2",
        "UPDATE issues SET closed_by_id = $3 WHERE tenant_id = $1 AND closed_by_id = $2",
        "UPDATE issue_notes SET author_id = $3 WHERE tenant_id = $1 AND author_id = $2",
        "UPDATE merge_requests SET author_id = $3 WHERE tenant_id = $1 AND author_id = $2",
        "UPDATE merge_requests SET closed_by_id = $3 WHERE tenant_id = $1 AND closed_by_id = $2",
        "UPDATE merge_requests SET merged_by_id = $3 WHERE tenant_id = $1 AND merged_by_id = $2",
        "UPDATE merge_request_notes SET author_id = $3 WHERE tenant_id = $1 AND author_id = $2",
    ] {
        sqlx::query(statement)
            .bind(tenant_id)
            .bind(from)
            .bind(ghost)
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

/// With `hard_delete`, a deleted user's issues and merge requests go with them (inside the
/// user delete's transaction); their projects' open issue counts are recounted.
pub(super) async fn delete_contributions(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    user_id: i64,
) -> crate::Result<()> {
    let projects: Vec<i64> = sqlx::query_scalar(
        "SELECT DISTINCT project_id FROM issues WHERE tenant_id = $1 AND author_id = $2",
    )
    .bind(tenant_id)
    .bind(user_id)
    .fetch_all(&mut **tx)
    .await?;
    for statement in [
        "DELETE FROM issues WHERE tenant_id = $1 AND author_id = $2",
        "DELETE FROM merge_requests WHERE tenant_id = $1 AND author_id = $2",
    ] {
        sqlx::query(statement)
            .bind(tenant_id)
            .bind(user_id)
            .execute(&mut **tx)
            .await?;
    }
    for project_id in projects {
        sqlx::query(
            "UPDATE projects SET open_issues_count = (SELECT COUNT(*) FROM issues i \
             WHERE i.tenant_id = $1 AND i.project_id = $2 AND i.state = 'opened' \
             AND i.deleted_at IS NULL) \
             WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant_id)
        .bind(project_id)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn label_changes_replace_add_and_remove() {
        let current = names(&["bug", "ui"]);
        let add = LabelChange {
            add: names(&["UI", "docs"]),
            ..LabelChange::default()
        };
        assert_eq!(add.apply(&current), names(&["bug", "ui", "docs"]));
        let remove = LabelChange {
            remove: names(&["BUG"]),
            ..LabelChange::default()
        };
        assert_eq!(remove.apply(&current), names(&["ui"]));
        let replace = LabelChange {
            replace: Some(names(&["a", "A", "b"])),
            add: names(&["c"]),
            remove: names(&["b"]),
        };
        assert_eq!(replace.apply(&current), names(&["a", "c"]));
    }

    #[test]
    fn open_count_moves_only_on_a_real_transition() {
        assert_eq!(open_delta(IssueState::Opened, -1), -1);
        assert_eq!(open_delta(IssueState::Closed, -1), 0);
        assert_eq!(open_delta(IssueState::Closed, 1), 1);
        assert_eq!(open_delta(IssueState::Opened, 1), 0);
        assert_eq!(open_delta(IssueState::Opened, 0), 0);
    }
}
