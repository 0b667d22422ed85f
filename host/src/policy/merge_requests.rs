//! Who may do what with a project's merge requests (GitLab's merge request policy): the
//! feature's level decides who reads them (`private`: Reporters and up, the feature's minimum
//! level in GitLab), and in a private project only Reporters and up read them (GitLab's
//! guests read merge requests of public and internal projects only); Developers open, edit and merge them (merging into a protected branch
//! only for its merge levels, decided with the push), authors edit their own, and owners
//! delete them.

use super::{ProjectCtx, Scope};
use crate::access_level::AccessLevel;
use crate::model::merge_requests::MergeRequestRow;
use crate::model::visibility::Visibility;
use crate::services::Refusal;

/// Whether the caller may read the project's merge requests at all.
pub fn merge_requests_readable(ctx: &ProjectCtx) -> bool {
    let reporter = ctx.admin || ctx.level() >= AccessLevel::Reporter;
    ctx.project.merge_requests_access_level.open_to(reporter)
        && (reporter || ctx.project.visibility != Visibility::Private)
}

/// Developer access or above: opens MRs, edits any MR's fields, approves and merges.
pub fn is_developer(ctx: &ProjectCtx) -> bool {
    ctx.admin || ctx.level() >= AccessLevel::Developer
}

/// One merge request the caller may read, with its project.
pub struct MergeRequestCtx {
    pub project: ProjectCtx,
    pub mr: MergeRequestRow,
    /// The caller (none when anonymous).
    pub caller: Option<i64>,
}

impl MergeRequestCtx {
    /// The author or a Developer: may edit the MR's title, description and state.
    pub fn may_update(&self) -> bool {
        is_developer(&self.project) || self.caller == Some(self.mr.author_id)
    }
}

/// The merge request `iid` of `project` if the caller may read it, else GitLab's bare
/// `404 Not found`.
pub async fn merge_request(
    scope: &Scope<'_>,
    project: ProjectCtx,
    iid: i64,
) -> Result<MergeRequestCtx, Refusal> {
    if !merge_requests_readable(&project) {
        return Err(Refusal::RecordNotFound);
    }
    let mr = scope
        .db()
        .merge_request_by_iid(project.project.id, iid)
        .await?
        .ok_or(Refusal::RecordNotFound)?;
    Ok(MergeRequestCtx {
        project,
        mr,
        caller: scope.caller.map(|c| c.user.id),
    })
}
