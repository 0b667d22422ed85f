//! Reading what a push brings, before it is accepted: the new commits of a reference update
//! (`git rev-list`, streamed), their headers and signatures (one `git cat-file
//! --batch-command`), the files each changes and their sizes (`tree_diff`, comparing trees
//! read through `cat-file`s of its own), and blob contents on demand with a byte cap.
//!
//! Every command runs with the push's quarantine environment (`GIT_OBJECT_DIRECTORY`,
//! `GIT_ALTERNATE_OBJECT_DIRECTORIES`, `GIT_QUARANTINE_PATH`), so it sees the pushed objects,
//! which are not in the repository yet. Commits are read [`BATCH_COMMITS`] at a time while
//! `rev-list` keeps streaming: a push of 100,000 commits never sits in memory whole.
//!
//! The readers live as long as the scan and are fed batch after batch: starting them for
//! every batch cost more than their work (50 batches of a 10,000-commit push spent about
//! 0.3 s of 0.6 s starting processes; `tests/bench/push-rules`). The next batch's commits
//! are read while the current batch's trees are compared, and the caller checks a batch
//! while the next is read: three stages at work at once.

use std::collections::VecDeque;
use std::io::Read;
use std::path::PathBuf;
use std::process::Stdio;

use rustc_hash::{FxHashMap, FxHashSet};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::ChildStdout;

use super::batch_process::{BatchProcess, broken_pipe};
use super::error::{Error, Result};
use super::process::command;
use super::tree_diff::{Oid, TreeDiffer};

/// Commits read (and handed to a plugin) at a time. Each plugin call costs about 0.65 ms
/// before its first commit (a fresh instance, its configuration, its patterns compiled) and
/// a few microseconds a commit after (`cargo bench -p trellis --bench push_rules`): 500
/// keeps a 10,000-commit push to 20 calls, each a few milliseconds.
pub const BATCH_COMMITS: usize = 500;
/// Changed files listed per batch before the batch is handed over early (a batch always
/// holds at least one whole commit, however many files it changes).
pub const BATCH_FILES: usize = 5_000;
/// The most a single blob read returns.
pub const MAX_BLOB_READ: usize = 1024 * 1024;

/// An object id of all zeros: the "old" side of a creation, the "new" side of a deletion.
pub fn is_zero(sha: &str) -> bool {
    !sha.is_empty() && sha.bytes().all(|b| b == b'0')
}

/// A full object id (SHA-1 or SHA-256), lowercase hex.
pub fn is_object_id(id: &str) -> bool {
    matches!(id.len(), 40 | 64) && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Where the push's objects are: the repository and the quarantine environment.
#[derive(Debug, Clone)]
pub struct PushObjects {
    pub repository: PathBuf,
    pub env: Vec<(String, String)>,
}

/// One commit as read from the object store.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScannedCommit {
    pub sha: String,
    pub message: String,
    pub author_name: String,
    pub author_email: String,
    pub committer_name: String,
    pub committer_email: String,
    pub parents: usize,
    /// The armored `gpgsig` header and the object without it (what was signed).
    pub signature: Option<Signature>,
    pub files: Vec<ChangedFile>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    pub armored: String,
    pub signed_data: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    pub path: String,
    pub size: u64,
    pub added: bool,
    pub deleted: bool,
    /// Empty when deleted.
    pub blob_id: String,
}

impl PushObjects {
    fn git(&self) -> tokio::process::Command {
        let mut git = command(Some(&self.repository));
        git.envs(self.env.iter().map(|(k, v)| (k, v)))
            .stderr(Stdio::null());
        git
    }

    /// The commits `new` brings that no existing reference (nor any of `exclude`, the new tips
    /// of the push's earlier updates) reaches, read batch by batch while `rev-list` streams.
    pub fn new_commits(&self, new: &str, exclude: &[String]) -> Result<NewCommits> {
        let mut rev_list = self.git();
        rev_list.arg("rev-list").arg(new);
        rev_list.arg("--not").args(exclude).arg("--all");
        rev_list.stdin(Stdio::null());
        let mut child = rev_list
            .spawn()
            .map_err(Error::io("running git rev-list"))?;
        let stdout = child.stdout.take().ok_or_else(broken_pipe)?;
        Ok(NewCommits {
            rev_list: RevList {
                child,
                lines: BufReader::new(stdout).lines(),
                done: false,
            },
            objects: BatchProcess::start(self.git())?,
            trees: (0..tree_differs())
                .map(|_| TreeDiffer::start(self.git()))
                .collect::<Result<_>>()?,
            read_ahead: None,
            ready: VecDeque::new(),
        })
    }

    /// At most `max` (and [`MAX_BLOB_READ`]) bytes of blob `id`; blocking (it runs on a
    /// plugin call's thread). Only blobs: `cat-file blob` refuses other objects.
    pub fn read_blob(&self, id: &str, max: usize) -> std::result::Result<Vec<u8>, String> {
        if !is_object_id(id) {
            return Err(format!("{id:?} is not an object id"));
        }
        let max = max.min(MAX_BLOB_READ);
        let mut git = super::process::isolated("git");
        git.arg("--git-dir")
            .arg(&self.repository)
            .args(["cat-file", "blob", id])
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = git.spawn().map_err(|e| format!("running git: {e}"))?;
        let mut content = Vec::with_capacity(max.min(64 * 1024));
        let read = child
            .stdout
            .take()
            .ok_or("git has no output")?
            .take(max as u64)
            .read_to_end(&mut content);
        // Whatever is left unread is not wanted: stop git rather than drain it.
        let _ = child.kill();
        let status = child.wait();
        read.map_err(|e| format!("reading blob {id}: {e}"))?;
        if content.is_empty() && !status.is_ok_and(|s| s.success()) {
            return Err(format!("blob {id} is not in this push"));
        }
        Ok(content)
    }
}

/// A push's new commits, in batches of at most [`BATCH_COMMITS`] commits and (unless one
/// commit alone has more) [`BATCH_FILES`] changed files. The scan's git processes live as
/// long as it does (killed when dropped).
pub struct NewCommits {
    rev_list: RevList,
    /// `cat-file`: commit objects, and the trees of parents outside their batch.
    objects: BatchProcess,
    /// Tree comparers, each working through its share of a batch's commits.
    trees: Vec<TreeDiffer>,
    /// The next batch, its commits read, its files not yet.
    read_ahead: Option<Headers>,
    ready: VecDeque<Vec<ScannedCommit>>,
}

impl NewCommits {
    /// The next batch; `None` once every new commit was handed out.
    pub async fn next_batch(&mut self) -> Result<Option<Vec<ScannedCommit>>> {
        while self.ready.is_empty() {
            let current = match self.read_ahead.take() {
                Some(headers) => headers,
                None => match read_next(&mut self.rev_list, &mut self.objects).await? {
                    Some(headers) => headers,
                    None => break,
                },
            };
            // The next batch's commits are read while this one's trees are compared.
            let (files, next) = tokio::try_join!(
                changed_files(&mut self.trees, &current.pairs),
                read_next(&mut self.rev_list, &mut self.objects)
            )?;
            self.read_ahead = next;
            let Headers {
                mut commits,
                listed,
                ..
            } = current;
            for (index, files) in listed.into_iter().zip(files) {
                commits[index].files = files;
            }
            self.ready.extend(split_by_files(commits));
        }
        Ok(self.ready.pop_front())
    }
}

/// The files of each of `pairs`, split between `differs`, each on a task of its own: parsing
/// `cat-file`'s answers and walking trees is the server's share of the work, and it too
/// runs on both cores that way.
async fn changed_files(
    differs: &mut Vec<TreeDiffer>,
    pairs: &[(Option<Oid>, Oid)],
) -> Result<Vec<Vec<ChangedFile>>> {
    let share = pairs.len().div_ceil(differs.len().max(1)).max(1);
    let mut shares = pairs.chunks(share);
    let tasks: Vec<_> = differs
        .drain(..)
        .map(|mut differ| {
            let pairs = shares.next().map(<[_]>::to_vec).unwrap_or_default();
            tokio::spawn(async move {
                let files = differ.changed_files(&pairs).await;
                (differ, files)
            })
        })
        .collect();
    let mut files = Vec::with_capacity(pairs.len());
    let mut failed = None;
    for task in tasks {
        match task.await {
            Ok((differ, listed)) => {
                differs.push(differ);
                match listed {
                    Ok(listed) => files.extend(listed),
                    Err(error) => failed = Some(error),
                }
            }
            Err(error) => failed = Some(Error::io("comparing trees")(std::io::Error::other(error))),
        }
    }
    match failed {
        Some(error) => Err(error),
        None => Ok(files),
    }
}

/// `git rev-list`'s stream of new commit ids.
struct RevList {
    child: tokio::process::Child,
    lines: Lines<BufReader<ChildStdout>>,
    done: bool,
}

impl RevList {
    /// The next [`BATCH_COMMITS`] ids at most; none once `rev-list` has ended well.
    async fn next_shas(&mut self) -> Result<Vec<String>> {
        let mut shas = Vec::with_capacity(BATCH_COMMITS);
        while shas.len() < BATCH_COMMITS && !self.done {
            let line = self
                .lines
                .next_line()
                .await
                .map_err(Error::io("reading git rev-list"))?;
            match line {
                Some(sha) if is_object_id(sha.trim()) => shas.push(sha.trim().to_string()),
                Some(_) => {}
                None => {
                    self.done = true;
                    let status = self
                        .child
                        .wait()
                        .await
                        .map_err(Error::io("waiting for git rev-list"))?;
                    if !status.success() {
                        return Err(Error::Failed {
                            command: "rev-list".into(),
                            stderr: format!("exited with {status}"),
                        });
                    }
                }
            }
        }
        Ok(shas)
    }
}

/// A batch's commits as read, and the trees to compare for their files: `pairs[i]` (parent
/// tree, tree) belongs to `commits[listed[i]]` (merge commits list no files).
struct Headers {
    commits: Vec<ScannedCommit>,
    pairs: Vec<(Option<Oid>, Oid)>,
    listed: Vec<usize>,
}

/// The next batch's headers, message and signature; `None` once every commit was read.
async fn read_next(rev_list: &mut RevList, objects: &mut BatchProcess) -> Result<Option<Headers>> {
    let shas = rev_list.next_shas().await?;
    if shas.is_empty() {
        return Ok(None);
    }
    let answers = objects.contents(&shas).await?;
    let (commits, links): (Vec<ScannedCommit>, Vec<Links>) = answers
        .objects()
        .filter(|object| object.kind == "commit")
        .map(|object| parse_commit(object.id.to_string(), object.body))
        .unzip();
    // Files are listed against the first parent, and not at all for merge commits.
    let trees: FxHashMap<Oid, Oid> = commits
        .iter()
        .zip(&links)
        .filter_map(|(commit, links)| Some((Oid::from_hex(&commit.sha)?, links.tree?)))
        .collect();
    let outside: Vec<Oid> = links
        .iter()
        .zip(&commits)
        .filter(|(_, commit)| commit.parents <= 1)
        .filter_map(|(links, _)| links.first_parent.filter(|p| !trees.contains_key(p)))
        .collect::<FxHashSet<Oid>>()
        .into_iter()
        .collect();
    let asked: Vec<String> = outside
        .iter()
        .map(|p| format!("{}^{{tree}}", p.hex()))
        .collect();
    let info = objects.info(&asked).await?;
    let outside_trees: FxHashMap<Oid, Oid> = outside
        .into_iter()
        .zip(info.objects())
        .filter(|(_, tree)| !tree.missing)
        .filter_map(|(parent, tree)| Some((parent, Oid::from_hex(tree.id)?)))
        .collect();
    let mut pairs = Vec::new();
    let mut listed = Vec::new();
    for (index, links) in links.iter().enumerate() {
        if commits[index].parents > 1 {
            continue;
        }
        let tree = links.tree.ok_or_else(|| malformed(&commits[index].sha))?;
        let parent_tree = match links.first_parent {
            None => None,
            Some(parent) => Some(
                *trees
                    .get(&parent)
                    .or_else(|| outside_trees.get(&parent))
                    .ok_or_else(|| malformed(&commits[index].sha))?,
            ),
        };
        pairs.push((parent_tree, tree));
        listed.push(index);
    }
    Ok(Some(Headers {
        commits,
        pairs,
        listed,
    }))
}

/// Tree comparers a scan runs side by side (two on machines with two cores or more), each
/// parsing its share of a batch's trees on a task of its own. One or two made no difference
/// the benchmark could tell apart from its own spread (`docs/performance.md`); two keep the
/// server's share of a large push off a single core.
fn tree_differs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(2))
}

fn malformed(sha: &str) -> Error {
    Error::Failed {
        command: "cat-file".into(),
        stderr: format!("commit {sha} has no readable tree or parent"),
    }
}

/// Splits a batch of commits so that no part lists more than [`BATCH_FILES`] changed files
/// (a commit is never split).
fn split_by_files(commits: Vec<ScannedCommit>) -> Vec<Vec<ScannedCommit>> {
    let mut parts = Vec::new();
    let mut part: Vec<ScannedCommit> = Vec::new();
    let mut files = 0;
    for commit in commits {
        if !part.is_empty() && files + commit.files.len() > BATCH_FILES {
            parts.push(std::mem::take(&mut part));
            files = 0;
        }
        files += commit.files.len();
        part.push(commit);
    }
    if !part.is_empty() {
        parts.push(part);
    }
    parts
}

/// A commit object: headers up to the first blank line, then the message. The `gpgsig`
/// header (continued on lines starting with a space) is the signature; the object without
/// it is what was signed.
fn parse_commit(sha: String, body: &[u8]) -> (ScannedCommit, Links) {
    let split = memchr::memmem::find(body, b"\n\n").map_or(body.len(), |i| i + 1);
    let (headers, message) = body.split_at(split);
    let message = message.strip_prefix(b"\n").unwrap_or(message);
    let mut commit = ScannedCommit {
        sha,
        message: String::from_utf8_lossy(message).into_owned(),
        ..ScannedCommit::default()
    };
    let mut links = Links::default();
    // What was signed is only kept for a signed commit.
    let is_signed = headers
        .split(|b| *b == b'\n')
        .any(|line| line.starts_with(b"gpgsig "));
    let mut signed = Vec::with_capacity(if is_signed { body.len() } else { 0 });
    let mut armored = String::new();
    let mut in_signature = false;
    // Lines are taken apart as bytes: only names and the signature become text.
    for line in headers.split_inclusive(|b| *b == b'\n') {
        if in_signature && let Some(continued) = line.strip_prefix(b" ") {
            armored.push_str(&String::from_utf8_lossy(continued));
            continue;
        }
        in_signature = false;
        if let Some(first) = line.strip_prefix(b"gpgsig ") {
            in_signature = true;
            armored.push_str(&String::from_utf8_lossy(first));
            continue;
        }
        if is_signed {
            signed.extend_from_slice(line);
        }
        let line = line.trim_ascii_end();
        if let Some(person) = line.strip_prefix(b"author ") {
            (commit.author_name, commit.author_email) = person_of(&String::from_utf8_lossy(person));
        } else if let Some(person) = line.strip_prefix(b"committer ") {
            (commit.committer_name, commit.committer_email) =
                person_of(&String::from_utf8_lossy(person));
        } else if let Some(parent) = line.strip_prefix(b"parent ") {
            if commit.parents == 0 {
                links.first_parent = Oid::from_hex(parent);
            }
            commit.parents += 1;
        } else if let Some(tree) = line.strip_prefix(b"tree ") {
            links.tree = Oid::from_hex(tree);
        }
    }
    if !armored.is_empty() {
        signed.extend_from_slice(&body[split..]);
        commit.signature = Some(Signature {
            armored,
            signed_data: signed,
        });
    }
    (commit, links)
}

/// What a commit's headers say of its place in history: its tree and its first parent.
#[derive(Debug, Default)]
struct Links {
    tree: Option<Oid>,
    first_parent: Option<Oid>,
}

/// `Name <email> 1700000000 +0000` → (name, email).
fn person_of(text: &str) -> (String, String) {
    match (text.find('<'), text.rfind('>')) {
        (Some(start), Some(end)) if start < end => (
            text[..start].trim().to_string(),
            text[start + 1..end].to_string(),
        ),
        _ => (text.trim().to_string(), String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_commit_splits_into_signature_and_signed_data() {
        let body = b"tree abc\nparent def\nauthor A U <a@x.org> 1 +0000\ncommitter C <c@x.org> 2 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n iQ==\n -----END PGP SIGNATURE-----\n\nSubject\n\nBody\n";
        let (commit, links) = parse_commit("1".repeat(40), body);
        assert_eq!(links.tree, None, "not an object id");
        assert_eq!(commit.author_name, "A U");
        assert_eq!(commit.author_email, "a@x.org");
        assert_eq!(commit.committer_email, "c@x.org");
        assert_eq!(commit.parents, 1);
        assert_eq!(commit.message, "Subject\n\nBody\n");
        let signature = commit.signature.unwrap();
        assert_eq!(
            signature.armored,
            "-----BEGIN PGP SIGNATURE-----\n\niQ==\n-----END PGP SIGNATURE-----\n"
        );
        assert_eq!(
            String::from_utf8(signature.signed_data).unwrap(),
            "tree abc\nparent def\nauthor A U <a@x.org> 1 +0000\ncommitter C <c@x.org> 2 +0000\n\nSubject\n\nBody\n"
        );
    }

    #[test]
    fn batches_never_split_a_commit() {
        let commit = |files: usize| ScannedCommit {
            files: vec![
                ChangedFile {
                    path: "f".into(),
                    size: 0,
                    added: true,
                    deleted: false,
                    blob_id: String::new(),
                };
                files
            ],
            ..ScannedCommit::default()
        };
        let parts = split_by_files(vec![commit(3), commit(BATCH_FILES), commit(1), commit(2)]);
        let sizes: Vec<usize> = parts.iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![1, 1, 2]);
    }
}
