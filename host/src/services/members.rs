//! Who may add, change and remove members of a project or group, at which level, and the
//! last-owner rule; then the change itself (the store records its event in the same
//! transaction).

use super::Refusal;
use crate::access_level::AccessLevel;
use crate::model::members::MemberRow;
use crate::store::TenantDb;
use crate::store::members::NAMESPACE;

/// A project or group whose members change, and the standing of the caller in it.
#[derive(Debug, Clone, Copy)]
pub struct Source {
    /// `Project` or `Namespace` (`store::members`).
    pub kind: &'static str,
    pub id: i64,
    /// The level needed to manage members: maintainers for projects, owners for groups.
    pub manage_level: AccessLevel,
    pub caller_level: AccessLevel,
    pub admin: bool,
}

impl Source {
    /// Managing members at all: administrators, or the manage level.
    pub fn require_manage(&self) -> Result<(), Refusal> {
        if self.admin || self.caller_level >= self.manage_level {
            Ok(())
        } else {
            Err(Refusal::forbidden())
        }
    }

    /// Owners' memberships (granting owner, changing or removing an owner) are for owners
    /// and administrators only.
    fn require_owner_rights(&self) -> Result<(), Refusal> {
        if self.admin || self.caller_level >= AccessLevel::Owner {
            Ok(())
        } else {
            Err(Refusal::forbidden())
        }
    }

    /// Adding a member at `level`.
    pub fn check_add(&self, level: AccessLevel) -> Result<(), Refusal> {
        self.require_manage()?;
        if level == AccessLevel::Owner {
            self.require_owner_rights()?;
        }
        Ok(())
    }

    /// Changing a member from `existing` to `level` (the manage level is checked first, as
    /// the request is read).
    pub fn check_update(&self, existing: AccessLevel, level: AccessLevel) -> Result<(), Refusal> {
        if level == AccessLevel::Owner || existing == AccessLevel::Owner {
            self.require_owner_rights()?;
        }
        Ok(())
    }

    /// Removing a member at `existing`; members may always leave.
    pub fn check_remove(&self, existing: AccessLevel, leaving: bool) -> Result<(), Refusal> {
        if leaving {
            return Ok(());
        }
        self.require_manage()?;
        if existing == AccessLevel::Owner {
            self.require_owner_rights()?;
        }
        Ok(())
    }

    /// Whether taking `existing` to `level` (`None`: removing the member) would leave the
    /// source without an owner, counting `owners`. Only groups must keep one; a project
    /// always has its namespace's owner.
    pub fn leaves_no_owner(
        &self,
        existing: AccessLevel,
        level: Option<AccessLevel>,
        owners: i64,
    ) -> bool {
        self.kind == NAMESPACE
            && existing == AccessLevel::Owner
            && level.is_none_or(|l| l < AccessLevel::Owner)
            && owners <= 1
    }

    /// Refuses, after counting the owners, a change that would leave no owner.
    async fn keep_an_owner(
        &self,
        db: &TenantDb,
        existing: AccessLevel,
        level: Option<AccessLevel>,
    ) -> Result<(), Refusal> {
        // Count only when the rule could apply: the count is a query.
        if self.leaves_no_owner(existing, level, 1)
            && self.leaves_no_owner(existing, level, db.owner_count(self.kind, self.id).await?)
        {
            return Err(Refusal::forbidden());
        }
        Ok(())
    }
}

/// A new membership.
pub struct NewMember<'a> {
    /// The user's id or username.
    pub user: &'a str,
    pub level: AccessLevel,
    pub expires_at: Option<&'a str>,
}

/// Adds a human user as a member, as `actor`.
pub async fn add(
    db: &TenantDb,
    source: &Source,
    member: NewMember<'_>,
    actor: i64,
) -> Result<MemberRow, Refusal> {
    source.check_add(member.level)?;
    let user = db
        .user_by_id_or_username(member.user.trim())
        .await?
        .filter(|u| u.user_type == "human")
        .ok_or(Refusal::NotFound("User"))?;
    db.add_member(
        source.kind,
        source.id,
        user.id,
        member.level.as_i64(),
        member.expires_at,
        actor,
    )
    .await?
    .ok_or_else(|| Refusal::Conflict("Member already exists".into()))
}

/// Changes a member's level, and expiry when `expires_at` is given (`Some(None)` clears it).
pub async fn update(
    db: &TenantDb,
    source: &Source,
    user_id: i64,
    level: AccessLevel,
    expires_at: Option<Option<&str>>,
    actor: i64,
) -> Result<MemberRow, Refusal> {
    let existing = existing_level(db, source, user_id).await?;
    source.check_update(existing, level)?;
    source.keep_an_owner(db, existing, Some(level)).await?;
    db.update_member(
        source.kind,
        source.id,
        user_id,
        level.as_i64(),
        expires_at,
        actor,
    )
    .await?
    .ok_or(Refusal::NotFound("Member"))
}

/// Removes a member (the caller leaving, or a manager removing them).
pub async fn remove(
    db: &TenantDb,
    source: &Source,
    user_id: i64,
    actor: i64,
) -> Result<(), Refusal> {
    let existing = existing_level(db, source, user_id).await?;
    source.check_remove(existing, user_id == actor)?;
    source.keep_an_owner(db, existing, None).await?;
    db.remove_member(source.kind, source.id, user_id, actor)
        .await?;
    Ok(())
}

async fn existing_level(
    db: &TenantDb,
    source: &Source,
    user_id: i64,
) -> Result<AccessLevel, Refusal> {
    let member = db
        .member(source.kind, source.id, user_id)
        .await?
        .ok_or(Refusal::NotFound("Member"))?;
    Ok(AccessLevel::from_stored(member.access_level))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access_level::AccessLevel::{Developer, Guest, Maintainer, Owner};
    use crate::store::members::PROJECT;

    fn group(caller_level: AccessLevel) -> Source {
        Source {
            kind: NAMESPACE,
            id: 1,
            manage_level: Owner,
            caller_level,
            admin: false,
        }
    }

    fn project(caller_level: AccessLevel) -> Source {
        Source {
            kind: PROJECT,
            manage_level: Maintainer,
            ..group(caller_level)
        }
    }

    fn admin() -> Source {
        Source {
            admin: true,
            ..project(AccessLevel::default())
        }
    }

    #[test]
    fn managing_needs_the_source_level() {
        assert!(project(Maintainer).require_manage().is_ok());
        assert!(project(Developer).require_manage().is_err());
        assert!(group(Maintainer).require_manage().is_err());
        assert!(group(Owner).require_manage().is_ok());
        assert!(admin().require_manage().is_ok());
    }

    #[test]
    fn only_owners_grant_owner() {
        assert!(project(Maintainer).check_add(Developer).is_ok());
        assert!(project(Maintainer).check_add(Owner).is_err());
        assert!(project(Owner).check_add(Owner).is_ok());
        assert!(admin().check_add(Owner).is_ok());
        assert!(project(Developer).check_add(Guest).is_err());
    }

    #[test]
    fn only_owners_change_owners() {
        let maintainer = project(Maintainer);
        assert!(maintainer.check_update(Developer, Maintainer).is_ok());
        assert!(maintainer.check_update(Owner, Developer).is_err());
        assert!(maintainer.check_update(Developer, Owner).is_err());
        assert!(project(Owner).check_update(Owner, Developer).is_ok());
        assert!(admin().check_update(Owner, Guest).is_ok());
    }

    #[test]
    fn members_may_leave_but_not_remove_others() {
        assert!(project(Guest).check_remove(Guest, true).is_ok());
        assert!(project(Guest).check_remove(Guest, false).is_err());
        assert!(project(Maintainer).check_remove(Developer, false).is_ok());
        assert!(project(Maintainer).check_remove(Owner, false).is_err());
        assert!(project(Owner).check_remove(Owner, false).is_ok());
    }

    #[test]
    fn a_group_keeps_its_last_owner() {
        let owner = group(Owner);
        assert!(owner.leaves_no_owner(Owner, None, 1));
        assert!(owner.leaves_no_owner(Owner, Some(Maintainer), 1));
        assert!(!owner.leaves_no_owner(Owner, Some(Owner), 1));
        assert!(!owner.leaves_no_owner(Owner, None, 2));
        assert!(!owner.leaves_no_owner(Maintainer, None, 1));
        // Projects have their namespace's owner besides their members.
        assert!(!project(Owner).leaves_no_owner(Owner, None, 1));
    }
}
