//! The REST API v4: one module per resource, each with its own `router()`.

pub(crate) mod access;
mod applications;
mod award_emoji;
mod emails;
mod files;
mod groups;
mod hook_input;
mod impersonation;
mod issues;
mod keys;
mod labels;
mod members;
mod merge_requests;
pub mod meta;
mod milestones;
mod plugins;
mod projects;
mod protected_branches;
mod protected_tags;
mod repository;
pub use projects::uploads::{is_upload_path, serve as serve_project_upload};
mod settings;
mod spam_check;
mod system_hooks;
mod time_tracking;
mod tokens;
mod user;
pub(crate) mod users;

use crate::http::routes::Router;

use crate::context::ApiContext;

pub fn router() -> Router<ApiContext> {
    Router::new()
        .merge(meta::router())
        .merge(user::router())
        .merge(tokens::router())
        .merge(users::router())
        .merge(settings::router())
        .merge(keys::router())
        .merge(emails::router())
        .merge(impersonation::router())
        .merge(projects::router())
        .merge(repository::router())
        .merge(system_hooks::router())
        .merge(groups::router())
        .merge(members::router())
        .merge(issues::router())
        .merge(merge_requests::router())
        .merge(labels::router())
        .merge(protected_branches::router())
        .merge(protected_tags::router())
        .merge(milestones::router())
        .merge(plugins::router())
        .merge(applications::router())
}
