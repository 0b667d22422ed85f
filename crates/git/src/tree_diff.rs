//! The files each commit of a push changes, found by comparing trees in the server, with the
//! trees read through a `cat-file` process of the comparer's own.
//!
//! This is what `git diff-tree -r --root --no-renames` prints, in its order, but cheaper on a
//! push: `diff-tree` reads both sides' trees for every commit, so each tree of a linear
//! history is inflated twice, where this reads it once (a tree both a commit and its child
//! name is asked for once a round) and walks both sides in place. On the 10,000-commit push
//! of `tests/bench/push-rules` the trees cost `cat-file` about 0.08 s of CPU against 0.2 s
//! for `diff-tree` (`docs/performance.md`).
//!
//! Memory stays bounded whatever the push holds: trees are compared a level at a time, and a
//! round of reads asks only for as many trees as fit in [`ROUND_BYTES`] (by the average size
//! read so far) and keeps them only for that round.

use std::collections::VecDeque;

use rustc_hash::{FxHashMap, FxHashSet};

use super::batch_process::{Answers, BatchProcess};
use super::error::{Error, Result};
use super::push_scan::ChangedFile;

/// The tree bytes a round of reads aims at.
const ROUND_BYTES: usize = 8 * 1024 * 1024;
/// The most trees asked for in one round.
const ROUND_TREES: usize = 512;

/// An object id, SHA-1 or SHA-256, in binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Oid {
    bytes: [u8; 32],
    len: u8,
}

impl Oid {
    /// A hex id of 40 or 64 digits, as text or as the bytes of a commit's headers.
    pub fn from_hex(text: impl AsRef<[u8]>) -> Option<Oid> {
        let text = text.as_ref();
        if !matches!(text.len(), 40 | 64) {
            return None;
        }
        let mut bytes = [0; 32];
        hex::decode_to_slice(text, &mut bytes[..text.len() / 2]).ok()?;
        Some(Oid {
            bytes,
            len: (text.len() / 2) as u8,
        })
    }

    fn from_raw(raw: &[u8]) -> Oid {
        let mut bytes = [0; 32];
        bytes[..raw.len()].copy_from_slice(raw);
        Oid {
            bytes,
            len: raw.len() as u8,
        }
    }

    /// Lowercase hex. Written through a buffer: `hex::encode` collects `char`s one by one,
    /// which showed in profiles of a push scan (tens of thousands of ids a push).
    pub fn hex(&self) -> String {
        let raw = &self.bytes[..self.len as usize];
        let mut text = vec![0u8; raw.len() * 2];
        hex::encode_to_slice(raw, &mut text).expect("twice the length");
        String::from_utf8(text).expect("hex digits")
    }
}

/// One entry of a tree, read in place: `<octal mode> <name>\0<binary id>`.
#[derive(Debug, Clone, Copy)]
struct Entry<'a> {
    mode: u32,
    name: &'a [u8],
    id: &'a [u8],
    /// The whole entry: two entries with the same bytes are the same file, unchanged.
    bytes: &'a [u8],
}

impl Entry<'_> {
    fn is_tree(&self) -> bool {
        self.mode & 0o170000 == 0o040000
    }
}

/// The entries of a tree object from `at` on; `id_len` is 20 (SHA-1) or 32 (SHA-256).
#[derive(Clone, Copy)]
struct Entries<'a> {
    raw: &'a [u8],
    at: usize,
    id_len: usize,
}

impl<'a> Entries<'a> {
    fn of(raw: &'a [u8], id_len: usize) -> Entries<'a> {
        Entries { raw, at: 0, id_len }
    }

    /// What is left of the tree: equal rests of two trees hold the same entries.
    fn rest(&self) -> &'a [u8] {
        &self.raw[self.at..]
    }

    /// The next entry, without moving on; an error for a malformed tree.
    fn peek(&self) -> std::result::Result<Option<Entry<'a>>, ()> {
        let raw = self.raw;
        if self.at >= raw.len() {
            return Ok(None);
        }
        let mut mode = 0u32;
        let mut space = self.at;
        while raw.get(space) != Some(&b' ') {
            let digit = raw
                .get(space)
                .filter(|b| (b'0'..=b'7').contains(b))
                .ok_or(())?;
            mode = mode
                .checked_mul(8)
                .and_then(|m| m.checked_add(u32::from(digit - b'0')))
                .ok_or(())?;
            space += 1;
        }
        let nul = space + memchr::memchr(0, &raw[space..]).ok_or(())?;
        let end = nul + 1 + self.id_len;
        Ok(Some(Entry {
            mode,
            name: &raw[space + 1..nul],
            id: raw.get(nul + 1..end).ok_or(())?,
            bytes: &raw[self.at..end],
        }))
    }

    fn advance(&mut self, entry: &Entry<'_>) {
        self.at += entry.bytes.len();
    }

    /// Moves past the entries both trees start with: the bytes before the first that
    /// differs, walked on this side only. Only entry lengths matter here (an entry's NUL,
    /// then its id), not their modes: parsing every skipped entry in full was the largest
    /// share of the server's CPU in a push scan (perf, `tests/bench/push-rules`).
    fn skip_common_start(&mut self, other: &mut Entries<'_>) -> std::result::Result<(), ()> {
        let end = self.at + common_prefix(self.rest(), other.rest());
        let start = self.at;
        while self.at < end {
            let nul = memchr::memchr(0, &self.raw[self.at..]).ok_or(())?;
            let next = self.at + nul + 1 + self.id_len;
            if next > end {
                break;
            }
            self.at = next;
        }
        other.at += self.at - start;
        Ok(())
    }
}

/// How many bytes `a` and `b` start with alike: compared 64 at a time (one `memcmp` each)
/// until the block that differs, which is the most of a push's tree comparisons.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 64;
    let len = a.len().min(b.len());
    let mut same = 0;
    while same + BLOCK <= len && a[same..same + BLOCK] == b[same..same + BLOCK] {
        same += BLOCK;
    }
    same + a[same..len]
        .iter()
        .zip(&b[same..len])
        .take_while(|(x, y)| x == y)
        .count()
}

/// Git's order of tree entries: by name, a tree's name read as if it ended in `/`.
fn entry_order(a: (&[u8], bool), b: (&[u8], bool)) -> std::cmp::Ordering {
    let common = a.0.len().min(b.0.len());
    a.0[..common].cmp(&b.0[..common]).then_with(|| {
        let next = |(name, is_tree): (&[u8], bool)| match name.get(common) {
            Some(byte) => *byte,
            None if is_tree => b'/',
            None => 0,
        };
        next(a).cmp(&next(b))
    })
}

/// Two trees of one commit still to compare (either side absent: everything under the other
/// was added or deleted), under the directory `prefix` (empty, or ending in `/`).
struct Pair {
    commit: usize,
    prefix: Vec<u8>,
    old: Option<Oid>,
    new: Option<Oid>,
}

/// A changed file before its size is known, with its path's bytes for ordering.
struct Change {
    path: Vec<u8>,
    added: bool,
    deleted: bool,
    blob: Option<Oid>,
}

/// Compares the trees of commits, with a `cat-file` of its own.
pub struct TreeDiffer {
    process: BatchProcess,
    /// Bytes and number of the trees read so far, for sizing rounds.
    read_bytes: usize,
    read_trees: usize,
}

impl TreeDiffer {
    /// Starts the comparer's `cat-file` with `git` (a command carrying the repository and
    /// environment).
    ///
    /// Its delta base cache is held to a round's bytes instead of git's 96 MiB. Trees are
    /// asked for newest first, the order a pack's delta chains run in, so the base a tree
    /// needs was read a moment before, in the same round or the one before it. With git's
    /// limit the cache only grows, to every tree of a large push, and faulting in that fresh
    /// memory cost more than the cache saved: the 10,000 changed trees of the push in
    /// `tests/bench/push-rules`, read in this order, cost `cat-file` about 51 ms of CPU with
    /// 96 MiB and 34 ms with 8 MiB (`perf stat`; the whole scan in `cargo bench -p trellis
    /// --bench push_scan`; `docs/performance.md`).
    /// It also keeps each comparer's memory bounded whatever the push.
    pub fn start(mut git: tokio::process::Command) -> Result<TreeDiffer> {
        git.arg("-c")
            .arg(format!("core.deltaBaseCacheLimit={ROUND_BYTES}"));
        Ok(TreeDiffer {
            process: BatchProcess::start(git)?,
            read_bytes: 0,
            read_trees: 0,
        })
    }

    /// The files changed between each `(parent tree, tree)` pair (no parent tree: a root
    /// commit, every file added), in `diff-tree`'s order, with blob sizes.
    pub async fn changed_files(
        &mut self,
        pairs: &[(Option<Oid>, Oid)],
    ) -> Result<Vec<Vec<ChangedFile>>> {
        let mut changes: Vec<Vec<Change>> = pairs.iter().map(|_| Vec::new()).collect();
        let mut queue: VecDeque<Pair> = pairs
            .iter()
            .enumerate()
            .filter(|(_, (old, new))| *old != Some(*new))
            .map(|(commit, (old, new))| Pair {
                commit,
                prefix: Vec::new(),
                old: *old,
                new: Some(*new),
            })
            .collect();
        while !queue.is_empty() {
            let round = self.round_size();
            // A tree both sides of consecutive commits name is read once per round.
            let mut wanted = Vec::new();
            let mut asked = FxHashSet::default();
            let mut taken = 0;
            for pair in &queue {
                let missing: Vec<Oid> = [pair.old, pair.new]
                    .into_iter()
                    .flatten()
                    .filter(|id| !asked.contains(id))
                    .collect();
                if taken > 0 && wanted.len() + missing.len() > round {
                    break;
                }
                asked.extend(missing.iter().copied());
                wanted.extend(missing);
                taken += 1;
            }
            let answers = self.read_trees_of(&wanted).await?;
            let trees = trees_in(&wanted, &answers)?;
            for pair in queue.drain(..taken).collect::<Vec<_>>() {
                compare(pair, &trees, &mut changes, &mut queue)?;
            }
        }
        self.with_sizes(changes).await
    }

    /// How many trees one round asks for: [`ROUND_BYTES`] at the average size read so far
    /// (4 KiB before any), between 2 (both sides of a pair) and [`ROUND_TREES`].
    fn round_size(&self) -> usize {
        let average = self.read_bytes.checked_div(self.read_trees).unwrap_or(4096);
        (ROUND_BYTES / average.max(1)).clamp(2, ROUND_TREES)
    }

    /// `cat-file`'s answer for the trees `ids`, kept only for the round.
    async fn read_trees_of(&mut self, ids: &[Oid]) -> Result<Answers> {
        let hex: Vec<String> = ids.iter().map(Oid::hex).collect();
        let answers = self.process.contents(&hex).await?;
        self.read_bytes += answers.bytes();
        self.read_trees += ids.len();
        Ok(answers)
    }

    /// Orders each commit's changes by path (`diff-tree`'s order: a tree's entries sort as
    /// full paths do) and adds the size of every blob they name, asked of `cat-file` once.
    async fn with_sizes(&mut self, changes: Vec<Vec<Change>>) -> Result<Vec<Vec<ChangedFile>>> {
        let blobs: Vec<Oid> = changes
            .iter()
            .flatten()
            .filter_map(|c| c.blob)
            .collect::<FxHashSet<Oid>>()
            .into_iter()
            .collect();
        let asked: Vec<String> = blobs.iter().map(Oid::hex).collect();
        let info = self.process.info(&asked).await?;
        // One answer per id asked, in order (missing for an absent one).
        let sizes: FxHashMap<Oid, u64> = blobs
            .into_iter()
            .zip(info.objects())
            .filter(|(_, blob)| !blob.missing)
            .map(|(id, blob)| (id, blob.size))
            .collect();
        Ok(changes
            .into_iter()
            .map(|mut commit| {
                commit.sort_by(|a, b| a.path.cmp(&b.path));
                commit
                    .into_iter()
                    .map(|change| {
                        let size = change.blob.and_then(|b| sizes.get(&b).copied());
                        let blob_id = change.blob.map(|b| b.hex()).unwrap_or_default();
                        ChangedFile {
                            path: String::from_utf8_lossy(&change.path).into_owned(),
                            size: size.unwrap_or(0),
                            added: change.added,
                            deleted: change.deleted,
                            blob_id,
                        }
                    })
                    .collect()
            })
            .collect())
    }
}

/// The trees of a round's answer by id (each checked to be a tree), borrowed from it.
fn trees_in<'a>(ids: &[Oid], answers: &'a Answers) -> Result<FxHashMap<Oid, Entries<'a>>> {
    ids.iter()
        .zip(answers.objects())
        .map(
            |(id, object)| match object.kind == "tree" && !object.missing {
                true => Ok((*id, Entries::of(object.body, id.len as usize))),
                false => Err(unreadable(id, "tree")),
            },
        )
        .collect()
}

/// Walks both sides of `pair` in git's order: files become changes, subtrees that differ
/// become pairs for the next round. Entries both sides start or end with are skipped by
/// comparing bytes: a commit that changes one file of a large directory costs a byte
/// comparison of the rest, not a parse of both trees.
fn compare(
    pair: Pair,
    trees: &FxHashMap<Oid, Entries<'_>>,
    changes: &mut [Vec<Change>],
    queue: &mut VecDeque<Pair>,
) -> Result<()> {
    let side = |id: Option<Oid>| match id {
        None => Ok(Entries::of(&[], 0)),
        Some(id) => trees
            .get(&id)
            .copied()
            .ok_or_else(|| unreadable(&id, "tree")),
    };
    let (mut olds, mut news) = (side(pair.old)?, side(pair.new)?);
    let malformed = |_| Error::Failed {
        command: "cat-file".into(),
        stderr: "a tree of the push is malformed".into(),
    };
    olds.skip_common_start(&mut news).map_err(malformed)?;
    let path = |entry: &Entry| [&pair.prefix[..], entry.name].concat();
    let oid = |entry: &Entry| Oid::from_raw(entry.id);
    let mut emit = |entry: &Entry, old: Option<&Entry>, new: Option<&Entry>| {
        if entry.is_tree() {
            let mut prefix = path(entry);
            prefix.push(b'/');
            queue.push_back(Pair {
                commit: pair.commit,
                prefix,
                old: old.map(oid),
                new: new.map(oid),
            });
        } else {
            changes[pair.commit].push(Change {
                path: path(entry),
                added: old.is_none(),
                deleted: new.is_none(),
                blob: new.map(oid),
            });
        }
    };
    loop {
        if olds.rest() == news.rest() {
            return Ok(()); // what is left is the same on both sides (or nothing)
        }
        let (a, b) = (
            olds.peek().map_err(malformed)?,
            news.peek().map_err(malformed)?,
        );
        let order = match (&a, &b) {
            (Some(a), Some(b)) if a.bytes == b.bytes => {
                olds.advance(a);
                news.advance(b);
                continue;
            }
            (Some(a), Some(b)) => entry_order((a.name, a.is_tree()), (b.name, b.is_tree())),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, _) => std::cmp::Ordering::Greater,
        };
        match (order, a, b) {
            (std::cmp::Ordering::Less, Some(a), _) => {
                emit(&a, Some(&a), None);
                olds.advance(&a);
            }
            (std::cmp::Ordering::Greater, _, Some(b)) => {
                emit(&b, None, Some(&b));
                news.advance(&b);
            }
            (_, Some(a), Some(b)) => {
                // The same name on both sides, different id or mode.
                emit(&b, Some(&a), Some(&b));
                olds.advance(&a);
                news.advance(&b);
            }
            _ => return Ok(()),
        }
    }
}

fn unreadable(id: &Oid, kind: &str) -> Error {
    Error::Failed {
        command: "cat-file".into(),
        stderr: format!("{} is not a readable {kind}", id.hex()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_go_to_binary_and_back() {
        let sha1 = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(Oid::from_hex(sha1).unwrap().hex(), sha1);
        let sha256 = "ab".repeat(32);
        assert_eq!(Oid::from_hex(&sha256).unwrap().hex(), sha256);
        assert!(Oid::from_hex("xyz").is_none());
        assert!(Oid::from_hex("g".repeat(40)).is_none());
    }

    #[test]
    fn a_tree_is_read_entry_by_entry() {
        let mut raw = b"100644 a.txt\0".to_vec();
        raw.extend([1; 20]);
        raw.extend(b"40000 src\0");
        raw.extend([2; 20]);
        let mut entries = Entries::of(&raw, 20);
        let first = entries.peek().unwrap().unwrap();
        assert_eq!(
            (first.mode, first.name, first.id),
            (0o100644, &b"a.txt"[..], &[1; 20][..])
        );
        assert!(!first.is_tree());
        entries.advance(&first);
        let second = entries.peek().unwrap().unwrap();
        assert!(second.is_tree() && second.name == b"src");
        entries.advance(&second);
        assert!(entries.peek().unwrap().is_none());
        assert!(Entries::of(b"100644 cut\0\x01\x02", 20).peek().is_err());
        assert!(Entries::of(b"10x644 a\0", 20).peek().is_err());
    }

    #[test]
    fn common_prefixes_are_counted_across_blocks() {
        let a: Vec<u8> = (0..200u8).collect();
        let mut b = a.clone();
        assert_eq!(common_prefix(&a, &b), 200);
        b[130] = 0;
        assert_eq!(common_prefix(&a, &b), 130);
        assert_eq!(common_prefix(&a[..10], &b), 10);
        assert_eq!(common_prefix(&[], &b), 0);
    }

    #[test]
    fn the_entries_two_trees_start_with_are_skipped_whole() {
        let entry = |name: &str, id: u8| {
            let mut e = format!("100644 {name}\0").into_bytes();
            e.extend([id; 20]);
            e
        };
        let old = [entry("a", 1), entry("b", 2), entry("c", 3)].concat();
        // "b"'s id starts with the same byte as the old one's: the skip stops at the entry.
        let mut changed = [2; 20];
        changed[19] = 9;
        let new = [
            entry("a", 1),
            b"100644 b\0".to_vec(),
            changed.to_vec(),
            entry("c", 3),
        ]
        .concat();
        let (mut olds, mut news) = (Entries::of(&old, 20), Entries::of(&new, 20));
        olds.skip_common_start(&mut news).unwrap();
        assert_eq!(olds.peek().unwrap().unwrap().name, b"b");
        assert_eq!(news.peek().unwrap().unwrap().name, b"b");
    }

    #[test]
    fn trees_sort_as_if_their_names_ended_in_a_slash() {
        use std::cmp::Ordering::*;
        // "a.txt" < "a/" < "a0": '.' < '/' < '0'.
        assert_eq!(entry_order((b"a.txt", false), (b"a", true)), Less);
        assert_eq!(entry_order((b"a", true), (b"a0", false)), Less);
        assert_eq!(entry_order((b"a", false), (b"a0", false)), Less);
        assert_eq!(entry_order((b"a", false), (b"a", true)), Less);
        assert_eq!(entry_order((b"a", true), (b"a", true)), Equal);
    }

    #[tokio::test]
    async fn rounds_shrink_as_trees_grow() {
        let dir = tempfile::tempdir().unwrap();
        let git = super::super::process::command(Some(dir.path()));
        let mut differ = TreeDiffer::start(git).unwrap();
        assert_eq!(differ.round_size(), ROUND_TREES, "small trees: the most");
        (differ.read_bytes, differ.read_trees) = (4 * 1024 * 1024, 2);
        assert_eq!(differ.round_size(), 4, "2 MiB trees: 8 MiB's worth");
        (differ.read_bytes, differ.read_trees) = (64 * 1024 * 1024, 1);
        assert_eq!(differ.round_size(), 2, "one pair at a time, however large");
    }

    /// Paths that may appear in a history: nested, a file and a directory of one name over
    /// time, and names that sort around `/`.
    const PATHS: [&str; 10] = [
        "a", "a/b", "a/b/c", "a/d", "a.txt", "a-b", "a0", "b/x", "b/y/z", "c",
    ];

    /// One commit's snapshot: (path index, content index, mode index) entries.
    type Snapshot = Vec<(usize, usize, usize)>;

    /// Writes `history` (each snapshot a commit on the last) with `git fast-import` and
    /// returns the commits, oldest first.
    fn repository(dir: &std::path::Path, history: &[Snapshot]) -> Vec<String> {
        use std::io::Write;
        let git = |args: &[&str]| {
            let mut command = std::process::Command::new("git");
            command
                .arg("--git-dir")
                .arg(dir)
                .args(args)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null");
            command
        };
        assert!(git(&["init", "-q", "--bare"]).status().unwrap().success());
        let mut stream = String::new();
        for (n, snapshot) in history.iter().enumerate() {
            stream.push_str(&format!(
                "commit refs/heads/main\nmark :{}\ncommitter T <t@x> {} +0000\ndata 2\nc\n",
                n + 1,
                1_700_000_000 + n
            ));
            if n > 0 {
                stream.push_str(&format!("from :{n}\n"));
            }
            stream.push_str("deleteall\n");
            // A path that is also another's directory is left out of the snapshot.
            let mut files: Vec<&(usize, usize, usize)> = snapshot.iter().collect();
            files.retain(|(p, _, _)| {
                !snapshot
                    .iter()
                    .any(|(q, _, _)| PATHS[*q].starts_with(&format!("{}/", PATHS[*p])))
            });
            for (path, content, mode) in files {
                let mode = ["100644", "100755", "120000"][*mode];
                let content = format!("content {content}\n");
                stream.push_str(&format!(
                    "M {mode} inline {}\ndata {}\n{content}\n",
                    PATHS[*path],
                    content.len()
                ));
            }
        }
        let mut import = git(&["fast-import", "--quiet"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        import
            .stdin
            .take()
            .unwrap()
            .write_all(stream.as_bytes())
            .unwrap();
        assert!(import.wait().unwrap().success());
        let out = git(&["rev-list", "--reverse", "main"]).output().unwrap();
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// `git diff-tree -r --root --no-renames` of each commit: (status, path, new blob id).
    fn diff_tree(dir: &std::path::Path, commit: &str) -> Vec<(char, String, String)> {
        let out = std::process::Command::new("git")
            .arg("--git-dir")
            .arg(dir)
            .args([
                "diff-tree",
                "-r",
                "--root",
                "--no-renames",
                "-z",
                "--no-commit-id",
            ])
            .arg(commit)
            .output()
            .unwrap();
        let fields: Vec<String> = out
            .stdout
            .split(|b| *b == 0)
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect();
        fields
            .chunks(2)
            .filter(|pair| pair.len() == 2)
            .map(|pair| {
                let meta: Vec<&str> = pair[0].trim_start_matches(':').split(' ').collect();
                let status = meta[4].chars().next().unwrap();
                let blob = if status == 'D' { "" } else { meta[3] };
                (status, pair[1].clone(), blob.to_string())
            })
            .collect()
    }

    fn tree_of(dir: &std::path::Path, commit: &str) -> Oid {
        let out = std::process::Command::new("git")
            .arg("--git-dir")
            .arg(dir)
            .args(["rev-parse", &format!("{commit}^{{tree}}")])
            .output()
            .unwrap();
        Oid::from_hex(String::from_utf8(out.stdout).unwrap().trim()).unwrap()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

        /// Whatever the history, the differ lists what `diff-tree` lists, in its order.
        #[test]
        fn the_differ_agrees_with_diff_tree(
            history in proptest::collection::vec(
                proptest::collection::vec((0..PATHS.len(), 0..3usize, 0..3usize), 0..8),
                1..6,
            ),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let commits = repository(dir.path(), &history);
            let trees: Vec<Oid> = commits.iter().map(|c| tree_of(dir.path(), c)).collect();
            let pairs: Vec<(Option<Oid>, Oid)> = trees
                .iter()
                .enumerate()
                .map(|(n, tree)| (n.checked_sub(1).map(|p| trees[p]), *tree))
                .collect();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let listed = runtime.block_on(async {
                let git = super::super::process::command(Some(dir.path()));
                let mut differ = TreeDiffer::start(git).unwrap();
                differ.changed_files(&pairs).await.unwrap()
            });
            for (commit, files) in commits.iter().zip(listed) {
                let ours: Vec<(char, String, String)> = files
                    .iter()
                    .map(|f| {
                        let status = if f.added { 'A' } else if f.deleted { 'D' } else { 'M' };
                        (status, f.path.clone(), f.blob_id.clone())
                    })
                    .collect();
                let theirs: Vec<(char, String, String)> = diff_tree(dir.path(), commit)
                    .into_iter()
                    .map(|(s, p, b)| (if s == 'T' { 'M' } else { s }, p, b))
                    .collect();
                proptest::prop_assert_eq!(ours, theirs);
                for file in files.iter().filter(|f| !f.deleted) {
                    proptest::prop_assert_eq!(file.size, "content 0\n".len() as u64);
                }
            }
        }
    }
}
