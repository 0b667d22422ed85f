//! The background work a merge request needs: the mergeability check, once per pair of heads,
//! and the refresh after a push to either branch (a new diff version, the head ref, the
//! `added N commits` note).

use super::{NOTED_COMMITS, branch_ref, diff_heads, keep_head};
use crate::git::Repository;
use crate::git::commits::LogQuery;
use crate::git::merge::MergeTree;
use crate::git::refs::Revision;
use crate::model::merge_requests::{MergeRequestRow, MergeRequestState, MergeStatus};
use crate::model::projects::ProjectRow;
use crate::services::Refusal;
use crate::services::system_notes;
use crate::store::TenantDb;
use crate::store::issue_notes::SystemNotes;
use crate::store::merge_requests::DiffHeads;

/// The mergeability check (a job): whether git can merge the MR's source into its target as
/// they are now, recorded for this pair of heads. Runs once per pair: a check for heads
/// already checked returns at once.
pub async fn check_mergeability(db: &TenantDb, repo: &Repository, id: i64) -> anyhow::Result<()> {
    let Some(mr) = db.merge_request_by_id(id).await? else {
        return Ok(());
    };
    if mr.state != MergeRequestState::Opened {
        return Ok(());
    }
    let source = repo.ref_target(&branch_ref(&mr.source_branch)).await?;
    let target = repo.ref_target(&branch_ref(&mr.target_branch)).await?;
    let (Some(source), Some(target)) = (source, target) else {
        db.record_merge_status(id, "", MergeStatus::CannotBeMerged, false)
            .await?;
        return Ok(());
    };
    let heads = format!("{source}:{target}");
    if mr.merge_status != MergeStatus::Unchecked && mr.checked_heads.as_deref() == Some(&heads) {
        return Ok(());
    }
    db.start_merge_check(id, &heads).await?;
    let status = match repo.merge_tree(&target, &source, None).await? {
        MergeTree::Clean { .. } => MergeStatus::CanBeMerged,
        MergeTree::Conflict { .. } => MergeStatus::CannotBeMerged,
    };
    let diverged = !repo.is_ancestor(&target, &source).await?;
    db.record_merge_status(id, &heads, status, diverged).await?;
    Ok(())
}

/// After a push to `branch` of `project` by `pusher_id`: each open MR from or into it gets a
/// new diff version when its heads moved (and its head ref follows the source, with an
/// `added N commits` note when the source moved); returns the MRs to check again.
pub async fn refresh_after_push(
    db: &TenantDb,
    repo: &Repository,
    project: &ProjectRow,
    branch: &str,
    pusher_id: i64,
) -> anyhow::Result<Vec<i64>> {
    let mut to_check = Vec::new();
    let open = db.open_merge_requests_on_branch(project.id, branch).await?;
    if open.is_empty() {
        return Ok(to_check);
    }
    let namespace = db.namespace_by_id(project.namespace_id).await?;
    let project_path = format!(
        "{}/{}",
        namespace.map(|n| n.full_path).unwrap_or_default(),
        project.path
    );
    for mr in open {
        let source = repo.ref_target(&branch_ref(&mr.source_branch)).await?;
        let target = repo.ref_target(&branch_ref(&mr.target_branch)).await?;
        let (Some(source), Some(target)) = (source, target) else {
            to_check.push(mr.id);
            continue;
        };
        let moved =
            mr.head_sha.as_deref() != Some(&source) || mr.start_sha.as_deref() != Some(&target);
        // A target that now holds the source is this MR being merged: its diff stays.
        if moved
            && !repo.is_ancestor(&source, &target).await?
            && let Some(diff) = diff_heads(repo, &source, &target)
                .await
                .map_err(refusal_error)?
        {
            let added = match mr.head_sha.as_deref() {
                Some(old) if old != source => added_commits(repo, &mr, &diff).await?,
                _ => Vec::new(),
            };
            let notes = |version_id: i64| {
                let mut notes = SystemNotes::by(pusher_id);
                if !added.is_empty() {
                    let compare = mr.head_sha.as_deref().map(|old| {
                        format!(
                            "/{project_path}/-/merge_requests/{}/diffs?diff_id={version_id}&start_sha={old}",
                            mr.iid
                        )
                    });
                    notes.push(system_notes::added_commits(&added, compare.as_deref()));
                }
                notes
            };
            db.record_merge_request_version(mr.id, &diff, notes).await?;
            keep_head(repo, &mr, &source).await;
        }
        to_check.push(mr.id);
    }
    Ok(to_check)
}

/// The commits (short id, title; oldest first) the MR's new version has that its previous
/// one did not.
async fn added_commits(
    repo: &Repository,
    mr: &MergeRequestRow,
    diff: &DiffHeads,
) -> anyhow::Result<Vec<(String, String)>> {
    let commits = |head: String, base: String| async move {
        let revision = Revision::parse(&head);
        let query = LogQuery {
            revision: revision.as_ref(),
            exclude: Some(&base),
            limit: NOTED_COMMITS,
            reverse: true,
            ..LogQuery::default()
        };
        repo.log(&query).await
    };
    let before: Vec<String> = match (&mr.head_sha, &mr.base_sha) {
        (Some(head), Some(base)) => commits(head.clone(), base.clone())
            .await?
            .into_iter()
            .map(|c| c.id)
            .collect(),
        _ => Vec::new(),
    };
    Ok(commits(diff.head_sha.clone(), diff.base_sha.clone())
        .await?
        .into_iter()
        .filter(|c| !before.contains(&c.id))
        .map(|c| (c.id[..8.min(c.id.len())].to_string(), c.title().to_string()))
        .collect())
}

fn refusal_error(refusal: Refusal) -> anyhow::Error {
    anyhow::anyhow!("{}", refusal.message())
}
