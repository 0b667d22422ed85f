//! Running `git`: isolated from the host's user and system configuration, never prompting,
//! failing with git's own message.

use std::future::Future;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::ChildStdout;

use super::batch_process::broken_pipe;
use super::error::{Error, Result};

/// The read buffer of a streamed git output: fewer, larger reads.
const STREAM_BUFFER: usize = 64 * 1024;
/// How much of git's stderr a streamed run keeps for its error message.
const STDERR_KEPT: u64 = 8 * 1024;

/// The author and committer of a commit made with `commit-tree`.
pub struct Identity<'a> {
    pub name: &'a str,
    pub email: &'a str,
}

/// The variables a child process keeps from the server's environment; every other one (the
/// server's secrets among them: an initial root token, a database URL) is cleared.
const INHERITED: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TZ",
    "TMPDIR",
    "GIT_EXEC_PATH",
];

/// `program` with an environment of only [`INHERITED`] variables.
pub fn isolated(program: &str) -> std::process::Command {
    let mut command = std::process::Command::new(program);
    command.env_clear().envs(
        INHERITED
            .iter()
            .filter_map(|name| Some((name, std::env::var_os(name)?))),
    );
    command
}

/// `git` (with `--git-dir dir`) isolated from the host: no inherited environment but
/// [`INHERITED`], no system or global configuration, no prompts, stdin and stdout piped,
/// killed when dropped.
pub fn command(dir: Option<&Path>) -> tokio::process::Command {
    let mut command = tokio::process::Command::from(isolated("git"));
    if let Some(dir) = dir {
        command.arg("--git-dir").arg(dir);
    }
    command
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "/bin/false")
        // Paths from API callers are file names, never pathspec magic (`:(glob)`, `:!`).
        .env("GIT_LITERAL_PATHSPECS", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    command
}

pub async fn git(dir: Option<&Path>, args: &[&str]) -> Result<Vec<u8>> {
    git_with(dir, args, &[], None).await
}

/// Runs `git` in `dir` (as `--git-dir`) with `input` on stdin and returns stdout.
pub async fn git_with(
    dir: Option<&Path>,
    args: &[&str],
    input: &[u8],
    identity: Option<&Identity<'_>>,
) -> Result<Vec<u8>> {
    let mut env = Vec::new();
    if let Some(identity) = identity {
        for role in ["AUTHOR", "COMMITTER"] {
            env.push((format!("GIT_{role}_NAME"), identity.name.to_string()));
            env.push((format!("GIT_{role}_EMAIL"), identity.email.to_string()));
        }
    }
    run(dir, args, input, &env).await
}

/// Runs `git` in `dir` with `input` on stdin and `env` set, and returns stdout; a non-zero
/// exit is [`Error::Failed`] with git's message.
pub async fn run(
    dir: Option<&Path>,
    args: &[&str],
    input: &[u8],
    env: &[(String, String)],
) -> Result<Vec<u8>> {
    let mut command = command(dir);
    command.args(args).stderr(Stdio::piped());
    command.envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let mut child = command.spawn().map_err(Error::io("running git"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(input)
            .await
            .map_err(Error::io("writing to git"))?;
    }
    let output = child
        .wait_with_output()
        .await
        .map_err(Error::io("waiting for git"))?;
    if !output.status.success() {
        return Err(Error::Failed {
            command: args.first().copied().unwrap_or_default().to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        });
    }
    Ok(output.stdout)
}

/// What a bounded `git` run answered: whether it succeeded, and its stdout.
pub struct Answer {
    pub success: bool,
    pub stdout: Vec<u8>,
}

/// Runs `git` in `dir` with `input` on stdin and `env` added (a push's quarantine), killed
/// after `timeout` (the `git_backend_timeout_*` settings). A non-zero exit is an answer, not
/// an error: some commands (`merge-base --is-ancestor`) answer with their status.
pub async fn git_bounded(
    dir: &Path,
    args: &[&str],
    input: Vec<u8>,
    env: &[(String, String)],
    timeout: std::time::Duration,
) -> Result<Answer> {
    let mut command = command(Some(dir));
    command
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stderr(Stdio::piped());
    let name = args.first().copied().unwrap_or_default().to_string();
    let run = async {
        let mut child = command.spawn().map_err(Error::io("running git"))?;
        if let Some(mut stdin) = child.stdin.take() {
            // Written beside the read, so a large input never waits on a full stdout pipe.
            tokio::spawn(async move {
                let _ = stdin.write_all(&input).await;
            });
        }
        child
            .wait_with_output()
            .await
            .map_err(Error::io("waiting for git"))
    };
    let output = tokio::time::timeout(timeout, run)
        .await
        .map_err(|_| Error::TimedOut {
            command: name.clone(),
            seconds: timeout.as_secs(),
        })??;
    if !output.status.success() && output.status.code().is_none_or(|code| code > 1) {
        return Err(Error::Failed {
            command: name,
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        });
    }
    Ok(Answer {
        success: output.status.success(),
        stdout: output.stdout,
    })
}

/// Runs `git` in `dir` and hands its stdout to `read`, all within `timeout` (the
/// `git_backend_timeout_*` settings). `read` answers its value and whether it read to the end:
/// a reader that stops early (a capped read) gets git killed at once rather than waited for.
/// A failing exit after a read to the end is [`Error::Failed`], with the start of git's stderr.
pub async fn git_stream<T, F, Fut>(
    dir: &Path,
    args: &[&str],
    timeout: Duration,
    read: F,
) -> Result<T>
where
    F: FnOnce(BufReader<ChildStdout>) -> Fut,
    Fut: Future<Output = std::io::Result<(T, bool)>>,
{
    let mut command = command(Some(dir));
    command
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    let name = args.first().copied().unwrap_or_default().to_string();
    // Killed when dropped: on return, on a timeout, and when `read` stopped early.
    let mut child = command.spawn().map_err(Error::io("running git"))?;
    let stdout = child.stdout.take().ok_or_else(broken_pipe)?;
    let mut stderr = child.stderr.take().ok_or_else(broken_pipe)?;
    // Drained beside the read, so git never blocks on a full stderr pipe.
    let stderr = tokio::spawn(async move {
        let mut kept = Vec::new();
        let _ = (&mut stderr).take(STDERR_KEPT).read_to_end(&mut kept).await;
        let _ = tokio::io::copy(&mut stderr, &mut tokio::io::sink()).await;
        String::from_utf8_lossy(&kept).trim().to_string()
    });
    let run = async {
        let (value, read_to_end) = read(BufReader::with_capacity(STREAM_BUFFER, stdout))
            .await
            .map_err(Error::io(format!("reading git {name}")))?;
        if read_to_end {
            let status = child.wait().await.map_err(Error::io("waiting for git"))?;
            if !status.success() {
                return Err(Error::Failed {
                    command: name.clone(),
                    stderr: stderr.await.unwrap_or_default(),
                });
            }
        }
        Ok(value)
    };
    tokio::time::timeout(timeout, run)
        .await
        .map_err(|_| Error::TimedOut {
            command: name.clone(),
            seconds: timeout.as_secs(),
        })?
}

/// Whether `git` exits with success (for questions git answers with its status, such as
/// `merge-base --is-ancestor` and `rev-parse --verify --quiet`), with stdout on success.
pub async fn answer(dir: Option<&Path>, args: &[&str]) -> Result<Option<Vec<u8>>> {
    let output = command(dir)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .await
        .map_err(Error::io("running git"))?;
    Ok(output.status.success().then_some(output.stdout))
}
