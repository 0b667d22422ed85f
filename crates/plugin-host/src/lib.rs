//! The plugin host: WebAssembly policy plugins (WIT package `trellis:policy`, see the
//! repository's `wit/`) run sandboxed in wasmtime, bound per tenant to hooks by administrators.
//! A crate of its own that depends on nothing of the server: the tenant settings it reads come
//! through [`PluginSettings`], the operator's ceilings as [`MaximaArgs`].
//!
//! - `runtime`: the engine (pooling allocator, epochs, fuel, `.cwasm` cache) and compilation.
//! - `ticker`: the epoch, advanced every millisecond while a call runs and not otherwise.
//! - `call`: one call on a fresh `Store` with its limits; typed errors.
//! - `registry`: the bindings every process sees (polled from the database), compiled plugins
//!   by sha256, the per-tenant instance caps; calls go through [`Plugins`].
//! - `spam`: the spam-check hook with GitLab's verdict semantics.
//! - `external_auth`: GitLab's external authorization of project access.
//! - `push_rules`: push rules on the receive path, in batches (`trellis:policy@0.2`).
//! - `trial`: one call of any hook on a sample input, changing nothing (`trellis plugin run`,
//!   the console's "Try it").
//! - `watch`: the last hour of calls per tenant and hook, for the admin console.

pub mod builtin;
mod call;
pub mod external_auth;
mod give_way;
mod hooks;
mod limits;
pub mod local;
pub mod push_rules;
pub mod registry;
pub mod runtime;
mod settings;
pub mod spam;
mod ticker;
pub mod trial;
pub mod watch;
pub mod webhook_formatter;
mod wit;

pub use call::{BlobSource, CallStats, PluginError};
pub use hooks::{FailurePolicy, Hook};
pub use limits::{Limits, Maxima, MaximaArgs};
pub use registry::{Binding, POLL_INTERVAL, Plugins};
pub use settings::PluginSettings;
