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
    pub async fn count_rate_limits(&self, hits: &[CounterHit]) -> crate::Result<Vec<i64>> {
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

impl TenantDb {
    /// Bans `key` until `until` (Unix seconds): a row in window 0 whose expiry is the ban's
    /// end, so the purge of finished windows forgets it too.
    pub async fn ban_rate_limit_key(&self, key: &str, until: i64) -> crate::Result<()> {
        Ok(sqlx::query(
            "INSERT INTO rate_limit_counters (tenant_id, key, window_start, expires_at, count) \
             VALUES ($1, $2, 0, $3, 1) ON CONFLICT (tenant_id, key, window_start) \
             DO UPDATE SET expires_at = excluded.expires_at",
        )
        .bind(self.tenant_id())
        .bind(key)
        .bind(until)
        .execute(self.db.writer())
        .await
        .map(|_| ())?)
    }

    /// Whether `key` is banned at `now` (Unix seconds).
    pub async fn rate_limit_key_banned(&self, key: &str, now: i64) -> crate::Result<bool> {
        let found: Option<(i64,)> = sqlx::query_as(
            "SELECT count FROM rate_limit_counters \
             WHERE tenant_id = $1 AND key = $2 AND window_start = 0 AND expires_at > $3",
        )
        .bind(self.tenant_id())
        .bind(key)
        .bind(now)
        .fetch_optional(self.db.reader())
        .await?;
        Ok(found.is_some())
    }
}

impl Db {
    /// Deletes the counters of windows that ended before `now` (Unix seconds), for every
    /// tenant; returns how many went.
    pub async fn purge_rate_limits(&self, now: i64) -> crate::Result<u64> {
        Ok(
            sqlx::query("DELETE FROM rate_limit_counters WHERE expires_at < $1")
                .bind(now)
                .execute(self.writer())
                .await
                .map(|r| r.rows_affected())?,
        )
    }
}
