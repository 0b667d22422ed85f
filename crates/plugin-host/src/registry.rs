//! What is bound where, as every process sees it, and the calls through those bindings.
//!
//! Bindings live in the database; each process keeps a snapshot that the writing process
//! refreshes at once, the others when they hear of the change (the store announces it) or,
//! where nothing announces changes, every [`POLL_INTERVAL`]. A call takes the binding it finds (an `Arc`), so a
//! call in flight finishes on the plugin version it started with. Compiled plugins are kept by
//! sha256 and shared by tenants binding the same binary.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tracing::Instrument;
use trellis_outbound::http::{Client, Grant};
use trellis_store::Db;
use trellis_store::model::plugins::BindingRow;

use crate::builtin;
use crate::call::{self, CallState, CallStats, CallTags, OutboundAccess, PluginError};
use crate::give_way::{GiveWay, Outranked};
use crate::hooks::{FailurePolicy, Hook};
use crate::limits::{Limits, Maxima};
use crate::runtime::{Compiled, Runtime};
use crate::ticker::EPOCH_TICK;
use crate::watch::Watch;

/// How often a process that hears no announcements re-reads the bindings.
pub const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// How long an uploaded plugin may take to compile before the upload is refused.
pub(crate) const UPLOAD_COMPILE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long past a call's deadline its caller waits for the call's thread (starting it,
/// tearing the instance down) before answering that it timed out.
const HOST_GRACE: Duration = Duration::from_millis(100);

/// A plugin bound to a hook of a tenant.
#[derive(Clone)]
pub struct Binding {
    pub tenant_id: i64,
    pub hook: Hook,
    /// The compiled plugin, or why the bound binary cannot be loaded: such a binding stays in
    /// effect, and every call through it fails per the binding's failure policy (a fail-closed
    /// hook must not become a no-op because its plugin went missing).
    pub plugin: Result<Arc<Compiled>, Arc<str>>,
    /// `name@version`, for logs and metrics.
    pub label: Arc<str>,
    pub config: Arc<str>,
    pub failure_policy: FailurePolicy,
    pub limits: Limits,
    /// The origins `outbound-http` may reach (none: not granted).
    pub outbound: Option<Arc<Grant>>,
}

type Snapshot = HashMap<(i64, Hook), Arc<Binding>>;

pub struct Plugins {
    pub runtime: Arc<Runtime>,
    pub maxima: Maxima,
    compiled: Mutex<HashMap<String, Arc<Compiled>>>,
    bindings: RwLock<Arc<Snapshot>>,
    /// The rows the snapshot was built from, to rebuild only on change.
    rows: tokio::sync::Mutex<Vec<BindingRow>>,
    /// Instance slots by tenant and kind of call: the live bindings' calls share the tenant's
    /// cap, and administrators' calls (`validate-config`, trial runs) have slots of their own
    /// (as many, and at least two), so that rebinding away from a plugin that holds every
    /// live slot, or while a trial runs to its deadline, never waits on it.
    slots: Mutex<HashMap<(i64, bool), Arc<Semaphore>>>,
    /// Tenants' own caps on their instances at once (the operator's quota of each), which
    /// only lower `maxima.tenant_instances`.
    instance_quotas: RwLock<HashMap<i64, usize>>,
    /// Uploads compile one at a time per tenant, and a few at a time in all (each compile
    /// holds a core and its memory), so that one tenant's slow uploads delay only its own.
    upload_compiles: Arc<Semaphore>,
    tenant_upload_compiles: Mutex<HashMap<i64, Arc<Semaphore>>>,
    /// The last hour of calls through live bindings, for the admin console.
    pub watch: Watch,
    /// Whom long calls give way to (set once the process serves).
    give_way: OnceLock<GiveWay>,
}

impl Plugins {
    pub fn new(runtime: Arc<Runtime>, maxima: Maxima) -> Arc<Plugins> {
        Arc::new(Plugins {
            runtime,
            maxima,
            compiled: Mutex::default(),
            bindings: RwLock::default(),
            rows: tokio::sync::Mutex::default(),
            slots: Mutex::default(),
            instance_quotas: RwLock::default(),
            upload_compiles: Arc::new(Semaphore::new(
                std::thread::available_parallelism().map_or(2, |n| n.get().max(2)),
            )),
            tenant_upload_compiles: Mutex::default(),
            watch: Watch::default(),
            give_way: OnceLock::new(),
        })
    }

    /// From now on, long calls give way while `outranked` says a tenant that goes before
    /// theirs has a request in flight (`give_way.rs`). Set once; later calls change nothing.
    pub fn give_way_to(&self, outranked: Outranked) {
        let _ = self.give_way.set(GiveWay::new(outranked));
    }

    /// The tenant's binding for a hook: a map lookup, no I/O (no binding, no cost).
    pub fn binding(&self, tenant_id: i64, hook: Hook) -> Option<Arc<Binding>> {
        let snapshot = self.bindings.read().unwrap_or_else(|e| e.into_inner());
        if snapshot.is_empty() {
            return None;
        }
        snapshot.get(&(tenant_id, hook)).cloned()
    }

    /// Compiles a binary once per sha256 (blocking work runs off the executor).
    pub async fn compile(&self, bytes: Arc<[u8]>) -> Result<Arc<Compiled>, String> {
        self.compile_holding(bytes, None).await
    }

    /// Compiles a binary `tenant_id` uploaded: one upload of a tenant's compiles at a time (and
    /// a few in all), and the administrator gets an error after [`UPLOAD_COMPILE_TIMEOUT`]
    /// (Cranelift cannot be interrupted; the compilation goes on holding its permits, so slow
    /// binaries cannot pile up, and only the uploading tenant's next upload waits for it).
    pub async fn compile_upload(
        &self,
        tenant_id: i64,
        bytes: Arc<[u8]>,
    ) -> Result<Arc<Compiled>, String> {
        let tenant_slot = self
            .tenant_upload_compiles
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(tenant_id)
            .or_insert_with(|| Arc::new(Semaphore::new(1)))
            .clone();
        let compile = async {
            let failed = |e: tokio::sync::AcquireError| format!("compilation failed: {e}");
            let tenant_permit = tenant_slot.acquire_owned().await.map_err(failed)?;
            let permit = self
                .upload_compiles
                .clone()
                .acquire_owned()
                .await
                .map_err(failed)?;
            self.compile_holding(bytes, Some((tenant_permit, permit)))
                .await
        };
        tokio::time::timeout(UPLOAD_COMPILE_TIMEOUT, compile)
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "the component did not compile within {} seconds",
                    UPLOAD_COMPILE_TIMEOUT.as_secs()
                ))
            })
    }

    /// Compiles on a blocking thread that holds `permits` until the compilation ends.
    async fn compile_holding(
        &self,
        bytes: Arc<[u8]>,
        permits: Option<(OwnedSemaphorePermit, OwnedSemaphorePermit)>,
    ) -> Result<Arc<Compiled>, String> {
        use sha2::{Digest, Sha256};
        let sha256 = hex::encode(Sha256::digest(&bytes));
        if let Some(found) = self.lock_compiled().get(&sha256) {
            return Ok(found.clone());
        }
        let runtime = self.runtime.clone();
        let compiled = tokio::task::spawn_blocking(move || {
            let _permits = permits;
            runtime.compile(&bytes)
        })
        .await
        .map_err(|e| format!("compilation failed: {e}"))??;
        let compiled = Arc::new(compiled);
        self.lock_compiled().insert(sha256, compiled.clone());
        Ok(compiled)
    }

    fn lock_compiled(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Compiled>>> {
        self.compiled.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Re-reads every tenant's bindings; rebuilds the snapshot when they changed.
    pub async fn refresh(&self, db: &Db) -> anyhow::Result<()> {
        let rows = db.all_plugin_bindings().await?;
        let mut current = self.rows.lock().await;
        if *current == rows {
            return Ok(());
        }
        let mut snapshot = Snapshot::new();
        for row in &rows {
            let Some(hook) = Hook::parse(&row.hook) else {
                continue;
            };
            let plugin = self.load(db, row.tenant_id, &row.sha256).await;
            if let Err(error) = &plugin {
                tracing::error!(
                    tenant = row.tenant_id,
                    hook = row.hook,
                    sha256 = row.sha256,
                    error,
                    "a bound plugin cannot be loaded; the hook fails per its policy"
                );
            }
            let plugin = plugin.map_err(Arc::from);
            snapshot.insert(
                (row.tenant_id, hook),
                Arc::new(self.binding_of(row, hook, plugin)),
            );
        }
        // Compiled plugins nobody binds any more are dropped (built-ins stay warm).
        self.lock_compiled().retain(|sha, _| {
            builtin::by_sha256(sha).is_some() || rows.iter().any(|r| &r.sha256 == sha)
        });
        *self.bindings.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(snapshot);
        *current = rows;
        Ok(())
    }

    fn binding_of(
        &self,
        row: &BindingRow,
        hook: Hook,
        plugin: Result<Arc<Compiled>, Arc<str>>,
    ) -> Binding {
        Binding {
            tenant_id: row.tenant_id,
            hook,
            plugin,
            label: Arc::from(format!(
                "{}@{}",
                row.name,
                row.version.as_deref().unwrap_or("unversioned")
            )),
            config: Arc::from(row.config.as_str()),
            failure_policy: FailurePolicy::parse(&row.failure_policy)
                .unwrap_or(hook.default_policy()),
            limits: Limits {
                timeout_ms: row.timeout_ms.clamp(1, self.maxima.timeout_ms as i64) as u64,
                fuel: row.fuel.map(|f| f.max(1) as u64),
                memory_bytes: (row.memory_bytes.max(1 << 20) as u64).min(self.maxima.memory_bytes),
            },
            outbound: Grant::of_column(row.outbound_http.as_deref()).map(Arc::new),
        }
    }

    /// A catalog entry's compiled plugin (built-in or uploaded).
    pub async fn load(
        &self,
        db: &Db,
        tenant_id: i64,
        sha256: &str,
    ) -> Result<Arc<Compiled>, String> {
        // Every refresh loads every binding of every tenant: a plugin already compiled is
        // found by its catalog digest, without reading its binary from the database and
        // hashing it again on the executor (a few milliseconds per binding, on each change
        // anywhere).
        if let Some(found) = self.lock_compiled().get(sha256) {
            return Ok(found.clone());
        }
        let bytes: Arc<[u8]> = match builtin::by_sha256(sha256) {
            Some(b) => Arc::from(b.bytes),
            None => db
                .tenant(tenant_id)
                .plugin_content(sha256)
                .await
                .map_err(|e| format!("{e:#}"))?
                .ok_or("the plugin's binary is missing")?
                .into(),
        };
        self.compile(bytes).await
    }

    /// Compiles the built-in plugins (or loads them from the cache) so binding one is quick.
    pub(crate) async fn warm_built_ins(&self) {
        for (built_in, _) in builtin::with_digests() {
            if let Err(error) = self.compile(Arc::from(built_in.bytes)).await {
                tracing::error!(
                    plugin = built_in.name,
                    error,
                    "a built-in plugin does not compile"
                );
            }
        }
    }

    /// Re-reads the bindings every `every` for the life of the process. The built-ins warm
    /// beside the polling, not before it: compiling them all on a cold cache takes seconds
    /// (far longer in a debug build), and a binding made meanwhile through another process
    /// would go unseen until then.
    pub async fn poll(self: Arc<Self>, db: Db, every: Duration) {
        tokio::spawn({
            let plugins = self.clone();
            async move { plugins.warm_built_ins().await }
        });
        let mut interval = tokio::time::interval(every);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            interval.tick().await;
            if let Err(error) = self.refresh(&db).await {
                tracing::warn!(
                    error = format!("{error:#}"),
                    "could not refresh plugin bindings"
                );
            }
        }
    }

    /// Replaces the tenants' instance quotas; a tenant whose quota changed gets new slots
    /// (calls already running finish on the old ones).
    pub fn set_instance_quotas(&self, quotas: HashMap<i64, usize>) {
        // Every tenant refresh calls this; it seldom changes anything.
        if *self
            .instance_quotas
            .read()
            .unwrap_or_else(|e| e.into_inner())
            == quotas
        {
            return;
        }
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let mut current = self
            .instance_quotas
            .write()
            .unwrap_or_else(|e| e.into_inner());
        slots.retain(|(tenant, _), _| current.get(tenant) == quotas.get(tenant));
        *current = quotas;
    }

    fn slots(&self, tenant_id: i64, live: bool) -> Arc<Semaphore> {
        let quota = self
            .instance_quotas
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&tenant_id)
            .copied();
        let live_slots = quota
            .map_or(self.maxima.tenant_instances, |quota| {
                quota.min(self.maxima.tenant_instances)
            })
            .max(1);
        let size = if live { live_slots } else { live_slots.max(2) };
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots
            .entry((tenant_id, live))
            .or_insert_with(|| Arc::new(Semaphore::new(size)))
            .clone()
    }

    /// Runs `f` on a fresh instance of the binding's plugin, on a blocking thread, within the
    /// tenant's instance cap; records metrics and a span, and tells what the call cost. A
    /// binding granted `outbound-http` sends through `client` (its address policy and TLS
    /// setup; no outbound HTTP without one).
    pub(crate) async fn call<R: Send + 'static>(
        &self,
        binding: &Arc<Binding>,
        client: Option<Client>,
        f: impl FnOnce(
            &mut wasmtime::Store<CallState>,
            &Compiled,
        ) -> wasmtime::Result<Result<R, String>>
        + Send
        + 'static,
    ) -> (Result<R, PluginError>, CallStats) {
        let outbound = match (&binding.outbound, client) {
            (Some(grant), Some(client)) => Some(OutboundAccess {
                grant: grant.clone(),
                client,
                runtime: tokio::runtime::Handle::current(),
            }),
            _ => None,
        };
        let span = tracing::info_span!(
            "plugin_call",
            tenant = binding.tenant_id,
            plugin = &*binding.label,
            hook = binding.hook.name(),
            outcome = tracing::field::Empty
        );
        // Calls through the tenant's live binding are watched; `validate-config` and trial
        // runs (bindings made for the one call) are not.
        let live = self
            .binding(binding.tenant_id, binding.hook)
            .is_some_and(|current| Arc::ptr_eq(&current, binding));
        let started = Instant::now();
        let (result, stats) = async {
            // Waiting for a slot counts against the call's wall time: a tenant whose plugin
            // loops saturates only its own slots, and its queued calls end by their deadline.
            let deadline = Duration::from_millis(binding.limits.timeout_ms);
            let slots = self.slots(binding.tenant_id, live);
            let Ok(Ok(permit)) = tokio::time::timeout(deadline, slots.acquire_owned()).await else {
                return (Err(PluginError::Busy), CallStats::default());
            };
            let remaining = deadline.saturating_sub(started.elapsed());
            if remaining < EPOCH_TICK {
                return (Err(PluginError::Busy), CallStats::default());
            }
            let mut limits = binding.limits;
            limits.timeout_ms = remaining.as_millis().max(1) as u64;
            let binding = binding.clone();
            let runtime = self.runtime.clone();
            let give_way = self.give_way.get().cloned();
            // The slot goes with the thread: should host code ever outlive the deadline, the
            // tenant's slot stays taken until it ends, so one tenant cannot pile up threads
            // and pool instances beyond its cap.
            let joined = tokio::task::spawn_blocking(move || {
                let _permit = permit;
                invoke_blocking(&runtime, &binding, &limits, outbound, give_way, f)
            });
            // The epoch deadline cannot fire while the plugin is in host code; the caller's
            // wait ends at the deadline whatever the thread does.
            match tokio::time::timeout(remaining + HOST_GRACE, joined).await {
                Err(_) => (Err(PluginError::Timeout), CallStats::default()),
                Ok(joined) => joined.unwrap_or_else(|e| {
                    (
                        Err(PluginError::Trap(format!("host task failed: {e}"))),
                        CallStats::default(),
                    )
                }),
            }
        }
        .instrument(span.clone())
        .await;
        let outcome = match &result {
            Ok(_) => "ok",
            Err(e) => e.outcome(),
        };
        span.record("outcome", outcome);
        record_metrics(binding, outcome, started.elapsed(), &stats);
        if live {
            self.watch
                .record(binding.tenant_id, binding.hook, outcome, started.elapsed());
        }
        if let Err(error) = &result {
            tracing::warn!(parent: &span, error = %error, "plugin call failed");
        }
        (result, stats)
    }

    /// Calls `validate-config` of a plugin (any world) with `config`; used before a binding is
    /// accepted. The outer error is the plugin's rejection or failure, for the administrator.
    pub async fn validate_config(
        &self,
        tenant_id: i64,
        hook: Hook,
        plugin: Arc<Compiled>,
        label: &str,
        config: &str,
        limits: Limits,
    ) -> Result<(), String> {
        let binding = Arc::new(Binding {
            tenant_id,
            hook,
            plugin: Ok(plugin),
            label: Arc::from(label),
            config: Arc::from(config),
            failure_policy: FailurePolicy::FailClosed,
            limits,
            outbound: None,
        });
        let config = config.to_string();
        let (result, _) = self
            .call(&binding, None, move |store, compiled| {
                compiled.validate_config(store, &config)
            })
            .await;
        match result {
            Ok(()) => Ok(()),
            Err(PluginError::Failed(message)) => Err(message),
            Err(error) => Err(format!("validate-config failed: {error}")),
        }
    }
}

/// One call on the current thread, without the tenant cap, metrics or span: what
/// [`Plugins::call`] runs on a blocking thread (and what the benchmark measures).
pub fn invoke_blocking<R>(
    runtime: &Runtime,
    binding: &Binding,
    limits: &Limits,
    outbound: Option<OutboundAccess>,
    give_way: Option<GiveWay>,
    f: impl FnOnce(&mut wasmtime::Store<CallState>, &Compiled) -> wasmtime::Result<Result<R, String>>,
) -> (Result<R, PluginError>, CallStats) {
    let tags = CallTags {
        tenant_id: binding.tenant_id,
        plugin: binding.label.clone(),
        hook: binding.hook.name(),
    };
    let deadline = Instant::now() + Duration::from_millis(limits.timeout_ms);
    let state = CallState::new(binding.config.clone(), limits.memory_bytes, tags)
        .with_outbound(outbound, deadline);
    let plugin = match &binding.plugin {
        Ok(plugin) => plugin,
        Err(why) => {
            return (
                Err(PluginError::Unavailable(why.to_string())),
                CallStats::default(),
            );
        }
    };
    // The epoch advances while the call runs: its deadline is checked at ticks.
    let _running = runtime.ticker.running();
    let store = call::store(&runtime.engine, state, limits, give_way);
    call::run(store, limits, |store| f(store, plugin))
}

fn record_metrics(binding: &Binding, outcome: &'static str, elapsed: Duration, stats: &CallStats) {
    let labels = [
        ("tenant", binding.tenant_id.to_string()),
        ("plugin", binding.label.to_string()),
        ("hook", binding.hook.name().to_string()),
    ];
    let mut with_outcome = labels.to_vec();
    with_outcome.push(("outcome", outcome.to_string()));
    metrics::counter!("trellis_plugin_calls_total", &with_outcome).increment(1);
    metrics::histogram!("trellis_plugin_call_duration_seconds", &labels)
        .record(elapsed.as_secs_f64());
    metrics::counter!("trellis_plugin_fuel_consumed_total", &labels).increment(stats.fuel);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::RuntimeOptions;

    fn plugins(tenant_instances: usize) -> Arc<Plugins> {
        let runtime = Runtime::new(RuntimeOptions {
            cache_dir: None,
            pool_instances: 1,
            max_memory_bytes: 16 << 20,
        })
        .unwrap();
        Plugins::new(
            runtime,
            Maxima {
                tenant_instances,
                ..Maxima::default()
            },
        )
    }

    #[test]
    fn a_tenants_instance_quota_lowers_its_cap_and_only_its_own() {
        let plugins = plugins(4);
        assert_eq!(plugins.slots(7, true).available_permits(), 4);
        plugins.set_instance_quotas(HashMap::from([(7, 1), (8, 9)]));
        assert_eq!(plugins.slots(7, true).available_permits(), 1);
        assert_eq!(
            plugins.slots(8, true).available_permits(),
            4,
            "never above the operator's"
        );
        assert_eq!(plugins.slots(9, true).available_permits(), 4);
        // Administrators' calls keep their own slots, at least two.
        assert_eq!(plugins.slots(7, false).available_permits(), 2);
        let held = plugins.slots(9, true);
        plugins.set_instance_quotas(HashMap::from([(7, 3)]));
        assert_eq!(plugins.slots(7, true).available_permits(), 3);
        assert!(
            Arc::ptr_eq(&held, &plugins.slots(9, true)),
            "unchanged tenants keep theirs"
        );
        plugins.set_instance_quotas(HashMap::new());
        assert_eq!(plugins.slots(7, true).available_permits(), 4);
    }
}
