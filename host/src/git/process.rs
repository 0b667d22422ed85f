//! Running `git`: isolated from the host's user and system configuration, never prompting,
//! failing with git's own message.

use std::path::Path;
use std::process::Stdio;

use anyhow::Context;
use tokio::io::AsyncWriteExt;

/// The author and committer of a commit made with `commit-tree`.
pub struct Identity<'a> {
    pub name: &'a str,
    pub email: &'a str,
}

pub async fn git(dir: Option<&Path>, args: &[&str]) -> anyhow::Result<Vec<u8>> {
    git_with(dir, args, &[], None).await
}

/// Runs `git` in `dir` (as `--git-dir`) with `input` on stdin and returns stdout.
pub async fn git_with(
    dir: Option<&Path>,
    args: &[&str],
    input: &[u8],
    identity: Option<&Identity<'_>>,
) -> anyhow::Result<Vec<u8>> {
    let mut command = tokio::process::Command::new("git");
    if let Some(dir) = dir {
        command.arg("--git-dir").arg(dir);
    }
    command
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "/bin/false")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(identity) = identity {
        for role in ["AUTHOR", "COMMITTER"] {
            command
                .env(format!("GIT_{role}_NAME"), identity.name)
                .env(format!("GIT_{role}_EMAIL"), identity.email);
        }
    }
    let mut child = command.spawn().context("running git")?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input).await.context("writing to git")?;
    }
    let output = child.wait_with_output().await.context("waiting for git")?;
    anyhow::ensure!(
        output.status.success(),
        "git {} failed: {}",
        args.first().copied().unwrap_or_default(),
        String::from_utf8_lossy(&output.stderr).trim()
    );
    Ok(output.stdout)
}
