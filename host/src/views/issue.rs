//! Issues as the API shows them: the spec's Issue and Todo shapes, time stats, labels,
//! milestones, notes and award emoji; how `IssueViews` fills them from rows; and what a page
//! of issues needs besides its rows (`IssueBatch::load`: labels, assignees, users, milestones,
//! projects), one statement each whatever the page's length. Durations and task lists are
//! read by `model::issue_text`.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::merge_request::MergeRequestView;
use super::timestamp;
use super::timestamp_opt;
use super::unique;
use super::user::{UserSummary, UserViews};
use crate::model::issue_notes::{AwardRow, NoteRow, TodoRow};
use crate::model::issue_text::{human_duration, task_counts};
use crate::model::issues::{IssueRow, ProjectRef};
use crate::model::labels::{LabelCounts, LabelRow};
use crate::model::milestones::MilestoneRow;
use crate::model::noteables::Noteable;
use crate::model::users::UserRow;
use crate::store::TenantDb;
use crate::store::projects::Viewer;

#[derive(Clone, Serialize, ToSchema)]
pub struct IssueView {
    pub id: i64,
    pub iid: i64,
    pub project_id: i64,
    pub title: String,
    pub description: Option<String>,
    pub state: String,
    pub created_at: String,
    pub updated_at: String,
    pub closed_at: Option<String>,
    pub closed_by: Option<UserSummary>,
    pub labels: Vec<IssueLabel>,
    pub milestone: Option<MilestoneView>,
    pub assignees: Vec<UserSummary>,
    pub author: Option<UserSummary>,
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The first assignee, GitLab's deprecated single-assignee field.
    pub assignee: Option<UserSummary>,
    pub user_notes_count: i64,
    /// Always 0: merge requests do not link issues yet.
    pub merge_requests_count: i64,
    pub upvotes: i64,
    pub downvotes: i64,
    pub due_date: Option<String>,
    pub confidential: bool,
    pub discussion_locked: bool,
    pub issue_type: &'static str,
    pub web_url: String,
    pub time_stats: TimeStats,
    pub task_completion_status: TaskCompletionStatus,
    pub has_tasks: bool,
    /// Only when the description has a task list, as GitLab shows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_status: Option<String>,
    #[serde(rename = "_links")]
    pub links: IssueLinks,
    pub references: IssueReferences,
    pub severity: &'static str,
    pub moved_to_id: Option<i64>,
    pub imported: bool,
    pub imported_from: &'static str,
    pub service_desk_reply_to: Option<String>,
    /// Only in single issues, as GitLab shows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscribed: Option<bool>,
}

/// A label of an issue: its name, or its details with `with_labels_details`.
#[derive(Clone, Serialize, ToSchema)]
#[serde(untagged)]
pub enum IssueLabel {
    Name(String),
    Detail(LabelDetail),
}

#[derive(Clone, Serialize, ToSchema)]
pub struct TaskCompletionStatus {
    pub count: i64,
    pub completed_count: i64,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct IssueLinks {
    #[serde(rename = "self")]
    pub this: String,
    pub notes: String,
    pub award_emoji: String,
    pub project: String,
    /// Always null: Trellis does not close issues as duplicates.
    pub closed_as_duplicate_of: Option<String>,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct IssueReferences {
    pub short: String,
    pub relative: String,
    pub full: String,
}

#[derive(Serialize, ToSchema)]
pub struct TodoView {
    pub id: i64,
    pub project: TodoProject,
    pub author: Option<UserSummary>,
    pub action_name: String,
    pub target_type: &'static str,
    pub target: TodoTarget,
    pub target_url: String,
    pub body: String,
    pub state: String,
    pub created_at: String,
}

/// What a to-do item is about, in its single form.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum TodoTarget {
    Issue(Box<IssueView>),
    MergeRequest(Box<MergeRequestView>),
}

/// The project a todo is in, as GitLab's todos show it.
#[derive(Serialize, ToSchema)]
pub struct TodoProject {
    pub id: i64,
    pub name: String,
    pub name_with_namespace: String,
    pub path: String,
    pub path_with_namespace: String,
}

/// The client an issue was created from (administrators only).
#[derive(Serialize, ToSchema)]
pub struct UserAgentDetailView {
    pub user_agent: String,
    pub ip_address: String,
    /// Whether a spam check passed the issue's text.
    pub spam_filter_submitted: bool,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct TimeStats {
    pub time_estimate: i64,
    pub total_time_spent: i64,
    pub human_time_estimate: Option<String>,
    pub human_total_time_spent: Option<String>,
}

pub fn time_stats(estimate: i64, spent: i64, limit_to_hours: bool) -> TimeStats {
    TimeStats {
        time_estimate: estimate,
        total_time_spent: spent,
        human_time_estimate: human_duration(estimate, limit_to_hours),
        human_total_time_spent: human_duration(spent, limit_to_hours),
    }
}

/// A label as issues show it with `with_labels_details`.
#[derive(Clone, Serialize, ToSchema)]
pub struct LabelDetail {
    pub id: i64,
    pub name: String,
    pub color: String,
    pub description: Option<String>,
    pub description_html: String,
    pub text_color: &'static str,
}

/// A label of the labels API; the counts come with `with_counts`.
#[derive(Clone, Serialize, ToSchema)]
pub struct LabelView {
    #[serde(flatten)]
    pub detail: LabelDetail,
    pub priority: Option<i64>,
    pub is_project_label: bool,
    pub subscribed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_issues_count: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed_issues_count: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_merge_requests_count: Option<i64>,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct MilestoneView {
    pub id: i64,
    pub iid: i64,
    pub project_id: i64,
    pub title: String,
    pub description: Option<String>,
    pub state: String,
    pub created_at: String,
    pub updated_at: String,
    pub due_date: Option<String>,
    pub start_date: Option<String>,
    pub expired: bool,
    pub web_url: Option<String>,
    /// Only in single issues, as the spec shows it (GitLab's `Milestone` has no `closed_at`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed_at: Option<Option<String>>,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct NoteView {
    pub id: i64,
    /// Always null: issue notes are not diff notes.
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
    pub resolvable: bool,
    pub confidential: bool,
    pub internal: bool,
    /// Always false and `none`: Trellis imports no notes.
    pub imported: bool,
    pub imported_from: &'static str,
    pub noteable_iid: i64,
    #[schema(value_type = Object)]
    pub commands_changes: Map<String, Value>,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct AwardView {
    pub id: i64,
    pub name: String,
    pub user: Option<UserSummary>,
    pub created_at: String,
    pub updated_at: String,
    pub awardable_id: i64,
    pub awardable_type: &'static str,
    /// Always null: only custom emoji have a URL, and Trellis has none.
    pub url: Option<String>,
}

/// A label description as GitLab's single-line Markdown renders plain text: HTML-escaped,
/// with no paragraph around it. Trellis renders no Markdown, so markup stays literal text.
fn text_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// GitLab's label text color: dark on light backgrounds, white otherwise.
pub fn text_color(color: &str) -> &'static str {
    let hex = color.trim_start_matches('#');
    let channel = |i: usize| {
        let part = if hex.len() == 3 {
            hex.get(i..i + 1).map(|c| c.repeat(2))
        } else {
            hex.get(i * 2..i * 2 + 2).map(str::to_string)
        };
        part.and_then(|p| u32::from_str_radix(&p, 16).ok())
            .unwrap_or(0)
    };
    if channel(0) + channel(1) + channel(2) > 500 {
        "#333333"
    } else {
        "#FFFFFF"
    }
}

/// What the issues of one response have around them, loaded once per page.
#[derive(Default)]
pub struct IssueBatch {
    pub labels: HashMap<i64, Vec<LabelRow>>,
    pub assignees: HashMap<i64, Vec<UserRow>>,
    pub users: HashMap<i64, UserRow>,
    pub milestones: HashMap<i64, MilestoneRow>,
    pub projects: HashMap<i64, ProjectRef>,
    pub subscribed: Option<Vec<i64>>,
}

impl IssueBatch {
    /// What `rows` show besides themselves, one statement per kind of row (none for a kind
    /// no issue has), run concurrently; with `subscribed`, which of them `viewer` is
    /// subscribed to (single issues show it).
    pub async fn load(
        db: &TenantDb,
        viewer: Viewer,
        rows: &[IssueRow],
        subscribed: bool,
    ) -> crate::store::Result<IssueBatch> {
        let ids: Vec<i64> = rows.iter().map(|i| i.id).collect();
        let user_ids = unique(
            rows.iter()
                .flat_map(|i| [Some(i.author_id), i.closed_by_id])
                .flatten(),
        );
        let milestone_ids = unique(rows.iter().filter_map(|i| i.milestone_id));
        let project_ids = unique(rows.iter().map(|i| i.project_id));
        let (labels, assignees, users, milestones, projects, subscribed) = tokio::try_join!(
            db.labels_of_issues(&ids),
            db.assignees_of_issues(&ids),
            db.users_by_ids(&user_ids),
            db.milestones_by_ids(&milestone_ids),
            db.project_refs(&project_ids),
            async {
                match (subscribed, viewer.user_id()) {
                    (false, _) => Ok(None),
                    (true, Some(user)) => db
                        .subscribed_among(user, Noteable::Issue, &ids)
                        .await
                        .map(Some),
                    (true, None) => Ok(Some(Vec::new())),
                }
            },
        )?;
        let mut batch = IssueBatch {
            users: users.into_iter().map(|u| (u.id, u)).collect(),
            milestones: milestones.into_iter().map(|m| (m.id, m)).collect(),
            projects: projects.into_iter().map(|p| (p.id, p)).collect(),
            subscribed,
            ..IssueBatch::default()
        };
        for row in labels {
            batch
                .labels
                .entry(row.issue_id)
                .or_default()
                .push(row.label);
        }
        for row in assignees {
            batch
                .assignees
                .entry(row.issue_id)
                .or_default()
                .push(row.user);
        }
        Ok(batch)
    }
}

/// How issues are shown in one response.
#[derive(Debug, Clone, Copy, Default)]
pub struct IssueShape {
    pub single: bool,
    pub with_labels_details: bool,
    pub limit_to_hours: bool,
}

pub struct IssueViews<'a> {
    pub base_url: &'a str,
    pub users: UserViews<'a>,
}

impl IssueViews<'_> {
    fn user(&self, user: Option<&UserRow>) -> Option<UserSummary> {
        user.map(|u| self.users.summary(u))
    }

    pub fn label_detail(&self, label: &LabelRow) -> LabelDetail {
        LabelDetail {
            id: label.id,
            name: label.name.clone(),
            color: label.color.clone(),
            description: label.description.clone(),
            description_html: label
                .description
                .as_deref()
                .map(text_html)
                .unwrap_or_default(),
            text_color: text_color(&label.color),
        }
    }

    /// A label of the labels API.
    pub fn label(
        &self,
        label: &LabelRow,
        counts: Option<LabelCounts>,
        subscribed: bool,
    ) -> LabelView {
        LabelView {
            detail: self.label_detail(label),
            priority: label.priority,
            is_project_label: true,
            subscribed,
            open_issues_count: counts.map(|c| c.open_issues_count),
            closed_issues_count: counts.map(|c| c.closed_issues_count),
            open_merge_requests_count: counts.map(|_| 0),
        }
    }

    pub fn milestone(
        &self,
        milestone: &MilestoneRow,
        project: Option<&ProjectRef>,
        with_closed_at: bool,
    ) -> MilestoneView {
        let today = chrono::Utc::now()
            .date_naive()
            .format("%Y-%m-%d")
            .to_string();
        MilestoneView {
            id: milestone.id,
            iid: milestone.iid,
            project_id: milestone.project_id,
            title: milestone.title.clone(),
            description: milestone.description.clone(),
            state: milestone.state.to_string(),
            created_at: timestamp(milestone.created_at),
            updated_at: timestamp(milestone.updated_at),
            due_date: milestone.due_date.clone(),
            start_date: milestone.start_date.clone(),
            expired: milestone
                .due_date
                .as_deref()
                .is_some_and(|d| d < today.as_str()),
            web_url: project.map(|p| {
                format!(
                    "{}/{}/-/milestones/{}",
                    self.base_url,
                    p.full_path(),
                    milestone.iid
                )
            }),
            closed_at: with_closed_at.then(|| timestamp_opt(milestone.closed_at)),
        }
    }

    pub fn issue(&self, issue: &IssueRow, batch: &IssueBatch, shape: IssueShape) -> IssueView {
        let project = batch.projects.get(&issue.project_id);
        let full_path = project.map(ProjectRef::full_path).unwrap_or_default();
        let api = format!(
            "{}/api/v4/projects/{}/issues/{}",
            self.base_url, issue.project_id, issue.iid
        );
        let labels = batch
            .labels
            .get(&issue.id)
            .map(|labels| {
                labels
                    .iter()
                    .map(|l| {
                        if shape.with_labels_details {
                            IssueLabel::Detail(self.label_detail(l))
                        } else {
                            IssueLabel::Name(l.name.clone())
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        let assignees: Vec<UserSummary> = batch
            .assignees
            .get(&issue.id)
            .map(|users| users.iter().map(|u| self.users.summary(u)).collect())
            .unwrap_or_default();
        let milestone = issue
            .milestone_id
            .and_then(|id| batch.milestones.get(&id))
            .map(|m| self.milestone(m, batch.projects.get(&m.project_id), shape.single));
        let (count, completed) = task_counts(issue.description.as_deref());
        IssueView {
            id: issue.id,
            iid: issue.iid,
            project_id: issue.project_id,
            title: issue.title.clone(),
            description: issue.description.clone(),
            state: issue.state.to_string(),
            created_at: timestamp(issue.created_at),
            updated_at: timestamp(issue.updated_at),
            closed_at: timestamp_opt(issue.closed_at),
            closed_by: self.user(issue.closed_by_id.and_then(|id| batch.users.get(&id))),
            labels,
            milestone,
            assignee: assignees.first().cloned(),
            assignees,
            author: self.user(batch.users.get(&issue.author_id)),
            kind: "ISSUE",
            user_notes_count: issue.user_notes_count,
            merge_requests_count: 0,
            upvotes: issue.upvotes,
            downvotes: issue.downvotes,
            due_date: issue.due_date.clone(),
            confidential: issue.confidential,
            discussion_locked: issue.discussion_locked,
            issue_type: "issue",
            web_url: format!("{}/{full_path}/-/issues/{}", self.base_url, issue.iid),
            time_stats: time_stats(
                issue.time_estimate,
                issue.total_time_spent,
                shape.limit_to_hours,
            ),
            task_completion_status: TaskCompletionStatus {
                count,
                completed_count: completed,
            },
            has_tasks: count > 0,
            task_status: (count > 0).then(|| {
                format!(
                    "{completed} of {count} checklist {} completed",
                    if count == 1 { "item" } else { "items" }
                )
            }),
            links: IssueLinks {
                notes: format!("{api}/notes"),
                award_emoji: format!("{api}/award_emoji"),
                project: format!("{}/api/v4/projects/{}", self.base_url, issue.project_id),
                closed_as_duplicate_of: None,
                this: api,
            },
            references: IssueReferences {
                short: format!("#{}", issue.iid),
                relative: format!("#{}", issue.iid),
                full: format!("{full_path}#{}", issue.iid),
            },
            severity: "UNKNOWN",
            moved_to_id: issue.moved_to_id,
            imported: false,
            imported_from: "none",
            service_desk_reply_to: None,
            subscribed: batch
                .subscribed
                .as_ref()
                .map(|subscribed| subscribed.contains(&issue.id)),
        }
    }

    pub fn note(&self, note: &NoteRow, author: Option<&UserRow>, issue: &IssueRow) -> NoteView {
        NoteView {
            id: note.id,
            kind: None,
            body: note.body.clone(),
            attachment: None,
            author: self.user(author),
            created_at: timestamp(note.created_at),
            updated_at: timestamp(note.updated_at),
            system: note.system,
            noteable_id: issue.id,
            noteable_type: "Issue",
            project_id: issue.project_id,
            resolvable: false,
            confidential: note.internal,
            internal: note.internal,
            imported: false,
            imported_from: "none",
            noteable_iid: issue.iid,
            commands_changes: Map::new(),
        }
    }

    /// An award on `on` itself or on one of its notes.
    pub fn award(&self, award: &AwardRow, on: Noteable, user: Option<&UserRow>) -> AwardView {
        let on_noteable = award.note_id == 0;
        AwardView {
            id: award.id,
            name: award.name.clone(),
            user: self.user(user),
            created_at: timestamp(award.created_at),
            updated_at: timestamp(award.updated_at),
            awardable_id: if on_noteable {
                award.awardable_id
            } else {
                award.note_id
            },
            awardable_type: if on_noteable { on.type_name() } else { "Note" },
            url: None,
        }
    }

    pub fn todo(
        &self,
        todo: &TodoRow,
        project: &ProjectRef,
        author: Option<&UserRow>,
        target: TodoTarget,
    ) -> TodoView {
        let (target_type, target_url) = match &target {
            TodoTarget::Issue(issue) => ("Issue", issue.web_url.clone()),
            TodoTarget::MergeRequest(mr) => ("MergeRequest", mr.web_url.clone()),
        };
        TodoView {
            id: todo.id,
            project: TodoProject {
                id: project.id,
                name: project.name.clone(),
                name_with_namespace: format!("{} / {}", project.namespace_full_name, project.name),
                path: project.path.clone(),
                path_with_namespace: project.full_path(),
            },
            author: self.user(author),
            action_name: todo.action_name.clone(),
            target_type,
            target_url,
            target,
            body: todo.body.clone(),
            state: todo.state.clone(),
            created_at: timestamp(todo.created_at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::issues::NewIssue;
    use crate::store::milestones::MilestoneChanges;
    use crate::test_support::{self, Tenant};

    /// `length` issues in three projects of two namespaces, each with two labels, the root
    /// as author and assignee, and its project's milestone.
    async fn issues(world: &Tenant, length: usize) -> Vec<IssueRow> {
        let group = world.group(&format!("Issues{length}")).await;
        let mut projects = Vec::new();
        for (i, namespace) in [world.namespace, group.id, group.id]
            .into_iter()
            .enumerate()
        {
            let project = world
                .project_row(namespace, &format!("i{length}-{i}"), None)
                .await;
            let mut milestone = MilestoneChanges::default();
            milestone.set("title", format!("m{i}"));
            let milestone = world
                .tenant
                .create_milestone(project.id, &milestone)
                .await
                .unwrap();
            projects.push((project.id, milestone.id));
        }
        let mut rows = Vec::new();
        for i in 0..length {
            let (project_id, milestone_id) = projects[i % projects.len()];
            let issue = NewIssue {
                project_id,
                author_id: world.root.id,
                title: format!("issue {i}"),
                milestone_id: Some(milestone_id),
                assignee_ids: vec![world.root.id],
                labels: vec!["bug".into(), format!("l{}", i % 4)],
                ..NewIssue::default()
            };
            rows.push(world.tenant.create_issue(&issue).await.unwrap().row);
        }
        rows
    }

    #[tokio::test]
    async fn a_page_of_issues_costs_the_same_statements_whatever_its_length() {
        let dir = tempfile::tempdir().unwrap();
        let world = test_support::tenant(dir.path()).await;
        let views = IssueViews {
            base_url: "http://trellis.test",
            users: UserViews(crate::links::UserLinks {
                base_url: "http://trellis.test",
                avatar_service: false,
            }),
        };
        let viewer = Viewer::Admin { id: world.root.id };
        let mut costs = Vec::new();
        for length in [5, 100] {
            let rows = issues(&world, length).await;
            let before = world.db.statement_count();
            let batch = IssueBatch::load(&world.tenant, viewer, &rows, true)
                .await
                .unwrap();
            costs.push(world.db.statement_count() - before);
            for issue in &rows {
                let view = views.issue(issue, &batch, IssueShape::default());
                assert_eq!(view.labels.len(), 2);
                assert_eq!(view.assignees.len(), 1);
                assert!(view.author.is_some() && view.milestone.is_some());
                assert!(view.web_url.contains(&format!("/i{length}-")));
            }
        }
        assert_eq!(costs[0], costs[1], "statements for 5 and 100 issues");
        assert!(
            costs[0] <= 6,
            "{} statements for a page of issues",
            costs[0]
        );
    }

    #[test]
    fn label_descriptions_are_escaped() {
        assert_eq!(text_html("a <b> & c"), "a &lt;b&gt; &amp; c");
    }

    #[test]
    fn label_text_colors() {
        assert_eq!(text_color("#FFFFFF"), "#333333");
        assert_eq!(text_color("#6699cc"), "#FFFFFF");
    }
}
