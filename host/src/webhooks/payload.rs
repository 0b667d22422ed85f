//! From an outbox event to GitLab's standard payloads: which hooks an event is for
//! ([`candidates`], from the event alone) and, for those that some hook wants, the body
//! ([`build`], reading the objects the event recorded into typed forms, and the rows they
//! name). Bodies are the structs of `views::webhook_payload` and `views::system_hook_payload`.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::events::{EventKind, PushRecord, changes};
use crate::git::Repository;
use crate::git::refs::Revision;
use crate::links::UserLinks;
use crate::model::labels::LabelRow;
use crate::model::merge_requests::{MergeRequestState, MergeStatus, Mergeability};
use crate::model::namespaces::NamespaceRow;
use crate::model::projects::ProjectRow;
use crate::model::users::UserRow;
use crate::model::visibility::Visibility;
use crate::model::webhooks::EventRow;
use crate::store::TenantDb;
use crate::store::merge_requests::MergeRequestUsers;
use crate::views::system_hook_payload::{
    GroupEvent, GroupMemberEvent, KeyEvent, MemberUser, Owner, ProjectEvent, ProjectMemberEvent,
    SystemStamp, UserEvent,
};
use crate::views::user::UserViews;
use crate::views::webhook_payload::{
    HookAssignee, HookCommitAuthor, HookLabel, HookLastCommit, IssueAttributes, IssueHook,
    MergeRequestAttributes, MergeRequestHook, NoteAttributes, NoteHook, PayloadUrls, ProjectRef,
    RecordedIssue, RecordedMergeRequest, RecordedNote, access_level_name, body_text, iso_seconds,
    issue_changes, label, merge_request_changes, utc_text,
};

/// Who an event is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Audience {
    /// The hooks of a project with this toggle on (and, for pushes, a branch filter that
    /// lets `branch` through).
    Project {
        project_id: i64,
        toggle: &'static str,
        branch: Option<String>,
    },
    /// System hooks; with a toggle, only those that have it on.
    System { toggle: Option<&'static str> },
}

/// Which body to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    Issue(&'static str),
    MergeRequest(&'static str),
    Note(&'static str),
    Push,
    TagPush,
    RepositoryUpdate,
    /// A system event named so (`project_create`, `user_add_to_team`...).
    System(&'static str),
}

#[derive(Debug, Clone)]
pub struct Candidate {
    pub audience: Audience,
    /// The trigger in the delivery log (GitLab's hook scope names).
    pub trigger: &'static str,
    /// `X-Gitlab-Event`.
    pub event_name: &'static str,
    pub body: Body,
}

/// The recorded change: `{"actor_id", "before", "after", "changes"}`.
pub fn recorded(event: &EventRow) -> Value {
    serde_json::from_str(&event.payload).unwrap_or(Value::Null)
}

fn flag(v: &Value, field: &str) -> bool {
    v.get(field).and_then(Value::as_bool).unwrap_or(false)
}

fn text<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get(field).and_then(Value::as_str).unwrap_or_default()
}

const SYSTEM: &str = "System Hook";

/// The hooks `event` may be for, from the event alone (no reads).
pub fn candidates(event: &EventRow, recorded: &Value) -> Vec<Candidate> {
    let after = &recorded["after"];
    let before = &recorded["before"];
    let project = |toggle: &'static str, branch: Option<String>| {
        event.project_id.map(|project_id| Audience::Project {
            project_id,
            toggle,
            branch,
        })
    };
    let system = |name: &'static str| Candidate {
        audience: Audience::System { toggle: None },
        trigger: "system_hooks",
        event_name: SYSTEM,
        body: Body::System(name),
    };
    let issue = |action: &'static str, object: &Value| {
        let confidential = flag(object, "confidential");
        project(
            if confidential {
                "confidential_issues_events"
            } else {
                "issues_events"
            },
            None,
        )
        .map(|audience| Candidate {
            audience,
            trigger: if confidential {
                "confidential_issue_hooks"
            } else {
                "issue_hooks"
            },
            event_name: if confidential {
                "Confidential Issue Hook"
            } else {
                "Issue Hook"
            },
            body: Body::Issue(action),
        })
    };
    let note = |action: &'static str| {
        // Whether the note is confidential depends on its issue too: decided in `build`,
        // which drops the candidate whose confidentiality does not match.
        let mut both = Vec::new();
        for confidential in [false, true] {
            if let Some(audience) = project(
                if confidential {
                    "confidential_note_events"
                } else {
                    "note_events"
                },
                None,
            ) {
                both.push(Candidate {
                    audience,
                    trigger: if confidential {
                        "confidential_note_hooks"
                    } else {
                        "note_hooks"
                    },
                    event_name: if confidential {
                        "Confidential Note Hook"
                    } else {
                        "Note Hook"
                    },
                    body: Body::Note(action),
                });
            }
        }
        both
    };
    // Project hooks with the toggle, and system hooks with theirs (the same body).
    let merge_request = |action: &'static str| {
        let body = Body::MergeRequest(action);
        let mut out: Vec<Candidate> = project("merge_requests_events", None)
            .map(|audience| Candidate {
                audience,
                trigger: "merge_request_hooks",
                event_name: "Merge Request Hook",
                body,
            })
            .into_iter()
            .collect();
        out.push(Candidate {
            audience: Audience::System {
                toggle: Some("merge_requests_events"),
            },
            trigger: "system_hooks",
            event_name: SYSTEM,
            body,
        });
        out
    };
    let push = |tag: bool| {
        let reference = text(after, "ref");
        let branch = reference.strip_prefix("refs/heads/").map(str::to_string);
        let (toggle, trigger, event_name, body) = if tag {
            (
                "tag_push_events",
                "tag_push_hooks",
                "Tag Push Hook",
                Body::TagPush,
            )
        } else {
            ("push_events", "push_hooks", "Push Hook", Body::Push)
        };
        let mut out: Vec<Candidate> = project(toggle, branch)
            .map(|audience| Candidate {
                audience,
                trigger,
                event_name,
                body,
            })
            .into_iter()
            .collect();
        out.push(Candidate {
            audience: Audience::System {
                toggle: Some(toggle),
            },
            trigger: "system_hooks",
            event_name: SYSTEM,
            body,
        });
        out.push(Candidate {
            audience: Audience::System {
                toggle: Some("repository_update_events"),
            },
            trigger: "system_hooks",
            event_name: SYSTEM,
            body: Body::RepositoryUpdate,
        });
        out
    };
    let member = |project_name: &'static str, group_name: &'static str| {
        let member = if after.is_null() { before } else { after };
        system(if text(member, "source_type") == "Project" {
            project_name
        } else {
            group_name
        })
    };
    match event.kind {
        EventKind::IssueOpened => issue("open", after).into_iter().collect(),
        EventKind::IssueUpdated => issue("update", after).into_iter().collect(),
        EventKind::IssueClosed | EventKind::IssueMoved => {
            issue("close", after).into_iter().collect()
        }
        EventKind::IssueReopened => issue("reopen", after).into_iter().collect(),
        EventKind::MergeRequestOpened => merge_request("open"),
        EventKind::MergeRequestUpdated => merge_request("update"),
        EventKind::MergeRequestClosed => merge_request("close"),
        EventKind::MergeRequestReopened => merge_request("reopen"),
        EventKind::MergeRequestMerged => merge_request("merge"),
        EventKind::MergeRequestApproved => merge_request("approved"),
        EventKind::MergeRequestUnapproved => merge_request("unapproved"),
        EventKind::NoteCreated => note("create"),
        EventKind::NoteUpdated => note("update"),
        EventKind::Push => push(false),
        EventKind::TagPush => push(true),
        EventKind::ProjectCreated => vec![system("project_create")],
        EventKind::ProjectDestroyed => vec![system("project_destroy")],
        EventKind::ProjectRenamed => vec![system("project_rename")],
        EventKind::ProjectTransferred => vec![system("project_transfer")],
        EventKind::ProjectUpdated => vec![system("project_update")],
        EventKind::UserCreated => vec![system("user_create")],
        EventKind::UserDestroyed => vec![system("user_destroy")],
        EventKind::UserRenamed => vec![system("user_rename")],
        EventKind::KeyAdded => vec![system("key_create")],
        EventKind::KeyRemoved => vec![system("key_destroy")],
        EventKind::GroupCreated => vec![system("group_create")],
        EventKind::GroupDestroyed => vec![system("group_destroy")],
        EventKind::GroupUpdated if text(before, "full_path") != text(after, "full_path") => {
            vec![system("group_rename")]
        }
        EventKind::MemberAdded => vec![member("user_add_to_team", "user_add_to_group")],
        EventKind::MemberUpdated => vec![member("user_update_for_team", "user_update_for_group")],
        EventKind::MemberRemoved => vec![member("user_remove_from_team", "user_remove_from_group")],
        _ => Vec::new(),
    }
}

/// The rows the events of one dispatched batch share (actors, projects, namespaces, a
/// project's labels), read once per batch and not once per event: 200 issue creates in one
/// project read the same four rows 200 times, which cost the API's writes beside the
/// dispatcher more than the deliveries themselves (docs/performance.md). Bodies show the rows
/// as they are when the batch is dispatched, as they did when each event read them.
#[derive(Default)]
pub struct BatchRows {
    users: Mutex<HashMap<i64, Option<UserRow>>>,
    projects: Mutex<HashMap<i64, Option<ProjectRow>>>,
    namespaces: Mutex<HashMap<i64, Option<NamespaceRow>>>,
    labels: Mutex<HashMap<i64, Vec<LabelRow>>>,
}

/// `map`'s row for `id`, read with `load` the first time.
async fn once<T: Clone>(
    map: &Mutex<HashMap<i64, T>>,
    id: i64,
    load: impl Future<Output = crate::store::Result<T>>,
) -> crate::store::Result<T> {
    if let Some(row) = map.lock().unwrap_or_else(|e| e.into_inner()).get(&id) {
        return Ok(row.clone());
    }
    let row = load.await?;
    map.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id, row.clone());
    Ok(row)
}

/// Reads what bodies need.
pub struct Loader<'a> {
    pub db: &'a TenantDb,
    pub rows: &'a BatchRows,
    /// Where the repositories are (a merge request's last commit).
    pub data_dir: &'a std::path::Path,
    pub base_url: &'a str,
    pub avatar_service: bool,
}

impl Loader<'_> {
    async fn user(&self, id: i64) -> crate::store::Result<Option<UserRow>> {
        once(&self.rows.users, id, self.db.user_by_id(id)).await
    }

    async fn project(&self, id: i64) -> crate::store::Result<Option<ProjectRow>> {
        once(&self.rows.projects, id, self.db.project_by_id(id)).await
    }

    async fn namespace(&self, id: i64) -> crate::store::Result<Option<NamespaceRow>> {
        once(&self.rows.namespaces, id, self.db.namespace_by_id(id)).await
    }

    async fn labels(&self, project_id: i64) -> crate::store::Result<Vec<LabelRow>> {
        once(
            &self.rows.labels,
            project_id,
            self.db.project_labels(project_id, None),
        )
        .await
    }

    /// The source head of `mr` as its hook shows it; none when the repository cannot say.
    async fn last_commit(
        &self,
        p: &ProjectRef<'_>,
        mr: &RecordedMergeRequest,
    ) -> Option<HookLastCommit> {
        let head = mr.head_sha.as_deref()?;
        let repo = Repository::project(self.data_dir, self.db.tenant_id(), p.project.id);
        let commit = repo.commit(&Revision::parse(head)?).await.ok()??;
        Some(HookLastCommit {
            url: format!("{}/-/commit/{}", self.urls().web_url(p), commit.id),
            title: commit.title().to_string(),
            timestamp: commit.authored_date.clone(),
            author: HookCommitAuthor {
                name: commit.author_name.clone(),
                email: commit.author_email.clone(),
            },
            message: commit.message,
            id: commit.id,
        })
    }

    /// A merge request as it is now, in the shape its events record it (a note's hook shows
    /// the MR it is on).
    async fn current_merge_request(
        &self,
        id: i64,
    ) -> crate::store::Result<Option<RecordedMergeRequest>> {
        let Some(row) = self.db.merge_request_by_id(id).await? else {
            return Ok(None);
        };
        let Ok(Value::Object(mut object)) = serde_json::to_value(&row) else {
            return Ok(None);
        };
        let labels: Vec<String> = self
            .db
            .labels_of_merge_requests(&[id])
            .await?
            .into_iter()
            .map(|l| l.label.name)
            .collect();
        object.insert("labels".into(), labels.into());
        for (key, which) in [
            ("assignee_ids", MergeRequestUsers::Assignees),
            ("reviewer_ids", MergeRequestUsers::Reviewers),
        ] {
            let ids: Vec<i64> = self
                .db
                .users_of_merge_requests(which, &[id])
                .await?
                .into_iter()
                .map(|u| u.user.id)
                .collect();
            object.insert(key.into(), ids.into());
        }
        Ok(Some(read(&Value::Object(object))))
    }

    /// A merge request's `object_attributes` (and its labels): in its own hook with who
    /// changed it and how (`change`), in a note's hook without.
    async fn merge_request_attributes(
        &self,
        p: &ProjectRef<'_>,
        mr: &RecordedMergeRequest,
        change: Option<(Option<i64>, &'static str)>,
    ) -> crate::store::Result<(MergeRequestAttributes, Vec<HookLabel>)> {
        let urls = self.urls();
        let labels = self.labels(p.project.id).await?;
        let mr_labels: Vec<HookLabel> = mr
            .labels
            .iter()
            .map(|name| {
                labels.iter().find(|l| &l.name == name).map_or_else(
                    || HookLabel::Gone {
                        title: name.clone(),
                    },
                    label,
                )
            })
            .collect();
        let url = urls.merge_request_url(p, mr.iid);
        let last_commit = self.last_commit(p, mr).await;
        let settings = p.project.settings_json();
        let merge_method = crate::model::project_settings::setting(&settings, "merge_method");
        // Hooks do not read the MR's threads: only the recorded object decides.
        let detailed = Mergeability {
            state: MergeRequestState::parse(&mr.state).unwrap_or(MergeRequestState::Opened),
            draft: mr.draft,
            merge_status: MergeStatus::parse(&mr.merge_status).unwrap_or(MergeStatus::Unchecked),
            target_diverged: mr.target_diverged,
            merge_method: merge_method.as_str().unwrap_or("merge"),
            discussions_block: false,
        }
        .detailed_status();
        let attributes = MergeRequestAttributes::new(
            mr,
            mr_labels.clone(),
            url,
            urls.project(p),
            last_commit,
            change.and_then(|(actor, _)| actor),
            detailed,
            change.map(|(_, action)| action),
        );
        Ok((attributes, mr_labels))
    }

    fn urls(&self) -> PayloadUrls<'_> {
        PayloadUrls {
            base_url: self.base_url,
            users: UserViews(UserLinks {
                base_url: self.base_url,
                avatar_service: self.avatar_service,
            }),
        }
    }

    /// The body of `body` for `event`, as it is sent; `None` when it does not apply after all
    /// (its project or issue is gone, or a note's confidentiality is not this candidate's).
    pub async fn build(
        &self,
        event: &EventRow,
        recorded: &Value,
        candidate: &Candidate,
    ) -> crate::store::Result<Option<String>> {
        let after = &recorded["after"];
        let before = &recorded["before"];
        let urls = self.urls();
        let actor = match event.actor_id {
            Some(id) => self.user(id).await?,
            None => None,
        };
        let actor_view = actor.as_ref().map(|u| urls.user(u));
        let project_rows = match event.project_id {
            Some(id) if !matches!(candidate.body, Body::System(_)) => {
                let Some(project) = self.project(id).await? else {
                    return Ok(None);
                };
                let Some(namespace) = self.namespace(project.namespace_id).await? else {
                    return Ok(None);
                };
                Some((project, namespace))
            }
            _ => None,
        };
        let project_ref = project_rows
            .as_ref()
            .map(|(project, namespace)| ProjectRef { project, namespace });
        let body = match (candidate.body, &project_ref) {
            (Body::Issue(action), Some(p)) => {
                let issue: RecordedIssue = read(after);
                let labels = self.labels(p.project.id).await?;
                let label_of = |name: &str| {
                    labels.iter().find(|l| l.name == name).map_or_else(
                        || HookLabel::Gone {
                            title: name.to_string(),
                        },
                        label,
                    )
                };
                let issue_labels: Vec<HookLabel> =
                    issue.labels.iter().map(|name| label_of(name)).collect();
                let recorded_changes = changes(before, after);
                let mut ids: Vec<i64> = read::<RecordedIssue>(before).assignee_ids;
                ids.extend(&issue.assignee_ids);
                ids.sort_unstable();
                ids.dedup();
                let users: HashMap<i64, _> = self
                    .db
                    .users_by_ids(&ids)
                    .await?
                    .into_iter()
                    .map(|u| (u.id, u))
                    .collect();
                let assignee_of = |id: i64| {
                    users
                        .get(&id)
                        .map_or(HookAssignee::Gone { id }, |u| urls.assignee(u))
                };
                let assignees: Vec<HookAssignee> = issue
                    .assignee_ids
                    .iter()
                    .map(|id| assignee_of(*id))
                    .collect();
                let url = urls.issue_url(p, issue.iid.unwrap_or(0));
                let confidential = issue.confidential.unwrap_or(false);
                let attributes = IssueAttributes::new(
                    &issue,
                    issue_labels.clone(),
                    url,
                    event.actor_id,
                    Some(action),
                );
                body_text(&IssueHook {
                    object_kind: "issue",
                    event_type: if confidential {
                        "confidential_issue"
                    } else {
                        "issue"
                    },
                    user: actor_view,
                    project: urls.project(p),
                    object_attributes: attributes,
                    repository: urls.repository(p),
                    labels: issue_labels,
                    changes: issue_changes(&recorded_changes, label_of, assignee_of),
                    assignee: assignees.first().cloned(),
                    assignees,
                })
            }
            (Body::Note(action), Some(p)) => {
                let note: RecordedNote = read(after);
                let note_hook = |confidential: bool, noteable_url: String| NoteHook {
                    object_kind: "note",
                    event_type: if confidential {
                        "confidential_note"
                    } else {
                        "note"
                    },
                    user: actor_view.clone(),
                    project_id: p.project.id,
                    project: urls.project(p),
                    repository: urls.repository(p),
                    object_attributes: NoteAttributes::new(
                        &note,
                        p.project.id,
                        action,
                        format!("{noteable_url}#note_{}", event.subject_id),
                    ),
                    issue: None,
                    merge_request: None,
                };
                let wants_confidential = candidate.trigger == "confidential_note_hooks";
                if let Some(mr_id) = note.merge_request_id {
                    let confidential = note.internal.unwrap_or(false);
                    if confidential != wants_confidential {
                        return Ok(None);
                    }
                    let Some(mr) = self.current_merge_request(mr_id).await? else {
                        return Ok(None);
                    };
                    let (attributes, _) = self.merge_request_attributes(p, &mr, None).await?;
                    let mut hook = note_hook(confidential, attributes.url.clone());
                    hook.merge_request = Some(attributes);
                    return Ok(Some(body_text(&hook)));
                }
                let Some(issue_id) = note.issue_id else {
                    return Ok(None);
                };
                let Some(issue) = self.db.issue_by_id(issue_id).await? else {
                    return Ok(None);
                };
                let confidential = note.internal.unwrap_or(false) || issue.confidential;
                if confidential != wants_confidential {
                    return Ok(None);
                }
                let labels: Vec<HookLabel> = self
                    .db
                    .labels_of_issues(&[issue_id])
                    .await?
                    .iter()
                    .map(|l| label(&l.label))
                    .collect();
                let assignee_ids: Vec<i64> = self
                    .db
                    .assignees_of_issues(&[issue_id])
                    .await?
                    .into_iter()
                    .map(|a| a.user.id)
                    .collect();
                let issue_url = urls.issue_url(p, issue.iid);
                let mut hook = note_hook(confidential, issue_url.clone());
                hook.issue = Some(IssueAttributes::new(
                    &RecordedIssue::of(&issue, assignee_ids),
                    labels,
                    issue_url,
                    None,
                    None,
                ));
                body_text(&hook)
            }
            (Body::MergeRequest(action), Some(p)) => {
                let mr: RecordedMergeRequest = read(after);
                let (attributes, mr_labels) = self
                    .merge_request_attributes(p, &mr, Some((event.actor_id, action)))
                    .await?;
                let mut ids = mr.assignee_ids.clone();
                ids.extend(&mr.reviewer_ids);
                ids.sort_unstable();
                ids.dedup();
                let users: HashMap<i64, _> = self
                    .db
                    .users_by_ids(&ids)
                    .await?
                    .into_iter()
                    .map(|u| (u.id, u))
                    .collect();
                let people = |ids: &[i64]| -> Vec<HookAssignee> {
                    ids.iter()
                        .map(|id| {
                            users
                                .get(id)
                                .map_or(HookAssignee::Gone { id: *id }, |u| urls.assignee(u))
                        })
                        .collect()
                };
                let recorded_changes = changes(before, after);
                body_text(&MergeRequestHook {
                    object_kind: "merge_request",
                    event_type: "merge_request",
                    user: actor_view,
                    project: urls.project(p),
                    object_attributes: attributes,
                    repository: urls.repository(p),
                    labels: mr_labels,
                    changes: merge_request_changes(&recorded_changes),
                    assignees: people(&mr.assignee_ids),
                    reviewers: people(&mr.reviewer_ids),
                })
            }
            (Body::Push | Body::TagPush, Some(p)) => {
                let Some(pushed) = pushed(after) else {
                    return Ok(None);
                };
                body_text(&urls.push(p, &pushed, candidate.body == Body::TagPush))
            }
            (Body::RepositoryUpdate, Some(p)) => {
                let Some(pushed) = pushed(after) else {
                    return Ok(None);
                };
                body_text(&urls.repository_update(p, &pushed))
            }
            (Body::System(name), _) => match self.system(name, event, before, after).await? {
                Some(body) => body,
                None => return Ok(None),
            },
            _ => return Ok(None),
        };
        Ok(Some(body))
    }

    /// A system hook body (GitLab's "System hooks" page), as it is sent.
    async fn system(
        &self,
        name: &'static str,
        event: &EventRow,
        before: &Value,
        after: &Value,
    ) -> crate::store::Result<Option<String>> {
        let current = if after.is_null() { before } else { after };
        let times: RecordedTimes = read(current);
        let stamp = SystemStamp {
            created_at: times.created_at.map(iso_seconds),
            updated_at: times.updated_at.map(iso_seconds),
            event_name: name,
        };
        let body = match name {
            "project_create" | "project_destroy" | "project_update" | "project_rename"
            | "project_transfer" => {
                let project: RecordedProject = read(current);
                let namespace_id = project.namespace_id.unwrap_or(0);
                let Some(namespace) = self.namespace(namespace_id).await? else {
                    return Ok(None);
                };
                let (owner_name, owner_email) = match namespace.owner_id {
                    Some(owner) if namespace.kind == "user" => match self.user(owner).await? {
                        Some(user) => (user.name.clone(), user.email.clone()),
                        None => (namespace.name.clone(), String::new()),
                    },
                    _ => (namespace.name.clone(), String::new()),
                };
                let old_path_with_namespace = match name {
                    "project_rename" | "project_transfer" => {
                        let old: RecordedProject = read(before);
                        let old_namespace = match old.namespace_id {
                            Some(id) if id != namespace_id => self.namespace(id).await?,
                            _ => Some(namespace.clone()),
                        };
                        let old_path = old_namespace.map_or_else(String::new, |ns| ns.full_path);
                        Some(format!("{old_path}/{}", old.path))
                    }
                    _ => None,
                };
                body_text(&ProjectEvent {
                    stamp,
                    path_with_namespace: format!("{}/{}", namespace.full_path, project.path),
                    name: project.name,
                    owner_email: owner_email.clone(),
                    owner_name: owner_name.clone(),
                    owners: vec![Owner {
                        name: owner_name,
                        email: owner_email,
                    }],
                    path: project.path,
                    project_id: event.subject_id,
                    project_namespace_id: namespace_id,
                    project_visibility: project.visibility,
                    old_path_with_namespace,
                })
            }
            "user_create" | "user_destroy" | "user_rename" => {
                let user: RecordedUser = read(current);
                body_text(&UserEvent {
                    stamp,
                    email: user.email,
                    name: user.name,
                    username: user.username,
                    user_id: event.subject_id,
                    old_username: (name == "user_rename")
                        .then(|| read::<RecordedUser>(before).username),
                })
            }
            "key_create" | "key_destroy" => {
                let key: RecordedKey = read(current);
                let username = self.user(key.user_id).await?.map(|u| u.username);
                body_text(&KeyEvent {
                    stamp: SystemStamp {
                        // GitLab's example writes a key's creation time this way.
                        created_at: times.created_at.map(utc_text),
                        ..stamp
                    },
                    username,
                    key: key.public_key,
                    id: event.subject_id,
                })
            }
            "group_create" | "group_destroy" | "group_rename" => {
                let group: RecordedGroup = read(current);
                let renamed = name == "group_rename";
                let old: RecordedGroup = read(before);
                body_text(&GroupEvent {
                    stamp,
                    name: group.name,
                    path: group.path,
                    group_id: event.subject_id,
                    full_path: renamed.then_some(group.full_path),
                    old_path: renamed.then_some(old.path),
                    old_full_path: renamed.then_some(old.full_path),
                })
            }
            _ => {
                // Memberships.
                let Some(user) = self.user(event.subject_id).await? else {
                    return Ok(None);
                };
                let member: RecordedMember = read(current);
                let access = access_level_name(member.access_level);
                let user = MemberUser {
                    user_email: user.email,
                    user_name: user.name,
                    user_username: user.username,
                    user_id: user.id,
                };
                if member.source_type == "Project" {
                    let Some(project) = self.project(member.source_id).await? else {
                        return Ok(None);
                    };
                    let Some(namespace) = self.namespace(project.namespace_id).await? else {
                        return Ok(None);
                    };
                    body_text(&ProjectMemberEvent {
                        stamp,
                        access_level: access,
                        project_id: project.id,
                        project_path_with_namespace: format!(
                            "{}/{}",
                            namespace.full_path, project.path
                        ),
                        project_name: project.name,
                        project_path: project.path,
                        project_visibility: project.visibility,
                        user,
                    })
                } else {
                    let Some(group) = self.namespace(member.source_id).await? else {
                        return Ok(None);
                    };
                    body_text(&GroupMemberEvent {
                        stamp,
                        group_access: access,
                        group_id: group.id,
                        group_name: group.name,
                        group_path: group.path,
                        user,
                    })
                }
            }
        };
        Ok(Some(body))
    }
}

/// `object` as the outbox recorded it, read into `T`; what was not recorded (a creation's
/// `before`, a removal's `after`) reads as empty, as does what `T` cannot read.
fn read<T: DeserializeOwned + Default>(object: &Value) -> T {
    T::deserialize(object).unwrap_or_default()
}

/// A push event's object; `None` if it is not one (a push records one always).
fn pushed(after: &Value) -> Option<PushRecord> {
    PushRecord::deserialize(after).ok()
}

/// The timestamps of a recorded object.
#[derive(Default, Deserialize)]
#[serde(default)]
struct RecordedTimes {
    created_at: Option<i64>,
    updated_at: Option<i64>,
}

/// What the system hooks show of a recorded project.
#[derive(Default, Deserialize)]
#[serde(default)]
struct RecordedProject {
    name: String,
    path: String,
    namespace_id: Option<i64>,
    visibility: Option<Visibility>,
}

/// What the system hooks show of a recorded user.
#[derive(Default, Deserialize)]
#[serde(default)]
struct RecordedUser {
    email: String,
    name: String,
    username: String,
}

/// What the system hooks show of a recorded SSH key.
#[derive(Default, Deserialize)]
#[serde(default)]
struct RecordedKey {
    user_id: i64,
    public_key: String,
}

/// What the system hooks show of a recorded group.
#[derive(Default, Deserialize)]
#[serde(default)]
struct RecordedGroup {
    name: String,
    path: String,
    full_path: String,
}

/// What the system hooks show of a recorded membership.
#[derive(Default, Deserialize)]
#[serde(default)]
struct RecordedMember {
    source_type: String,
    source_id: i64,
    access_level: i64,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event(kind: &str, project_id: Option<i64>, recorded: &Value) -> EventRow {
        EventRow {
            id: 1,
            kind: EventKind::parse(kind).unwrap(),
            actor_id: Some(1),
            project_id,
            subject_id: 5,
            payload: recorded.to_string(),
            created_at: 0,
        }
    }

    #[test]
    fn confidential_issues_go_to_the_confidential_toggle() {
        let recorded = json!({"after": {"confidential": true}, "before": null});
        let found = candidates(&event("issue.opened", Some(3), &recorded), &recorded);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].event_name, "Confidential Issue Hook");
        assert_eq!(
            found[0].audience,
            Audience::Project {
                project_id: 3,
                toggle: "confidential_issues_events",
                branch: None
            }
        );
    }

    #[test]
    fn pushes_reach_project_and_system_hooks_with_their_branch() {
        let recorded = json!({"after": {"ref": "refs/heads/feature/x"}, "before": null});
        let found = candidates(&event("push", Some(3), &recorded), &recorded);
        let names: Vec<_> = found.iter().map(|c| (c.event_name, c.body)).collect();
        assert_eq!(
            names,
            [
                ("Push Hook", Body::Push),
                ("System Hook", Body::Push),
                ("System Hook", Body::RepositoryUpdate)
            ]
        );
        assert!(
            matches!(&found[0].audience, Audience::Project { branch: Some(b), .. } if b == "feature/x")
        );
    }

    #[test]
    fn group_updates_are_system_events_only_when_renamed() {
        let same = json!({"before": {"full_path": "a"}, "after": {"full_path": "a"}});
        assert!(candidates(&event("group.updated", None, &same), &same).is_empty());
        let renamed = json!({"before": {"full_path": "a"}, "after": {"full_path": "b"}});
        let found = candidates(&event("group.updated", None, &renamed), &renamed);
        assert_eq!(found[0].body, Body::System("group_rename"));
    }

    #[test]
    fn memberships_name_their_source() {
        let project = json!({"after": {"source_type": "Project"}, "before": null});
        let found = candidates(&event("member.added", Some(3), &project), &project);
        assert_eq!(found[0].body, Body::System("user_add_to_team"));
        let group = json!({"before": {"source_type": "Namespace"}, "after": null});
        let found = candidates(&event("member.removed", None, &group), &group);
        assert_eq!(found[0].body, Body::System("user_remove_from_group"));
    }
}
