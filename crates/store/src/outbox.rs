//! The outbox: domain events written inside the transaction of the change they describe (see
//! `crate::events`). Every store write that changes state ends its transaction with [`commit`]
//! (or calls [`record`] as its last write before committing).

use sqlx::{Any, Transaction};

use super::ids::next_ids;
use super::now_ms;
use super::sql::{Arg, Sql};
use crate::events::Event;

/// Appends `events` to the tenant's outbox inside `tx`, in one statement. Call it as the last
/// write of the transaction: the tenant's `domain_events` counter row is then the last lock
/// every write takes (and holds only until its commit), so on PostgreSQL no two writes can
/// wait for each other's locks in opposite orders.
pub(super) async fn record(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    events: &[Event],
) -> crate::Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    let first = next_ids(&mut **tx, tenant_id, "domain_events", events.len() as i64).await?;
    let now = now_ms();
    let mut sql = Sql::new(
        "INSERT INTO domain_events (tenant_id, id, kind, actor_id, project_id, subject_id, payload, created_at) VALUES ",
    );
    for (n, event) in events.iter().enumerate() {
        sql.push_row(
            n == 0,
            [
                Arg::from(tenant_id),
                Arg::from(first + n as i64),
                Arg::from(event.kind.as_str()),
                Arg::from(event.actor_id),
                Arg::from(event.project_id),
                Arg::from(event.subject_id),
                Arg::from(event.payload()),
                Arg::from(now),
            ],
        );
    }
    Ok(sql.query().execute(&mut **tx).await.map(|_| ())?)
}

/// Records `events` as the last write of `tx` and commits it: the usual end of a store write.
pub(super) async fn commit(
    mut tx: Transaction<'_, Any>,
    tenant_id: i64,
    events: &[Event],
) -> crate::Result<()> {
    record(&mut tx, tenant_id, events).await?;
    Ok(tx.commit().await?)
}
