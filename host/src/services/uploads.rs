//! Files a request carried, spooled on disk by the HTTP layer, and what keeps them: project
//! uploads under `DATA_DIR/uploads/<tenant>/project/<project id>/<secret>/<filename>`.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use tempfile::TempPath;

use crate::services::Refusal;
use crate::store::TenantDb;
use crate::store::hooks::UploadRow;

/// A file from a request body, on disk. The temporary file is removed when the last handle
/// to it is dropped.
#[derive(Debug, Clone)]
pub struct UploadedFile {
    pub filename: String,
    pub content_type: Option<String>,
    /// Its length in bytes.
    pub size: u64,
    path: Arc<TempPath>,
}

impl UploadedFile {
    pub fn spooled(
        filename: String,
        content_type: Option<String>,
        size: u64,
        path: TempPath,
    ) -> UploadedFile {
        UploadedFile {
            filename,
            content_type,
            size,
            path: Arc::new(path),
        }
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
    pub async fn persist(&self, dir: &Path, name: &str) -> std::io::Result<()> {
        tokio::fs::create_dir_all(dir).await?;
        let target = dir.join(name);
        match tokio::fs::remove_file(&target).await {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
        }
        if tokio::fs::hard_link(&*self.path, &target).await.is_err() {
            tokio::fs::copy(&*self.path, &target).await?;
        }
        Ok(())
    }
}

/// The last path segment of a client's file name with anything but letters, digits, `.`, `-`
/// and `_` replaced by `_` and no leading dots; `fallback` when nothing is left.
pub fn safe_filename(name: &str, fallback: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(fallback);
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
        fallback.into()
    } else {
        cleaned
    }
}

/// A project's upload: at most `max_bytes` (the `max_attachment_size` setting), kept under a
/// new random secret with a safe name, then recorded.
pub async fn attach_to_project(
    data_dir: &Path,
    db: &TenantDb,
    project_id: i64,
    uploader_id: i64,
    file: &UploadedFile,
    max_bytes: u64,
) -> Result<UploadRow, Refusal> {
    if file.size > max_bytes {
        return Err(Refusal::UploadTooLarge);
    }
    super::quotas::check_upload(db).await?;
    let name = safe_filename(&file.filename, "file");
    let secret = hex::encode(rand::random::<[u8; 16]>());
    let dir = super::projects::uploads_dir(
        data_dir,
        db.tenant_id(),
        &format!("project/{project_id}/{secret}"),
    );
    file.persist(&dir, &name)
        .await
        .map_err(anyhow::Error::from)?;
    Ok(db
        .insert_upload(
            project_id,
            uploader_id,
            &secret,
            &name,
            file.size as i64,
            file.content_type.as_deref(),
        )
        .await?)
}
