//! GitLab's webhook and system hook bodies ("Webhook events" and "System hooks" in GitLab's
//! documentation), field by field, from rows and the objects the outbox recorded. These are
//! the standard payloads every formatter receives; `crate::webhooks::payload` loads what they
//! need. Timestamps follow the documented examples: `2013-12-03T17:15:43Z` in an issue's
//! attributes and in system hooks, `2015-05-17 17:06:40 UTC` in notes and in `changes`.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value, json};

use super::user::UserViews;
use crate::model::issue_text::human_duration;
use crate::model::labels::LabelRow;
use crate::model::namespaces::NamespaceRow;
use crate::model::projects::ProjectRow;
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

    fn avatar_url(&self, project: &ProjectRef) -> Value {
        match &project.project.avatar_path {
            Some(file) => json!(format!(
                "{}/uploads/-/system/project/avatar/{}/{file}",
                self.base_url, project.project.id
            )),
            None => Value::Null,
        }
    }

    /// The `project` object of every project event.
    pub fn project(&self, p: &ProjectRef) -> Value {
        let web_url = self.web_url(p);
        let http_url = format!("{web_url}.git");
        let ssh_url = self.ssh_url(p);
        json!({
            "id": p.project.id,
            "name": p.project.name,
            "description": p.project.description.clone().unwrap_or_default(),
            "web_url": web_url,
            "avatar_url": self.avatar_url(p),
            "git_ssh_url": ssh_url,
            "git_http_url": http_url,
            "namespace": p.namespace.name,
            "visibility_level": p.project.visibility.level(),
            "path_with_namespace": p.full_path(),
            "default_branch": p.project.default_branch,
            "ci_config_path": null,
            "homepage": web_url,
            "url": http_url,
            "ssh_url": ssh_url,
            "http_url": http_url,
        })
    }

    /// The `repository` object of issue and note events.
    pub fn repository(&self, p: &ProjectRef) -> Value {
        let web_url = self.web_url(p);
        json!({
            "name": p.project.name,
            "url": format!("{web_url}.git"),
            "description": p.project.description.clone().unwrap_or_default(),
            "homepage": web_url,
        })
    }

    /// The `repository` object of push and tag push events (with the clone URLs).
    pub fn push_repository(&self, p: &ProjectRef) -> Value {
        let web_url = self.web_url(p);
        json!({
            "name": p.project.name,
            "url": self.ssh_url(p),
            "description": p.project.description.clone().unwrap_or_default(),
            "homepage": web_url,
            "git_http_url": format!("{web_url}.git"),
            "git_ssh_url": self.ssh_url(p),
            "visibility_level": p.project.visibility.level(),
        })
    }

    /// The `user` of an event (who did it).
    pub fn user(&self, user: &UserRow) -> Value {
        json!({
            "id": user.id,
            "name": user.name,
            "username": user.username,
            "avatar_url": self.users.summary(user).avatar_url,
            "email": hook_email(user),
        })
    }

    /// An assignee in `assignees`.
    pub fn assignee(&self, user: &UserRow) -> Value {
        json!({
            "id": user.id,
            "name": user.name,
            "username": user.username,
            "avatar_url": self.users.summary(user).avatar_url,
        })
    }

    /// A Push Hook or Tag Push Hook body from what the push recorded in the outbox (`push` and
    /// `tag_push` events: `before`, `after`, `ref`, `checkout_sha`, the pusher's `user_*`,
    /// `commits` and `total_commits_count`); commits get their `url`.
    pub fn push(&self, p: &ProjectRef, pushed: &Value, tag: bool) -> Value {
        let kind = if tag { "tag_push" } else { "push" };
        let mut body = Map::new();
        body.insert("object_kind".into(), json!(kind));
        body.insert("event_name".into(), json!(kind));
        let recorded = |field: &str| pushed.get(field).cloned().unwrap_or(Value::Null);
        for field in ["before", "after", "ref"] {
            body.insert(field.into(), recorded(field));
        }
        // Events recorded before pushes knew their protection carry none: not protected.
        body.insert(
            "ref_protected".into(),
            pushed.get("ref_protected").cloned().unwrap_or(json!(false)),
        );
        let pusher = [
            "user_id",
            "user_name",
            "user_username",
            "user_email",
            "user_avatar",
        ];
        for field in ["checkout_sha"]
            .into_iter()
            .chain(pusher)
            .chain(["message"])
        {
            body.insert(field.into(), recorded(field));
        }
        body.insert("project_id".into(), json!(p.project.id));
        body.insert("project".into(), self.project(p));
        let web_url = self.web_url(p);
        let commits: Vec<Value> = pushed["commits"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                let mut c = c.clone();
                let id = c
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                c["url"] = json!(format!("{web_url}/-/commit/{id}"));
                c
            })
            .collect();
        body.insert("commits".into(), json!(commits));
        body.insert(
            "total_commits_count".into(),
            pushed
                .get("total_commits_count")
                .cloned()
                .unwrap_or(json!(0)),
        );
        body.insert("push_options".into(), json!({}));
        body.insert("repository".into(), self.push_repository(p));
        Value::Object(body)
    }

    /// The system hooks' `repository_update` body of a push.
    pub fn repository_update(&self, p: &ProjectRef, pushed: &Value) -> Value {
        json!({
            "event_name": "repository_update",
            "user_id": pushed.get("user_id"),
            "user_name": pushed.get("user_name"),
            "user_email": pushed.get("user_email"),
            "user_avatar": pushed.get("user_avatar"),
            "project_id": p.project.id,
            "project": self.project(p),
            "changes": [{
                "before": pushed.get("before"),
                "after": pushed.get("after"),
                "ref": pushed.get("ref"),
            }],
            "refs": [pushed.get("ref")],
        })
    }

    /// The issue's URL on the web.
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

/// A label as payloads show it. Trellis keeps no label timestamps in its rows (null).
pub fn label(label: &LabelRow) -> Value {
    json!({
        "id": label.id,
        "title": label.name,
        "color": label.color,
        "project_id": label.project_id,
        "created_at": null,
        "updated_at": null,
        "template": false,
        "description": label.description,
        "type": "ProjectLabel",
        "group_id": null,
    })
}

/// What an issue's `object_attributes` (and a note's `issue`) are built from: the issue as
/// the outbox recorded it (its row, label names and assignee ids).
pub struct IssueAttrs<'a> {
    pub issue: &'a Value,
    pub labels: Vec<Value>,
    pub url: String,
    pub updated_by_id: Option<i64>,
}

fn int(v: &Value, field: &str) -> i64 {
    v.get(field).and_then(Value::as_i64).unwrap_or(0)
}

fn ms_field(v: &Value, field: &str, format: fn(i64) -> String) -> Value {
    v.get(field)
        .and_then(Value::as_i64)
        .map_or(Value::Null, |ms| json!(format(ms)))
}

impl IssueAttrs<'_> {
    /// GitLab's `Issue#hook_attrs`; `action` is added for the issue's own events.
    pub fn render(&self, action: Option<&str>) -> Value {
        let i = self.issue;
        let assignee_ids = i.get("assignee_ids").cloned().unwrap_or(json!([]));
        let first_assignee = assignee_ids.get(0).cloned().unwrap_or(Value::Null);
        let state = i.get("state").and_then(Value::as_str).unwrap_or("opened");
        let estimate = int(i, "time_estimate");
        let spent = int(i, "total_time_spent");
        let mut out = json!({
            "id": i.get("id"),
            "title": i.get("title"),
            "assignee_ids": assignee_ids,
            "assignee_id": first_assignee,
            "author_id": i.get("author_id"),
            "project_id": i.get("project_id"),
            "created_at": ms_field(i, "created_at", iso_seconds),
            "updated_at": ms_field(i, "updated_at", iso_seconds),
            "updated_by_id": self.updated_by_id,
            "last_edited_at": null,
            "last_edited_by_id": null,
            "relative_position": null,
            "description": i.get("description"),
            "milestone_id": i.get("milestone_id"),
            "state_id": state_id(state),
            "confidential": i.get("confidential"),
            "discussion_locked": i.get("discussion_locked"),
            "due_date": i.get("due_date"),
            "moved_to_id": i.get("moved_to_id"),
            "duplicated_to_id": null,
            "time_estimate": estimate,
            "total_time_spent": spent,
            "time_change": 0,
            "human_total_time_spent": human_duration(spent, false),
            "human_time_estimate": human_duration(estimate, false),
            "human_time_change": null,
            "weight": null,
            "health_status": null,
            "type": "Issue",
            "iid": i.get("iid"),
            "url": self.url,
            "state": state,
            "severity": "unknown",
            "closed_at": ms_field(i, "closed_at", iso_seconds),
            "labels": self.labels,
        });
        if let Some(action) = action {
            out["action"] = json!(action);
        }
        out
    }
}

/// GitLab's `state_id`: 1 opened, 2 closed.
pub fn state_id(state: &str) -> i64 {
    if state == "closed" { 2 } else { 1 }
}

/// The items of the JSON array `list` that `item` reads, each shown by `show`.
fn each<'a, T>(
    list: &'a Value,
    item: impl Fn(&'a Value) -> Option<T>,
    show: impl Fn(T) -> Value,
) -> Value {
    Value::Array(
        list.as_array()
            .into_iter()
            .flatten()
            .filter_map(item)
            .map(show)
            .collect(),
    )
}

/// An issue event's `changes`, from the outbox's `{"field": {"previous", "current"}}`:
/// timestamps as `... UTC` text, `state` as `state_id`, label names as labels, assignee ids
/// as `assignees`; counters GitLab keeps elsewhere are left out.
pub fn issue_changes(
    changes: &Map<String, Value>,
    label_of: impl Fn(&str) -> Value,
    assignee_of: impl Fn(i64) -> Value,
) -> Map<String, Value> {
    let mut out = Map::new();
    for (field, change) in changes {
        let previous = &change["previous"];
        let current = &change["current"];
        let pair = |p: Value, c: Value| json!({ "previous": p, "current": c });
        match field.as_str() {
            "upvotes" | "downvotes" | "user_notes_count" => {}
            "created_at" | "updated_at" | "closed_at" => {
                let text = |v: &Value| v.as_i64().map_or(Value::Null, |ms| json!(utc_text(ms)));
                out.insert(field.clone(), pair(text(previous), text(current)));
            }
            "state" => {
                let id = |v: &Value| v.as_str().map_or(Value::Null, |s| json!(state_id(s)));
                out.insert("state_id".into(), pair(id(previous), id(current)));
            }
            "labels" => {
                let labels = |v: &Value| each(v, Value::as_str, &label_of);
                out.insert("labels".into(), pair(labels(previous), labels(current)));
            }
            "assignee_ids" => {
                let users = |v: &Value| each(v, Value::as_i64, &assignee_of);
                out.insert("assignees".into(), pair(users(previous), users(current)));
            }
            _ => {
                out.insert(field.clone(), change.clone());
            }
        }
    }
    out
}

/// A note's `object_attributes` (GitLab's `Note#hook_attrs` for a note on an issue).
pub fn note_attrs(note: &Value, project_id: i64, action: &str, url: String) -> Value {
    json!({
        "id": note.get("id"),
        "note": note.get("body"),
        "noteable_type": "Issue",
        "author_id": note.get("author_id"),
        "created_at": ms_field(note, "created_at", utc_text),
        "updated_at": ms_field(note, "updated_at", utc_text),
        "project_id": project_id,
        "attachment": null,
        "line_code": null,
        "commit_id": "",
        "noteable_id": note.get("issue_id"),
        "system": note.get("system"),
        "internal": note.get("internal"),
        "st_diff": null,
        "action": action,
        "url": url,
    })
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
            |name| json!({ "title": name }),
            |id| json!({ "id": id }),
        );
        assert_eq!(out["state_id"], json!({"previous": 1, "current": 2}));
        assert_eq!(
            out["labels"]["current"],
            json!([{"title": "a"}, {"title": "b"}])
        );
        assert_eq!(out["assignees"]["current"], json!([{"id": 3}]));
        assert_eq!(out["updated_at"]["previous"], "2013-12-03 17:15:43 UTC");
        assert_eq!(out["title"]["current"], "y");
        assert!(!out.contains_key("upvotes"));
    }
}

#[cfg(test)]
mod push_tests {
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
    fn pushed() -> Value {
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
            users: UserViews {
                base_url: "http://example.com",
                avatar_service: false,
            },
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
        let body = urls().push(&p, &pushed(), false);
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
        tag["ref"] = json!("refs/tags/v1.0.0");
        let body = urls().push(&p, &tag, true);
        assert_eq!(body["object_kind"], "tag_push");
        assert_eq!(body["event_name"], "tag_push");
        let update = urls().repository_update(&p, &pushed());
        assert_eq!(update["event_name"], "repository_update");
        assert_eq!(update["refs"], json!(["refs/heads/master"]));
        assert_eq!(update["changes"][0]["after"], pushed()["after"]);
    }
}
