//! Namespaces: groups and users' personal namespaces.

use super::visibility::Visibility;

#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct NamespaceRow {
    pub id: i64,
    pub kind: String,
    pub owner_id: Option<i64>,
    pub parent_id: Option<i64>,
    pub name: String,
    pub path: String,
    pub full_path: String,
    pub full_name: String,
    pub traversal: String,
    pub description: String,
    pub visibility: Visibility,
    pub avatar_path: Option<String>,
    /// Never part of an event's payload: it holds the runners token.
    #[serde(skip)]
    pub settings: String,
    pub created_at: i64,
    pub updated_at: i64,
}

impl NamespaceRow {
    pub fn is_group(&self) -> bool {
        self.kind == "group"
    }

    /// The ids from the root down to this namespace.
    pub fn ancestry(&self) -> Vec<i64> {
        self.traversal
            .split('/')
            .filter_map(|s| s.parse().ok())
            .collect()
    }

    pub fn settings_json(&self) -> serde_json::Map<String, serde_json::Value> {
        serde_json::from_str(&self.settings).unwrap_or_default()
    }

    /// The group's own initial branch name for new projects (GitLab's group
    /// `default_branch`), when it sets one.
    pub fn default_branch_name(&self) -> Option<String> {
        match self.settings_json().remove("default_branch") {
            Some(serde_json::Value::String(name)) if !name.trim().is_empty() => Some(name),
            _ => None,
        }
    }
}
