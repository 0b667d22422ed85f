//! Fixed-window counters, aligned to the Unix epoch as Rack::Attack's are: a request at
//! second `t` counts in the window starting at `t - t % period`, and the window's count after
//! the request is what is compared with the limit (GitLab's `RateLimit-Observed`).
//!
//! Where the counts live: in Redis when the server has one (`--redis-url`); otherwise on
//! SQLite (one process) in a sharded in-memory map, with no database cost, and on PostgreSQL
//! (processes share the database) in the `rate_limit_counters` table, one upsert per request.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::Mutex;

use crate::redis_link::RedisLink;
use crate::store::rate_limits::CounterHit;
use crate::store::{Db, Engine, TenantDb};

/// A fixed window: where it starts and when it resets, in Unix seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start: i64,
    pub reset: i64,
}

impl Window {
    /// The window of `period` seconds that second `now` falls in.
    pub fn at(now: i64, period: i64) -> Window {
        let period = period.max(1);
        let start = now - now.rem_euclid(period);
        Window {
            start,
            reset: start + period,
        }
    }

    /// Whole seconds from `now` until the window resets (at least 1), GitLab's `Retry-After`.
    pub fn retry_after(&self, now: i64) -> i64 {
        (self.reset - now).max(1)
    }
}

const SHARDS: usize = 32;

type Shard = HashMap<(i64, String, i64), Slot>;

#[derive(Debug, Clone, Copy)]
struct Slot {
    count: i64,
    expires_at: i64,
}

/// Counters in memory: a map per shard behind its own mutex, so requests for different
/// subjects rarely wait on each other, and an increment is exact (read and write happen under
/// the shard's lock).
pub struct MemoryCounters {
    hasher: RandomState,
    shards: Box<[Mutex<Shard>]>,
}

impl Default for MemoryCounters {
    fn default() -> Self {
        MemoryCounters {
            hasher: RandomState::new(),
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }
}

impl MemoryCounters {
    fn shard(&self, tenant: i64, key: &str) -> &Mutex<Shard> {
        let index = self.hasher.hash_one((tenant, key)) as usize % self.shards.len();
        &self.shards[index]
    }

    /// Adds one to the counter and returns its new value.
    pub fn increment(&self, tenant: i64, hit: &CounterHit) -> i64 {
        let mut shard = self
            .shard(tenant, &hit.key)
            .lock()
            .expect("rate limit shard");
        let slot = shard
            .entry((tenant, hit.key.clone(), hit.window_start))
            .or_insert(Slot {
                count: 0,
                expires_at: hit.expires_at,
            });
        slot.count += 1;
        slot.count
    }

    /// Bans `key` until `until` (window 0 holds bans, whose expiry is the ban's end).
    pub fn ban(&self, tenant: i64, key: &str, until: i64) {
        let mut shard = self.shard(tenant, key).lock().expect("rate limit shard");
        shard.insert(
            (tenant, key.to_string(), 0),
            Slot {
                count: 1,
                expires_at: until,
            },
        );
    }

    pub fn banned(&self, tenant: i64, key: &str, now: i64) -> bool {
        let shard = self.shard(tenant, key).lock().expect("rate limit shard");
        shard
            .get(&(tenant, key.to_string(), 0))
            .is_some_and(|slot| slot.expires_at > now)
    }

    /// Drops the counters of windows that ended before `now`; returns how many went.
    pub fn purge(&self, now: i64) -> usize {
        let mut removed = 0;
        for shard in &self.shards {
            let mut shard = shard.lock().expect("rate limit shard");
            let before = shard.len();
            shard.retain(|_, slot| slot.expires_at >= now);
            removed += before - shard.len();
        }
        removed
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().expect("rate limit shard").len())
            .sum()
    }
}

/// Where this process keeps its counters.
pub enum Counters {
    Memory(MemoryCounters),
    Database,
    Redis(RedisLink),
}

/// Why a counter could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum CounterError {
    #[error(transparent)]
    Store(#[from] crate::store::Error),
    #[error("Redis: {0}")]
    Redis(#[from] redis::RedisError),
}

impl Counters {
    /// Redis when the server has one; otherwise memory on SQLite (one process) and the shared
    /// table on PostgreSQL.
    pub fn new(engine: Engine, redis: Option<RedisLink>) -> Counters {
        match (redis, engine) {
            (Some(redis), _) => Counters::Redis(redis),
            (None, Engine::Sqlite) => Counters::Memory(MemoryCounters::default()),
            (None, Engine::Postgres) => Counters::Database,
        }
    }

    /// Adds one to every counter in `hits`; the new counts, in order.
    pub async fn count(
        &self,
        db: &TenantDb,
        hits: &[CounterHit],
    ) -> Result<Vec<i64>, CounterError> {
        Ok(match self {
            Counters::Memory(memory) => hits
                .iter()
                .map(|hit| memory.increment(db.tenant_id(), hit))
                .collect(),
            Counters::Database => db.count_rate_limits(hits).await?,
            Counters::Redis(redis) => redis.count(db.tenant_id(), hits).await?,
        })
    }

    /// Bans `key` until `until` (Unix seconds), whatever its counts.
    pub async fn ban(&self, db: &TenantDb, key: &str, until: i64) -> Result<(), CounterError> {
        match self {
            Counters::Memory(memory) => memory.ban(db.tenant_id(), key, until),
            Counters::Database => db.ban_rate_limit_key(key, until).await?,
            Counters::Redis(redis) => redis.ban(db.tenant_id(), key, until).await?,
        }
        Ok(())
    }

    /// Whether `key` is banned at `now`.
    pub async fn banned(&self, db: &TenantDb, key: &str, now: i64) -> Result<bool, CounterError> {
        Ok(match self {
            Counters::Memory(memory) => memory.banned(db.tenant_id(), key, now),
            Counters::Database => db.rate_limit_key_banned(key, now).await?,
            Counters::Redis(redis) => redis.banned(db.tenant_id(), key).await?,
        })
    }

    /// Forgets finished windows (in the database: those of every process; Redis expires
    /// them itself).
    pub async fn purge(&self, db: &Db, now: i64) -> crate::store::Result<u64> {
        match self {
            Counters::Memory(memory) => Ok(memory.purge(now) as u64),
            Counters::Database => db.purge_rate_limits(now).await,
            Counters::Redis(_) => Ok(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn hit(key: &str, window_start: i64, expires_at: i64) -> CounterHit {
        CounterHit {
            key: key.into(),
            window_start,
            expires_at,
        }
    }

    #[test]
    fn windows_align_to_the_epoch() {
        assert_eq!(
            Window::at(1_000, 60),
            Window {
                start: 960,
                reset: 1_020
            }
        );
        assert_eq!(
            Window::at(1_020, 60),
            Window {
                start: 1_020,
                reset: 1_080
            }
        );
        assert_eq!(Window::at(1_019, 60).retry_after(1_019), 1);
        assert_eq!(Window::at(1_000, 60).retry_after(1_000), 20);
        assert_eq!(Window::at(1_020, 60).retry_after(1_020), 60);
        assert_eq!(Window::at(7, 1), Window { start: 7, reset: 8 });
        assert_eq!(Window::at(7, 1).retry_after(7), 1);
        // GitLab's formula: period - (now % period)
        for now in [0_i64, 1, 59, 60, 61, 1_609_833_930] {
            for period in [1_i64, 2, 15, 60, 3_600] {
                assert_eq!(
                    Window::at(now, period).retry_after(now),
                    period - now % period
                );
            }
        }
        assert_eq!(Window::at(5, 0), Window { start: 5, reset: 6 });
    }

    #[test]
    fn counts_per_tenant_key_and_window() {
        let counters = MemoryCounters::default();
        assert_eq!(counters.increment(1, &hit("a", 0, 60)), 1);
        assert_eq!(counters.increment(1, &hit("a", 0, 60)), 2);
        assert_eq!(counters.increment(2, &hit("a", 0, 60)), 1);
        assert_eq!(counters.increment(1, &hit("b", 0, 60)), 1);
        assert_eq!(counters.increment(1, &hit("a", 60, 120)), 1);
        assert_eq!(counters.increment(1, &hit("a", 0, 60)), 3);
        assert_eq!(counters.len(), 4);
        assert_eq!(counters.purge(60), 0);
        assert_eq!(counters.purge(61), 3);
        assert_eq!(counters.len(), 1);
        assert_eq!(counters.increment(1, &hit("a", 60, 120)), 2);
        assert_eq!(counters.purge(1_000), 1);
        assert_eq!(counters.len(), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn exact_under_200_concurrent_tasks() {
        let counters = Arc::new(MemoryCounters::default());
        let tasks: Vec<_> = (0..200)
            .map(|i| {
                let counters = counters.clone();
                tokio::spawn(async move {
                    tokio::task::yield_now().await;
                    // every task hits the shared counter and one of ten others
                    let shared = counters.increment(7, &hit("shared", 0, 60));
                    let other = counters.increment(7, &hit(&format!("k{}", i % 10), 0, 60));
                    (shared, other)
                })
            })
            .collect();
        let mut seen = Vec::new();
        for task in tasks {
            seen.push(task.await.unwrap().0);
        }
        seen.sort_unstable();
        // every value 1..=200 handed out exactly once: nothing lost, nothing doubled
        assert_eq!(seen, (1..=200).collect::<Vec<i64>>());
        // a limit of 100 lets exactly 100 through
        assert_eq!(seen.iter().filter(|c| **c <= 100).count(), 100);
        for k in 0..10 {
            assert_eq!(counters.increment(7, &hit(&format!("k{k}"), 0, 60)), 21);
        }
    }
}
