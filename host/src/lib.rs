#![recursion_limit = "256"]
//! Trellis: a multi-tenant server that speaks the GitLab REST API v4.
//!
//! A request flows `http` (router, extractors, errors, pagination) → `api` (one module per
//! resource) → `store` (SQL, scoped to one tenant) and back out through `views` (the JSON
//! representations of `model`'s rows); work that spans the database and the git repositories
//! (`git`) is ordered by `services`, between `api` and `store`. `auth` finds the caller,
//! `tenants` the instance, `settings` its policy.

/// The version every answer and request reports (`/api/v4/version`, webhooks' `User-Agent`).
pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");

pub(crate) mod api;
pub(crate) mod auth;
pub(crate) mod backup;
pub mod cli;
pub(crate) mod config;
pub(crate) mod connection_caps;
pub(crate) mod context;
/// The git layer, a crate of its own that knows nothing of the server.
pub(crate) use trellis_git as git;
pub(crate) mod git_access;
pub(crate) mod git_hooks;
pub(crate) mod git_http;
pub(crate) mod http;
pub(crate) mod invalidation;
pub(crate) mod jobs;
pub(crate) mod keys;
pub(crate) mod links;
pub(crate) mod mail;
/// Requests to other hosts (the address policy, the HTTP client, TLS), a crate of its own.
pub(crate) use trellis_outbound as outbound;
/// The plugin host (wasmtime, bindings, limits, hooks), a crate of its own.
pub(crate) use trellis_plugin_host as plugins;
pub(crate) mod policy;
pub(crate) mod ratelimit;
pub(crate) mod redis_link;
pub(crate) mod request_origin;
pub(crate) mod services;
pub(crate) mod settings;
pub(crate) mod shutdown;
pub(crate) mod ssh;
/// The store (SQL, rows, migrations, domain events, access levels), a crate of its own.
pub(crate) use trellis_store as store;
pub(crate) use trellis_store::{access_level, events, model};
pub(crate) mod tenants;
#[cfg(test)]
mod test_support;
pub(crate) mod views;
pub(crate) mod web;
pub(crate) mod webhooks;

/// What the property tests (`host/tests/fuzz.rs`) drive directly; everything else is the
/// crate's own.
#[doc(hidden)]
#[cfg(not(trellis_dead_code_check))]
pub mod testing {
    pub use crate::auth::oauth::scopes::parse as parse_scopes;
    pub use crate::http::params::{Params, parse_bool, parse_date, parse_datetime};
    pub use crate::keys::{parse_gpg_key, parse_ssh_key};
    pub use crate::model::issue_text::{task_counts, task_items};
    pub use crate::settings::validate::parse_duration;
    pub use crate::ssh::command as ssh_command;
}
