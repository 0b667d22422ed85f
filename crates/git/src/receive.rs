//! The git side of receiving a push, as Gitaly does it: `git receive-pack` runs with a hooks
//! directory the server owns (`core.hooksPath`), whose `pre-receive` runs the `trellis` binary
//! itself (`trellis git-hook pre-receive`), which asks the running server whether the push may
//! go on. Git has then written the pushed objects to a quarantine directory inside the
//! repository's `objects` (`GIT_QUARANTINE_PATH`); a refusal makes git drop it and move no
//! reference, so a refused push leaves nothing behind. The hook hands the server its
//! quarantine environment ([`Quarantine`]), under which git sees the pushed objects.
//!
//! Also here: the ref updates git passes the hook ([`RefUpdate`]), the `receive-pack` options
//! ([`ReceiveOptions`]), and what the server reads after a push ([`pushed_commits`]). Nothing
//! here knows Trellis; the decision and what a push changes are `services::git_push`'s.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::{Error, Result};
use super::process::git_bounded;
use super::{Repository, text};

/// A sha of zeros: the old value of a created ref, the new value of a deleted one.
pub const ZERO_SHA: &str = "0000000000000000000000000000000000000000";

/// The environment variable carrying the push session's id to the hook.
pub const PUSH_ID_ENV: &str = "TRELLIS_PUSH_ID";
/// The environment variable carrying the server's hook socket path to the hook.
pub const HOOK_SOCKET_ENV: &str = "TRELLIS_HOOK_SOCKET";

/// The quarantine variables git sets for its hooks.
pub const QUARANTINE_VARS: [&str; 3] = [
    "GIT_QUARANTINE_PATH",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
];

/// Writes `DIR/pre-receive`, a shell script that execs `exe git-hook pre-receive`, and
/// returns `DIR`. Written at every start, so it always names the running binary.
pub fn install_hooks(dir: &Path, exe: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    let quoted = exe.to_string_lossy().replace('\'', r"'\''");
    let script = format!("#!/bin/sh\nexec '{quoted}' git-hook pre-receive\n");
    let path = dir.join("pre-receive");
    let temporary = dir.join("pre-receive.new");
    std::fs::write(&temporary, script)?;
    std::fs::set_permissions(&temporary, std::fs::Permissions::from_mode(0o755))?;
    // Renamed into place: a push running meanwhile never sees half a script.
    std::fs::rename(&temporary, &path)?;
    Ok(dir.to_path_buf())
}

/// What every push is held to, as Gitaly runs `receive-pack`: each received object is checked
/// (`fsck`: a `.git` tree entry, a submodule name with `..`, malformed objects), except for the
/// legacy faults git once wrote itself and histories still carry; and the references the
/// server keeps for itself are hidden, so a push cannot write them (git answers "deny
/// updating a hidden ref").
const RECEIVE_CHECKS: &[&str] = &[
    "receive.fsckObjects=true",
    "receive.fsck.badTimezone=ignore",
    "receive.fsck.missingSpaceBeforeDate=ignore",
    "receive.fsck.zeroPaddedFilemode=ignore",
    "receive.hideRefs=refs/environments/",
    "receive.hideRefs=refs/keep-around/",
    "receive.hideRefs=refs/merge-requests/",
    "receive.hideRefs=refs/pipelines/",
    "receive.hideRefs=refs/tmp/",
];

/// How `git receive-pack` runs for one push: `-c` settings and environment.
#[derive(Debug, Clone, Default)]
pub struct ReceiveOptions {
    /// Passed as `git -c ... receive-pack`.
    pub config: Vec<String>,
    pub env: Vec<(String, String)>,
}

impl ReceiveOptions {
    /// The hooks directory, the largest pack accepted (`receive.maxInputSize`, bytes; none
    /// or 0 is unlimited) and the session's environment.
    pub fn new(hooks: &Path, max_input_bytes: Option<u64>, env: Vec<(String, String)>) -> Self {
        let mut config = vec![format!("core.hooksPath={}", hooks.display())];
        config.extend(RECEIVE_CHECKS.iter().map(|setting| setting.to_string()));
        if let Some(bytes) = max_input_bytes.filter(|b| *b > 0) {
            config.push(format!("receive.maxInputSize={bytes}"));
        }
        ReceiveOptions { config, env }
    }
}

/// One reference a push updates, `old new name`: as the client asks for it at the start of
/// the push (`pktline::receive_commands`) and as git hands it to `pre-receive`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RefUpdate {
    pub old: String,
    pub new: String,
    pub name: String,
}

impl RefUpdate {
    /// The lines of a `pre-receive` hook's stdin; malformed lines are an error.
    pub fn parse_all(input: &str) -> Option<Vec<RefUpdate>> {
        input
            .lines()
            .filter(|l| !l.is_empty())
            .map(|line| {
                let mut parts = line.splitn(3, ' ');
                let (old, new, name) = (parts.next()?, parts.next()?, parts.next()?);
                let sha = |s: &str| s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit());
                (sha(old) && sha(new) && !name.is_empty()).then(|| RefUpdate {
                    old: old.into(),
                    new: new.into(),
                    name: name.into(),
                })
            })
            .collect()
    }

    pub fn is_creation(&self) -> bool {
        self.old == ZERO_SHA
    }

    pub fn is_deletion(&self) -> bool {
        self.new == ZERO_SHA
    }

    /// The branch name of a `refs/heads/` reference.
    pub fn branch(&self) -> Option<&str> {
        self.name.strip_prefix("refs/heads/")
    }

    /// The tag name of a `refs/tags/` reference.
    pub fn tag(&self) -> Option<&str> {
        self.name.strip_prefix("refs/tags/")
    }
}

/// The environment under which git sees a push's quarantined objects, checked to lie inside
/// the repository's `objects` directory (the hook could be run by hand with anything).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Quarantine {
    pub vars: Vec<(String, String)>,
}

impl Quarantine {
    /// The quarantine variables of the hook's own environment.
    pub fn from_env() -> Quarantine {
        Quarantine {
            vars: QUARANTINE_VARS
                .iter()
                .filter_map(|name| Some((name.to_string(), std::env::var(name).ok()?)))
                .collect(),
        }
    }

    /// The variables git gives hooks for the quarantine directory `dir` of `repo`.
    pub fn of_dir(repo: &Repository, dir: &Path) -> Quarantine {
        let objects = repo.path().join("objects");
        let dir = dir.display().to_string();
        Quarantine {
            vars: vec![
                ("GIT_QUARANTINE_PATH".into(), dir.clone()),
                ("GIT_OBJECT_DIRECTORY".into(), dir),
                (
                    "GIT_ALTERNATE_OBJECT_DIRECTORIES".into(),
                    objects.display().to_string(),
                ),
            ],
        }
    }

    /// The environment for git commands on `repo` that must see the pushed objects: the
    /// quarantine variables, when each names a directory inside `repo`'s `objects`.
    pub fn env_for(&self, repo: &Repository) -> Result<Vec<(String, String)>> {
        // Both sides resolved (a relative data directory, symbolic links, `..`).
        let objects = std::fs::canonicalize(repo.path().join("objects"))
            .map_err(Error::io("resolving the objects directory"))?;
        for (name, value) in &self.vars {
            let inside = value
                .split(':')
                .all(|dir| std::fs::canonicalize(dir).is_ok_and(|dir| dir.starts_with(&objects)));
            if !inside {
                return Err(Error::Failed {
                    command: "pre-receive".into(),
                    stderr: format!("{name} is outside the repository"),
                });
            }
        }
        Ok(self.vars.clone())
    }
}

/// The quarantine directory a push's environment names, resolved (`None` outside a push's
/// hook).
pub fn quarantine_dir(env: &[(String, String)]) -> Option<PathBuf> {
    let (_, path) = env.iter().find(|(n, _)| n == "GIT_QUARANTINE_PATH")?;
    std::fs::canonicalize(path).ok()
}

/// The quarantine directories (`objects/tmp_objdir-incoming-*`) of the pushes into `repo`
/// in progress.
pub fn incoming_dirs(repo: &Repository) -> HashSet<PathBuf> {
    let Ok(entries) = std::fs::read_dir(repo.path().join("objects")) else {
        return HashSet::new();
    };
    entries
        .filter_map(|entry| entry.ok())
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .starts_with("tmp_objdir-incoming-")
        })
        .map(|entry| entry.path())
        .collect()
}

/// A quarantine directory of `repo` that is not one of `before` and holds an indexed pack:
/// `index-pack` writes the pack's `.idx` last, so from then on every object the push sent can
/// be read, while `receive-pack` goes on to check connectivity. Pushes small enough to be
/// unpacked into loose objects never show one.
pub fn indexed_quarantine(repo: &Repository, before: &HashSet<PathBuf>) -> Option<PathBuf> {
    incoming_dirs(repo).into_iter().find(|dir| {
        !before.contains(dir)
            && std::fs::read_dir(dir.join("pack")).is_ok_and(|mut files| {
                files.any(|f| f.is_ok_and(|f| f.path().extension().is_some_and(|e| e == "idx")))
            })
    })
}

/// Whether `old` is an ancestor of `new` (a fast-forward), with the pushed objects visible
/// through `env`.
pub async fn is_ancestor(
    repo: &Repository,
    old: &str,
    new: &str,
    env: &[(String, String)],
    timeout: Duration,
) -> Result<bool> {
    let answer = git_bounded(
        repo.path(),
        &["merge-base", "--is-ancestor", old, new],
        Vec::new(),
        env,
        timeout,
    )
    .await?;
    Ok(answer.success)
}

/// Every reference of the repository and its value.
pub async fn refs(repo: &Repository, timeout: Duration) -> Result<Vec<(String, String)>> {
    let answer = git_bounded(
        repo.path(),
        &["for-each-ref", "--format=%(refname) %(objectname)"],
        Vec::new(),
        &[],
        timeout,
    )
    .await?;
    Ok(text(&answer.stdout)
        .lines()
        .filter_map(|l| {
            let (name, sha) = l.rsplit_once(' ')?;
            Some((name.to_string(), sha.to_string()))
        })
        .collect())
}

/// A commit a push brought, as the push event lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushedCommit {
    pub id: String,
    pub author_name: String,
    pub author_email: String,
    /// ISO 8601 with the author's offset.
    pub timestamp: String,
    pub message: String,
    pub added: Vec<String>,
    pub modified: Vec<String>,
    pub removed: Vec<String>,
}

/// The commits reachable from `new` and from none of `known` (the values of the references
/// before the push): how many, and the last `limit` of them, oldest first, with the files
/// each added, modified and removed (against its first parent, renames as a removal and an
/// addition). Counting is one `rev-list --count` and listing one `log`, however many commits
/// there are.
pub async fn pushed_commits(
    repo: &Repository,
    new: &str,
    known: &[String],
    limit: usize,
    timeout: Duration,
) -> Result<(i64, Vec<PushedCommit>)> {
    let excluded: String = known.iter().map(|sha| format!("^{sha}\n")).collect();
    let count = git_bounded(
        repo.path(),
        &["rev-list", "--count", new, "--stdin"],
        excluded.clone().into_bytes(),
        &[],
        timeout,
    )
    .await?;
    let count = text(&count.stdout).parse().unwrap_or(0);
    if count == 0 {
        return Ok((0, Vec::new()));
    }
    let max = format!("--max-count={limit}");
    let listed = git_bounded(
        repo.path(),
        &["rev-list", &max, new, "--stdin"],
        excluded.into_bytes(),
        &[],
        timeout,
    )
    .await?;
    let mut shas: Vec<String> = text(&listed.stdout).lines().map(str::to_string).collect();
    shas.reverse();
    Ok((count, described_commits(repo, &shas, timeout).await?))
}

/// `shas`, in that order, as push events show commits: message, author and changed files.
pub async fn described_commits(
    repo: &Repository,
    shas: &[String],
    timeout: Duration,
) -> Result<Vec<PushedCommit>> {
    let log = git_bounded(
        repo.path(),
        &[
            "log",
            "--stdin",
            "--no-walk=unsorted",
            "--format=%x1e%H%x00%an%x00%ae%x00%aI%x00%B%x00",
            "--name-status",
            "--no-renames",
            "--diff-merges=first-parent",
            "-z",
        ],
        shas.join("\n").into_bytes(),
        &[],
        timeout,
    )
    .await?;
    Ok(parse_log(&log.stdout))
}

/// Parses `git log -z --name-status` with the record format of [`pushed_commits`].
fn parse_log(output: &[u8]) -> Vec<PushedCommit> {
    let output = String::from_utf8_lossy(output);
    output
        .split('\x1e')
        .filter(|r| !r.is_empty())
        .filter_map(|record| {
            let mut fields = record.splitn(6, '\0');
            let mut commit = PushedCommit {
                id: fields.next()?.to_string(),
                author_name: fields.next()?.to_string(),
                author_email: fields.next()?.to_string(),
                timestamp: fields.next()?.to_string(),
                message: fields.next()?.to_string(),
                added: Vec::new(),
                modified: Vec::new(),
                removed: Vec::new(),
            };
            let changes: Vec<&str> = fields
                .next()
                .unwrap_or_default()
                .split('\0')
                .map(|s| s.trim_start_matches('\n'))
                .filter(|s| !s.is_empty())
                .collect();
            for pair in changes.chunks(2) {
                let [status, path] = pair else { continue };
                let list = match status.chars().next() {
                    Some('A') => &mut commit.added,
                    Some('D') => &mut commit.removed,
                    _ => &mut commit.modified,
                };
                list.push(path.to_string());
            }
            Some(commit)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ref_updates_are_parsed_strictly() {
        let z = ZERO_SHA;
        let a = "a".repeat(40);
        let parsed = RefUpdate::parse_all(&format!("{z} {a} refs/heads/main\n")).unwrap();
        assert_eq!(parsed[0].branch(), Some("main"));
        assert!(parsed[0].is_creation() && !parsed[0].is_deletion());
        assert!(RefUpdate::parse_all("x y refs/heads/main\n").is_none());
        assert!(RefUpdate::parse_all(&format!("{z} {a}\n")).is_none());
    }

    #[test]
    fn log_records_become_commits() {
        let log = b"\x1eabc\0Ada\0ada@x\x002026-01-01T00:00:00+01:00\0first\nbody\n\0\0\nA\0a.txt\0M\0b\0D\0c\0\x1edef\0B\0b@x\x002026-01-02T00:00:00Z\0empty\n\0";
        let commits = parse_log(log);
        assert_eq!(commits.len(), 2);
        assert_eq!(commits[0].id, "abc");
        assert_eq!(commits[0].message, "first\nbody\n");
        assert_eq!(commits[0].added, ["a.txt"]);
        assert_eq!(commits[0].modified, ["b"]);
        assert_eq!(commits[0].removed, ["c"]);
        assert!(commits[1].added.is_empty() && commits[1].message == "empty\n");
    }

    #[tokio::test]
    async fn a_new_quarantine_is_found_once_its_pack_is_indexed() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::project(dir.path(), 1, 2);
        repo.create("main").await.unwrap();
        let objects = repo.path().join("objects");
        let older = objects.join("tmp_objdir-incoming-older");
        std::fs::create_dir_all(older.join("pack")).unwrap();
        std::fs::write(older.join("pack/pack-1.idx"), b"").unwrap();
        let before = incoming_dirs(&repo);
        assert_eq!(before, HashSet::from([older.clone()]));

        let ours = objects.join("tmp_objdir-incoming-ours");
        std::fs::create_dir_all(ours.join("pack")).unwrap();
        std::fs::write(ours.join("pack/tmp_pack_x"), b"").unwrap();
        assert_eq!(
            indexed_quarantine(&repo, &before),
            None,
            "a pack still being written is not indexed, and the push that started before is \
             not ours"
        );
        std::fs::write(ours.join("pack/pack-2.idx"), b"").unwrap();
        let found = indexed_quarantine(&repo, &before).unwrap();
        assert_eq!(found, ours);

        let quarantine = Quarantine::of_dir(&repo, &found);
        assert!(quarantine.env_for(&repo).is_ok());
        assert_eq!(
            quarantine_dir(&quarantine.vars),
            std::fs::canonicalize(&ours).ok()
        );
    }

    #[tokio::test]
    async fn quarantine_must_lie_inside_the_repository() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::project(dir.path(), 1, 2);
        repo.create("main").await.unwrap();
        let other = Repository::project(dir.path(), 1, 3);
        other.create("main").await.unwrap();
        let objects = repo.path().join("objects");
        let incoming = objects.join("tmp_objdir-incoming-x");
        std::fs::create_dir(&incoming).unwrap();
        let var = |name: &str, value: String| Quarantine {
            vars: vec![(name.to_string(), value)],
        };
        let alternates = format!("{}", objects.display());
        assert!(
            var("GIT_OBJECT_DIRECTORY", incoming.display().to_string())
                .env_for(&repo)
                .is_ok()
        );
        assert!(
            var("GIT_ALTERNATE_OBJECT_DIRECTORIES", alternates)
                .env_for(&repo)
                .is_ok()
        );
        let outside = other.path().join("objects").display().to_string();
        assert!(var("GIT_OBJECT_DIRECTORY", outside).env_for(&repo).is_err());
        let climbing = format!("{}/../../3.git/objects", incoming.display());
        assert!(
            var("GIT_OBJECT_DIRECTORY", climbing)
                .env_for(&repo)
                .is_err()
        );
        assert!(
            var("GIT_OBJECT_DIRECTORY", "/nowhere".into())
                .env_for(&repo)
                .is_err()
        );
    }
}
