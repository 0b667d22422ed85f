//! Protected branches and tags on a push: GitLab's messages and checks.

use super::sessions::{PushOrigin, PushSession};
use crate::access_level::AccessLevel;
use crate::git;
use crate::git::receive::{self, RefUpdate};
use crate::plugins::push_rules::PushVerdict;
use crate::services::protected_branches::{self as rules};

/// A commit through the API to a branch the caller may not push to (GitLab's commit services).
const API_PUSH_PROTECTED: &str = "You are not allowed to push into this branch";
/// GitLab's refusals, as its git access checks word them.
pub const PUSH_PROTECTED: &str =
    "You are not allowed to push code to protected branches on this project.";
pub const FORCE_PUSH_PROTECTED: &str =
    "You are not allowed to force push code to a protected branch on this project.";
pub const DELETE_PROTECTED: &str = "You are not allowed to delete protected branches from this project. Only a project maintainer or owner can delete a protected branch.";
pub const DELETE_PROTECTED_NOT_WEB: &str =
    "You can only delete protected branches using the web interface.";
pub const CREATE_PROTECTED: &str =
    "You are not allowed to create protected branches on this project.";
pub const CREATE_PROTECTED_NOT_WEB: &str =
    "You can only create protected branches using the web interface and API.";
pub const DELETE_DEFAULT_BRANCH: &str = "The default branch of a project cannot be deleted.";
// GitLab's `Gitlab::Checks::TagCheck` messages.
pub const CREATE_PROTECTED_TAG: &str = "You are not allowed to create this tag as it is protected.";
pub const UPDATE_PROTECTED_TAG: &str = "Protected tags cannot be updated.";
pub const DELETE_PROTECTED_TAG: &str = "You are not allowed to delete protected tags from this project. Only a project maintainer or owner can delete a protected tag.";
pub const DELETE_PROTECTED_TAG_NOT_WEB: &str =
    "You can only delete protected tags using the web interface.";

/// GitLab's protected branch checks (`Gitlab::Checks::BranchCheck`) for each branch update:
/// the default branch may not be deleted; then, for a protected branch (any branch of an
/// empty repository while `default_branch_protection` protects its first push), no force
/// push unless allowed, creation and pushes by the levels allowed to push (creating also by
/// those allowed to merge, but only through the API), and no deletion over git.
pub async fn protected_branch_checks(
    session: &PushSession,
    updates: &[RefUpdate],
    quarantine: &[(String, String)],
) -> git::Result<PushVerdict> {
    let branches = updates.iter().filter(|u| u.branch().is_some());
    if branches.clone().next().is_none() {
        return Ok(PushVerdict::Allow);
    }
    let protected = session
        .context
        .db
        .protected_branches(session.context.project.id)
        .await
        .map_err(|e| git::Error::Failed {
            command: "pre-receive".into(),
            stderr: e.to_string(),
        })?;
    let empty = !session.context.repo.has_commits().await?;
    let actor = session.context.actor;
    let maintainer = actor.admin || actor.level >= AccessLevel::Maintainer;
    for update in branches {
        let name = update.branch().unwrap_or_default();
        let default = session.context.project.default_branch.as_deref() == Some(name);
        if update.is_deletion() && default && !empty {
            return Ok(refuse(DELETE_DEFAULT_BRANCH));
        }
        let (may_push, may_merge) = if empty
            && session
                .context
                .default_branch_protection
                .initial_push_needs_maintainer()
        {
            (maintainer, maintainer)
        } else if rules::matching(&protected, name).next().is_some() {
            (
                rules::allowed(&protected, name, "push", actor),
                rules::allowed(&protected, name, "merge", actor),
            )
        } else {
            continue;
        };
        if update.is_creation() {
            // Through the API, GitLab lets those allowed to merge create the branch too.
            let may_create = may_push || (session.context.origin.by_server() && may_merge);
            if !may_create {
                return Ok(refuse(if may_merge {
                    CREATE_PROTECTED_NOT_WEB
                } else {
                    CREATE_PROTECTED
                }));
            }
        } else if update.is_deletion() {
            if session.context.origin.by_server() && maintainer {
                continue;
            }
            return Ok(refuse(if maintainer {
                DELETE_PROTECTED_NOT_WEB
            } else {
                DELETE_PROTECTED
            }));
        } else {
            let forced = !receive::is_ancestor(
                &session.context.repo,
                &update.old,
                &update.new,
                quarantine,
                session.timeouts.fast,
            )
            .await?;
            if forced && !rules::force_push_allowed(&protected, name) {
                return Ok(refuse(FORCE_PUSH_PROTECTED));
            }
            if !(may_push || session.context.origin == PushOrigin::Merge && may_merge) {
                // The API's commits answer as GitLab's commit services do.
                return Ok(refuse(if session.context.origin.by_server() {
                    API_PUSH_PROTECTED
                } else {
                    PUSH_PROTECTED
                }));
            }
        }
    }
    Ok(PushVerdict::Allow)
}

/// GitLab's protected tag checks (`Gitlab::Checks::TagCheck#protected_tag_checks`) for each
/// update of a protected tag: never moved; deleted only by a Maintainer through the API; and
/// created (or deleted) only by the level allowed to create it.
pub async fn protected_tag_checks(
    session: &PushSession,
    updates: &[RefUpdate],
) -> git::Result<PushVerdict> {
    let tags = updates.iter().filter_map(|u| Some((u, u.tag()?)));
    if tags.clone().next().is_none() {
        return Ok(PushVerdict::Allow);
    }
    let protected = session
        .context
        .db
        .protected_tags(session.context.project.id)
        .await
        .map_err(|e| git::Error::Failed {
            command: "pre-receive".into(),
            stderr: e.to_string(),
        })?;
    let actor = session.context.actor;
    for (update, name) in tags {
        if !rules::tag_is_protected(&protected, name) {
            continue;
        }
        if update.is_deletion() {
            let maintainer = actor.admin || actor.level >= AccessLevel::Maintainer;
            if !maintainer {
                return Ok(refuse(DELETE_PROTECTED_TAG));
            }
            if !session.context.origin.by_server() {
                return Ok(refuse(DELETE_PROTECTED_TAG_NOT_WEB));
            }
        } else if !update.is_creation() {
            return Ok(refuse(UPDATE_PROTECTED_TAG));
        }
        if !rules::may_create_tag(&protected, name, actor) {
            return Ok(refuse(CREATE_PROTECTED_TAG));
        }
    }
    Ok(PushVerdict::Allow)
}

fn refuse(message: &str) -> PushVerdict {
    PushVerdict::Refuse(message.to_string())
}
