//! The merge itself, as GitLab's `MergeService` makes it (by the project's merge method, squash
//! and commit templates, on the target's current head, the branch moved through the one place
//! for ref changes), the merge ref, and the rebase.

use super::{branch_head, branch_ref};
use crate::git::Repository;
use crate::git::merge::{MergeTree, TreeCommit};
use crate::git::write::Signature;
use crate::model::merge_requests::{MergeRequestRow, MergeRequestState};
use crate::services::Refusal;
use crate::services::repository::{self as writes, RefUpdate, Target};
use crate::store::TenantDb;
use crate::store::merge_requests::MergeRecord;

/// `PUT /projects/:id/merge_requests/:iid/merge`.
#[derive(Debug, Default)]
pub struct MergeInput {
    pub merge_commit_message: Option<String>,
    pub squash_commit_message: Option<String>,
    pub squash: Option<bool>,
    pub should_remove_source_branch: Option<bool>,
    /// The source head the caller saw: the merge is refused if it moved.
    pub sha: Option<String>,
}

/// The project settings a merge honours.
#[derive(Debug, Clone)]
pub struct MergeSettings {
    /// `merge`, `rebase_merge` or `ff`.
    pub merge_method: String,
    /// `never`, `always`, `default_on` or `default_off`.
    pub squash_option: String,
    pub merge_commit_template: Option<String>,
    pub squash_commit_template: Option<String>,
    pub only_allow_merge_if_all_discussions_are_resolved: bool,
    /// Merging into the default branch closes the issues the MR names.
    pub autoclose_referenced_issues: bool,
}

impl MergeSettings {
    pub fn of(settings: &serde_json::Map<String, serde_json::Value>) -> MergeSettings {
        use crate::model::project_settings::setting;
        let text = |key: &str| setting(settings, key).as_str().map(str::to_string);
        MergeSettings {
            merge_method: text("merge_method").unwrap_or_else(|| "merge".into()),
            squash_option: text("squash_option").unwrap_or_else(|| "default_off".into()),
            merge_commit_template: text("merge_commit_template").filter(|t| !t.is_empty()),
            squash_commit_template: text("squash_commit_template").filter(|t| !t.is_empty()),
            only_allow_merge_if_all_discussions_are_resolved: setting(
                settings,
                "only_allow_merge_if_all_discussions_are_resolved",
            )
            .as_bool()
            .unwrap_or(false),
            autoclose_referenced_issues: setting(settings, "autoclose_referenced_issues")
                .as_bool()
                .unwrap_or(true),
        }
    }

    /// Whether a merge squashes, given what the MR and the request ask.
    pub(super) fn squashes(&self, asked: bool) -> bool {
        match self.squash_option.as_str() {
            "never" => false,
            "always" => true,
            _ => asked,
        }
    }
}

/// What a merge needs besides the MR: the project's settings, its full path (for the
/// message), and who merges into which repository.
pub struct MergeContext<'a> {
    pub target: &'a Target<'a>,
    pub settings: &'a MergeSettings,
    pub project_full_path: &'a str,
    /// The caller may merge into the target branch: a Developer, and one of its merge levels
    /// when it is protected (the push decides again, with the push rules).
    pub may_merge: bool,
}

/// GitLab's default merge commit message (`MergeRequest#default_merge_commit_message`), or
/// the project's template with its variables filled in.
fn merge_commit_message(
    mr: &MergeRequestRow,
    settings: &MergeSettings,
    project_full_path: &str,
) -> String {
    let reference = format!("{project_full_path}!{}", mr.iid);
    match &settings.merge_commit_template {
        Some(template) => fill_template(template, mr, &reference),
        None => format!(
            "Merge branch '{}' into '{}'\n\n{}\n\nSee merge request {reference}",
            mr.source_branch, mr.target_branch, mr.title
        ),
    }
}

fn squash_commit_message(mr: &MergeRequestRow, ctx: &MergeContext<'_>) -> String {
    let reference = format!("{}!{}", ctx.project_full_path, mr.iid);
    match &ctx.settings.squash_commit_template {
        Some(template) => fill_template(template, mr, &reference),
        None => mr.title.clone(),
    }
}

/// The variables GitLab's commit templates know that Trellis can fill.
fn fill_template(template: &str, mr: &MergeRequestRow, reference: &str) -> String {
    template
        .replace("%{source_branch}", &mr.source_branch)
        .replace("%{target_branch}", &mr.target_branch)
        .replace("%{title}", &mr.title)
        .replace(
            "%{description}",
            mr.description.as_deref().unwrap_or_default(),
        )
        .replace("%{reference}", reference)
        .replace("%{issues}", "")
}

/// Merges `mr` as GitLab's `MergeService` does, by the merge method of the project, and
/// returns the merged MR. Refusals follow GitLab's API: 405 when the MR cannot be merged at
/// all (not open, a draft), 401 for a caller who may not merge, 409 for a stale `sha`, 406
/// when git cannot make the merge (a conflict, or a fast-forward that is not one).
pub async fn merge(
    db: &TenantDb,
    mr: &MergeRequestRow,
    ctx: &MergeContext<'_>,
    input: &MergeInput,
) -> Result<MergeRequestRow, Refusal> {
    if mr.state != MergeRequestState::Opened || mr.draft {
        return Err(Refusal::NotAllowed("405 Method Not Allowed".into()));
    }
    if ctx
        .settings
        .only_allow_merge_if_all_discussions_are_resolved
        && !db.unresolved_discussions(&[mr.id]).await?.is_empty()
    {
        return Err(Refusal::NotAllowed("405 Method Not Allowed".into()));
    }
    if !ctx.may_merge {
        return Err(Refusal::Unauthorized);
    }
    let repo = ctx.target.repo;
    let cannot = || Refusal::NotAcceptable("Branch cannot be merged".into());
    let source_head = branch_head(repo, &mr.source_branch)
        .await?
        .ok_or_else(cannot)?;
    if let Some(sha) = &input.sha
        && *sha != source_head
    {
        return Err(Refusal::Conflict(format!(
            "SHA does not match HEAD of source branch: {source_head}"
        )));
    }
    let target_head = branch_head(repo, &mr.target_branch)
        .await?
        .ok_or_else(cannot)?;
    let merger = Signature {
        name: ctx.target.actor.name.clone(),
        email: ctx.target.actor.email.clone(),
    };
    let method = ctx.settings.merge_method.as_str();
    let fast_forward = repo.is_ancestor(&target_head, &source_head).await?;
    if method != "merge" && !fast_forward {
        return Err(cannot());
    }
    // The squash commit: the source's tree on the merge base, authored by the MR's author.
    let squash = ctx.settings.squashes(input.squash.unwrap_or(mr.squash));
    let mut squash_commit_sha = None;
    let mut tip = source_head.clone();
    if squash {
        let base = repo
            .merge_base(&[&target_head, &source_head])
            .await?
            .ok_or_else(cannot)?;
        // One commit is its own squash (GitLab skips a squash that would change nothing).
        let commits = repo.commits_to_replay(&base, &source_head).await?;
        if commits.len() == 1 {
            squash_commit_sha = Some(source_head.clone());
        } else {
            let author = author_signature(db, mr.author_id)
                .await?
                .unwrap_or(merger.clone());
            let message = input
                .squash_commit_message
                .clone()
                .unwrap_or_else(|| squash_commit_message(mr, ctx));
            let tree = repo.tree_of(&source_head).await?;
            tip = repo
                .commit_tree(&TreeCommit {
                    tree: &tree,
                    parents: &[&base],
                    message: &with_newline(&message),
                    author: &author,
                    committer: &merger,
                })
                .await?;
            squash_commit_sha = Some(tip.clone());
        }
    }
    let new_target = if method == "ff" {
        tip.clone()
    } else {
        let tree = match repo.merge_tree(&target_head, &tip, None).await? {
            MergeTree::Clean { tree } => tree,
            MergeTree::Conflict { .. } => return Err(cannot()),
        };
        let message = input
            .merge_commit_message
            .clone()
            .unwrap_or_else(|| merge_commit_message(mr, ctx.settings, ctx.project_full_path));
        repo.commit_tree(&TreeCommit {
            tree: &tree,
            parents: &[&target_head, &tip],
            message: &with_newline(&message),
            author: &merger,
            committer: &merger,
        })
        .await?
    };
    let update = RefUpdate {
        name: branch_ref(&mr.target_branch),
        old: Some(target_head),
        new: Some(new_target.clone()),
    };
    writes::update_ref(ctx.target, &update).await?;
    let remove = input
        .should_remove_source_branch
        .unwrap_or(mr.force_remove_source_branch);
    let record = MergeRecord {
        merged_by_id: ctx.target.actor.id,
        merge_commit_sha: Some(new_target),
        squash_commit_sha,
        remove_source_branch: remove,
        squash,
    };
    let merged = db
        .record_merge(mr, &record)
        .await?
        .ok_or_else(|| Refusal::NotAllowed("405 Method Not Allowed".into()))?;
    if ctx.settings.autoclose_referenced_issues
        && ctx.target.project.default_branch.as_deref() == Some(mr.target_branch.as_str())
    {
        close_issues(db, &merged, ctx.target.actor.id).await?;
    }
    if remove && let Err(refusal) = writes::delete_branch(ctx.target, &mr.source_branch).await {
        tracing::info!(
            mr = mr.id,
            refusal = refusal.message(),
            "the source branch of a merged merge request was kept"
        );
    }
    Ok(merged)
}

/// Closes the open issues `mr` names, as merged by `closer`.
async fn close_issues(db: &TenantDb, mr: &MergeRequestRow, closer: i64) -> Result<(), Refusal> {
    let ids = db.closing_issue_ids(mr.id).await?;
    for issue in db.issues_by_ids(&ids).await? {
        crate::services::issues::close_by_merge_request(db, &issue, closer, mr.iid).await?;
    }
    Ok(())
}

fn with_newline(message: &str) -> String {
    format!("{}\n", message.trim_end_matches('\n'))
}

/// GitLab's merge ref (`refs/merge-requests/<iid>/merge`, `MergeToRefService`): the merge
/// commit the MR would make now, by its author, written without moving any branch. `None`
/// when it cannot be merged (not open, a branch gone, or a conflict).
pub async fn write_merge_ref(
    db: &TenantDb,
    repo: &Repository,
    mr: &MergeRequestRow,
    settings: &MergeSettings,
    project_full_path: &str,
) -> Result<Option<String>, Refusal> {
    if mr.state != MergeRequestState::Opened {
        return Ok(None);
    }
    let source = branch_head(repo, &mr.source_branch).await?;
    let target = branch_head(repo, &mr.target_branch).await?;
    let (Some(source), Some(target)) = (source, target) else {
        return Ok(None);
    };
    let tree = match repo.merge_tree(&target, &source, None).await? {
        MergeTree::Clean { tree } => tree,
        MergeTree::Conflict { .. } => return Ok(None),
    };
    let Some(author) = author_signature(db, mr.author_id).await? else {
        return Ok(None);
    };
    let message = merge_commit_message(mr, settings, project_full_path);
    let commit = repo
        .commit_tree(&TreeCommit {
            tree: &tree,
            parents: &[&target, &source],
            message: &with_newline(&message),
            author: &author,
            committer: &author,
        })
        .await?;
    repo.set_ref(&format!("refs/merge-requests/{}/merge", mr.iid), &commit)
        .await?;
    Ok(Some(commit))
}

async fn author_signature(db: &TenantDb, user_id: i64) -> Result<Option<Signature>, Refusal> {
    Ok(db.user_by_id(user_id).await?.map(|u| Signature {
        name: u.name,
        email: u.email,
    }))
}

/// Rebases `mr`'s source branch onto its target (a job, GitLab's `RebaseService`): the
/// source's commits replayed on the target's head, the branch moved as a push by `user`.
/// A conflict leaves the branch as it was and records GitLab's message in `merge_error`.
pub async fn rebase(
    db: &TenantDb,
    target: &Target<'_>,
    mr: &MergeRequestRow,
) -> anyhow::Result<()> {
    let repo = target.repo;
    let outcome = async {
        let source = branch_head(repo, &mr.source_branch)
            .await?
            .ok_or_else(|| Refusal::Rejected("Source branch does not exist".into()))?;
        let onto = branch_head(repo, &mr.target_branch)
            .await?
            .ok_or_else(|| Refusal::Rejected("Target branch does not exist".into()))?;
        let base = repo
            .merge_base(&[&onto, &source])
            .await?
            .ok_or_else(|| Refusal::Rejected("Rebase failed: no common ancestor".into()))?;
        if base == onto {
            return Ok(());
        }
        let commits = repo.commits_to_replay(&base, &source).await?;
        let committer = Signature {
            name: target.actor.name.clone(),
            email: target.actor.email.clone(),
        };
        let rebased = repo
            .replay(&onto, &commits, &committer)
            .await?
            .map_err(|_| {
                Refusal::Rejected(
                    "Rebase failed: Rebase locally, resolve all conflicts, then push the branch."
                        .into(),
                )
            })?;
        let update = RefUpdate {
            name: branch_ref(&mr.source_branch),
            old: Some(source),
            new: Some(rebased),
        };
        writes::update_ref(target, &update).await
    }
    .await;
    let error = outcome.err().map(|refusal| refusal.message());
    db.set_rebase_in_progress(mr.id, false, error.as_deref())
        .await?;
    Ok(())
}
