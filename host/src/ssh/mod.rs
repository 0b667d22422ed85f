//! Git over SSH, served in-process (russh) on the `--ssh-listen` addresses. SSH carries no
//! host name, so each listener serves one tenant, named in its configuration (none: the
//! default tenant); a key is looked up in that tenant only, so it never opens another
//! tenant's repositories. The host key ([`host_key`]) lives in the data directory.
//! Authentication is `auth::ssh`, the command is parsed strictly ([`command`]), and the
//! connection itself is [`session`]. Connections are capped in all, per client address, and
//! while not yet signed in; a client has `--ssh-login-grace-seconds` to sign in, and no
//! connection outlives `--ssh-max-connection-seconds`, keep-alives or not.

pub mod command;
mod host_key;
mod session;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use russh::MethodKind;
use russh::server::Config;
use tokio::net::TcpListener;
use tokio::sync::Notify;

use crate::config::{ServeConfig, SshListen};
use crate::connection_caps::{self, ConnectionCaps};
use crate::context::ApiContext;

/// Binds every listener (failing at start when one cannot be bound) and serves each in the
/// background.
pub async fn start(ctx: ApiContext, listeners: &[SshListen]) -> anyhow::Result<()> {
    if listeners.is_empty() {
        return Ok(());
    }
    let key = host_key::load_or_create(&ctx.config.storage.data_dir)?;
    let config = Arc::new(Config {
        server_id: russh::SshId::Standard("SSH-2.0-Trellis".into()),
        methods: (&[MethodKind::PublicKey][..]).into(),
        keys: vec![key],
        // A refused key answers after the same delay whatever the reason, so timing does not
        // tell which keys exist; OpenSSH's probe with no method answers at once.
        auth_rejection_time: Duration::from_millis(200),
        auth_rejection_time_initial: Some(Duration::ZERO),
        inactivity_timeout: Some(Duration::from_secs(600)),
        nodelay: true,
        ..Config::default()
    });
    let caps = Caps::new(&ctx.config);
    for listen in listeners {
        let listener = TcpListener::bind(listen.address)
            .await
            .with_context(|| format!("listening for SSH on {}", listen.address))?;
        tracing::info!(
            address = %listener.local_addr()?,
            tenant = listen.tenant_host.as_deref().unwrap_or("(default)"),
            "git over SSH is serving"
        );
        tokio::spawn(accept(
            ctx.clone(),
            config.clone(),
            caps.clone(),
            listener,
            listen.tenant_host.clone(),
        ));
    }
    Ok(())
}

/// The caps every listener's connections share.
#[derive(Clone)]
struct Caps {
    open: ConnectionCaps,
    /// Connections not yet signed in (OpenSSH's `MaxStartups`).
    starting: ConnectionCaps,
    login_grace: Duration,
    lifetime: Duration,
}

impl Caps {
    fn new(config: &ServeConfig) -> Caps {
        let total = config
            .ssh_max_connections
            .unwrap_or_else(|| connection_caps::open_file_limit() / 4);
        Caps {
            open: ConnectionCaps::new(total, config.ssh_max_connections_per_address, Vec::new()),
            starting: ConnectionCaps::new(
                config.ssh_max_startups,
                (config.ssh_max_startups / 10).max(1),
                Vec::new(),
            ),
            login_grace: Duration::from_secs(config.ssh_login_grace_seconds),
            lifetime: Duration::from_secs(config.ssh_max_connection_seconds),
        }
    }
}

/// Accepts connections until the process stops, each in its own task that stopping waits
/// for. A failed accept (too many open files) is retried after a pause rather than ending the
/// listener.
async fn accept(
    ctx: ApiContext,
    config: Arc<Config>,
    caps: Caps,
    listener: TcpListener,
    tenant_host: Option<String>,
) {
    let stopping = ctx.stopping.clone();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stopping.started() => return,
        };
        let (socket, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                tracing::warn!(%error, "accepting an SSH connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let (Some(open), Some(starting)) =
            (caps.open.admit(peer.ip()), caps.starting.admit(peer.ip()))
        else {
            metrics::counter!("ssh_connections_refused_total").increment(1);
            continue;
        };
        let signed_in = Arc::new(Notify::new());
        let handler =
            session::Connection::new(ctx.clone(), tenant_host.clone(), peer, signed_in.clone());
        let config = config.clone();
        let caps = caps.clone();
        let in_progress = stopping.hold();
        tokio::spawn(async move {
            let _open = open;
            let _in_progress = in_progress;
            let _ = socket.set_nodelay(config.nodelay);
            let session = async {
                match russh::server::run_stream(config, socket, handler).await {
                    Ok(running) => running.await,
                    Err(error) => Err(error),
                }
            };
            let mut session = std::pin::pin!(session);
            // Signed in within the grace time, or closed; then the connection's whole life is
            // bounded (dropping the session closes the socket and ends its channels' git).
            let signing_in = tokio::time::timeout(caps.login_grace, async {
                tokio::select! {
                    () = signed_in.notified() => None,
                    result = &mut session => Some(result),
                }
            });
            let result = match signing_in.await {
                Err(_) => return,
                Ok(Some(result)) => result,
                Ok(None) => {
                    drop(starting);
                    match tokio::time::timeout(caps.lifetime, session).await {
                        Ok(result) => result,
                        Err(_) => return,
                    }
                }
            };
            if let Err(error) = result {
                tracing::debug!(%error, %peer, "SSH connection ended with an error");
            }
        });
    }
}
