//! The callback between git's `pre-receive` hook and the server that runs the push.
//!
//! `git receive-pack` runs the server's hook (`git::receive::install_hooks`), which runs
//! `trellis git-hook pre-receive` ([`run_pre_receive`]). That process connects to the running
//! server on a Unix socket ([`listen`]; its path comes in `TRELLIS_HOOK_SOCKET`), sends one
//! JSON line (the push id from `TRELLIS_PUSH_ID`, the ref updates from its stdin, the
//! quarantine variables from its environment) and reads one JSON line back: allowed, or
//! refused with a message. A refusal is printed as `GitLab: <message>` on stderr, which git
//! relays to the client as `remote: GitLab: <message>`, and the hook exits 1, so git moves no
//! reference. Anything that goes wrong (no server, no session) refuses the push.
//!
//! A Unix socket rather than loopback HTTP: only local processes that can reach the data
//! directory can connect at all (the socket is `0600`), nothing listens on the network, and
//! there is no port to choose or collide with. Each process has its own socket
//! (`DATA_DIR/run/hooks-<pid>.sock`), since several processes may share a data directory; the
//! push id, random and known only to the git the server started, tells the server which push
//! asks.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

use crate::git::receive::{HOOK_SOCKET_ENV, PUSH_ID_ENV, Quarantine, RefUpdate};
use crate::services::push::{self, PushSessions, PushVerdict};

/// The most a hook may send (ref updates of a very large push, e.g. 100,000 tags, fit).
const MAX_REQUEST_BYTES: u64 = 64 * 1024 * 1024;
/// How long the hook waits for the server's answer; the server bounds its own git work
/// with the `git_backend_timeout_*` settings well within it.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(300);
/// The longest path a Unix socket address holds (`sun_path`, with its terminating NUL).
const SOCKET_PATH_MAX: usize = 107;

#[derive(Debug, Serialize, Deserialize)]
struct Request {
    push_id: String,
    updates: Vec<RefUpdate>,
    quarantine: Quarantine,
}

#[derive(Debug, Serialize, Deserialize)]
struct Answer {
    allowed: bool,
    message: Option<String>,
}

/// Where this process's hook socket goes: `DATA_DIR/run/hooks-<pid>.sock`, or in the system's
/// temporary directory when that path is too long for a socket address.
pub fn socket_path(data_dir: &Path) -> PathBuf {
    let name = format!("hooks-{}.sock", std::process::id());
    let preferred = std::path::absolute(data_dir.join("run"))
        .unwrap_or_else(|_| data_dir.join("run"))
        .join(&name);
    if preferred.as_os_str().len() <= SOCKET_PATH_MAX {
        preferred
    } else {
        std::env::temp_dir().join(format!("trellis-{name}"))
    }
}

/// Listens on `socket` (replacing a leftover) and answers hooks for `sessions`' pushes until
/// the process ends.
pub fn listen(socket: &Path, sessions: PushSessions) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(parent) = socket.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let _ = std::fs::remove_file(socket);
    let listener = tokio::net::UnixListener::bind(socket)?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))?;
    tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    let sessions = sessions.clone();
                    tokio::spawn(async move {
                        if let Err(error) = answer(stream, &sessions).await {
                            tracing::warn!(%error, "a pre-receive hook call failed");
                        }
                    });
                }
                Err(error) => {
                    tracing::warn!(%error, "accepting a hook connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    });
    Ok(())
}

async fn answer(stream: tokio::net::UnixStream, sessions: &PushSessions) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut line = Vec::new();
    tokio::io::BufReader::new(read)
        .take(MAX_REQUEST_BYTES)
        .read_until(b'\n', &mut line)
        .await?;
    let (verdict, notice) = match serde_json::from_slice::<Request>(&line) {
        Ok(request) => {
            let verdict = push::check(
                sessions,
                &request.push_id,
                &request.updates,
                &request.quarantine,
            )
            .await;
            let notice = sessions
                .get(&request.push_id)
                .and_then(|session| session.context.notice.clone());
            (verdict, notice)
        }
        Err(_) => (
            PushVerdict::Refuse("The push could not be checked.".into()),
            None,
        ),
    };
    let answer = match verdict {
        PushVerdict::Allow => Answer {
            allowed: true,
            message: notice,
        },
        PushVerdict::Refuse(message) => Answer {
            allowed: false,
            message: Some(message),
        },
    };
    let mut body = serde_json::to_vec(&answer).map_err(std::io::Error::other)?;
    body.push(b'\n');
    write.write_all(&body).await?;
    write.shutdown().await
}

/// `trellis git-hook pre-receive`, run by git: asks the server and answers with the exit
/// status (0: go on, 1: refused, with the message on stderr).
pub fn run_pre_receive() -> i32 {
    match ask() {
        Ok(answer) if answer.allowed => {
            if let Some(notice) = answer.message {
                eprint!("{notice}");
            }
            0
        }
        Ok(answer) => {
            let message = answer.message.unwrap_or_default();
            eprintln!("GitLab: {message}");
            1
        }
        Err(error) => {
            eprintln!("GitLab: The push could not be checked ({error}).");
            1
        }
    }
}

fn ask() -> std::io::Result<Answer> {
    let push_id = std::env::var(PUSH_ID_ENV).map_err(|_| missing(PUSH_ID_ENV))?;
    let socket = std::env::var(HOOK_SOCKET_ENV).map_err(|_| missing(HOOK_SOCKET_ENV))?;
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input)?;
    let updates = RefUpdate::parse_all(&input)
        .ok_or_else(|| std::io::Error::other("malformed reference updates"))?;
    let request = Request {
        push_id,
        updates,
        quarantine: Quarantine::from_env(),
    };
    let mut stream = std::os::unix::net::UnixStream::connect(socket)?;
    stream.set_read_timeout(Some(ANSWER_TIMEOUT))?;
    let mut body = serde_json::to_vec(&request).map_err(std::io::Error::other)?;
    body.push(b'\n');
    stream.write_all(&body)?;
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line)?;
    serde_json::from_str(&line).map_err(std::io::Error::other)
}

fn missing(name: &str) -> std::io::Error {
    std::io::Error::other(format!("{name} is not set"))
}
