//! `GET /projects/:id/repository/archive[.format]?sha=&path=`: `git archive` of a commit
//! (the default branch without `sha`), streamed as tar.gz (the default), tar.bz2, tar or
//! zip, named `<project>-<ref>-<sha>` as GitLab names it.

use crate::http::routes::Doc;
use axum::body::Body;
use axum::extract::Path;
use axum::http::Method;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::{path_param, readable};
use crate::context::ApiContext;
use crate::git::tree::ArchiveFormat;
use crate::git_access::slots::TOO_MANY;
use crate::git_access::transfers::Marked;
use crate::http::error::{ApiError, ApiResult};
use crate::http::params::Params;
use crate::http::request::Api;
use crate::http::routes::Router;
use crate::http::stream::stream_body;

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route(
            "/api/v4/projects/{id}/repository/archive",
            get(default_format),
        )
        .doc(
            Method::GET,
            Doc::new()
                .reads(archive_params)
                .answers_bytes(DEFAULT_MEDIA_TYPES),
        )
        .route(
            "/api/v4/projects/{id}/repository/archive.{format}",
            get(with_format),
        )
        .doc(
            Method::GET,
            Doc::new().reads(archive_params).answers_bytes(MEDIA_TYPES),
        )
}

/// What `archive` answers: the default format, tar.gz.
const DEFAULT_MEDIA_TYPES: &[&str] = &[ArchiveFormat::TarGz.content_type()];

/// What `archive.{format}` answers: the media type of the format asked for.
const MEDIA_TYPES: &[&str] = &[
    ArchiveFormat::TarGz.content_type(),
    ArchiveFormat::TarBz2.content_type(),
    ArchiveFormat::Tar.content_type(),
    ArchiveFormat::Zip.content_type(),
];

/// `sha` (the default branch when blank or absent) and `path` (the whole tree when absent).
fn archive_params(params: &Params) -> ApiResult<(Option<String>, Option<String>)> {
    let sha = params.string("sha")?.filter(|s| !s.is_empty());
    Ok((sha, path_param(params)?))
}

async fn default_format(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    archive(api, id, ArchiveFormat::TarGz).await
}

async fn with_format(Path((id, format)): Path<(String, String)>, api: Api) -> ApiResult<Response> {
    let format = ArchiveFormat::parse(&format)
        .ok_or_else(|| ApiError::NotFoundMessage("404 Not Found".into()))?;
    archive(api, id, format).await
}

async fn archive(api: Api, id: String, format: ArchiveFormat) -> ApiResult<Response> {
    let (sha, path) = archive_params(&api.params)?;
    let repo = readable(&api, &id).await?;
    let reference = sha
        .or_else(|| repo.default_branch().map(str::to_string))
        .unwrap_or_else(|| "HEAD".into());
    let not_found = || ApiError::NotFoundMessage("404 Not Found".into());
    let commit = repo
        .commit_id(&reference, "Commit")
        .await
        .map_err(|_| not_found())?;
    if let Some(path) = &path
        && repo.repo.entry(&commit, path).await?.is_none()
    {
        return Err(not_found());
    }
    let name = format!(
        "{}-{}-{}",
        repo.ctx.project.path,
        reference.replace('/', "-"),
        commit
    );
    // An archive packs and compresses as a clone does: it takes one of the tenant's fetch
    // slots, and is stopped past the transfer deadline or when its client stops reading.
    let transfers = &api.ctx.transfers;
    let slot = transfers
        .fetches
        .acquire(api.tenant.db.tenant_id(), api.client_ip)
        .await
        .ok_or(ApiError::TooManyRequests(TOO_MANY))?;
    let clock = transfers.clock();
    let expired = clock.clone().expired();
    let stop = async move {
        let _slot = slot;
        expired.await;
    };
    let stdout = repo
        .repo
        .archive(&commit, format, &name, path.as_deref(), stop)?;
    let stdout = Marked::new(stdout, clock);
    let filename = format!("{name}.{}", format.extension());
    Ok((
        [
            (header::CONTENT_TYPE, format.content_type().to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{}\"", filename.replace('"', "")),
            ),
        ],
        Body::from_stream(stream_body(stdout)),
    )
        .into_response())
}
