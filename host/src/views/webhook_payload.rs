//! GitLab's webhook bodies ("Webhook events" in GitLab's documentation) and the system hooks'
//! `repository_update`, field by field, as structs built from rows and from the objects the
//! outbox recorded; the other system hook bodies are in `views::system_hook_payload`. These are
//! the standard payloads every formatter receives; `crate::webhooks::payload` loads what they
//! need. Timestamps follow the documented examples: `2013-12-03T17:15:43Z` in an issue's
//! attributes and in system hooks, `2015-05-17 17:06:40 UTC` in notes and in `changes`.

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::user::UserViews;
use crate::events::{CommitRecord, PushRecord};
use crate::model::issue_text::human_duration;
use crate::model::issues::IssueRow;
use crate::model::labels::LabelRow;
use crate::model::namespaces::NamespaceRow;
use crate::model::projects::ProjectRow;
use crate::model::states::IssueState;
use crate::model::users::UserRow;

/// `2013-12-03T17:15:43Z`.
pub fn iso_seconds(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// `2015-05-17 17:06:40 UTC`.
pub fn utc_text(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .format("%Y-%m-%d %H:%M:%S UTC")
        .to_string()
}

/// A body as it is sent: JSON whose objects list their keys alphabetically at every level
/// (serde_json's map orders them), whatever order a struct declares its fields in (here,
/// GitLab's documented order).
pub fn body_text(body: &impl Serialize) -> String {
    serde_json::to_value(body).unwrap_or_default().to_string()
}

/// Where a tenant's pages and repositories are, for the links in payloads.
pub struct PayloadUrls<'a> {
    /// The tenant's base URL (`http://host:port`).
    pub base_url: &'a str,
    pub users: UserViews<'a>,
}

/// A project with its namespace, as payloads show it.
pub struct ProjectRef<'a> {
    pub project: &'a ProjectRow,
    pub namespace: &'a NamespaceRow,
}

impl ProjectRef<'_> {
    pub fn full_path(&self) -> String {
        format!("{}/{}", self.namespace.full_path, self.project.path)
    }
}

/// The `project` object of every project event.
#[derive(Debug, Clone, Serialize)]
pub struct HookProject {
    pub id: i64,
    pub name: String,
    pub description: String,
    pub web_url: String,
    pub avatar_url: Option<String>,
    pub git_ssh_url: String,
    pub git_http_url: String,
    pub namespace: String,
    pub visibility_level: i64,
    pub path_with_namespace: String,
    pub default_branch: Option<String>,
    /// Null: no CI configuration is read.
    pub ci_config_path: Option<String>,
    pub homepage: String,
    pub url: String,
    pub ssh_url: String,
    pub http_url: String,
}

/// The `repository` object of issue and note events.
#[derive(Debug, Clone, Serialize)]
pub struct HookRepository {
    pub name: String,
    pub url: String,
    pub description: String,
    pub homepage: String,
}

/// The `repository` object of push and tag push events (with the clone URLs).
#[derive(Debug, Clone, Serialize)]
pub struct PushRepository {
    pub name: String,
    pub url: String,
    pub description: String,
    pub homepage: String,
    pub git_http_url: String,
    pub git_ssh_url: String,
    pub visibility_level: i64,
}

/// The `user` of an event (who did it).
#[derive(Debug, Clone, Serialize)]
pub struct HookUser {
    pub id: i64,
    pub name: String,
    pub username: String,
    pub avatar_url: Option<String>,
    pub email: String,
}

/// An assignee in `assignees`: only its id once the user is gone.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum HookAssignee {
    User {
        id: i64,
        name: String,
        username: String,
        avatar_url: Option<String>,
    },
    Gone {
        id: i64,
    },
}

/// A label as payloads show it: only its title once the project no longer has it.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum HookLabel {
    Label(ProjectLabel),
    Gone { title: String },
}

/// A project's label. Trellis keeps no label timestamps in its rows (null).
#[derive(Debug, Clone, Serialize)]
pub struct ProjectLabel {
    pub id: i64,
    pub title: String,
    pub color: String,
    pub project_id: i64,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
    pub template: bool,
    pub description: Option<String>,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub group_id: Option<i64>,
}

impl PayloadUrls<'_> {
    fn host(&self) -> &str {
        let host = self
            .base_url
            .split_once("://")
            .map_or(self.base_url, |(_, rest)| rest);
        if host.starts_with('[') {
            return host.split_inclusive(']').next().unwrap_or(host);
        }
        host.rsplit_once(':').map_or(host, |(name, _)| name)
    }

    pub fn web_url(&self, project: &ProjectRef) -> String {
        format!("{}/{}", self.base_url, project.full_path())
    }

    fn ssh_url(&self, project: &ProjectRef) -> String {
        format!("git@{}:{}.git", self.host(), project.full_path())
    }

    fn avatar_url(&self, project: &ProjectRef) -> Option<String> {
        project.project.avatar_path.as_ref().map(|file| {
            format!(
                "{}/uploads/-/system/project/avatar/{}/{file}",
                self.base_url, project.project.id
            )
        })
    }

    /// The `project` object of every project event.
    pub fn project(&self, p: &ProjectRef) -> HookProject {
        let web_url = self.web_url(p);
        let http_url = format!("{web_url}.git");
        let ssh_url = self.ssh_url(p);
        HookProject {
            id: p.project.id,
            name: p.project.name.clone(),
            description: p.project.description.clone().unwrap_or_default(),
            web_url: web_url.clone(),
            avatar_url: self.avatar_url(p),
            git_ssh_url: ssh_url.clone(),
            git_http_url: http_url.clone(),
            namespace: p.namespace.name.clone(),
            visibility_level: p.project.visibility.level(),
            path_with_namespace: p.full_path(),
            default_branch: p.project.default_branch.clone(),
            ci_config_path: None,
            homepage: web_url,
            url: http_url.clone(),
            ssh_url,
            http_url,
        }
    }

    /// The `repository` object of issue and note events.
    pub fn repository(&self, p: &ProjectRef) -> HookRepository {
        let web_url = self.web_url(p);
        HookRepository {
            name: p.project.name.clone(),
            url: format!("{web_url}.git"),
            description: p.project.description.clone().unwrap_or_default(),
            homepage: web_url,
        }
    }

    /// The `repository` object of push and tag push events (with the clone URLs).
    pub fn push_repository(&self, p: &ProjectRef) -> PushRepository {
        let web_url = self.web_url(p);
        PushRepository {
            name: p.project.name.clone(),
            url: self.ssh_url(p),
            description: p.project.description.clone().unwrap_or_default(),
            homepage: web_url.clone(),
            git_http_url: format!("{web_url}.git"),
            git_ssh_url: self.ssh_url(p),
            visibility_level: p.project.visibility.level(),
        }
    }

    /// The `user` of an event (who did it).
    pub fn user(&self, user: &UserRow) -> HookUser {
        HookUser {
            id: user.id,
            name: user.name.clone(),
            username: user.username.clone(),
            avatar_url: self.users.avatar_url(user),
            email: hook_email(user),
        }
    }

    /// An assignee in `assignees`.
    pub fn assignee(&self, user: &UserRow) -> HookAssignee {
        HookAssignee::User {
            id: user.id,
            name: user.name.clone(),
            username: user.username.clone(),
            avatar_url: self.users.avatar_url(user),
        }
    }

    /// A Push Hook or Tag Push Hook body from what the push recorded in the outbox; commits get
    /// their `url`.
    pub fn push(&self, p: &ProjectRef, pushed: &PushRecord, tag: bool) -> PushHook {
        let kind = if tag { "tag_push" } else { "push" };
        let web_url = self.web_url(p);
        let commits = pushed
            .commits
            .iter()
            .map(|commit| HookCommit {
                url: format!("{web_url}/-/commit/{}", commit.id),
                commit: commit.clone(),
            })
            .collect();
        PushHook {
            object_kind: kind,
            event_name: kind,
            before: pushed.before.clone(),
            after: pushed.after.clone(),
            reference: pushed.reference.clone(),
            ref_protected: pushed.ref_protected,
            checkout_sha: pushed.checkout_sha.clone(),
            user_id: pushed.user_id,
            user_name: pushed.user_name.clone(),
            user_username: pushed.user_username.clone(),
            user_email: pushed.user_email.clone(),
            user_avatar: pushed.user_avatar.clone(),
            message: pushed.message.clone(),
            project_id: p.project.id,
            project: self.project(p),
            commits,
            total_commits_count: pushed.total_commits_count,
            push_options: PushOptions {},
            repository: self.push_repository(p),
        }
    }

    /// The system hooks' `repository_update` body of a push.
    pub fn repository_update(&self, p: &ProjectRef, pushed: &PushRecord) -> RepositoryUpdate {
        RepositoryUpdate {
            event_name: "repository_update",
            user_id: pushed.user_id,
            user_name: pushed.user_name.clone(),
            user_email: pushed.user_email.clone(),
            user_avatar: pushed.user_avatar.clone(),
            project_id: p.project.id,
            project: self.project(p),
            changes: vec![RefChange {
                before: pushed.before.clone(),
                after: pushed.after.clone(),
                reference: pushed.reference.clone(),
            }],
            refs: vec![pushed.reference.clone()],
        }
    }

    /// The issue's URL on the web.
    pub fn merge_request_url(&self, p: &ProjectRef, iid: i64) -> String {
        format!("{}/-/merge_requests/{iid}", self.web_url(p))
    }

    pub fn issue_url(&self, p: &ProjectRef, iid: i64) -> String {
        format!("{}/-/issues/{iid}", self.web_url(p))
    }
}

/// GitLab shows a user's public email in hook payloads, `[REDACTED]` when there is none.
pub fn hook_email(user: &UserRow) -> String {
    user.public_email
        .clone()
        .filter(|e| !e.is_empty())
        .unwrap_or_else(|| "[REDACTED]".into())
}

/// A label of the project as payloads show it.
pub fn label(label: &LabelRow) -> HookLabel {
    HookLabel::Label(ProjectLabel {
        id: label.id,
        title: label.name.clone(),
        color: label.color.clone(),
        project_id: label.project_id,
        created_at: None,
        updated_at: None,
        template: false,
        description: label.description.clone(),
        kind: "ProjectLabel",
        group_id: None,
    })
}

/// A Push Hook or Tag Push Hook.
#[derive(Debug, Serialize)]
pub struct PushHook {
    pub object_kind: &'static str,
    pub event_name: &'static str,
    pub before: String,
    pub after: String,
    #[serde(rename = "ref")]
    pub reference: String,
    pub ref_protected: bool,
    pub checkout_sha: Option<String>,
    pub user_id: i64,
    pub user_name: String,
    pub user_username: String,
    pub user_email: String,
    pub user_avatar: Option<String>,
    pub message: Option<String>,
    pub project_id: i64,
    pub project: HookProject,
    pub commits: Vec<HookCommit>,
    pub total_commits_count: i64,
    pub push_options: PushOptions,
    pub repository: PushRepository,
}

/// A pushed commit, with its page.
#[derive(Debug, Serialize)]
pub struct HookCommit {
    #[serde(flatten)]
    pub commit: CommitRecord,
    pub url: String,
}

/// `push_options`: none are read (`{}`).
#[derive(Debug, Serialize)]
pub struct PushOptions {}

/// The system hooks' `repository_update`.
#[derive(Debug, Serialize)]
pub struct RepositoryUpdate {
    pub event_name: &'static str,
    pub user_id: i64,
    pub user_name: String,
    pub user_email: String,
    pub user_avatar: Option<String>,
    pub project_id: i64,
    pub project: HookProject,
    pub changes: Vec<RefChange>,
    pub refs: Vec<String>,
}

/// A reference a push changed.
#[derive(Debug, Serialize)]
pub struct RefChange {
    pub before: String,
    pub after: String,
    #[serde(rename = "ref")]
    pub reference: String,
}

/// An issue as the outbox recorded it (its row, label names and assignee ids): what an
/// issue's `object_attributes` and a note's `issue` are built from. What was not recorded is
/// null in the body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct RecordedIssue {
    pub id: Option<i64>,
    pub iid: Option<i64>,
    pub project_id: Option<i64>,
    pub author_id: Option<i64>,
    pub title: Option<String>,
    pub description: Option<String>,
    pub state: Option<IssueState>,
    pub confidential: Option<bool>,
    pub discussion_locked: Option<bool>,
    pub milestone_id: Option<i64>,
    pub due_date: Option<String>,
    pub moved_to_id: Option<i64>,
    pub time_estimate: i64,
    pub total_time_spent: i64,
    pub created_at: Option<i64>,
    pub updated_at: Option<i64>,
    pub closed_at: Option<i64>,
    pub labels: Vec<String>,
    pub assignee_ids: Vec<i64>,
}

impl RecordedIssue {
    /// An issue as it stands (`row`, its assignees in order), as the outbox would record it.
    pub fn of(row: &IssueRow, assignee_ids: Vec<i64>) -> RecordedIssue {
        RecordedIssue {
            id: Some(row.id),
            iid: Some(row.iid),
            project_id: Some(row.project_id),
            author_id: Some(row.author_id),
            title: Some(row.title.clone()),
            description: row.description.clone(),
            state: Some(row.state),
            confidential: Some(row.confidential),
            discussion_locked: Some(row.discussion_locked),
            milestone_id: row.milestone_id,
            due_date: row.due_date.clone(),
            moved_to_id: row.moved_to_id,
            time_estimate: row.time_estimate,
            total_time_spent: row.total_time_spent,
            created_at: Some(row.created_at),
            updated_at: Some(row.updated_at),
            closed_at: row.closed_at,
            labels: Vec::new(),
            assignee_ids,
        }
    }
}

/// GitLab's `Issue#hook_attrs`: an issue's `object_attributes` (with the event's `action`)
/// and a note's `issue`. The fields GitLab has and Trellis keeps nothing for are null
/// (`last_edited_*`, `relative_position`, `duplicated_to_id`, `weight`...).
#[derive(Debug, Serialize)]
pub struct IssueAttributes {
    pub id: Option<i64>,
    pub title: Option<String>,
    pub assignee_ids: Vec<i64>,
    pub assignee_id: Option<i64>,
    pub author_id: Option<i64>,
    pub project_id: Option<i64>,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
    pub updated_by_id: Option<i64>,
    pub last_edited_at: Option<String>,
    pub last_edited_by_id: Option<i64>,
    pub relative_position: Option<i64>,
    pub description: Option<String>,
    pub milestone_id: Option<i64>,
    pub state_id: i64,
    pub confidential: Option<bool>,
    pub discussion_locked: Option<bool>,
    pub due_date: Option<String>,
    pub moved_to_id: Option<i64>,
    pub duplicated_to_id: Option<i64>,
    pub time_estimate: i64,
    pub total_time_spent: i64,
    pub time_change: i64,
    pub human_total_time_spent: Option<String>,
    pub human_time_estimate: Option<String>,
    pub human_time_change: Option<String>,
    pub weight: Option<i64>,
    pub health_status: Option<String>,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub iid: Option<i64>,
    pub url: String,
    pub state: IssueState,
    pub severity: &'static str,
    pub closed_at: Option<String>,
    pub labels: Vec<HookLabel>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<&'static str>,
}

impl IssueAttributes {
    /// `issue`'s attributes with its `labels` shown, its page at `url`; `action` for the
    /// issue's own events.
    pub fn new(
        issue: &RecordedIssue,
        labels: Vec<HookLabel>,
        url: String,
        updated_by_id: Option<i64>,
        action: Option<&'static str>,
    ) -> IssueAttributes {
        let state = issue.state.unwrap_or(IssueState::Opened);
        IssueAttributes {
            id: issue.id,
            title: issue.title.clone(),
            assignee_ids: issue.assignee_ids.clone(),
            assignee_id: issue.assignee_ids.first().copied(),
            author_id: issue.author_id,
            project_id: issue.project_id,
            created_at: issue.created_at.map(iso_seconds),
            updated_at: issue.updated_at.map(iso_seconds),
            updated_by_id,
            last_edited_at: None,
            last_edited_by_id: None,
            relative_position: None,
            description: issue.description.clone(),
            milestone_id: issue.milestone_id,
            state_id: state_id(state),
            confidential: issue.confidential,
            discussion_locked: issue.discussion_locked,
            due_date: issue.due_date.clone(),
            moved_to_id: issue.moved_to_id,
            duplicated_to_id: None,
            time_estimate: issue.time_estimate,
            total_time_spent: issue.total_time_spent,
            time_change: 0,
            human_total_time_spent: human_duration(issue.total_time_spent, false),
            human_time_estimate: human_duration(issue.time_estimate, false),
            human_time_change: None,
            weight: None,
            health_status: None,
            kind: "Issue",
            iid: issue.iid,
            url,
            state,
            severity: "unknown",
            closed_at: issue.closed_at.map(iso_seconds),
            labels,
            action,
        }
    }
}

/// GitLab's `state_id`: 1 opened, 2 closed.
pub fn state_id(state: IssueState) -> i64 {
    match state {
        IssueState::Opened => 1,
        IssueState::Closed => 2,
    }
}

/// An Issue Hook (or Confidential Issue Hook).
#[derive(Debug, Serialize)]
pub struct IssueHook {
    pub object_kind: &'static str,
    pub event_type: &'static str,
    pub user: Option<HookUser>,
    pub project: HookProject,
    pub object_attributes: IssueAttributes,
    pub repository: HookRepository,
    pub labels: Vec<HookLabel>,
    pub changes: BTreeMap<String, IssueChange>,
    /// The first of `assignees`; neither is sent for an issue nobody is assigned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assignee: Option<HookAssignee>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub assignees: Vec<HookAssignee>,
}

/// A changed field: `{"previous", "current"}`.
#[derive(Debug, Serialize)]
pub struct Change<T> {
    pub previous: T,
    pub current: T,
}

/// A field of an issue event's `changes`, in GitLab's form.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum IssueChange {
    /// A timestamp, as `... UTC` text.
    Time(Change<Option<String>>),
    /// `state`, as `state_id`.
    StateId(Change<Option<i64>>),
    Labels(Change<Vec<HookLabel>>),
    Assignees(Change<Vec<HookAssignee>>),
    /// Any other field, as recorded.
    Recorded(Change<Value>),
}

/// The items of the JSON array `list` that `item` reads, each shown by `show`.
fn each<'a, T, U>(
    list: &'a Value,
    item: impl Fn(&'a Value) -> Option<T>,
    show: impl Fn(T) -> U,
) -> Vec<U> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(item)
        .map(show)
        .collect()
}

/// An issue event's `changes`, from the outbox's `{"field": {"previous", "current"}}`:
/// timestamps as `... UTC` text, `state` as `state_id`, label names as labels, assignee ids
/// as `assignees`; counters GitLab keeps elsewhere are left out.
pub fn issue_changes(
    changes: &Map<String, Value>,
    label_of: impl Fn(&str) -> HookLabel,
    assignee_of: impl Fn(i64) -> HookAssignee,
) -> BTreeMap<String, IssueChange> {
    let mut out = BTreeMap::new();
    for (field, change) in changes {
        let (name, shown) = match field.as_str() {
            "upvotes" | "downvotes" | "user_notes_count" => continue,
            "created_at" | "updated_at" | "closed_at" => (
                field.as_str(),
                IssueChange::Time(shown(change, |v| v.as_i64().map(utc_text))),
            ),
            "state" => (
                "state_id",
                IssueChange::StateId(shown(change, |v| {
                    v.as_str()
                        .map(|s| state_id(IssueState::parse(s).unwrap_or(IssueState::Opened)))
                })),
            ),
            "labels" => (
                "labels",
                IssueChange::Labels(shown(change, |v| each(v, Value::as_str, &label_of))),
            ),
            "assignee_ids" => (
                "assignees",
                IssueChange::Assignees(shown(change, |v| each(v, Value::as_i64, &assignee_of))),
            ),
            _ => (
                field.as_str(),
                IssueChange::Recorded(shown(change, Value::clone)),
            ),
        };
        out.insert(name.to_string(), shown);
    }
    out
}

/// A recorded `{"previous", "current"}`, each side shown by `show`.
fn shown<T>(change: &Value, show: impl Fn(&Value) -> T) -> Change<T> {
    Change {
        previous: show(&change["previous"]),
        current: show(&change["current"]),
    }
}

/// A note as the outbox recorded it (its row). What was not recorded is null in the body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct RecordedNote {
    pub id: Option<i64>,
    pub issue_id: Option<i64>,
    pub merge_request_id: Option<i64>,
    pub discussion_id: Option<String>,
    pub note_type: Option<String>,
    /// A diff note's position, as JSON text.
    pub position: Option<String>,
    pub author_id: Option<i64>,
    pub body: Option<String>,
    pub system: Option<bool>,
    pub internal: Option<bool>,
    pub created_at: Option<i64>,
    pub updated_at: Option<i64>,
}

/// A note's `object_attributes` (GitLab's `Note#hook_attrs`).
#[derive(Debug, Serialize)]
pub struct NoteAttributes {
    pub id: Option<i64>,
    pub note: Option<String>,
    pub noteable_type: &'static str,
    pub author_id: Option<i64>,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
    pub project_id: i64,
    pub attachment: Option<String>,
    pub line_code: Option<String>,
    pub commit_id: &'static str,
    pub noteable_id: Option<i64>,
    pub system: Option<bool>,
    pub internal: Option<bool>,
    pub st_diff: Option<String>,
    pub action: &'static str,
    pub url: String,
    /// A merge request's notes say which discussion they are in and, on a diff, where.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discussion_id: Option<String>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub note_type: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<Value>,
}

impl NoteAttributes {
    pub fn new(
        note: &RecordedNote,
        project_id: i64,
        action: &'static str,
        url: String,
    ) -> NoteAttributes {
        let on_merge_request = note.merge_request_id.is_some();
        NoteAttributes {
            id: note.id,
            note: note.body.clone(),
            noteable_type: if on_merge_request {
                "MergeRequest"
            } else {
                "Issue"
            },
            author_id: note.author_id,
            created_at: note.created_at.map(utc_text),
            updated_at: note.updated_at.map(utc_text),
            project_id,
            attachment: None,
            line_code: None,
            commit_id: "",
            noteable_id: note.issue_id.or(note.merge_request_id),
            system: note.system,
            internal: note.internal,
            st_diff: None,
            action,
            url,
            discussion_id: note.discussion_id.clone().filter(|_| on_merge_request),
            note_type: on_merge_request.then(|| note.note_type.clone()),
            position: note
                .position
                .as_deref()
                .and_then(|text| serde_json::from_str(text).ok())
                .filter(|_| on_merge_request),
        }
    }
}

/// A Note Hook (or Confidential Note Hook) of a note on an issue or a merge request: the
/// noteable is under its own key.
#[derive(Debug, Serialize)]
pub struct NoteHook {
    pub object_kind: &'static str,
    pub event_type: &'static str,
    pub user: Option<HookUser>,
    pub project_id: i64,
    pub project: HookProject,
    pub repository: HookRepository,
    pub object_attributes: NoteAttributes,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issue: Option<IssueAttributes>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merge_request: Option<MergeRequestAttributes>,
}

/// GitLab's access level names in system hook bodies.
pub fn access_level_name(level: i64) -> &'static str {
    match level {
        50 => "Owner",
        40 => "Maintainer",
        30 => "Developer",
        20 => "Reporter",
        10 => "Guest",
        5 => "Minimal Access",
        _ => "No access",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn timestamps_follow_the_documented_formats() {
        let ms = 1_386_090_943_000; // 2013-12-03T17:15:43Z
        assert_eq!(iso_seconds(ms), "2013-12-03T17:15:43Z");
        assert_eq!(utc_text(ms), "2013-12-03 17:15:43 UTC");
    }

    #[test]
    fn changes_use_gitlab_names_and_forms() {
        let changes = json!({
            "state": {"previous": "opened", "current": "closed"},
            "labels": {"previous": ["a"], "current": ["a", "b"]},
            "assignee_ids": {"previous": [], "current": [3]},
            "updated_at": {"previous": 1_386_090_943_000i64, "current": 1_386_090_944_000i64},
            "upvotes": {"previous": 0, "current": 1},
            "title": {"previous": "x", "current": "y"},
        });
        let out = issue_changes(
            changes.as_object().unwrap(),
            |name| HookLabel::Gone {
                title: name.to_string(),
            },
            |id| HookAssignee::Gone { id },
        );
        let out = serde_json::to_value(out).unwrap();
        assert_eq!(out["state_id"], json!({"previous": 1, "current": 2}));
        assert_eq!(
            out["labels"]["current"],
            json!([{"title": "a"}, {"title": "b"}])
        );
        assert_eq!(out["assignees"]["current"], json!([{"id": 3}]));
        assert_eq!(out["updated_at"]["previous"], "2013-12-03 17:15:43 UTC");
        assert_eq!(out["title"]["current"], "y");
        assert!(out.get("upvotes").is_none());
    }
}

#[cfg(test)]
mod push_tests {
    use serde_json::json;

    use super::*;
    use crate::model::feature_access::FeatureAccess;
    use crate::model::states::ImportStatus;
    use crate::model::visibility::Visibility;

    fn project() -> (ProjectRow, NamespaceRow) {
        let project = ProjectRow {
            id: 15,
            namespace_id: 3,
            creator_id: Some(4),
            name: "Diaspora".into(),
            path: "diaspora".into(),
            description: None,
            default_branch: Some("master".into()),
            visibility: Visibility::Private,
            archived: false,
            star_count: 0,
            forks_count: 0,
            open_issues_count: 0,
            tag_list: String::new(),
            avatar_path: None,
            import_url: None,
            import_status: ImportStatus::None,
            import_error: None,
            issues_access_level: FeatureAccess::Enabled,
            merge_requests_access_level: FeatureAccess::Enabled,
            repository_size: 0,
            storage_size: 0,
            wiki_size: 0,
            packages_size: 0,
            settings: "{}".into(),
            marked_for_deletion_at: None,
            forked_from_id: None,
            commit_count: 0,
            repository_languages: "{}".into(),
            created_at: 0,
            updated_at: 0,
            last_activity_at: 0,
        };
        let namespace = NamespaceRow {
            id: 3,
            kind: "user".into(),
            owner_id: Some(4),
            parent_id: None,
            name: "Mike".into(),
            path: "mike".into(),
            full_path: "mike".into(),
            full_name: "Mike".into(),
            traversal: "3/".into(),
            description: String::new(),
            visibility: Visibility::Private,
            avatar_path: None,
            settings: "{}".into(),
            created_at: 0,
            updated_at: 0,
        };
        (project, namespace)
    }

    /// What the receive path records for a push (the outbox's `push` event, see events.rs).
    fn pushed() -> PushRecord {
        serde_json::from_value(pushed_json()).unwrap()
    }

    fn pushed_json() -> Value {
        json!({
            "before": "95790bf891e76fee5e1747ab589903a6a1f80f22",
            "after": "da1560886d4f094c3e6c9ef40349f7d38b5d27d7",
            "ref": "refs/heads/master",
            "checkout_sha": "da1560886d4f094c3e6c9ef40349f7d38b5d27d7",
            "user_id": 4,
            "user_name": "John Smith",
            "user_username": "jsmith",
            "user_email": "john@example.com",
            "user_avatar": null,
            "commits": [{
                "id": "da1560886d4f094c3e6c9ef40349f7d38b5d27d7",
                "message": "fixed readme",
                "title": "fixed readme",
                "timestamp": "2012-01-03T23:36:29+02:00",
                "author": {"name": "GitLab dev user", "email": "gitlabdev@example.com"},
                "added": ["CHANGELOG"],
                "modified": ["app/controller/application.rb"],
                "removed": [],
            }],
            "total_commits_count": 4,
        })
    }

    fn urls() -> PayloadUrls<'static> {
        PayloadUrls {
            base_url: "http://example.com",
            users: UserViews(crate::links::UserLinks {
                base_url: "http://example.com",
                avatar_service: false,
            }),
        }
    }

    /// Field by field against GitLab's documented Push Hook example.
    #[test]
    fn push_hook_has_gitlabs_fields() {
        let (project, namespace) = project();
        let p = ProjectRef {
            project: &project,
            namespace: &namespace,
        };
        let body = serde_json::to_value(urls().push(&p, &pushed(), false)).unwrap();
        let documented = "object_kind event_name before after ref ref_protected checkout_sha \
            user_id user_name user_username user_email user_avatar project_id project repository \
            commits total_commits_count";
        for key in documented.split_whitespace() {
            assert!(body.get(key).is_some(), "{key}");
        }
        assert_eq!(body["object_kind"], "push");
        assert_eq!(body["ref"], "refs/heads/master");
        assert_eq!(body["total_commits_count"], 4);
        assert_eq!(body["project"]["path_with_namespace"], "mike/diaspora");
        assert_eq!(
            body["project"]["git_ssh_url"],
            "git@example.com:mike/diaspora.git"
        );
        assert_eq!(
            body["project"]["git_http_url"],
            "http://example.com/mike/diaspora.git"
        );
        assert_eq!(body["project"]["namespace"], "Mike");
        assert_eq!(body["project"]["visibility_level"], 0);
        assert_eq!(
            body["repository"],
            json!({
                "name": "Diaspora",
                "url": "git@example.com:mike/diaspora.git",
                "description": "",
                "homepage": "http://example.com/mike/diaspora",
                "git_http_url": "http://example.com/mike/diaspora.git",
                "git_ssh_url": "git@example.com:mike/diaspora.git",
                "visibility_level": 0,
            })
        );
        let commit = &body["commits"][0];
        assert_eq!(
            commit["url"],
            "http://example.com/mike/diaspora/-/commit/da1560886d4f094c3e6c9ef40349f7d38b5d27d7"
        );
        assert_eq!(commit["author"]["name"], "GitLab dev user");
        assert_eq!(commit["added"], json!(["CHANGELOG"]));
    }

    #[test]
    fn tag_push_and_repository_update() {
        let (project, namespace) = project();
        let p = ProjectRef {
            project: &project,
            namespace: &namespace,
        };
        let mut tag = pushed();
        tag.reference = "refs/tags/v1.0.0".into();
        let body = serde_json::to_value(urls().push(&p, &tag, true)).unwrap();
        assert_eq!(body["object_kind"], "tag_push");
        assert_eq!(body["event_name"], "tag_push");
        let update = serde_json::to_value(urls().repository_update(&p, &pushed())).unwrap();
        assert_eq!(update["event_name"], "repository_update");
        assert_eq!(update["refs"], json!(["refs/heads/master"]));
        assert_eq!(update["changes"][0]["after"], pushed_json()["after"]);
    }

    /// The body goes out with every object's keys in alphabetical order, the push's recorded
    /// commits as recorded (with their `url`) and `push_options` an empty object.
    #[test]
    fn push_body_text_lists_keys_alphabetically() {
        let (project, namespace) = project();
        let p = ProjectRef {
            project: &project,
            namespace: &namespace,
        };
        let text = body_text(&urls().push(&p, &pushed(), false));
        assert!(
            text.starts_with(r#"{"after":"da1560886d4f094c3e6c9ef40349f7d38b5d27d7","before":"#)
        );
        assert!(
            text.contains(r#""push_options":{},"ref":"refs/heads/master","ref_protected":false,"#)
        );
        let mut commit = pushed_json()["commits"][0].clone();
        commit["url"] = json!(
            "http://example.com/mike/diaspora/-/commit/da1560886d4f094c3e6c9ef40349f7d38b5d27d7"
        );
        assert!(text.contains(&format!(r#""commits":[{commit}]"#)));
        // Recorded today, a push also says whether its reference is protected and its message.
        let mut recorded = pushed_json();
        recorded["ref_protected"] = json!(false);
        recorded["message"] = Value::Null;
        assert_eq!(serde_json::to_value(pushed()).unwrap(), recorded);
    }
}

/// A merge request as its events record it (the row, its label names, assignee and reviewer
/// ids).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct RecordedMergeRequest {
    pub id: i64,
    pub iid: i64,
    pub project_id: i64,
    pub source_project_id: i64,
    pub source_branch: String,
    pub target_branch: String,
    pub author_id: i64,
    pub title: String,
    pub description: Option<String>,
    pub state: String,
    pub draft: bool,
    pub milestone_id: Option<i64>,
    pub head_sha: Option<String>,
    pub merge_status: String,
    pub target_diverged: bool,
    pub merge_commit_sha: Option<String>,
    pub merged_by_id: Option<i64>,
    pub time_estimate: i64,
    pub total_time_spent: i64,
    pub created_at: i64,
    pub updated_at: i64,
    pub labels: Vec<String>,
    pub assignee_ids: Vec<i64>,
    pub reviewer_ids: Vec<i64>,
}

/// GitLab's merge request `state_id`: 1 opened, 2 closed, 3 merged, 4 locked.
pub fn merge_request_state_id(state: &str) -> i64 {
    match state {
        "closed" => 2,
        "merged" => 3,
        "locked" => 4,
        _ => 1,
    }
}

/// The last commit of a merge request's source, as its hook shows it.
#[derive(Debug, Serialize)]
pub struct HookLastCommit {
    pub id: String,
    pub message: String,
    pub title: String,
    pub timestamp: String,
    pub url: String,
    pub author: HookCommitAuthor,
}

#[derive(Debug, Serialize)]
pub struct HookCommitAuthor {
    pub name: String,
    pub email: String,
}

/// `object_attributes` of a Merge Request Hook.
#[derive(Debug, Serialize)]
pub struct MergeRequestAttributes {
    pub id: i64,
    pub iid: i64,
    pub target_branch: String,
    pub source_branch: String,
    pub source_project_id: i64,
    pub target_project_id: i64,
    pub author_id: i64,
    pub assignee_id: Option<i64>,
    pub assignee_ids: Vec<i64>,
    pub reviewer_ids: Vec<i64>,
    pub title: String,
    pub description: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub updated_by_id: Option<i64>,
    pub merge_user_id: Option<i64>,
    pub milestone_id: Option<i64>,
    pub state_id: i64,
    pub state: String,
    pub merge_status: String,
    pub detailed_merge_status: &'static str,
    pub merge_commit_sha: Option<String>,
    pub url: String,
    pub source: HookProject,
    pub target: HookProject,
    pub last_commit: Option<HookLastCommit>,
    pub work_in_progress: bool,
    pub draft: bool,
    pub time_estimate: i64,
    pub total_time_spent: i64,
    pub human_total_time_spent: Option<String>,
    pub human_time_estimate: Option<String>,
    pub head_pipeline_id: Option<i64>,
    pub blocking_discussions_resolved: bool,
    pub first_contribution: bool,
    pub labels: Vec<HookLabel>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<&'static str>,
}

impl MergeRequestAttributes {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        mr: &RecordedMergeRequest,
        labels: Vec<HookLabel>,
        url: String,
        project: HookProject,
        last_commit: Option<HookLastCommit>,
        updated_by_id: Option<i64>,
        detailed_merge_status: &'static str,
        action: Option<&'static str>,
    ) -> MergeRequestAttributes {
        MergeRequestAttributes {
            id: mr.id,
            iid: mr.iid,
            target_branch: mr.target_branch.clone(),
            source_branch: mr.source_branch.clone(),
            source_project_id: mr.source_project_id,
            target_project_id: mr.project_id,
            author_id: mr.author_id,
            assignee_id: mr.assignee_ids.first().copied(),
            assignee_ids: mr.assignee_ids.clone(),
            reviewer_ids: mr.reviewer_ids.clone(),
            title: mr.title.clone(),
            description: mr.description.clone(),
            created_at: utc_text(mr.created_at),
            updated_at: utc_text(mr.updated_at),
            updated_by_id,
            merge_user_id: mr.merged_by_id,
            milestone_id: mr.milestone_id,
            state_id: merge_request_state_id(&mr.state),
            state: mr.state.clone(),
            merge_status: mr.merge_status.clone(),
            detailed_merge_status,
            merge_commit_sha: mr.merge_commit_sha.clone(),
            url,
            source: project.clone(),
            target: project,
            last_commit,
            work_in_progress: mr.draft,
            draft: mr.draft,
            time_estimate: mr.time_estimate,
            total_time_spent: mr.total_time_spent,
            human_total_time_spent: human_duration(mr.total_time_spent, false),
            human_time_estimate: human_duration(mr.time_estimate, false),
            head_pipeline_id: None,
            blocking_discussions_resolved: true,
            first_contribution: false,
            labels,
            action,
        }
    }
}

/// GitLab's Merge Request Hook.
#[derive(Debug, Serialize)]
pub struct MergeRequestHook {
    pub object_kind: &'static str,
    pub event_type: &'static str,
    pub user: Option<HookUser>,
    pub project: HookProject,
    pub object_attributes: MergeRequestAttributes,
    pub repository: HookRepository,
    pub labels: Vec<HookLabel>,
    pub changes: BTreeMap<String, Value>,
    pub assignees: Vec<HookAssignee>,
    pub reviewers: Vec<HookAssignee>,
}

/// The fields a Merge Request Hook's `changes` reports, as GitLab names them: recorded
/// changes of these fields, with `state` as `state_id` and timestamps as hooks write them.
pub fn merge_request_changes(recorded: &serde_json::Map<String, Value>) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for (field, change) in recorded {
        let convert = |value: &Value| -> Value {
            match field.as_str() {
                "state" => Value::from(merge_request_state_id(value.as_str().unwrap_or_default())),
                "created_at" | "updated_at" => value
                    .as_i64()
                    .map_or(Value::Null, |ms| Value::String(utc_text(ms))),
                _ => value.clone(),
            }
        };
        let name = match field.as_str() {
            "state" => "state_id",
            "title" | "description" | "target_branch" | "source_branch" | "milestone_id"
            | "draft" | "updated_at" | "merge_status" | "time_estimate" | "total_time_spent"
            | "discussion_locked" | "squash" | "head_sha" => field.as_str(),
            _ => continue,
        };
        let (previous, current) = (&change["previous"], &change["current"]);
        out.insert(
            name.to_string(),
            serde_json::json!({ "previous": convert(previous), "current": convert(current) }),
        );
    }
    out
}
