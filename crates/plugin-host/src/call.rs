//! One plugin call: a fresh `Store` from the plugin's `InstancePre`, with the binding's limits,
//! an empty WASI context, and the plugin's config and log buffer as host state.

use std::sync::Arc;
use std::time::{Duration, Instant};

use trellis_outbound::http::{Client, Grant, Request, Response};
use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, Store, Trap, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::give_way::GiveWay;
use crate::limits::{Limits, MAX_BLOB_BYTES_PER_CALL, MAX_LOG_BYTES};
use crate::wit::since_v0_1::LogLevel;

/// Why a call produced no answer. Each becomes an outcome label in the metrics.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum PluginError {
    #[error("the plugin trapped: {0}")]
    Trap(String),
    #[error("the plugin ran out of time")]
    Timeout,
    #[error("the plugin ran out of fuel")]
    OutOfFuel,
    #[error("the plugin ran out of memory")]
    OutOfMemory,
    #[error("too large: {0}")]
    Oversize(String),
    #[error("malformed answer: {0}")]
    Malformed(String),
    /// The plugin answered with an error of its own.
    #[error("the plugin failed: {0}")]
    Failed(String),
    /// The tenant's instance slots stayed taken until the call's deadline.
    #[error("no plugin instance available")]
    Busy,
    /// The bound plugin's binary is missing or no longer compiles.
    #[error("the bound plugin cannot be loaded: {0}")]
    Unavailable(String),
}

impl PluginError {
    pub fn outcome(&self) -> &'static str {
        match self {
            PluginError::Trap(_) => "trap",
            PluginError::Timeout => "timeout",
            PluginError::OutOfFuel => "fuel",
            PluginError::OutOfMemory => "oom",
            PluginError::Oversize(_) => "oversize",
            PluginError::Malformed(_) => "malformed",
            PluginError::Failed(_) => "error",
            PluginError::Busy => "busy",
            PluginError::Unavailable(_) => "unavailable",
        }
    }
}

/// What a plugin gets for calling a WASI function that waits (see `runtime::deny_waiting`).
#[derive(Debug, thiserror::Error)]
#[error("plugins may not wait (wasi:io/poll {0})")]
pub(crate) struct WaitDenied(pub &'static str);

/// Who is calling, for log lines and metrics.
#[derive(Debug, Clone)]
pub struct CallTags {
    pub tenant_id: i64,
    /// `name@version`.
    pub plugin: Arc<str>,
    pub hook: &'static str,
}

/// What a call may reach over `outbound-http`: the binding's grant, the client the hook set up
/// (the instance's address policy, its TLS), and the runtime the blocking call thread hands
/// the request to.
#[derive(Clone)]
pub struct OutboundAccess {
    pub grant: Arc<Grant>,
    pub client: Client,
    pub runtime: tokio::runtime::Handle,
}

/// Host state of one call.
pub struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(super) limiter: MemoryLimiter,
    pub(super) config: Arc<str>,
    tags: CallTags,
    log_bytes: usize,
    log_dropped: usize,
    /// The call's log lines as kept (`level: message`), for reports of trial runs.
    log_lines: Vec<String>,
    outbound: Option<OutboundAccess>,
    /// When the call's wall time runs out (host functions that wait stop then).
    deadline: Instant,
    /// What `push-scan.read-blob` reads: the objects of the push being checked.
    push_objects: Option<Arc<dyn BlobSource>>,
    /// Blob bytes handed to the plugin so far in this call.
    blob_bytes: usize,
}

/// Host resources (streams, pollables, outbound requests) one call may hold at once. They live in
/// the host's memory, outside the plugin's memory limit, so a guest that made them in a loop
/// until its time ran out could otherwise grow the host without bound; a policy call needs a
/// handful.
const MAX_HOST_RESOURCES: usize = 1024;

fn resource_table() -> ResourceTable {
    let mut table = ResourceTable::new();
    table.set_max_capacity(MAX_HOST_RESOURCES);
    table
}

/// Where `push-scan.read-blob` reads: a push's objects, or a trial's sample push.
pub trait BlobSource: Send + Sync {
    /// At most `max` bytes of blob `id`.
    fn read_blob(&self, id: &str, max: usize) -> Result<Vec<u8>, String>;
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl CallState {
    pub fn new(config: Arc<str>, memory_bytes: u64, tags: CallTags) -> Self {
        CallState {
            // No arguments, environment, preopened directories, stdio or network.
            wasi: WasiCtx::builder().build(),
            table: resource_table(),
            limiter: MemoryLimiter::new(memory_bytes),
            config,
            tags,
            log_bytes: 0,
            log_dropped: 0,
            log_lines: Vec::new(),
            outbound: None,
            deadline: Instant::now(),
            push_objects: None,
            blob_bytes: 0,
        }
    }

    /// Lets this call read the blobs of a push (`push-scan.read-blob`).
    pub fn set_push_objects(&mut self, objects: Arc<dyn BlobSource>) {
        self.push_objects = Some(objects);
    }

    /// `push-scan.read-blob`: at most `max` bytes of a blob of the push, within the call's
    /// [`MAX_BLOB_BYTES_PER_CALL`] and its wall time (checked before each read: host code is
    /// not interrupted by the epoch deadline, and one capped read is short).
    pub fn read_blob(&mut self, id: &str, max: usize) -> Result<Vec<u8>, String> {
        let Some(objects) = &self.push_objects else {
            return Err("no push is being checked".into());
        };
        if Instant::now() >= self.deadline {
            return Err("the call is out of time".into());
        }
        let room = MAX_BLOB_BYTES_PER_CALL.saturating_sub(self.blob_bytes);
        if room == 0 {
            return Err(format!(
                "this call has read its {MAX_BLOB_BYTES_PER_CALL} bytes of blobs"
            ));
        }
        let content = objects.read_blob(id, max.min(room))?;
        self.blob_bytes += content.len();
        Ok(content)
    }

    /// Grants `outbound-http` for this call, which must end by `deadline`.
    pub fn with_outbound(mut self, outbound: Option<OutboundAccess>, deadline: Instant) -> Self {
        self.outbound = outbound;
        self.deadline = deadline;
        self
    }

    /// `outbound-http.send`: runs the request on the async runtime from this blocking call
    /// thread, within the call's remaining time (epochs do not interrupt host code).
    pub fn send_http(&mut self, request: Request) -> Result<Response, String> {
        let Some(access) = &self.outbound else {
            return Err("outbound HTTP is not granted to this plugin binding".into());
        };
        let send = access.client.send(&access.grant, request, self.deadline);
        access.runtime.block_on(send)
    }

    /// A plugin log line, tagged with tenant and plugin; at most [`MAX_LOG_BYTES`] per call.
    pub fn log(&mut self, level: LogLevel, message: &str) {
        let room = MAX_LOG_BYTES.saturating_sub(self.log_bytes);
        if room == 0 {
            self.log_dropped += message.len();
            return;
        }
        let mut end = message.len().min(room);
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        let line = &message[..end];
        self.log_bytes += line.len().max(1);
        self.log_dropped += message.len() - end;
        self.log_lines
            .push(format!("{}: {line}", level_name(level)));
        let (tenant, plugin, hook) = (self.tags.tenant_id, &*self.tags.plugin, self.tags.hook);
        match level {
            LogLevel::Trace => tracing::trace!(tenant, plugin, hook, "plugin: {line}"),
            LogLevel::Debug => tracing::debug!(tenant, plugin, hook, "plugin: {line}"),
            LogLevel::Info => tracing::info!(tenant, plugin, hook, "plugin: {line}"),
            LogLevel::Warn => tracing::warn!(tenant, plugin, hook, "plugin: {line}"),
            LogLevel::Error => tracing::error!(tenant, plugin, hook, "plugin: {line}"),
        }
    }

    fn finish_log(&mut self) -> Vec<String> {
        if self.log_dropped > 0 {
            let (tenant, plugin, hook) = (self.tags.tenant_id, &*self.tags.plugin, self.tags.hook);
            tracing::warn!(
                tenant,
                plugin,
                hook,
                dropped_bytes = self.log_dropped,
                "plugin log output over 1 KiB per call was dropped"
            );
            self.log_lines
                .push(format!("({} bytes over 1 KiB dropped)", self.log_dropped));
        }
        std::mem::take(&mut self.log_lines)
    }
}

/// Refuses memory growth beyond the binding's limit, remembering the peak and whether it
/// refused (so the trap that follows reads as out-of-memory).
pub(crate) struct MemoryLimiter {
    max: usize,
    pub peak: usize,
    pub refused: bool,
}

impl MemoryLimiter {
    fn new(max: u64) -> Self {
        MemoryLimiter {
            max: usize::try_from(max).unwrap_or(usize::MAX),
            peak: 0,
            refused: false,
        }
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max {
            self.refused = true;
            return Ok(false);
        }
        self.peak = self.peak.max(desired);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }
}

fn level_name(level: LogLevel) -> &'static str {
    match level {
        LogLevel::Trace => "trace",
        LogLevel::Debug => "debug",
        LogLevel::Info => "info",
        LogLevel::Warn => "warn",
        LogLevel::Error => "error",
    }
}

/// What a finished call cost, and what the plugin logged.
#[derive(Debug, Clone, Default)]
pub struct CallStats {
    pub elapsed: Duration,
    pub fuel: u64,
    pub peak_memory: usize,
    pub log: Vec<String>,
}

/// Fuel given when the binding sets no limit: effectively unbounded (wall time still is).
const UNLIMITED_FUEL: u64 = u64::MAX / 2;

/// Prepares a store with the limits set. At each tick of the epoch past the deadline (wall
/// time from now) the call traps as out of time; before it, a long call may give way to other
/// tenants (`give_way.rs`).
pub(crate) fn store(
    engine: &wasmtime::Engine,
    state: CallState,
    limits: &Limits,
    give_way: Option<GiveWay>,
) -> Store<CallState> {
    let tenant = state.tags.tenant_id;
    let mut store = Store::new(engine, state);
    store.limiter(|s| &mut s.limiter);
    let started = Instant::now();
    let deadline = started + Duration::from_millis(limits.timeout_ms);
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |_| {
        if Instant::now() >= deadline {
            return Err(Trap::Interrupt.into());
        }
        if let Some(give_way) = &give_way {
            give_way.at_tick(tenant, started, deadline);
        }
        Ok(UpdateDeadline::Continue(1))
    });
    // Fuel is always on in the engine (so it can be measured); set a budget.
    let _ = store.set_fuel(limits.fuel.unwrap_or(UNLIMITED_FUEL));
    store
}

/// Runs `f` on a prepared store and classifies what went wrong.
pub(crate) fn run<R>(
    mut store: Store<CallState>,
    limits: &Limits,
    f: impl FnOnce(&mut Store<CallState>) -> wasmtime::Result<Result<R, String>>,
) -> (Result<R, PluginError>, CallStats) {
    let start = Instant::now();
    let result = f(&mut store);
    let elapsed = start.elapsed();
    let budget = limits.fuel.unwrap_or(UNLIMITED_FUEL);
    let fuel = budget.saturating_sub(store.get_fuel().unwrap_or(budget));
    let state = store.data_mut();
    let log = state.finish_log();
    let stats = CallStats {
        elapsed,
        fuel,
        peak_memory: state.limiter.peak,
        log,
    };
    let result = match result {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(message)) => Err(PluginError::Failed(truncate(message))),
        Err(error) => Err(classify(&error, state.limiter.refused)),
    };
    (result, stats)
}

fn classify(error: &wasmtime::Error, memory_refused: bool) -> PluginError {
    if let Some(denied) = error.downcast_ref::<WaitDenied>() {
        return PluginError::Trap(denied.to_string());
    }
    match error.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => PluginError::Timeout,
        Some(Trap::OutOfFuel) => PluginError::OutOfFuel,
        _ if memory_refused => PluginError::OutOfMemory,
        Some(trap) => PluginError::Trap(trap.to_string()),
        // Not a trap: the answer could not be lifted (bad UTF-8, out-of-bounds pointers...) or
        // the instance not created.
        None => PluginError::Malformed(truncate(format!("{error:#}"))),
    }
}

fn truncate(mut message: String) -> String {
    const MAX: usize = 500;
    if message.len() > MAX {
        let mut end = MAX;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push('…');
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_holds_a_bounded_number_of_host_resources() {
        let mut table = resource_table();
        for _ in 0..MAX_HOST_RESOURCES {
            table.push(()).expect("within the cap");
        }
        assert!(table.push(()).is_err(), "past the cap");
    }
}
