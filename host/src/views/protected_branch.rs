//! GitLab's protected branch and protected tag representations (`API::Entities::ProtectedBranch`,
//! `API::Entities::ProtectedTag`).

use serde::Serialize;
use utoipa::ToSchema;

use crate::model::protected_branches::{AccessLevelRow, ProtectedBranch};
use crate::model::protected_tags::ProtectedTagRow;

/// CE's protected branch. `code_owner_approval_required`, `inherited` and
/// `unprotect_access_levels` are GitLab EE's keys: stored when given, not shown.
#[derive(Clone, Serialize, ToSchema)]
pub struct ProtectedBranchView {
    pub id: i64,
    pub name: String,
    pub push_access_levels: Vec<AccessLevelView>,
    pub merge_access_levels: Vec<AccessLevelView>,
    pub allow_force_push: bool,
}

/// One access level of a protected ref (CE's `ProtectedRefAccess`). Deploy keys are never
/// named here (`null`); push and create levels carry `deploy_key_id`, merge levels do not.
/// `user_id` and `group_id` are GitLab EE's keys.
#[derive(Clone, Serialize, ToSchema)]
pub struct AccessLevelView {
    pub id: i64,
    pub access_level: i64,
    pub access_level_description: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deploy_key_id: Option<Option<i64>>,
}

impl AccessLevelView {
    fn new(id: i64, access_level: i64, with_deploy_key: bool) -> Self {
        AccessLevelView {
            id,
            access_level,
            access_level_description: describe(access_level),
            deploy_key_id: with_deploy_key.then_some(None),
        }
    }
}

#[derive(Clone, Serialize, ToSchema)]
pub struct ProtectedTagView {
    pub name: String,
    pub create_access_levels: Vec<AccessLevelView>,
}

pub fn protected_branch(branch: &ProtectedBranch) -> ProtectedBranchView {
    let levels = |kind: &str| -> Vec<AccessLevelView> {
        branch
            .levels(kind)
            .map(|level: &AccessLevelRow| {
                AccessLevelView::new(level.id, level.access_level, kind == "push")
            })
            .collect()
    };
    ProtectedBranchView {
        id: branch.row.id,
        name: branch.row.name.clone(),
        push_access_levels: levels("push"),
        merge_access_levels: levels("merge"),
        allow_force_push: branch.row.allow_force_push,
    }
}

/// A protected tag: its one create level, shown with the tag's id (it has no row of its own).
pub fn protected_tag(tag: &ProtectedTagRow) -> ProtectedTagView {
    ProtectedTagView {
        name: tag.name.clone(),
        create_access_levels: vec![AccessLevelView::new(tag.id, tag.create_access_level, true)],
    }
}

/// GitLab's `access_level_description` of a protected ref's level.
pub fn describe(level: i64) -> &'static str {
    match level {
        0 => "No one",
        30 => "Developers + Maintainers",
        40 => "Maintainers",
        60 => "Admins",
        _ => "Unknown",
    }
}
