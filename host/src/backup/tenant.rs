//! `trellis tenant export` and `trellis tenant import`: one tenant's rows, repositories and
//! uploads as one tar file, loaded into another deployment (either engine) under a new host.
//!
//! The archive holds `manifest.json` (what it holds, every file's size and SHA-256), `rows/`
//! (`store::tenant_rows`), one bundle per repository under `repositories/` and the tenant's
//! uploads under `uploads/`. Credentials travel only when the operator asks
//! (`--include-secrets`): then the values this deployment encrypts are written in the clear
//! and encrypted anew with the importing deployment's key.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::manifest::{Contents, FileEntry, RepositoryEntry};
use super::{bundle_repositories, engine_name, project_id_of, restore_each, walk_files};
use crate::git;
use crate::services::projects::UPLOADS_DIR;
use crate::settings::catalog;
use crate::settings::crypto::SecretKey;
use crate::store::Db;
use crate::store::backup::ColumnDump;
use crate::store::tenant_rows::{RowFilter, TenantTable};
use crate::store::tenants::TenantRow;

const FORMAT: &str = "trellis-tenant";
const FORMAT_VERSION: u32 = 1;
const MANIFEST_FILE: &str = "manifest.json";
const ROWS_DIR: &str = "rows";
const REPOSITORIES_DIR: &str = "repositories";

/// State no other deployment can use (queued work, counters, browser sessions): never
/// exported.
const TRANSIENT_TABLES: &[&str] = &["jobs", "rate_limit_counters", "web_sessions"];
/// Tables of credentials only: exported and imported with `--include-secrets` alone.
const CREDENTIAL_TABLES: &[&str] = &[
    "personal_access_tokens",
    "oauth_access_grants",
    "oauth_access_tokens",
    "oauth_signing_keys",
];
/// Columns holding a credential (a password or token digest, a webhook's secret token):
/// emptied unless secrets are carried.
const CREDENTIAL_COLUMNS: &[(&str, &str)] = &[
    ("users", "password_digest"),
    ("users", "reset_password_token_digest"),
    ("users", "confirmation_token_digest"),
    ("emails", "confirmation_token_digest"),
    ("project_hooks", "token"),
    ("system_hooks", "token"),
];
/// Columns encrypted with the deployment's secret key.
const ENCRYPTED_COLUMNS: &[(&str, &str)] = &[
    ("project_hooks", "token"),
    ("system_hooks", "token"),
    ("oauth_signing_keys", "private_key"),
];

#[derive(Debug, Serialize, Deserialize)]
struct TenantManifest {
    /// `trellis-tenant`: tells a tenant archive from a backup.
    format: String,
    format_version: u32,
    trellis_version: String,
    /// The engine it was exported from (it imports into either).
    engine: String,
    schema_version: i64,
    /// RFC 3339, UTC.
    created_at: String,
    /// The host the tenant answered where it was exported.
    host: String,
    includes_secrets: bool,
    tables: Vec<TenantTable>,
    #[serde(flatten)]
    contents: Contents,
}

/// What an export wrote.
pub struct Exported {
    pub tenant: TenantRow,
    pub rows: u64,
    pub repositories: usize,
    pub uploads: usize,
    pub bytes: u64,
}

/// Writes the tenant `tenant` of `db` (whose files are in `data_dir`) into the tar file
/// `output`, which must not exist; `secret_key` is given to carry secrets.
pub async fn export(
    db: &Db,
    data_dir: &Path,
    tenant: TenantRow,
    output: &Path,
    secret_key: Option<&SecretKey>,
) -> anyhow::Result<Exported> {
    if output.exists() {
        bail!("{} exists already", output.display());
    }
    let parent = match output.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let staging = tempfile::Builder::new()
        .prefix(".trellis-tenant-export-")
        .tempdir_in(parent)
        .with_context(|| format!("making a folder in {}", parent.display()))?;
    let root = staging.path();
    let schema_version = db.schema_version().await?;
    let created_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);

    // The rows first: a repository then holds at least what they refer to.
    std::fs::create_dir(root.join(ROWS_DIR))?;
    let mut skipped: Vec<&str> = TRANSIENT_TABLES.to_vec();
    let mut filter = ArchiveFilter::new(match secret_key {
        Some(key) => Secrets::Decrypt(key),
        None => {
            skipped.extend(CREDENTIAL_TABLES);
            Secrets::Leave
        }
    });
    let tables = db
        .export_tenant_rows(tenant.id, &root.join(ROWS_DIR), &skipped, &mut filter)
        .await?;
    let mut written: Vec<String> = tables
        .iter()
        .map(|table| format!("{ROWS_DIR}/{}", table.file))
        .collect();

    // A project created after the rows were read has a repository but no row: left out.
    let tenant_root = git::root(data_dir, tenant.id);
    let found: Vec<_> = git::bundle::list_tenant(&tenant_root)?
        .into_iter()
        .filter(|repository| {
            project_id_of(repository.path()).is_some_and(|id| filter.projects.contains(&id))
        })
        .collect();
    let repositories =
        bundle_repositories(found, &tenant_root, root, &format!("{REPOSITORIES_DIR}/")).await?;
    written.extend(
        repositories
            .iter()
            .filter_map(|repository| repository.bundle.clone()),
    );

    let uploads_root = data_dir.join(UPLOADS_DIR).join(tenant.id.to_string());
    let mut uploads = Vec::new();
    walk_files(&uploads_root, Path::new(""), &mut uploads)?;
    for upload in &uploads {
        let relative = upload.to_str().context("a file name that is not UTF-8")?;
        let path = format!("{UPLOADS_DIR}/{relative}");
        let target = root.join(&path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(uploads_root.join(upload), &target)
            .with_context(|| format!("copying upload {relative}"))?;
        written.push(path);
    }

    let files = written
        .iter()
        .map(|path| FileEntry::of(root, path))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let bytes = files.iter().map(|file| file.size).sum();
    let rows = tables.iter().map(|table| table.rows).sum();
    let manifest = TenantManifest {
        format: FORMAT.to_string(),
        format_version: FORMAT_VERSION,
        trellis_version: crate::VERSION.to_string(),
        engine: engine_name(db.engine()).to_string(),
        schema_version,
        created_at,
        host: tenant.host.clone(),
        includes_secrets: secret_key.is_some(),
        tables,
        contents: Contents {
            repositories,
            files,
        },
    };
    std::fs::write(
        root.join(MANIFEST_FILE),
        serde_json::to_vec_pretty(&manifest)?,
    )?;
    write_tar(root, &written, output)?;
    Ok(Exported {
        tenant,
        rows,
        repositories: manifest.contents.repositories.len(),
        uploads: uploads.len(),
        bytes,
    })
}

/// What an import made.
pub struct Imported {
    pub tenant: TenantRow,
    /// The host it answered where it was exported.
    pub source_host: String,
    pub rows: u64,
    pub repositories: usize,
    pub uploads: usize,
    pub includes_secrets: bool,
}

/// Loads the tenant archive `input` into `db` and `data_dir` as a new tenant answering
/// `host` (normalised, not taken); `secret_key` is given to carry the archive's secrets.
/// Every checksum is verified first, and nothing is left behind when a step fails.
pub async fn import(
    db: &Db,
    data_dir: &Path,
    input: &Path,
    host: &str,
    secret_key: Option<&SecretKey>,
) -> anyhow::Result<Imported> {
    if db.find_tenant(host).await?.is_some() {
        bail!("a tenant for {host} already exists");
    }
    // Unpacked inside the data directory, so the repositories and uploads are moved into
    // place by a rename.
    let staging = tempfile::Builder::new()
        .prefix(".trellis-tenant-import-")
        .tempdir_in(data_dir)?;
    let root = &staging.path().join("archive");
    unpack(input, root)?;
    let manifest = read_manifest(root)?;
    manifest.contents.verify(root)?;
    for table in &manifest.tables {
        manifest
            .contents
            .require(&format!("{ROWS_DIR}/{}", table.file))?;
    }
    let schema_version = db.schema_version().await?;
    if manifest.schema_version != schema_version {
        bail!(
            "the archive's schema is migration {}, this deployment's is {schema_version}: import with the same Trellis version as the export's ({})",
            manifest.schema_version,
            manifest.trellis_version
        );
    }
    if secret_key.is_some() && !manifest.includes_secrets {
        bail!("the archive holds no secrets: it was exported without --include-secrets");
    }

    // Repositories are made in the staging folder first: the database transaction below is
    // open only while they are moved into place.
    let made = staging.path().join("repositories");
    let projects = imported_projects(&manifest, root)?;
    let wanted: Vec<&RepositoryEntry> = manifest
        .contents
        .repositories
        .iter()
        .filter(|entry| {
            project_id_of(Path::new(&entry.path)).is_some_and(|id| projects.contains(&id))
        })
        .collect();
    restore_each(&wanted, root, &made).await?;
    // Only the uploads the manifest lists and vouches for go into place.
    let uploads_made = staging.path().join(UPLOADS_DIR);
    let mut uploads = 0;
    for file in &manifest.contents.files {
        if let Some(relative) = file.path.strip_prefix(&format!("{UPLOADS_DIR}/")) {
            let target = uploads_made.join(relative);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::rename(root.join(&file.path), target)?;
            uploads += 1;
        }
    }

    let mut filter = ArchiveFilter::new(match secret_key {
        Some(key) => Secrets::Encrypt(key),
        None => Secrets::Leave,
    });
    let mut placed: Vec<PathBuf> = Vec::new();
    let imported = db
        .import_tenant_rows(
            host,
            &root.join(ROWS_DIR),
            &manifest.tables,
            &mut filter,
            async |tenant: &TenantRow| {
                let repositories = git::root(data_dir, tenant.id);
                let uploads = data_dir.join(UPLOADS_DIR).join(tenant.id.to_string());
                for (from, to) in [(&made, repositories), (&uploads_made, uploads)] {
                    if to.exists() {
                        bail!("{} exists already", to.display());
                    }
                    if from.exists() {
                        if let Some(parent) = to.parent() {
                            std::fs::create_dir_all(parent)?;
                        }
                        std::fs::rename(from, &to)
                            .with_context(|| format!("moving files into {}", to.display()))?;
                        placed.push(to);
                    }
                }
                Ok(())
            },
        )
        .await;
    let tenant = match imported {
        Ok(tenant) => tenant,
        Err(error) => {
            for path in &placed {
                let _ = std::fs::remove_dir_all(path);
            }
            return Err(error);
        }
    };
    Ok(Imported {
        tenant,
        source_host: manifest.host,
        rows: manifest.tables.iter().map(|table| table.rows).sum(),
        repositories: wanted.len(),
        uploads,
        includes_secrets: secret_key.is_some(),
    })
}

/// Unpacks the tar file `input` into `root`: regular files and folders only, none outside it.
fn unpack(input: &Path, root: &Path) -> anyhow::Result<()> {
    std::fs::create_dir(root)?;
    let archive =
        std::fs::File::open(input).with_context(|| format!("opening {}", input.display()))?;
    let mut archive = tar::Archive::new(std::io::BufReader::new(archive));
    let entries = archive
        .entries()
        .with_context(|| format!("{} is not a tar file", input.display()))?;
    for entry in entries {
        let mut entry = entry.with_context(|| format!("{} is not a tar file", input.display()))?;
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_dir()) {
            bail!(
                "the archive holds {}, which is neither a file nor a folder",
                entry.path()?.display()
            );
        }
        if !entry.unpack_in(root)? {
            bail!(
                "the archive names a path outside its folder: {}",
                entry.path()?.display()
            );
        }
    }
    Ok(())
}

fn read_manifest(root: &Path) -> anyhow::Result<TenantManifest> {
    let text = std::fs::read(root.join(MANIFEST_FILE))
        .context("the archive has no manifest.json: it is not a Trellis tenant archive")?;
    let manifest: TenantManifest = serde_json::from_slice(&text)
        .context("the archive's manifest.json is not a Trellis tenant manifest")?;
    if manifest.format != FORMAT {
        bail!(
            "the archive is not a Trellis tenant archive ({})",
            manifest.format
        );
    }
    if manifest.format_version != FORMAT_VERSION {
        bail!(
            "tenant archive format {} is not the one this Trellis reads ({FORMAT_VERSION})",
            manifest.format_version
        );
    }
    Ok(manifest)
}

/// The ids of the projects among the archive's rows.
fn imported_projects(manifest: &TenantManifest, root: &Path) -> anyhow::Result<BTreeSet<i64>> {
    let Some(table) = manifest
        .tables
        .iter()
        .find(|table| table.name == "projects")
    else {
        return Ok(BTreeSet::new());
    };
    let id = table
        .columns
        .iter()
        .position(|column| column.name == "id")
        .context("the archive's projects have no id")?;
    let text = std::fs::read_to_string(root.join(ROWS_DIR).join(&table.file))?;
    text.lines()
        .map(|line| {
            let row: Vec<Value> = serde_json::from_str(line)?;
            row.get(id)
                .and_then(Value::as_i64)
                .context("a project row without an id")
        })
        .collect()
}

/// Writes the files `paths` of `root`, and its manifest, as the tar file `output` (only its
/// owner may read it: it holds a tenant's private data).
fn write_tar(root: &Path, paths: &[String], output: &Path) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options
        .open(output)
        .with_context(|| format!("creating {}", output.display()))?;
    let mut tar = tar::Builder::new(std::io::BufWriter::new(file));
    tar.mode(tar::HeaderMode::Deterministic);
    for path in std::iter::once(MANIFEST_FILE).chain(paths.iter().map(String::as_str)) {
        tar.append_path_with_name(root.join(path), path)
            .with_context(|| format!("adding {path} to the archive"))?;
    }
    tar.into_inner()?.flush()?;
    Ok(())
}

/// What happens to the values a deployment encrypts or that are credentials.
enum Secrets<'a> {
    /// Credentials are not carried: credential tables' rows dropped, credential columns
    /// emptied, secret settings removed, OAuth application secrets unusable until renewed.
    Leave,
    /// Exported with secrets: encrypted values decrypted with this deployment's key.
    Decrypt(&'a SecretKey),
    /// Imported with secrets: encrypted values encrypted with this deployment's key.
    Encrypt(&'a SecretKey),
}

/// The filter of an export or an import.
struct ArchiveFilter<'a> {
    secrets: Secrets<'a>,
    /// The projects that passed, whose repositories go with them.
    projects: BTreeSet<i64>,
}

impl<'a> ArchiveFilter<'a> {
    fn new(secrets: Secrets<'a>) -> Self {
        ArchiveFilter {
            secrets,
            projects: BTreeSet::new(),
        }
    }
}

impl RowFilter for ArchiveFilter<'_> {
    fn filter(
        &mut self,
        table: &str,
        columns: &[ColumnDump],
        row: &mut [Value],
    ) -> anyhow::Result<bool> {
        if table == "projects"
            && let Some(id) = value_of(columns, row, "id").and_then(|id| id.as_i64())
        {
            self.projects.insert(id);
        }
        apply(&self.secrets, table, columns, row)
    }
}

/// `secrets` applied to one row of `table`: whether the row is kept.
fn apply(
    secrets: &Secrets<'_>,
    table: &str,
    columns: &[ColumnDump],
    row: &mut [Value],
) -> anyhow::Result<bool> {
    match secrets {
        Secrets::Leave => {
            if CREDENTIAL_TABLES.contains(&table) {
                return Ok(false);
            }
            for (_, column) in CREDENTIAL_COLUMNS.iter().filter(|(t, _)| *t == table) {
                if let Some(value) = value_mut(columns, row, column) {
                    *value = Value::Null;
                }
            }
            if table == "oauth_applications"
                && let Some(value) = value_mut(columns, row, "secret_digest")
            {
                // No secret hashes to the empty digest: the application works again once
                // its owner renews the secret.
                *value = Value::from("");
            }
        }
        Secrets::Decrypt(key) | Secrets::Encrypt(key) => {
            let decrypt = matches!(secrets, Secrets::Decrypt(_));
            let convert = |text: &str| -> anyhow::Result<String> {
                if decrypt {
                    key.decrypt(text).with_context(|| {
                        format!(
                            "a value of {table} does not decrypt with this deployment's secret key"
                        )
                    })
                } else {
                    Ok(key.encrypt(text))
                }
            };
            for (_, column) in ENCRYPTED_COLUMNS.iter().filter(|(t, _)| *t == table) {
                if let Some(value) = value_mut(columns, row, column)
                    && let Some(text) = value.as_str()
                {
                    *value = Value::from(convert(text)?);
                }
            }
            if table != "application_settings" {
                return Ok(true);
            }
        }
    }
    if table == "application_settings"
        && let Some(value) = value_mut(columns, row, "data")
        && let Some(text) = value.as_str()
    {
        let mut data: Map<String, Value> =
            serde_json::from_str(text).context("the settings are not a JSON object")?;
        for (name, setting) in data.iter_mut() {
            if !catalog::entry(name).is_some_and(|entry| entry.secret) {
                continue;
            }
            match (secrets, setting.as_str()) {
                (Secrets::Decrypt(key), Some(stored)) => {
                    *setting = Value::from(key.decrypt(stored).with_context(|| {
                        format!(
                            "the setting {name} does not decrypt with this deployment's secret key"
                        )
                    })?);
                }
                (Secrets::Encrypt(key), Some(plain)) => *setting = Value::from(key.encrypt(plain)),
                _ => {}
            }
        }
        if matches!(secrets, Secrets::Leave) {
            data.retain(|name, _| !catalog::entry(name).is_some_and(|entry| entry.secret));
        }
        *value = Value::from(serde_json::to_string(&data)?);
    }
    Ok(true)
}

fn value_of<'r>(columns: &[ColumnDump], row: &'r [Value], name: &str) -> Option<&'r Value> {
    let index = columns.iter().position(|column| column.name == name)?;
    row.get(index)
}

fn value_mut<'r>(
    columns: &[ColumnDump],
    row: &'r mut [Value],
    name: &str,
) -> Option<&'r mut Value> {
    let index = columns.iter().position(|column| column.name == name)?;
    row.get_mut(index)
}
