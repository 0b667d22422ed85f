//! The `trellis` command line: `serve`, `migrate`, `tenant`, `token`, `git-hook`, and `plugin`
//! (`check` and `run` a policy plugin locally).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use metrics_exporter_prometheus::PrometheusBuilder;
use tracing_subscriber::EnvFilter;

use crate::auth::cache::TokenCache;
use crate::config::{
    ArchiveSecrets, Cli, Command, GitHookCommand, PluginCommand, ServeConfig, StorageArgs,
    TenantCommand, TokenCommand,
};
use crate::connection_caps::{self, ConnectionCaps};
use crate::context::{ApiContext, Inner};
use crate::git_access::transfers::Transfers;
use crate::http::fair_share::FairShare;
use crate::invalidation::FALLBACK_REFRESH;
use crate::mail::Mailer;
use crate::plugins::external_auth::ExternalAuthorization;
use crate::plugins::runtime::{Runtime, RuntimeOptions};
use crate::plugins::{self, Maxima, Plugins};
use crate::ratelimit::{self, Limiter};
use crate::redis_link::RedisLink;
use crate::services::push::PushSessions;
use crate::settings::keys;
use crate::settings::{SecretKey, SettingsCache};
use crate::store::tenants::DEFAULT_TENANT_HOST;
use crate::store::{self, Db, DbOptions};
use crate::tenants::quotas::QuotaArg;
use crate::tenants::{self, RootCredentials, TenantRegistry};
use crate::{auth, backup, http, services, shutdown};

/// Runs the command the arguments name.
pub fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // Run by git for every push: no runtime, no logging on the stderr git relays.
    if let Command::GitHook { hook } = &cli.command {
        let GitHookCommand::PreReceive = hook;
        std::process::exit(crate::git_hooks::run_pre_receive());
    }
    let root = take_secret_environment();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("TRELLIS_LOG").unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run(cli, root))
}

/// Variables that hold secrets: read once (clap has read the configuration's already), then
/// removed, so that no child process (git, its hooks, tar) and nothing that reads the
/// process's environment later sees them.
const SECRET_VARIABLES: &[&str] = &[
    "TRELLIS_INITIAL_ROOT_PASSWORD",
    "TRELLIS_INITIAL_ROOT_TOKEN",
    "TRELLIS_SECRET_KEY",
    "TRELLIS_DATABASE_URL",
    "TRELLIS_SMTP_URL",
    "TRELLIS_REDIS_URL",
];

/// The initial root credentials, with every secret variable removed from the environment.
fn take_secret_environment() -> RootCredentials {
    let read = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
    let root = RootCredentials {
        password: read("TRELLIS_INITIAL_ROOT_PASSWORD"),
        token: read("TRELLIS_INITIAL_ROOT_TOKEN"),
    };
    for name in SECRET_VARIABLES {
        // SAFETY: called from `main` before the runtime or any other thread starts, so
        // nothing reads the environment concurrently.
        unsafe { std::env::remove_var(name) };
    }
    root
}

async fn run(cli: Cli, root: RootCredentials) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(config) => serve(config, root).await,
        Command::Migrate(storage) => {
            let (db, _) = open(&storage, 2, root).await?;
            db.close().await;
            println!("migrations applied");
            Ok(())
        }
        Command::Tenant { storage, command } => tenant(&storage, command, root).await,
        Command::Token { storage, command } => token(&storage, command, root).await,
        Command::Backup { storage, command } => backup::run(&storage, command).await,
        Command::Routes => {
            use std::io::Write;
            let mut table = crate::http::route_table().join("\n");
            table.push('\n');
            std::io::stdout().lock().write_all(table.as_bytes())?;
            Ok(())
        }
        Command::Plugin { command } => match command {
            PluginCommand::Check { file } => plugins::local::check(&file, Maxima::default()).await,
            PluginCommand::Sample { hook } => plugins::local::sample(&hook),
            PluginCommand::Run {
                file,
                hook,
                input,
                config,
                limits,
            } => {
                plugins::local::run(
                    &file,
                    &hook,
                    input.as_deref(),
                    config.as_deref(),
                    Maxima::from(&limits),
                )
                .await
            }
        },
        Command::GitHook { .. } => unreachable!("git hooks run before the runtime starts"),
    }
}

/// Connects (to Redis too, when there is one, which then carries the announcements of
/// changes), migrates, and makes sure the default tenant exists.
async fn open(
    storage: &StorageArgs,
    max_connections: u32,
    root: RootCredentials,
) -> anyhow::Result<(Db, Option<RedisLink>)> {
    let redis = match &storage.redis_url {
        Some(url) => Some(
            RedisLink::connect(url)
                .await
                .context("connecting to Redis")?,
        ),
        None => None,
    };
    let options = DbOptions {
        database_url: storage.database_url.as_deref(),
        data_dir: &storage.data_dir,
        max_connections,
    };
    // A server and a command started together on a fresh database take turns here.
    let startup = store::startup_lock(&options).await?;
    let mut db = Db::connect(options).await?;
    if let Some(redis) = &redis {
        db = db.announce_through(Arc::new(redis.clone()));
    }
    db.migrate().await?;
    ensure_default_tenant(&db, &storage.data_dir, root).await?;
    drop(startup);
    Ok((db, redis))
}

/// The tenant answering `host` for `suspend`, `resume` and `delete`: not the default tenant,
/// which answers every host and holds the deployment's own jobs.
async fn operated_tenant(db: &Db, host: &str) -> anyhow::Result<store::tenants::TenantRow> {
    let host = tenants::normalize_host(host)?;
    let tenant = db
        .find_tenant(&host)
        .await?
        .with_context(|| format!("no tenant answers {host}"))?;
    anyhow::ensure!(
        tenant.host != DEFAULT_TENANT_HOST,
        "the default tenant cannot be suspended, deleted or given quotas"
    );
    Ok(tenant)
}

/// A tenant's host as people read it: the default tenant has none.
fn host_label(host: &str) -> &str {
    if host == DEFAULT_TENANT_HOST {
        "the default tenant"
    } else {
        host
    }
}

/// The secret key a tenant archive's secrets are decrypted or encrypted with, when they are
/// carried.
fn archive_key(secrets: &ArchiveSecrets, data_dir: &Path) -> anyhow::Result<Option<SecretKey>> {
    if !secrets.include_secrets {
        return Ok(None);
    }
    SecretKey::load(secrets.secret_key.as_deref(), data_dir).map(Some)
}

fn timestamp(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|at| at.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_default()
}

async fn ensure_default_tenant(
    db: &Db,
    data_dir: &Path,
    root: RootCredentials,
) -> anyhow::Result<()> {
    let created = tenants::bootstrap(db, DEFAULT_TENANT_HOST, root).await?;
    if !created.created_root {
        return Ok(());
    }
    if let Some(password) = created.generated_password {
        let path = data_dir.join("initial_root_password");
        write_secret_file(&path, &format!("Password: {password}\n"))?;
        tracing::info!(path = %path.display(), "created the administrator root; its password is in this file");
    } else {
        tracing::info!("created the administrator root with TRELLIS_INITIAL_ROOT_PASSWORD");
    }
    Ok(())
}

fn write_secret_file(path: &Path, contents: &str) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    file.write_all(contents.as_bytes())?;
    Ok(())
}

async fn serve(config: ServeConfig, root: RootCredentials) -> anyhow::Result<()> {
    let (db, redis) = open(&config.storage, config.db_connections, root).await?;
    let tenants = TenantRegistry::load(&db).await?;
    let metrics = PrometheusBuilder::new()
        .set_buckets(&[
            0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
        ])?
        .install_recorder()
        .context("installing the metrics recorder")?;
    let maxima = Maxima::from(&config.plugin_limits);
    let runtime = Runtime::new(RuntimeOptions {
        cache_dir: Some(config.storage.data_dir.join("plugin-cache")),
        pool_instances: config.plugin_limits.plugin_pool_instances,
        max_memory_bytes: maxima.memory_bytes,
    })?;
    let plugins = Plugins::new(runtime, maxima);
    let fair_share = FairShare::new(
        config
            .fair_share_requests
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
    );
    let share = fair_share.clone();
    plugins.give_way_to(Arc::new(move |tenant| share.lighter_in_flight(tenant)));
    plugins.refresh(&db).await?;
    let secret_key = SecretKey::load(config.secret_key.as_deref(), &config.storage.data_dir)?;
    let pushes = git_push_sessions(&config.storage.data_dir, plugins.clone())?;
    let pushes_socket = pushes.socket().to_path_buf();
    let ctx = ApiContext::new(Inner {
        db: db.clone(),
        tenants,
        settings: SettingsCache::new(Duration::from_secs(config.settings_cache_seconds)),
        tokens: TokenCache::new(Duration::from_millis(config.auth_cache_ms)),
        secret_key,
        mailer: Mailer::new(
            config.smtp_url.as_deref(),
            &config.storage.data_dir,
            &config.mail_from,
        )?,
        config: config.clone(),
        metrics,
        limiter: Limiter::new(
            ratelimit::Counters::new(db.engine(), redis.clone()),
            config.throttle_bypass_header.as_deref(),
        )?,
        plugins: plugins.clone(),
        external_auth: ExternalAuthorization::new(
            plugins.clone(),
            config.outbound_allow_networks.clone(),
        ),
        pushes,
        imports: tokio::sync::Semaphore::new(config.max_concurrent_imports.max(1)),
        transfers: Transfers::new(&config),
        fair_share,
        jobs: crate::jobs::JobQueue::new(Duration::from_secs(config.job_lease_seconds)),
        stopping: Default::default(),
    });
    // Announcements from the other processes sharing the database make the polling below a
    // fallback; without them (SQLite) it is how a change made by another process arrives.
    let heard = match &redis {
        Some(redis) => Some(redis.follow(db.origin())),
        None => db.follow_postgres(),
    };
    let (plugins_every, tenants_every) = match heard {
        Some(heard) => {
            tokio::spawn(crate::invalidation::follow(ctx.clone(), heard));
            (FALLBACK_REFRESH, FALLBACK_REFRESH)
        }
        None => (plugins::POLL_INTERVAL, tenants::REFRESH_INTERVAL),
    };
    tokio::spawn(plugins.poll(db.clone(), plugins_every));
    tokio::spawn(refresh_tenants(ctx.clone(), tenants_every));
    tokio::spawn(ratelimit::purge_loop(ctx.clone()));
    tokio::spawn(services::project_deletion::sweep_loop(ctx.clone()));
    tokio::spawn(services::tenant_deletion::sweep_loop(ctx.clone()));
    tokio::spawn(crate::jobs::run(ctx.clone()));
    crate::webhooks::start(&ctx);
    crate::ssh::start(ctx.clone(), &config.ssh_listen).await?;
    let app = http::router(ctx.clone());
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("listening on {}", config.listen))?;
    http::upload::clear_spool(&config.storage.data_dir).context("clearing the upload spool")?;
    tracing::info!(address = %listener.local_addr()?, "trellis is serving");
    let listening = http::serve::Listening {
        caps: ConnectionCaps::new(
            config
                .max_connections
                .unwrap_or_else(|| connection_caps::open_file_limit() / 4),
            config.max_connections_per_address,
            config.trusted_proxies.clone(),
        ),
        header_timeout: Duration::from_secs(config.http_header_timeout_seconds),
        shutdown_patience: Duration::from_secs(config.shutdown_timeout_seconds),
    };
    let stopping = ctx.stopping.clone();
    let blackout = Duration::from_secs(config.shutdown_blackout_seconds);
    let stopped_accepting = Arc::new(std::sync::OnceLock::new());
    let stop_accepting = {
        let stopped_accepting = stopped_accepting.clone();
        async move {
            shutdown::signal().await;
            tracing::info!("stopping: not ready any more, finishing what is in flight");
            stopping.begin();
            tokio::time::sleep(blackout).await;
            let _ = stopped_accepting.set(std::time::Instant::now());
        }
    };
    http::serve::serve(listener, app, listening, stop_accepting).await;
    // One patience for everything in flight, requests first.
    let patience = Duration::from_secs(config.shutdown_timeout_seconds).saturating_sub(
        stopped_accepting
            .get()
            .map_or(Duration::ZERO, |at| at.elapsed()),
    );
    let left = ctx.stopping.drained(patience).await;
    if left > 0 {
        tracing::warn!(left, "stopping with SSH sessions or jobs still running");
    }
    let _ = std::fs::remove_file(pushes_socket);
    db.close().await;
    Ok(())
}

/// The server's git hooks (written at every start, naming this binary) and the socket their
/// `pre-receive` calls back on (`git_hooks`).
fn git_push_sessions(data_dir: &Path, plugins: Arc<Plugins>) -> anyhow::Result<PushSessions> {
    let exe = std::env::current_exe().context("finding the trellis binary for git hooks")?;
    let hooks = crate::git::receive::install_hooks(&data_dir.join("hooks"), &exe)
        .context("writing the git hooks")?;
    let socket = crate::git_hooks::socket_path(data_dir);
    let sessions = PushSessions::new(hooks, socket.clone(), plugins);
    crate::git_hooks::listen(&socket, sessions.clone())
        .with_context(|| format!("listening on {}", socket.display()))?;
    Ok(sessions)
}

async fn refresh_tenants(ctx: ApiContext, every: Duration) {
    let mut interval = tokio::time::interval(every);
    loop {
        interval.tick().await;
        if let Err(error) = ctx.refresh_tenants().await {
            tracing::warn!(
                error = format!("{error:#}"),
                "could not refresh the tenant list"
            );
        }
    }
}

async fn tenant(
    storage: &StorageArgs,
    command: TenantCommand,
    root: RootCredentials,
) -> anyhow::Result<()> {
    let (db, _) = open(storage, 2, root).await?;
    match command {
        TenantCommand::Create { host } => {
            let host = tenants::normalize_host(&host)?;
            anyhow::ensure!(
                db.find_tenant(&host).await?.is_none(),
                "a tenant for {host} already exists"
            );
            let created = tenants::bootstrap(
                &db,
                &host,
                RootCredentials {
                    password: None,
                    token: None,
                },
            )
            .await?;
            println!(
                "tenant {} created for host {}",
                created.tenant.id, created.tenant.host
            );
            if let Some(password) = created.generated_password {
                println!("root password: {password}");
            }
        }
        TenantCommand::List => {
            for tenant in db.list_tenants().await? {
                let host = if tenant.host == DEFAULT_TENANT_HOST {
                    "(default: every other host)"
                } else {
                    &tenant.host
                };
                let state = match (tenant.deleted_at, tenant.delete_after, tenant.suspended_at) {
                    (Some(_), _, _) => "deleted".to_string(),
                    (None, Some(after), _) => format!("deletion due {}", timestamp(after)),
                    (None, None, Some(_)) => "suspended".to_string(),
                    (None, None, None) => "active".to_string(),
                };
                println!("{}\t{}\t{}", tenant.id, host, state);
            }
        }
        TenantCommand::Quota { host, quotas } => {
            let tenant = operated_tenant(&db, &host).await?;
            let mut set = tenant.quotas;
            let changes = [
                (quotas.storage, &mut set.max_storage_bytes),
                (quotas.projects, &mut set.max_projects),
                (quotas.users, &mut set.max_users),
                (quotas.requests_per_second, &mut set.max_requests_per_second),
                (quotas.plugin_instances, &mut set.max_plugin_instances),
            ];
            let mut changed = false;
            for (given, quota) in changes {
                if let Some(QuotaArg(limit)) = given {
                    *quota = limit;
                    changed = true;
                }
            }
            if changed {
                db.set_tenant_quotas(tenant.id, &set).await?;
                println!("tenant {} ({}) quotas set", tenant.id, tenant.host);
            }
            let usage = db.tenant(tenant.id).quota_usage().await?;
            for (quota, shown) in tenants::quotas::describe(&usage) {
                println!("{quota}: {shown}");
            }
        }
        TenantCommand::Suspend { host } => {
            let tenant = operated_tenant(&db, &host).await?;
            db.set_tenant_suspended(tenant.id, Some(crate::model::now_ms()))
                .await?;
            println!("tenant {} ({}) suspended", tenant.id, tenant.host);
        }
        TenantCommand::Resume { host } => {
            let tenant = operated_tenant(&db, &host).await?;
            db.set_tenant_suspended(tenant.id, None).await?;
            println!("tenant {} ({}) serves again", tenant.id, tenant.host);
        }
        TenantCommand::Export {
            host,
            default_tenant: _,
            output,
            secrets,
        } => {
            let host = match host {
                Some(host) => tenants::normalize_host(&host)?,
                None => DEFAULT_TENANT_HOST.to_string(),
            };
            let tenant = db
                .find_tenant(&host)
                .await?
                .with_context(|| format!("no tenant answers {host}"))?;
            let key = archive_key(&secrets, &storage.data_dir)?;
            let exported =
                backup::tenant::export(&db, &storage.data_dir, tenant, &output, key.as_ref())
                    .await?;
            println!(
                "tenant {} ({}) exported to {}: {} rows, {} repositories, {} uploads, {} bytes{}",
                exported.tenant.id,
                host_label(&exported.tenant.host),
                output.display(),
                exported.rows,
                exported.repositories,
                exported.uploads,
                exported.bytes,
                if key.is_some() {
                    "; it holds secrets in the clear"
                } else {
                    ""
                }
            );
        }
        TenantCommand::Import {
            input,
            host,
            secrets,
        } => {
            let host = tenants::normalize_host(&host)?;
            anyhow::ensure!(
                host != DEFAULT_TENANT_HOST,
                "an archive is imported under a host of its own"
            );
            let key = archive_key(&secrets, &storage.data_dir)?;
            let imported =
                backup::tenant::import(&db, &storage.data_dir, &input, &host, key.as_ref()).await?;
            println!(
                "tenant {} created for host {} from the archive of {}: {} rows, {} repositories, {} uploads",
                imported.tenant.id,
                imported.tenant.host,
                host_label(&imported.source_host),
                imported.rows,
                imported.repositories,
                imported.uploads,
            );
            if !imported.includes_secrets {
                println!(
                    "credentials were not carried: users set a new password (or sign in through their identity provider), create new access tokens, and OAuth applications renew their secret"
                );
            }
        }
        TenantCommand::Delete { host, grace_days } => {
            let tenant = operated_tenant(&db, &host).await?;
            let due = crate::model::now_ms() + i64::from(grace_days) * 24 * 60 * 60 * 1000;
            db.schedule_tenant_deletion(tenant.id, due).await?;
            if grace_days == 0 {
                services::tenant_deletion::queue_due(&db).await?;
            }
            println!(
                "tenant {} ({}) suspended; its data will be deleted from {} \
                 (`trellis tenant resume --host {}` takes it back until then)",
                tenant.id,
                tenant.host,
                timestamp(due),
                tenant.host
            );
        }
    }
    db.close().await;
    Ok(())
}

async fn token(
    storage: &StorageArgs,
    command: TokenCommand,
    root: RootCredentials,
) -> anyhow::Result<()> {
    let (db, _) = open(storage, 2, root).await?;
    let TokenCommand::Create {
        user,
        name,
        scopes,
        expires_at,
        tenant,
    } = command;
    let host = match tenant {
        Some(host) => tenants::normalize_host(&host)?,
        None => DEFAULT_TENANT_HOST.to_string(),
    };
    let tenant = db
        .find_tenant(&host)
        .await?
        .with_context(|| format!("no tenant for host {host}"))?;
    let tdb = db.tenant(tenant.id);
    let user = tdb
        .user_by_username(&user)
        .await?
        .with_context(|| format!("no user {user}"))?;
    for scope in &scopes {
        anyhow::ensure!(
            auth::token_scopes::TOKEN_SCOPES.contains(&scope.as_str()),
            "unknown scope {scope}"
        );
    }
    let settings = SettingsCache::new(Duration::ZERO).get(&tdb).await?;
    let secret = auth::secrets::generate(
        &settings
            .get(keys::PERSONAL_ACCESS_TOKEN_PREFIX)
            .unwrap_or_default(),
        20,
    );
    let expires = expires_at.map(|d| d.format("%Y-%m-%d").to_string());
    tenants::create_token(&tdb, user.id, &name, &secret, &scopes, expires).await?;
    println!("{secret}");
    db.close().await;
    Ok(())
}
