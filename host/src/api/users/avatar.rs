//! Avatars of users, projects and groups: validated on upload, stored under
//! `DATA_DIR/uploads/<tenant>/<owner>/avatar/<id>/` (`owner` is `user`, `project` or `group`).
//! User avatars are served without authentication at
//! `/uploads/-/system/user/avatar/:id/:filename`; project and group avatars by `api::projects`
//! and `api::groups`, to whoever may see them.

use std::path::PathBuf;

use axum::extract::Path;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::api::files;
use crate::http::error::{ApiError, ApiResult};
use crate::http::params::{FromParams, Params, UploadedFile};
use crate::http::request::Api;
use crate::http::stream::stored_file;
use crate::services::uploads;

/// GitLab's limit for avatars.
const MAX_AVATAR_BYTES: u64 = 200 * 1024;

/// Enough of a file to recognise an image format by its signature.
const SIGNATURE_BYTES: usize = 64;

/// What a create or update asks for the avatar.
pub enum AvatarChange {
    Keep,
    Remove,
    Set(UploadedFile, String),
}

/// The `avatar` parameter: a file to store, `""` to remove, or nothing.
impl FromParams for AvatarChange {
    fn from_params(p: &Params) -> ApiResult<Self> {
        requested(p)
    }
}

fn requested(p: &Params) -> ApiResult<AvatarChange> {
    if let Some(file) = p.file("avatar") {
        let name = uploads::safe_filename(&file.filename, "avatar.png");
        let head = file
            .head(SIGNATURE_BYTES)
            .map_err(|error| ApiError::Internal(error.into()))?;
        if !files::is_image_content(&name, &head) {
            return Err(ApiError::field(
                "avatar",
                "file format is not supported. Please try one of the following supported formats: png, jpg, jpeg, gif, bmp, tiff, ico, webp",
            ));
        }
        if file.size > MAX_AVATAR_BYTES {
            return Err(ApiError::field(
                "avatar",
                "is too big (should be at most 200 KiB)",
            ));
        }
        return Ok(AvatarChange::Set(file.clone(), name));
    }
    match p.raw("avatar") {
        Some(serde_json::Value::String(s)) if s.is_empty() => Ok(AvatarChange::Remove),
        Some(_) => Err(ApiError::InvalidParam("avatar is invalid".into())),
        None => Ok(AvatarChange::Keep),
    }
}

pub const USER: &str = "user";
pub const PROJECT: &str = "project";
pub const GROUP: &str = "group";

pub fn directory(api: &Api, owner: &str, id: i64) -> PathBuf {
    files::directory(api, &format!("{owner}/avatar/{id}"))
}

/// Replaces the stored avatar file of user or project `id` with `file` (named `name`).
pub async fn store(
    api: &Api,
    owner: &str,
    id: i64,
    file: &UploadedFile,
    name: &str,
) -> ApiResult<()> {
    remove(api, owner, id).await?;
    file.persist(&directory(api, owner, id), name)
        .await
        .map_err(|e| ApiError::Internal(e.into()))
}

pub async fn remove(api: &Api, owner: &str, id: i64) -> ApiResult<()> {
    match tokio::fs::remove_dir_all(directory(api, owner, id)).await {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(ApiError::Internal(e.into())),
    }
}

/// `GET /uploads/-/system/user/avatar/:id/:filename`: public, like GitLab's avatars.
pub async fn serve(
    Path((user_id, filename)): Path<(i64, String)>,
    api: Api,
) -> ApiResult<Response> {
    let user = api.db().user_by_id(user_id).await?;
    let stored = user
        .and_then(|u| u.avatar_path)
        .filter(|name| *name == filename);
    let Some(name) = stored else {
        return Err(ApiError::NotFoundMessage("404 Not Found".into()));
    };
    send(&api, USER, user_id, &name).await
}

/// The avatar `filename` of `owner` `id` when it is the current one (`stored`), or 404.
pub async fn send_current(
    api: &Api,
    owner: &str,
    id: i64,
    stored: Option<&str>,
    filename: &str,
) -> ApiResult<Response> {
    if stored != Some(filename) {
        return Err(ApiError::NotFoundMessage("404 Not Found".into()));
    }
    send(api, owner, id, filename).await
}

/// The stored avatar file `name` of user or project `id`, or 404.
pub async fn send(api: &Api, owner: &str, id: i64, name: &str) -> ApiResult<Response> {
    let (body, length) = stored_file(&directory(api, owner, id).join(name))
        .await
        .ok_or_else(|| ApiError::NotFoundMessage("404 Not Found".into()))?;
    let headers = [
        (header::CONTENT_TYPE, files::content_type(name).to_string()),
        (header::CONTENT_LENGTH, length.to_string()),
    ];
    Ok((headers, body).into_response())
}
