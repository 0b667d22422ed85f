//! Applies what other processes sharing the database announce (`store::invalidation`) to
//! this process's caches: tokens, settings, tenants, plugin bindings, and the job workers'
//! wake-up.

use std::time::Duration;

use tokio::sync::mpsc;

use crate::context::ApiContext;
use crate::store::invalidation::{Heard, Invalidation};

/// How often caches that follow announcements re-read anyway, in case one was lost with a
/// process that died between its commit and its announcement.
pub const FALLBACK_REFRESH: Duration = Duration::from_secs(10);

/// Applies what `heard` brings, for the life of the process.
pub async fn follow(ctx: ApiContext, mut heard: mpsc::Receiver<Heard>) {
    while let Some(heard) = heard.recv().await {
        match heard {
            Heard::Change(change) => apply(&ctx, change).await,
            Heard::MayHaveMissed => {
                ctx.db.any_auth_may_have_changed();
                ctx.settings.forget_all();
                refresh_tenants(&ctx).await;
                refresh_plugins(&ctx).await;
                ctx.jobs.wake();
            }
        }
    }
}

async fn apply(ctx: &ApiContext, change: Invalidation) {
    match change {
        Invalidation::Auth { tenant_id } => ctx.db.auth_changed_elsewhere(tenant_id),
        Invalidation::Settings { tenant_id } => ctx.settings.forget(tenant_id),
        Invalidation::Tenants => refresh_tenants(ctx).await,
        Invalidation::PluginBindings { .. } => refresh_plugins(ctx).await,
        Invalidation::JobQueued => ctx.jobs.wake(),
    }
}

async fn refresh_tenants(ctx: &ApiContext) {
    if let Err(error) = ctx.refresh_tenants().await {
        tracing::warn!(
            error = format!("{error:#}"),
            "could not refresh the tenant list"
        );
    }
}

async fn refresh_plugins(ctx: &ApiContext) {
    if let Err(error) = ctx.plugins.refresh(&ctx.db).await {
        tracing::warn!(
            error = format!("{error:#}"),
            "could not refresh plugin bindings"
        );
    }
}
