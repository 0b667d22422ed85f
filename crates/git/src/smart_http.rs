//! Git's smart HTTP protocol (`gitprotocol-http(5)`), served as GitLab's Gitaly and Gitea do:
//! `git upload-pack` (fetch, clone) and `git receive-pack` (push) run with `--stateless-rpc`
//! once per request, the request body streamed into git's stdin and its stdout streamed back.
//! Git does the protocol work itself (negotiation, packs, ref updates and their locking); the
//! server only decides who may run which service.

use std::io::Write;
use std::process::{ExitStatus, Stdio};

use futures_util::{Stream, StreamExt};
use tokio::io::AsyncWriteExt;
use tokio::process::{ChildStdin, ChildStdout};
use tokio::task::JoinHandle;

use super::commands_tap::{CommandsTap, TappedWriter};
use super::error::{Error, Result};
use super::receive::ReceiveOptions;
use super::{Repository, pktline, process};

/// The two services a client may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    UploadPack,
    ReceivePack,
}

impl Service {
    /// `git-upload-pack` or `git-receive-pack`, as the URL and `?service=` name them.
    pub fn from_name(name: &str) -> Option<Service> {
        match name {
            "git-upload-pack" => Some(Service::UploadPack),
            "git-receive-pack" => Some(Service::ReceivePack),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Service::UploadPack => "git-upload-pack",
            Service::ReceivePack => "git-receive-pack",
        }
    }

    fn subcommand(self) -> &'static str {
        match self {
            Service::UploadPack => "upload-pack",
            Service::ReceivePack => "receive-pack",
        }
    }
}

/// The `Git-Protocol` header's value when it is one git could have sent (`version=2`,
/// key=value pairs joined by `:`); anything else is dropped rather than handed to git.
pub fn protocol(header: &str) -> Option<&str> {
    let plausible = !header.is_empty()
        && header.len() <= 256
        && header
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"=:._-".contains(&b));
    plausible.then_some(header)
}

fn command(
    service: Service,
    protocol: Option<&str>,
    options: Option<&ReceiveOptions>,
) -> tokio::process::Command {
    let mut command = full_duplex_command(service, protocol, options);
    command.arg("--stateless-rpc");
    command
}

/// `git <service>` with the client's protocol (`GIT_PROTOCOL`) and, for a push, its session's
/// `options` (the hooks path, limits and the callback's environment), before its arguments.
fn full_duplex_command(
    service: Service,
    protocol: Option<&str>,
    options: Option<&ReceiveOptions>,
) -> tokio::process::Command {
    let mut command = process::command(None);
    if let Some(options) = options {
        for setting in &options.config {
            command.arg("-c").arg(setting);
        }
        command.envs(options.env.iter().map(|(k, v)| (k, v)));
    }
    command.arg(service.subcommand()).env_remove("GIT_PROTOCOL");
    if let Some(protocol) = protocol {
        command.env("GIT_PROTOCOL", protocol);
    }
    command
}

/// Starts `service` on `repo` for a full-duplex transport (SSH): one process holds the whole
/// conversation, advertisement included, as `git daemon` and OpenSSH run it. Its stdin,
/// stdout and stderr are piped; the process is killed when the child is dropped. A push runs
/// with its session's `options`, as over HTTP.
pub fn spawn_full_duplex(
    repo: &Repository,
    service: Service,
    protocol: Option<&str>,
    options: Option<&ReceiveOptions>,
) -> Result<tokio::process::Child> {
    full_duplex_command(service, protocol, options)
        .arg(repo.path())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(Error::io("running git"))
}

/// The answer to `GET info/refs?service=...`: the `# service=` packet, a flush, then git's
/// reference (or, for protocol v2, capability) advertisement. It is small, so it is read
/// whole.
pub async fn advertisement(
    repo: &Repository,
    service: Service,
    protocol: Option<&str>,
) -> Result<Vec<u8>> {
    let output = command(service, protocol, None)
        .arg("--advertise-refs")
        .arg(repo.path())
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .await
        .map_err(Error::io("running git"))?;
    if !output.status.success() {
        return Err(Error::Failed {
            command: service.subcommand().into(),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        });
    }
    let mut body = pktline::data(format!("# service={}\n", service.name()).as_bytes());
    body.extend_from_slice(pktline::FLUSH);
    body.extend(output.stdout);
    Ok(body)
}

/// A running service: its stdout, and git's exit once it ends (with what it said on stderr).
pub struct Rpc {
    pub output: ChildStdout,
    pub exit: JoinHandle<Option<(ExitStatus, String)>>,
}

/// Starts `service` on `repo` and streams `body` (gzip-compressed when `gzip`) into it. A
/// push runs with its session's `options` (`services::git_push::Push::receive_options`), and
/// its body passes its `tap` (`Push::commands_tap`).
pub fn rpc<S, B, E>(
    repo: &Repository,
    service: Service,
    protocol: Option<&str>,
    options: Option<&ReceiveOptions>,
    body: S,
    gzip: bool,
    tap: Option<CommandsTap>,
) -> Result<Rpc>
where
    S: Stream<Item = std::result::Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send,
    E: std::error::Error + Send + Sync + 'static,
{
    let mut child = command(service, protocol, options)
        .arg(repo.path())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(Error::io("running git"))?;
    let broken = || Error::io("talking to git")(std::io::ErrorKind::BrokenPipe.into());
    let stdin = child.stdin.take().ok_or_else(broken)?;
    let output = child.stdout.take().ok_or_else(broken)?;
    tokio::spawn(async move {
        // A client that goes away or sends a broken body: git sees its input end and fails.
        if let Err(error) = feed(TappedWriter::new(stdin, tap), body, gzip).await {
            tracing::debug!(%error, "git request body ended early");
        }
    });
    let exit = tokio::spawn(async move {
        let done = child.wait_with_output().await.ok()?;
        Some((
            done.status,
            String::from_utf8_lossy(&done.stderr).trim().to_string(),
        ))
    });
    Ok(Rpc { output, exit })
}

/// Copies the request body into git's stdin, inflating it on the way when it is gzipped
/// (git sends large fetch negotiations compressed). Chunk by chunk: nothing is held whole.
async fn feed<S, B, E>(
    mut stdin: TappedWriter<ChildStdin>,
    body: S,
    gzip: bool,
) -> std::io::Result<()>
where
    S: Stream<Item = std::result::Result<B, E>> + Send,
    B: AsRef<[u8]> + Send,
    E: std::error::Error + Send + Sync + 'static,
{
    let mut body = std::pin::pin!(body);
    let mut inflater = gzip.then(|| flate2::write::GzDecoder::new(Vec::new()));
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(std::io::Error::other)?;
        let chunk = chunk.as_ref();
        match inflater.as_mut() {
            Some(inflater) => {
                inflater.write_all(chunk)?;
                let inflated = std::mem::take(inflater.get_mut());
                stdin.write_all(&inflated).await?;
            }
            None => stdin.write_all(chunk).await?,
        }
    }
    if let Some(mut inflater) = inflater {
        inflater.try_finish()?;
        stdin.write_all(inflater.get_ref()).await?;
    }
    stdin.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plausible_protocol_headers_reach_git() {
        assert_eq!(protocol("version=2"), Some("version=2"));
        assert_eq!(
            protocol("version=2:object-format=sha1"),
            Some("version=2:object-format=sha1")
        );
        assert_eq!(protocol(""), None);
        assert_eq!(protocol("version=2\nX"), None);
        assert_eq!(protocol("a b"), None);
    }

    #[tokio::test]
    async fn advertisement_starts_with_the_service_packet() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::project(dir.path(), 1, 1);
        repo.create("main").await.unwrap();
        let body = advertisement(&repo, Service::UploadPack, None)
            .await
            .unwrap();
        assert!(body.starts_with(b"001e# service=git-upload-pack\n0000"));
        let v2 = advertisement(&repo, Service::UploadPack, Some("version=2"))
            .await
            .unwrap();
        assert!(v2[34..].starts_with(b"000eversion 2\n"));
    }

    #[tokio::test]
    async fn gzipped_bodies_are_inflated_for_git() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::project(dir.path(), 1, 1);
        repo.create("main").await.unwrap();
        // An empty fetch request (a flush alone): upload-pack answers nothing and succeeds.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"0000").unwrap();
        let body = futures_util::stream::iter([Ok::<_, std::io::Error>(gz.finish().unwrap())]);
        let rpc = rpc(&repo, Service::UploadPack, None, None, body, true, None).unwrap();
        let (status, stderr) = rpc.exit.await.unwrap().unwrap();
        assert!(status.success(), "{stderr}");
    }
}
