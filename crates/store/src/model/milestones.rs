//! Project milestones.

use super::states::MilestoneState;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MilestoneRow {
    pub id: i64,
    pub project_id: i64,
    pub iid: i64,
    pub title: String,
    pub description: Option<String>,
    pub state: MilestoneState,
    pub due_date: Option<String>,
    pub start_date: Option<String>,
    pub closed_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}
