//! Creating, changing and deleting groups: GitLab's name and path formats for groups, who may
//! create a group where, a group's visibility between its parent's and what it contains, and
//! the order of the steps (the store records each change and its event in one transaction; a
//! deleted group's files go once its rows are gone).

use std::path::Path;

use serde_json::{Map, Value};

use super::project_deletion;
use super::project_placement::{Creator, check_visibility_allowed};
use super::projects::uploads_dir;
use super::{Refusal, TakenOn};
use crate::access_level::AccessLevel;
use crate::model::namespaces::NamespaceRow;
use crate::model::project_names::valid_path;
use crate::model::today;
use crate::model::visibility::Visibility;
use crate::store::TenantDb;
use crate::store::namespaces::{NamespaceChanges, NamespaceFilter, NewGroup};
use crate::store::projects::{ProjectFilter, Viewer};
use crate::store::window::Window;

/// The unique index a group write can run into, as `(table, column, field)`.
const GROUP_UNIQUES: &[(&str, &str, &str)] = &[("namespaces", "path_lower", "path")];
const NAME_MESSAGE: &str = "can contain only letters, digits, emojis, '_', '.', dash, space, parenthesis. It must start with letter, digit, emoji or '_'.";
const PATH_MESSAGE: &str = "can contain only letters, digits, '_', '-' and '.'. Cannot start with '-' or end in '.', '.git' or '.atom'.";

/// GitLab's group name format: letters, digits, emojis and `_` first, then also `.`, `-`,
/// spaces and parentheses.
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    let ok_first =
        |c: char| c.is_alphanumeric() || c == '_' || ('\u{00A9}'..='\u{1f9ff}').contains(&c);
    match chars.next() {
        Some(c) if ok_first(c) => {}
        _ => return false,
    }
    chars.all(|c| ok_first(c) || matches!(c, '.' | '-' | ' ' | '(' | ')'))
}

/// A group's name and path, with GitLab's field errors.
pub fn check_name_path(name: &str, path: &str) -> Result<(), Refusal> {
    if name.trim().is_empty() {
        return Err(Refusal::invalid("name", "can't be blank"));
    }
    if !valid_name(name) {
        return Err(Refusal::invalid("name", NAME_MESSAGE));
    }
    if !valid_path(path) {
        return Err(Refusal::invalid("path", PATH_MESSAGE));
    }
    Ok(())
}

/// A group's visibility may not exceed its parent's.
pub fn check_parent_visibility(
    parent: Option<&NamespaceRow>,
    visibility: Visibility,
) -> Result<(), Refusal> {
    if let Some(parent) = parent
        && visibility > parent.visibility
    {
        return Err(Refusal::invalid(
            "visibility_level",
            format!(
                "{visibility} is not allowed since the parent group has a {} visibility.",
                parent.visibility
            ),
        ));
    }
    Ok(())
}

/// A group may not become more private than a subgroup or project in it (`subgroups` and
/// `projects` are their visibilities).
fn check_contents(
    visibility: Visibility,
    subgroups: &[Visibility],
    projects: &[Visibility],
) -> Result<(), Refusal> {
    let above = |visibilities: &[Visibility]| visibilities.iter().any(|v| *v > visibility);
    if above(subgroups) {
        return Err(Refusal::invalid(
            "visibility_level",
            format!(
                "{visibility} is not allowed since there are sub-groups with higher visibility."
            ),
        ));
    }
    if above(projects) {
        return Err(Refusal::invalid(
            "visibility_level",
            format!(
                "{visibility} is not allowed since this group contains projects with higher visibility."
            ),
        ));
    }
    Ok(())
}

/// [`check_contents`] on the group's direct subgroups and projects.
async fn check_contents_visibility(
    db: &TenantDb,
    group: &NamespaceRow,
    visibility: Visibility,
) -> Result<(), Refusal> {
    let window = Window::first_by_id(10_000);
    let subgroups = NamespaceFilter {
        kind: Some("group"),
        parent: Some(Some(group.id)),
        admin: true,
        today: today(),
        ..NamespaceFilter::default()
    };
    let subgroups = db.list_namespaces(&subgroups, &window).await?;
    let projects = ProjectFilter {
        viewer: Viewer::Admin { id: 0 },
        today: today(),
        namespace_id: Some(group.id),
        ..ProjectFilter::default()
    };
    let projects = db.list_projects(&projects, &window).await?;
    let subgroups: Vec<Visibility> = subgroups.iter().map(|g| g.visibility).collect();
    let projects: Vec<Visibility> = projects.iter().map(|p| p.visibility).collect();
    check_contents(visibility, &subgroups, &projects)
}

/// The settings a create or update gives: values typed as their defaults are, and the
/// default branch name.
#[derive(Default)]
pub struct GivenSettings {
    pub values: Map<String, Value>,
    pub default_branch: Option<String>,
}

impl GivenSettings {
    /// The values to store; a blank default branch clears it, as GitLab normalises a blank
    /// name to none.
    fn into_values(self) -> Map<String, Value> {
        let mut values = self.values;
        if let Some(branch) = self.default_branch {
            let value = match branch.trim() {
                "" => Value::Null,
                _ => Value::from(branch),
            };
            values.insert("default_branch".into(), value);
        }
        values
    }
}

/// The group a new group goes under, and the creator's level in it (direct or inherited).
pub struct Parent<'a> {
    pub group: &'a NamespaceRow,
    pub level: Option<AccessLevel>,
}

/// Who may create a group there: under a parent, administrators and members at its
/// `subgroup_creation_level` (owners, or maintainers when it says so); at the top level,
/// administrators and users allowed to create groups (`can_create_group`).
fn check_may_create(
    admin: bool,
    can_create_group: bool,
    parent: Option<&Parent<'_>>,
) -> Result<(), Refusal> {
    let allowed = match parent {
        Some(parent) => {
            let settings = parent.group.settings_json();
            let needed = match settings.get("subgroup_creation_level") {
                Some(Value::String(level)) if level == "maintainer" => AccessLevel::Maintainer,
                _ => AccessLevel::Owner,
            };
            admin || parent.level.unwrap_or_default() >= needed
        }
        None => admin || can_create_group,
    };
    if allowed {
        Ok(())
    } else {
        Err(Refusal::forbidden())
    }
}

/// A new group (`POST /groups`), its name and path checked as the request is read.
pub struct CreateGroup {
    pub name: String,
    pub path: String,
    pub description: String,
    pub visibility: Visibility,
    pub settings: GivenSettings,
}

/// Creates a group under `parent` (or at the top level) with `creator` as its first owner.
pub async fn create(
    db: &TenantDb,
    creator: Creator<'_>,
    parent: Option<Parent<'_>>,
    new: CreateGroup,
) -> Result<NamespaceRow, Refusal> {
    check_may_create(
        creator.admin,
        creator.user.can_create_group,
        parent.as_ref(),
    )?;
    let parent = parent.map(|p| p.group);
    check_parent_visibility(parent, new.visibility)?;
    db.create_group(NewGroup {
        name: &new.name,
        path: &new.path,
        description: &new.description,
        visibility: new.visibility,
        parent,
        settings: &Value::Object(new.settings.into_values()).to_string(),
        creator_id: creator.user.id,
    })
    .await
    .taken_on(GROUP_UNIQUES)
}

/// A change of a group (`PUT /groups/:id`): absent fields keep their values.
pub struct UpdateGroup {
    pub name: Option<String>,
    pub path: Option<String>,
    pub description: Option<String>,
    pub visibility: Option<Visibility>,
    /// Whether the administrator restricted `visibility`.
    pub restricted: bool,
    pub settings: GivenSettings,
}

/// A change of a group that passed every rule, for [`save`].
pub struct GroupChange {
    changes: NamespaceChanges,
    name: String,
    path: String,
}

impl GroupChange {
    /// Records the group's new avatar file (`None`: it has none).
    pub fn set_avatar(&mut self, file_name: Option<&str>) {
        self.changes
            .set("avatar_path", file_name.map(str::to_string));
    }
}

/// Checks `update` of `group` as asked by a caller who is an administrator (`admin`) or not:
/// the name and path, and a new visibility against the administrator's restrictions, the
/// parent's and what the group contains. Nothing is written: the caller stores the avatar
/// file, then [`save`]s.
pub async fn check_update(
    db: &TenantDb,
    group: &NamespaceRow,
    admin: bool,
    update: UpdateGroup,
) -> Result<GroupChange, Refusal> {
    let name = update.name.unwrap_or_else(|| group.name.clone());
    let path = update.path.unwrap_or_else(|| group.path.clone());
    check_name_path(&name, &path)?;
    let mut changes = NamespaceChanges::default();
    changes.set("name", name.as_str());
    changes.set("path", path.as_str());
    changes.set("path_lower", path.to_lowercase());
    if let Some(description) = update.description {
        changes.set("description", description);
    }
    if let Some(visibility) = update.visibility {
        if visibility != group.visibility {
            check_visibility_allowed(admin, visibility, update.restricted)?;
            let parent = match group.parent_id {
                Some(id) => db.namespace_by_id(id).await?,
                None => None,
            };
            check_parent_visibility(parent.as_ref(), visibility)?;
            check_contents_visibility(db, group, visibility).await?;
        }
        changes.set("visibility_level", visibility.level());
        changes.set("visibility", visibility.as_str());
    }
    let mut settings = group.settings_json();
    settings.extend(update.settings.into_values());
    changes.set("settings", Value::Object(settings).to_string());
    Ok(GroupChange {
        changes,
        name,
        path,
    })
}

/// Writes a checked change of `group` as `actor`. A new path moves the group's subtree and
/// keeps its old full paths as redirects (the store does both in the change's transaction).
pub async fn save(
    db: &TenantDb,
    group: &NamespaceRow,
    change: GroupChange,
    actor: i64,
) -> Result<NamespaceRow, Refusal> {
    db.update_group(group, &change.changes, &change.name, &change.path, actor)
        .await
        .taken_on(GROUP_UNIQUES)
}

/// Records the avatar file just stored for a new `group`.
pub async fn set_avatar(
    db: &TenantDb,
    group: &NamespaceRow,
    file_name: &str,
    actor: i64,
) -> Result<NamespaceRow, Refusal> {
    let mut changes = NamespaceChanges::default();
    changes.set("avatar_path", file_name);
    Ok(db
        .update_group(group, &changes, &group.name, &group.path, actor)
        .await?)
}

/// Deletes `group` with its subgroups, their projects and memberships as `actor`, then the
/// projects' repositories and files and the groups' avatars.
pub async fn delete(
    db: &TenantDb,
    data_dir: &Path,
    group: &NamespaceRow,
    actor: i64,
) -> Result<(), Refusal> {
    // Listed before the rows go: their avatars go too.
    let subgroups = NamespaceFilter {
        kind: Some("group"),
        descendants_of: Some(group.traversal.clone()),
        admin: true,
        ..NamespaceFilter::default()
    };
    let mut groups: Vec<i64> = db
        .list_namespaces(&subgroups, &Window::first_by_id(100_000))
        .await?
        .iter()
        .map(|g| g.id)
        .collect();
    groups.push(group.id);
    let projects = db.delete_group(group, actor).await?;
    project_deletion::remove_files_of(data_dir, db.tenant_id(), &projects).await;
    for id in groups {
        let dir = uploads_dir(data_dir, db.tenant_id(), &format!("group/avatar/{id}"));
        if let Err(error) = tokio::fs::remove_dir_all(&dir).await
            && error.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(group = id, %error, "could not remove a group's avatar");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::visibility::Visibility::{Internal, Private, Public};

    fn group(visibility: Visibility, settings: &str) -> NamespaceRow {
        NamespaceRow {
            id: 1,
            kind: "group".into(),
            owner_id: None,
            parent_id: None,
            name: "Group".into(),
            path: "group".into(),
            full_path: "group".into(),
            full_name: "Group".into(),
            traversal: "/1/".into(),
            description: String::new(),
            visibility,
            avatar_path: None,
            settings: settings.into(),
            created_at: 0,
            updated_at: 0,
        }
    }

    #[test]
    fn names_and_paths_follow_gitlab() {
        assert!(check_name_path("Team (ops) 1.0", "team-ops").is_ok());
        assert!(check_name_path("_private", "x").is_ok());
        assert!(check_name_path("🚀 rockets", "rockets").is_ok());
        assert!(matches!(
            check_name_path("  ", "x"),
            Err(Refusal::Invalid("name", m)) if m == "can't be blank"
        ));
        assert!(matches!(
            check_name_path("-dash", "x"),
            Err(Refusal::Invalid("name", _))
        ));
        assert!(matches!(
            check_name_path("a/b", "x"),
            Err(Refusal::Invalid("name", _))
        ));
        assert!(matches!(
            check_name_path("ok", "x.git"),
            Err(Refusal::Invalid("path", _))
        ));
    }

    #[test]
    fn a_group_is_no_more_visible_than_its_parent() {
        let internal = group(Internal, "{}");
        assert!(check_parent_visibility(None, Public).is_ok());
        assert!(check_parent_visibility(Some(&internal), Internal).is_ok());
        assert!(check_parent_visibility(Some(&internal), Private).is_ok());
        assert!(matches!(
            check_parent_visibility(Some(&internal), Public),
            Err(Refusal::Invalid("visibility_level", m))
                if m == "public is not allowed since the parent group has a internal visibility."
        ));
    }

    #[test]
    fn a_group_is_no_more_private_than_its_contents() {
        assert!(check_contents(Private, &[], &[]).is_ok());
        assert!(check_contents(Internal, &[Internal, Private], &[Internal]).is_ok());
        assert!(matches!(
            check_contents(Private, &[Internal], &[]),
            Err(Refusal::Invalid("visibility_level", m))
                if m == "private is not allowed since there are sub-groups with higher visibility."
        ));
        assert!(matches!(
            check_contents(Internal, &[Internal], &[Public]),
            Err(Refusal::Invalid("visibility_level", m))
                if m == "internal is not allowed since this group contains projects with higher visibility."
        ));
    }

    #[test]
    fn subgroups_need_the_parents_creation_level() {
        let owners_only = group(Private, "{}");
        let maintainers = group(Private, r#"{"subgroup_creation_level":"maintainer"}"#);
        let member = |group, level| {
            let parent = Parent {
                group,
                level: Some(level),
            };
            check_may_create(false, true, Some(&parent)).is_ok()
        };
        assert!(!member(&owners_only, AccessLevel::Maintainer));
        assert!(member(&owners_only, AccessLevel::Owner));
        assert!(member(&maintainers, AccessLevel::Maintainer));
        assert!(!member(&maintainers, AccessLevel::Developer));
        let outsider = Parent {
            group: &owners_only,
            level: None,
        };
        assert!(check_may_create(false, true, Some(&outsider)).is_err());
        assert!(check_may_create(true, false, Some(&outsider)).is_ok());
    }

    #[test]
    fn top_level_groups_need_the_users_permission() {
        assert!(check_may_create(false, true, None).is_ok());
        assert!(check_may_create(false, false, None).is_err());
        assert!(check_may_create(true, false, None).is_ok());
    }

    #[test]
    fn a_blank_default_branch_clears_it() {
        let settings = |branch: &str| GivenSettings {
            values: Map::new(),
            default_branch: Some(branch.into()),
        };
        let values = settings(" ").into_values();
        assert_eq!(values.get("default_branch"), Some(&Value::Null));
        let values = settings("trunk").into_values();
        assert_eq!(values.get("default_branch"), Some(&Value::from("trunk")));
        assert!(GivenSettings::default().into_values().is_empty());
    }
}
