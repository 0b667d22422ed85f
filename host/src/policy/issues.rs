//! Who may do what with a project's issues: the issues feature's level decides who reads them
//! at all, confidential issues are for Reporters and up, their author and assignees, and
//! Reporters and owners have their own rights.

use super::{ProjectCtx, Scope};
use crate::access_level::AccessLevel;
use crate::model::issues::IssueRow;
use crate::model::users::UserRow;
use crate::services::Refusal;

/// Whether the caller may read the project's issues at all (the issues feature's level).
pub fn issues_readable(ctx: &ProjectCtx) -> bool {
    ctx.project
        .issues_access_level
        .open_to(ctx.admin || ctx.level() >= AccessLevel::Guest)
}

/// Reporter access or above: sets labels, milestones, assignees; sees confidential issues.
pub fn is_reporter(ctx: &ProjectCtx) -> bool {
    ctx.admin || ctx.level() >= AccessLevel::Reporter
}

/// Administrators and project owners: may set `iid`, `created_at`, `updated_at`; may delete.
pub fn is_owner(ctx: &ProjectCtx) -> bool {
    ctx.admin || ctx.level() >= AccessLevel::Owner
}

/// One issue the caller may read, with its project.
pub struct IssueCtx {
    pub project: ProjectCtx,
    pub issue: IssueRow,
    /// Its assignees, in order.
    pub assignees: Vec<UserRow>,
    /// The caller (none when anonymous).
    caller: Option<i64>,
}

impl IssueCtx {
    pub fn assignee_ids(&self) -> Vec<i64> {
        self.assignees.iter().map(|u| u.id).collect()
    }

    pub fn is_author_or_assignee(&self) -> bool {
        self.caller.is_some_and(|caller| {
            caller == self.issue.author_id || self.assignees.iter().any(|u| u.id == caller)
        })
    }
}

/// The issue `iid` of `project` if the caller may read it, else "Issue" not found.
pub async fn issue(scope: &Scope<'_>, project: ProjectCtx, iid: i64) -> Result<IssueCtx, Refusal> {
    let db = scope.db();
    let issue = db
        .issue_by_iid(project.project.id, iid)
        .await?
        .filter(|_| issues_readable(&project))
        .ok_or(Refusal::NotFound("Issue"))?;
    let assignees = db
        .assignees_of_issues(&[issue.id])
        .await?
        .into_iter()
        .map(|a| a.user)
        .collect();
    let ctx = IssueCtx {
        project,
        issue,
        assignees,
        caller: scope.caller.map(|c| c.user.id),
    };
    if ctx.issue.confidential && !is_reporter(&ctx.project) && !ctx.is_author_or_assignee() {
        return Err(Refusal::NotFound("Issue"));
    }
    Ok(ctx)
}
