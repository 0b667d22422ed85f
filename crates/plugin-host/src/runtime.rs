//! The wasmtime engine shared by all tenants: pooling allocator with copy-on-write memory
//! images, epoch interruption driven by a ticker thread while calls run (`ticker.rs`), fuel
//! metering, and compiled code cached on disk as `.cwasm` so a restart does not recompile.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use sha2::{Digest, Sha256};
use wasmtime::component::{Component, InstancePre, Linker};
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::call::{CallState, WaitDenied};
use crate::ticker::Ticker;
use crate::wit::{self, Target};

pub struct RuntimeOptions {
    /// Where compiled code is cached; `None`: no cache (the CLI's one-off runs).
    pub cache_dir: Option<PathBuf>,
    /// Instances the pool holds at once (over all tenants).
    pub pool_instances: u32,
    /// The largest memory any binding may give an instance.
    pub max_memory_bytes: u64,
}

pub struct Runtime {
    pub(crate) engine: Engine,
    /// Advances `engine`'s epoch while a call holds it running.
    pub(crate) ticker: Arc<Ticker>,
    linker: Linker<CallState>,
    cache_dir: Option<PathBuf>,
    /// Identifies the engine's configuration in cache keys.
    engine_hash: String,
}

/// A compiled plugin, ready to instantiate (one per plugin version).
pub struct Compiled {
    pub sha256: String,
    pub target: Target,
    pub(crate) pre: InstancePre<CallState>,
    /// The typed entry points of a spam-check plugin.
    pub(crate) spam_check: Option<wit::since_v0_1::spam_check::SpamCheckPluginPre<CallState>>,
    /// The typed entry points of an external-authorization plugin.
    pub(crate) external_authorization:
        Option<wit::since_v0_1::external_authorization::ExternalAuthorizationPluginPre<CallState>>,
    /// The typed entry points of a push-rules plugin (0.2).
    pub(crate) push_rules: Option<wit::since_v0_2::push_rules::PushRulesPluginPre<CallState>>,
    /// The typed entry points of a webhook-formatter plugin.
    pub(crate) webhook_formatter:
        Option<wit::since_v0_1::webhook_formatter::WebhookFormatterPluginPre<CallState>>,
    /// The plugin imports `outbound-http`: binding it needs a grant.
    pub imports_outbound_http: bool,
    pub(crate) size: usize,
}

impl Runtime {
    pub fn new(options: RuntimeOptions) -> anyhow::Result<Arc<Runtime>> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        config.consume_fuel(true);
        config.memory_init_cow(true);
        let instances = options.pool_instances.max(1);
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(instances)
            .total_core_instances(instances * 8)
            .total_memories(instances * 2)
            .total_tables(instances * 4)
            .max_memory_size(usize::try_from(options.max_memory_bytes).unwrap_or(usize::MAX));
        if PoolingAllocationConfig::is_pagemap_scan_available() {
            // Resetting a slot with madvise costs TLB shootdowns now and a page fault for
            // every page the next instance touches: more than half of a hook call (perf, on
            // the benchmark). With Linux's PAGEMAP_SCAN (6.7+) only the pages a call dirtied
            // in the low 2 MiB (a Rust guest's 1 MiB stack, its data and a small heap) are
            // reset, with memset, and stay resident. Older kernels keep madvise: there the
            // whole 2 MiB would be memset every time.
            pool.pagemap_scan(Enabled::Yes)
                .linear_memory_keep_resident(2 << 20)
                .table_keep_resident(64 << 10);
        }
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&config)
            .map_err(anyhow::Error::from)
            .context("configuring the plugin engine")?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        deny_waiting(&mut linker)?;
        wit::since_v0_1::add_to_linker(&mut linker)?;
        wit::since_v0_2::add_to_linker(&mut linker)?;
        let mut hasher = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let engine_hash = format!("{:016x}", hasher.finish());
        if let Some(dir) = &options.cache_dir {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("creating the plugin cache {}", dir.display()))?;
        }
        let runtime = Arc::new(Runtime {
            ticker: Ticker::start(&engine),
            engine,
            linker,
            cache_dir: options.cache_dir,
            engine_hash,
        });
        Ok(runtime)
    }

    /// Compiles (or loads from the cache) and links a component. Errors are for the
    /// administrator: not a component, no known world, imports this host does not provide.
    /// Blocking: call it off the async executor.
    pub fn compile(&self, bytes: &[u8]) -> Result<Compiled, String> {
        if !is_component(bytes) {
            return Err(if bytes.starts_with(b"\0asm") {
                "the file is a core WebAssembly module, not a component: build it for \
                 wasm32-wasip2 (or run wasm-tools component new)"
                    .into()
            } else {
                "the file is not a WebAssembly component".into()
            });
        }
        let sha256 = hex::encode(Sha256::digest(bytes));
        let component = self
            .load(&sha256, bytes)
            .map_err(|e| format!("the component is invalid: {e:#}"))?;
        let target = wit::target(&self.engine, &component)?;
        if let Some((name, _)) = component
            .component_type()
            .imports(&self.engine)
            .find(|(name, _)| !ALLOWED_IMPORTS.iter().any(|p| name.starts_with(p)))
        {
            return Err(format!(
                "the component imports {name}, which plugins may not use (they reach the \
                 network only through trellis:policy/outbound-http)"
            ));
        }
        let pre = self
            .linker
            .instantiate_pre(&component)
            .map_err(|e| format!("the component cannot be linked: {e:#}"))?;
        let spam_check = match (target.world, target.api) {
            (wit::World::SpamCheck, wit::ApiVersion::V0_1) => Some(
                wit::since_v0_1::spam_check::SpamCheckPluginPre::new(pre.clone()).map_err(|e| {
                    format!("the component's spam-check exports are malformed: {e:#}")
                })?,
            ),
            _ => None,
        };
        let external_authorization = match (target.world, target.api) {
            (wit::World::ExternalAuthorization, wit::ApiVersion::V0_1) => Some(
                wit::since_v0_1::external_authorization::ExternalAuthorizationPluginPre::new(
                    pre.clone(),
                )
                .map_err(|e| {
                    format!("the component's external-authorization exports are malformed: {e:#}")
                })?,
            ),
            _ => None,
        };
        let push_rules = match (target.world, target.api) {
            (wit::World::PushRules, wit::ApiVersion::V0_2) => Some(
                wit::since_v0_2::push_rules::PushRulesPluginPre::new(pre.clone()).map_err(|e| {
                    format!("the component's push-rules exports are malformed: {e:#}")
                })?,
            ),
            _ => None,
        };
        let webhook_formatter = match (target.world, target.api) {
            (wit::World::WebhookFormatter, wit::ApiVersion::V0_1) => Some(
                wit::since_v0_1::webhook_formatter::WebhookFormatterPluginPre::new(pre.clone())
                    .map_err(|e| {
                        format!("the component's webhook-formatter exports are malformed: {e:#}")
                    })?,
            ),
            _ => None,
        };
        let imports_outbound_http = component
            .component_type()
            .imports(&self.engine)
            .any(|(name, _)| name.starts_with("trellis:policy/outbound-http"));
        Ok(Compiled {
            sha256,
            target,
            pre,
            spam_check,
            external_authorization,
            push_rules,
            webhook_formatter,
            imports_outbound_http,
            size: bytes.len(),
        })
    }

    fn load(&self, sha256: &str, bytes: &[u8]) -> anyhow::Result<Component> {
        let Some(dir) = &self.cache_dir else {
            return Ok(Component::new(&self.engine, bytes)?);
        };
        let path = dir.join(format!("{sha256}-{}.cwasm", self.engine_hash));
        if path.exists() {
            // SAFETY: the file was written by `Component::serialize` of an engine with this
            // configuration (the name carries its hash) into the server's own data directory.
            match unsafe { Component::deserialize_file(&self.engine, &path) } {
                Ok(component) => return Ok(component),
                Err(error) => {
                    tracing::warn!(path = %path.display(), error = format!("{error:#}"), "discarding an unreadable compiled plugin");
                }
            }
        }
        let component = Component::new(&self.engine, bytes)?;
        if let Err(error) = write_atomically(&path, &component.serialize()?) {
            tracing::warn!(path = %path.display(), error = format!("{error:#}"), "could not cache a compiled plugin");
        }
        Ok(component)
    }
}

/// What a plugin may import: the host's interfaces, and the WASI ones standard libraries
/// import whatever the plugin does (inert in the call's empty context, waiting denied). Not
/// sockets or HTTP: a plugin reaches the network through `outbound-http` and its grant only.
const ALLOWED_IMPORTS: &[&str] = &[
    "trellis:policy/",
    "wasi:io/",
    "wasi:clocks/",
    "wasi:cli/",
    "wasi:random/",
    "wasi:filesystem/",
];

/// The WASI version whose interfaces `add_to_linker_sync` defines (newer minor versions of
/// imports resolve to it by semver).
const WASI_VERSION: &str = "0.2.12";

/// Replaces the WASI functions that wait (`wasi:io/poll`'s `poll` and `pollable.block`, what
/// `sleep` and every timer come down to) with ones that trap at once. A wait runs in host code,
/// where the epoch deadline cannot interrupt it: a plugin that sleeps would hold its thread and
/// pool slot past any time limit. Plugins still import the interfaces (Rust's standard library
/// does); they cannot block on them.
fn deny_waiting(linker: &mut Linker<CallState>) -> anyhow::Result<()> {
    linker.allow_shadowing(true);
    let mut poll = linker.instance(&format!("wasi:io/poll@{WASI_VERSION}"))?;
    for name in ["poll", "[method]pollable.block"] {
        poll.func_new(name, move |_, _, _, _| {
            Err(wasmtime::Error::new(WaitDenied(name)))
        })?;
    }
    linker.allow_shadowing(false);
    Ok(())
}

/// A component's preamble: `\0asm`, then version 0x0d and layer 1.
fn is_component(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && bytes[..4] == *b"\0asm" && bytes[6..8] == [1, 0]
}

fn write_atomically(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, data)?;
    std::fs::rename(&tmp, path)
}

impl Compiled {
    /// Calls the plugin's `validate-config` (every world exports it).
    pub(crate) fn validate_config(
        &self,
        store: &mut wasmtime::Store<CallState>,
        config: &str,
    ) -> wasmtime::Result<Result<(), String>> {
        let instance = self.pre.instantiate(&mut *store)?;
        let interface = format!(
            "trellis:policy/configurable@{}",
            self.target.package_version
        );
        let missing =
            || wasmtime::Error::msg("the plugin does not export trellis:policy/configurable");
        let interface = instance
            .get_export_index(&mut *store, None, &interface)
            .ok_or_else(missing)?;
        let func = instance
            .get_export_index(&mut *store, Some(&interface), "validate-config")
            .ok_or_else(missing)?;
        let func = instance.get_typed_func::<(&str,), (Result<(), String>,)>(&mut *store, &func)?;
        let (answer,) = func.call(&mut *store, (config,))?;
        Ok(answer)
    }
}
