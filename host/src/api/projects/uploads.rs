//! Project uploads: `POST /projects/:id/uploads` stores a file under
//! `DATA_DIR/uploads/<tenant>/project/<project id>/<secret>/<filename>`, and
//! `GET /<namespace>/<project>/uploads/<secret>/<filename>` serves it to whoever may see the
//! project (the router's fallback hands such paths to [`serve`]).

use crate::http::json::Json;
use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::access_level::AccessLevel;
use crate::api::access;
use crate::api::files;
use crate::http::error::{ApiError, ApiResult};
use crate::http::params::{FromParams, Params, UploadedFile};
use crate::http::request::Api;
use crate::http::stream::stored_file;
use crate::services::uploads;
use crate::settings::keys;
use crate::views;

fn directory(api: &Api, project_id: i64, secret: &str) -> std::path::PathBuf {
    files::directory(api, &format!("project/{project_id}/{secret}"))
}

/// The `max_attachment_size` setting in bytes (MB in the setting; GitLab's default 100).
fn max_bytes(api: &Api) -> u64 {
    let mb = api
        .settings
        .get(keys::MAX_ATTACHMENT_SIZE)
        .map_or(100, |mb| mb.max(0) as u64);
    mb.saturating_mul(1024 * 1024)
}

/// `POST /projects/:id/uploads`: `file`, a multipart file.
pub(super) struct CreateUpload {
    file: UploadedFile,
}

impl FromParams for CreateUpload {
    fn from_params(p: &Params) -> ApiResult<Self> {
        match p.file("file") {
            Some(file) => Ok(CreateUpload { file: file.clone() }),
            None if p.has("file") => Err(ApiError::invalid("file")),
            None => Err(ApiError::Missing("file".into())),
        }
    }
}

/// `POST /projects/:id/uploads` (developers and above).
pub async fn create(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let caller = api.user()?;
    let CreateUpload { file } = api.input()?;
    let ctx = access::project(&api, &id).await?;
    ctx.require(AccessLevel::Developer)?;
    let row = uploads::attach_to_project(
        &api.ctx.config.storage.data_dir,
        api.db(),
        ctx.project.id,
        caller.user.id,
        &file,
        max_bytes(&api),
    )
    .await?;
    let name = &row.filename;
    let url = format!("/uploads/{}/{name}", row.secret);
    let full_path = format!("/{}/{}{url}", ctx.namespace.full_path, ctx.project.path);
    let embeddable = files::is_embeddable(name);
    let body = views::hook::upload(row.id, name, &url, &full_path, embeddable);
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// `<project full path>/uploads/<32 hex>/<filename>` split into its parts.
fn parse(path: &str) -> Option<(&str, &str, &str)> {
    let path = path.strip_prefix('/')?;
    let mut parts = path.rsplitn(4, '/');
    let filename = parts.next()?;
    let secret = parts.next()?;
    let uploads = parts.next()?;
    let project = parts.next()?;
    let valid_secret = secret.len() == 32 && secret.bytes().all(|b| b.is_ascii_hexdigit());
    (uploads == "uploads" && valid_secret && !filename.is_empty() && !project.is_empty())
        .then_some((project, secret, filename))
}

/// Whether a GET path looks like a project upload.
pub fn is_upload_path(path: &str) -> bool {
    parse(path).is_some()
}

/// Serves a stored upload with its bytes; 404 when the project is hidden from the caller or
/// the file is unknown.
pub async fn serve(api: Api, path: &str) -> ApiResult<Response> {
    let not_found = || ApiError::NotFoundMessage("404 Not Found".into());
    let (project, secret, filename) = parse(path).ok_or_else(not_found)?;
    let ctx = access::project(&api, project)
        .await
        .map_err(|error| match error {
            ApiError::NotFound(_) => not_found(),
            other => other,
        })?;
    let row = api
        .db()
        .upload(ctx.project.id, secret, filename)
        .await?
        .ok_or_else(not_found)?;
    let (body, length) =
        stored_file(&directory(&api, ctx.project.id, &row.secret).join(&row.filename))
            .await
            .ok_or_else(not_found)?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                files::content_type(&row.filename).to_string(),
            ),
            (header::CONTENT_LENGTH, length.to_string()),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_string()),
        ],
        body,
    )
        .into_response())
}
