//! Commits made through the API (`POST /repository/commits` and the files API): GitLab's
//! rules for the branch (an existing branch, or a new one from `start_branch`/`start_sha`),
//! for each action in order (create, update, delete, move, chmod) against the files as the
//! earlier actions left them, and for `last_commit_id`; then one commit written with git
//! plumbing and the branch moved through `services::repository::update_ref`.

use std::collections::HashMap;

use crate::git::commits::Commit;
use crate::git::refs::{Revision, valid_ref_name};
use crate::git::tree::valid_path;
use crate::git::write::{Change, NewCommit, Signature};
use crate::services::Refusal;
use crate::services::repository::{RefUpdate, Target, read_commit, update_ref};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionKind {
    Create,
    Update,
    Delete,
    Move,
    Chmod,
}

impl ActionKind {
    pub fn parse(name: &str) -> Option<ActionKind> {
        Some(match name {
            "create" => ActionKind::Create,
            "update" => ActionKind::Update,
            "delete" => ActionKind::Delete,
            "move" => ActionKind::Move,
            "chmod" => ActionKind::Chmod,
            _ => return None,
        })
    }
}

/// One action of a commit.
#[derive(Debug, Clone)]
pub struct Action {
    pub kind: ActionKind,
    pub file_path: String,
    /// The file a `move` starts from.
    pub previous_path: Option<String>,
    /// New contents (decoded); `None` keeps them (`move`) or means empty (`create`).
    pub content: Option<Vec<u8>>,
    pub execute_filemode: Option<bool>,
    /// The commit the caller last saw the file at: a later change to it refuses the action.
    pub last_commit_id: Option<String>,
}

/// A commit to make on `branch`.
#[derive(Debug, Clone)]
pub struct CommitRequest {
    pub branch: String,
    pub start_branch: Option<String>,
    pub start_sha: Option<String>,
    pub message: String,
    pub actions: Vec<Action>,
    pub author_name: Option<String>,
    pub author_email: Option<String>,
}

const EXISTS: &str = "A file with this name already exists";
const MISSING: &str = "A file with this name doesn't exist";
const DIRECTORY: &str = "A directory with this name already exists";
const CHANGED: &str =
    "You are attempting to update a file that has changed since you started editing it.";
const NOT_ON_BRANCH: &str = "You can only create or edit files when you are on a branch";

/// A path's state while the actions are applied in order.
#[derive(Debug, Clone)]
enum File {
    Stored {
        id: String,
        mode: String,
    },
    Written {
        content: Vec<u8>,
        mode: &'static str,
    },
    Directory,
}

impl File {
    fn executable(&self) -> bool {
        match self {
            File::Stored { mode, .. } => mode == "100755",
            File::Written { mode, .. } => *mode == "100755",
            File::Directory => false,
        }
    }
}

/// Makes the commit and returns it.
pub async fn commit(target: &Target<'_>, request: &CommitRequest) -> Result<Commit, Refusal> {
    let refuse = |message: &str| Refusal::Rejected(message.to_string());
    // GitLab's wording when the branch a commit would create cannot be made.
    let cannot_create = |reason: &str| {
        refuse(&format!(
            "Something went wrong when we tried to create '{}' for you: {reason}",
            request.branch
        ))
    };
    if !valid_ref_name(&request.branch) {
        return Err(cannot_create("Branch name is invalid"));
    }
    for action in &request.actions {
        let paths = std::iter::once(&action.file_path).chain(&action.previous_path);
        if paths.into_iter().any(|p| !valid_path(p)) {
            return Err(refuse(
                "Your changes could not be committed, because the file path is invalid",
            ));
        }
    }
    if request.actions.is_empty() {
        return Err(refuse("No actions given"));
    }
    let repo = target.repo;
    let branch_ref = format!("refs/heads/{}", request.branch);
    let tip = repo.ref_target(&branch_ref).await?;
    // Starting a branch from itself is just committing to it.
    let start_branch = request
        .start_branch
        .as_ref()
        .filter(|start| **start != request.branch);
    let start = match (&tip, &request.start_sha, start_branch) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err(cannot_create("Branch already exists"));
        }
        (Some(tip), None, None) => Some(tip.clone()),
        (None, Some(start), _) | (None, None, Some(start)) => {
            let revision = Revision::parse(start).ok_or_else(|| refuse(NOT_ON_BRANCH))?;
            let found = repo.resolve_commit(&revision).await?;
            Some(found.ok_or_else(|| refuse(NOT_ON_BRANCH))?)
        }
        (None, None, None) if repo.has_commits().await? => {
            return Err(refuse(NOT_ON_BRANCH));
        }
        (None, None, None) => None,
    };
    let changes = plan(target, start.as_deref(), &request.actions).await?;
    let committer = Signature {
        name: target.actor.name.clone(),
        email: target.actor.email.clone(),
    };
    let author = Signature {
        name: request
            .author_name
            .clone()
            .unwrap_or(committer.name.clone()),
        email: request
            .author_email
            .clone()
            .unwrap_or(committer.email.clone()),
    };
    let id = repo
        .write_commit(&NewCommit {
            parent: start.as_deref(),
            changes: &changes,
            message: &request.message,
            author: &author,
            committer: &committer,
        })
        .await?;
    let update = RefUpdate {
        name: branch_ref,
        old: tip,
        new: Some(id.clone()),
    };
    update_ref(target, &update).await?;
    read_commit(repo, &id).await
}

/// Applies the actions in order to the files they name, with GitLab's refusals, and returns
/// the index changes.
async fn plan(
    target: &Target<'_>,
    parent: Option<&str>,
    actions: &[Action],
) -> Result<Vec<Change>, Refusal> {
    let refuse = |message: &str| Refusal::Rejected(message.to_string());
    let mut files: HashMap<String, File> = HashMap::new();
    if let Some(parent) = parent {
        let mut paths: Vec<&str> = Vec::new();
        for action in actions {
            paths.push(&action.file_path);
            if let Some(previous) = &action.previous_path {
                paths.push(previous);
            }
        }
        for entry in target.repo.entries_at(parent, &paths).await? {
            let file = match entry.kind.as_str() {
                "tree" => File::Directory,
                _ => File::Stored {
                    id: entry.id,
                    mode: entry.mode,
                },
            };
            files.insert(entry.path, file);
        }
    }
    let mut changes = Vec::new();
    for action in actions {
        if let (Some(expected), Some(parent)) = (&action.last_commit_id, parent) {
            let path = action.previous_path.as_ref().unwrap_or(&action.file_path);
            let last = target.repo.last_commit_for(parent, path).await?;
            if last.as_deref() != Some(expected.as_str()) {
                return Err(refuse(CHANGED));
            }
        }
        let path = action.file_path.clone();
        let current = files.get(&path).cloned();
        let mode_of = |executable: bool| if executable { "100755" } else { "100644" };
        match action.kind {
            ActionKind::Create => {
                match current {
                    Some(File::Directory) => return Err(refuse(DIRECTORY)),
                    Some(_) => return Err(refuse(EXISTS)),
                    None => {}
                }
                let mode = mode_of(action.execute_filemode.unwrap_or(false));
                let content = action.content.clone().unwrap_or_default();
                changes.push(write(&path, &content, mode));
                files.insert(path, File::Written { content, mode });
            }
            ActionKind::Update => {
                let executable = match current {
                    Some(file @ (File::Stored { .. } | File::Written { .. })) => file.executable(),
                    _ => return Err(refuse(MISSING)),
                };
                let mode = mode_of(action.execute_filemode.unwrap_or(executable));
                let content = action.content.clone().unwrap_or_default();
                changes.push(write(&path, &content, mode));
                files.insert(path, File::Written { content, mode });
            }
            ActionKind::Delete => {
                if !matches!(current, Some(File::Stored { .. } | File::Written { .. })) {
                    return Err(refuse(MISSING));
                }
                files.remove(&path);
                changes.push(Change::Remove { path });
            }
            ActionKind::Chmod => {
                let executable = action.execute_filemode.unwrap_or(false);
                let file = match current {
                    Some(File::Stored { id, .. }) => File::Stored {
                        id,
                        mode: mode_of(executable).to_string(),
                    },
                    Some(File::Written { content, .. }) => File::Written {
                        content,
                        mode: mode_of(executable),
                    },
                    _ => return Err(refuse(MISSING)),
                };
                changes.push(place(&path, &file));
                files.insert(path, file);
            }
            ActionKind::Move => {
                let previous = action.previous_path.clone().unwrap_or_default();
                let moved = match files.get(&previous).cloned() {
                    Some(File::Directory) | None => return Err(refuse(MISSING)),
                    Some(file) => file,
                };
                if previous != path && current.is_some() {
                    return Err(refuse(EXISTS));
                }
                let file = match &action.content {
                    Some(content) => File::Written {
                        content: content.clone(),
                        mode: mode_of(moved.executable()),
                    },
                    None => moved,
                };
                files.remove(&previous);
                changes.push(Change::Remove { path: previous });
                changes.push(place(&path, &file));
                files.insert(path, file);
            }
        }
    }
    Ok(changes)
}

fn write(path: &str, content: &[u8], mode: &'static str) -> Change {
    Change::Write {
        path: path.to_string(),
        content: content.to_vec(),
        mode,
    }
}

/// The index change that puts `file` at `path`.
fn place(path: &str, file: &File) -> Change {
    match file {
        File::Stored { id, mode } => Change::Place {
            path: path.to_string(),
            id: id.clone(),
            mode: mode.clone(),
        },
        File::Written { content, mode } => write(path, content, mode),
        File::Directory => Change::Remove {
            path: path.to_string(),
        },
    }
}
