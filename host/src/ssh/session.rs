//! One SSH connection: public-key authentication as user `git` (`auth::ssh`), then per
//! session channel (a few at once) the key signed in again and either `ssh -T`'s welcome or one
//! git program. The program's decision is `git_access::authorize`, the same as smart HTTP's
//! (an archive decided as a fetch), and it runs under its transfer's slot and clock; git
//! then runs as one process whose stdin, stdout and stderr are copied to and from the
//! channel. Both directions stream with backpressure: russh holds a bounded number of
//! incoming packets per channel (the connection stops reading when git does not keep up),
//! and outgoing data waits for the client's SSH window.

use std::net::SocketAddr;
use std::pin::pin;
use std::process::ExitStatus;
use std::sync::Arc;

use russh::keys::HashAlg;
use russh::server::{Auth, ChannelOpenHandle, Msg, PublicKeyOffer, Session, VerifiedPublicKey};
use russh::{Channel, ChannelId, ChannelMsg, ChannelOpenFailure, ChannelWriteHalf};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::process::Child;
use tokio::sync::{Notify, Semaphore};

use super::command::{self, GitCommand, Program};
use crate::auth::Caller;
use crate::auth::ssh::find_for_ssh_key;
use crate::context::ApiContext;
use crate::git::Repository;
use crate::git::commands_tap::{CommandsTap, TappedWriter};
use crate::git::smart_http::{self, Service};
use crate::git_access::slots::{TOO_MANY, TOO_MANY_PUSHES};
use crate::git_access::transfers::{Clock, Marked};
use crate::git_access::{self, Abilities, Denied, GitClient, Transport};
use crate::services::push::Push;
use crate::settings::Settings;
use crate::tenants::Tenant;

/// The only user name git clients sign in as (the key says who they are), as in GitLab.
const SSH_USER: &str = "git";

/// A connection to one listener, which serves the tenant answering `tenant_host`.
pub struct Connection {
    ctx: ApiContext,
    tenant_host: Option<String>,
    peer: SocketAddr,
    /// The key the client proved it holds, once it has. Each command signs it in again, as
    /// GitLab Shell asks the server on every command: a key removed, a user blocked or
    /// demoted, or a key type forbidden since the connection opened take effect on the next
    /// command, however long the connection is kept open.
    key: Option<Arc<KeySignIn>>,
    /// Told when the client has signed in (the connection's authentication deadline).
    signed_in: Arc<Notify>,
    /// The session channels open at once, [`MAX_CHANNELS`] at the most.
    channels: Arc<Semaphore>,
}

/// Session channels one connection may have open at once (OpenSSH's `MaxSessions`).
pub const MAX_CHANNELS: usize = 10;

/// A key, and the listener's tenant it signs in to.
struct KeySignIn {
    ctx: ApiContext,
    tenant_host: Option<String>,
    key: russh::keys::PublicKey,
}

/// The listener's tenant, its settings, and whom the key signs in there (nobody once the key
/// is removed, expired or of a type now forbidden).
struct SignedIn {
    tenant: Tenant,
    settings: Arc<Settings>,
    caller: Option<Caller>,
}

impl Connection {
    pub fn new(
        ctx: ApiContext,
        tenant_host: Option<String>,
        peer: SocketAddr,
        signed_in: Arc<Notify>,
    ) -> Connection {
        Connection {
            ctx,
            tenant_host,
            peer,
            key: None,
            signed_in,
            channels: Arc::new(Semaphore::new(MAX_CHANNELS)),
        }
    }

    fn key_sign_in(&self, key: &russh::keys::PublicKey) -> KeySignIn {
        KeySignIn {
            ctx: self.ctx.clone(),
            tenant_host: self.tenant_host.clone(),
            key: key.clone(),
        }
    }
}

impl KeySignIn {
    /// Whom the key signs in now in the listener's tenant (`last_used_at` is recorded when
    /// `touch`); `None` when the tenant does not exist or could not be read.
    async fn sign_in(&self, touch: bool) -> Option<SignedIn> {
        self.find(touch).await.unwrap_or_else(|error| {
            tracing::warn!(error = format!("{error:#}"), "SSH sign-in failed");
            None
        })
    }

    async fn find(&self, touch: bool) -> anyhow::Result<Option<SignedIn>> {
        let Some(tenant) = self.ctx.tenant_named(self.tenant_host.as_deref()) else {
            return Ok(None);
        };
        let settings = self.ctx.settings.get(&tenant.db).await?;
        let fingerprint = self.key.fingerprint(HashAlg::Sha256).to_string();
        let now = chrono::Utc::now().timestamp_millis();
        let found = find_for_ssh_key(&tenant.db, &settings, &fingerprint, now).await?;
        if touch && let Some(found) = &found {
            tenant.db.touch_ssh_key(found.key_id).await?;
        }
        Ok(Some(SignedIn {
            tenant,
            settings,
            caller: found.map(|found| found.caller),
        }))
    }
}

fn accept_if(accepted: bool) -> Auth {
    if accepted {
        Auth::Accept
    } else {
        Auth::reject()
    }
}

impl russh::server::Handler for Connection {
    type Error = russh::Error;

    /// A key that would not sign anyone in is turned away before the client signs with it.
    async fn auth_publickey_offered(
        &mut self,
        user: &str,
        offer: PublicKeyOffer<'_>,
    ) -> Result<Auth, Self::Error> {
        let found = user == SSH_USER
            && self
                .key_sign_in(offer.public_key)
                .sign_in(false)
                .await
                .is_some_and(|signed_in| signed_in.caller.is_some());
        Ok(accept_if(found))
    }

    async fn auth_publickey(
        &mut self,
        user: &str,
        key: VerifiedPublicKey<'_>,
    ) -> Result<Auth, Self::Error> {
        if user != SSH_USER {
            return Ok(Auth::reject());
        }
        let key = self.key_sign_in(key.public_key);
        let accepted = key
            .sign_in(true)
            .await
            .is_some_and(|signed_in| signed_in.caller.is_some());
        if accepted {
            self.key = Some(Arc::new(key));
            self.signed_in.notify_one();
        }
        Ok(accept_if(accepted))
    }

    async fn channel_open_session(
        &mut self,
        channel: Channel<Msg>,
        reply: ChannelOpenHandle,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        // russh opens channels only after authentication succeeded.
        let Some(key) = self.key.clone() else {
            return Ok(());
        };
        let Ok(open) = self.channels.clone().try_acquire_owned() else {
            reply.reject(ChannelOpenFailure::ResourceShortage).await;
            return Ok(());
        };
        reply.accept().await;
        let peer = self.peer;
        tokio::spawn(async move {
            serve_channel(&key, peer, channel).await;
            drop(open);
        });
        Ok(())
    }

    /// Only git's protocol version is taken from the client's environment.
    async fn env_request(
        &mut self,
        channel: ChannelId,
        name: &str,
        _value: &str,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        if name == "GIT_PROTOCOL" {
            session.channel_success(channel)
        } else {
            session.channel_failure(channel)
        }
    }

    async fn exec_request(
        &mut self,
        channel: ChannelId,
        _command: &[u8],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        session.channel_success(channel)
    }

    async fn shell_request(
        &mut self,
        channel: ChannelId,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        session.channel_success(channel)
    }

    /// No terminals (OpenSSH then says "PTY allocation request failed", as with GitLab).
    #[allow(clippy::too_many_arguments)]
    async fn pty_request(
        &mut self,
        channel: ChannelId,
        _term: &str,
        _col_width: u32,
        _row_height: u32,
        _pix_width: u32,
        _pix_height: u32,
        _modes: &[(russh::Pty, u32)],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        session.channel_failure(channel)
    }

    async fn subsystem_request(
        &mut self,
        channel: ChannelId,
        _name: &str,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        session.channel_failure(channel)
    }
}

/// Waits for the channel's request (the environment first), signs the key in again, answers
/// the request, and closes the channel with the exit status.
async fn serve_channel(key: &KeySignIn, peer: SocketAddr, mut channel: Channel<Msg>) {
    let mut protocol = None;
    let request = loop {
        match channel.wait().await {
            Some(ChannelMsg::SetEnv {
                variable_name,
                variable_value,
                ..
            }) if variable_name == "GIT_PROTOCOL" => {
                protocol = smart_http::protocol(&variable_value).map(str::to_string);
            }
            Some(ChannelMsg::RequestShell { .. }) => break None,
            Some(ChannelMsg::Exec { command, .. }) => break Some(command),
            Some(ChannelMsg::Eof | ChannelMsg::Close) | None => return,
            Some(_) => {}
        }
    };
    let (read, write) = channel.split();
    let signed_in = key.sign_in(false).await;
    let code = match request {
        None => welcome(&write, signed_in.and_then(|s| s.caller).as_ref()).await,
        Some(command) => match (command::parse(&command), signed_in) {
            (None, _) => refuse(&write, command::DISALLOWED).await,
            (Some(_), None) => refuse(&write, git_access::NOT_FOUND).await,
            (Some(command), Some(signed_in)) => match blocked(&signed_in) {
                Some(message) => refuse(&write, &message).await,
                // A key that signs in nobody now leaves the command anonymous, as GitLab
                // decides one whose key is gone (`git_access::authorize`).
                None => {
                    let client = GitClient {
                        ctx: key.ctx.clone(),
                        tenant: signed_in.tenant.clone(),
                        settings: signed_in.settings.clone(),
                        caller: signed_in.caller,
                        client_ip: peer.ip(),
                    };
                    git(&client, command, protocol.as_deref(), read, &write).await
                }
            },
        },
    };
    let _ = write.exit_status(code).await;
    let _ = write.eof().await;
    let _ = write.close().await;
}

/// What `ssh -T git@host` prints: GitLab's welcome (GitLab Shell's "Anonymous" for a key that
/// no longer signs anyone in). Trellis has no instance title setting, so the name is GitLab's.
async fn welcome(write: &ChannelWriteHalf<Msg>, caller: Option<&Caller>) -> u32 {
    let text = match caller {
        Some(caller) => format!("Welcome to GitLab, @{}!\n", caller.user.username),
        None => "Welcome to GitLab, Anonymous!\n".to_string(),
    };
    let _ = write.data_bytes(text.into_bytes()).await;
    0
}

/// GitLab's refusal of git to a user who is not active (`ssh -T` still welcomes them).
fn blocked(signed_in: &SignedIn) -> Option<String> {
    let caller = signed_in.caller.as_ref()?;
    git_access::inactive_account(&caller.user, &signed_in.tenant.base_url)
}

/// GitLab Shell's refusal: the message framed on stderr, exit status 1.
async fn refuse(write: &ChannelWriteHalf<Msg>, message: &str) -> u32 {
    let rule = "=".repeat(72);
    let text = format!(
        "remote: \nremote: {rule}\nremote: \nremote: {message}\nremote: \nremote: {rule}\nremote: \n"
    );
    let _ = write.extended_data_bytes(1, text.into_bytes()).await;
    1
}

/// Runs the program `command` names, if the client's caller may; its exit status.
async fn git(
    client: &GitClient,
    command: GitCommand,
    protocol: Option<&str>,
    read: russh::ChannelReadHalf,
    write: &ChannelWriteHalf<Msg>,
) -> u32 {
    // A key signs in its owner with all of the owner's rights, as in GitLab.
    let scope = client.scope();
    let abilities = scope.caller.is_some().then_some(Abilities {
        download: true,
        push: true,
    });
    let access = command.program.access();
    let allowed =
        match git_access::authorize(&scope, Transport::Ssh, abilities, &command.project, access)
            .await
        {
            Ok(allowed) => allowed,
            Err(denied) => {
                let message = match denied {
                    Denied::CredentialsNeeded | Denied::NotFound => {
                        git_access::NOT_FOUND.to_string()
                    }
                    Denied::Forbidden(message) => message,
                    Denied::NoRepository => git_access::NO_REPOSITORY.to_string(),
                    Denied::Failed(error) => {
                        tracing::warn!(%error, "authorizing git over SSH failed");
                        "Internal server error".to_string()
                    }
                };
                return refuse(write, &message).await;
            }
        };
    let push = match access {
        Service::ReceivePack => allowed.start_push(&scope),
        Service::UploadPack => None,
    };
    // A fetch or an archive holds one of the tenant's fetch slots while git runs: both read
    // and pack the repository (Gitaly's concurrency limits cover upload-archive too). A push
    // holds a push slot.
    let transfers = &client.ctx.transfers;
    let tenant_id = client.tenant.id;
    let _slot = match (access, scope.caller) {
        (Service::UploadPack, _) => {
            match transfers.fetches.acquire(tenant_id, client.client_ip).await {
                Some(slot) => slot,
                None => return refuse(write, TOO_MANY).await,
            }
        }
        (Service::ReceivePack, Some(caller)) => {
            match transfers.pushes.acquire(tenant_id, caller.user.id).await {
                Some(slot) => slot,
                None => return refuse(write, TOO_MANY_PUSHES).await,
            }
        }
        (Service::ReceivePack, None) => return refuse(write, git_access::NOT_FOUND).await,
    };
    let tap = push.as_ref().and_then(Push::commands_tap);
    let clock = transfers.clock();
    let ran = match spawn(&allowed.repo, command.program, protocol, push.as_ref()) {
        Ok(child) => run(child, read, write, tap, clock).await,
        Err(error) => Err(std::io::Error::other(error)),
    };
    // Whatever git's status: finish records only the updates git did apply.
    if let Some(push) = push {
        push.finish().await;
    }
    match ran {
        Ok(status) if status.success() => 0,
        Ok(status) => status
            .code()
            .and_then(|c| u32::try_from(c).ok())
            .unwrap_or(1),
        Err(error) => {
            tracing::warn!(%error, "git over SSH failed");
            1
        }
    }
}

/// Starts `program` on `repo`: a fetch or a push with the client's protocol (a push with its
/// session's options), an archive without (remote archives speak only protocol v0).
fn spawn(
    repo: &Repository,
    program: Program,
    protocol: Option<&str>,
    push: Option<&Push>,
) -> crate::git::Result<Child> {
    match program {
        Program::Pack(service) => {
            let options = push.map(Push::receive_options);
            smart_http::spawn_full_duplex(repo, service, protocol, options.as_ref())
        }
        Program::UploadArchive => repo.spawn_upload_archive(),
    }
}

/// Runs git with the channel as its stdin (through a push's `tap`), stdout and stderr, until
/// git exits, or until the transfer's `clock` expires (git is then killed).
async fn run(
    mut child: Child,
    mut read: russh::ChannelReadHalf,
    write: &ChannelWriteHalf<Msg>,
    tap: Option<CommandsTap>,
    clock: Arc<Clock>,
) -> std::io::Result<ExitStatus> {
    let broken = || std::io::Error::from(std::io::ErrorKind::BrokenPipe);
    let mut stdin = TappedWriter::new(child.stdin.take().ok_or_else(broken)?, tap);
    let mut stdout = Marked::new(child.stdout.take().ok_or_else(broken)?, clock.clone());
    let mut stderr = Marked::new(child.stderr.take().ok_or_else(broken)?, clock.clone());
    let input_clock = clock.clone();
    let mut input = pin!(async move {
        let reader = pin!(read.make_reader());
        let mut reader = Marked::new(reader, input_clock);
        // The client's EOF (or its going away) closes git's stdin.
        let _ = tokio::io::copy(&mut reader, &mut stdin).await;
    });
    let mut output = pin!(async {
        let (out, err) = tokio::join!(
            copy_to(&mut stdout, write.make_writer()),
            copy_to(&mut stderr, write.make_writer_ext(Some(1))),
        );
        out.and(err)?;
        child.wait().await
    });
    let mut expired = pin!(clock.expired());
    // Git may finish before the client closes its side (a fetch does): the exit ends both.
    let finished = tokio::select! {
        status = &mut output => Some(status),
        () = &mut input => None,
        () = &mut expired => return Err(timed_out()),
    };
    match finished {
        Some(status) => status,
        None => tokio::select! {
            status = output => status,
            () = expired => Err(timed_out()),
        },
    }
}

/// A transfer stopped at its deadline or for idling; dropping the child kills git.
fn timed_out() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "git transfer stopped: past its deadline or idle",
    )
}

async fn copy_to(
    from: &mut (impl tokio::io::AsyncRead + Unpin),
    to: impl AsyncWrite,
) -> std::io::Result<()> {
    let mut to = pin!(to);
    tokio::io::copy(from, &mut to).await?;
    to.flush().await
}
