//! Per-tenant id allocation. Each tenant numbers its own users, tokens and so on from 1,
//! so ids are neither shared nor guessable across tenants (and every tenant's root is id 1).

use sqlx::{Any, Executor};

/// Takes the next value of the tenant's sequence `name`. Run it inside the transaction that
/// inserts the row, so a failed insert does not consume the number on PostgreSQL either.
pub async fn next_id<'c, E>(executor: E, tenant_id: i64, name: &str) -> crate::Result<i64>
where
    E: Executor<'c, Database = Any>,
{
    next_ids(executor, tenant_id, name, 1).await
}

/// Takes the next `count` values of the tenant's sequence `name` at once and returns the
/// first; the values are `first..first + count`. Same transaction rule as `next_id`.
pub async fn next_ids<'c, E>(
    executor: E,
    tenant_id: i64,
    name: &str,
    count: i64,
) -> crate::Result<i64>
where
    E: Executor<'c, Database = Any>,
{
    let last: i64 = sqlx::query_scalar(
        "INSERT INTO id_sequences (tenant_id, name, last_value) VALUES ($1, $2, $3) \
         ON CONFLICT (tenant_id, name) DO UPDATE SET last_value = id_sequences.last_value + $3 \
         RETURNING last_value",
    )
    .bind(tenant_id)
    .bind(name)
    .bind(count)
    .fetch_one(executor)
    .await?;
    Ok(last - count + 1)
}
