//! Protected branches: GitLab's rules for who may push to, force-push to and delete which
//! branches, the wildcard names, and the protection `default_branch_protection` gives a
//! project's default branch. The push decision (`services::push`) and the API
//! (`api::protected_branches`) both use these; they are pure functions with unit tests.

use super::Refusal;
use crate::access_level::AccessLevel;
use crate::model::namespaces::NamespaceRow;
use crate::model::protected_branches::{AccessLevelRow, ProtectedBranch};
use crate::model::protected_tags::ProtectedTagRow;
use crate::settings::{Settings, keys};
use crate::store::TenantDb;
use crate::store::protected_branches::{NewProtectedBranch, ProtectedBranchUpdate};

/// GitLab's "No one" access level for protected refs.
pub const NO_ONE: i64 = 0;
/// GitLab's "Admins" access level for protected refs.
pub const ADMINS: i64 = 60;
const DEVELOPER: i64 = AccessLevel::Developer.as_i64();
const MAINTAINER: i64 = AccessLevel::Maintainer.as_i64();

/// The levels `push_access_level` and `merge_access_level` accept (GitLab's
/// `allowed_access_levels`).
pub const PUSH_AND_MERGE_LEVELS: &[i64] = &[NO_ONE, DEVELOPER, MAINTAINER, ADMINS];
/// The levels `unprotect_access_level` accepts ("No one" may not unprotect).
pub const UNPROTECT_LEVELS: &[i64] = &[DEVELOPER, MAINTAINER, ADMINS];

/// The kinds of access levels a protected branch has, as stored and as the API names them
/// (`push_access_levels`, `allowed_to_push`...).
pub const KINDS: [&str; 3] = ["push", "merge", "unprotect"];

/// Whether the branch `name` matches the protected branch name `pattern`: exactly, or with
/// `*` matching any run of characters, `/` included (GitLab's `RefMatcher`).
pub fn matches(pattern: &str, name: &str) -> bool {
    if !pattern.contains('*') {
        return pattern == name;
    }
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if name.len() < first.len() + last.len() || !name.starts_with(first) || !name.ends_with(last) {
        return false;
    }
    // The middle parts in order, each after the previous one, within what the ends leave.
    let mut rest = &name[first.len()..name.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// The protected branches `name` falls under.
pub fn matching<'a>(
    branches: &'a [ProtectedBranch],
    name: &'a str,
) -> impl Iterator<Item = &'a ProtectedBranch> + 'a {
    branches.iter().filter(move |b| matches(&b.row.name, name))
}

/// Who is asking: their level in the project, and whether they administer the instance.
#[derive(Debug, Clone, Copy)]
pub struct Actor {
    pub level: AccessLevel,
    pub admin: bool,
}

/// Whether `actor` passes one access level: "No one" passes nobody, "Admins" only
/// administrators, any other level the members at or above it and administrators.
pub fn passes(level: &AccessLevelRow, actor: Actor) -> bool {
    passes_level(level.access_level, actor)
}

/// [`passes`] for a bare protected-ref level.
pub fn passes_level(level: i64, actor: Actor) -> bool {
    match level {
        NO_ONE => false,
        ADMINS => actor.admin,
        minimum => actor.admin || actor.level.as_i64() >= minimum,
    }
}

/// Whether `actor` may create the tag `name` under the protected tags `tags`: any protected
/// tag it matches lets them (GitLab's `ProtectedTag.protected_ref_accessible_to?`).
pub fn may_create_tag(tags: &[ProtectedTagRow], name: &str, actor: Actor) -> bool {
    tags.iter()
        .filter(|t| matches(&t.name, name))
        .any(|t| passes_level(t.create_access_level, actor))
}

/// Whether the tag `name` is protected.
pub fn tag_is_protected(tags: &[ProtectedTagRow], name: &str) -> bool {
    tags.iter().any(|t| matches(&t.name, name))
}

/// Whether `actor` may do `kind` (`push`, `merge`, `unprotect`) on the branch `name`: any
/// level of any protected branch it matches lets them (GitLab's `protected_ref_accessible_to?`).
pub fn allowed(branches: &[ProtectedBranch], name: &str, kind: &str, actor: Actor) -> bool {
    matching(branches, name).any(|b| b.levels(kind).any(|l| passes(l, actor)))
}

/// Whether any protected branch `name` matches allows force pushes.
pub fn force_push_allowed(branches: &[ProtectedBranch], name: &str) -> bool {
    matching(branches, name).any(|b| b.row.allow_force_push)
}

/// The `default_branch_protection` setting (application or group), GitLab's 0 to 4.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefaultBranchProtection(pub i64);

impl DefaultBranchProtection {
    /// The protection of new projects in `namespace`: its group's own setting when the group
    /// has one, else the instance's.
    pub fn of(settings: &Settings, namespace: &NamespaceRow) -> DefaultBranchProtection {
        let group = namespace
            .is_group()
            .then(|| {
                namespace
                    .settings_json()
                    .get("default_branch_protection")?
                    .as_i64()
            })
            .flatten();
        DefaultBranchProtection(
            group
                .or_else(|| settings.get(keys::DEFAULT_BRANCH_PROTECTION))
                .unwrap_or(2),
        )
    }

    const NONE: i64 = 0;
    const DEV_CAN_PUSH: i64 = 1;
    const DEV_CAN_MERGE: i64 = 3;
    const DEV_CAN_INITIAL_PUSH: i64 = 4;

    /// The protected branch the default branch gets when it is created, or none for "not
    /// protected" (GitLab's `ProtectDefaultBranchService`).
    pub fn protection(self, branch: &str) -> Option<NewProtectedBranch<'_>> {
        if self.0 == Self::NONE {
            return None;
        }
        let push = if self.0 == Self::DEV_CAN_PUSH {
            DEVELOPER
        } else {
            MAINTAINER
        };
        let merge = if self.0 == Self::DEV_CAN_MERGE {
            DEVELOPER
        } else {
            MAINTAINER
        };
        Some(NewProtectedBranch {
            name: branch,
            allow_force_push: false,
            code_owner_approval_required: false,
            levels: vec![("push", push), ("merge", merge), ("unprotect", MAINTAINER)],
        })
    }

    /// Whether the first push into an empty repository is protected: with full protection or
    /// "developers can merge", only maintainers may make it (GitLab's
    /// `initial_push_to_default_branch_allowed_for_developer?`).
    pub fn initial_push_needs_maintainer(self) -> bool {
        !matches!(
            self.0,
            Self::NONE | Self::DEV_CAN_PUSH | Self::DEV_CAN_INITIAL_PUSH
        )
    }
}

/// Protects a project's default branch as `protection` says, unless a protected branch of
/// that name exists already.
pub async fn protect_default_branch(
    db: &TenantDb,
    project_id: i64,
    branch: &str,
    protection: DefaultBranchProtection,
) -> crate::store::Result<()> {
    let Some(new) = protection.protection(branch) else {
        return Ok(());
    };
    if db.protected_branch(project_id, branch).await?.is_some() {
        return Ok(());
    }
    match db.create_protected_branch(project_id, &new, None).await {
        Err(error) if error.conflicts_on("protected_branches", "name") => Ok(()),
        other => other.map(|_| ()),
    }
}

fn blank_name(name: &str) -> Result<(), Refusal> {
    match name.trim().is_empty() {
        true => Err(Refusal::ModelErrors(vec!["Name can't be blank".into()])),
        false => Ok(()),
    }
}

/// Protects the branches `new` names: GitLab's 409 when a rule of that name exists.
pub async fn create(
    db: &TenantDb,
    project_id: i64,
    new: &NewProtectedBranch<'_>,
    actor: i64,
) -> Result<ProtectedBranch, Refusal> {
    blank_name(new.name)?;
    let exists = || Refusal::Conflict(format!("Protected branch '{}' already exists", new.name));
    if db.protected_branch(project_id, new.name).await?.is_some() {
        return Err(exists());
    }
    db.create_protected_branch(project_id, new, Some(actor))
        .await
        .map_err(
            |error| match error.conflicts_on("protected_branches", "name") {
                true => exists(),
                false => Refusal::Store(error),
            },
        )
}

/// Changes a rule; `named` are the access level entries the update names by id, each
/// `(kind, id)`: one that is not this rule's (or not of that kind) names nothing here.
pub async fn update(
    db: &TenantDb,
    branch: &ProtectedBranch,
    named: &[(&str, i64)],
    update: &ProtectedBranchUpdate,
    actor: i64,
) -> Result<ProtectedBranch, Refusal> {
    for (kind, level_id) in named {
        if !branch.levels(kind).any(|l| l.id == *level_id) {
            return Err(Refusal::Absent);
        }
    }
    Ok(db
        .update_protected_branch(branch.row.id, update, actor)
        .await?)
}

pub async fn delete(db: &TenantDb, branch: &ProtectedBranch, actor: i64) -> Result<(), Refusal> {
    db.delete_protected_branch(branch.row.id, actor).await?;
    Ok(())
}

/// Protects the tags `name` matches, created by `create_level` and above.
pub async fn create_tag(
    db: &TenantDb,
    project_id: i64,
    name: &str,
    create_level: i64,
    actor: i64,
) -> Result<ProtectedTagRow, Refusal> {
    blank_name(name)?;
    db.create_protected_tag(project_id, name, create_level, actor)
        .await
        .map_err(|error| match error.conflicts_on("protected_tags", "name") {
            true => Refusal::ModelErrors(vec!["Name has already been taken".into()]),
            false => Refusal::Store(error),
        })
}

pub async fn delete_tag(db: &TenantDb, tag: &ProtectedTagRow, actor: i64) -> Result<(), Refusal> {
    db.delete_protected_tag(tag, actor).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::protected_branches::ProtectedBranchRow;

    #[test]
    fn protected_tags_let_their_create_level_and_above_in() {
        let tag = |name: &str, level| ProtectedTagRow {
            id: 1,
            project_id: 1,
            name: name.into(),
            create_access_level: level,
        };
        let tags = [tag("v*", MAINTAINER), tag("nightly", NO_ONE)];
        let actor = |level, admin| Actor { level, admin };
        let developer = actor(AccessLevel::Developer, false);
        let maintainer = actor(AccessLevel::Maintainer, false);
        assert!(tag_is_protected(&tags, "v1.0") && !tag_is_protected(&tags, "x1.0"));
        assert!(!may_create_tag(&tags, "v1.0", developer));
        assert!(may_create_tag(&tags, "v1.0", maintainer));
        assert!(!may_create_tag(
            &tags,
            "nightly",
            actor(AccessLevel::Owner, true)
        ));
        // Any matching rule that lets the actor in is enough.
        let both = [tag("v*", MAINTAINER), tag("v1.*", DEVELOPER)];
        assert!(may_create_tag(&both, "v1.2", developer));
    }

    fn branch(name: &str, push: i64, force: bool) -> ProtectedBranch {
        ProtectedBranch {
            row: ProtectedBranchRow {
                id: 1,
                project_id: 1,
                name: name.into(),
                allow_force_push: force,
                code_owner_approval_required: false,
            },
            access_levels: vec![AccessLevelRow {
                id: 1,
                protected_branch_id: 1,
                kind: "push".into(),
                access_level: push,
            }],
        }
    }

    #[test]
    fn wildcards_match_any_characters_slashes_included() {
        assert!(matches("main", "main"));
        assert!(!matches("main", "main2"));
        assert!(matches("release/*", "release/1.0"));
        assert!(matches("release/*", "release/a/b"));
        assert!(!matches("release/*", "release"));
        assert!(matches("*-stable", "1-0-stable"));
        assert!(matches("*", "anything/at/all"));
        assert!(matches("a*b*c", "a-b-c"));
        assert!(matches("a*b*c", "abc"));
        assert!(!matches("a*b*c", "acb"));
        assert!(!matches("a*a", "a"), "the ends may not overlap");
        assert!(matches("feature/**", "feature/x"));
    }

    #[test]
    fn levels_and_admins() {
        let developer = Actor {
            level: AccessLevel::Developer,
            admin: false,
        };
        let maintainer = Actor {
            level: AccessLevel::Maintainer,
            admin: false,
        };
        let admin = Actor {
            level: AccessLevel::NoAccess,
            admin: true,
        };
        let rules = [
            branch("main", MAINTAINER, false),
            branch("rel*", DEVELOPER, true),
        ];
        assert!(!allowed(&rules, "main", "push", developer));
        assert!(allowed(&rules, "main", "push", maintainer));
        assert!(allowed(&rules, "main", "push", admin));
        assert!(allowed(&rules, "release", "push", developer));
        assert!(
            !allowed(&rules, "other", "push", maintainer),
            "unprotected: no rule"
        );
        let nobody = [branch("main", NO_ONE, false)];
        assert!(!allowed(&nobody, "main", "push", admin));
        let admins = [branch("main", ADMINS, false)];
        assert!(!allowed(&admins, "main", "push", maintainer));
        assert!(allowed(&admins, "main", "push", admin));
        assert!(force_push_allowed(&rules, "release"));
        assert!(!force_push_allowed(&rules, "main"));
    }

    #[test]
    fn default_branch_protection_levels() {
        let levels = |p: i64| {
            DefaultBranchProtection(p)
                .protection("main")
                .map(|b| b.levels)
        };
        assert_eq!(levels(0), None);
        assert_eq!(
            levels(1).unwrap()[..2],
            [("push", DEVELOPER), ("merge", MAINTAINER)]
        );
        assert_eq!(
            levels(2).unwrap()[..2],
            [("push", MAINTAINER), ("merge", MAINTAINER)]
        );
        assert_eq!(
            levels(3).unwrap()[..2],
            [("push", MAINTAINER), ("merge", DEVELOPER)]
        );
        assert_eq!(
            levels(4).unwrap()[..2],
            [("push", MAINTAINER), ("merge", MAINTAINER)]
        );
        assert!(DefaultBranchProtection(2).initial_push_needs_maintainer());
        assert!(DefaultBranchProtection(3).initial_push_needs_maintainer());
        assert!(!DefaultBranchProtection(4).initial_push_needs_maintainer());
        assert!(!DefaultBranchProtection(1).initial_push_needs_maintainer());
    }
}
