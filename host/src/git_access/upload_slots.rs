//! A per-tenant cap on concurrent `git upload-pack` runs (clones and fetches over HTTP and
//! SSH) and `git upload-archive` runs (`git archive --remote` over SSH). Each run holds a core
//! while it packs or compresses, so without a cap one tenant's burst of clones takes the
//! machine from every other tenant (50 concurrent clones raised the API's p99 54 times;
//! docs/performance.md). Runs past the cap wait in line, as Gitaly's concurrency limiter
//! queues them, and are refused when their wait runs out.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// What a fetch refused for the cap shows (Gitaly answers `ResourceExhausted`).
pub const TOO_MANY: &str =
    "Too many clones and fetches of this instance's repositories are running; try again later.";

pub struct UploadSlots {
    per_tenant: usize,
    wait: Duration,
    slots: Mutex<HashMap<i64, Arc<Semaphore>>>,
}

impl UploadSlots {
    pub fn new(per_tenant: usize, wait: Duration) -> UploadSlots {
        UploadSlots {
            per_tenant: per_tenant.max(1),
            wait,
            slots: Mutex::default(),
        }
    }

    /// A slot of `tenant_id`'s, held until dropped; `None` when none freed within the wait.
    pub async fn acquire(&self, tenant_id: i64) -> Option<OwnedSemaphorePermit> {
        let slots = {
            let mut all = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            all.entry(tenant_id)
                .or_insert_with(|| Arc::new(Semaphore::new(self.per_tenant)))
                .clone()
        };
        tokio::time::timeout(self.wait, slots.acquire_owned())
            .await
            .ok()?
            .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_tenant_waits_for_its_own_slots_only() {
        let slots = UploadSlots::new(1, Duration::from_millis(50));
        let held = slots.acquire(1).await.expect("a free slot");
        assert!(slots.acquire(1).await.is_none(), "the cap holds");
        assert!(
            slots.acquire(2).await.is_some(),
            "another tenant is not held up"
        );
        drop(held);
        assert!(slots.acquire(1).await.is_some(), "a freed slot is taken");
    }
}
