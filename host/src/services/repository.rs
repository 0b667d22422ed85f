//! Changes the server makes to a project's repository on a caller's behalf: branches and tags
//! created and deleted, and commits (`services::commit_actions`). Every one of them moves a
//! ref through [`update_ref`], the one place that decides a ref change (the pre-receive
//! decision: protected branches, push rules), makes it with compare-and-swap, and runs what
//! follows a push (default branch, statistics). Git runs outside any database transaction.

use crate::git::commits::Commit;
use crate::git::refs::{Revision, Tagger, valid_ref_name};
use crate::git::{self, Repository};
use crate::model::projects::ProjectRow;
use crate::model::users::UserRow;
use crate::services::Refusal;
use crate::services::projects::refresh_statistics;
use crate::store::TenantDb;
use crate::store::projects::ProjectChanges;

/// The repository a change goes to, and who makes it.
pub struct Target<'a> {
    pub db: &'a TenantDb,
    pub repo: &'a Repository,
    pub project: &'a ProjectRow,
    pub actor: &'a UserRow,
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

/// The rules of `branch`. Protected branches are not stored yet, so every branch is
/// unprotected; this is the one function the protected-branches store will answer.
pub fn branch_rules(_project: &ProjectRow, _branch: &str) -> BranchRules {
    BranchRules {
        protected: false,
        developers_can_push: true,
        developers_can_merge: true,
    }
}

/// The pre-receive decision for a change the server makes: may `target.actor` move this ref?
/// The caller already has Developer and push rights on the project (the API checks them);
/// what remains is per ref, and with no protected branches stored nothing is refused yet.
fn may_update(target: &Target<'_>, update: &RefUpdate) -> Result<(), Refusal> {
    if let Some(branch) = update.name.strip_prefix("refs/heads/") {
        let rules = branch_rules(target.project, branch);
        if rules.protected && !rules.developers_can_push {
            return Err(Refusal::forbidden_because(
                "You are not allowed to push into this branch",
            ));
        }
    }
    Ok(())
}

/// Moves one ref: the pre-receive decision, the compare-and-swap, then what follows a push.
pub async fn update_ref(target: &Target<'_>, update: &RefUpdate) -> Result<(), Refusal> {
    may_update(target, update)?;
    match target
        .repo
        .update_ref(&update.name, update.new.as_deref(), update.old.as_deref())
        .await
    {
        Ok(()) => {}
        Err(git::Error::RefMoved(_)) => {
            let short = short_name(&update.name);
            return Err(Refusal::Status(
                400,
                format!("Could not update {short}. Please refresh and try again."),
            ));
        }
        Err(error) => return Err(error.into()),
    }
    after_update(target, update).await;
    Ok(())
}

/// After a ref moved: the first branch of an empty project becomes its default branch (HEAD
/// follows), and the statistics are read again. Failures are logged: the ref has moved.
async fn after_update(target: &Target<'_>, update: &RefUpdate) {
    let result = async {
        let mut default = target.project.default_branch.clone().unwrap_or_default();
        if let (Some(branch), Some(_)) = (update.name.strip_prefix("refs/heads/"), &update.new)
            && (default.is_empty() || !target.repo.branch_exists(&default).await?)
        {
            target.repo.set_head(branch).await?;
            let mut changes = ProjectChanges::default();
            changes.set("default_branch", branch);
            target
                .db
                .update_project(target.project.id, &changes, Some(target.actor.id))
                .await?;
            default = branch.to_string();
        }
        refresh_statistics(target.db, target.repo, target.project.id, &default).await?;
        anyhow::Ok(())
    }
    .await;
    if let Err(error) = result {
        tracing::warn!(
            error = format!("{error:#}"),
            "updating a project after a repository change failed"
        );
    }
}

/// `POST /projects/:id/repository/branches`.
pub async fn create_branch(
    target: &Target<'_>,
    name: &str,
    reference: &str,
) -> Result<String, Refusal> {
    if !valid_ref_name(name) {
        return Err(Refusal::Status(400, "Branch name is invalid".into()));
    }
    let invalid_ref = || Refusal::Status(400, format!("Invalid reference name: {reference}"));
    let revision = Revision::parse(reference).ok_or_else(invalid_ref)?;
    let commit = target
        .repo
        .resolve_commit(&revision)
        .await?
        .ok_or_else(invalid_ref)?;
    let full = format!("refs/heads/{name}");
    if target.repo.ref_target(&full).await?.is_some() {
        return Err(Refusal::Status(400, "Branch already exists".into()));
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
            Refusal::Status(400, _) => Refusal::Status(400, "Branch already exists".into()),
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
        return Err(Refusal::Status(
            405,
            "The default branch of a project cannot be deleted.".into(),
        ));
    }
    if branch_rules(target.project, name).protected {
        return Err(Refusal::forbidden_because(
            "Protected branch cant be removed",
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
        return Err(Refusal::Status(400, "Tag name invalid".into()));
    }
    let invalid_target = || Refusal::Status(400, format!("Target {reference} is invalid"));
    let revision = Revision::parse(reference).ok_or_else(invalid_target)?;
    let commit = target
        .repo
        .resolve_commit(&revision)
        .await?
        .ok_or_else(invalid_target)?;
    let full = format!("refs/tags/{name}");
    let exists = || Refusal::Status(409, format!("Tag {name} already exists"));
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
            Refusal::Status(400, _) => exists(),
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
