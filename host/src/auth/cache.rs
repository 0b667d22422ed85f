//! A short-lived cache of token lookups, so that a request with a known token needs no
//! database round trip. An entry is dropped when it is older than the configured time or when
//! this process has written anything to the database since it was read (a revoked token or a
//! blocked user stops working at once here); other processes sharing PostgreSQL see such a
//! change within the cache time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::store::TenantDb;
use crate::store::tokens::TokenWithUser;

/// Above this many entries the cache is cleared rather than grown.
const MAX_ENTRIES: usize = 100_000;

struct Entry {
    loaded: Instant,
    generation: u64,
    found: Option<Arc<TokenWithUser>>,
}

pub struct TokenCache {
    ttl: Duration,
    entries: Mutex<HashMap<(i64, String), Entry>>,
}

impl TokenCache {
    /// A zero `ttl` turns the cache off.
    pub fn new(ttl: Duration) -> Self {
        TokenCache {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    pub async fn lookup(
        &self,
        db: &TenantDb,
        digest: &str,
    ) -> sqlx::Result<Option<Arc<TokenWithUser>>> {
        if self.ttl.is_zero() {
            return Ok(db.token_with_user(digest).await?.map(Arc::new));
        }
        let key = (db.tenant_id(), digest.to_string());
        let generation = db.write_generation();
        if let Some(entry) = self.entries.lock().expect("token cache").get(&key)
            && entry.generation == generation
            && entry.loaded.elapsed() < self.ttl
        {
            return Ok(entry.found.clone());
        }
        let found = db.token_with_user(digest).await?.map(Arc::new);
        let mut entries = self.entries.lock().expect("token cache");
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert(
            key,
            Entry {
                loaded: Instant::now(),
                generation,
                found: found.clone(),
            },
        );
        Ok(found)
    }
}
