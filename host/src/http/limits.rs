//! Whole-request limits, so that no caller can hold a process's resources without bound: how
//! many requests it serves at once (`--max-concurrent-requests`; the rest wait for a slot) and
//! how long one may take, waiting for its slot included (`--request-timeout-seconds`). A
//! request over time answers 503 and its handler is dropped, which also ends its body read
//! and kills the `git` it runs (`kill_on_drop`). Health checks skip the queue, so a busy
//! process is not taken for a dead one. While several tenants are busy, each waits for its
//! fair share first (`fair_share.rs`, `--fair-share-requests`), so that one tenant's queue
//! never holds the process's slots.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use tokio::sync::Semaphore;

use super::error::ApiError;
use super::fair_share::FairShare;
use super::resolve::RequestTenant;
use crate::context::{ApiContext, Serving};

#[derive(Clone)]
pub struct RequestLimits {
    slots: Arc<Semaphore>,
    timeout: Duration,
    fair_share: FairShare,
}

impl RequestLimits {
    pub fn new(ctx: &ApiContext) -> RequestLimits {
        let config = &ctx.config;
        RequestLimits {
            slots: Arc::new(Semaphore::new(config.max_concurrent_requests.max(1))),
            timeout: Duration::from_secs(config.request_timeout_seconds),
            fair_share: ctx.fair_share.clone(),
        }
    }
}

/// Serves `request` with `next` within the limits (a step of `http::admit`).
pub async fn enforce(
    limits: &RequestLimits,
    request: Request,
    next: impl AsyncFnOnce(Request) -> Response,
) -> Response {
    let health = crate::ratelimit::rules::classify(request.uri().path())
        == crate::ratelimit::rules::PathClass::Health;
    let git_transfer = crate::git_http::route(
        request.method(),
        request.uri().path(),
        request.uri().query(),
    )
    .is_some();
    let tenant = (!health && !git_transfer)
        .then(|| RequestTenant::peek(&request).map(|resolved| resolved.tenant.id))
        .flatten();
    let served = async {
        let _share = match tenant {
            Some(tenant) => Some(limits.fair_share.admit(tenant).await),
            None => None,
        };
        let _slot = if health {
            None
        } else {
            Some((
                limits.slots.acquire().await.expect("never closed"),
                Serving::start(),
            ))
        };
        next(request).await
    };
    match tokio::time::timeout(limits.timeout, served).await {
        Ok(response) => response,
        Err(_) => {
            metrics::counter!("http_requests_timed_out_total").increment(1);
            ApiError::TimedOut.into_response()
        }
    }
}
