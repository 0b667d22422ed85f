//! Merges made by the server without a work tree (as Gitaly's `UserMergeBranch`,
//! `UserSquash` and `UserRebaseConfirmable` do): `git merge-tree --write-tree` computes the
//! merged tree, `commit-tree` makes the commit, and no ref moves here (the caller moves the
//! target branch with compare-and-swap through its one place for ref changes).

use std::process::Stdio;

use super::process::{command, run};
use super::write::Signature;
use super::{Error, Repository, Result, text};

/// What merging two commits gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeTree {
    /// The merged tree.
    Clean { tree: String },
    /// The paths git could not merge.
    Conflict { paths: Vec<String> },
}

/// A commit to make from a tree that exists already.
pub struct TreeCommit<'a> {
    pub tree: &'a str,
    pub parents: &'a [&'a str],
    pub message: &'a str,
    pub author: &'a Signature,
    pub committer: &'a Signature,
}

impl Repository {
    /// `ours` and `theirs` merged, as `git merge` would (the `ort` strategy, their merge base
    /// or `base` when given, as a cherry-pick gives the picked commit's parent).
    pub async fn merge_tree(
        &self,
        ours: &str,
        theirs: &str,
        base: Option<&str>,
    ) -> Result<MergeTree> {
        let merge_base = base.map(|b| format!("--merge-base={b}"));
        let mut args = vec![
            "merge-tree",
            "--write-tree",
            "--name-only",
            "--no-messages",
            "-z",
        ];
        if let Some(merge_base) = &merge_base {
            args.push(merge_base);
        }
        args.extend(["--end-of-options", ours, theirs]);
        let output = command(Some(&self.path))
            .args(&args)
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .await
            .map_err(Error::io("running git"))?;
        // With `-z --name-only --no-messages`: the tree, then each conflicted path, each
        // ended by NUL.
        let mut fields = output
            .stdout
            .split(|b| *b == 0)
            .map(|f| String::from_utf8_lossy(f).into_owned());
        let tree = fields.next().unwrap_or_default();
        match output.status.code() {
            Some(0) => Ok(MergeTree::Clean { tree }),
            Some(1) => {
                let mut paths: Vec<String> = fields.filter(|p| !p.is_empty()).collect();
                paths.dedup();
                Ok(MergeTree::Conflict { paths })
            }
            _ => Err(Error::Failed {
                command: "merge-tree".into(),
                stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            }),
        }
    }

    /// Whether `ancestor` is in `descendant`'s history (a commit is its own ancestor).
    pub async fn is_ancestor(&self, ancestor: &str, descendant: &str) -> Result<bool> {
        let status = command(Some(&self.path))
            .args(["merge-base", "--is-ancestor", ancestor, descendant])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .await
            .map_err(Error::io("running git"))?;
        match status.code() {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(Error::Failed {
                command: "merge-base".into(),
                stderr: format!("cannot compare {ancestor} and {descendant}"),
            }),
        }
    }

    /// Makes the commit of `commit.tree` with its parents; returns its id.
    pub async fn commit_tree(&self, commit: &TreeCommit<'_>) -> Result<String> {
        let mut args = vec!["commit-tree", commit.tree];
        for parent in commit.parents {
            args.extend(["-p", parent]);
        }
        let identity = [
            ("GIT_AUTHOR_NAME", &commit.author.name),
            ("GIT_AUTHOR_EMAIL", &commit.author.email),
            ("GIT_COMMITTER_NAME", &commit.committer.name),
            ("GIT_COMMITTER_EMAIL", &commit.committer.email),
        ]
        .map(|(k, v)| (k.to_string(), v.clone()));
        let out = run(
            Some(&self.path),
            &args,
            commit.message.as_bytes(),
            &identity,
        )
        .await?;
        Ok(text(&out))
    }

    /// How many paths differ between `from` and `to` (renames counted once).
    pub async fn changed_paths_count(&self, from: &str, to: &str) -> Result<usize> {
        let out = run(
            Some(&self.path),
            &[
                "diff-tree",
                "-r",
                "-M",
                "--name-only",
                "-z",
                "--end-of-options",
                from,
                to,
            ],
            &[],
            &[],
        )
        .await?;
        Ok(out.split(|b| *b == 0).filter(|p| !p.is_empty()).count())
    }

    /// The patch from `from` to `to` as `git diff` writes it.
    pub async fn patch(&self, from: &str, to: &str) -> Result<Vec<u8>> {
        run(
            Some(&self.path),
            &[
                "diff",
                "--no-color",
                "--no-ext-diff",
                "-M",
                "--end-of-options",
                from,
                to,
            ],
            &[],
            &[],
        )
        .await
    }

    /// The tree of `commit`.
    pub async fn tree_of(&self, commit: &str) -> Result<String> {
        let spec = format!("{commit}^{{tree}}");
        let out = run(
            Some(&self.path),
            &["rev-parse", "--verify", "--end-of-options", &spec],
            &[],
            &[],
        )
        .await?;
        Ok(text(&out))
    }

    /// The commits of `base..head`, oldest first, without merges' second parents' histories
    /// being replayed separately (as `git rebase` drops merge commits).
    pub async fn commits_to_replay(&self, base: &str, head: &str) -> Result<Vec<String>> {
        let range = format!("{base}..{head}");
        let out = run(
            Some(&self.path),
            &[
                "rev-list",
                "--reverse",
                "--no-merges",
                "--end-of-options",
                &range,
            ],
            &[],
            &[],
        )
        .await?;
        Ok(text(&out).lines().map(str::to_string).collect())
    }

    /// Replays `commits` (oldest first) onto `onto` as `git rebase` does, keeping each
    /// commit's author and message and making `committer` their committer; returns the new
    /// head, or the conflicting paths of the first commit that does not apply.
    pub async fn replay(
        &self,
        onto: &str,
        commits: &[String],
        committer: &Signature,
    ) -> Result<std::result::Result<String, Vec<String>>> {
        let mut head = onto.to_string();
        for commit in commits {
            let parent = format!("{commit}^");
            let tree = match self.merge_tree(&head, commit, Some(&parent)).await? {
                MergeTree::Clean { tree } => tree,
                MergeTree::Conflict { paths } => return Ok(Err(paths)),
            };
            let fields = run(
                Some(&self.path),
                &["show", "-s", "--format=%an%x00%ae%x00%aI%x00%B", commit],
                &[],
                &[],
            )
            .await?;
            let fields = String::from_utf8_lossy(&fields).into_owned();
            let mut parts = fields.splitn(4, '\0');
            let (name, email, date, message) = (
                parts.next().unwrap_or_default(),
                parts.next().unwrap_or_default(),
                parts.next().unwrap_or_default(),
                parts.next().unwrap_or_default(),
            );
            let env = [
                ("GIT_AUTHOR_NAME", name),
                ("GIT_AUTHOR_EMAIL", email),
                ("GIT_AUTHOR_DATE", date),
                ("GIT_COMMITTER_NAME", committer.name.as_str()),
                ("GIT_COMMITTER_EMAIL", committer.email.as_str()),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string()));
            let message = message.trim_end_matches('\n').to_string() + "\n";
            let out = run(
                Some(&self.path),
                &["commit-tree", &tree, "-p", &head],
                message.as_bytes(),
                &env,
            )
            .await?;
            head = text(&out);
        }
        Ok(Ok(head))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::refs::Revision;
    use crate::write::{Change, NewCommit};

    fn ada() -> Signature {
        Signature {
            name: "Ada".into(),
            email: "ada@example.com".into(),
        }
    }

    async fn commit(repo: &Repository, parent: Option<&str>, path: &str, text: &str) -> String {
        let ada = ada();
        repo.write_commit(&NewCommit {
            parent,
            changes: &[Change::Write {
                path: path.into(),
                content: text.as_bytes().to_vec(),
                mode: "100644",
            }],
            message: &format!("write {path}\n"),
            author: &ada,
            committer: &ada,
        })
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn merges_replays_and_reports_conflicts_without_a_work_tree() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::project(dir.path(), 1, 1);
        repo.create("main").await.unwrap();
        let root = commit(&repo, None, "a.txt", "one\n").await;
        let ours = commit(&repo, Some(&root), "b.txt", "ours\n").await;
        let theirs = commit(&repo, Some(&root), "c.txt", "theirs\n").await;

        let MergeTree::Clean { tree } = repo.merge_tree(&ours, &theirs, None).await.unwrap() else {
            panic!("a clean merge");
        };
        let ada = ada();
        let merged = repo
            .commit_tree(&TreeCommit {
                tree: &tree,
                parents: &[&ours, &theirs],
                message: "Merge\n",
                author: &ada,
                committer: &ada,
            })
            .await
            .unwrap();
        assert!(repo.is_ancestor(&ours, &merged).await.unwrap());
        assert!(repo.is_ancestor(&theirs, &merged).await.unwrap());
        assert!(!repo.is_ancestor(&ours, &theirs).await.unwrap());
        let files = repo
            .commit(&Revision::parse(&merged).unwrap())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(files.parent_ids.len(), 2);

        let replayed = repo
            .replay(
                &ours,
                &repo.commits_to_replay(&root, &theirs).await.unwrap(),
                &ada,
            )
            .await
            .unwrap()
            .unwrap();
        assert!(repo.is_ancestor(&ours, &replayed).await.unwrap());
        assert_eq!(repo.tree_of(&replayed).await.unwrap(), tree);

        let clash = commit(&repo, Some(&root), "a.txt", "two\n").await;
        let other = commit(&repo, Some(&root), "a.txt", "three\n").await;
        assert_eq!(
            repo.merge_tree(&clash, &other, None).await.unwrap(),
            MergeTree::Conflict {
                paths: vec!["a.txt".into()]
            }
        );
        let picked = repo.replay(&clash, &[other], &ada).await.unwrap();
        assert_eq!(picked, Err(vec!["a.txt".to_string()]));
    }
}
