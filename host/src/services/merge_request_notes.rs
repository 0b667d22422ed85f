//! Notes and discussions on merge requests, as GitLab's note services make them: a note on
//! its own, a thread (on the MR or on a line of its diff), replies, and resolving a thread.
//! Who may comment, edit and delete is `services::notes`' rule for every note; who may resolve
//! is the MR's author and Developers (GitLab's `resolve_note`).

use serde_json::{Map, Value, json};

use super::Refusal;
use super::notes::{self, Commenter};
use crate::model::merge_requests::{MergeRequestNoteRow, MergeRequestRow};
use crate::store::TenantDb;
use crate::store::merge_request_notes::NewMergeRequestNote;

/// A new note or thread (`POST .../notes`, `POST .../discussions`).
pub struct CreateMergeRequestNote {
    pub body: String,
    pub internal: bool,
    /// Owners only, in milliseconds.
    pub created_at: Option<i64>,
    /// Where in the diff a thread is (GitLab's `position`); none for a thread on the MR.
    pub position: Option<Position>,
}

/// A place in a version of the MR's diff, as GitLab's API takes and shows it.
#[derive(Debug, Clone)]
pub struct Position(Value);

impl Position {
    /// GitLab's position from the `position[...]` parameters: the three shas and the type are
    /// required, a path given alone stands for both, lines are numbers.
    pub fn from_params(given: &Map<String, Value>) -> Result<Position, Refusal> {
        let text = |key: &str| -> Option<String> {
            match given.get(key) {
                Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
                _ => None,
            }
        };
        let line = |key: &str| -> Result<Option<i64>, Refusal> {
            match given.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Number(n)) => Ok(n.as_i64()),
                Some(Value::String(s)) if s.is_empty() => Ok(None),
                Some(Value::String(s)) => s
                    .trim()
                    .parse()
                    .map(Some)
                    .map_err(|_| Refusal::InvalidParam(format!("position[{key}] is invalid"))),
                Some(_) => Err(Refusal::InvalidParam(format!("position[{key}] is invalid"))),
            }
        };
        let required = |key: &str| {
            text(key).ok_or_else(|| Refusal::InvalidParam(format!("position[{key}] is missing")))
        };
        let position_type = required("position_type")?;
        if !["text", "image", "file"].contains(&position_type.as_str()) {
            return Err(Refusal::InvalidParam(
                "position[position_type] does not have a valid value".into(),
            ));
        }
        let (base, start, head) = (
            required("base_sha")?,
            required("start_sha")?,
            required("head_sha")?,
        );
        let new_path = text("new_path").or_else(|| text("old_path"));
        let old_path = text("old_path").or_else(|| new_path.clone());
        Ok(Position(json!({
            "base_sha": base,
            "start_sha": start,
            "head_sha": head,
            "old_path": old_path,
            "new_path": new_path,
            "position_type": position_type,
            "old_line": line("old_line")?,
            "new_line": line("new_line")?,
            "line_range": given.get("line_range").cloned().unwrap_or(Value::Null),
        })))
    }
}

/// A new discussion's id: 40 hex digits, as GitLab's.
fn discussion_id() -> String {
    let bytes: [u8; 20] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn may_write(commenter: &Commenter, mr: &MergeRequestRow, internal: bool) -> Result<(), Refusal> {
    notes::may_comment_when(commenter, mr.discussion_locked)?;
    if internal && !commenter.reporter {
        return Err(Refusal::forbidden());
    }
    Ok(())
}

/// `POST .../notes`: a note on its own (an individual note); `POST .../discussions`: a
/// resolvable thread, on a line of the diff when `position` is given.
pub async fn create(
    db: &TenantDb,
    commenter: &Commenter,
    mr: &MergeRequestRow,
    input: CreateMergeRequestNote,
    thread: bool,
) -> Result<MergeRequestNoteRow, Refusal> {
    may_write(commenter, mr, input.internal)?;
    let id = discussion_id();
    let position = input.position.map(|p| p.0.to_string());
    let note_type = match (thread, &position) {
        (_, Some(_)) => Some("DiffNote"),
        (true, None) => Some("DiscussionNote"),
        (false, None) => None,
    };
    let note = NewMergeRequestNote {
        author_id: commenter.user_id,
        body: &input.body,
        internal: input.internal,
        discussion_id: &id,
        individual_note: !thread,
        note_type,
        position: position.as_deref(),
        resolvable: thread,
        created_at: input.created_at.filter(|_| commenter.owner),
    };
    Ok(db.create_merge_request_note(mr, &note).await?)
}

/// `POST .../discussions/:discussion_id/notes`: a reply, of the thread's type and place. A
/// note on its own takes no replies (GitLab's 400).
pub async fn reply(
    db: &TenantDb,
    commenter: &Commenter,
    mr: &MergeRequestRow,
    thread: &[MergeRequestNoteRow],
    body: &str,
) -> Result<MergeRequestNoteRow, Refusal> {
    let first = thread.first().ok_or(Refusal::NotFound("Discussion"))?;
    if first.individual_note {
        return Err(Refusal::Rejected(
            "400 Bad request - Note {:discussion=>[\"can't be replied to\"]}".into(),
        ));
    }
    may_write(commenter, mr, false)?;
    let note = NewMergeRequestNote {
        author_id: commenter.user_id,
        body,
        internal: false,
        discussion_id: &first.discussion_id,
        individual_note: false,
        note_type: first.note_type.as_deref(),
        position: first.position.as_deref(),
        resolvable: first.resolvable,
        created_at: None,
    };
    Ok(db.create_merge_request_note(mr, &note).await?)
}

/// Resolves or unresolves a thread: the MR's author and Developers (403 for others); a
/// discussion with nothing to resolve is GitLab's 400.
pub async fn resolve(
    db: &TenantDb,
    commenter: &Commenter,
    may_resolve: bool,
    mr: &MergeRequestRow,
    discussion_id: &str,
    resolved: bool,
) -> Result<(), Refusal> {
    if !may_resolve {
        return Err(Refusal::forbidden());
    }
    let by = resolved.then_some(commenter.user_id);
    if !db.resolve_discussion(mr.id, discussion_id, by).await? {
        return Err(Refusal::Rejected("Discussion is not resolvable".into()));
    }
    Ok(())
}

/// Replaces a note's body (its author, or an administrator).
pub async fn update(
    db: &TenantDb,
    commenter: &Commenter,
    mr: &MergeRequestRow,
    note: &MergeRequestNoteRow,
    body: &str,
) -> Result<MergeRequestNoteRow, Refusal> {
    notes::may_edit(commenter, note)?;
    Ok(db
        .update_merge_request_note(mr, note.id, body, commenter.user_id)
        .await?)
}

/// Deletes a note (its author, Maintainers, administrators).
pub async fn delete(
    db: &TenantDb,
    commenter: &Commenter,
    mr: &MergeRequestRow,
    note: &MergeRequestNoteRow,
) -> Result<(), Refusal> {
    notes::may_delete(commenter, note)?;
    Ok(db
        .delete_merge_request_note(mr, note.id, commenter.user_id)
        .await?)
}
