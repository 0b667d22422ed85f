//! Who may see a group: members of it or of a group above it, anyone it is open to (public;
//! internal for signed-in non-external users), members of anything below it, and
//! administrators. A group the caller may not see is "not found".

use super::Scope;
use crate::access_level::AccessLevel;
use crate::model::namespaces::NamespaceRow;
use crate::model::today;
use crate::services::Refusal;

/// A group with the caller's level in it (direct or inherited).
pub struct GroupCtx {
    pub group: NamespaceRow,
    pub level: Option<AccessLevel>,
    pub admin: bool,
}

impl GroupCtx {
    /// Forbidden unless the caller is an administrator or has `min` or above.
    pub fn require(&self, min: AccessLevel) -> Result<(), Refusal> {
        if self.admin || self.level.unwrap_or_default() >= min {
            Ok(())
        } else {
            Err(Refusal::Forbidden(None))
        }
    }
}

/// The group named by `key` (id or full path) if the caller may see it, else "Group" not
/// found.
pub async fn group(scope: &Scope<'_>, key: &str) -> Result<GroupCtx, Refusal> {
    let group = scope
        .db()
        .namespace_by_key(key.trim())
        .await?
        .filter(NamespaceRow::is_group)
        .ok_or(Refusal::NotFound("Group"))?;
    let level = match scope.caller {
        Some(caller) => scope
            .db()
            .group_access(caller.user.id, &group.ancestry(), &today())
            .await?
            .map(AccessLevel::from_stored),
        None => None,
    };
    let ctx = GroupCtx {
        group,
        level,
        admin: scope.is_admin(),
    };
    if ctx.admin || ctx.level.is_some() || scope.open_to(ctx.group.visibility) {
        return Ok(ctx);
    }
    if let Some(caller) = scope.caller
        && scope
            .db()
            .member_below(caller.user.id, &ctx.group.traversal)
            .await?
    {
        return Ok(ctx);
    }
    Err(Refusal::NotFound("Group"))
}
