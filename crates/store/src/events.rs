//! Domain events: what changed, as webhooks, system hooks and audit will need it. The domain
//! decides an event's kind and actor; the store records it in the outbox (`domain_events`)
//! inside the transaction of the change it describes, so a change and its event are never one
//! without the other (`store/outbox.rs`). Webhook and system hook delivery reads it
//! (`crate::webhooks::dispatch`), matching on the kinds' names.
//!
//! An event's payload is JSON: `{"actor_id", "before", "after", "changes"}`, where `before` and
//! `after` are the object's stored representation (secrets never included) and `changes` maps
//! each field whose value differs to `{"previous", "current"}`, the shape of GitLab's hook
//! payloads.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

stored_names! {
    /// Every kind of change that is recorded. The names are stable: consumers match on them
    /// (`Push` and `TagPush` carry GitLab's hook names: the webhooks format their Push Hook
    /// and Tag Push Hook from these events' `after`).
    pub enum EventKind {
        IssueOpened = "issue.opened",
        IssueUpdated = "issue.updated",
        IssueClosed = "issue.closed",
        IssueReopened = "issue.reopened",
        IssueMoved = "issue.moved",
        IssueDeleted = "issue.deleted",
        IssueSubscribed = "issue.subscribed",
        IssueUnsubscribed = "issue.unsubscribed",
        MergeRequestOpened = "merge_request.opened",
        MergeRequestUpdated = "merge_request.updated",
        MergeRequestClosed = "merge_request.closed",
        MergeRequestReopened = "merge_request.reopened",
        MergeRequestMerged = "merge_request.merged",
        MergeRequestApproved = "merge_request.approved",
        MergeRequestUnapproved = "merge_request.unapproved",
        MergeRequestDeleted = "merge_request.deleted",
        MergeRequestSubscribed = "merge_request.subscribed",
        MergeRequestUnsubscribed = "merge_request.unsubscribed",
        TodoMarked = "todo.marked",
        AwardEmojiAwarded = "award_emoji.awarded",
        AwardEmojiRevoked = "award_emoji.revoked",
        NoteCreated = "note.created",
        NoteUpdated = "note.updated",
        NoteDeleted = "note.deleted",
        ProjectCreated = "project.created",
        ProjectUpdated = "project.updated",
        ProjectRenamed = "project.renamed",
        ProjectTransferred = "project.transferred",
        ProjectArchived = "project.archived",
        ProjectUnarchived = "project.unarchived",
        ProjectMarkedForDeletion = "project.marked_for_deletion",
        ProjectRestored = "project.restored",
        ProjectDestroyed = "project.destroyed",
        GroupCreated = "group.created",
        GroupUpdated = "group.updated",
        GroupDestroyed = "group.destroyed",
        MemberAdded = "member.added",
        MemberUpdated = "member.updated",
        MemberRemoved = "member.removed",
        UserCreated = "user.created",
        UserUpdated = "user.updated",
        UserRenamed = "user.renamed",
        UserBlocked = "user.blocked",
        UserUnblocked = "user.unblocked",
        UserDeactivated = "user.deactivated",
        UserActivated = "user.activated",
        UserDestroyed = "user.destroyed",
        KeyAdded = "key.added",
        KeyRemoved = "key.removed",
        GpgKeyAdded = "gpg_key.added",
        GpgKeyRemoved = "gpg_key.removed",
        EmailRemoved = "email.removed",
        TokenCreated = "token.created",
        TokenRevoked = "token.revoked",
        ProtectedBranchCreated = "protected_branch.created",
        ProtectedBranchUpdated = "protected_branch.updated",
        ProtectedBranchDestroyed = "protected_branch.destroyed",
        ProtectedTagCreated = "protected_tag.created",
        ProtectedTagDestroyed = "protected_tag.destroyed",
        /// A branch was created, updated or deleted by a push (one event per branch).
        Push = "push",
        /// A tag was created, updated or deleted by a push (one event per tag).
        TagPush = "tag_push",
    }
}

/// One recorded change. `before` is null for a creation and `after` null for a removal.
#[derive(Debug, Clone)]
pub struct Event {
    pub kind: EventKind,
    /// Who made the change (none for the system itself, e.g. the deletion sweep).
    pub actor_id: Option<i64>,
    /// The project it happened in, for project hooks to find their events.
    pub project_id: Option<i64>,
    /// The id of the changed object (issue, note, project, user, key, token, member's user...).
    pub subject_id: i64,
    pub before: Value,
    pub after: Value,
}

impl Event {
    pub fn new(kind: EventKind, actor_id: Option<i64>, subject_id: i64) -> Event {
        Event {
            kind,
            actor_id,
            project_id: None,
            subject_id,
            before: Value::Null,
            after: Value::Null,
        }
    }

    pub fn in_project(mut self, project_id: i64) -> Event {
        self.project_id = Some(project_id);
        self
    }

    pub fn before(mut self, object: &impl Serialize) -> Event {
        self.before = represent(object);
        self
    }

    pub fn after(mut self, object: &impl Serialize) -> Event {
        self.after = represent(object);
        self
    }

    /// The stored payload: actor, before, after and the changed fields.
    pub fn payload(&self) -> String {
        json!({
            "actor_id": self.actor_id,
            "before": self.before,
            "after": self.after,
            "changes": changes(&self.before, &self.after),
        })
        .to_string()
    }
}

fn represent(object: &impl Serialize) -> Value {
    // Rows serialise to plain JSON objects; a failure would be a bug in a row type.
    serde_json::to_value(object).unwrap_or(Value::Null)
}

/// The fields of `after` whose values differ from `before`'s (or that only one side has), as
/// GitLab's hook `changes`: `{"field": {"previous": ..., "current": ...}}`. A creation or a
/// removal (one side null) has no changes.
pub fn changes(before: &Value, after: &Value) -> Map<String, Value> {
    let (Value::Object(before), Value::Object(after)) = (before, after) else {
        return Map::new();
    };
    let mut changed = Map::new();
    for (field, current) in after {
        let previous = before.get(field).unwrap_or(&Value::Null);
        if previous != current {
            changed.insert(
                field.clone(),
                json!({ "previous": previous, "current": current }),
            );
        }
    }
    for (field, previous) in before {
        if !after.contains_key(field) {
            changed.insert(
                field.clone(),
                json!({ "previous": previous, "current": Value::Null }),
            );
        }
    }
    changed
}

/// What a `push` or `tag_push` event records (its `after`): the reference update, the pusher
/// and the commits, the fields of GitLab's Push Hook and Tag Push Hook that come from the push
/// (the webhooks add the project's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushRecord {
    pub before: String,
    pub after: String,
    #[serde(rename = "ref")]
    pub reference: String,
    /// Events recorded before pushes knew their protection carry none: not protected.
    #[serde(default)]
    pub ref_protected: bool,
    pub checkout_sha: Option<String>,
    /// An annotated tag's message.
    pub message: Option<String>,
    pub user_id: i64,
    pub user_name: String,
    pub user_username: String,
    pub user_email: String,
    pub user_avatar: Option<String>,
    /// The last of the commits the push brought (all of them: `total_commits_count`).
    pub commits: Vec<CommitRecord>,
    pub total_commits_count: i64,
}

/// A commit a [`PushRecord`] lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitRecord {
    pub id: String,
    pub message: String,
    /// The message's first line.
    pub title: String,
    /// ISO 8601 with the author's offset.
    pub timestamp: String,
    pub author: CommitAuthor,
    pub added: Vec<String>,
    pub modified: Vec<String>,
    pub removed: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitAuthor {
    pub name: String,
    pub email: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_list_only_differing_fields() {
        let before = json!({"title": "a", "state": "opened", "labels": ["x"]});
        let after = json!({"title": "b", "state": "opened", "labels": ["x", "y"]});
        let changed = changes(&before, &after);
        assert_eq!(
            Value::Object(changed),
            json!({
                "title": {"previous": "a", "current": "b"},
                "labels": {"previous": ["x"], "current": ["x", "y"]},
            })
        );
    }

    #[test]
    fn fields_on_one_side_only_are_changes() {
        let changed = changes(&json!({"a": 1}), &json!({"b": 2}));
        assert_eq!(
            Value::Object(changed),
            json!({
                "a": {"previous": 1, "current": null},
                "b": {"previous": null, "current": 2},
            })
        );
    }

    #[test]
    fn creations_and_removals_have_no_changes() {
        assert!(changes(&Value::Null, &json!({"a": 1})).is_empty());
        assert!(changes(&json!({"a": 1}), &Value::Null).is_empty());
    }

    #[test]
    fn payload_carries_actor_and_objects() {
        #[derive(Serialize)]
        struct Row {
            title: &'static str,
        }
        let event = Event::new(EventKind::IssueUpdated, Some(7), 3)
            .in_project(9)
            .before(&Row { title: "a" })
            .after(&Row { title: "b" });
        let payload: Value = serde_json::from_str(&event.payload()).unwrap();
        assert_eq!(payload["actor_id"], 7);
        assert_eq!(payload["before"]["title"], "a");
        assert_eq!(payload["changes"]["title"]["current"], "b");
        assert_eq!(event.kind.as_str(), "issue.updated");
    }
}
