//! `trellis-sdk`: write Trellis policy plugins in Rust.
//!
//! A plugin is a WebAssembly component (`cargo build --target wasm32-wasip2 --release`)
//! implementing one world of the `trellis:policy` WIT package. Enable the cargo feature of that
//! world, implement its trait and call its export macro once:
//!
//! ```ignore
//! use trellis_sdk::spam_check::{Input, SpamCheck, Verdict};
//!
//! struct Filter;
//! impl SpamCheck for Filter {
//!     type Config = MyConfig; // serde::Deserialize + Default
//!     fn check(config: &MyConfig, input: &Input) -> Result<Verdict, String> {
//!         Ok(Verdict::allow("looks fine"))
//!     }
//! }
//! trellis_sdk::export_spam_check!(Filter);
//! ```
//!
//! See docs/plugins.md in the repository for building, testing, uploading and binding.

pub mod config;
pub mod log;

#[cfg(feature = "spam-check")]
pub mod spam_check;

#[cfg(feature = "external-authorization")]
pub mod external_authorization;

#[cfg(feature = "push-rules")]
pub mod push_rules;

#[cfg(feature = "webhook-formatter")]
pub mod webhook_formatter;

/// The host imports (logging, configuration) and the shared types; the world bindings reuse them.
#[doc(hidden)]
pub mod host_bindings {
    wit_bindgen::generate!({
        path: "../wit/since_v0.1.0",
        world: "host-imports",
    });
}

pub use host_bindings::trellis::policy::types::{LogLevel, Project, User, Visibility};

#[doc(hidden)]
pub use wit_bindgen as __wit_bindgen;
