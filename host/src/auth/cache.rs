//! A short-lived cache of token lookups, so that a request with a known token needs no
//! database round trip. An entry is dropped when it is older than the configured time or when
//! this process has committed a write to the tenant's users, identities or tokens since it was
//! read (the store publishes those through `TenantDb::auth_changed`), so a revoked token or a
//! blocked user stops working at once here, and on the other processes sharing the database
//! as soon as they hear the store's announcement (`invalidation`); the cache time bounds only
//! how long a lost announcement leaves them stale.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::model::user_admin::IdentityRow;
use crate::model::users::UserRow;
use crate::store::TenantDb;
use crate::store::oauth::OauthTokenWithUser;
use crate::store::tokens::TokenWithUser;

/// A token as authentication needs it; the owner is shared so a cache hit copies nothing.
#[derive(Debug)]
pub struct KnownToken {
    pub id: i64,
    pub scopes: String,
    pub revoked: bool,
    pub expires_at: Option<String>,
    /// OAuth access tokens expire at an instant (milliseconds) rather than on a date.
    pub expires_at_ms: Option<i64>,
    /// An OAuth access token (its id is in `oauth_access_tokens`, not the personal tokens).
    pub oauth: bool,
    pub last_used_at: Option<i64>,
    pub user: Arc<UserRow>,
    /// The owner's identities, read on first use (see `Caller::identities`).
    pub owner_identities: OnceLock<Arc<[IdentityRow]>>,
}

impl KnownToken {
    /// The token's scopes (stored space-separated).
    pub fn scope_list(&self) -> impl Iterator<Item = &str> {
        self.scopes.split_whitespace()
    }

    /// Whether the token has expired (personal tokens on their date, OAuth tokens at their
    /// instant).
    pub fn is_expired(&self) -> bool {
        self.expires_at
            .as_deref()
            .is_some_and(|expires| expires <= crate::model::today().as_str())
            || self
                .expires_at_ms
                .is_some_and(|at| at <= crate::model::now_ms())
    }
}

impl From<TokenWithUser> for KnownToken {
    fn from(row: TokenWithUser) -> Self {
        KnownToken {
            id: row.t_id,
            scopes: row.t_scopes,
            revoked: row.t_revoked,
            expires_at: row.t_expires_at,
            expires_at_ms: None,
            oauth: false,
            last_used_at: row.t_last_used_at,
            user: Arc::new(row.user),
            owner_identities: OnceLock::new(),
        }
    }
}

impl From<OauthTokenWithUser> for KnownToken {
    fn from(row: OauthTokenWithUser) -> Self {
        KnownToken {
            id: row.t_id,
            scopes: row.t_scopes,
            revoked: row.t_revoked_at.is_some(),
            expires_at: None,
            expires_at_ms: row.t_expires_at,
            oauth: true,
            last_used_at: None,
            user: Arc::new(row.user),
            owner_identities: OnceLock::new(),
        }
    }
}

/// A personal (or impersonation) token by digest, else an OAuth access token.
async fn load(db: &TenantDb, digest: &str) -> crate::store::Result<Option<Arc<KnownToken>>> {
    if let Some(row) = db.token_with_user(digest).await? {
        return Ok(Some(Arc::new(row.into())));
    }
    Ok(db
        .oauth_token_with_user(digest)
        .await?
        .map(|row| Arc::new(row.into())))
}

/// Above this many entries the cache is cleared rather than grown.
const MAX_ENTRIES: usize = 100_000;

struct Entry {
    loaded: Instant,
    generation: u64,
    found: Option<Arc<KnownToken>>,
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
    ) -> crate::store::Result<Option<Arc<KnownToken>>> {
        if self.ttl.is_zero() {
            return load(db, digest).await;
        }
        let key = (db.tenant_id(), digest.to_string());
        let generation = db.auth_generation();
        if let Some(entry) = self.entries.lock().expect("token cache").get(&key)
            && entry.generation == generation
            && entry.loaded.elapsed() < self.ttl
        {
            return Ok(entry.found.clone());
        }
        let found = load(db, digest).await?;
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
