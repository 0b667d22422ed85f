//! Project labels and their issue counts.

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LabelRow {
    pub id: i64,
    pub project_id: i64,
    pub name: String,
    pub color: String,
    pub description: Option<String>,
    pub priority: Option<i64>,
}

/// Issue counts of one label, for `with_counts`.
#[derive(Debug, Clone, Copy, Default, sqlx::FromRow)]
pub struct LabelCounts {
    pub open_issues_count: i64,
    pub closed_issues_count: i64,
}
