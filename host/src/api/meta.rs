//! `GET /version` and `GET /metadata`: GitLab's shapes, carrying Trellis' own version; and
//! `GET /openapi.json`, the API's description (`http/openapi.rs`).

use crate::http::routes::Router;
use axum::Json;
use axum::routing::get;
use serde_json::{Value, json};

use crate::context::ApiContext;
use crate::http::error::ApiResult;
use crate::http::request::Api;

pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The commit the binary was built from, when the build knew it.
pub const REVISION: &str = match option_env!("TRELLIS_REVISION") {
    Some(revision) => revision,
    None => "unknown",
};

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/api/v4/version", get(version))
        .route("/api/v4/metadata", get(metadata))
        .route("/api/v4/openapi.json", get(crate::http::openapi::serve))
}

async fn version(api: Api) -> ApiResult<Json<Value>> {
    api.user()?;
    Ok(Json(json!({ "version": VERSION, "revision": REVISION })))
}

async fn metadata(api: Api) -> ApiResult<Json<Value>> {
    api.user()?;
    Ok(Json(json!({
        "version": VERSION,
        "revision": REVISION,
        "kas": { "enabled": false, "externalUrl": null, "externalK8sProxyUrl": null, "version": null },
        "enterprise": false,
    })))
}
