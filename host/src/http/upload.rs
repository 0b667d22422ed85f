//! Files from multipart bodies. Each file part is streamed to a temporary file under
//! `DATA_DIR/tmp/uploads` as it arrives (the body's size cap is enforced by the multipart
//! reader while streaming), so an upload costs the process disk, not memory. The temporary
//! file is removed when the last handle to it is dropped: after the request, after a 413 or
//! a broken body, and when a timed-out request is cancelled.

use std::path::{Path, PathBuf};

use tokio::io::AsyncWriteExt;

use super::error::{ApiError, ApiResult};
use crate::services::uploads::UploadedFile;

/// Where a data directory keeps uploads while their request runs.
pub fn spool_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("tmp").join("uploads")
}

/// Removes what an earlier process left in the spool: a request's temporary file goes when
/// the request ends, but not when the process is killed mid-upload. Called once at start,
/// before any request can be spooling.
pub fn clear_spool(data_dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(spool_dir(data_dir)) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

fn internal(error: std::io::Error) -> ApiError {
    ApiError::Internal(error.into())
}

/// Streams `field` into a new temporary file in `dir`.
pub(super) async fn spool(
    mut field: multer::Field<'_>,
    dir: &Path,
    filename: String,
) -> ApiResult<UploadedFile> {
    let content_type = field.content_type().map(|m| m.to_string());
    tokio::fs::create_dir_all(dir).await.map_err(internal)?;
    let (file, path) = tempfile::Builder::new()
        .prefix("upload-")
        .tempfile_in(dir)
        .map_err(internal)?
        .into_parts();
    let mut file = tokio::fs::File::from_std(file);
    let mut size = 0u64;
    while let Some(chunk) = field
        .chunk()
        .await
        .map_err(super::params::multipart_error)?
    {
        file.write_all(&chunk).await.map_err(internal)?;
        size += chunk.len() as u64;
    }
    file.flush().await.map_err(internal)?;
    Ok(UploadedFile::spooled(filename, content_type, size, path))
}
