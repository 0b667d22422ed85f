//! `trellis backup create` and `trellis backup restore`: an online, consistent copy of a
//! deployment, and its loading into an empty one.
//!
//! A backup is a folder: `database/` (the store's copy, `store::backup`), one git bundle per
//! repository under `repositories/` (`git::bundle`), the data directory's files that matter
//! under `files/` (uploads, the secret key, the SSH host key) and `manifest.json`, written
//! last, with every file's size and SHA-256. What the server remakes at start (git hooks,
//! the plugin cache, sockets, the upload spool) is left out, and so is the mail folder.

mod manifest;
pub mod tenant;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use futures_util::{StreamExt, TryStreamExt};

pub use manifest::Manifest;
use manifest::{Contents, FORMAT_VERSION, FileEntry, RepositoryEntry};

use crate::config::{BackupCommand, StorageArgs};
use crate::git::{self, Repository};
use crate::keys::SSH_HOST_KEY_FILE;
use crate::services::projects::UPLOADS_DIR;
use crate::settings::crypto::SECRET_KEY_FILE;
use crate::store::backup::{self as store_backup, SQLITE_FILE, TABLES_FILE, TableDump};
use crate::store::{self, Db, DbOptions, Engine};

const DATABASE_DIR: &str = "database";
const FILES_DIR: &str = "files";
/// The data directory's single files a backup keeps (the secret key decrypts stored secrets;
/// the host key keeps clients' `known_hosts` valid).
const KEY_FILES: &[&str] = &[SECRET_KEY_FILE, SSH_HOST_KEY_FILE];

/// Runs `trellis backup create` or `restore`, and says what it did.
pub async fn run(storage: &StorageArgs, command: BackupCommand) -> anyhow::Result<()> {
    match command {
        BackupCommand::Create { output } => {
            let manifest = create(storage, &output).await?;
            let bytes: u64 = manifest.contents.files.iter().map(|file| file.size).sum();
            println!(
                "backup written to {}: {} database, {} repositories, {} files, {bytes} bytes",
                output.display(),
                manifest.engine,
                manifest.contents.repositories.len(),
                manifest.contents.files.len(),
            );
        }
        BackupCommand::Restore { input } => {
            let Restored {
                manifest,
                repositories,
            } = restore(storage, &input).await?;
            let skipped = manifest.contents.repositories.len() - repositories;
            println!(
                "restored the backup of {} ({repositories} repositories, {} files; {skipped} repositories of projects created after the database copy left out)",
                manifest.created_at,
                manifest.contents.files.len(),
            );
        }
    }
    Ok(())
}

/// Writes a backup of the deployment `storage` names into `output` (absent or empty), while
/// the server may be running.
pub async fn create(storage: &StorageArgs, output: &Path) -> anyhow::Result<Manifest> {
    prepare_output(output)?;
    let options = db_options(storage);
    if let Some(file) = store_backup::sqlite_file(&options)?
        && !file.is_file()
    {
        bail!("there is no database at {}", file.display());
    }
    let db = Db::connect(options).await?;
    let engine = db.engine();
    let schema_version = db.schema_version().await?;
    let created_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    // The database first: a repository then holds at least what the rows refer to.
    let database_dir = output.join(DATABASE_DIR);
    std::fs::create_dir(&database_dir)?;
    let mut written: Vec<String> = db
        .back_up(&database_dir)
        .await?
        .into_iter()
        .map(|file| format!("{DATABASE_DIR}/{}", file.display()))
        .collect();
    db.close().await;

    // `repositories/<tenant>/<id>.git.bundle`, as in the data directory.
    let found = git::bundle::list(&git::repositories(&storage.data_dir))?;
    let repositories = bundle_repositories(found, &storage.data_dir, output, "").await?;
    written.extend(
        repositories
            .iter()
            .filter_map(|repository| repository.bundle.clone()),
    );
    written.extend(copy_files(&storage.data_dir, output)?);

    let files = written
        .iter()
        .map(|path| FileEntry::of(output, path))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        trellis_version: crate::VERSION.to_string(),
        engine: engine_name(engine).to_string(),
        schema_version,
        created_at,
        contents: Contents {
            repositories,
            files,
        },
    };
    manifest.write(output)?;
    Ok(manifest)
}

/// What a restore loaded.
pub struct Restored {
    pub manifest: Manifest,
    /// Repositories made anew: those of the backup whose project is in its database.
    pub repositories: usize,
}

/// Loads the backup at `input` into the deployment `storage` names, which must be empty (no
/// tenant in its database, no repository or upload in its data directory). Every checksum is
/// verified before anything is written.
pub async fn restore(storage: &StorageArgs, input: &Path) -> anyhow::Result<Restored> {
    let manifest = Manifest::read(input)?;
    manifest.contents.verify(input)?;
    let options = db_options(storage);
    let sqlite_target = store_backup::sqlite_file(&options)?;
    let engine = if sqlite_target.is_some() {
        Engine::Sqlite
    } else {
        Engine::Postgres
    };
    if manifest.engine != engine_name(engine) {
        bail!(
            "this is a {} backup; it loads into {} only",
            manifest.engine,
            manifest.engine
        );
    }
    if manifest.schema_version > store_backup::newest_migration() {
        bail!(
            "the backup's schema (migration {}) is newer than this Trellis {} knows",
            manifest.schema_version,
            crate::VERSION
        );
    }
    check_database_files(&manifest, input, engine)?;
    refuse_unless_empty(&storage.data_dir)?;
    // A server starting on the same database waits until the rows are in.
    let _startup = store::startup_lock(&options).await?;
    let projects = match &sqlite_target {
        Some(file) => {
            if file.exists() {
                let db = Db::connect(db_options(storage)).await?;
                let empty = db.holds_no_deployment().await?;
                db.close().await;
                if !empty {
                    bail!("the database {} already holds a deployment", file.display());
                }
                for suffix in ["", "-wal", "-shm"] {
                    let mut path = file.clone().into_os_string();
                    path.push(suffix);
                    remove_if_present(Path::new(&path))?;
                }
            }
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::copy(input.join(DATABASE_DIR).join(SQLITE_FILE), file)
                .with_context(|| format!("writing {}", file.display()))?;
            let db = Db::connect(db_options(storage)).await?;
            let projects = db.project_keys().await?;
            db.close().await;
            projects
        }
        None => {
            let db = Db::connect(db_options(storage)).await?;
            if !db.holds_no_deployment().await? {
                bail!("the database already holds a deployment");
            }
            db.migrate().await?;
            if db.schema_version().await? != manifest.schema_version {
                bail!(
                    "the backup's schema is migration {}, this Trellis's is {}: restore with the Trellis version that made it ({})",
                    manifest.schema_version,
                    store_backup::newest_migration(),
                    manifest.trellis_version
                );
            }
            db.restore_postgres(&input.join(DATABASE_DIR)).await?;
            let projects = db.project_keys().await?;
            db.close().await;
            projects
        }
    };
    restore_files(&manifest, input, &storage.data_dir)?;
    let restored = restore_repositories(&manifest, input, &storage.data_dir, &projects).await?;
    Ok(Restored {
        manifest,
        repositories: restored,
    })
}

fn db_options(storage: &StorageArgs) -> DbOptions<'_> {
    DbOptions {
        database_url: storage.database_url.as_deref(),
        data_dir: &storage.data_dir,
        max_connections: 2,
    }
}

fn engine_name(engine: Engine) -> &'static str {
    match engine {
        Engine::Sqlite => "sqlite",
        Engine::Postgres => "postgres",
    }
}

fn prepare_output(output: &Path) -> anyhow::Result<()> {
    match std::fs::read_dir(output) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                bail!("{} is not empty", output.display());
            }
            Ok(())
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(output)
                .with_context(|| format!("creating {}", output.display()))
        }
        Err(error) => Err(error).with_context(|| format!("reading {}", output.display())),
    }
}

/// Bundles `found` (repositories under `base`) into `output`, as many at once as there are
/// cores: each bundle at `<prefix><path under base>.bundle`.
async fn bundle_repositories(
    found: Vec<Repository>,
    base: &Path,
    output: &Path,
    prefix: &str,
) -> anyhow::Result<Vec<RepositoryEntry>> {
    let parallel = std::thread::available_parallelism().map_or(1, |n| n.get());
    futures_util::stream::iter(found)
        .map(|repository| async move {
            let relative = repository
                .path()
                .strip_prefix(base)
                .context("a repository outside its folder")?
                .to_str()
                .context("a repository path that is not UTF-8")?
                .to_string();
            let bundle = format!("{prefix}{relative}.bundle");
            let file = output.join(&bundle);
            if let Some(parent) = file.parent() {
                tokio::fs::create_dir_all(parent).await?;
            }
            let head = repository.head_ref().await?;
            let bundled = repository
                .bundle(&file)
                .await
                .with_context(|| format!("bundling {relative}"))?;
            anyhow::Ok(RepositoryEntry {
                path: relative,
                head,
                bundle: bundled.then_some(bundle),
            })
        })
        .buffered(parallel)
        .try_collect()
        .await
}

/// Makes each of `entries` anew under `base` from its bundle in `input`, as many at once as
/// there are cores.
async fn restore_each(
    entries: &[&RepositoryEntry],
    input: &Path,
    base: &Path,
) -> anyhow::Result<()> {
    let parallel = std::thread::available_parallelism().map_or(1, |n| n.get());
    futures_util::stream::iter(entries)
        .map(|entry| async move {
            let repository = Repository::at(base.join(&entry.path));
            let bundle = entry.bundle.as_ref().map(|bundle| input.join(bundle));
            repository
                .restore(bundle.as_deref(), &entry.head)
                .await
                .with_context(|| format!("restoring {}", entry.path))
        })
        .buffer_unordered(parallel)
        .try_collect::<()>()
        .await
}

/// Copies the key files and every upload of `data_dir` under `output/files/`: the paths
/// written, relative to `output`.
fn copy_files(data_dir: &Path, output: &Path) -> anyhow::Result<Vec<String>> {
    let mut relative: Vec<PathBuf> = KEY_FILES
        .iter()
        .map(PathBuf::from)
        .filter(|name| data_dir.join(name).is_file())
        .collect();
    walk_files(data_dir, Path::new(UPLOADS_DIR), &mut relative)?;
    let mut written = Vec::with_capacity(relative.len());
    for path in relative {
        let target = output.join(FILES_DIR).join(&path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(data_dir.join(&path), &target)
            .with_context(|| format!("copying {}", path.display()))?;
        let path = path.to_str().context("a file name that is not UTF-8")?;
        written.push(format!("{FILES_DIR}/{path}"));
    }
    Ok(written)
}

/// Adds the regular files under `root/dir` (relative to `root`) to `found`; symbolic links
/// are not followed.
fn walk_files(root: &Path, dir: &Path, found: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let entries = match std::fs::read_dir(root.join(dir)) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error.into()),
    };
    for entry in entries {
        let entry = entry?;
        let kind = entry.file_type()?;
        let path = dir.join(entry.file_name());
        if kind.is_dir() {
            walk_files(root, &path, found)?;
        } else if kind.is_file() {
            found.push(path);
        }
    }
    Ok(())
}

/// Checks that every file the database load reads was among the verified ones.
fn check_database_files(manifest: &Manifest, input: &Path, engine: Engine) -> anyhow::Result<()> {
    match engine {
        Engine::Sqlite => manifest
            .contents
            .require(&format!("{DATABASE_DIR}/{SQLITE_FILE}")),
        Engine::Postgres => {
            manifest
                .contents
                .require(&format!("{DATABASE_DIR}/{TABLES_FILE}"))?;
            let tables: Vec<TableDump> = serde_json::from_slice(&std::fs::read(
                input.join(DATABASE_DIR).join(TABLES_FILE),
            )?)?;
            for table in &tables {
                manifest
                    .contents
                    .require(&format!("{DATABASE_DIR}/{}", table.file))?;
            }
            Ok(())
        }
    }
}

/// Refuses a data directory that already has repositories or uploads.
fn refuse_unless_empty(data_dir: &Path) -> anyhow::Result<()> {
    let repositories = git::bundle::list(&git::repositories(data_dir))?;
    if !repositories.is_empty() {
        bail!(
            "the data directory {} already has {} repositories: restore into an empty deployment",
            data_dir.display(),
            repositories.len()
        );
    }
    let mut uploads = Vec::new();
    walk_files(data_dir, Path::new(UPLOADS_DIR), &mut uploads)?;
    if !uploads.is_empty() {
        bail!(
            "the data directory {} already has uploads: restore into an empty deployment",
            data_dir.display()
        );
    }
    Ok(())
}

fn remove_if_present(path: &Path) -> anyhow::Result<()> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            Err(error).with_context(|| format!("removing {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// Copies the backup's `files/` into `data_dir`; the key files only their owner may read.
fn restore_files(manifest: &Manifest, input: &Path, data_dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let prefix = format!("{FILES_DIR}/");
    for entry in &manifest.contents.files {
        let Some(relative) = entry.path.strip_prefix(&prefix) else {
            continue;
        };
        let target = data_dir.join(relative);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(input.join(&entry.path), &target)
            .with_context(|| format!("writing {}", target.display()))?;
        if KEY_FILES.contains(&relative) {
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600))?;
        }
    }
    Ok(())
}

/// Makes every repository of the backup whose project is in the restored database anew from
/// its bundle, as many at once as there are cores: how many.
async fn restore_repositories(
    manifest: &Manifest,
    input: &Path,
    data_dir: &Path,
    projects: &BTreeSet<(i64, i64)>,
) -> anyhow::Result<usize> {
    let wanted: Vec<&RepositoryEntry> = manifest
        .contents
        .repositories
        .iter()
        .filter(|entry| project_of(&entry.path).is_some_and(|key| projects.contains(&key)))
        .collect();
    restore_each(&wanted, input, data_dir).await?;
    Ok(wanted.len())
}

/// The `(tenant, project)` of a repository path, `repositories/<tenant>/<id>.git` or
/// `<id>.wiki.git`.
fn project_of(path: &str) -> Option<(i64, i64)> {
    let path = Path::new(path);
    let tenant = path.parent()?.file_name()?.to_str()?.parse().ok()?;
    Some((tenant, project_id_of(path)?))
}

/// The project id a repository's path names: `<id>.git` or `<id>.wiki.git`.
fn project_id_of(path: &Path) -> Option<i64> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".git")?;
    stem.strip_suffix(".wiki").unwrap_or(stem).parse().ok()
}

#[cfg(test)]
mod tests {
    use super::{project_id_of, project_of};
    use std::path::Path;

    #[test]
    fn repository_paths_name_their_project() {
        assert_eq!(project_of("repositories/3/17.git"), Some((3, 17)));
        assert_eq!(project_of("repositories/3/17.wiki.git"), Some((3, 17)));
        assert_eq!(project_of("repositories/3/x.git"), None);
        assert_eq!(project_of("17.git"), None);
        assert_eq!(project_id_of(Path::new("17.wiki.git")), Some(17));
    }
}
