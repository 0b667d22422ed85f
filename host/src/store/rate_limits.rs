//! Rate-limit counters in the database, for processes sharing one PostgreSQL (on SQLite the
//! limiter counts in memory and never calls these).
//!
//! Counting does not go through [`super::Db::writer`]: a counter is not data any cache
//! depends on, and advancing the write generation on every limited request would empty the
//! token cache all the time.

use super::sql::{Arg, Sql};
use super::{Db, TenantDb};

/// One counter to advance: its key, the window it counts and when that window ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterHit {
    pub key: String,
    pub window_start: i64,
    pub expires_at: i64,
}

impl TenantDb {
    /// Adds one to every counter in `hits` in ONE statement (a multi-row upsert on the
    /// primary key) and returns the new counts in the order of `hits`. Rows are written in
    /// key order, so two requests touching the same counters lock them in the same order and
    /// cannot deadlock. Each row's increment is atomic: concurrent requests, from this process
    /// or another, neither lose nor double a count.
    pub async fn count_rate_limits(&self, hits: &[CounterHit]) -> sqlx::Result<Vec<i64>> {
        if hits.is_empty() {
            return Ok(Vec::new());
        }
        let mut order: Vec<usize> = (0..hits.len()).collect();
        order.sort_by(|a, b| {
            (&hits[*a].key, hits[*a].window_start).cmp(&(&hits[*b].key, hits[*b].window_start))
        });
        let mut sql = Sql::new(
            "INSERT INTO rate_limit_counters (tenant_id, key, window_start, expires_at, count) VALUES ",
        );
        for (n, &i) in order.iter().enumerate() {
            let hit = &hits[i];
            sql.push_row(
                n == 0,
                [
                    Arg::from(self.tenant_id()),
                    Arg::from(hit.key.as_str()),
                    Arg::from(hit.window_start),
                    Arg::from(hit.expires_at),
                    Arg::from(1),
                ],
            );
        }
        sql.push(
            " ON CONFLICT (tenant_id, key, window_start) \
             DO UPDATE SET count = rate_limit_counters.count + 1 \
             RETURNING key, window_start, count",
        );
        let rows: Vec<(String, i64, i64)> = sql.query_as().fetch_all(self.db.writer()).await?;
        Ok(hits
            .iter()
            .map(|hit| {
                rows.iter()
                    .find(|(key, start, _)| *key == hit.key && *start == hit.window_start)
                    .map_or(0, |(_, _, count)| *count)
            })
            .collect())
    }
}

impl Db {
    /// Deletes the counters of windows that ended before `now` (Unix seconds), for every
    /// tenant; returns how many went.
    pub async fn purge_rate_limits(&self, now: i64) -> sqlx::Result<u64> {
        sqlx::query("DELETE FROM rate_limit_counters WHERE expires_at < $1")
            .bind(now)
            .execute(self.writer())
            .await
            .map(|r| r.rows_affected())
    }
}
