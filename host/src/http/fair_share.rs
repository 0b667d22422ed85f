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

/// The requests a tenant may have in flight while `busy` tenants (itself included) are busy;
/// `None` means no limit.
pub fn share(capacity: usize, busy: usize) -> Option<usize> {
    (capacity > 0 && busy > 1).then(|| (capacity / busy).max(1))
}

#[derive(Clone)]
pub struct FairShare {
    capacity: usize,
    tenants: Arc<Mutex<HashMap<i64, Load>>>,
}

struct Load {
    in_flight: usize,
    last_active: Instant,
    /// Wakes this tenant's waiting requests when one of its requests ends.
    ended: Arc<Notify>,
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
        let give_up = tokio::time::Instant::now() + PATIENCE;
        let mut counted = false;
        loop {
            let Some(ended) = self.enter(tenant, false) else {
                return self.admitted(tenant);
            };
            if !counted {
                counted = true;
                metrics::counter!("trellis_fair_share_waits_total", "tenant" => tenant.to_string())
                    .increment(1);
            }
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
        tenants.retain(|_, load| load.in_flight > 0 || now - load.last_active < BUSY_WINDOW);
        let busy = tenants.len() + usize::from(!tenants.contains_key(&tenant));
        let limit = share(self.capacity, busy);
        let load = tenants.entry(tenant).or_insert_with(|| Load {
            in_flight: 0,
            last_active: now,
            ended: Arc::default(),
        });
        load.last_active = now;
        if !anyway && limit.is_some_and(|limit| load.in_flight >= limit) {
            return Some(load.ended.clone());
        }
        load.in_flight += 1;
        None
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut tenants = self.share.tenants.lock().expect("fair share");
        if let Some(load) = tenants.get_mut(&self.tenant) {
            load.in_flight -= 1;
            load.last_active = Instant::now();
            // Every waiter checks again: the share may have grown since they began waiting.
            load.ended.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_alone_is_never_limited() {
        assert_eq!(share(2, 1), None);
        assert_eq!(share(0, 5), None);
    }

    #[test]
    fn busy_tenants_split_the_capacity_and_keep_at_least_one() {
        assert_eq!(share(8, 2), Some(4));
        assert_eq!(share(2, 2), Some(1));
        assert_eq!(share(2, 7), Some(1));
    }

    fn waiting(fair: &FairShare, tenant: i64) -> tokio::task::JoinHandle<Admitted> {
        let fair = fair.clone();
        tokio::spawn(async move { fair.admit(tenant).await })
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
