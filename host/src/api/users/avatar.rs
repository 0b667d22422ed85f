//! User avatars: validated on upload, stored under `DATA_DIR/uploads/<tenant>/user/avatar/<id>/`,
//! and served without authentication at `/uploads/-/system/user/avatar/:id/:filename`.

use std::path::PathBuf;

use axum::extract::Path;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::http::error::{ApiError, ApiResult};
use crate::http::params::UploadedFile;
use crate::http::request::Api;

/// GitLab's limit for avatars.
const MAX_AVATAR_BYTES: usize = 200 * 1024;
const IMAGE_TYPES: &[(&str, &str)] = &[
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("gif", "image/gif"),
    ("bmp", "image/bmp"),
    ("tiff", "image/tiff"),
    ("ico", "image/vnd.microsoft.icon"),
    ("webp", "image/webp"),
];

/// What a create or update asks for the avatar.
pub enum AvatarChange {
    Keep,
    Remove,
    Set(UploadedFile, String),
}

/// Reads the `avatar` parameter: a file to store, `""` to remove, or nothing.
pub fn requested(api: &Api) -> ApiResult<AvatarChange> {
    if let Some(file) = api.params.file("avatar") {
        let name = safe_filename(&file.filename);
        let extension = name
            .rsplit_once('.')
            .map(|(_, e)| e.to_ascii_lowercase())
            .unwrap_or_default();
        if !IMAGE_TYPES.iter().any(|(e, _)| *e == extension) {
            return Err(ApiError::field(
                "avatar",
                "file format is not supported. Please try one of the following supported formats: png, jpg, jpeg, gif, bmp, tiff, ico, webp",
            ));
        }
        if file.bytes.len() > MAX_AVATAR_BYTES {
            return Err(ApiError::field(
                "avatar",
                "is too big (should be at most 200 KiB)",
            ));
        }
        return Ok(AvatarChange::Set(file.clone(), name));
    }
    match api.params.raw("avatar") {
        Some(serde_json::Value::String(s)) if s.is_empty() => Ok(AvatarChange::Remove),
        Some(_) => Err(ApiError::InvalidParam("avatar is invalid".into())),
        None => Ok(AvatarChange::Keep),
    }
}

fn safe_filename(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or("avatar");
    let cleaned: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let cleaned = cleaned.trim_start_matches('.').to_string();
    if cleaned.is_empty() {
        "avatar.png".into()
    } else {
        cleaned
    }
}

fn directory(api: &Api, user_id: i64) -> PathBuf {
    api.ctx
        .config
        .storage
        .data_dir
        .join("uploads")
        .join(api.tenant.id.to_string())
        .join("user/avatar")
        .join(user_id.to_string())
}

/// Replaces the user's stored avatar file with `file` (named `name`).
pub async fn store(api: &Api, user_id: i64, file: &UploadedFile, name: &str) -> ApiResult<()> {
    let dir = directory(api, user_id);
    remove(api, user_id).await?;
    tokio::fs::create_dir_all(&dir)
        .await
        .map_err(|e| ApiError::Internal(e.into()))?;
    tokio::fs::write(dir.join(name), &file.bytes)
        .await
        .map_err(|e| ApiError::Internal(e.into()))
}

pub async fn remove(api: &Api, user_id: i64) -> ApiResult<()> {
    match tokio::fs::remove_dir_all(directory(api, user_id)).await {
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
    let bytes = tokio::fs::read(directory(&api, user_id).join(&name))
        .await
        .map_err(|_| ApiError::NotFoundMessage("404 Not Found".into()))?;
    let extension = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    let content_type = IMAGE_TYPES
        .iter()
        .find(|(e, _)| *e == extension)
        .map_or("application/octet-stream", |(_, t)| t);
    Ok(([(header::CONTENT_TYPE, content_type)], bytes).into_response())
}
