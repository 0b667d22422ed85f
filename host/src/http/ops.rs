//! Operations endpoints, readable only from the monitoring allowlist (404 elsewhere, as
//! GitLab answers): `/-/health`, `/-/liveness`, `/-/readiness` and Prometheus `/-/metrics`.

use std::net::SocketAddr;

use crate::http::json::Json;
use crate::http::routes::Router;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use super::error::ApiError;
use crate::context::ApiContext;
use crate::request_origin::forwarded_client;

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/-/health", get(health))
        .route("/-/liveness", get(liveness))
        .route("/-/readiness", get(readiness))
        .route("/-/metrics", get(metrics))
}

fn allowed(ctx: &ApiContext, peer: SocketAddr, headers: &HeaderMap) -> Result<(), ApiError> {
    let ip = forwarded_client(
        peer.ip().to_canonical(),
        headers,
        &ctx.config.trusted_proxies,
    );
    if ctx
        .config
        .monitoring_allowlist
        .iter()
        .any(|net| net.contains(&ip))
    {
        Ok(())
    } else {
        Err(ApiError::NotFoundMessage("404 Not Found".into()))
    }
}

async fn health(
    State(ctx): State<ApiContext>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Result<&'static str, ApiError> {
    allowed(&ctx, peer, &headers)?;
    Ok("GitLab OK")
}

async fn liveness(
    State(ctx): State<ApiContext>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    allowed(&ctx, peer, &headers)?;
    Ok(Json(json!({ "status": "ok" })).into_response())
}

async fn readiness(
    State(ctx): State<ApiContext>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    allowed(&ctx, peer, &headers)?;
    if ctx.stopping.is_stopping() {
        // Out of the balancer's rotation while in-flight work finishes (`shutdown`).
        let body = json!({ "status": "failed", "message": "shutting down" });
        return Ok((StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response());
    }
    let database_ok = ctx.db.ping().await.is_ok();
    let check = |ok: bool| {
        if ok {
            json!([{ "status": "ok" }])
        } else {
            json!([{ "status": "failed", "message": "unexpected Db check result" }])
        }
    };
    let body = json!({
        "status": if database_ok { "ok" } else { "failed" },
        "master_check": check(true),
        "db_check": check(database_ok),
    });
    let status = if database_ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    Ok((status, Json(body)).into_response())
}

async fn metrics(
    State(ctx): State<ApiContext>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    allowed(&ctx, peer, &headers)?;
    Ok((
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        ctx.metrics.render(),
    )
        .into_response())
}
