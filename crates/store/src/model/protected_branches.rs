//! Protected branches as stored: the branch (or wildcard pattern) and its access levels.

use serde::Serialize;

use super::Flag;

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct ProtectedBranchRow {
    pub id: i64,
    pub project_id: i64,
    pub name: String,
    #[sqlx(try_from = "Flag")]
    pub allow_force_push: bool,
    #[sqlx(try_from = "Flag")]
    pub code_owner_approval_required: bool,
}

/// One of a protected branch's push, merge or unprotect access levels.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct AccessLevelRow {
    pub id: i64,
    pub protected_branch_id: i64,
    /// `push`, `merge` or `unprotect`.
    pub kind: String,
    pub access_level: i64,
}

/// A protected branch with its access levels.
#[derive(Debug, Clone, Serialize)]
pub struct ProtectedBranch {
    #[serde(flatten)]
    pub row: ProtectedBranchRow,
    pub access_levels: Vec<AccessLevelRow>,
}

impl ProtectedBranch {
    /// The levels of one kind (`push`, `merge`, `unprotect`).
    pub fn levels<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a AccessLevelRow> + 'a {
        self.access_levels.iter().filter(move |l| l.kind == kind)
    }
}
