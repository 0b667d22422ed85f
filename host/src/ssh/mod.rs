//! Git over SSH, served in-process (russh) on the `--ssh-listen` addresses. SSH carries no
//! host name, so each listener serves one tenant, named in its configuration (none: the
//! default tenant); a key is looked up in that tenant only, so it never opens another
//! tenant's repositories. The host key ([`host_key`]) lives in the data directory.
//! Authentication is `auth::ssh`, the command is parsed strictly ([`command`]), and the
//! connection itself is [`session`].

mod command;
mod host_key;
mod session;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use russh::MethodKind;
use russh::server::Config;
use tokio::net::TcpListener;

use crate::config::SshListen;
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
            listener,
            listen.tenant_host.clone(),
        ));
    }
    Ok(())
}

/// Accepts connections for ever, each in its own task. A failed accept (too many open files)
/// is retried after a pause rather than ending the listener.
async fn accept(
    ctx: ApiContext,
    config: Arc<Config>,
    listener: TcpListener,
    tenant_host: Option<String>,
) {
    loop {
        let (socket, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                tracing::warn!(%error, "accepting an SSH connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let handler = session::Connection::new(ctx.clone(), tenant_host.clone(), peer);
        let config = config.clone();
        tokio::spawn(async move {
            let _ = socket.set_nodelay(config.nodelay);
            let result = match russh::server::run_stream(config, socket, handler).await {
                Ok(running) => running.await,
                Err(error) => Err(error),
            };
            if let Err(error) = result {
                tracing::debug!(%error, %peer, "SSH connection ended with an error");
            }
        });
    }
}
