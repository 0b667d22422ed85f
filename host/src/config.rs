//! Command-line interface. Every flag can also be set from the environment variable shown.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use ipnet::IpNet;

use crate::plugins::{Maxima, MaximaArgs};
use crate::tenants::quotas::QuotaArg;

#[derive(Debug, Parser)]
#[command(
    name = "trellis",
    version,
    about = "A GitLab API v4 compatible, multi-tenant collaboration server"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// The command line is parsed once at start; the size of `Serve`'s flags costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP server (migrates the database and creates the default tenant first).
    Serve(ServeConfig),
    /// Apply database migrations and create the default tenant, then exit.
    Migrate(StorageArgs),
    /// Manage tenants (instances served by this process, chosen by Host header).
    Tenant {
        #[command(flatten)]
        storage: StorageArgs,
        #[command(subcommand)]
        command: TenantCommand,
    },
    /// Manage personal access tokens.
    Token {
        #[command(flatten)]
        storage: StorageArgs,
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Back up a deployment while it runs, or restore a backup into an empty one
    /// (docs/operations.md).
    Backup {
        #[command(flatten)]
        storage: StorageArgs,
        #[command(subcommand)]
        command: BackupCommand,
    },
    /// Print every path template the server routes, one per line (for test suites that must
    /// visit every route).
    Routes,
    /// Inspect and try policy plugins (WebAssembly components) locally.
    Plugin {
        #[command(subcommand)]
        command: PluginCommand,
    },
    /// Git hooks the server installs for the repositories it serves (run by git, not by hand).
    #[command(hide = true)]
    GitHook {
        #[command(subcommand)]
        hook: GitHookCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum BackupCommand {
    /// Write a consistent copy of the database, every repository (as a git bundle), the
    /// uploads and the keys into a new folder, with a manifest of checksums.
    Create {
        /// The folder to write (absent or empty).
        #[arg(long)]
        output: PathBuf,
    },
    /// Load a backup into an empty deployment (no tenant in the database, no repository in
    /// the data directory), after checking every file against the manifest.
    Restore {
        /// The folder `backup create` wrote.
        #[arg(long)]
        input: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum GitHookCommand {
    /// Asks the running server whether a push may go on (`git_hooks`).
    PreReceive,
}

#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Show what a component is: its world, imports, size and sha256.
    Check { file: PathBuf },
    /// Print a hook's sample input (JSON), the one `run` calls without `--input`.
    Sample {
        /// `spam-check`, `external-authorization`, `push-rules` or `webhook-formatter`.
        #[arg(long)]
        hook: String,
    },
    /// Call a plugin once with the production limits and print its answer, time, fuel,
    /// peak memory and log lines.
    Run {
        file: PathBuf,
        /// The hook to call: `spam-check`, `external-authorization`, `push-rules` or
        /// `webhook-formatter`.
        #[arg(long)]
        hook: String,
        /// The hook's input as a JSON file (`trellis plugin sample` prints the format);
        /// without it, the hook's sample input.
        #[arg(long)]
        input: Option<PathBuf>,
        /// The configuration: a JSON file, or JSON text.
        #[arg(long)]
        config: Option<String>,
        #[command(flatten)]
        limits: PluginLimitArgs,
    },
}

/// The operator's ceilings for plugin calls (also the limits of `trellis plugin run`).
#[derive(Debug, Clone, Args)]
pub struct PluginLimitArgs {
    /// Longest wall time a binding may give one plugin call, in milliseconds.
    #[arg(long, env = "TRELLIS_PLUGIN_MAX_TIMEOUT_MS", default_value_t = 1000)]
    pub plugin_max_timeout_ms: u64,
    /// Most fuel a binding may give one call; unset: bindings may run without a fuel limit.
    #[arg(long, env = "TRELLIS_PLUGIN_MAX_FUEL")]
    pub plugin_max_fuel: Option<u64>,
    /// Most linear memory a binding may give one plugin instance, in bytes.
    #[arg(long, env = "TRELLIS_PLUGIN_MAX_MEMORY_BYTES", default_value_t = 256 * 1024 * 1024)]
    pub plugin_max_memory_bytes: u64,
    /// Plugin instances one tenant may run at once (the rest wait, within their deadline).
    /// Default: half the machine's cores, at least one, so that one tenant's plugins running
    /// to their limits leave the other half to everyone else.
    #[arg(long, env = "TRELLIS_PLUGIN_MAX_TENANT_INSTANCES")]
    pub plugin_max_tenant_instances: Option<usize>,
    /// Plugin instances the process's pool holds (over all tenants).
    #[arg(long, env = "TRELLIS_PLUGIN_POOL_INSTANCES", default_value_t = 64)]
    pub plugin_pool_instances: u32,
}

impl From<&PluginLimitArgs> for Maxima {
    fn from(args: &PluginLimitArgs) -> Maxima {
        Maxima::from(MaximaArgs {
            timeout_ms: args.plugin_max_timeout_ms,
            fuel: args.plugin_max_fuel,
            memory_bytes: args.plugin_max_memory_bytes,
            tenant_instances: args.plugin_max_tenant_instances,
        })
    }
}

#[derive(Debug, Clone, Args)]
pub struct StorageArgs {
    /// Directory for the SQLite database and uploaded files.
    #[arg(
        long,
        env = "TRELLIS_DATA_DIR",
        default_value = "./trellis-data",
        global = true
    )]
    pub data_dir: PathBuf,
    /// `postgres://...` to use PostgreSQL; without it, SQLite at DATA_DIR/trellis.db.
    #[arg(long, env = "TRELLIS_DATABASE_URL", global = true)]
    pub database_url: Option<String>,
    /// `redis://[user:password@]host:port[/db]`: rate-limit counters and the announcements
    /// of changes between processes go through this Redis instead of PostgreSQL.
    #[arg(long, env = "TRELLIS_REDIS_URL", hide_env_values = true, global = true)]
    pub redis_url: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct ServeConfig {
    #[command(flatten)]
    pub storage: StorageArgs,
    /// Address to listen on.
    #[arg(long, env = "TRELLIS_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Where git over SSH listens, off unless set: comma-separated `[HOST=]ADDR:PORT`. A bare
    /// address serves the default tenant; `HOST=ADDR:PORT` serves the tenant answering HOST
    /// (SSH carries no host name, so each tenant reached over SSH has its own address).
    #[arg(
        long,
        env = "TRELLIS_SSH_LISTEN",
        value_delimiter = ',',
        value_parser = SshListen::parse
    )]
    pub ssh_listen: Vec<SshListen>,
    /// The URL users reach the default tenant at (used in web_url and similar fields).
    #[arg(long, env = "TRELLIS_EXTERNAL_URL")]
    pub external_url: Option<String>,
    /// Largest JSON or form request body, in bytes (larger ones get 413).
    #[arg(long, env = "TRELLIS_MAX_BODY_BYTES", default_value_t = 20 * 1024 * 1024)]
    pub max_body_bytes: usize,
    /// Largest multipart (upload) request body, in bytes.
    #[arg(long, env = "TRELLIS_MAX_UPLOAD_BYTES", default_value_t = 100 * 1024 * 1024)]
    pub max_upload_bytes: usize,
    /// Requests one process serves at once; more wait for a slot (within the request
    /// timeout). Health checks do not wait.
    #[arg(long, env = "TRELLIS_MAX_CONCURRENT_REQUESTS", default_value_t = 512)]
    pub max_concurrent_requests: usize,
    /// While several tenants are busy at once, each may have at most this many requests in
    /// flight divided by the number of busy tenants (at least one); its others wait in its own
    /// line, 250 ms at the most. A tenant alone is never held back. 0 turns sharing off. Default: the machine's
    /// cores.
    #[arg(long, env = "TRELLIS_FAIR_SHARE_REQUESTS")]
    pub fair_share_requests: Option<usize>,
    /// Longest time one request may take, from its head to its answer, waiting for a slot
    /// and reading its body included; slower ones answer 503.
    #[arg(long, env = "TRELLIS_REQUEST_TIMEOUT_SECONDS", default_value_t = 60)]
    pub request_timeout_seconds: u64,
    /// After SIGTERM, how long the process keeps serving while it reports not ready, so that
    /// a load balancer's health checks take it out of rotation before it stops accepting.
    #[arg(long, env = "TRELLIS_SHUTDOWN_BLACKOUT_SECONDS", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=300))]
    pub shutdown_blackout_seconds: u64,
    /// After the blackout, how long requests, SSH sessions and jobs in flight may take to
    /// finish before the process exits anyway.
    #[arg(long, env = "TRELLIS_SHUTDOWN_TIMEOUT_SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(0..=3600))]
    pub shutdown_timeout_seconds: u64,
    /// How long a background job (import, fork copy, housekeeping) stays a process's without
    /// its renewal: when the process dies, another one takes the job over after this long.
    #[arg(long, env = "TRELLIS_JOB_LEASE_SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub job_lease_seconds: u64,
    /// Longest a repository import or mirror update may run before it is stopped.
    #[arg(long, env = "TRELLIS_IMPORT_TIMEOUT_SECONDS", default_value_t = 3600)]
    pub import_timeout_seconds: u64,
    /// Repository imports and mirror updates one process runs at once; more stay `scheduled`
    /// until a slot frees.
    #[arg(long, env = "TRELLIS_MAX_CONCURRENT_IMPORTS", default_value_t = 4)]
    pub max_concurrent_imports: usize,
    /// Clones and fetches (`git upload-pack`) one tenant may run at once, over HTTP and SSH;
    /// more wait in line. Default: twice the machine's cores.
    #[arg(long, env = "TRELLIS_MAX_UPLOAD_PACKS_PER_TENANT")]
    pub max_upload_packs_per_tenant: Option<usize>,
    /// How long a clone or fetch past the cap waits for a slot before it is refused (HTTP 429).
    #[arg(long, env = "TRELLIS_UPLOAD_PACK_QUEUE_SECONDS", default_value_t = 60)]
    pub upload_pack_queue_seconds: u64,
    /// Pushes (`git receive-pack` over HTTP and SSH) one tenant may run at once; more wait in
    /// line as fetches do. Default: twice the machine's cores.
    #[arg(long, env = "TRELLIS_MAX_PUSHES_PER_TENANT")]
    pub max_pushes_per_tenant: Option<usize>,
    /// Pushes one user may run at once, over HTTP and SSH together.
    #[arg(long, env = "TRELLIS_MAX_PUSHES_PER_USER", default_value_t = 4)]
    pub max_pushes_per_user: usize,
    /// Longest one git transfer (clone, fetch, push or archive, over HTTP or SSH) may run;
    /// then git is stopped and the transfer fails.
    #[arg(long, env = "TRELLIS_GIT_TIMEOUT_SECONDS", default_value_t = 3600)]
    pub git_timeout_seconds: u64,
    /// A git transfer that moves no byte either way for this long is stopped (git sends
    /// keep-alives every 5 seconds while it works for a waiting client).
    #[arg(long, env = "TRELLIS_GIT_IDLE_TIMEOUT_SECONDS", default_value_t = 120)]
    pub git_idle_timeout_seconds: u64,
    /// Longest a client may take to send a request's head (request line and headers), and
    /// to start the next request on a kept-alive connection; then the connection is closed.
    #[arg(
        long,
        env = "TRELLIS_HTTP_HEADER_TIMEOUT_SECONDS",
        default_value_t = 30
    )]
    pub http_header_timeout_seconds: u64,
    /// HTTP connections open at once; more are closed when accepted. Default: a quarter of
    /// the process's open-file limit.
    #[arg(long, env = "TRELLIS_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// HTTP connections one client address may have open at once (trusted proxies exempt).
    #[arg(
        long,
        env = "TRELLIS_MAX_CONNECTIONS_PER_ADDRESS",
        default_value_t = 256
    )]
    pub max_connections_per_address: usize,
    /// SSH connections open at once. Default: a quarter of the process's open-file limit.
    #[arg(long, env = "TRELLIS_SSH_MAX_CONNECTIONS")]
    pub ssh_max_connections: Option<usize>,
    /// SSH connections one client address may have open at once.
    #[arg(
        long,
        env = "TRELLIS_SSH_MAX_CONNECTIONS_PER_ADDRESS",
        default_value_t = 32
    )]
    pub ssh_max_connections_per_address: usize,
    /// SSH connections not yet signed in, at once (OpenSSH's `MaxStartups`); a tenth of them
    /// from one address.
    #[arg(long, env = "TRELLIS_SSH_MAX_STARTUPS", default_value_t = 100)]
    pub ssh_max_startups: usize,
    /// Longest an SSH client may take to sign in (OpenSSH's `LoginGraceTime`).
    #[arg(long, env = "TRELLIS_SSH_LOGIN_GRACE_SECONDS", default_value_t = 60)]
    pub ssh_login_grace_seconds: u64,
    /// Longest one SSH connection may stay open, keep-alives or not.
    #[arg(
        long,
        env = "TRELLIS_SSH_MAX_CONNECTION_SECONDS",
        default_value_t = 7200
    )]
    pub ssh_max_connection_seconds: u64,
    /// While this process is serving API or git requests, webhook deliveries go out at most one
    /// per this many milliseconds (all hooks together), and the outbox is read at the same
    /// pace, so that background delivery gives the CPU to the requests; when no request is in
    /// flight both run at full speed. 0 turns the pacing off.
    #[arg(long, env = "TRELLIS_WEBHOOK_BUSY_INTERVAL_MS", default_value_t = 10)]
    pub webhook_busy_interval_ms: u64,
    /// Largest size a repository may reach while being imported; the fetch stops past it.
    #[arg(long, env = "TRELLIS_IMPORT_MAX_BYTES", default_value_t = 10 * 1024 * 1024 * 1024)]
    pub import_max_bytes: u64,
    /// Database connections per process.
    #[arg(long, env = "TRELLIS_DB_CONNECTIONS", default_value_t = 16)]
    pub db_connections: u32,
    /// How long a process may serve application settings before re-reading them.
    #[arg(long, env = "TRELLIS_SETTINGS_CACHE_SECONDS", default_value_t = 60)]
    pub settings_cache_seconds: u64,
    /// `smtp://host[:port]` of a relay for outgoing mail; without it mails are written to
    /// DATA_DIR/mail/ as .eml files.
    #[arg(long, env = "TRELLIS_SMTP_URL")]
    pub smtp_url: Option<String>,
    /// Sender address of outgoing mail.
    #[arg(long, env = "TRELLIS_MAIL_FROM", default_value = "trellis@localhost")]
    pub mail_from: String,
    /// How long a token lookup may be reused (0 turns the cache off). Writes invalidate it
    /// at once on every process that hears them announced (PostgreSQL or Redis); this bounds
    /// how stale an entry can be when an announcement is lost.
    #[arg(long, env = "TRELLIS_AUTH_CACHE_MS", default_value_t = 1000)]
    pub auth_cache_ms: u64,
    /// Key (64 hex digits or base64 of 32 bytes) encrypting write-only settings at rest;
    /// without it, DATA_DIR/secret_key (created on first start). Processes sharing one
    /// database must use the same key.
    #[arg(long, env = "TRELLIS_SECRET_KEY", hide_env_values = true)]
    pub secret_key: Option<String>,
    /// Client networks allowed to read /-/health, /-/readiness, /-/liveness and /-/metrics
    /// (GitLab's monitoring allowlist); others get 404.
    #[arg(
        long,
        env = "TRELLIS_MONITORING_ALLOWLIST",
        value_delimiter = ',',
        default_value = "127.0.0.0/8,::1/128"
    )]
    pub monitoring_allowlist: Vec<IpNet>,
    /// Reverse proxies in front of Trellis (CIDRs), as GitLab's `trusted_proxies`: from these
    /// peers, the client's address is read from `X-Forwarded-For`, for the rate limits, the
    /// monitoring allowlist and the addresses recorded with sign-ins and spam checks. Empty by
    /// default: the connection's peer is the client.
    #[arg(long, env = "TRELLIS_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<IpNet>,
    /// A request header that, set to `1`, exempts a request from every rate limit (GitLab's
    /// GITLAB_THROTTLE_BYPASS_HEADER). Only for a proxy in front that strips it from clients.
    #[arg(long, env = "TRELLIS_THROTTLE_BYPASS_HEADER")]
    pub throttle_bypass_header: Option<String>,
    /// What outbound requests (imports, mirrors, hooks, plugins' HTTP) may reach although it
    /// is not public: CIDR ranges, addresses and host names (`*.` for subdomains), each
    /// optionally with a port, separated by commas. Empty (the default): nothing loopback,
    /// link-local, private or reserved, whatever tenants set; a tenant's
    /// allow_local_requests_from_web_hooks_and_services and outbound_local_requests_whitelist
    /// open only addresses within this list.
    #[arg(
        long,
        env = "TRELLIS_OUTBOUND_ALLOW_NETWORKS",
        value_delimiter = ',',
        value_parser = crate::outbound::operator_entry
    )]
    pub outbound_allow_networks: Vec<String>,
    /// Whether tenant administrators may upload their own plugins (built-ins are always
    /// available).
    #[arg(long, env = "TRELLIS_ALLOW_TENANT_PLUGIN_UPLOADS", default_value_t = true, action = clap::ArgAction::Set)]
    pub allow_tenant_plugin_uploads: bool,
    /// Largest plugin binary a tenant administrator may upload, in bytes (larger ones get 413).
    #[arg(long, env = "TRELLIS_PLUGIN_MAX_UPLOAD_BYTES", default_value_t = 10 * 1024 * 1024)]
    pub plugin_max_upload_bytes: usize,
    #[command(flatten)]
    pub plugin_limits: PluginLimitArgs,
}

#[derive(Debug, Subcommand)]
pub enum TenantCommand {
    /// Create a tenant answering HOST, with its own administrator `root`.
    Create {
        #[arg(long)]
        host: String,
    },
    /// List tenants, with their state.
    List,
    /// Refuse every request to the tenant answering HOST (its data is kept) until `resume`.
    Suspend {
        #[arg(long)]
        host: String,
    },
    /// Serve the tenant answering HOST again, taking back a scheduled deletion.
    Resume {
        #[arg(long)]
        host: String,
    },
    /// Suspend the tenant answering HOST now and delete its rows, repositories and files once
    /// the grace period has passed (`resume` takes it back until then).
    Delete {
        #[arg(long)]
        host: String,
        /// Days before the data is deleted; 0 deletes it as soon as a server's job runs.
        #[arg(long, default_value_t = 7)]
        grace_days: u32,
    },
    /// Write the tenant answering HOST (its rows, repositories and uploads) into one tar file
    /// that `tenant import` loads into another deployment. Suspend it first for a copy that
    /// no later write misses.
    Export {
        #[arg(long, required_unless_present = "default_tenant")]
        host: Option<String>,
        /// Export the default tenant (the one answering every other host).
        #[arg(long, conflicts_with = "host")]
        default_tenant: bool,
        /// The archive to write (it must not exist).
        #[arg(long)]
        output: PathBuf,
        #[command(flatten)]
        secrets: ArchiveSecrets,
    },
    /// Load a tenant archive as a new tenant answering HOST.
    Import {
        /// The archive `tenant export` wrote.
        #[arg(long)]
        input: PathBuf,
        #[arg(long)]
        host: String,
        #[command(flatten)]
        secrets: ArchiveSecrets,
    },
    /// Set the quotas of the tenant answering HOST (`none` clears one); without a quota
    /// flag, print its quotas and usage. Running servers apply a change within seconds.
    Quota {
        #[arg(long)]
        host: String,
        #[command(flatten)]
        quotas: QuotaArgs,
    },
}

/// The quotas `trellis tenant quota` sets; the ones not given stay as they are.
#[derive(Debug, Args)]
pub struct QuotaArgs {
    /// Its repositories and uploads together: `10GiB`, `500MB`, bytes, or `none`.
    #[arg(long, value_parser = crate::tenants::quotas::parse_size)]
    pub storage: Option<QuotaArg>,
    /// Projects it may hold, or `none`.
    #[arg(long, value_parser = crate::tenants::quotas::parse_count)]
    pub projects: Option<QuotaArg>,
    /// Human users it may hold (bots and the ghost user do not count), or `none`.
    #[arg(long, value_parser = crate::tenants::quotas::parse_count)]
    pub users: Option<QuotaArg>,
    /// Requests per second to the tenant from all clients together (429 beyond), or `none`.
    #[arg(long, value_parser = crate::tenants::quotas::parse_count)]
    pub requests_per_second: Option<QuotaArg>,
    /// Its plugin instances running at once (its share of the plugin CPU), or `none` for
    /// the operator's per-tenant default; a quota only lowers that default.
    #[arg(long, value_parser = crate::tenants::quotas::parse_count)]
    pub plugin_instances: Option<QuotaArg>,
}

/// Whether a tenant archive carries credentials.
#[derive(Debug, Clone, Args)]
pub struct ArchiveSecrets {
    /// Carry access tokens, OAuth tokens and signing keys, password digests, webhook tokens
    /// and secret settings (in the clear inside the archive: keep it safe). Without it users
    /// set a new password, tokens are issued anew and OAuth applications renew their secret.
    #[arg(long)]
    pub include_secrets: bool,
    /// The key this deployment encrypts secrets with (see `serve --secret-key`); read only
    /// with --include-secrets.
    #[arg(long, env = "TRELLIS_SECRET_KEY", hide_env_values = true)]
    pub secret_key: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a personal access token and print it (it cannot be shown again).
    Create {
        #[arg(long)]
        user: String,
        #[arg(long)]
        name: String,
        /// Comma-separated scopes, e.g. api,sudo.
        #[arg(long, value_delimiter = ',', required = true)]
        scopes: Vec<String>,
        /// YYYY-MM-DD; the token stops working at 00:00 UTC that day.
        #[arg(long)]
        expires_at: Option<chrono::NaiveDate>,
        /// The tenant's host; the default tenant when omitted.
        #[arg(long)]
        tenant: Option<String>,
    },
}

/// One SSH listener: the address, and the host name of the tenant it serves (`None`: the
/// default tenant).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshListen {
    pub tenant_host: Option<String>,
    pub address: SocketAddr,
}

impl SshListen {
    /// `ADDR:PORT` or `HOST=ADDR:PORT`, the host normalised as tenant hosts are.
    pub fn parse(text: &str) -> Result<SshListen, String> {
        let (host, address) = match text.trim().split_once('=') {
            Some((host, address)) => (Some(host), address),
            None => (None, text.trim()),
        };
        let address = address
            .parse()
            .map_err(|_| format!("{address:?} is not an ADDRESS:PORT"))?;
        let tenant_host = host
            .map(crate::tenants::normalize_host)
            .transpose()
            .map_err(|error| error.to_string())?;
        Ok(SshListen {
            tenant_host,
            address,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_listen_names_an_address_and_maybe_a_tenant() {
        let plain = SshListen::parse("127.0.0.1:2222").unwrap();
        assert_eq!(plain.tenant_host, None);
        assert_eq!(plain.address, "127.0.0.1:2222".parse().unwrap());
        let tenant = SshListen::parse("B.Example=[::1]:22").unwrap();
        assert_eq!(tenant.tenant_host.as_deref(), Some("b.example"));
        assert_eq!(tenant.address, "[::1]:22".parse().unwrap());
        assert!(SshListen::parse("2222").is_err());
        assert!(SshListen::parse("a b=127.0.0.1:22").is_err());
        assert!(SshListen::parse("=127.0.0.1:22").is_err());
    }
}
