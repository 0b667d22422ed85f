#![recursion_limit = "256"]
//! Trellis: a multi-tenant server that speaks the GitLab REST API v4.
//!
//! A request flows `http` (router, extractors, errors, pagination) → `api` (one module per
//! resource) → `store` (SQL, scoped to one tenant) and back out through `views` (the JSON
//! representations of `model`'s rows); work that spans the database and the git repositories
//! (`git`) is ordered by `services`, between `api` and `store`. `auth` finds the caller,
//! `tenants` the instance, `settings` its policy.

pub mod access_level;
pub mod api;
pub mod auth;
pub mod config;
pub mod connection_caps;
pub mod context;
pub mod events;
/// The git layer, a crate of its own that knows nothing of the server.
pub use trellis_git as git;
pub mod git_access;
pub mod git_hooks;
pub mod git_http;
pub mod http;
pub mod keys;
pub mod mail;
pub mod model;
pub mod outbound;
pub mod plugins;
pub mod policy;
pub mod ratelimit;
pub mod request_origin;
pub mod services;
pub mod settings;
pub mod ssh;
pub mod store;
pub mod tenants;
#[cfg(test)]
mod test_support;
pub mod views;
pub mod web;
pub mod webhooks;
