//! The state every handler shares.

use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use metrics_exporter_prometheus::PrometheusHandle;

use crate::auth::cache::TokenCache;
use crate::config::ServeConfig;
use crate::mail::Mailer;
use crate::plugins::Plugins;
use crate::plugins::external_auth::ExternalAuthorization;
use crate::ratelimit::Limiter;
use crate::request_origin::Origin;
use crate::services::push::PushSessions;
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
    /// (`services::push`).
    pub pushes: PushSessions,
    /// Slots for repository imports and mirror updates (`--max-concurrent-imports`).
    pub imports: tokio::sync::Semaphore,
    /// Git transfers' slots, deadlines and idle timeouts (`git_access::transfers`).
    pub transfers: crate::git_access::transfers::Transfers,
    /// Each tenant's share of the requests in flight (`http/fair_share.rs`); long plugin calls
    /// give way to the other tenants it counts.
    pub fair_share: crate::http::fair_share::FairShare,
    /// This process's side of the job queue (`jobs`): its workers' wake-up and slots.
    pub jobs: crate::jobs::JobQueue,
    /// Whether the process is stopping, and what it waits for (`shutdown`).
    pub stopping: crate::shutdown::Stopping,
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

    /// Reads the tenants again, and gives the plugin host their instance quotas.
    pub async fn refresh_tenants(&self) -> anyhow::Result<()> {
        self.tenants.refresh(&self.db).await?;
        self.plugins
            .set_instance_quotas(self.tenants.plugin_instance_quotas());
        Ok(())
    }

    /// The port git over SSH serves tenant `tenant_id` on, if a listener serves it.
    pub fn ssh_port(&self, tenant_id: i64) -> Option<u16> {
        self.config
            .ssh_listen
            .iter()
            .find(|listen| match &listen.tenant_host {
                Some(host) => self.tenants.find(host) == Some(tenant_id),
                None => tenant_id == self.tenants.default_id(),
            })
            .map(|listen| listen.address.port())
    }

    /// The tenant answering exactly `host` (`None`: the default tenant), for transports that
    /// carry no host name (SSH listeners, each bound to one tenant): no fallback to the
    /// default tenant, so a listener for a tenant that does not exist, or is suspended, serves
    /// nobody.
    pub fn tenant_named(&self, host: Option<&str>) -> Option<Tenant> {
        let (id, base_url) = match host {
            Some(host) => (self.tenants.find(host)?, format!("http://{host}")),
            None => (
                self.tenants.default_id(),
                self.config
                    .external_url
                    .as_deref()
                    .unwrap_or("http://localhost")
                    .trim_end_matches('/')
                    .to_string(),
            ),
        };
        if self.tenants.is_suspended(id) {
            return None;
        }
        Some(Tenant {
            id,
            db: self.db.tenant(id),
            base_url,
        })
    }
}

/// Requests this process is serving now (health checks aside), for background work that
/// yields to them (`webhooks::send`).
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

pub fn requests_in_flight() -> usize {
    IN_FLIGHT.load(Ordering::Relaxed)
}

/// Counts a request in [`IN_FLIGHT`] while it lives, however it ends.
pub struct Serving;

impl Serving {
    pub fn start() -> Serving {
        IN_FLIGHT.fetch_add(1, Ordering::Relaxed);
        Serving
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::Relaxed);
    }
}
