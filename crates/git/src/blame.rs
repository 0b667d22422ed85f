//! `git blame` as GitLab shows it: each line's commit and text. The commits are read in one
//! batch after the blame, so a blame costs two git processes however many commits it names
//! (one `git show` a commit took seconds on a long history).

use std::collections::HashMap;
use std::ops::RangeInclusive;
use std::time::{Duration, Instant};

use super::commits::{Commit, FORMAT, parse};
use super::process::git_bounded;
use super::{Error, Repository, Result};

/// A blamed line: which of the blame's commits last changed it, and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlameLine {
    /// An index into [`Blame::commits`].
    pub commit: usize,
    pub text: String,
}

#[derive(Debug, Clone)]
pub struct Blame {
    pub lines: Vec<BlameLine>,
    /// The commits the lines name, in the order they first appear.
    pub commits: Vec<Commit>,
}

impl Repository {
    /// `git blame` of `path` at `commit` (of `lines` only when given: 1-based, inclusive),
    /// with the commits it names; everything within `timeout`.
    pub async fn blame(
        &self,
        commit: &str,
        path: &str,
        lines: Option<RangeInclusive<usize>>,
        timeout: Duration,
    ) -> Result<Blame> {
        let deadline = Instant::now() + timeout;
        let range = lines.map(|lines| format!("{},{}", lines.start(), lines.end()));
        let mut args = vec!["blame", "--porcelain"];
        if let Some(range) = &range {
            args.extend(["-L", range]);
        }
        // `commit` is a resolved object id, never an option (blame reads a path after
        // `--end-of-options` as a second revision, so it cannot take one).
        args.extend([commit, "--", path]);
        let out = git_bounded(&self.path, &args, Vec::new(), &[], timeout).await?;
        if !out.success {
            return Err(failed("blame", "exited with status 1".into()));
        }
        let (ids, lines) = parse_porcelain(&out.stdout);
        let left = deadline.saturating_duration_since(Instant::now());
        let commits = self.commits_by_id(&ids, left).await?;
        Ok(Blame { lines, commits })
    }

    /// The commits `ids` name, in that order, read by one `git log --no-walk`.
    async fn commits_by_id(&self, ids: &[String], timeout: Duration) -> Result<Vec<Commit>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut input = ids.join("\n");
        input.push('\n');
        let args = ["log", "--no-walk=unsorted", "--stdin", FORMAT];
        let out = git_bounded(&self.path, &args, input.into_bytes(), &[], timeout).await?;
        let mut read: HashMap<String, Commit> = parse(&out.stdout)
            .into_iter()
            .map(|commit| (commit.id.clone(), commit))
            .collect();
        ids.iter()
            .map(|id| {
                read.remove(id)
                    .ok_or_else(|| failed("log", format!("commit {id} was not read")))
            })
            .collect()
    }
}

fn failed(command: &str, stderr: String) -> Error {
    Error::Failed {
        command: command.into(),
        stderr,
    }
}

/// The lines git blames in `content`: one a line feed, and a last line without one.
pub fn line_count(content: &[u8]) -> usize {
    let feeds = memchr::memchr_iter(b'\n', content).count();
    feeds + usize::from(content.last().is_some_and(|b| *b != b'\n'))
}

/// `blame --porcelain` output: the commit ids in order of first appearance, and each line
/// with the index of its commit. A line's text is everything after its tab (a carriage
/// return stays, as GitLab splits the output on line feeds only).
fn parse_porcelain(out: &[u8]) -> (Vec<String>, Vec<BlameLine>) {
    let mut ids = Vec::new();
    let mut index: HashMap<&[u8], usize> = HashMap::new();
    let mut lines = Vec::new();
    let mut current = None;
    for line in out.split(|b| *b == b'\n') {
        if let Some(text) = line.strip_prefix(b"\t") {
            if let Some(commit) = current {
                lines.push(BlameLine {
                    commit,
                    text: String::from_utf8_lossy(text).into_owned(),
                });
            }
        } else if let Some(id) = header_id(line) {
            let commit = *index.entry(id).or_insert_with(|| {
                ids.push(String::from_utf8_lossy(id).into_owned());
                ids.len() - 1
            });
            current = Some(commit);
        }
    }
    (ids, lines)
}

/// The commit id that opens a line's header (`<id> <original line> <final line>[ <count>]`);
/// other header lines open with a word (`author`, `summary`, `previous`...).
fn header_id(line: &[u8]) -> Option<&[u8]> {
    let id = line.split(|b| *b == b' ').next()?;
    (matches!(id.len(), 40 | 64) && id.iter().all(u8::is_ascii_hexdigit)).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn porcelain_lines_name_their_commits_once() {
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        let out = format!(
            "{a} 1 1 2\nauthor A\nsummary first\nfilename f\n\tone\n{a} 2 2\n\ttwo\r\n{b} 3 3 1\nauthor B\nprevious {a} f\nfilename f\n\tthree\n{a} 4 4 1\n\t\n"
        );
        let (ids, lines) = parse_porcelain(out.as_bytes());
        assert_eq!(ids, [a, b]);
        let got: Vec<(usize, &str)> = lines.iter().map(|l| (l.commit, l.text.as_str())).collect();
        assert_eq!(got, [(0, "one"), (0, "two\r"), (1, "three"), (0, "")]);
    }

    #[test]
    fn lines_are_counted_as_git_blames_them() {
        assert_eq!(line_count(b""), 0);
        assert_eq!(line_count(b"a"), 1);
        assert_eq!(line_count(b"a\n"), 1);
        assert_eq!(line_count(b"a\nb"), 2);
        assert_eq!(line_count(b"\n\n"), 2);
    }

    /// A commit of `f.txt` holding `content` (no ref: blame takes the id).
    async fn commit(repo: &Repository, parent: Option<&str>, content: &str, n: usize) -> String {
        use super::super::process::{Identity, git_with};
        use super::super::text;
        let dir = Some(repo.path());
        let blob = git_with(
            dir,
            &["hash-object", "-w", "--stdin"],
            content.as_bytes(),
            None,
        );
        let blob = text(&blob.await.unwrap());
        let entry = format!("100644 blob {blob}\tf.txt\n");
        let tree = text(
            &git_with(dir, &["mktree"], entry.as_bytes(), None)
                .await
                .unwrap(),
        );
        let mut args = vec!["commit-tree", &tree];
        args.extend(parent.map(|parent| ["-p", parent]).into_iter().flatten());
        let ada = Identity {
            name: "Ada",
            email: "ada@example.com",
        };
        let message = format!("add {n}\n\nbody\n");
        text(
            &git_with(dir, &args, message.as_bytes(), Some(&ada))
                .await
                .unwrap(),
        )
    }

    #[tokio::test]
    async fn one_blame_names_every_commit_with_its_details() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::project(dir.path(), 1, 1);
        repo.create("main").await.unwrap();
        let mut ids: Vec<String> = Vec::new();
        let mut content = String::new();
        for n in 0..30 {
            content.push_str(&format!("line {n}\n"));
            let id = commit(&repo, ids.last().map(String::as_str), &content, n).await;
            ids.push(id);
        }
        let head = ids.last().unwrap();
        let timeout = Duration::from_secs(30);
        let blame = repo.blame(head, "f.txt", None, timeout).await.unwrap();
        assert_eq!(blame.lines.len(), 30);
        for (n, line) in blame.lines.iter().enumerate() {
            let commit = &blame.commits[line.commit];
            assert_eq!(commit.id, ids[n]);
            assert_eq!(line.text, format!("line {n}"));
            assert_eq!(commit.title(), format!("add {n}"));
            assert_eq!(commit.author_email, "ada@example.com");
        }
        assert_eq!(blame.commits[1].parent_ids, [ids[0].clone()]);
        let part = repo
            .blame(head, "f.txt", Some(5..=6), timeout)
            .await
            .unwrap();
        let texts: Vec<&str> = part.lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts, ["line 4", "line 5"]);
        assert_eq!(part.commits.len(), 2);
    }
}
