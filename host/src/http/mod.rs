//! The HTTP layer: the router with its fallbacks and middleware, and the conventions every
//! endpoint shares (parameters, errors, pagination, the `Api` extractor).

pub mod error;
pub mod fair_share;
pub mod input_doc;
pub mod limits;
pub mod openapi;
pub mod ops;
pub mod pagination;
pub mod params;
pub mod request;
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
use tower_http::trace::TraceLayer;

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
        // Inside the metrics layer, so that 429s are recorded by route like any answer.
        .layer(middleware::from_fn_with_state(
            ctx.clone(),
            crate::ratelimit::enforce,
        ))
        // Inside the metrics layer too, so that 503s for time are recorded by route.
        .layer(middleware::from_fn_with_state(
            request_limits,
            limits::enforce,
        ))
        // Outside the limits and the rate limiter, which count by the tenant it resolves.
        .layer(middleware::from_fn_with_state(ctx.clone(), resolve::resolve))
        .layer(middleware::from_fn(record_metrics))
        .layer(
            // Spans carry the method and route template only: query strings and headers can
            // hold tokens, and are never logged.
            TraceLayer::new_for_http().make_span_with(|request: &Request| {
                let route = request.extensions().get::<MatchedPath>().map(|m| m.as_str().to_string());
                tracing::info_span!("request", method = %request.method(), route = route.as_deref().unwrap_or("unmatched"))
            }),
        )
        .layer(CatchPanicLayer::custom(|_| ApiError::Internal(anyhow::anyhow!("handler panicked")).into_response()))
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

/// Requests by route template, method and status, and a latency histogram by route.
async fn record_metrics(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |m| m.as_str().to_string());
    let method = request.method().to_string();
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    metrics::counter!("http_requests_total", "route" => route.clone(), "method" => method, "status" => status)
        .increment(1);
    metrics::histogram!("http_request_duration_seconds", "route" => route)
        .record(started.elapsed().as_secs_f64());
    response
}
