//! Merge requests as the API shows them: GitLab's `MergeRequest` entity (basic and simple
//! forms), the statuses it derives (`detailed_merge_status`), approvals and diff versions;
//! and what a page of MRs needs besides its rows (`MergeRequestBatch::load`), one statement
//! per kind of row whatever the page's length.

use std::collections::HashMap;

use serde::Serialize;
use utoipa::ToSchema;

use super::issue::{
    IssueLabel, IssueReferences, IssueViews, MilestoneView, TaskCompletionStatus, TimeStats,
    time_stats,
};
use super::user::{UserSummary, UserViews};
use super::{timestamp, timestamp_opt, unique};
use crate::model::issue_text::task_counts;
use crate::model::issues::ProjectRef;
use crate::model::labels::LabelRow;
use crate::model::merge_requests::{
    MergeRequestNoteRow, MergeRequestRow, MergeRequestState, MergeRequestVersionRow, MergeStatus,
};
use crate::model::milestones::MilestoneRow;
use crate::model::users::UserRow;
use crate::store::TenantDb;
use crate::store::merge_requests::{MergeRequestUsers, ProjectMergeRules};

#[derive(Clone, Serialize, ToSchema)]
pub struct MergeRequestView {
    pub id: i64,
    pub iid: i64,
    pub project_id: i64,
    pub title: String,
    pub description: Option<String>,
    pub state: String,
    pub created_at: String,
    pub updated_at: String,
    pub merged_by: Option<UserSummary>,
    pub merge_user: Option<UserSummary>,
    pub merged_at: Option<String>,
    pub merge_after: Option<String>,
    pub prepared_at: Option<String>,
    pub closed_by: Option<UserSummary>,
    pub closed_at: Option<String>,
    pub target_branch: String,
    pub source_branch: String,
    pub user_notes_count: i64,
    pub upvotes: i64,
    pub downvotes: i64,
    pub author: Option<UserSummary>,
    pub assignees: Vec<UserSummary>,
    pub assignee: Option<UserSummary>,
    pub reviewers: Vec<UserSummary>,
    pub source_project_id: i64,
    pub target_project_id: i64,
    pub labels: Vec<IssueLabel>,
    pub draft: bool,
    pub imported: bool,
    pub imported_from: &'static str,
    pub work_in_progress: bool,
    pub milestone: Option<MilestoneView>,
    pub merge_when_pipeline_succeeds: bool,
    pub merge_status: String,
    pub detailed_merge_status: &'static str,
    pub sha: Option<String>,
    pub merge_commit_sha: Option<String>,
    pub squash_commit_sha: Option<String>,
    /// Null until the MR is locked or unlocked (GitLab's nullable column).
    pub discussion_locked: Option<bool>,
    /// Null until merged: what the merge was asked.
    pub should_remove_source_branch: Option<bool>,
    pub force_remove_source_branch: bool,
    pub allow_collaboration: bool,
    pub allow_maintainer_to_push: bool,
    pub reference: String,
    pub references: IssueReferences,
    pub web_url: String,
    pub time_stats: TimeStats,
    pub squash: bool,
    pub squash_on_merge: bool,
    pub task_completion_status: TaskCompletionStatus,
    pub has_conflicts: bool,
    pub blocking_discussions_resolved: bool,
    /// What only a single MR shows (GitLab's `MergeRequest` over `MergeRequestBasic`).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub single: Option<SingleMergeRequest>,
}

/// The fields GitLab adds to a single merge request.
#[derive(Clone, Serialize, ToSchema)]
pub struct SingleMergeRequest {
    pub subscribed: bool,
    pub changes_count: Option<String>,
    pub latest_build_started_at: Option<String>,
    pub latest_build_finished_at: Option<String>,
    pub first_deployed_to_production_at: Option<String>,
    /// Always null: Trellis has no pipelines yet.
    #[schema(value_type = Object)]
    pub pipeline: Option<serde_json::Value>,
    #[schema(value_type = Object)]
    pub head_pipeline: Option<serde_json::Value>,
    pub diff_refs: Option<DiffRefs>,
    pub merge_error: Option<String>,
    pub first_contribution: bool,
    pub user: MergeRequestUserAbilities,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rebase_in_progress: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diverged_commits_count: Option<i64>,
}

/// `GET .../merge_ref`: the commit the merge ref points at.
#[derive(Serialize, ToSchema)]
pub struct MergeRefView {
    pub commit_id: String,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct DiffRefs {
    pub base_sha: String,
    pub head_sha: String,
    pub start_sha: String,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct MergeRequestUserAbilities {
    pub can_merge: bool,
}

/// `view=simple`.
#[derive(Clone, Serialize, ToSchema)]
pub struct MergeRequestSimpleView {
    pub id: i64,
    pub iid: i64,
    pub project_id: i64,
    pub title: String,
    pub description: Option<String>,
    pub state: String,
    pub created_at: String,
    pub updated_at: String,
    pub web_url: String,
}

/// A list entry, in the form the request asked for.
#[derive(Clone, Serialize, ToSchema)]
#[serde(untagged)]
pub enum MergeRequestListEntry {
    Full(Box<MergeRequestView>),
    Simple(MergeRequestSimpleView),
}

/// GitLab CE's approvals of a merge request (`GET .../approvals`, and the answer of
/// `approve` and `unapprove`).
#[derive(Clone, Serialize, ToSchema)]
pub struct ApprovalsView {
    pub id: i64,
    pub iid: i64,
    pub project_id: i64,
    pub title: String,
    pub description: Option<String>,
    pub state: String,
    pub created_at: String,
    pub updated_at: String,
    pub merge_status: String,
    pub approved: bool,
    pub approvals_required: i64,
    pub approvals_left: i64,
    pub require_password_to_approve: bool,
    pub approved_by: Vec<ApprovedBy>,
    pub suggested_approvers: Vec<UserSummary>,
    pub approvers: Vec<UserSummary>,
    pub approver_groups: Vec<UserSummary>,
    pub user_has_approved: bool,
    pub user_can_approve: bool,
    pub approval_rules_left: Vec<UserSummary>,
    pub has_approval_rules: bool,
    pub merge_request_approvers_available: bool,
    pub multiple_approval_rules_available: bool,
    pub invalid_approvers_rules: Vec<UserSummary>,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct ApprovedBy {
    pub user: UserSummary,
    pub approved_at: String,
}

/// A reviewer of a merge request (`GET .../reviewers`).
#[derive(Clone, Serialize, ToSchema)]
pub struct ReviewerView {
    pub user: UserSummary,
    pub state: &'static str,
    pub created_at: String,
}

/// `GET .../approval_state` in CE: no rules.
#[derive(Clone, Serialize, ToSchema)]
pub struct ApprovalStateView {
    pub approval_rules_overwritten: bool,
    pub rules: Vec<UserSummary>,
}

/// One version of an MR's diff (`GET .../versions`).
#[derive(Clone, Serialize, ToSchema)]
pub struct MergeRequestVersionView {
    pub id: i64,
    pub head_commit_sha: String,
    pub base_commit_sha: String,
    pub start_commit_sha: String,
    pub created_at: String,
    pub merge_request_id: i64,
    pub state: &'static str,
    pub real_size: String,
    pub patch_id_sha: Option<String>,
}

/// What the merge requests of one response have around them, loaded once per page.
#[derive(Default)]
pub struct MergeRequestBatch {
    pub labels: HashMap<i64, Vec<LabelRow>>,
    pub assignees: HashMap<i64, Vec<UserRow>>,
    pub reviewers: HashMap<i64, Vec<UserRow>>,
    pub users: HashMap<i64, UserRow>,
    pub milestones: HashMap<i64, MilestoneRow>,
    pub projects: HashMap<i64, ProjectRef>,
    pub merge_rules: HashMap<i64, ProjectMergeRules>,
    /// Threads waiting to be resolved, by MR (none when absent).
    pub unresolved: HashMap<i64, i64>,
}

impl MergeRequestBatch {
    /// What `rows` show besides themselves, one statement per kind of row, run concurrently.
    pub async fn load(
        db: &TenantDb,
        rows: &[MergeRequestRow],
    ) -> crate::store::Result<MergeRequestBatch> {
        let ids: Vec<i64> = rows.iter().map(|m| m.id).collect();
        let user_ids = unique(
            rows.iter()
                .flat_map(|m| [Some(m.author_id), m.merged_by_id, m.closed_by_id])
                .flatten(),
        );
        let milestone_ids = unique(rows.iter().filter_map(|m| m.milestone_id));
        let project_ids = unique(rows.iter().map(|m| m.project_id));
        let (labels, assignees, reviewers, users, milestones, projects, rules, unresolved) = tokio::try_join!(
            db.labels_of_merge_requests(&ids),
            db.users_of_merge_requests(MergeRequestUsers::Assignees, &ids),
            db.users_of_merge_requests(MergeRequestUsers::Reviewers, &ids),
            db.users_by_ids(&user_ids),
            db.milestones_by_ids(&milestone_ids),
            db.project_refs(&project_ids),
            db.merge_rules_of(&project_ids),
            db.unresolved_discussions(&ids),
        )?;
        let mut batch = MergeRequestBatch {
            users: users.into_iter().map(|u| (u.id, u)).collect(),
            milestones: milestones.into_iter().map(|m| (m.id, m)).collect(),
            projects: projects.into_iter().map(|p| (p.id, p)).collect(),
            merge_rules: rules.into_iter().collect(),
            unresolved: unresolved.into_iter().collect(),
            ..MergeRequestBatch::default()
        };
        for row in labels {
            batch
                .labels
                .entry(row.merge_request_id)
                .or_default()
                .push(row.label);
        }
        for row in assignees {
            batch
                .assignees
                .entry(row.merge_request_id)
                .or_default()
                .push(row.user);
        }
        for row in reviewers {
            batch
                .reviewers
                .entry(row.merge_request_id)
                .or_default()
                .push(row.user);
        }
        Ok(batch)
    }
}

/// How merge requests are shown in one response.
#[derive(Debug, Clone, Copy, Default)]
pub struct MergeRequestShape {
    pub with_labels_details: bool,
    pub limit_to_hours: bool,
}

pub struct MergeRequestViews<'a> {
    pub base_url: &'a str,
    pub users: UserViews<'a>,
}

impl MergeRequestViews<'_> {
    fn issue_views(&self) -> IssueViews<'_> {
        IssueViews {
            base_url: self.base_url,
            users: UserViews(self.users.0),
        }
    }

    fn user(&self, batch: &MergeRequestBatch, id: Option<i64>) -> Option<UserSummary> {
        id.and_then(|id| batch.users.get(&id))
            .map(|u| self.users.summary(u))
    }

    fn full_path(batch: &MergeRequestBatch, mr: &MergeRequestRow) -> String {
        batch
            .projects
            .get(&mr.project_id)
            .map(ProjectRef::full_path)
            .unwrap_or_default()
    }

    pub fn web_url(&self, full_path: &str, iid: i64) -> String {
        format!("{}/{full_path}/-/merge_requests/{iid}", self.base_url)
    }

    pub fn simple(
        &self,
        mr: &MergeRequestRow,
        batch: &MergeRequestBatch,
    ) -> MergeRequestSimpleView {
        MergeRequestSimpleView {
            id: mr.id,
            iid: mr.iid,
            project_id: mr.project_id,
            title: mr.title.clone(),
            description: mr.description.clone(),
            state: mr.state.to_string(),
            created_at: timestamp(mr.created_at),
            updated_at: timestamp(mr.updated_at),
            web_url: self.web_url(&Self::full_path(batch, mr), mr.iid),
        }
    }

    pub fn merge_request(
        &self,
        mr: &MergeRequestRow,
        batch: &MergeRequestBatch,
        shape: MergeRequestShape,
    ) -> MergeRequestView {
        let full_path = Self::full_path(batch, mr);
        let issues = self.issue_views();
        let labels = batch
            .labels
            .get(&mr.id)
            .map(|labels| {
                labels
                    .iter()
                    .map(|l| match shape.with_labels_details {
                        true => IssueLabel::Detail(issues.label_detail(l)),
                        false => IssueLabel::Name(l.name.clone()),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let summaries = |users: Option<&Vec<UserRow>>| -> Vec<UserSummary> {
            users
                .map(|users| users.iter().map(|u| self.users.summary(u)).collect())
                .unwrap_or_default()
        };
        let assignees = summaries(batch.assignees.get(&mr.id));
        let milestone = mr
            .milestone_id
            .and_then(|id| batch.milestones.get(&id))
            .map(|m| issues.milestone(m, batch.projects.get(&m.project_id), false));
        let merged_by = self.user(batch, mr.merged_by_id);
        let rules = batch.merge_rules.get(&mr.project_id);
        let method = rules.map_or("merge", |r| r.merge_method.as_str());
        let discussions_block = rules.is_some_and(|r| r.discussions_must_be_resolved)
            && batch.unresolved.get(&mr.id).is_some_and(|n| *n > 0);
        let (count, completed) = task_counts(mr.description.as_deref());
        let open = mr.state == MergeRequestState::Opened;
        MergeRequestView {
            id: mr.id,
            iid: mr.iid,
            project_id: mr.project_id,
            title: mr.title.clone(),
            description: mr.description.clone(),
            state: mr.state.to_string(),
            created_at: timestamp(mr.created_at),
            updated_at: timestamp(mr.updated_at),
            merge_user: merged_by.clone(),
            merged_by,
            merged_at: timestamp_opt(mr.merged_at),
            merge_after: None,
            prepared_at: Some(timestamp(mr.created_at)),
            closed_by: self.user(batch, mr.closed_by_id),
            closed_at: timestamp_opt(mr.closed_at),
            target_branch: mr.target_branch.clone(),
            source_branch: mr.source_branch.clone(),
            user_notes_count: mr.user_notes_count,
            upvotes: mr.upvotes,
            downvotes: mr.downvotes,
            author: self.user(batch, Some(mr.author_id)),
            assignee: assignees.first().cloned(),
            assignees,
            reviewers: summaries(batch.reviewers.get(&mr.id)),
            source_project_id: mr.source_project_id,
            target_project_id: mr.project_id,
            labels,
            draft: mr.draft,
            imported: false,
            imported_from: "none",
            work_in_progress: mr.draft,
            milestone,
            merge_when_pipeline_succeeds: false,
            merge_status: mr.merge_status.to_string(),
            detailed_merge_status: mr.mergeability(method, discussions_block).detailed_status(),
            sha: mr.head_sha.clone(),
            merge_commit_sha: mr.merge_commit_sha.clone(),
            squash_commit_sha: mr.squash_commit_sha.clone(),
            discussion_locked: mr.discussion_locked.then_some(true),
            should_remove_source_branch: mr.should_remove_source_branch.map(|v| v != 0),
            force_remove_source_branch: mr.force_remove_source_branch,
            allow_collaboration: false,
            allow_maintainer_to_push: false,
            reference: format!("!{}", mr.iid),
            references: IssueReferences {
                short: format!("!{}", mr.iid),
                relative: format!("!{}", mr.iid),
                full: format!("{full_path}!{}", mr.iid),
            },
            web_url: self.web_url(&full_path, mr.iid),
            time_stats: time_stats(mr.time_estimate, mr.total_time_spent, shape.limit_to_hours),
            squash: mr.squash,
            squash_on_merge: mr.squash,
            task_completion_status: TaskCompletionStatus {
                count,
                completed_count: completed,
            },
            has_conflicts: open && mr.merge_status == MergeStatus::CannotBeMerged,
            blocking_discussions_resolved: !discussions_block,
            single: None,
        }
    }

    pub fn approvals(
        &self,
        mr: &MergeRequestRow,
        approvers: &[(UserRow, i64)],
        caller: Option<i64>,
        caller_may_approve: bool,
    ) -> ApprovalsView {
        let user_has_approved = approvers.iter().any(|(u, _)| Some(u.id) == caller);
        ApprovalsView {
            id: mr.id,
            iid: mr.iid,
            project_id: mr.project_id,
            title: mr.title.clone(),
            description: mr.description.clone(),
            state: mr.state.to_string(),
            created_at: timestamp(mr.created_at),
            updated_at: timestamp(mr.updated_at),
            merge_status: mr.merge_status.to_string(),
            // CE requires no approvals: "approved" means someone has.
            approved: !approvers.is_empty(),
            approvals_required: 0,
            approvals_left: 0,
            require_password_to_approve: false,
            approved_by: approvers
                .iter()
                .map(|(user, at)| ApprovedBy {
                    user: self.users.summary(user),
                    approved_at: timestamp(*at),
                })
                .collect(),
            suggested_approvers: Vec::new(),
            approvers: Vec::new(),
            approver_groups: Vec::new(),
            user_has_approved,
            user_can_approve: caller_may_approve && !user_has_approved,
            approval_rules_left: Vec::new(),
            has_approval_rules: false,
            merge_request_approvers_available: false,
            multiple_approval_rules_available: false,
            invalid_approvers_rules: Vec::new(),
        }
    }
}

pub fn version(version: &MergeRequestVersionRow) -> MergeRequestVersionView {
    MergeRequestVersionView {
        id: version.id,
        head_commit_sha: version.head_sha.clone(),
        base_commit_sha: version.base_sha.clone(),
        start_commit_sha: version.start_sha.clone(),
        created_at: timestamp(version.created_at),
        merge_request_id: version.merge_request_id,
        state: "collected",
        real_size: String::new(),
        patch_id_sha: None,
    }
}

/// A note on a merge request (GitLab's `Note` entity, with what discussion notes add).
#[derive(Clone, Serialize, ToSchema)]
pub struct MergeRequestNoteView {
    pub id: i64,
    /// `DiscussionNote`, `DiffNote`, or null for a note on its own.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub body: String,
    pub attachment: Option<String>,
    pub author: Option<UserSummary>,
    pub created_at: String,
    pub updated_at: String,
    pub system: bool,
    pub noteable_id: i64,
    pub noteable_type: &'static str,
    pub project_id: i64,
    pub commit_id: Option<String>,
    /// Only on diff notes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Object)]
    pub position: Option<serde_json::Value>,
    pub resolvable: bool,
    /// Only on resolvable notes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_by: Option<Option<UserSummary>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_at: Option<Option<String>>,
    pub confidential: bool,
    pub internal: bool,
    pub imported: bool,
    pub imported_from: &'static str,
    pub noteable_iid: i64,
    #[schema(value_type = Object)]
    pub commands_changes: serde_json::Map<String, serde_json::Value>,
}

/// A discussion: its notes in order (GitLab's `Discussion` entity).
#[derive(Clone, Serialize, ToSchema)]
pub struct DiscussionView {
    pub id: String,
    pub individual_note: bool,
    pub notes: Vec<MergeRequestNoteView>,
}

impl MergeRequestViews<'_> {
    pub fn note(
        &self,
        note: &MergeRequestNoteRow,
        mr: &MergeRequestRow,
        users: &HashMap<i64, UserRow>,
    ) -> MergeRequestNoteView {
        let user = |id: Option<i64>| {
            id.and_then(|id| users.get(&id))
                .map(|u| self.users.summary(u))
        };
        MergeRequestNoteView {
            id: note.id,
            kind: note.note_type.clone(),
            body: note.body.clone(),
            attachment: None,
            author: user(Some(note.author_id)),
            created_at: timestamp(note.created_at),
            updated_at: timestamp(note.updated_at),
            system: note.system,
            noteable_id: mr.id,
            noteable_type: "MergeRequest",
            project_id: mr.project_id,
            commit_id: None,
            position: note
                .position
                .as_deref()
                .and_then(|p| serde_json::from_str(p).ok()),
            resolvable: note.resolvable,
            resolved: note.resolvable.then_some(note.resolved_at.is_some()),
            resolved_by: note.resolvable.then(|| user(note.resolved_by_id)),
            resolved_at: note.resolvable.then(|| timestamp_opt(note.resolved_at)),
            confidential: note.internal,
            internal: note.internal,
            imported: false,
            imported_from: "none",
            noteable_iid: mr.iid,
            commands_changes: serde_json::Map::new(),
        }
    }

    /// The discussions `notes` (oldest first) form, in the order they started.
    pub fn discussions(
        &self,
        notes: &[MergeRequestNoteRow],
        mr: &MergeRequestRow,
        users: &HashMap<i64, UserRow>,
    ) -> Vec<DiscussionView> {
        let mut discussions: Vec<DiscussionView> = Vec::new();
        let mut index: HashMap<&str, usize> = HashMap::new();
        for note in notes {
            let view = self.note(note, mr, users);
            match index.get(note.discussion_id.as_str()) {
                Some(&at) => discussions[at].notes.push(view),
                None => {
                    index.insert(&note.discussion_id, discussions.len());
                    discussions.push(DiscussionView {
                        id: note.discussion_id.clone(),
                        individual_note: note.individual_note,
                        notes: vec![view],
                    });
                }
            }
        }
        discussions
    }
}
