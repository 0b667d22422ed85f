//! Reading commits: one commit, a page of history (`git log` with GitLab's filters), a
//! commit's line counts, and the refs that contain it. Commits are parsed from one
//! `--format` whose fields are separated by ASCII unit separators and whose records end with
//! a record separator, so messages with any text survive.

use super::process::{answer, git};
use super::refs::Revision;
use super::{Repository, Result, text};

/// `%H %P %an %ae %aI %cn %ce %cI %B`, in that order.
pub(super) const FORMAT: &str =
    "--format=%H%x1f%P%x1f%an%x1f%ae%x1f%aI%x1f%cn%x1f%ce%x1f%cI%x1f%B%x1e";

/// A commit as GitLab shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    pub id: String,
    pub parent_ids: Vec<String>,
    pub author_name: String,
    pub author_email: String,
    /// Strict ISO 8601 with the author's offset, as git records it.
    pub authored_date: String,
    pub committer_name: String,
    pub committer_email: String,
    pub committed_date: String,
    /// The full message.
    pub message: String,
}

impl Commit {
    /// The message's first line.
    pub fn title(&self) -> &str {
        self.message.lines().next().unwrap_or_default()
    }
}

/// Lines added and removed by a commit (against its first parent).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub additions: i64,
    pub deletions: i64,
}

/// Which history `log` reads.
#[derive(Debug, Default)]
pub struct LogQuery<'a> {
    /// The revision to start from; `None` with `all` reads every ref.
    pub revision: Option<&'a Revision>,
    pub all: bool,
    /// Only commits touching this path.
    pub path: Option<&'a str>,
    /// `--since`/`--until` as ISO 8601.
    pub since: Option<String>,
    pub until: Option<String>,
    /// Commits in `exclude`'s history are left out (`exclude..revision`).
    pub exclude: Option<&'a str>,
    pub first_parent: bool,
    pub reverse: bool,
    pub skip: i64,
    pub limit: i64,
}

impl Repository {
    /// The commit `revision` names, if it names one.
    pub async fn commit(&self, revision: &Revision) -> Result<Option<Commit>> {
        let Some(id) = self.resolve_commit(revision).await? else {
            return Ok(None);
        };
        let out = git(Some(&self.path), &["show", "-s", FORMAT, &id]).await?;
        Ok(parse(&out).into_iter().next())
    }

    /// The authors of `commit`'s history, newest commit first: `(name, email)` of each commit.
    pub async fn authors(&self, commit: &str) -> Result<Vec<(String, String)>> {
        let out = git(
            Some(&self.path),
            &[
                "log",
                "--format=%aN%x00%aE",
                "--end-of-options",
                commit,
                "--",
            ],
        )
        .await?;
        Ok(text(&out)
            .lines()
            .filter_map(|line| line.split_once('\0'))
            .map(|(name, email)| (name.to_string(), email.to_string()))
            .collect())
    }

    /// A page of history.
    pub async fn log(&self, query: &LogQuery<'_>) -> Result<Vec<Commit>> {
        if query.revision.is_none() && !query.all {
            return Ok(Vec::new());
        }
        let skip = format!("--skip={}", query.skip.max(0));
        let limit = format!("--max-count={}", query.limit.max(0));
        let mut args: Vec<String> = vec!["log".into(), FORMAT.into(), skip, limit];
        if let Some(since) = &query.since {
            args.push(format!("--since={since}"));
        }
        if let Some(until) = &query.until {
            args.push(format!("--until={until}"));
        }
        if query.first_parent {
            args.push("--first-parent".into());
        }
        if query.reverse {
            args.push("--reverse".into());
        }
        if query.all {
            args.push("--all".into());
        }
        args.push("--end-of-options".into());
        if let Some(revision) = query.revision {
            args.push(revision.as_str().into());
        }
        if let Some(exclude) = query.exclude {
            args.push(format!("^{exclude}"));
        }
        args.push("--".into());
        if let Some(path) = query.path {
            args.push(path.into());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = git(Some(&self.path), &args).await?;
        Ok(parse(&out))
    }

    /// The last commit at or before `commit` that changed `path`.
    pub async fn last_commit_for(&self, commit: &str, path: &str) -> Result<Option<String>> {
        let out = git(
            Some(&self.path),
            &["log", "-1", "--format=%H", commit, "--", path],
        )
        .await?;
        Ok(Some(text(&out)).filter(|id| !id.is_empty()))
    }

    /// Lines added and removed by `commit` against its first parent (all of it for a root).
    pub async fn stats(&self, commit: &str) -> Result<Stats> {
        let out = git(
            Some(&self.path),
            &[
                "diff-tree",
                "--root",
                "-r",
                "--numstat",
                "--no-commit-id",
                "-m",
                "--first-parent",
                commit,
            ],
        )
        .await?;
        Ok(numstat(&String::from_utf8_lossy(&out)))
    }

    /// Lines added and removed from `from` to `to`.
    pub async fn stats_between(&self, from: &str, to: &str) -> Result<Stats> {
        let out = git(Some(&self.path), &["diff", "--numstat", from, to]).await?;
        Ok(numstat(&String::from_utf8_lossy(&out)))
    }

    /// The merge base of commits (`git merge-base`: of the first and a merge of the others),
    /// if they share history.
    pub async fn merge_base(&self, commits: &[&str]) -> Result<Option<String>> {
        let mut args = vec!["merge-base"];
        args.extend_from_slice(commits);
        let out = answer(Some(&self.path), &args).await?;
        Ok(out.map(|o| text(&o)).filter(|id| !id.is_empty()))
    }

    /// Branch and tag names whose history contains `commit`: `("branch", name)` and
    /// `("tag", name)`, branches first.
    pub async fn refs_containing(&self, commit: &str) -> Result<Vec<(&'static str, String)>> {
        let contains = format!("--contains={commit}");
        let out = git(
            Some(&self.path),
            &[
                "for-each-ref",
                &contains,
                "--format=%(refname)",
                "refs/heads",
                "refs/tags",
            ],
        )
        .await?;
        let mut refs: Vec<(&'static str, String)> = text(&out)
            .lines()
            .filter_map(|name| {
                if let Some(branch) = name.strip_prefix("refs/heads/") {
                    Some(("branch", branch.to_string()))
                } else {
                    name.strip_prefix("refs/tags/")
                        .map(|tag| ("tag", tag.to_string()))
                }
            })
            .collect();
        refs.sort_by_key(|(kind, _)| *kind != "branch");
        Ok(refs)
    }
}

/// Commits from `git log` or `git show` with [`FORMAT`].
pub(super) fn parse(out: &[u8]) -> Vec<Commit> {
    String::from_utf8_lossy(out)
        .split('\x1e')
        .filter_map(|record| {
            let record = record.trim_start_matches('\n');
            let fields: Vec<&str> = record.splitn(9, '\x1f').collect();
            let [id, parents, an, ae, ad, cn, ce, cd, message] = fields.as_slice() else {
                return None;
            };
            Some(Commit {
                id: id.to_string(),
                parent_ids: parents.split_whitespace().map(str::to_string).collect(),
                author_name: an.to_string(),
                author_email: ae.to_string(),
                authored_date: ad.to_string(),
                committer_name: cn.to_string(),
                committer_email: ce.to_string(),
                committed_date: cd.to_string(),
                message: message.to_string(),
            })
        })
        .collect()
}

/// Sums `--numstat` lines (binary files count nothing, as in GitLab).
fn numstat(out: &str) -> Stats {
    out.lines().fold(Stats::default(), |mut stats, line| {
        let mut parts = line.split('\t');
        let added = parts.next().and_then(|n| n.parse::<i64>().ok());
        let removed = parts.next().and_then(|n| n.parse::<i64>().ok());
        stats.additions += added.unwrap_or(0);
        stats.deletions += removed.unwrap_or(0);
        stats
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_records_with_any_message() {
        let out = b"abc\x1fp1 p2\x1fAda\x1fa@x\x1f2026-01-01T00:00:00+00:00\x1fBob\x1fb@x\x1f2026-01-02T00:00:00+01:00\x1fTitle\n\nBody | with: stuff\n\x1e\ndef\x1f\x1fA\x1fa\x1fd\x1fC\x1fc\x1fd\x1fRoot\n\x1e\n";
        let commits = parse(out);
        assert_eq!(commits.len(), 2);
        assert_eq!(commits[0].parent_ids, ["p1", "p2"]);
        assert_eq!(commits[0].title(), "Title");
        assert_eq!(commits[0].message, "Title\n\nBody | with: stuff\n");
        assert!(commits[1].parent_ids.is_empty());
    }

    #[test]
    fn numstat_skips_binary_files() {
        let stats = numstat("3\t1\ta.txt\n-\t-\timage.png\n10\t0\tb.txt\n");
        assert_eq!(
            stats,
            Stats {
                additions: 13,
                deletions: 1
            }
        );
    }
}
