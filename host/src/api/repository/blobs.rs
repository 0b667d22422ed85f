//! Blobs by id: `GET /projects/:id/repository/blobs/:sha` (base64 content and size) and
//! `.../blobs/:sha/raw` (streamed). Raw reads count against `raw_blob_request_limit`
//! (`ratelimit::rules`), per path as in GitLab.

use crate::http::json::Json;
use axum::body::Body;
use axum::extract::Path;
use axum::http::{Method, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::{Repo, readable};
use crate::context::ApiContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::request::Api;
use crate::http::routes::{Doc, Router};
use crate::http::stream::stream_body;
use crate::views::repository_file::BlobView;

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/api/v4/projects/{id}/repository/blobs/{sha}", get(show))
        .doc(Method::GET, Doc::new().answers::<BlobView>())
        .route("/api/v4/projects/{id}/repository/blobs/{sha}/raw", get(raw))
        .doc(
            Method::GET,
            Doc::new().answers_bytes(super::RAW_MEDIA_TYPES),
        )
}

async fn blob(api: &Api, id: &str, sha: &str) -> ApiResult<(Repo, u64)> {
    let repo = readable(api, id).await?;
    let size = repo
        .repo
        .blob_size(sha)
        .await?
        .ok_or(ApiError::NotFound("Blob"))?;
    Ok((repo, size))
}

async fn show(Path((id, sha)): Path<(String, String)>, api: Api) -> ApiResult<Json<BlobView>> {
    let (repo, size) = blob(&api, &id, &sha).await?;
    let content = repo.repo.blob(&sha).await?;
    Ok(Json(BlobView {
        size,
        encoding: "base64",
        content: STANDARD.encode(&content),
        sha,
    }))
}

async fn raw(Path((id, sha)): Path<(String, String)>, api: Api) -> ApiResult<Response> {
    let (repo, size) = blob(&api, &id, &sha).await?;
    let stdout = repo.repo.blob_stream(&sha)?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                "text/plain; charset=utf-8".to_string(),
            ),
            (header::CONTENT_LENGTH, size.to_string()),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_string()),
        ],
        Body::from_stream(stream_body(stdout)),
    )
        .into_response())
}
