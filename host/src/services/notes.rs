//! Notes on issues, as GitLab's `NotePolicy` decides them: anyone who can read the issue may
//! comment, except on a locked discussion (members only); internal notes are for reporters;
//! authors edit their notes, and authors and maintainers delete them; nobody edits or deletes a
//! system note. The store writes each change with its event, whose "before" it reads inside
//! the transaction.

use super::Refusal;
use crate::model::issue_notes::NoteRow;
use crate::model::issues::IssueRow;
use crate::model::merge_requests::MergeRequestNoteRow;
use crate::store::TenantDb;

/// Who writes a note, and what their access to the issue's project allows.
pub struct Commenter {
    pub user_id: i64,
    /// An administrator of the instance.
    pub admin: bool,
    /// Guest access or above (or an administrator): may comment on a locked discussion.
    pub member: bool,
    /// Reporter access or above: may write internal notes.
    pub reporter: bool,
    /// Maintainer access or above: may delete others' notes.
    pub maintainer: bool,
    /// Owner access or above: may backdate a note (`created_at`).
    pub owner: bool,
}

/// `POST .../notes`.
pub struct CreateNote {
    pub body: String,
    /// `internal` (or the older `confidential`): reporters only.
    pub internal: bool,
    /// Owners only, in milliseconds.
    pub created_at: Option<i64>,
}

/// `PUT .../notes/:note_id`.
pub struct UpdateNote {
    pub body: String,
}

/// What the note rules read of a note, whatever it is on (an issue, a merge request).
pub trait Authored {
    fn author_id(&self) -> i64;
    fn system(&self) -> bool;
}

impl Authored for NoteRow {
    fn author_id(&self) -> i64 {
        self.author_id
    }

    fn system(&self) -> bool {
        self.system
    }
}

impl Authored for MergeRequestNoteRow {
    fn author_id(&self) -> i64 {
        self.author_id
    }

    fn system(&self) -> bool {
        self.system
    }
}

/// A locked discussion takes comments from members only. Decided before the note's
/// parameters are read (GitLab answers 403 before 400).
pub fn may_comment(commenter: &Commenter, issue: &IssueRow) -> Result<(), Refusal> {
    may_comment_when(commenter, issue.discussion_locked)
}

pub fn may_comment_when(commenter: &Commenter, discussion_locked: bool) -> Result<(), Refusal> {
    if discussion_locked && !commenter.member {
        return Err(Refusal::forbidden());
    }
    Ok(())
}

/// Authors edit their own notes (administrators any); system notes nobody, not even
/// administrators (GitLab's policy prevents `admin_note` on them).
pub fn may_edit(commenter: &Commenter, note: &impl Authored) -> Result<(), Refusal> {
    if note.system() || (note.author_id() != commenter.user_id && !commenter.admin) {
        return Err(Refusal::forbidden());
    }
    Ok(())
}

/// Authors, maintainers and administrators delete notes; nobody a system note.
pub fn may_delete(commenter: &Commenter, note: &impl Authored) -> Result<(), Refusal> {
    let allowed = note.author_id() == commenter.user_id || commenter.admin || commenter.maintainer;
    if note.system() || !allowed {
        return Err(Refusal::forbidden());
    }
    Ok(())
}

/// Writes a note on `issue`: internal ones for reporters only, the backdating for owners only.
pub async fn create(
    db: &TenantDb,
    commenter: &Commenter,
    issue: &IssueRow,
    input: CreateNote,
) -> Result<NoteRow, Refusal> {
    may_comment(commenter, issue)?;
    if input.internal && !commenter.reporter {
        return Err(Refusal::forbidden());
    }
    let created_at = input.created_at.filter(|_| commenter.owner);
    Ok(db
        .create_note(
            issue,
            commenter.user_id,
            &input.body,
            input.internal,
            created_at,
        )
        .await?)
}

/// Replaces the body of `note` (of `issue`); returns the note as it is now.
pub async fn update(
    db: &TenantDb,
    commenter: &Commenter,
    issue: &IssueRow,
    note: &NoteRow,
    input: UpdateNote,
) -> Result<NoteRow, Refusal> {
    may_edit(commenter, note)?;
    Ok(db
        .update_note_body(issue, note.id, &input.body, commenter.user_id)
        .await?)
}

/// Deletes `note` (of `issue`) with its award emoji.
pub async fn delete(
    db: &TenantDb,
    commenter: &Commenter,
    issue: &IssueRow,
    note: &NoteRow,
) -> Result<(), Refusal> {
    may_delete(commenter, note)?;
    Ok(db.delete_note(issue, note.id, commenter.user_id).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(author_id: i64, system: bool) -> NoteRow {
        NoteRow {
            id: 1,
            issue_id: 1,
            author_id,
            body: "text".into(),
            system,
            internal: false,
            created_at: 0,
            updated_at: 0,
        }
    }

    fn commenter() -> Commenter {
        Commenter {
            user_id: 7,
            admin: false,
            member: false,
            reporter: false,
            maintainer: false,
            owner: false,
        }
    }

    #[test]
    fn authors_edit_and_maintainers_delete_but_nobody_a_system_note() {
        let author = commenter();
        assert!(may_edit(&author, &note(7, false)).is_ok());
        assert!(may_edit(&author, &note(8, false)).is_err());
        assert!(may_delete(&author, &note(7, false)).is_ok());
        assert!(may_delete(&author, &note(8, false)).is_err());
        let maintainer = Commenter {
            maintainer: true,
            ..commenter()
        };
        assert!(may_delete(&maintainer, &note(8, false)).is_ok());
        assert!(may_edit(&maintainer, &note(8, false)).is_err());
        let admin = Commenter {
            admin: true,
            ..commenter()
        };
        assert!(may_edit(&admin, &note(8, false)).is_ok());
        assert!(may_edit(&admin, &note(8, true)).is_err());
        assert!(may_delete(&admin, &note(7, true)).is_err());
    }

    #[test]
    fn locked_discussions_take_members_only() {
        assert!(may_comment_when(&commenter(), true).is_err());
        let member = Commenter {
            member: true,
            ..commenter()
        };
        assert!(may_comment_when(&member, true).is_ok());
        assert!(may_comment_when(&commenter(), false).is_ok());
    }
}
