//! The HTTP layer: the router with its fallbacks and middleware, and the conventions every
//! endpoint shares (parameters, errors, pagination, the `Api` extractor).

pub mod error;
pub mod fair_share;
pub mod input_doc;
pub mod json;
pub mod limits;
pub mod openapi;
pub mod ops;
pub mod pagination;
pub mod params;
pub mod request;
mod request_metrics;
pub mod resolve;
pub mod routes;
pub mod serve;
pub mod stream;
pub mod upload;

use std::time::Instant;

use axum::Router;
use axum::extract::{FromRequest, MatchedPath, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use tower_http::catch_panic::CatchPanicLayer;
use tracing::Instrument;

use crate::context::ApiContext;
use error::ApiError;

/// Every route of the server, with the paths it routes.
fn routes() -> routes::Router<ApiContext> {
    routes::Router::new()
        .merge(crate::api::router())
        .merge(ops::router())
        .merge(crate::auth::oauth::endpoints::router())
        .merge(crate::web::router())
}

/// The path templates the server routes (`trellis routes`), for the suites that must visit
/// every route.
pub fn route_table() -> Vec<String> {
    route_entries()
        .into_iter()
        .map(|route| route.path)
        .collect()
}

/// Every route with its methods, for the OpenAPI document.
pub fn route_entries() -> Vec<routes::RouteEntry> {
    routes().routes().to_vec()
}

pub fn router(ctx: ApiContext) -> Router {
    let request_limits = limits::RequestLimits::new(&ctx);
    routes()
        .into_inner()
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(
            Admission {
                ctx: ctx.clone(),
                limits: request_limits,
                metrics: request_metrics::RequestMetrics::default(),
            },
            admit,
        ))
        .layer(CatchPanicLayer::custom(|_| {
            ApiError::Internal(anyhow::anyhow!("handler panicked")).into_response()
        }))
        .with_state(ctx)
}

/// Unrouted paths: project uploads (`/<project path>/uploads/<secret>/<file>`) and git over
/// HTTP (`/<project path>.git/info/refs` ...), whose project paths may have any depth, are
/// served here; everything else is 404.
async fn not_found(State(ctx): State<ApiContext>, request: Request) -> Response {
    let path = request.uri().path().to_string();
    if let Some(route) = crate::git_http::route(request.method(), &path, request.uri().query()) {
        return crate::git_http::serve(ctx, request, route).await;
    }
    if request.method() == axum::http::Method::GET && crate::api::is_upload_path(&path) {
        return match request::Api::from_request(request, &ctx).await {
            Ok(api) => crate::api::serve_project_upload(api, &path)
                .await
                .into_response(),
            Err(error) => error.into_response(),
        };
    }
    ApiError::NoRoute.into_response()
}

async fn method_not_allowed() -> Response {
    ApiError::MethodNotAllowed.into_response()
}

#[derive(Clone)]
struct Admission {
    ctx: ApiContext,
    limits: limits::RequestLimits,
    metrics: request_metrics::RequestMetrics,
}

/// What every request passes before its handler, in one middleware (a middleware layer costs
/// a clone of the route it wraps per request). From the outside in: the request's span and
/// metrics by route (so that 429s and 503s are recorded like any answer), the tenant resolved
/// once (`resolve.rs`), the request limits, which count by that tenant, and within them the
/// tenant's settings, read once, then the rate limiter.
async fn admit(State(admission): State<Admission>, mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = request.extensions().get::<MatchedPath>().cloned();
    let route_name = route.as_ref().map_or("unmatched", MatchedPath::as_str);
    let method = request.method().clone();
    // The method and route template only: query strings and headers can hold tokens, and
    // are never logged.
    let span = tracing::info_span!("request", method = %method, route = route_name);
    let ctx = &admission.ctx;
    let response = async {
        if let Some(refused) = resolve::resolve(ctx, &mut request) {
            return refused;
        }
        limits::enforce(&admission.limits, request, async |mut request| {
            resolve::read_settings(ctx, &mut request).await;
            match crate::ratelimit::enforce(ctx, request).await {
                Ok(request) => next.run(request).await,
                Err(limited) => limited,
            }
        })
        .await
    }
    .instrument(span.clone())
    .await;
    let elapsed = started.elapsed();
    let status = response.status();
    // A stopping process's 503 readiness is its intended answer, not a failure.
    if status.is_server_error() && !(route_name == "/-/readiness" && ctx.stopping.is_stopping()) {
        span.in_scope(|| {
            tracing::error!(
                status = status.as_u16(),
                latency_ms = elapsed.as_millis() as u64,
                "response failed"
            );
        });
    }
    admission
        .metrics
        .record(route_name, &method, status, elapsed);
    response
}
