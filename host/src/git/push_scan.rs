//! Reading what a push brings, before it is accepted: the new commits of a reference update
//! (`git rev-list`, streamed), their headers and signatures and the sizes of the blobs they
//! add (one `git cat-file --batch-command`), the files each changes (one `git diff-tree
//! --stdin`), and blob contents on demand with a byte cap.
//!
//! Every command runs with the push's quarantine environment (`GIT_OBJECT_DIRECTORY`,
//! `GIT_ALTERNATE_OBJECT_DIRECTORIES`, `GIT_QUARANTINE_PATH`), so it sees the pushed objects,
//! which are not in the repository yet. Commits are read [`BATCH_COMMITS`] at a time while
//! `rev-list` keeps streaming: a push of 100,000 commits never sits in memory whole.
//!
//! The two readers live as long as the scan and are fed batch after batch: starting them for
//! every batch cost more than their work (50 batches of a 10,000-commit push spent about
//! 0.3 s of 0.6 s starting processes; `tests/bench/push-rules`). `cat-file` and two
//! `diff-tree`s work on a batch at the same time.

use std::collections::{HashMap, VecDeque};
use std::io::Read;
use std::path::PathBuf;
use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::ChildStdout;

use super::error::{Error, Result};
use super::process::command;

/// Commits read (and handed to a plugin) at a time.
pub const BATCH_COMMITS: usize = 200;
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
            readers: Readers {
                objects: Reader::start(self.git(), &["cat-file", "--batch-command", "--buffer"])?,
                diffs: (0..diff_readers())
                    .map(|_| {
                        Reader::start(
                            self.git(),
                            &["diff-tree", "--stdin", "-r", "-z", "--root", "--no-renames"],
                        )
                    })
                    .collect::<Result<_>>()?,
                end_of_batch: format!("end-{}\n", crate::auth::secrets::generate("", 32)),
            },
            child,
            lines: BufReader::new(stdout).lines(),
            ready: VecDeque::new(),
            done: false,
        })
    }

    /// At most `max` (and [`MAX_BLOB_READ`]) bytes of blob `id`; blocking (it runs on a
    /// plugin call's thread). Only blobs: `cat-file blob` refuses other objects.
    pub fn read_blob(&self, id: &str, max: usize) -> std::result::Result<Vec<u8>, String> {
        if !is_object_id(id) {
            return Err(format!("{id:?} is not an object id"));
        }
        let max = max.min(MAX_BLOB_READ);
        let mut git = std::process::Command::new("git");
        git.arg("--git-dir")
            .arg(&self.repository)
            .args(["cat-file", "blob", id])
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env_remove("GIT_DIR")
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
/// commit alone has more) [`BATCH_FILES`] changed files.
pub struct NewCommits {
    readers: Readers,
    child: tokio::process::Child,
    lines: Lines<BufReader<ChildStdout>>,
    ready: VecDeque<Vec<ScannedCommit>>,
    done: bool,
}

impl NewCommits {
    /// The next batch; `None` once every new commit was handed out.
    pub async fn next_batch(&mut self) -> Result<Option<Vec<ScannedCommit>>> {
        while self.ready.is_empty() && !self.done {
            let mut shas = Vec::with_capacity(BATCH_COMMITS);
            while shas.len() < BATCH_COMMITS {
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
                        break;
                    }
                }
            }
            if self.done {
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
            if !shas.is_empty() {
                let commits = self.readers.read_commits(&shas).await?;
                self.ready.extend(split_by_files(commits));
            }
        }
        Ok(self.ready.pop_front())
    }
}

/// The scan's long-lived readers (killed when dropped).
struct Readers {
    /// `cat-file --batch-command --buffer`: commit objects and blob sizes.
    objects: Reader,
    /// `diff-tree --stdin`: the files each commit changes, each reader diffing its share of a
    /// batch.
    diffs: Vec<Reader>,
    /// The line that ends a batch for `diff-tree`, which echoes lines that are not object ids.
    /// Random, so that no path in the push can forge it.
    end_of_batch: String,
}

impl Readers {
    /// Headers, message, signature and changed files (with sizes) of `shas`.
    async fn read_commits(&mut self, shas: &[String]) -> Result<Vec<ScannedCommit>> {
        let contents: String = shas.iter().map(|s| format!("contents {s}\n")).collect();
        let end_of_batch = self.end_of_batch.as_bytes();
        let share = shas.len().div_ceil(self.diffs.len()).max(1);
        let diffing = self
            .diffs
            .iter_mut()
            .zip(shas.chunks(share))
            .map(|(reader, shas)| {
                let input = format!("{}\n{}", shas.join("\n"), self.end_of_batch);
                async move {
                    let out = reader.flushed(input, Answer::Until(end_of_batch)).await?;
                    Ok::<_, Error>(parse_diff_tree(
                        &out[..out.len() - end_of_batch.len()],
                        shas,
                    ))
                }
            });
        let (raw, diffs) = tokio::try_join!(
            self.objects
                .flushed(contents + "flush\n", Answer::Objects(shas.len())),
            futures_util::future::try_join_all(diffing),
        )?;
        let mut commits = parse_batch(&raw)
            .into_iter()
            .filter(|(_, kind, _)| kind == "commit")
            .map(|(sha, _, body)| parse_commit(sha, body))
            .collect::<Vec<_>>();
        let mut files: HashMap<String, Vec<ChangedFile>> = diffs.into_iter().flatten().collect();
        let blobs: Vec<&str> = files
            .values()
            .flatten()
            .filter(|f| !f.deleted)
            .map(|f| f.blob_id.as_str())
            .collect();
        let info: String = blobs.iter().map(|id| format!("info {id}\n")).collect();
        let sizes = self
            .objects
            .flushed(info + "flush\n", Answer::Lines(blobs.len()))
            .await?;
        let sizes: HashMap<&str, u64> = std::str::from_utf8(&sizes)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let mut parts = l.split(' ');
                let (id, _kind, size) = (parts.next()?, parts.next()?, parts.next()?);
                Some((id, size.parse().ok()?))
            })
            .collect();
        for commit in &mut commits {
            let mut changed = files.remove(&commit.sha).unwrap_or_default();
            for file in &mut changed {
                file.size = sizes.get(file.blob_id.as_str()).copied().unwrap_or(0);
            }
            commit.files = changed;
        }
        Ok(commits)
    }
}

/// `diff-tree` processes a scan runs side by side. Diffing is most of reading a push (inflating
/// trees: about 0.13 s of CPU for 10,000 commits), and splitting each batch between two of them
/// took the read of a 10,000-commit push from 220-250 ms to 160-190 ms on two cores, for about
/// 30% more CPU (each process's delta cache sees only its half of the history;
/// `tests/bench/push-rules`).
fn diff_readers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(2))
}

/// How much of a reader's output answers one request.
enum Answer<'a> {
    /// `cat-file` objects: a header line each, then its content unless it is missing.
    Objects(usize),
    /// `cat-file` header lines.
    Lines(usize),
    /// Everything up to and including this line.
    Until(&'a [u8]),
}

/// A long-lived git process fed requests on stdin.
struct Reader {
    _child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Reader {
    fn start(mut git: tokio::process::Command, args: &[&str]) -> Result<Reader> {
        let mut child = git.args(args).spawn().map_err(Error::io("running git"))?;
        Ok(Reader {
            stdin: child.stdin.take().ok_or_else(broken_pipe)?,
            stdout: BufReader::new(child.stdout.take().ok_or_else(broken_pipe)?),
            _child: child,
        })
    }

    /// Writes `input` while reading its answer (git may answer before it has read
    /// everything, and a large input must not block on a full output pipe).
    async fn flushed(&mut self, input: String, answer: Answer<'_>) -> Result<Vec<u8>> {
        let Reader { stdin, stdout, .. } = self;
        let write = async {
            stdin.write_all(input.as_bytes()).await?;
            stdin.flush().await
        };
        let read = async {
            let mut out = Vec::new();
            match answer {
                Answer::Objects(count) => {
                    for _ in 0..count {
                        let start = out.len();
                        stdout.read_until(b'\n', &mut out).await?;
                        let header = String::from_utf8_lossy(&out[start..]).to_string();
                        let size = match header.trim_end().rsplit_once(' ') {
                            Some((_, size)) if !header.trim_end().ends_with(" missing") => {
                                size.parse::<usize>().unwrap_or(0)
                            }
                            _ => continue,
                        };
                        let end = out.len() + size + 1;
                        out.resize(end, 0);
                        let body = out.len() - size - 1;
                        stdout.read_exact(&mut out[body..]).await?;
                    }
                }
                Answer::Lines(count) => {
                    for _ in 0..count {
                        stdout.read_until(b'\n', &mut out).await?;
                    }
                }
                Answer::Until(end) => {
                    while !out.ends_with(end) {
                        if stdout.read_until(b'\n', &mut out).await? == 0 {
                            return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
                        }
                    }
                }
            }
            Ok(out)
        };
        let (written, out) = tokio::join!(write, read);
        written.map_err(Error::io("writing to git"))?;
        out.map_err(Error::io("reading git"))
    }
}

fn broken_pipe() -> Error {
    Error::io("talking to git")(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
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

/// `cat-file --batch` output: `<sha> <type> <size>\n<content>\n` per object.
fn parse_batch(raw: &[u8]) -> Vec<(String, String, &[u8])> {
    let mut objects = Vec::new();
    let mut rest = raw;
    while let Some(end) = rest.iter().position(|b| *b == b'\n') {
        let header = String::from_utf8_lossy(&rest[..end]).to_string();
        rest = &rest[end + 1..];
        let mut parts = header.split(' ');
        let (Some(sha), Some(kind), Some(size)) = (parts.next(), parts.next(), parts.next()) else {
            continue; // `<sha> missing`
        };
        let Ok(size) = size.parse::<usize>() else {
            continue;
        };
        if size > rest.len() {
            break;
        }
        objects.push((sha.to_string(), kind.to_string(), &rest[..size]));
        rest = rest.get(size + 1..).unwrap_or_default();
    }
    objects
}

/// A commit object: headers up to the first blank line, then the message. The `gpgsig`
/// header (continued on lines starting with a space) is the signature; the object without
/// it is what was signed.
fn parse_commit(sha: String, body: &[u8]) -> ScannedCommit {
    let split = body
        .windows(2)
        .position(|w| w == b"\n\n")
        .map_or(body.len(), |i| i + 1);
    let (headers, message) = body.split_at(split);
    let message = message.strip_prefix(b"\n").unwrap_or(message);
    let mut commit = ScannedCommit {
        sha,
        message: String::from_utf8_lossy(message).to_string(),
        ..ScannedCommit::default()
    };
    let mut signed = Vec::with_capacity(body.len());
    let mut armored = String::new();
    let mut in_signature = false;
    for line in headers.split_inclusive(|b| *b == b'\n') {
        let text = String::from_utf8_lossy(line);
        if in_signature && let Some(continued) = text.strip_prefix(' ') {
            armored.push_str(continued);
            continue;
        }
        in_signature = false;
        if let Some(first) = text.strip_prefix("gpgsig ") {
            in_signature = true;
            armored.push_str(first);
            continue;
        }
        signed.extend_from_slice(line);
        let text = text.trim_end();
        if let Some(person) = text.strip_prefix("author ") {
            (commit.author_name, commit.author_email) = person_of(person);
        } else if let Some(person) = text.strip_prefix("committer ") {
            (commit.committer_name, commit.committer_email) = person_of(person);
        } else if text.starts_with("parent ") {
            commit.parents += 1;
        }
    }
    if !armored.is_empty() {
        signed.extend_from_slice(&body[split..]);
        commit.signature = Some(Signature {
            armored,
            signed_data: signed,
        });
    }
    commit
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

/// `diff-tree --stdin -z` output. Each commit's entries are preceded by its id; merge commits
/// print nothing (no `-m`), so the ids we fed tell the commits apart.
/// An entry is `:<old mode> <new mode> <old id> <new id> <status>\0<path>\0`.
fn parse_diff_tree(raw: &[u8], shas: &[String]) -> HashMap<String, Vec<ChangedFile>> {
    let mut files: HashMap<String, Vec<ChangedFile>> = HashMap::new();
    let mut fields = raw.split(|b| *b == 0).map(String::from_utf8_lossy);
    let mut current: Option<String> = None;
    while let Some(field) = fields.next() {
        let field = field.trim_matches('\n');
        if field.is_empty() {
            continue;
        }
        if let Some(meta) = field.strip_prefix(':') {
            let Some(path) = fields.next() else { break };
            let parts: Vec<&str> = meta.split(' ').collect();
            let (Some(new_id), Some(status)) = (parts.get(3), parts.get(4)) else {
                continue;
            };
            let deleted = status.starts_with('D');
            if let Some(sha) = &current {
                files.entry(sha.clone()).or_default().push(ChangedFile {
                    path: path.to_string(),
                    size: 0,
                    added: status.starts_with('A'),
                    deleted,
                    blob_id: if deleted {
                        String::new()
                    } else {
                        (*new_id).to_string()
                    },
                });
            }
        } else if shas.iter().any(|s| s == field) {
            current = Some(field.to_string());
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_commit_splits_into_signature_and_signed_data() {
        let body = b"tree abc\nparent def\nauthor A U <a@x.org> 1 +0000\ncommitter C <c@x.org> 2 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n iQ==\n -----END PGP SIGNATURE-----\n\nSubject\n\nBody\n";
        let commit = parse_commit("1".repeat(40), body);
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
