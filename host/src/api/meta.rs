//! `GET /version` and `GET /metadata`: GitLab's shape (one for both), carrying Trellis' own
//! version; and
//! `GET /openapi.json`, the API's description (`http/openapi.rs`).

use crate::http::json::Json;
use crate::http::routes::{Doc, Router};
use axum::http::Method;
use axum::routing::get;

use crate::VERSION;
use crate::context::ApiContext;
use crate::http::error::ApiResult;
use crate::http::request::Api;
use crate::views::meta::{KasView, MetadataView, VersionView};

/// The commit the binary was built from, when the build knew it.
pub const REVISION: &str = match option_env!("TRELLIS_REVISION") {
    Some(revision) => revision,
    None => "unknown",
};

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/api/v4/version", get(metadata))
        .doc(Method::GET, Doc::new().answers::<MetadataView>())
        .route("/api/v4/metadata", get(metadata))
        .doc(Method::GET, Doc::new().answers::<MetadataView>())
        .route("/api/v4/openapi.json", get(crate::http::openapi::serve))
}

const VERSION_VIEW: VersionView = VersionView {
    version: VERSION,
    revision: REVISION,
};

/// `GET /metadata`, and `GET /version`, which answers the same since GitLab 15.5 (clients read
/// `enterprise` from either).
async fn metadata(api: Api) -> ApiResult<Json<MetadataView>> {
    api.user()?;
    Ok(Json(MetadataView {
        version: VERSION_VIEW,
        kas: KasView {
            enabled: false,
            external_url: None,
            external_k8s_proxy_url: None,
            version: None,
        },
        enterprise: false,
    }))
}
