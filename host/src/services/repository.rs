//! Changes the server makes to a project's repository on a caller's behalf: branches and tags
//! created and deleted, and commits (`services::commit_actions`). Every one of them moves a
//! ref through [`update_ref`], the one place that decides a ref change (the pre-receive
//! decision: protected branches, push rules), makes it with compare-and-swap, and runs what
//! follows a push (default branch, statistics). Git runs outside any database transaction.

use crate::access_level::AccessLevel;
use crate::git::commits::Commit;
use crate::git::receive;
use crate::git::refs::{Revision, Tagger, valid_ref_name};
use crate::git::{self, Repository};
use crate::model::projects::ProjectRow;
use crate::model::protected_branches::ProtectedBranch;
use crate::model::users::UserRow;
use crate::services::Refusal;
use crate::services::protected_branches::{self as rules, Actor};
use crate::services::push::{Push, PushVerdict};

/// The repository a change goes to, and who makes it: `push` is the push session every
/// server-side change runs in, so it is decided and recorded as a pushed one (protected
/// branches, push rules, push events, default branch and statistics).
pub struct Target<'a> {
    pub repo: &'a Repository,
    pub project: &'a ProjectRow,
    pub actor: &'a UserRow,
    pub push: Push,
}

/// One ref change: `old` is where the ref must be now (`None`: it must not exist), `new`
/// where it goes (`None`: deleted).
#[derive(Debug, Clone)]
pub struct RefUpdate {
    /// The full name, `refs/heads/<branch>` or `refs/tags/<tag>`.
    pub name: String,
    pub old: Option<String>,
    pub new: Option<String>,
}

/// What protects a branch, as the branch API shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BranchRules {
    pub protected: bool,
    pub developers_can_push: bool,
    pub developers_can_merge: bool,
}

/// The rules of `branch` under the project's `protected` branches (`store::protected_branches`).
pub fn branch_rules(protected: &[ProtectedBranch], branch: &str) -> BranchRules {
    let developer = Actor {
        level: AccessLevel::Developer,
        admin: false,
    };
    BranchRules {
        protected: rules::matching(protected, branch).next().is_some(),
        developers_can_push: rules::allowed(protected, branch, "push", developer),
        developers_can_merge: rules::allowed(protected, branch, "merge", developer),
    }
}

/// Moves one ref: the pre-receive decision of the target's push session, the
/// compare-and-swap, then what follows a push (the session's `finish`).
pub async fn update_ref(target: &Target<'_>, update: &RefUpdate) -> Result<(), Refusal> {
    let pushed = receive::RefUpdate {
        name: update.name.clone(),
        old: update
            .old
            .clone()
            .unwrap_or_else(|| receive::ZERO_SHA.into()),
        new: update
            .new
            .clone()
            .unwrap_or_else(|| receive::ZERO_SHA.into()),
    };
    if let PushVerdict::Refuse(message) = target.push.check_server_update(&[pushed]).await? {
        return Err(Refusal::forbidden_because(message));
    }
    match target
        .repo
        .update_ref(&update.name, update.new.as_deref(), update.old.as_deref())
        .await
    {
        Ok(()) => {}
        Err(git::Error::RefMoved(_)) => {
            let short = short_name(&update.name);
            return Err(Refusal::Rejected(format!(
                "Could not update {short}. Please refresh and try again."
            )));
        }
        Err(error) => return Err(error.into()),
    }
    target.push.finish().await;
    Ok(())
}

/// `POST /projects/:id/repository/branches`.
pub async fn create_branch(
    target: &Target<'_>,
    name: &str,
    reference: &str,
) -> Result<String, Refusal> {
    if !valid_ref_name(name) {
        return Err(Refusal::Rejected("Branch name is invalid".into()));
    }
    let invalid_ref = || Refusal::Rejected(format!("Invalid reference name: {reference}"));
    let revision = Revision::parse(reference).ok_or_else(invalid_ref)?;
    let commit = target
        .repo
        .resolve_commit(&revision)
        .await?
        .ok_or_else(invalid_ref)?;
    let full = format!("refs/heads/{name}");
    if target.repo.ref_target(&full).await?.is_some() {
        return Err(Refusal::Rejected("Branch already exists".into()));
    }
    let update = RefUpdate {
        name: full,
        old: None,
        new: Some(commit.clone()),
    };
    update_ref(target, &update)
        .await
        .map_err(|refusal| match refusal {
            // Made by someone else between the check and the swap.
            Refusal::Rejected(_) => Refusal::Rejected("Branch already exists".into()),
            other => other,
        })?;
    Ok(commit)
}

/// `DELETE /projects/:id/repository/branches/:branch`.
pub async fn delete_branch(target: &Target<'_>, name: &str) -> Result<(), Refusal> {
    let full = format!("refs/heads/{name}");
    let tip = match valid_ref_name(name) {
        true => target.repo.ref_target(&full).await?,
        false => None,
    };
    let Some(tip) = tip else {
        return Err(Refusal::NotFound("Branch"));
    };
    if target.project.default_branch.as_deref() == Some(name) {
        return Err(Refusal::NotAllowed(
            "The default branch of a project cannot be deleted.".into(),
        ));
    }
    let update = RefUpdate {
        name: full,
        old: Some(tip),
        new: None,
    };
    update_ref(target, &update).await
}

/// `POST /projects/:id/repository/tags`: a lightweight tag, or an annotated one with a
/// message (tagged by the caller).
pub async fn create_tag(
    target: &Target<'_>,
    name: &str,
    reference: &str,
    message: Option<&str>,
) -> Result<(), Refusal> {
    if !valid_ref_name(name) {
        return Err(Refusal::Rejected("Tag name invalid".into()));
    }
    let invalid_target = || Refusal::Rejected(format!("Target {reference} is invalid"));
    let revision = Revision::parse(reference).ok_or_else(invalid_target)?;
    let commit = target
        .repo
        .resolve_commit(&revision)
        .await?
        .ok_or_else(invalid_target)?;
    let full = format!("refs/tags/{name}");
    let exists = || Refusal::Conflict(format!("Tag {name} already exists"));
    if target.repo.ref_target(&full).await?.is_some() {
        return Err(exists());
    }
    let object = match message.filter(|m| !m.trim().is_empty()) {
        Some(message) => {
            let tagger = Tagger {
                name: &target.actor.name,
                email: &target.actor.email,
                time: chrono::Utc::now().timestamp(),
            };
            target
                .repo
                .make_tag_object(name, &commit, message, &tagger)
                .await?
        }
        None => commit,
    };
    let update = RefUpdate {
        name: full,
        old: None,
        new: Some(object),
    };
    update_ref(target, &update)
        .await
        .map_err(|refusal| match refusal {
            Refusal::Rejected(_) => exists(),
            other => other,
        })
}

/// `DELETE /projects/:id/repository/tags/:tag_name`.
pub async fn delete_tag(target: &Target<'_>, name: &str) -> Result<(), Refusal> {
    let full = format!("refs/tags/{name}");
    let current = match valid_ref_name(name) {
        true => target.repo.ref_target(&full).await?,
        false => None,
    };
    let Some(current) = current else {
        return Err(Refusal::NotFound("Tag"));
    };
    let update = RefUpdate {
        name: full,
        old: Some(current),
        new: None,
    };
    update_ref(target, &update).await
}

/// The commit just written or found, read back for the response.
pub async fn read_commit(repo: &Repository, id: &str) -> Result<Commit, Refusal> {
    let revision = Revision::parse(id).ok_or(Refusal::NotFound("Commit"))?;
    repo.commit(&revision)
        .await?
        .ok_or(Refusal::NotFound("Commit"))
}

fn short_name(full: &str) -> &str {
    full.strip_prefix("refs/heads/")
        .or_else(|| full.strip_prefix("refs/tags/"))
        .unwrap_or(full)
}
