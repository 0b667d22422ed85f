//! Files from multipart bodies. Each file part is streamed to a temporary file under
//! `DATA_DIR/tmp/uploads` as it arrives (the body's size cap is enforced by the multipart
//! reader while streaming), so an upload costs the process disk, not memory. The temporary
//! file is removed when the last handle to it is dropped: after the request, after a 413 or
//! a broken body, and when a timed-out request is cancelled.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tempfile::TempPath;
use tokio::io::AsyncWriteExt;

use super::error::{ApiError, ApiResult};

/// A file from a multipart body, on disk.
#[derive(Debug, Clone)]
pub struct UploadedFile {
    pub filename: String,
    pub content_type: Option<String>,
    /// Its length in bytes.
    pub size: u64,
    path: Arc<TempPath>,
}

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

impl UploadedFile {
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
        Ok(UploadedFile {
            filename,
            content_type,
            size,
            path: Arc::new(path),
        })
    }

    /// The first `n` bytes, to recognise the content by its signature. A few bytes from a
    /// file just written: read in place rather than on a blocking thread.
    pub fn head(&self, n: usize) -> std::io::Result<Vec<u8>> {
        let mut head = Vec::with_capacity(n);
        std::fs::File::open(&*self.path)?
            .take(n as u64)
            .read_to_end(&mut head)?;
        Ok(head)
    }

    /// The whole content, for consumers that need it in memory and have checked `size`
    /// against their own, smaller cap first (plugins).
    pub async fn read(&self) -> std::io::Result<Vec<u8>> {
        tokio::fs::read(&*self.path).await
    }

    /// Keeps the file as `dir/name`: a hard link (the data directory holds both), or a copy
    /// where `dir` is on another file system.
    pub async fn persist(&self, dir: &Path, name: &str) -> ApiResult<()> {
        tokio::fs::create_dir_all(dir).await.map_err(internal)?;
        let target = dir.join(name);
        match tokio::fs::remove_file(&target).await {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(internal(error)),
        }
        if tokio::fs::hard_link(&*self.path, &target).await.is_err() {
            tokio::fs::copy(&*self.path, &target)
                .await
                .map_err(internal)?;
        }
        Ok(())
    }
}
