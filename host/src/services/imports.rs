//! Repository imports and pull mirrors: `import_url` on a project's create starts an import,
//! and a mirror's pull fetches it again. The URL is checked against the
//! outbound address policy when stored and again before every fetch (with the checked
//! addresses pinned: for git's HTTP client by `http.curloptResolve`, for `git://` by fetching
//! from the checked address itself, so a second DNS answer cannot redirect it).
//!
//! An import is bounded: at most `--max-concurrent-imports` run at once per process (the rest
//! stay `scheduled` until a slot frees), each for at most `--import-timeout-seconds`, and a
//! fetch whose repository grows past `--import-max-bytes` is stopped (dropping it kills `git`).

use std::net::SocketAddr;
use std::path::Path as FsPath;
use std::time::Duration;

use super::Refusal;
use super::projects::refresh_statistics;
use crate::context::ApiContext;
use crate::git::Repository;
use crate::jobs::{self, Job};
use crate::model::projects::ProjectRow;
use crate::model::states::ImportStatus;
use crate::outbound::{AddressPolicy, Unresolved};
use crate::settings::Settings;
use crate::store::TenantDb;

/// Schemes GitLab accepts for imports and pull mirrors over the network.
const SCHEMES: &[&str] = &["http", "https", "git"];

/// Validates an `import_url` before it is stored: `import_url` "is blocked: ...".
pub async fn check_import_url(
    ctx: &ApiContext,
    settings: &Settings,
    url: &str,
) -> Result<(), Refusal> {
    let blocked = |reason: String| Refusal::invalid("import_url", format!("is blocked: {reason}"));
    let parsed = url::Url::parse(url.trim()).map_err(|_| blocked("URI is invalid".into()))?;
    AddressPolicy::for_hooks_and_services(&ctx.config.outbound_allow_networks, settings)
        .check(&parsed, SCHEMES, Unresolved::Allow)
        .await
        .map_err(|reason| blocked(reason.to_string()))?;
    Ok(())
}

/// How often a running fetch's repository is measured.
const SIZE_POLL: Duration = Duration::from_millis(500);

/// The URL git fetches from: `git://` URLs name the checked address instead of the host
/// (git's own protocol resolves names itself, past any pin; it has no credentials to hide);
/// others are `raw`, unchanged, and pinned by [`fetch_config`].
fn pinned_url(raw: &str, url: &url::Url, addresses: &[SocketAddr]) -> anyhow::Result<String> {
    match (url.scheme(), addresses.first()) {
        ("git", Some(address)) => {
            let mut pinned = url.clone();
            pinned
                .set_ip_host(address.ip())
                .map_err(|()| anyhow::anyhow!("Import url is invalid"))?;
            Ok(pinned.to_string())
        }
        _ => Ok(raw.to_string()),
    }
}

/// The bytes under `dir`, counted in a blocking thread.
async fn disk_usage(dir: &FsPath) -> u64 {
    fn walk(dir: &FsPath) -> u64 {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return 0;
        };
        entries
            .flatten()
            .map(|entry| match entry.metadata() {
                Ok(meta) if meta.is_dir() => walk(&entry.path()),
                Ok(meta) => meta.len(),
                Err(_) => 0,
            })
            .sum()
    }
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || walk(&dir))
        .await
        .unwrap_or(0)
}

/// Runs `fetch` until it ends, `timeout` passes, or `dir` grows past `max_bytes`; the last two
/// drop the fetch, which kills its `git`.
async fn bounded<F>(fetch: F, dir: &FsPath, timeout: Duration, max_bytes: u64) -> anyhow::Result<()>
where
    F: Future<Output = anyhow::Result<()>>,
{
    let watch = async {
        loop {
            tokio::time::sleep(SIZE_POLL).await;
            if disk_usage(dir).await > max_bytes {
                return;
            }
        }
    };
    let too_large =
        || anyhow::anyhow!("Import failed: the repository is larger than {max_bytes} bytes");
    let limited = async {
        tokio::select! {
            // A fetch can finish between two measurements: measured once more at its end.
            result = fetch => match result {
                Ok(()) if disk_usage(dir).await > max_bytes => Err(too_large()),
                other => other,
            },
            () = watch => Err(too_large()),
        }
    };
    tokio::time::timeout(timeout, limited)
        .await
        .unwrap_or_else(|_| {
            Err(anyhow::anyhow!(
                "Import failed: it took longer than {} seconds",
                timeout.as_secs()
            ))
        })
}

/// `-c` options for fetching `url` from the checked `addresses`: only network protocols, no
/// redirects, and curl told which address each host name resolves to.
fn fetch_config(url: &url::Url, addresses: &[SocketAddr]) -> Vec<String> {
    let mut config = vec![
        "protocol.allow=never".to_string(),
        "protocol.http.allow=always".to_string(),
        "protocol.https.allow=always".to_string(),
        "protocol.git.allow=always".to_string(),
        "http.followRedirects=false".to_string(),
    ];
    if let (Some(host), Some(address)) = (url.host_str(), addresses.first()) {
        let ip = match address.ip() {
            std::net::IpAddr::V6(v6) => format!("[{v6}]"),
            v4 => v4.to_string(),
        };
        config.push(format!(
            "http.curloptResolve={host}:{}:{ip}",
            address.port()
        ));
    }
    config
}

/// A fetch that has been scheduled and is queued with [`PendingFetch::queue`] (after the
/// answer showing `scheduled` is ready, so the background work cannot overtake it).
pub struct PendingFetch(Job);

impl PendingFetch {
    pub async fn queue(self, ctx: &ApiContext, db: &TenantDb) -> crate::store::Result<()> {
        jobs::enqueue(ctx, db, &self.0).await
    }
}

/// Marks the project `scheduled` and prepares fetching `url` into its repository on the job
/// queue ([`fetch`]); `import_status` ends `finished`, or `failed` with `import_error`.
pub async fn schedule_fetch(
    db: &TenantDb,
    project: &ProjectRow,
    url: String,
) -> Result<PendingFetch, Refusal> {
    db.set_import_status(project.id, ImportStatus::Scheduled, None)
        .await?;
    Ok(PendingFetch(Job::Fetch {
        project_id: project.id,
        url,
    }))
}

/// A queued fetch (`jobs::Job::Fetch`) of `url` into the project's repository. Its failures
/// are its outcome (`import_status` `failed` with the reason); an error is returned only
/// when that could not be recorded. Running it again fetches again, which git makes
/// harmless.
pub async fn fetch(
    ctx: &ApiContext,
    db: &TenantDb,
    project_id: i64,
    url: &str,
) -> anyhow::Result<()> {
    // Deleted while it waited: nothing to fetch into.
    let Some(project) = db.project_by_id(project_id).await? else {
        return Ok(());
    };
    let settings = ctx.settings.get(db).await?;
    let policy = AddressPolicy::for_hooks_and_services(
        &ctx.config.outbound_allow_networks,
        settings.as_ref(),
    );
    let repo = Repository::project(&ctx.config.storage.data_dir, db.tenant_id(), project.id);
    let branch = project.head_branch();
    let id = project.id;
    let timeout = Duration::from_secs(ctx.config.import_timeout_seconds);
    let max_bytes = ctx.config.import_max_bytes;
    let _slot = ctx.imports.acquire().await.expect("never closed");
    db.set_import_status(id, ImportStatus::Started, None)
        .await?;
    let fetched = async {
        let parsed = url::Url::parse(url.trim())?;
        let addresses = policy
            .check(&parsed, SCHEMES, Unresolved::Refuse)
            .await
            .map_err(|reason| anyhow::anyhow!("Import url is blocked: {reason}"))?;
        repo.ensure(&branch).await?;
        let first = !repo.has_commits().await?;
        let source = pinned_url(url.trim(), &parsed, &addresses)?;
        let config = fetch_config(&parsed, &addresses);
        let fetch = async { Ok(repo.fetch(&source, None, &config).await?) };
        if let Err(error) = bounded(fetch, repo.path(), timeout, max_bytes).await {
            // A stopped first import leaves no partial pack on disk: the project keeps
            // an empty repository, as before the import.
            if first {
                repo.remove().await;
                repo.ensure(&branch).await?;
            }
            return Err(error);
        }
        if repo.branch_exists(&branch).await? {
            repo.set_head(&branch).await?;
        }
        refresh_statistics(db, &repo, id, &branch).await?;
        anyhow::Ok(())
    }
    .await;
    match fetched {
        Ok(()) => {
            db.set_import_status(id, ImportStatus::Finished, None)
                .await?
        }
        Err(error) => {
            // never show credentials from the URL
            let message = format!("{error:#}").replace(url.trim(), "[import url]");
            db.set_import_status(id, ImportStatus::Failed, Some(&message))
                .await?
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_urls_are_pinned_to_the_checked_address() {
        let checked: Vec<SocketAddr> = vec!["203.0.113.7:9418".parse().unwrap()];
        let git = url::Url::parse("git://example.com/group/repo.git").unwrap();
        assert_eq!(
            pinned_url("git://example.com/group/repo.git", &git, &checked).unwrap(),
            "git://203.0.113.7/group/repo.git"
        );
        let v6: Vec<SocketAddr> = vec!["[2001:db8::1]:9418".parse().unwrap()];
        assert_eq!(
            pinned_url("git://example.com/r", &git, &v6).unwrap(),
            "git://[2001:db8::1]/group/repo.git"
        );
        let raw = "https://user:secret@example.com/r.git";
        let https = url::Url::parse(raw).unwrap();
        assert_eq!(pinned_url(raw, &https, &checked).unwrap(), raw);
    }

    #[tokio::test]
    async fn fetches_are_stopped_by_time_and_size() {
        let dir = std::env::temp_dir().join(format!("trellis-bounded-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let slow = async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            anyhow::Ok(())
        };
        let error = bounded(slow, &dir, Duration::from_millis(100), u64::MAX)
            .await
            .unwrap_err();
        assert!(error.to_string().contains("took longer"), "{error}");
        let growing = async {
            std::fs::write(dir.join("pack"), vec![0u8; 4096]).unwrap();
            tokio::time::sleep(Duration::from_secs(30)).await;
            anyhow::Ok(())
        };
        let error = bounded(growing, &dir, Duration::from_secs(20), 1024)
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("larger than 1024 bytes"),
            "{error}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
