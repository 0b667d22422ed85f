//! Bindings for `trellis:policy@0.1.x` (wit/since_v0.1.0).

use wasmtime::component::{HasData, Linker};

use super::super::call::CallState;

/// Generated from the spam-check world; it also carries the `host` and `types` interfaces
/// every 0.1 world shares.
pub mod spam_check {
    wasmtime::component::bindgen!({
        path: "../wit/since_v0.1.0",
        world: "spam-check-plugin",
    });
}

pub use spam_check::exports::trellis::policy::spam_check::{
    SpamInput, SpammableKind, Verdict, VerdictKind,
};
pub use spam_check::trellis::policy::types::{LogLevel, Project, User, Visibility};

use spam_check::trellis::policy::{host, types};

impl types::Host for CallState {}

impl host::Host for CallState {
    fn log(&mut self, level: LogLevel, message: String) {
        self.log(level, &message);
    }

    fn config(&mut self) -> String {
        self.config.to_string()
    }
}

struct Data;
impl HasData for Data {
    type Data<'a> = &'a mut CallState;
}

/// Adds the 0.1 host interfaces to a linker.
pub fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    types::add_to_linker::<CallState, Data>(linker, |s| s)?;
    host::add_to_linker::<CallState, Data>(linker, |s| s)
}
