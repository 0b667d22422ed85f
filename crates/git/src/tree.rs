//! Trees and blobs: the entries of a directory at a commit, one file's entry, blob contents
//! (whole, or streamed for raw downloads) and archives streamed from `git archive` (or made by
//! `git upload-archive` for `git archive --remote`). Paths are checked with [`valid_path`] by
//! callers and passed as literal pathspecs (`process::command`).

use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::process::{answer, command, git, git_stream};
use super::{Error, Repository, Result, text};

/// One entry of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `100644`, `100755`, `120000`, `040000`, `160000`.
    pub mode: String,
    /// `blob`, `tree` or `commit` (a submodule).
    pub kind: String,
    pub id: String,
    /// The full path from the repository root.
    pub path: String,
}

impl Entry {
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }
}

/// Whether `path` is a relative file path inside the repository: no empty, `.` or `..`
/// components, no leading or trailing `/`, no `.git` component, no NUL or control
/// characters.
pub fn valid_path(path: &str) -> bool {
    !path.is_empty()
        && path.len() <= 4096
        && !path.chars().any(char::is_control)
        && path.split('/').all(|part| {
            !part.is_empty() && part != "." && part != ".." && !part.eq_ignore_ascii_case(".git")
        })
}

/// The archive formats `git archive` writes, by GitLab's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveFormat {
    TarGz,
    TarBz2,
    Tar,
    Zip,
}

impl ArchiveFormat {
    /// GitLab's format names (`tar.gz` by default).
    pub fn parse(name: &str) -> Option<ArchiveFormat> {
        Some(match name {
            "tar.gz" | "tgz" | "gz" => ArchiveFormat::TarGz,
            "tar.bz2" | "tbz" | "tbz2" | "tb2" | "bz2" => ArchiveFormat::TarBz2,
            "tar" => ArchiveFormat::Tar,
            "zip" => ArchiveFormat::Zip,
            _ => return None,
        })
    }

    pub fn extension(self) -> &'static str {
        match self {
            ArchiveFormat::TarGz => "tar.gz",
            ArchiveFormat::TarBz2 => "tar.bz2",
            ArchiveFormat::Tar => "tar",
            ArchiveFormat::Zip => "zip",
        }
    }

    pub const fn content_type(self) -> &'static str {
        match self {
            ArchiveFormat::TarGz => "application/gzip",
            ArchiveFormat::TarBz2 => "application/x-bzip2",
            ArchiveFormat::Tar => "application/x-tar",
            ArchiveFormat::Zip => "application/zip",
        }
    }
}

impl Repository {
    /// The entries of the directory `path` (the root when `None`) at `commit`; with
    /// `recursive`, every entry below it, trees included. `None` when `path` is not a
    /// directory there.
    pub async fn tree(
        &self,
        commit: &str,
        path: Option<&str>,
        recursive: bool,
    ) -> Result<Option<Vec<Entry>>> {
        if let Some(path) = path
            && self
                .entry(commit, path)
                .await?
                .is_none_or(|e| e.kind != "tree")
        {
            return Ok(None);
        }
        let mut args = vec!["ls-tree", "-z", "--full-tree"];
        if recursive {
            args.extend(["-r", "-t"]);
        }
        args.extend([commit, "--"]);
        let prefix = path.map(|p| format!("{p}/"));
        if let Some(prefix) = &prefix {
            args.push(prefix);
        }
        let out = git(Some(&self.path), &args).await?;
        // With `-t`, git also lists the directory itself.
        let inside = |e: &Entry| {
            prefix
                .as_ref()
                .is_none_or(|p| e.path.starts_with(p.as_str()))
        };
        Ok(Some(entries(&out).into_iter().filter(inside).collect()))
    }

    /// The entry at `path` in `commit`, if any.
    pub async fn entry(&self, commit: &str, path: &str) -> Result<Option<Entry>> {
        let out = git(
            Some(&self.path),
            &["ls-tree", "-z", "--full-tree", commit, "--", path],
        )
        .await?;
        Ok(entries(&out).into_iter().find(|e| e.path == path))
    }

    /// The entries at several paths in `commit` (those that exist).
    pub async fn entries_at(&self, commit: &str, paths: &[&str]) -> Result<Vec<Entry>> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let mut args = vec!["ls-tree", "-z", "--full-tree", commit, "--"];
        args.extend(paths);
        let out = git(Some(&self.path), &args).await?;
        Ok(entries(&out))
    }

    /// The blob's type-checked size, if `id` names a blob.
    pub async fn blob_size(&self, id: &str) -> Result<Option<u64>> {
        if !id.bytes().all(|b| b.is_ascii_hexdigit()) || id.is_empty() || id.len() > 64 {
            return Ok(None);
        }
        let spec = format!("{id}^{{blob}}");
        let Some(kind) = answer(Some(&self.path), &["cat-file", "-t", &spec]).await? else {
            return Ok(None);
        };
        if text(&kind) != "blob" {
            return Ok(None);
        }
        let size = git(Some(&self.path), &["cat-file", "-s", id]).await?;
        Ok(text(&size).parse().ok())
    }

    /// A blob's full contents.
    pub async fn blob(&self, id: &str) -> Result<Vec<u8>> {
        git(Some(&self.path), &["cat-file", "blob", id]).await
    }

    /// The first `max_bytes` of a blob (all of a smaller one), read within `timeout`: git is
    /// stopped there, so a large blob costs no more than that.
    pub async fn blob_start(&self, id: &str, max_bytes: u64, timeout: Duration) -> Result<Vec<u8>> {
        git_stream(
            &self.path,
            &["cat-file", "blob", id],
            timeout,
            |out| async move {
                let mut start = Vec::new();
                let read = out.take(max_bytes).read_to_end(&mut start).await?;
                Ok((start, (read as u64) < max_bytes))
            },
        )
        .await
    }

    /// A blob's contents, streamed.
    pub fn blob_stream(&self, id: &str) -> Result<tokio::process::ChildStdout> {
        let mut cmd = command(Some(&self.path));
        cmd.args(["cat-file", "blob", id])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        spawn_stdout(cmd)
    }

    /// `git archive` of `commit` (only `path` below it when given), under the directory
    /// `prefix`, streamed; git is killed if `stop` resolves first (and `stop` is dropped when
    /// git exits). Callers check that `commit` and `path` exist first: once the stream has
    /// started, a failure can only cut it short.
    pub fn archive(
        &self,
        commit: &str,
        format: ArchiveFormat,
        prefix: &str,
        path: Option<&str>,
        stop: impl Future<Output = ()> + Send + 'static,
    ) -> Result<tokio::process::ChildStdout> {
        let mut cmd = command(Some(&self.path));
        if format == ArchiveFormat::TarBz2 {
            cmd.args(["-c", "tar.tar.bz2.command=bzip2 -c"]);
        }
        let format = format!("--format={}", format.extension());
        let prefix = format!("--prefix={prefix}/");
        cmd.args(["archive", &format, &prefix, commit, "--"]);
        if let Some(path) = path {
            cmd.arg(path);
        }
        cmd.stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = cmd.spawn().map_err(Error::io("running git"))?;
        let stdout = child.stdout.take().ok_or_else(|| {
            Error::io("reading git")(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
        })?;
        tokio::spawn(async move {
            tokio::select! {
                _ = child.wait() => {}
                () = stop => {
                    let _ = child.kill().await;
                }
            }
        });
        Ok(stdout)
    }

    /// `git upload-archive` for a full-duplex transport (SSH): the client sends its `git
    /// archive` arguments on stdin and reads the archive from stdout. Git itself refuses what
    /// would reach beyond the repository (`--output`, `--add-file`, `--exec`, formats not
    /// marked remote, a tree-ish not named by a ref). Stdin, stdout and stderr are piped; the
    /// process is killed when the child is dropped.
    pub fn spawn_upload_archive(&self) -> Result<tokio::process::Child> {
        command(None)
            .arg("upload-archive")
            .arg(&self.path)
            // The pathspecs are the client's own, matched as git and Gitaly match them
            // (wildcards included): literal paths are for the file names API callers send.
            .env_remove("GIT_LITERAL_PATHSPECS")
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(Error::io("running git"))
    }
}

/// Starts `cmd` and hands out its stdout; the process is reaped when it ends.
fn spawn_stdout(mut cmd: tokio::process::Command) -> Result<tokio::process::ChildStdout> {
    let mut child = cmd.spawn().map_err(Error::io("running git"))?;
    let stdout = child.stdout.take().ok_or_else(|| {
        Error::io("reading git")(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
    })?;
    tokio::spawn(async move {
        let _ = child.wait().await;
    });
    Ok(stdout)
}

/// `ls-tree -z` output: `<mode> SP <type> SP <object> TAB <path> NUL`.
fn entries(out: &[u8]) -> Vec<Entry> {
    out.split(|b| *b == 0)
        .filter_map(|record| {
            let record = std::str::from_utf8(record).ok()?;
            let (meta, path) = record.split_once('\t')?;
            let mut parts = meta.split(' ');
            Some(Entry {
                mode: parts.next()?.to_string(),
                kind: parts.next()?.to_string(),
                id: parts.next()?.to_string(),
                path: path.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_repository() {
        for ok in ["a", "dir/file.txt", "a b/c", "ünï/code", "x..y"] {
            assert!(valid_path(ok), "{ok}");
        }
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a//b",
            "a/",
            "./a",
            "a/.",
            ".git/config",
            "a/.GIT/x",
            "a\nb",
            "a\0b",
        ] {
            assert!(!valid_path(bad), "{bad:?}");
        }
    }

    #[test]
    fn formats_by_gitlab_names() {
        assert_eq!(ArchiveFormat::parse("tar.gz"), Some(ArchiveFormat::TarGz));
        assert_eq!(ArchiveFormat::parse("tbz2"), Some(ArchiveFormat::TarBz2));
        assert_eq!(ArchiveFormat::parse("zip"), Some(ArchiveFormat::Zip));
        assert_eq!(ArchiveFormat::parse("rar"), None);
    }
}
