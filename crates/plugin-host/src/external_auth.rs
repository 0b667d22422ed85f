//! GitLab's external authorization (`Gitlab::ExternalAuthorization`): when
//! `external_authorization_service_enabled` is on, access to a project with a classification
//! label (its own, else `external_authorization_service_default_label`) is decided by the
//! tenant's `external_authorization` plugin. An administrator's binding of that hook is used
//! when there is one; otherwise the host binds the built-in plugin itself, configured from the
//! settings (URL, timeout) and granted the service URL's origin, so turning the setting on is
//! enough, as in GitLab.
//!
//! Decisions are cached per tenant, user and label for [`CACHE_TTL`]; the key carries the
//! settings' `updated_at`, so changing any setting drops every earlier decision. Failures
//! (timeout, refused address, broken plugin) are refusals and are not cached.
//!
//! The service's client certificate (`external_auth_client_cert`, `_key`, `_key_pass`) is
//! presented on this hook's HTTPS requests only; a certificate or key that cannot be used
//! refuses those requests (fail closed) rather than connecting without it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use trellis_outbound::AddressPolicy;
use trellis_outbound::http::{Client, Grant, Origin};
use trellis_outbound::tls::Tls;

use crate::builtin::EXTERNAL_AUTHORIZATION;
use crate::call::{CallStats, PluginError};
use crate::hooks::{FailurePolicy, Hook};
use crate::registry::{Binding, Plugins};
use crate::settings::PluginSettings;
use crate::wit::since_v0_1::{self as v0_1, AuthorizationRequest};

pub use crate::wit::since_v0_1::User;

/// How long an answer of the service is reused (GitLab: six hours; shorter here so a changed
/// decision of the service shows within a minute).
pub(crate) const CACHE_TTL: Duration = Duration::from_secs(60);

/// Entries beyond this are dropped all at once (a bound on memory, not an LRU).
const CACHE_MAX: usize = 100_000;

/// GitLab's message when the service refuses without a reason.
pub(crate) const DEFAULT_REASON: &str = "External authorization denied access to this project";

/// Who asks, as the service is told.
#[derive(Debug, Clone)]
pub struct Subject {
    pub user: v0_1::User,
    pub email: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub reason: String,
}

impl Decision {
    fn refused(reason: impl Into<String>) -> Decision {
        let reason = reason.into();
        Decision {
            allowed: false,
            reason: if reason.is_empty() {
                DEFAULT_REASON.to_string()
            } else {
                reason
            },
        }
    }
}

type Key = (i64, i64, String, i64);

/// Recent decisions, and each tenant's TLS set up from its client certificate settings (kept
/// until the settings change: an encrypted key costs a key derivation to read).
#[derive(Default)]
struct DecisionCache {
    entries: Mutex<HashMap<Key, (Instant, Decision)>>,
    tls: Mutex<HashMap<i64, (i64, Tls)>>,
}

impl DecisionCache {
    fn get(&self, key: &Key) -> Option<Decision> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let (at, decision) = entries.get(key)?;
        (at.elapsed() < CACHE_TTL).then(|| decision.clone())
    }

    fn put(&self, key: Key, decision: Decision) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= CACHE_MAX {
            entries.clear();
        }
        entries.insert(key, (Instant::now(), decision));
    }

    /// The TLS of `tenant_id`'s calls to the service: its client certificate when one is set.
    fn tls<S: PluginSettings>(
        &self,
        tenant_id: i64,
        settings: &S,
        secret_key: &S::SecretKey,
    ) -> Tls {
        let cert = settings.external_auth_client_cert().unwrap_or_default();
        if cert.trim().is_empty() {
            return Tls::system();
        }
        let mut cached = self.tls.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((at, tls)) = cached.get(&tenant_id)
            && *at == settings.updated_at()
        {
            return tls.clone();
        }
        let tls = Tls::with_client_certificate(
            &cert,
            &settings
                .external_auth_client_key(secret_key)
                .unwrap_or_default(),
            &settings
                .external_auth_client_key_pass(secret_key)
                .unwrap_or_default(),
        );
        if let Some(error) = tls.error() {
            tracing::warn!(
                tenant = tenant_id,
                error,
                "the external authorization client certificate cannot be used"
            );
        }
        cached.insert(tenant_id, (settings.updated_at(), tls.clone()));
        tls
    }
}

/// The label the check is made for: the project's, else the default; `None` when external
/// authorization is off or there is no label (GitLab checks only labelled projects).
pub fn label_for(settings: &impl PluginSettings, project_label: &str) -> Option<String> {
    if !enabled(settings) {
        return None;
    }
    let label = match project_label.trim() {
        "" => settings
            .external_authorization_service_default_label()
            .unwrap_or_default(),
        own => own.to_string(),
    };
    (!label.trim().is_empty()).then_some(label)
}

/// Whether project access is decided by the service at all.
pub fn enabled(settings: &impl PluginSettings) -> bool {
    settings.external_authorization_service_enabled()
}

/// The service as this process asks it: through the plugin host, remembering decisions.
pub struct ExternalAuthorization {
    plugins: Arc<Plugins>,
    cache: DecisionCache,
    /// The operator's `--outbound-allow-networks`.
    outbound_networks: Vec<String>,
}

impl ExternalAuthorization {
    pub fn new(plugins: Arc<Plugins>, outbound_networks: Vec<String>) -> ExternalAuthorization {
        ExternalAuthorization {
            plugins,
            cache: DecisionCache::default(),
            outbound_networks,
        }
    }

    /// May `subject` (`None`: anonymous, always refused) access projects labelled `label`?
    /// `identities` (provider, extern_uid) are loaded only when the service is asked.
    pub async fn decide<S: PluginSettings>(
        &self,
        tenant_id: i64,
        settings: &S,
        secret_key: &S::SecretKey,
        subject: Option<&Subject>,
        label: &str,
        identities: impl Future<Output = Vec<(String, String)>>,
    ) -> Decision {
        let plugins = &*self.plugins;
        let Some(subject) = subject else {
            return Decision::refused(DEFAULT_REASON);
        };
        let key = (
            tenant_id,
            subject.user.id as i64,
            label.to_string(),
            settings.updated_at(),
        );
        if let Some(hit) = self.cache.get(&key) {
            return hit;
        }
        let binding = match binding(plugins, tenant_id, settings).await {
            Ok(binding) => binding,
            Err(reason) => {
                tracing::warn!(
                    tenant = tenant_id,
                    reason,
                    "external authorization unavailable"
                );
                return Decision::refused(reason);
            }
        };
        let request = AuthorizationRequest {
            user: subject.user.clone(),
            user_email: Some(subject.email.clone()),
            identities: identities
                .await
                .into_iter()
                .map(|(provider, extern_uid)| v0_1::Identity {
                    provider,
                    extern_uid,
                })
                .collect(),
            classification_label: label.to_string(),
            project: None,
        };
        let client = Client {
            policy: AddressPolicy::for_hooks_and_services(&self.outbound_networks, settings),
            tls: self.cache.tls(tenant_id, settings, secret_key),
        };
        let (answer, _) = authorize(plugins, &binding, Some(client), request).await;
        match answer {
            Ok(decision) => {
                let decision = if decision.allowed {
                    Decision {
                        allowed: true,
                        reason: String::new(),
                    }
                } else {
                    Decision::refused(decision.reason)
                };
                self.cache.put(key, decision.clone());
                decision
            }
            // Fail closed: GitLab refuses when the service cannot be asked.
            Err(PluginError::Failed(reason)) => Decision::refused(reason),
            Err(error) => Decision::refused(error.to_string()),
        }
    }
}

/// One `authorize` call through `binding` (its outbound HTTP through `client`; none without),
/// and what it cost.
pub(crate) async fn authorize(
    plugins: &Plugins,
    binding: &Arc<Binding>,
    client: Option<Client>,
    request: AuthorizationRequest,
) -> (Result<v0_1::Decision, PluginError>, CallStats) {
    plugins
        .call(binding, client, move |store, compiled| {
            let pre = compiled
                .external_authorization
                .as_ref()
                .ok_or_else(|| wasmtime::Error::msg("not an external-authorization plugin"))?;
            let plugin = pre.instantiate(&mut *store)?;
            plugin
                .trellis_policy_external_authorization()
                .call_authorize(&mut *store, &request)
        })
        .await
}

/// The administrator's binding of the hook, else the built-in plugin bound from the settings.
async fn binding(
    plugins: &Plugins,
    tenant_id: i64,
    settings: &impl PluginSettings,
) -> Result<Arc<Binding>, String> {
    // The setting allows up to 10 s; the operator's --plugin-max-timeout-ms caps it, as it
    // caps every binding.
    let timeout_ms = timeout_ms(settings).min(plugins.maxima.timeout_ms);
    if let Some(bound) = plugins.binding(tenant_id, Hook::ExternalAuthorization) {
        let mut binding = Binding::clone(&bound);
        binding.limits.timeout_ms = binding.limits.timeout_ms.min(timeout_ms);
        return Ok(Arc::new(binding));
    }
    let url = settings
        .external_authorization_service_url()
        .unwrap_or_default();
    let origin = url::Url::parse(&url)
        .ok()
        .and_then(|u| Origin::parse(&u.origin().ascii_serialization()).ok())
        .ok_or("the external authorization service URL is not set or invalid")?;
    let plugin = plugins
        .compile(Arc::from(EXTERNAL_AUTHORIZATION.bytes))
        .await?;
    let mut limits = plugins.maxima.defaults();
    limits.timeout_ms = timeout_ms;
    Ok(Arc::new(Binding {
        tenant_id,
        hook: Hook::ExternalAuthorization,
        plugin: Ok(plugin),
        label: Arc::from(format!(
            "{}@{}",
            EXTERNAL_AUTHORIZATION.name, EXTERNAL_AUTHORIZATION.version
        )),
        config: Arc::from(json!({ "url": url }).to_string()),
        failure_policy: FailurePolicy::FailClosed,
        limits,
        outbound: Some(Arc::new(Grant {
            origins: vec![origin],
        })),
    }))
}

/// `external_authorization_service_timeout` (seconds, GitLab's default 0.5) in milliseconds.
fn timeout_ms(settings: &impl PluginSettings) -> u64 {
    let seconds = settings
        .external_authorization_service_timeout()
        .unwrap_or(0.5);
    ((seconds * 1000.0).round() as u64).max(1)
}
