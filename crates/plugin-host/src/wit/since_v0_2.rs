//! Bindings for `trellis:policy@0.2.x` (wit/since_v0.2.0): the push-rules world, whose input
//! comes in batches and which reads blobs on demand through `push-scan`. The shared `types`
//! and `host` interfaces are this package version's own.

use wasmtime::component::Linker;

use super::Data;
use crate::call::CallState;

/// Generated from the push-rules world.
pub(crate) mod push_rules {
    wasmtime::component::bindgen!({
        path: "../../wit/since_v0.2.0",
        world: "push-rules-plugin",
    });
}

pub use push_rules::exports::trellis::policy::push_rules::{
    ChangedFile, Commit, Decision, Push, Pusher, RefUpdate, Rule, Signature,
};
pub(crate) use push_rules::trellis::policy::types::LogLevel;
pub use push_rules::trellis::policy::types::{Project, User, Visibility};

use push_rules::trellis::policy::{host, push_scan, types};

impl types::Host for CallState {}

impl host::Host for CallState {
    fn log(&mut self, level: LogLevel, message: String) {
        let level = match level {
            LogLevel::Trace => super::since_v0_1::LogLevel::Trace,
            LogLevel::Debug => super::since_v0_1::LogLevel::Debug,
            LogLevel::Info => super::since_v0_1::LogLevel::Info,
            LogLevel::Warn => super::since_v0_1::LogLevel::Warn,
            LogLevel::Error => super::since_v0_1::LogLevel::Error,
        };
        self.log(level, &message);
    }

    fn config(&mut self) -> String {
        self.config.to_string()
    }
}

impl push_scan::Host for CallState {
    fn read_blob(&mut self, blob_id: String, max_bytes: u32) -> Result<Vec<u8>, String> {
        self.read_blob(&blob_id, max_bytes as usize)
    }
}

/// Adds the 0.2 host interfaces to a linker (beside 0.1's: the names carry the version).
pub(crate) fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    types::add_to_linker::<CallState, Data>(linker, |s| s)?;
    host::add_to_linker::<CallState, Data>(linker, |s| s)?;
    push_scan::add_to_linker::<CallState, Data>(linker, |s| s)
}
