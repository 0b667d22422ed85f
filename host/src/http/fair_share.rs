//! Each tenant's fair share of the process while several tenants are busy at once.
//!
//! One process serves many tenants on a few cores. Without a share, a tenant that floods the
//! API (or whose requests all wait on a slow plugin) has as many requests running as it sends,
//! and every other tenant's request queues behind them for CPU: on two cores, five closed
//! loops of one tenant's requests made another tenant's p99 6.4 times its unloaded figure
//! (`tests/bench/hostile-plugins`, control phase). So while more than one tenant is busy, each
//! may have at most `capacity / busy tenants` requests (at least one) in flight; the rest of
//! its requests wait in its own line, and nobody else's. A tenant alone on the process is
//! never held back: the share only applies when someone else needs the cores.
//!
//! A request waits for its share for [`PATIENCE`] at the most, then runs anyway: the share orders
//! a tenant's requests, but never stalls them behind one that takes long.
//!
//! Shares go by need, as in max-min fairness. A tenant's *usage* is its demand over time: its
//! requests in flight or waiting for its share (request-seconds, decaying with a half-life of
//! [`USAGE_HALF_LIFE`]). Waiting requests count, so that a flooding tenant held back by the
//! rules below never looks light: counting only what ran, its usage fell below a light
//! tenant's, the two swapped places, and the light tenant's requests waited out their patience
//! behind the flood's slowest one (p99 of 254 ms on PostgreSQL). A tenant is
//! *lighter* than another that is [`LOADING`] the process when its usage is less than half of
//! the other's ([`is_lighter`]). Then:
//! - a lighter tenant may have twice its share, so that its occasional overlapping requests do
//!   not wait for each other behind a flood;
//! - a tenant starts no new request while a tenant lighter than itself has one in flight (for
//!   [`PATIENCE`] at the most, as above), so that the light tenant's requests have the cores to
//!   themselves rather than sharing them with the heavy tenant's next ones. What it needs is
//!   small by definition, and the heavy tenant gets everything between its requests.
//!
//! A flooding tenant, whose usage is the highest, never gets more than its share. Measured with
//! `tests/bench/hostile-plugins` (docs/performance.md).
//!
//! A tenant counts as busy while it has a request in flight, and for [`BUSY_WINDOW`] after
//! its last one ended, so that a tenant sending a steady stream of short requests is counted
//! between them, and a flooding tenant cannot take back every slot in the gaps.
//!
//! Git transfers are not shared here: they run for as long as the repository takes to send,
//! and have their own per-tenant slots (`--max-upload-packs-per-tenant`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// How long a tenant counts as busy after its last request ended.
pub const BUSY_WINDOW: Duration = Duration::from_secs(1);

/// The longest a request waits for its tenant's share; then it runs anyway. A slot can be held
/// by a request that takes long without using the CPU: a slow client's upload, a body that
/// trickles in on purpose, a plugin call waiting for its slot. Without a bound, one such
/// request would hold up all of its tenant's others whenever another tenant is busy, so one
/// anonymous connection could stall a tenant. With it, that costs the tenant's other requests
/// at most this long, and a flood still runs mostly one request at a time, since short
/// requests free the slot well within it.
pub const PATIENCE: Duration = Duration::from_millis(250);

/// How fast a tenant's usage forgets: what it had in flight a second ago counts half.
pub const USAGE_HALF_LIFE: Duration = Duration::from_secs(1);

/// The requests a tenant may have in flight while `busy` tenants (itself included) are busy;
/// `None` means no limit. A `lighter` tenant (see [`is_lighter`]) may have twice as many.
pub fn share(capacity: usize, busy: usize, lighter: bool) -> Option<usize> {
    (capacity > 0 && busy > 1).then(|| (capacity / busy).max(1) * if lighter { 2 } else { 1 })
}

/// The usage (request-seconds) from which a tenant counts as loading the process: about a tenth
/// of a second of one request in flight. Below it, nobody is lighter than anybody.
pub const LOADING: f64 = 0.1;

/// Whether a tenant whose usage is `usage` is clearly lighter than the busiest other tenant.
pub fn is_lighter(usage: f64, heaviest_other: f64) -> bool {
    heaviest_other >= LOADING && usage * 2.0 < heaviest_other
}

#[derive(Clone)]
pub struct FairShare {
    capacity: usize,
    tenants: Arc<Mutex<HashMap<i64, Load>>>,
}

struct Load {
    in_flight: usize,
    /// Requests waiting for the share.
    waiting: usize,
    last_active: Instant,
    /// Wakes this tenant's waiting requests when one of its requests ends.
    ended: Arc<Notify>,
    /// Requests in flight or waiting over time (request-seconds), decayed, as of `settled`.
    usage: f64,
    settled: Instant,
}

impl Load {
    fn new(now: Instant) -> Load {
        Load {
            in_flight: 0,
            waiting: 0,
            last_active: now,
            ended: Arc::default(),
            usage: 0.0,
            settled: now,
        }
    }

    /// The usage at `now`: what it was, decayed, plus what has been in flight or waiting since.
    fn usage_at(&self, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(self.settled).as_secs_f64();
        let decay = 0.5f64.powf(elapsed / USAGE_HALF_LIFE.as_secs_f64());
        self.usage * decay + (self.in_flight + self.waiting) as f64 * elapsed
    }

    /// Brings the usage up to `now`; done before `in_flight` or `waiting` changes.
    fn settle(&mut self, now: Instant) {
        self.usage = self.usage_at(now);
        self.settled = now;
    }
}

/// A request's place in its tenant's share; gives it back when dropped.
pub struct Admitted {
    share: FairShare,
    tenant: i64,
}

impl FairShare {
    /// `capacity`: the requests shared out among busy tenants (0 turns sharing off).
    pub fn new(capacity: usize) -> FairShare {
        FairShare {
            capacity,
            tenants: Arc::default(),
        }
    }

    /// Waits until `tenant` is within its share, or for [`PATIENCE`] at the most, then counts
    /// the request as in flight. Requests that had to wait are counted by tenant
    /// (`trellis_fair_share_waits_total`).
    pub async fn admit(&self, tenant: i64) -> Admitted {
        // The tenant's own `Notify`, the same while it has a request waiting.
        let Some(ended) = self.enter(tenant, false) else {
            return self.admitted(tenant);
        };
        let give_up = tokio::time::Instant::now() + PATIENCE;
        metrics::counter!("trellis_fair_share_waits_total", "tenant" => tenant.to_string())
            .increment(1);
        let _waiting = Waiting::start(self, tenant);
        loop {
            let notified = ended.notified();
            tokio::pin!(notified);
            // Registered before checking again, so that an end between the check and the
            // wait is not missed.
            notified.as_mut().enable();
            if self.enter(tenant, false).is_none() {
                return self.admitted(tenant);
            }
            if tokio::time::timeout_at(give_up, notified).await.is_err() {
                self.enter(tenant, true);
                return self.admitted(tenant);
            }
        }
    }

    /// Changes `tenant`'s count of waiting requests by `change`, its usage settled first.
    fn count_waiting(&self, tenant: i64, change: isize) {
        let now = Instant::now();
        let mut tenants = self.tenants.lock().expect("fair share");
        let load = tenants.entry(tenant).or_insert_with(|| Load::new(now));
        load.settle(now);
        load.waiting = load.waiting.saturating_add_signed(change);
    }

    /// Whether a tenant lighter than `tenant` has a request in flight now (whatever the
    /// capacity: demand is counted with sharing off too). What `tenant`'s long plugin calls
    /// give way to; two heavy tenants never pause for each other, which would idle the cores.
    pub fn lighter_in_flight(&self, tenant: i64) -> bool {
        let tenants = self.tenants.lock().expect("fair share");
        standing(&tenants, tenant, Instant::now()).lighter_in_flight
    }

    fn admitted(&self, tenant: i64) -> Admitted {
        Admitted {
            share: self.clone(),
            tenant,
        }
    }

    /// Counts a request of `tenant` as in flight if it is within its share, or `anyway`;
    /// otherwise what tells when one of the tenant's requests ends.
    fn enter(&self, tenant: i64, anyway: bool) -> Option<Arc<Notify>> {
        let now = Instant::now();
        let mut tenants = self.tenants.lock().expect("fair share");
        tenants.retain(|_, load| {
            load.in_flight + load.waiting > 0 || now - load.last_active < BUSY_WINDOW
        });
        let busy = tenants.len() + usize::from(!tenants.contains_key(&tenant));
        let standing = standing(&tenants, tenant, now);
        let limit = share(
            self.capacity,
            busy,
            is_lighter(standing.usage, standing.heaviest_other),
        );
        let load = tenants.entry(tenant).or_insert_with(|| Load::new(now));
        load.last_active = now;
        let over_share = limit.is_some_and(|limit| load.in_flight >= limit);
        if !anyway && limit.is_some() && (over_share || standing.lighter_in_flight) {
            return Some(load.ended.clone());
        }
        load.settle(now);
        load.in_flight += 1;
        None
    }
}

/// Where a tenant stands against the others at `now`.
struct Standing {
    usage: f64,
    heaviest_other: f64,
    /// A tenant lighter than this one has a request in flight.
    lighter_in_flight: bool,
}

fn standing(tenants: &HashMap<i64, Load>, tenant: i64, now: Instant) -> Standing {
    let usage = tenants.get(&tenant).map_or(0.0, |load| load.usage_at(now));
    let (mut heaviest_other, mut lighter_in_flight) = (0.0, false);
    for (_, other) in tenants.iter().filter(|(id, _)| **id != tenant) {
        let other_usage = other.usage_at(now);
        heaviest_other = f64::max(heaviest_other, other_usage);
        lighter_in_flight |= other.in_flight > 0 && is_lighter(other_usage, usage);
    }
    Standing {
        usage,
        heaviest_other,
        lighter_in_flight,
    }
}

/// A request waiting for its tenant's share, counted in the tenant's usage until dropped
/// (admitted, or given up by its client).
struct Waiting {
    share: FairShare,
    tenant: i64,
}

impl Waiting {
    fn start(share: &FairShare, tenant: i64) -> Waiting {
        share.count_waiting(tenant, 1);
        Waiting {
            share: share.clone(),
            tenant,
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.share.count_waiting(self.tenant, -1);
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut tenants = self.share.tenants.lock().expect("fair share");
        if let Some(load) = tenants.get_mut(&self.tenant) {
            let now = Instant::now();
            load.settle(now);
            load.in_flight -= 1;
            load.last_active = now;
            // Every waiter checks again: the share may have grown since they began waiting.
            // A waiter counts itself (`Waiting`) before it checks its share the last time, so
            // a tenant with none counted has nobody to wake.
            if load.waiting > 0 {
                load.ended.notify_waiters();
            }
            // Heavier tenants' requests may wait for this tenant to have none in flight.
            if load.in_flight == 0 {
                for other in tenants.values().filter(|other| other.waiting > 0) {
                    other.ended.notify_waiters();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_alone_is_never_limited() {
        assert_eq!(share(2, 1, false), None);
        assert_eq!(share(0, 5, false), None);
        assert_eq!(share(2, 1, true), None);
    }

    #[test]
    fn busy_tenants_split_the_capacity_and_keep_at_least_one() {
        assert_eq!(share(8, 2, false), Some(4));
        assert_eq!(share(2, 2, false), Some(1));
        assert_eq!(share(2, 7, false), Some(1));
    }

    #[test]
    fn a_clearly_lighter_tenant_gets_twice_its_share() {
        assert_eq!(share(2, 2, true), Some(2));
        assert_eq!(share(8, 3, true), Some(4));
        assert!(is_lighter(0.3, 1.0));
        assert!(!is_lighter(0.5, 1.0));
        assert!(!is_lighter(0.0, LOADING / 2.0));
    }

    #[test]
    fn usage_is_time_in_flight_and_decays() {
        let start = Instant::now();
        let mut load = Load::new(start);
        load.in_flight = 2;
        let usage = load.usage_at(start + Duration::from_millis(500));
        assert!((usage - 1.0).abs() < 1e-9, "{usage}");
        load.settle(start + Duration::from_millis(500));
        load.in_flight = 0;
        let later = load.usage_at(start + Duration::from_millis(500) + USAGE_HALF_LIFE);
        assert!((later - 0.5).abs() < 1e-9, "{later}");
    }

    fn waiting(fair: &FairShare, tenant: i64) -> tokio::task::JoinHandle<Admitted> {
        let fair = fair.clone();
        tokio::spawn(async move { fair.admit(tenant).await })
    }

    /// Admits a request of `tenant` and keeps it in flight long enough to count as
    /// [`LOADING`] the process.
    async fn loading(fair: &FairShare, tenant: i64) -> Admitted {
        let admitted = fair.admit(tenant).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        admitted
    }

    async fn admitted_soon(request: tokio::task::JoinHandle<Admitted>) -> Admitted {
        tokio::time::timeout(Duration::from_secs(1), request)
            .await
            .expect("admitted")
            .unwrap()
    }

    #[tokio::test]
    async fn a_tenant_over_its_share_waits_for_its_own_requests_only() {
        let fair = FairShare::new(2);
        let a1 = fair.admit(1).await;
        let b1 = fair.admit(2).await;
        // Two busy tenants share two slots, one each.
        let a2 = waiting(&fair, 1);
        let b2 = waiting(&fair, 2);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!a2.is_finished() && !b2.is_finished());
        // B's request ending lets B's next one in, not A's.
        drop(b1);
        let _b2 = admitted_soon(b2).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!a2.is_finished());
        drop(a1);
        let _a2 = admitted_soon(a2).await;
    }

    #[tokio::test]
    async fn a_light_tenant_runs_a_second_request_beside_a_flooding_one() {
        let fair = FairShare::new(2);
        // A has had a request in flight for a while; B has just come.
        let _a1 = loading(&fair, 1).await;
        let _b1 = fair.admit(2).await;
        let _b2 = admitted_soon(waiting(&fair, 2)).await;
        // Both are at their share now: B at its doubled one, A at its one.
        let a2 = waiting(&fair, 1);
        let b3 = waiting(&fair, 2);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!a2.is_finished() && !b3.is_finished());
    }

    #[tokio::test]
    async fn a_heavy_tenant_starts_nothing_while_a_lighter_one_has_a_request_in_flight() {
        let fair = FairShare::new(8);
        let _a1 = loading(&fair, 1).await;
        let b1 = fair.admit(2).await;
        // A's share would be four, but B is lighter and has a request in flight.
        let a2 = waiting(&fair, 1);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!a2.is_finished());
        drop(b1);
        let _a2 = admitted_soon(a2).await;
    }

    #[tokio::test]
    async fn a_held_back_flood_never_looks_lighter_than_the_tenant_it_gives_way_to() {
        let fair = FairShare::new(2);
        let a1 = loading(&fair, 1).await;
        // B is lighter and busy; A's flood waits for it, and A's one request ends.
        let _b1 = fair.admit(2).await;
        let flood: Vec<_> = (0..4).map(|_| waiting(&fair, 1)).collect();
        drop(a1);
        tokio::time::sleep(Duration::from_millis(150)).await;
        // A has nothing in flight now, but four requests waiting: still the heavier one, so B's
        // next request runs beside its first.
        let _b2 = admitted_soon(waiting(&fair, 2)).await;
        assert!(flood.iter().all(|request| !request.is_finished()));
    }

    #[tokio::test]
    async fn only_a_lighter_tenant_in_flight_is_given_way_to() {
        let fair = FairShare::new(0);
        let _a1 = loading(&fair, 1).await;
        let b1 = fair.admit(2).await;
        assert!(fair.lighter_in_flight(1));
        assert!(!fair.lighter_in_flight(2));
        drop(b1);
        assert!(!fair.lighter_in_flight(1));
    }

    #[tokio::test]
    async fn a_request_waits_no_longer_than_the_patience() {
        let fair = FairShare::new(2);
        let _a1 = fair.admit(1).await;
        let _b1 = fair.admit(2).await;
        // A's first request never ends; its second runs anyway once its patience is over.
        let a2 = waiting(&fair, 1);
        tokio::time::sleep(PATIENCE / 2).await;
        assert!(!a2.is_finished());
        let _a2 = admitted_soon(a2).await;
    }

    #[tokio::test]
    async fn a_tenant_alone_runs_as_many_as_it_sends() {
        let fair = FairShare::new(2);
        let mut admitted = Vec::new();
        for _ in 0..10 {
            admitted.push(
                tokio::time::timeout(Duration::from_millis(100), fair.admit(1))
                    .await
                    .expect("never waits alone"),
            );
        }
    }
}
