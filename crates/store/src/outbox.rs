//! The outbox: domain events written inside the transaction of the change they describe (see
//! `crate::events`). Every store write that changes state ends its transaction with [`commit`]
//! (or calls [`record`] as its last write before committing).

use sqlx::{Any, Transaction};

use super::ids::next_ids;
use super::sql::{Arg, Sql};
use super::{Engine, now_ms};
use crate::events::Event;

/// Appends `events` to the tenant's outbox inside `tx`. Call it as the last write of the
/// transaction: the tenant's `domain_events` counter row is then the last lock every write
/// takes (and holds only until its commit), so on PostgreSQL no two writes can wait for each
/// other's locks in opposite orders. There the counter and the rows are one statement: every
/// other write of the tenant waits on that row, so each round trip under it counts.
pub(super) async fn record(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    events: &[Event],
) -> crate::Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    let now = now_ms();
    let count = events.len() as i64;
    // What each event row holds besides its tenant, id and time.
    let fields = |event: &Event| {
        [
            Arg::from(event.kind.as_str()),
            Arg::from(event.actor_id),
            Arg::from(event.project_id),
            Arg::from(event.subject_id),
            Arg::from(event.payload()),
        ]
    };
    let mut sql;
    if Engine::of(tx) == Engine::Postgres {
        sql = Sql::new(
            "WITH taken AS (INSERT INTO id_sequences (tenant_id, name, last_value) VALUES (",
        );
        sql.bind(tenant_id)
            .push(", 'domain_events', ")
            .bind(count)
            .push(
                ") ON CONFLICT (tenant_id, name) DO UPDATE \
                 SET last_value = id_sequences.last_value + EXCLUDED.last_value RETURNING last_value) \
                 INSERT INTO domain_events (tenant_id, id, kind, actor_id, project_id, subject_id, payload, created_at) \
                 SELECT ",
            )
            .bind(tenant_id)
            .push(", taken.last_value - ")
            .bind(count)
            .push(" + e.n, e.kind, e.actor_id, e.project_id, e.subject_id, e.payload, ")
            .bind(now)
            .push(" FROM taken, (VALUES ");
        for (n, event) in events.iter().enumerate() {
            let number = Arg::from(n as i64 + 1);
            sql.push_row(n == 0, std::iter::once(number).chain(fields(event)));
        }
        sql.push(") AS e (n, kind, actor_id, project_id, subject_id, payload)");
    } else {
        let first = next_ids(&mut **tx, tenant_id, "domain_events", count).await?;
        sql = Sql::new(
            "INSERT INTO domain_events (tenant_id, id, kind, actor_id, project_id, subject_id, payload, created_at) VALUES ",
        );
        for (n, event) in events.iter().enumerate() {
            let key = [Arg::from(tenant_id), Arg::from(first + n as i64)];
            sql.push_row(
                n == 0,
                key.into_iter().chain(fields(event)).chain([Arg::from(now)]),
            );
        }
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
