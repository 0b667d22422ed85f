//! Milestone writes: titles are unique per project (GitLab's "has already been taken"), and a
//! state event closes or reopens one, stamping when it was closed.

use super::{Refusal, TakenOn};
use crate::model::milestones::MilestoneRow;
use crate::model::now_ms;
use crate::model::states::MilestoneState;
use crate::store::TenantDb;
use crate::store::milestones::MilestoneChanges;

const TITLE_UNIQUE: &[(&str, &str, &str)] = &[("milestones", "title", "title")];

/// The fields a create or update may set; `None` leaves a column alone, `Some(None)` clears it.
pub struct MilestoneFields {
    pub title: Option<String>,
    pub description: Option<Option<String>>,
    pub due_date: Option<Option<String>>,
    pub start_date: Option<Option<String>>,
}

impl MilestoneFields {
    fn columns(self) -> MilestoneChanges {
        let mut columns = MilestoneChanges::default();
        if let Some(title) = self.title {
            columns.set("title", title);
        }
        if let Some(description) = self.description {
            columns.set("description", description);
        }
        if let Some(due_date) = self.due_date {
            columns.set("due_date", due_date);
        }
        if let Some(start_date) = self.start_date {
            columns.set("start_date", start_date);
        }
        columns
    }
}

/// GitLab's `state_event`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateEvent {
    Close,
    Activate,
}

impl StateEvent {
    /// The state the event leads to from `state`; `None` when it changes nothing (closing a
    /// closed milestone, activating an active one).
    pub fn transition(self, state: MilestoneState) -> Option<MilestoneState> {
        match (self, state) {
            (StateEvent::Close, MilestoneState::Active) => Some(MilestoneState::Closed),
            (StateEvent::Activate, MilestoneState::Closed) => Some(MilestoneState::Active),
            _ => None,
        }
    }
}

pub async fn create(
    db: &TenantDb,
    project_id: i64,
    fields: MilestoneFields,
) -> Result<MilestoneRow, Refusal> {
    db.create_milestone(project_id, &fields.columns())
        .await
        .taken_on(TITLE_UNIQUE)
}

/// Changes `milestone`; an event to the state it is already in changes nothing.
pub async fn update(
    db: &TenantDb,
    milestone: &MilestoneRow,
    fields: MilestoneFields,
    event: Option<StateEvent>,
) -> Result<(), Refusal> {
    let mut columns = fields.columns();
    if let Some(state) = event.and_then(|e| e.transition(milestone.state)) {
        columns.set("state", state.as_str());
        match state {
            MilestoneState::Closed => columns.set("closed_at", now_ms()),
            MilestoneState::Active => columns.set("closed_at", None::<i64>),
        }
    }
    db.update_milestone(milestone.id, &columns)
        .await
        .taken_on(TITLE_UNIQUE)
}

/// Deletes `milestone`; its issues keep no milestone.
pub async fn delete(db: &TenantDb, milestone: &MilestoneRow) -> Result<(), Refusal> {
    db.delete_milestone(milestone.id).await?;
    Ok(())
}
