//! GitLab's protected branch and protected tag representations (`API::Entities::ProtectedBranch`,
//! `API::Entities::ProtectedTag`).

use serde_json::{Value, json};

use crate::model::protected_branches::{AccessLevelRow, ProtectedBranch};
use crate::model::protected_tags::ProtectedTagRow;

pub fn protected_branch(branch: &ProtectedBranch) -> Value {
    let levels = |kind: &str| -> Vec<Value> {
        branch
            .levels(kind)
            .map(|level| access_level(level, kind == "push"))
            .collect()
    };
    json!({
        "id": branch.row.id,
        "name": branch.row.name,
        "push_access_levels": levels("push"),
        "merge_access_levels": levels("merge"),
        "unprotect_access_levels": levels("unprotect"),
        "allow_force_push": branch.row.allow_force_push,
        "code_owner_approval_required": branch.row.code_owner_approval_required,
    })
}

/// A protected tag: its one create level, shown with the tag's id (it has no row of its own).
pub fn protected_tag(tag: &ProtectedTagRow) -> Value {
    json!({
        "name": tag.name,
        "create_access_levels": [{
            "id": tag.id,
            "access_level": tag.create_access_level,
            "access_level_description": describe(tag.create_access_level),
            "user_id": null,
            "group_id": null,
            "deploy_key_id": null,
        }],
    })
}

/// One access level; push levels also name a deploy key (never set here).
fn access_level(level: &AccessLevelRow, push: bool) -> Value {
    let mut view = json!({
        "id": level.id,
        "access_level": level.access_level,
        "access_level_description": describe(level.access_level),
        "user_id": null,
        "group_id": null,
    });
    if push {
        view["deploy_key_id"] = Value::Null;
    }
    view
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
