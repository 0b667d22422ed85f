//! The last hour of calls per tenant and hook, for the admin console's "Watch it" chart.
//!
//! `/-/metrics` exports the same calls as Prometheus counters and histograms, which only grow:
//! they cannot answer "over the last hour" without a Prometheus server. So each process also
//! keeps, per tenant and hook, sixty one-minute buckets of calls, failures by kind and a
//! latency histogram with fixed exponential bounds, from which p50 and p99 are read. Only
//! calls through the live binding are counted (not `validate-config`, not the console's
//! trial runs). The figures are this process's: with several processes behind a balancer,
//! each shows the calls it served.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use crate::hooks::Hook;

/// How many minutes the window keeps.
pub const MINUTES: usize = 60;

/// Latency bucket upper bounds: 50 µs × 1.25ⁱ, up to about a minute.
const LATENCY_BUCKETS: usize = 64;
const FIRST_BOUND_SECONDS: f64 = 50e-6;
const GROWTH: f64 = 1.25;

fn bound(index: usize) -> f64 {
    FIRST_BOUND_SECONDS * GROWTH.powi(index as i32)
}

fn bucket_of(seconds: f64) -> usize {
    (0..LATENCY_BUCKETS)
        .find(|&i| seconds <= bound(i))
        .unwrap_or(LATENCY_BUCKETS - 1)
}

#[derive(Clone)]
struct Minute {
    /// Minutes since the epoch this bucket counts.
    at: u64,
    calls: u64,
    failures: BTreeMap<&'static str, u64>,
    latency: [u64; LATENCY_BUCKETS],
}

impl Minute {
    fn empty(at: u64) -> Minute {
        Minute {
            at,
            calls: 0,
            failures: BTreeMap::new(),
            latency: [0; LATENCY_BUCKETS],
        }
    }
}

/// One hook's window, oldest minute first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Calls per minute, the last entry being the current minute.
    pub calls: Vec<u64>,
    /// Failed calls per minute.
    pub failures: Vec<u64>,
    /// Failures over the hour by kind (`timeout`, `trap`, `oom`, `busy`...).
    pub by_kind: BTreeMap<&'static str, u64>,
    pub total: u64,
    /// Latency percentiles over the hour (the upper bound of the bucket they fall in).
    pub p50: Option<Duration>,
    pub p99: Option<Duration>,
}

#[derive(Default)]
pub struct Watch {
    windows: Mutex<HashMap<(i64, Hook), Vec<Minute>>>,
}

fn minute_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 60)
}

impl Watch {
    /// Counts one call that ended with `outcome` (`ok` or a failure kind) after `elapsed`.
    pub(crate) fn record(
        &self,
        tenant_id: i64,
        hook: Hook,
        outcome: &'static str,
        elapsed: Duration,
    ) {
        self.record_at(minute_now(), tenant_id, hook, outcome, elapsed);
    }

    fn record_at(
        &self,
        now: u64,
        tenant_id: i64,
        hook: Hook,
        outcome: &'static str,
        elapsed: Duration,
    ) {
        let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        let window = windows.entry((tenant_id, hook)).or_default();
        window.retain(|m| m.at + MINUTES as u64 > now);
        if window.last().is_none_or(|m| m.at != now) {
            window.push(Minute::empty(now));
        }
        let minute = window.last_mut().expect("pushed above");
        minute.calls += 1;
        if outcome != "ok" {
            *minute.failures.entry(outcome).or_default() += 1;
        }
        minute.latency[bucket_of(elapsed.as_secs_f64())] += 1;
    }

    /// The last hour of a tenant's hook.
    pub fn summary(&self, tenant_id: i64, hook: Hook) -> Summary {
        self.summary_at(minute_now(), tenant_id, hook)
    }

    fn summary_at(&self, now: u64, tenant_id: i64, hook: Hook) -> Summary {
        let windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        let minutes = windows
            .get(&(tenant_id, hook))
            .map(Vec::as_slice)
            .unwrap_or_default();
        let mut summary = Summary {
            calls: vec![0; MINUTES],
            failures: vec![0; MINUTES],
            ..Summary::default()
        };
        let mut latency = [0u64; LATENCY_BUCKETS];
        for minute in minutes {
            let Some(age) = now.checked_sub(minute.at) else {
                continue;
            };
            if age >= MINUTES as u64 {
                continue;
            }
            let slot = MINUTES - 1 - age as usize;
            summary.calls[slot] += minute.calls;
            summary.total += minute.calls;
            for (kind, count) in &minute.failures {
                summary.failures[slot] += count;
                *summary.by_kind.entry(kind).or_default() += count;
            }
            for (sum, count) in latency.iter_mut().zip(minute.latency) {
                *sum += count;
            }
        }
        summary.p50 = percentile(&latency, summary.total, 0.50);
        summary.p99 = percentile(&latency, summary.total, 0.99);
        summary
    }
}

fn percentile(latency: &[u64], total: u64, rank: f64) -> Option<Duration> {
    if total == 0 {
        return None;
    }
    let wanted = ((total as f64) * rank).ceil().max(1.0) as u64;
    let mut seen = 0;
    latency.iter().enumerate().find_map(|(i, count)| {
        seen += count;
        (seen >= wanted).then(|| Duration::from_secs_f64(bound(i)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_calls_failures_and_percentiles_per_minute() {
        let watch = Watch::default();
        let ms = Duration::from_millis;
        for _ in 0..98 {
            watch.record_at(1000, 1, Hook::SpamCheck, "ok", ms(1));
        }
        watch.record_at(1000, 1, Hook::SpamCheck, "timeout", ms(100));
        watch.record_at(1001, 1, Hook::SpamCheck, "trap", ms(2));
        watch.record_at(1001, 2, Hook::SpamCheck, "ok", ms(1));
        let s = watch.summary_at(1001, 1, Hook::SpamCheck);
        assert_eq!(s.total, 100);
        assert_eq!(s.calls[MINUTES - 2..], [99, 1]);
        assert_eq!(s.failures[MINUTES - 2..], [1, 1]);
        assert_eq!(s.by_kind.get("timeout"), Some(&1));
        assert_eq!(s.by_kind.get("trap"), Some(&1));
        let p50 = s.p50.unwrap();
        assert!(p50 >= ms(1) && p50 < ms(2), "{p50:?}");
        let p99 = s.p99.unwrap();
        assert!(p99 >= ms(2) && p99 < ms(3), "{p99:?}");
        // Other tenants and hooks are apart.
        assert_eq!(watch.summary_at(1001, 2, Hook::SpamCheck).total, 1);
        assert_eq!(watch.summary_at(1001, 1, Hook::PushRules).total, 0);
    }

    #[test]
    fn minutes_older_than_an_hour_drop_out() {
        let watch = Watch::default();
        watch.record_at(1000, 1, Hook::SpamCheck, "ok", Duration::from_millis(1));
        assert_eq!(watch.summary_at(1059, 1, Hook::SpamCheck).total, 1);
        let later = watch.summary_at(1060, 1, Hook::SpamCheck);
        assert_eq!(later.total, 0);
        assert_eq!(later.p50, None);
    }
}
