//! Resource label events: the label additions and removals of an issue (GitLab's
//! `ResourceLabelEvent`), written in the transaction that changes the labels.

use sqlx::{Any, Transaction};

use super::ids::next_ids;
use super::labels::LabelRow;
use super::sql::{Arg, Sql};
use super::{TenantDb, now_ms};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LabelEventRow {
    pub id: i64,
    pub issue_id: i64,
    pub user_id: i64,
    pub action: String,
    pub created_at: i64,
    pub label_id: i64,
    /// The label as it is now; `None` once it was deleted.
    pub label_name: Option<String>,
    pub label_color: Option<String>,
    pub label_description: Option<String>,
}

/// One change of labels by one user: the labels added and removed.
pub struct LabelChange<'a> {
    pub user_id: i64,
    pub added: &'a [i64],
    pub removed: &'a [i64],
}

/// Records `change` on `issue_id`, one event per label, in one insert.
pub(super) async fn record(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    issue_id: i64,
    change: &LabelChange<'_>,
) -> sqlx::Result<()> {
    let events: Vec<(i64, &str)> = change
        .added
        .iter()
        .map(|id| (*id, "add"))
        .chain(change.removed.iter().map(|id| (*id, "remove")))
        .collect();
    if events.is_empty() {
        return Ok(());
    }
    let first = next_ids(
        &mut **tx,
        tenant_id,
        "resource_label_events",
        events.len() as i64,
    )
    .await?;
    let now = now_ms();
    let mut sql = Sql::new(
        "INSERT INTO resource_label_events (tenant_id, id, issue_id, user_id, label_id, action, created_at) VALUES ",
    );
    for (n, (label_id, action)) in events.iter().enumerate() {
        sql.push_row(
            n == 0,
            [
                Arg::from(tenant_id),
                Arg::from(first + n as i64),
                Arg::from(issue_id),
                Arg::from(change.user_id),
                Arg::from(*label_id),
                Arg::from(*action),
                Arg::from(now),
            ],
        );
    }
    sql.query().execute(&mut **tx).await.map(|_| ())
}

/// The label ids of `labels` not among `others`.
pub fn label_ids_not_in(labels: &[LabelRow], others: &[i64]) -> Vec<i64> {
    labels
        .iter()
        .map(|l| l.id)
        .filter(|id| !others.contains(id))
        .collect()
}

impl TenantDb {
    /// An issue's label events, oldest first; `event_id` picks one.
    pub async fn label_events(
        &self,
        issue_id: i64,
        event_id: Option<i64>,
    ) -> sqlx::Result<Vec<LabelEventRow>> {
        let mut sql = Sql::new(
            "SELECT e.id, e.issue_id, e.user_id, e.action, e.created_at, e.label_id, \
             l.name AS label_name, l.color AS label_color, l.description AS label_description \
             FROM resource_label_events e LEFT JOIN labels l ON l.tenant_id = e.tenant_id AND l.id = e.label_id \
             WHERE e.tenant_id = ",
        );
        sql.bind(self.tenant_id())
            .push(" AND e.issue_id = ")
            .bind(issue_id);
        if let Some(id) = event_id {
            sql.push(" AND e.id = ").bind(id);
        }
        sql.push(" ORDER BY e.id");
        sql.query_as().fetch_all(self.reader()).await
    }
}
