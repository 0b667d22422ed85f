//! GitLab's access levels and the one rule that turns a caller's memberships of a project into
//! the level every access check and every view uses. A leaf: the store, the API and the views
//! all import it, it imports none of them. Membership rows keep the level as the integer
//! GitLab stores (and returns); it becomes an [`AccessLevel`] where it is compared.

use serde::{Serialize, Serializer};

/// A role's access level, ordered from no access to owner. The discriminants are GitLab's
/// integers (what `members.access_level` stores and the API returns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum AccessLevel {
    #[default]
    NoAccess = 0,
    MinimalAccess = 5,
    Guest = 10,
    Planner = 15,
    Reporter = 20,
    Developer = 30,
    Maintainer = 40,
    Owner = 50,
}

/// An integer that is not one of GitLab's access levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidAccessLevel(pub i64);

impl AccessLevel {
    /// Every level, lowest first.
    pub const ALL: [AccessLevel; 8] = [
        AccessLevel::NoAccess,
        AccessLevel::MinimalAccess,
        AccessLevel::Guest,
        AccessLevel::Planner,
        AccessLevel::Reporter,
        AccessLevel::Developer,
        AccessLevel::Maintainer,
        AccessLevel::Owner,
    ];

    /// The levels the members, share and `min_access_level` parameters accept: Guest to
    /// Owner. Minimal access and Planner are not offered (those parameters answer
    /// "does not have a valid value" for them, as for any other integer).
    pub const GRANTABLE: [AccessLevel; 5] = [
        AccessLevel::Guest,
        AccessLevel::Reporter,
        AccessLevel::Developer,
        AccessLevel::Maintainer,
        AccessLevel::Owner,
    ];

    pub const fn as_i64(self) -> i64 {
        self as i64
    }

    /// `value` as a level API input may name, else `None`.
    pub fn grantable(value: i64) -> Option<AccessLevel> {
        Self::GRANTABLE.into_iter().find(|l| l.as_i64() == value)
    }

    /// A level read from a membership row. Rows hold only valid levels; one that names no
    /// level (written by hand) counts as the highest level it reaches, so it never grants
    /// more than it says.
    pub fn from_stored(value: i64) -> AccessLevel {
        Self::ALL
            .into_iter()
            .rev()
            .find(|l| l.as_i64() <= value)
            .unwrap_or(AccessLevel::NoAccess)
    }
}

impl TryFrom<i64> for AccessLevel {
    type Error = InvalidAccessLevel;

    fn try_from(value: i64) -> Result<Self, Self::Error> {
        Self::ALL
            .into_iter()
            .find(|l| l.as_i64() == value)
            .ok_or(InvalidAccessLevel(value))
    }
}

impl From<AccessLevel> for i64 {
    fn from(level: AccessLevel) -> i64 {
        level.as_i64()
    }
}

/// Views show a level as GitLab does: the bare integer.
impl Serialize for AccessLevel {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i64(self.as_i64())
    }
}

/// The caller's standing in one project: each way a user holds a level in it. Expired
/// memberships and shares are left out before they get here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Permissions {
    /// Direct membership of the project.
    pub project: Option<AccessLevel>,
    /// The best membership of the project's group or any of its ancestors.
    pub group: Option<AccessLevel>,
    /// The best level through the groups the project is shared with (each the lower of the
    /// user's level in the group and the share's `group_access`).
    pub shared: Option<AccessLevel>,
    /// The project is in the caller's personal namespace, which makes them its owner.
    pub personal_owner: bool,
}

impl Permissions {
    /// The level the caller acts with: the highest of all of them (no access when none).
    pub fn effective_level(&self) -> AccessLevel {
        let personal = self.personal_owner.then_some(AccessLevel::Owner);
        [self.project, self.group, self.shared, personal]
            .into_iter()
            .flatten()
            .max()
            .unwrap_or_default()
    }

    /// What the project view shows as `permissions.group_access`: the best level held
    /// through a group, inherited or by a share.
    pub fn group_access(&self) -> Option<AccessLevel> {
        self.group.max(self.shared)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use AccessLevel::*;

    #[test]
    fn levels_are_ordered_by_gitlab_integers() {
        let integers: Vec<i64> = AccessLevel::ALL.iter().map(|l| l.as_i64()).collect();
        assert_eq!(integers, [0, 5, 10, 15, 20, 30, 40, 50]);
        assert!(AccessLevel::ALL.windows(2).all(|w| w[0] < w[1]));
        assert!(Guest < Reporter && Maintainer < Owner && NoAccess < MinimalAccess);
        assert_eq!(Developer.max(Reporter), Developer);
        assert_eq!(AccessLevel::default(), NoAccess);
    }

    #[test]
    fn conversions_round_trip_and_reject_other_integers() {
        for level in AccessLevel::ALL {
            assert_eq!(AccessLevel::try_from(level.as_i64()), Ok(level));
            assert_eq!(i64::from(level), level.as_i64());
            assert_eq!(AccessLevel::from_stored(level.as_i64()), level);
        }
        for bad in [-1, 1, 25, 45, 60, i64::MAX, i64::MIN] {
            assert_eq!(AccessLevel::try_from(bad), Err(InvalidAccessLevel(bad)));
        }
        assert_eq!(AccessLevel::from_stored(45), Maintainer);
        assert_eq!(AccessLevel::from_stored(99), Owner);
        assert_eq!(AccessLevel::from_stored(-3), NoAccess);
    }

    #[test]
    fn grantable_levels_are_guest_to_owner() {
        let grantable: Vec<i64> = [10, 20, 30, 40, 50].to_vec();
        for value in -1..=60 {
            assert_eq!(
                AccessLevel::grantable(value).map(i64::from),
                grantable.contains(&value).then_some(value),
                "{value}"
            );
        }
    }

    #[test]
    fn serialises_as_the_integer() {
        assert_eq!(serde_json::to_value(Maintainer).unwrap(), 40);
        assert_eq!(
            serde_json::to_value(Some(Guest)).unwrap(),
            serde_json::json!(10)
        );
    }

    #[test]
    fn effective_level_is_the_best_of_every_source() {
        let none = Permissions::default();
        assert_eq!(none.effective_level(), NoAccess);
        let project_only = Permissions {
            project: Some(Developer),
            ..none
        };
        assert_eq!(project_only.effective_level(), Developer);
        let group_only = Permissions {
            group: Some(Reporter),
            ..none
        };
        assert_eq!(group_only.effective_level(), Reporter);
        let share_only = Permissions {
            shared: Some(Guest),
            ..none
        };
        assert_eq!(share_only.effective_level(), Guest);
        let personal = Permissions {
            personal_owner: true,
            ..none
        };
        assert_eq!(personal.effective_level(), Owner);
        // A guest of the project who maintains its group acts as a maintainer.
        let guest_group_maintainer = Permissions {
            project: Some(Guest),
            group: Some(Maintainer),
            ..none
        };
        assert_eq!(guest_group_maintainer.effective_level(), Maintainer);
        let maintainer_shared_to_reporters = Permissions {
            project: Some(Maintainer),
            shared: Some(Reporter),
            ..none
        };
        assert_eq!(maintainer_shared_to_reporters.effective_level(), Maintainer);
        let personal_guest = Permissions {
            project: Some(Guest),
            personal_owner: true,
            ..none
        };
        assert_eq!(personal_guest.effective_level(), Owner);
    }

    #[test]
    fn group_access_combines_inherited_and_shared() {
        let both = Permissions {
            group: Some(Reporter),
            shared: Some(Developer),
            ..Permissions::default()
        };
        assert_eq!(both.group_access(), Some(Developer));
        assert_eq!(Permissions::default().group_access(), None);
    }
}
