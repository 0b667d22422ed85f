//! Bare git repositories on disk, driven through the `git` command line as GitLab's Gitaly and
//! Gitea do. Each project's repository lives at
//! `DATA_DIR/repositories/<tenant>/<project id>.git` (its wiki at `<project id>.wiki.git`):
//! keyed by id, so renames and transfers never move directories.

mod batch_process;
pub mod blame;
pub mod bundle;
pub mod commands_tap;
pub mod commits;
pub mod diff;
mod error;
mod languages;
pub mod merge;
pub mod pktline;
mod process;
pub mod push_scan;
pub mod receive;
pub mod refs;
pub mod smart_http;
pub mod tree;
mod tree_diff;
pub mod write;

pub use error::{Error, Result};
pub use languages::{Languages, language_of};

use std::path::{Path, PathBuf};

use process::{Identity, git, git_with};

/// One bare repository.
#[derive(Debug, Clone)]
pub struct Repository {
    path: PathBuf,
}

/// What a repository holds, for a project's statistics and language breakdown.
#[derive(Debug, Clone, Default)]
pub struct Statistics {
    pub commit_count: i64,
    /// Bytes on disk.
    pub size: i64,
    pub languages: Languages,
}

/// The commit author (and committer) of commits the server makes itself.
pub struct Author<'a> {
    pub name: &'a str,
    pub email: &'a str,
}

impl Repository {
    pub fn project(data_dir: &Path, tenant: i64, project: i64) -> Repository {
        Repository {
            path: root(data_dir, tenant).join(format!("{project}.git")),
        }
    }

    pub fn wiki(data_dir: &Path, tenant: i64, project: i64) -> Repository {
        Repository {
            path: root(data_dir, tenant).join(format!("{project}.wiki.git")),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub async fn exists(&self) -> bool {
        tokio::fs::metadata(self.path.join("HEAD")).await.is_ok()
    }

    /// `git init --bare` with HEAD on `default_branch`. Fails if the directory exists, so a
    /// leftover is never silently adopted.
    pub async fn create(&self, default_branch: &str) -> Result<()> {
        if tokio::fs::metadata(&self.path).await.is_ok() {
            return Err(Error::Exists(self.path.clone()));
        }
        if let Some(parent) = self.path.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(Error::io(format!("creating {}", parent.display())))?;
        }
        let branch = format!("--initial-branch={default_branch}");
        let path = self.path.to_string_lossy().to_string();
        let result = git(None, &["init", "--bare", "--quiet", &branch, &path]).await;
        if result.is_err() {
            self.remove().await;
        }
        result.map(|_| ())
    }

    /// Creates the repository when it is missing (projects made before repositories existed).
    pub async fn ensure(&self, default_branch: &str) -> Result<()> {
        if self.exists().await {
            return Ok(());
        }
        self.remove().await;
        self.create(default_branch).await
    }

    /// Removes the repository directory (nothing when absent).
    pub async fn remove(&self) {
        if let Err(error) = tokio::fs::remove_dir_all(&self.path).await
            && error.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(path = %self.path.display(), %error, "could not remove a repository");
        }
    }

    /// Makes a commit with one file on `branch` using plumbing only (no work tree):
    /// hash-object, mktree, commit-tree, update-ref.
    pub async fn commit_file(
        &self,
        branch: &str,
        file: &str,
        content: &[u8],
        message: &str,
        author: &Author<'_>,
    ) -> Result<String> {
        let dir = Some(self.path.as_path());
        let blob = git_with(dir, &["hash-object", "-w", "--stdin"], content, None).await?;
        let blob = text(&blob);
        let entry = format!("100644 blob {blob}\t{file}\n");
        let tree = git_with(dir, &["mktree"], entry.as_bytes(), None).await?;
        let tree = text(&tree);
        let identity = Identity {
            name: author.name,
            email: author.email,
        };
        let commit = git_with(
            dir,
            &["commit-tree", &tree],
            message.as_bytes(),
            Some(&identity),
        )
        .await?;
        let commit = text(&commit);
        let reference = format!("refs/heads/{branch}");
        git(dir, &["update-ref", &reference, &commit, ""]).await?;
        Ok(commit)
    }

    /// Whether any branch exists.
    pub async fn has_commits(&self) -> Result<bool> {
        let refs = git(
            Some(&self.path),
            &[
                "for-each-ref",
                "--count=1",
                "--format=%(refname)",
                "refs/heads",
            ],
        )
        .await?;
        Ok(!refs.is_empty())
    }

    /// Commits reachable from `branch` (GitLab's `commit_count` counts the default branch).
    pub async fn commit_count(&self, branch: &str) -> Result<i64> {
        if !self.branch_exists(branch).await? {
            return Ok(0);
        }
        let out = git(
            Some(&self.path),
            &["rev-list", "--count", &format!("refs/heads/{branch}")],
        )
        .await?;
        Ok(text(&out).parse().unwrap_or(0))
    }

    /// Branch names, sorted.
    pub async fn branches(&self) -> Result<Vec<String>> {
        let out = git(
            Some(&self.path),
            &["for-each-ref", "--format=%(refname:lstrip=2)", "refs/heads"],
        )
        .await?;
        Ok(text(&out).lines().map(str::to_string).collect())
    }

    pub async fn branch_exists(&self, branch: &str) -> Result<bool> {
        let reference = format!("refs/heads/{branch}");
        let out = git(
            Some(&self.path),
            &["for-each-ref", "--format=%(refname)", &reference],
        )
        .await?;
        Ok(!out.is_empty())
    }

    /// Points HEAD at `branch` (the default branch of a fork or mirror).
    pub async fn set_head(&self, branch: &str) -> Result<()> {
        let reference = format!("refs/heads/{branch}");
        git(Some(&self.path), &["symbolic-ref", "HEAD", &reference]).await?;
        Ok(())
    }

    /// Blob paths and sizes on `branch` (empty when the branch does not exist).
    pub async fn files(&self, branch: &str) -> Result<Vec<(String, u64)>> {
        if !self.branch_exists(branch).await? {
            return Ok(Vec::new());
        }
        let reference = format!("refs/heads/{branch}");
        let out = git(
            Some(&self.path),
            &["ls-tree", "-r", "-l", "-z", "--full-tree", &reference],
        )
        .await?;
        Ok(out
            .split(|b| *b == 0)
            .filter_map(|entry| {
                let entry = std::str::from_utf8(entry).ok()?;
                let (meta, path) = entry.split_once('\t')?;
                let mut parts = meta.split_whitespace();
                let (_mode, kind, _oid, size) =
                    (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
                (kind == "blob").then(|| (path.to_string(), size.parse().unwrap_or(0)))
            })
            .collect())
    }

    /// Bytes the repository takes on disk.
    pub async fn disk_size(&self) -> u64 {
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || directory_size(&path))
            .await
            .unwrap_or(0)
    }

    /// Commit count on `branch`, size on disk and languages of `branch`'s files.
    pub async fn statistics(&self, branch: &str) -> Result<Statistics> {
        Ok(Statistics {
            commit_count: self.commit_count(branch).await?,
            size: self.disk_size().await as i64,
            languages: Languages::of_files(&self.files(branch).await?),
        })
    }

    /// Copies the branches and tags of `source` (a path or URL) into this repository; with
    /// `branches`, only those branches. Existing refs are overwritten. `config` is passed as
    /// `-c key=value` (protocol limits, pinned addresses).
    pub async fn fetch(
        &self,
        source: &str,
        branches: Option<&[String]>,
        config: &[String],
    ) -> Result<()> {
        let mut args: Vec<String> = config
            .iter()
            .flat_map(|c| ["-c".to_string(), c.clone()])
            .collect();
        args.extend([
            "fetch".into(),
            "--quiet".into(),
            "--no-write-fetch-head".into(),
            "--prune".into(),
            "--".into(),
            source.into(),
        ]);
        match branches {
            Some(names) => {
                args.extend(
                    names
                        .iter()
                        .map(|b| format!("+refs/heads/{b}:refs/heads/{b}")),
                );
            }
            None => {
                args.push("+refs/heads/*:refs/heads/*".into());
                args.push("+refs/tags/*:refs/tags/*".into());
            }
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        git(Some(&self.path), &args).await?;
        Ok(())
    }

    /// `git gc` (housekeeping).
    pub async fn gc(&self) -> Result<()> {
        git(Some(&self.path), &["gc", "--quiet"]).await?;
        Ok(())
    }

    /// An uncompressed tar of the repository directory, streamed from `tar`.
    pub fn tar(&self) -> Result<tokio::process::ChildStdout> {
        let mut child = tokio::process::Command::from(process::isolated("tar"))
            .arg("-cf")
            .arg("-")
            .arg("-C")
            .arg(&self.path)
            .arg(".")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(Error::io("running tar"))?;
        let stdout = child.stdout.take().ok_or_else(|| {
            Error::io("reading tar")(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
        })?;
        // Reap the process when it ends; the stream ends with its output.
        tokio::spawn(async move {
            let _ = child.wait().await;
        });
        Ok(stdout)
    }
}

/// `DATA_DIR/repositories/<tenant>`.
pub fn root(data_dir: &Path, tenant: i64) -> PathBuf {
    repositories(data_dir).join(tenant.to_string())
}

/// `DATA_DIR/repositories`: every tenant's repositories.
pub fn repositories(data_dir: &Path) -> PathBuf {
    data_dir.join("repositories")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).trim().to_string()
}

fn directory_size(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(t) if t.is_dir() => directory_size(&entry.path()),
            Ok(_) => entry.metadata().map(|m| m.len()).unwrap_or(0),
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn create_commit_count_files_and_fetch() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::project(dir.path(), 1, 7);
        repo.create("main").await.unwrap();
        assert!(
            repo.create("main").await.is_err(),
            "never adopts a leftover"
        );
        assert!(!repo.has_commits().await.unwrap());
        assert_eq!(repo.commit_count("main").await.unwrap(), 0);
        let author = Author {
            name: "Ada",
            email: "ada@example.com",
        };
        repo.commit_file("main", "README.md", b"# Hi\n", "Initial commit", &author)
            .await
            .unwrap();
        assert!(repo.has_commits().await.unwrap());
        assert_eq!(repo.commit_count("main").await.unwrap(), 1);
        assert_eq!(
            repo.files("main").await.unwrap(),
            vec![("README.md".to_string(), 5)]
        );
        let copy = Repository::project(dir.path(), 1, 8);
        copy.create("main").await.unwrap();
        copy.fetch(&repo.path().to_string_lossy(), None, &[])
            .await
            .unwrap();
        assert_eq!(copy.commit_count("main").await.unwrap(), 1);
        assert!(copy.disk_size().await > 0);
        copy.remove().await;
        assert!(!copy.exists().await);
        copy.ensure("main").await.unwrap();
        assert!(copy.exists().await && !copy.has_commits().await.unwrap());
        copy.ensure("main").await.unwrap();
    }
}
