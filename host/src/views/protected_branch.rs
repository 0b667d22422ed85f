//! GitLab's protected branch and protected tag representations (`API::Entities::ProtectedBranch`,
//! `API::Entities::ProtectedTag`).

use serde::Serialize;
use utoipa::ToSchema;

use crate::model::protected_branches::{AccessLevelRow, ProtectedBranch};
use crate::model::protected_tags::ProtectedTagRow;

#[derive(Clone, Serialize, ToSchema)]
pub struct ProtectedBranchView {
    pub id: i64,
    pub name: String,
    pub push_access_levels: Vec<AccessLevelView>,
    pub merge_access_levels: Vec<AccessLevelView>,
    pub allow_force_push: bool,
    pub code_owner_approval_required: bool,
}

/// One access level of a protected ref. Users, groups and deploy keys are never named here
/// (`null`); push and create levels carry `deploy_key_id`, merge levels do not. The unprotect
/// levels are stored but not shown: `unprotect_access_levels` is GitLab EE's key.
#[derive(Clone, Serialize, ToSchema)]
pub struct AccessLevelView {
    pub id: i64,
    pub access_level: i64,
    pub access_level_description: &'static str,
    pub user_id: Option<i64>,
    pub group_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deploy_key_id: Option<Option<i64>>,
}

impl AccessLevelView {
    fn new(id: i64, access_level: i64, with_deploy_key: bool) -> Self {
        AccessLevelView {
            id,
            access_level,
            access_level_description: describe(access_level),
            user_id: None,
            group_id: None,
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
        code_owner_approval_required: branch.row.code_owner_approval_required,
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
