//! Making commits on the server without a work tree: blobs with `hash-object`, the tree
//! from the parent's tree plus the changes in a temporary index (`read-tree`,
//! `update-index --index-info`, `write-tree`), then `commit-tree`. No ref moves here: the
//! caller moves the branch with [`Repository::update_ref`] (compare-and-swap), through the
//! one place that decides ref changes (`services::repository_writes`).

use super::process::run;
use super::{Error, Repository, Result, text};

/// What a path becomes in the new commit.
#[derive(Debug, Clone)]
pub enum Change {
    /// A blob with these contents and mode (`100644` or `100755`).
    Write {
        path: String,
        content: Vec<u8>,
        mode: &'static str,
    },
    /// An existing object under this path and mode (moves and mode changes).
    Place {
        path: String,
        id: String,
        mode: String,
    },
    Remove {
        path: String,
    },
}

/// The author or committer of a commit.
#[derive(Debug, Clone)]
pub struct Signature {
    pub name: String,
    pub email: String,
}

/// A commit to make.
pub struct NewCommit<'a> {
    /// The parent commit (`None`: a root commit).
    pub parent: Option<&'a str>,
    pub changes: &'a [Change],
    pub message: &'a str,
    pub author: &'a Signature,
    pub committer: &'a Signature,
}

/// A temporary index file inside the repository, removed when dropped.
struct TempIndex(std::path::PathBuf);

impl Drop for TempIndex {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl Repository {
    /// Writes the commit's objects and returns its id.
    pub async fn write_commit(&self, commit: &NewCommit<'_>) -> Result<String> {
        let dir = Some(self.path.as_path());
        let index = TempIndex(
            self.path
                .join(format!("trellis-index-{:016x}", rand::random::<u64>())),
        );
        let env = [(
            "GIT_INDEX_FILE".to_string(),
            index.0.to_string_lossy().to_string(),
        )];
        match commit.parent {
            Some(parent) => run(dir, &["read-tree", parent], &[], &env).await?,
            None => run(dir, &["read-tree", "--empty"], &[], &env).await?,
        };
        let mut info = Vec::new();
        for change in commit.changes {
            let line = match change {
                Change::Write {
                    path,
                    content,
                    mode,
                } => {
                    let id = git_hash(self, content).await?;
                    format!("{mode} {id}\t{path}")
                }
                Change::Place { path, id, mode } => format!("{mode} {id}\t{path}"),
                Change::Remove { path } => {
                    format!("0 0000000000000000000000000000000000000000\t{path}")
                }
            };
            info.extend_from_slice(line.as_bytes());
            info.push(0);
        }
        run(dir, &["update-index", "-z", "--index-info"], &info, &env).await?;
        let tree = text(&run(dir, &["write-tree"], &[], &env).await?);
        let mut args = vec!["commit-tree", tree.as_str()];
        if let Some(parent) = commit.parent {
            args.extend(["-p", parent]);
        }
        let identity = [
            ("GIT_AUTHOR_NAME", &commit.author.name),
            ("GIT_AUTHOR_EMAIL", &commit.author.email),
            ("GIT_COMMITTER_NAME", &commit.committer.name),
            ("GIT_COMMITTER_EMAIL", &commit.committer.email),
        ]
        .map(|(k, v)| (k.to_string(), v.clone()));
        let id = run(dir, &args, commit.message.as_bytes(), &identity).await?;
        let id = text(&id);
        if id.is_empty() {
            return Err(Error::Failed {
                command: "commit-tree".into(),
                stderr: "no commit id".into(),
            });
        }
        Ok(id)
    }
}

async fn git_hash(repo: &Repository, content: &[u8]) -> Result<String> {
    let out = run(
        Some(repo.path()),
        &["hash-object", "-w", "--stdin"],
        content,
        &[],
    )
    .await?;
    Ok(text(&out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::refs::Revision;

    #[tokio::test]
    async fn commits_changes_onto_a_parent_without_a_work_tree() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::project(dir.path(), 1, 1);
        repo.create("main").await.unwrap();
        let ada = Signature {
            name: "Ada".into(),
            email: "ada@example.com".into(),
        };
        let bot = Signature {
            name: "Bot".into(),
            email: "bot@example.com".into(),
        };
        let first = repo
            .write_commit(&NewCommit {
                parent: None,
                changes: &[
                    Change::Write {
                        path: "a.txt".into(),
                        content: b"a\n".to_vec(),
                        mode: "100644",
                    },
                    Change::Write {
                        path: "dir/run.sh".into(),
                        content: b"#!/bin/sh\n".to_vec(),
                        mode: "100755",
                    },
                ],
                message: "First",
                author: &ada,
                committer: &bot,
            })
            .await
            .unwrap();
        let a = repo.entry(&first, "a.txt").await.unwrap().unwrap();
        let second = repo
            .write_commit(&NewCommit {
                parent: Some(&first),
                changes: &[
                    Change::Remove {
                        path: "a.txt".into(),
                    },
                    Change::Place {
                        path: "b.txt".into(),
                        id: a.id.clone(),
                        mode: "100644".into(),
                    },
                ],
                message: "Move",
                author: &ada,
                committer: &bot,
            })
            .await
            .unwrap();
        let tree = repo.tree(&second, None, true).await.unwrap().unwrap();
        let paths: Vec<&str> = tree.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["b.txt", "dir", "dir/run.sh"]);
        assert_eq!(tree[2].mode, "100755");
        let commit = repo
            .commit(&Revision::parse(&second).unwrap())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(commit.parent_ids, vec![first]);
        assert_eq!(commit.author_name, "Ada");
        assert_eq!(commit.committer_email, "bot@example.com");
        let limits = crate::diff::DiffLimits::gitlab(1000, 50_000, 204_800, false);
        let timeout = std::time::Duration::from_secs(30);
        let diffs = repo.diff(None, &second, &limits, timeout).await.unwrap();
        assert_eq!(diffs.files.len(), 1);
        assert!(diffs.files[0].renamed_file && !diffs.overflow);
        assert!(
            !std::fs::read_dir(repo.path())
                .unwrap()
                .flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("trellis-index")),
            "the temporary index is removed"
        );
    }
}
