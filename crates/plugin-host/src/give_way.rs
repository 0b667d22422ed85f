//! Long plugin calls give way to other tenants' requests.
//!
//! A plugin call runs on a thread until it answers or its deadline passes, and the operating
//! system shares the cores between threads, not tenants. A tenant whose plugin loops until its
//! deadline therefore holds a whole core for that time, and every other tenant's requests share
//! what is left: on two cores, one such call at a time (the tenant's fair share of requests and
//! of plugin instances) kept another tenant's p99 at about 3x its unloaded figure
//! (`tests/bench/hostile-plugins`; docs/performance.md).
//!
//! So a call that has already run for [`AFTER`] checks, at each tick of the epoch, whether a
//! tenant that goes before its own has a request in flight (a lighter one, in the fair share's
//! terms: `http/fair_share.rs`); while one has, the call pauses, for [`LONGEST_PAUSE`] at the
//! most, and then runs one more tick. Two tenants as heavy as each other never pause for each
//! other, which would leave the cores idle. Well-behaved calls (a spam check takes well under a
//! millisecond) never pause, and a tenant alone on the process is never slowed. The call's
//! deadline is wall time, so a long call that gives way gets less CPU before it: contention
//! costs the tenant whose call is long, not the others.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::ticker::EPOCH_TICK;

/// How long a call runs before it gives way to other tenants.
pub(crate) const AFTER: Duration = Duration::from_millis(10);

/// The longest a call pauses at one tick; then it runs for one tick however busy the others
/// are, so that it still ends (or reaches its deadline) while they keep the process busy.
pub(crate) const LONGEST_PAUSE: Duration = Duration::from_millis(4);

/// Tells whether a tenant that goes before the given one has a request in flight.
pub(crate) type Outranked = Arc<dyn Fn(i64) -> bool + Send + Sync>;

#[derive(Clone)]
pub struct GiveWay {
    outranked: Outranked,
}

impl GiveWay {
    pub fn new(outranked: Outranked) -> GiveWay {
        GiveWay { outranked }
    }

    /// At a tick of `tenant`'s call that began at `started`: pauses while a tenant that goes
    /// before it has a request in flight, if the call has run for [`AFTER`], never past `deadline`. Paused ticks
    /// are counted by tenant (`trellis_plugin_paused_ticks_total`); returns how many.
    pub fn at_tick(&self, tenant: i64, started: Instant, deadline: Instant) -> u64 {
        if started.elapsed() < AFTER {
            return 0;
        }
        let until = (Instant::now() + LONGEST_PAUSE).min(deadline);
        let mut paused = 0;
        while Instant::now() < until && (self.outranked)(tenant) {
            std::thread::sleep(EPOCH_TICK);
            paused += 1;
        }
        if paused > 0 {
            metrics::counter!("trellis_plugin_paused_ticks_total", "tenant" => tenant.to_string())
                .increment(paused);
        }
        paused
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn give_way(busy: bool) -> GiveWay {
        GiveWay::new(Arc::new(move |_| busy))
    }

    fn ticks(pause: Duration) -> u64 {
        (pause.as_micros() / EPOCH_TICK.as_micros()) as u64
    }

    #[test]
    fn a_short_call_never_pauses() {
        let now = Instant::now();
        assert_eq!(give_way(true).at_tick(1, now, now + AFTER * 100), 0);
    }

    #[test]
    fn a_long_call_pauses_while_it_is_outranked_and_no_longer_than_the_longest_pause() {
        let started = Instant::now() - AFTER;
        let paused = give_way(true).at_tick(1, started, started + AFTER * 100);
        assert!((1..=ticks(LONGEST_PAUSE)).contains(&paused), "{paused}");
    }

    #[test]
    fn a_long_call_alone_runs_on() {
        let started = Instant::now() - AFTER;
        assert_eq!(
            give_way(false).at_tick(1, started, started + AFTER * 100),
            0
        );
    }

    #[test]
    fn a_pause_ends_at_the_deadline() {
        let started = Instant::now() - AFTER;
        assert_eq!(give_way(true).at_tick(1, started, Instant::now()), 0);
    }
}
