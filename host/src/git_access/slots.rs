//! Per-tenant caps on concurrent git transfers: fetches (`git upload-pack` over HTTP and SSH,
//! `git upload-archive`, the REST archive endpoint) and pushes (`git receive-pack`). Each run
//! holds a core or a few megabytes while it packs, indexes or compresses, so without a cap one
//! tenant's burst of clones takes the machine from every other tenant (50 concurrent clones
//! raised the API's p99 54 times; docs/performance.md), and 60 stalled pushes held 60
//! `receive-pack` processes. Runs past the cap wait in line, as Gitaly's concurrency limiter
//! queues them, and are refused when their wait runs out.
//!
//! Within a tenant, slots are shared fairly between the callers that want them (client
//! addresses for fetches, users for pushes): a caller holds at most its own cap, and while
//! several callers want slots each may hold at most its share of the tenant's, so one address
//! that opens clones it never finishes cannot hold every slot of the tenant.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

/// What a fetch refused for the cap shows (Gitaly answers `ResourceExhausted`).
pub const TOO_MANY: &str =
    "Too many clones and fetches of this instance's repositories are running; try again later.";
/// What a push refused for the cap shows.
pub const TOO_MANY_PUSHES: &str =
    "Too many pushes to this instance's repositories are running; try again later.";

pub struct Slots<K> {
    per_tenant: usize,
    per_caller: usize,
    wait: Duration,
    tenants: Arc<Mutex<HashMap<i64, TenantSlots<K>>>>,
}

struct TenantSlots<K> {
    in_use: usize,
    /// Each caller's slots held and runs waiting; a caller with neither is removed.
    callers: HashMap<K, Demand>,
    freed: Arc<Notify>,
}

#[derive(Default)]
struct Demand {
    held: usize,
    waiting: usize,
}

impl<K: Eq + Hash + Clone + Send + 'static> Slots<K> {
    /// `per_tenant` slots for each tenant, at most `per_caller` of them for one caller; a run
    /// waits `wait` for a slot at the most.
    pub fn new(per_tenant: usize, per_caller: usize, wait: Duration) -> Slots<K> {
        Slots {
            per_tenant: per_tenant.max(1),
            per_caller: per_caller.max(1),
            wait,
            tenants: Arc::default(),
        }
    }

    /// A slot of `tenant_id`'s for `caller`, held until dropped; `None` when none freed
    /// within the wait.
    pub async fn acquire(&self, tenant_id: i64, caller: K) -> Option<Slot> {
        let mut waiting = Waiting {
            slots: self,
            tenant_id,
            caller: caller.clone(),
            armed: true,
        };
        let freed = self.with(tenant_id, |tenant| {
            tenant.callers.entry(caller.clone()).or_default().waiting += 1;
            tenant.freed.clone()
        });
        let taken = tokio::time::timeout(self.wait, async {
            loop {
                let notified = freed.notified();
                let mut notified = std::pin::pin!(notified);
                notified.as_mut().enable();
                if self.with(tenant_id, |tenant| self.try_take(tenant, &caller)) {
                    return;
                }
                notified.await;
            }
        })
        .await
        .is_ok();
        waiting.armed = !taken;
        drop(waiting);
        let tenants = self.tenants.clone();
        taken.then(|| Slot {
            release: Some(Box::new(move || {
                let mut tenants = tenants.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(tenant) = tenants.get_mut(&tenant_id) {
                    tenant.in_use -= 1;
                    forget(tenant, &caller, |demand| demand.held -= 1);
                    tenant.freed.notify_waiters();
                }
            })),
        })
    }

    /// Takes a slot for `caller` (moving one of its runs from waiting to holding) when the
    /// tenant has one free and `caller` is within its share.
    fn try_take(&self, tenant: &mut TenantSlots<K>, caller: &K) -> bool {
        let wanting = tenant.callers.len().max(1);
        let share = (self.per_tenant / wanting).max(1).min(self.per_caller);
        let demand = tenant.callers.entry(caller.clone()).or_default();
        if tenant.in_use >= self.per_tenant || demand.held >= share {
            return false;
        }
        demand.held += 1;
        demand.waiting -= 1;
        tenant.in_use += 1;
        true
    }

    fn with<T>(&self, tenant_id: i64, f: impl FnOnce(&mut TenantSlots<K>) -> T) -> T {
        let mut tenants = self.tenants.lock().unwrap_or_else(|e| e.into_inner());
        let tenant = tenants.entry(tenant_id).or_insert_with(|| TenantSlots {
            in_use: 0,
            callers: HashMap::new(),
            freed: Arc::new(Notify::new()),
        });
        f(tenant)
    }
}

/// A run waiting for a slot: when it gives up (or is dropped while waiting), it stops counting
/// as waiting.
struct Waiting<'a, K: Eq + Hash> {
    slots: &'a Slots<K>,
    tenant_id: i64,
    caller: K,
    /// Still counted as waiting (`try_take` moves a run that got its slot to holding).
    armed: bool,
}

impl<K: Eq + Hash> Drop for Waiting<'_, K> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut tenants = self.slots.tenants.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tenant) = tenants.get_mut(&self.tenant_id) {
            forget(tenant, &self.caller, |demand| demand.waiting -= 1);
            // A caller that stops wanting changes the others' shares.
            tenant.freed.notify_waiters();
        }
    }
}

/// Applies `change` to `caller`'s demand, and forgets a caller that neither holds nor waits.
fn forget<K: Eq + Hash>(tenant: &mut TenantSlots<K>, caller: &K, change: impl FnOnce(&mut Demand)) {
    if let Some(demand) = tenant.callers.get_mut(caller) {
        change(demand);
        if demand.held == 0 && demand.waiting == 0 {
            tenant.callers.remove(caller);
        }
    }
}

/// A held slot, of a fetch or a push; dropping it frees it for the next in line.
pub struct Slot {
    release: Option<Box<dyn FnOnce() + Send>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(release) = self.release.take() {
            release();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_tenant_waits_for_its_own_slots_only() {
        let slots = Slots::new(1, 1, Duration::from_millis(50));
        let held = slots.acquire(1, "a").await.expect("a free slot");
        assert!(slots.acquire(1, "b").await.is_none(), "the cap holds");
        assert!(
            slots.acquire(2, "a").await.is_some(),
            "another tenant is not held up"
        );
        drop(held);
        assert!(
            slots.acquire(1, "b").await.is_some(),
            "a freed slot is taken"
        );
    }

    #[tokio::test]
    async fn one_caller_cannot_hold_every_slot() {
        let slots = Slots::new(4, 2, Duration::from_millis(50));
        let _a1 = slots.acquire(7, "a").await.expect("free");
        let _a2 = slots.acquire(7, "a").await.expect("free");
        assert!(
            slots.acquire(7, "a").await.is_none(),
            "a caller holds its own cap at most"
        );
        let _b = slots
            .acquire(7, "b")
            .await
            .expect("another caller has room");
        assert_eq!(slots.with(7, |t| (t.in_use, t.callers.len())), (3, 2));
    }

    #[tokio::test]
    async fn a_waiting_caller_gets_the_next_freed_slot() {
        let slots = Arc::new(Slots::new(2, 2, Duration::from_secs(5)));
        let a1 = slots.acquire(1, "a").await.expect("free");
        let _b1 = slots.acquire(1, "b").await.expect("free");
        let waiter = {
            let slots = slots.clone();
            tokio::spawn(async move { slots.acquire(1, "c").await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        // "a" may not take a second slot while "c" waits with none: the shares are 2/3 = 0,
        // at least one each.
        let a2 = tokio::time::timeout(Duration::from_millis(50), slots.acquire(1, "a")).await;
        assert!(matches!(a2, Err(_) | Ok(None)));
        drop(a1);
        let _c = waiter
            .await
            .unwrap()
            .expect("the freed slot went to the waiting caller");
        assert_eq!(slots.with(1, |t| t.in_use), 2);
    }
}
