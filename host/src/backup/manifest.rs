//! `manifest.json`: what a backup holds and how to check it. Every file of the backup is
//! listed with its size and SHA-256, so a restore refuses a damaged or altered backup before
//! it writes anything.

use std::io::Read;
use std::path::Path;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The layout this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
pub const FILE_NAME: &str = "manifest.json";

#[derive(Debug, Serialize, Deserialize)]
pub struct Manifest {
    pub format_version: u32,
    pub trellis_version: String,
    /// `sqlite` or `postgres`: where the database part loads.
    pub engine: String,
    /// The newest migration the database had.
    pub schema_version: i64,
    /// RFC 3339, UTC.
    pub created_at: String,
    #[serde(flatten)]
    pub contents: Contents,
}

/// The repositories and checked files of a backup or a tenant archive.
#[derive(Debug, Serialize, Deserialize)]
pub struct Contents {
    pub repositories: Vec<RepositoryEntry>,
    pub files: Vec<FileEntry>,
}

/// A bare repository, at `path` under the data directory (a backup's) or the tenant's
/// repositories (a tenant archive's).
#[derive(Debug, Serialize, Deserialize)]
pub struct RepositoryEntry {
    pub path: String,
    /// The ref HEAD points at; a bundle does not carry it.
    pub head: String,
    /// The bundle's path in the backup; none for a repository without refs.
    pub bundle: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileEntry {
    /// Relative to the backup's root, `/`-separated.
    pub path: String,
    pub size: u64,
    pub sha256: String,
}

impl FileEntry {
    /// The entry of the file `path` of the backup at `root`.
    pub fn of(root: &Path, path: &str) -> anyhow::Result<FileEntry> {
        let (size, sha256) = digest(&root.join(path))?;
        Ok(FileEntry {
            path: path.to_string(),
            size,
            sha256,
        })
    }
}

impl Manifest {
    pub fn read(root: &Path) -> anyhow::Result<Manifest> {
        let path = root.join(FILE_NAME);
        let text = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let manifest: Manifest = serde_json::from_slice(&text)
            .with_context(|| format!("{} is not a Trellis backup manifest", path.display()))?;
        if manifest.format_version != FORMAT_VERSION {
            bail!(
                "backup format {} is not the one this Trellis reads ({FORMAT_VERSION})",
                manifest.format_version
            );
        }
        Ok(manifest)
    }

    pub fn write(&self, root: &Path) -> anyhow::Result<()> {
        std::fs::write(root.join(FILE_NAME), serde_json::to_vec_pretty(self)?)?;
        Ok(())
    }
}

impl Contents {
    /// Checks every listed file's size and SHA-256, and that every path stays inside the
    /// backup and every bundle is listed: the first difference is the error.
    pub fn verify(&self, root: &Path) -> anyhow::Result<()> {
        for entry in &self.files {
            if !stays_inside(&entry.path) {
                bail!(
                    "the manifest names a path outside its folder: {}",
                    entry.path
                );
            }
            let (size, sha256) = digest(&root.join(&entry.path))
                .with_context(|| format!("{} is missing", entry.path))?;
            if size != entry.size || sha256 != entry.sha256 {
                bail!(
                    "{} does not match the manifest (size {size}, expected {}; sha256 {sha256}, expected {}): it is damaged or was altered",
                    entry.path,
                    entry.size,
                    entry.sha256
                );
            }
        }
        for repository in &self.repositories {
            if !stays_inside(&repository.path) {
                bail!(
                    "the manifest names a repository outside its folder: {}",
                    repository.path
                );
            }
            if let Some(bundle) = &repository.bundle {
                self.require(bundle)?;
            }
        }
        Ok(())
    }

    /// Fails unless `path` is one of the checked files.
    pub fn require(&self, path: &str) -> anyhow::Result<()> {
        if self.files.iter().any(|file| file.path == path) {
            Ok(())
        } else {
            bail!("{path} is not among the checked files")
        }
    }
}

/// Whether `path` is relative and names no parent (`..`) or root: it stays inside the folder
/// it is joined to.
fn stays_inside(path: &str) -> bool {
    let path = Path::new(path);
    !path.as_os_str().is_empty()
        && path
            .components()
            .all(|part| matches!(part, std::path::Component::Normal(_)))
}

/// The size and hex SHA-256 of the file at `path`.
fn digest(path: &Path) -> anyhow::Result<(u64, String)> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 256 * 1024];
    let mut size = 0u64;
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
        size += read as u64;
    }
    Ok((size, hex::encode(hasher.finalize())))
}
