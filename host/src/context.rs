//! The state every handler shares.

use std::ops::Deref;
use std::sync::Arc;

use metrics_exporter_prometheus::PrometheusHandle;

use crate::auth::cache::TokenCache;
use crate::config::ServeConfig;
use crate::mail::Mailer;
use crate::plugins::Plugins;
use crate::plugins::external_auth::ExternalAuthorization;
use crate::ratelimit::Limiter;
use crate::request_origin::Origin;
use crate::services::git_push::PushSessions;
use crate::settings::{SecretKey, SettingsCache};
use crate::store::Db;
use crate::tenants::{Tenant, TenantRegistry};

#[derive(Clone)]
pub struct ApiContext(Arc<Inner>);

pub struct Inner {
    pub db: Db,
    pub tenants: TenantRegistry,
    pub settings: SettingsCache,
    pub tokens: TokenCache,
    /// Encrypts write-only settings at rest.
    pub secret_key: SecretKey,
    pub mailer: Mailer,
    pub config: ServeConfig,
    pub metrics: PrometheusHandle,
    /// Rate-limit counters (see `ratelimit`).
    pub limiter: Limiter,
    /// Policy plugins bound to hooks (see `plugins`).
    pub plugins: Arc<Plugins>,
    /// GitLab's external authorization of project access, with its recent decisions.
    pub external_auth: ExternalAuthorization,
    /// Pushes in progress, for their `pre-receive` hooks to call back about
    /// (`services::git_push`).
    pub pushes: PushSessions,
}

impl Deref for ApiContext {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl ApiContext {
    pub fn new(inner: Inner) -> Self {
        ApiContext(Arc::new(inner))
    }

    /// The tenant `origin`'s host names. Its base URL (links in views, mails, the OIDC issuer)
    /// is the configured external URL for the default tenant when one is set; otherwise the
    /// request's scheme with its checked, lower-cased `host[:port]` (see
    /// `request_origin::canonical_host`), whose name is the one the tenant was found by.
    pub fn tenant_for(&self, origin: &Origin) -> Tenant {
        let id = self.tenants.resolve(&origin.host_name());
        let base_url = match &self.config.external_url {
            Some(url) if id == self.tenants.default_id() => url.trim_end_matches('/').to_string(),
            _ => origin.base_url(),
        };
        Tenant {
            id,
            db: self.db.tenant(id),
            base_url,
        }
    }
}
