//! Where a project may be created, forked or moved to, and under which name: GitLab's rules
//! that project create, fork and transfer share (who may create projects in a namespace, the
//! personal project limit, a group's visibility cap, unique names and paths).

use super::Refusal;
use crate::access_level::AccessLevel;
use crate::model::namespaces::NamespaceRow;
use crate::model::projects::ProjectRow;
use crate::model::today;
use crate::model::users::UserRow;
use crate::model::visibility::Visibility;
use crate::store::TenantDb;
use crate::store::projects::ProjectChanges;

/// Who creates, forks or moves a project.
#[derive(Debug, Clone, Copy)]
pub struct Creator<'a> {
    pub user: &'a UserRow,
    pub admin: bool,
}

impl Creator<'_> {
    /// Whether the creator may create a project owned by `owner` in `namespace`:
    /// administrators anywhere, others in groups where their level meets
    /// `project_creation_level`, or in `owner`'s personal namespace.
    pub async fn may_create_in(
        self,
        db: &TenantDb,
        owner: &UserRow,
        namespace: &NamespaceRow,
    ) -> Result<bool, Refusal> {
        if self.admin {
            return Ok(true);
        }
        if !namespace.is_group() {
            return Ok(namespace.owner_id == Some(owner.id));
        }
        // GitLab's default level is `developer`.
        let needed = match namespace
            .settings_json()
            .get("project_creation_level")
            .and_then(|v| v.as_str())
        {
            Some("noone") => return Ok(false),
            Some("maintainer") => AccessLevel::Maintainer,
            _ => AccessLevel::Developer,
        };
        let level = db
            .group_access(self.user.id, &namespace.ancestry(), &today())
            .await?
            .map(AccessLevel::from_stored);
        Ok(level.is_some_and(|level| level >= needed))
    }
}

/// The instance's project quota, then the owner's personal project limit for projects in
/// their own namespace.
pub async fn check_projects_limit(
    db: &TenantDb,
    owner: &UserRow,
    namespace: &NamespaceRow,
) -> Result<(), Refusal> {
    super::quotas::check_new_project(db).await?;
    if namespace.owner_id != Some(owner.id) {
        return Ok(());
    }
    let message = if owner.projects_limit <= 0 {
        "Personal project creation is not allowed. Please contact your administrator with questions"
            .to_string()
    } else {
        let count = db.count_namespace_projects(namespace.id).await?;
        if count < owner.projects_limit {
            return Ok(());
        }
        format!(
            "Your project limit is {} projects! Please contact your administrator to increase it",
            owner.projects_limit
        )
    };
    Err(Refusal::invalid("limit_reached", message))
}

/// A visibility the administrator restricted (`restricted`: named by
/// `restricted_visibility_levels`) is for administrators only.
pub fn check_visibility_allowed(
    admin: bool,
    visibility: Visibility,
    restricted: bool,
) -> Result<(), Refusal> {
    if restricted && !admin {
        return Err(Refusal::invalid(
            "visibility_level",
            format!("{visibility} has been restricted by your GitLab administrator"),
        ));
    }
    Ok(())
}

/// A project's visibility may not exceed its group's.
pub fn check_group_visibility(
    namespace: &NamespaceRow,
    visibility: Visibility,
) -> Result<(), Refusal> {
    if namespace.is_group() && visibility > namespace.visibility {
        return Err(Refusal::invalid(
            "visibility_level",
            format!(
                "{visibility} is not allowed in a {} group.",
                namespace.visibility
            ),
        ));
    }
    Ok(())
}

/// "has already been taken" for the name and/or path in the namespace, as one field map.
pub async fn check_taken(
    db: &TenantDb,
    namespace_id: i64,
    name: &str,
    path: &str,
    except: Option<i64>,
) -> Result<(), Refusal> {
    let (name_taken, path_taken) = db.project_taken(namespace_id, name, path, except).await?;
    let taken: Vec<_> = [("name", name_taken), ("path", path_taken)]
        .into_iter()
        .filter(|(_, taken)| *taken)
        .map(|(field, _)| (field, "has already been taken".to_string()))
        .collect();
    if taken.is_empty() {
        Ok(())
    } else {
        Err(Refusal::Fields(taken))
    }
}

/// Where a new project goes, as `POST /projects` asks.
pub struct NewPlacement<'a> {
    /// `namespace_id` (an id or a full path); the owner's personal namespace when absent.
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    pub path: &'a str,
    pub visibility: Visibility,
    /// Whether the administrator restricted `visibility`.
    pub restricted: bool,
}

/// The namespace of a new project owned by `owner`, once every rule passed: the namespace
/// exists and `creator` may create there (else GitLab's `namespace` "is not valid"), the
/// visibility is allowed there, the owner is within their limit and the name and path are
/// free.
pub async fn place_new(
    db: &TenantDb,
    creator: Creator<'_>,
    owner: &UserRow,
    new: NewPlacement<'_>,
) -> Result<NamespaceRow, Refusal> {
    let namespace_invalid = || Refusal::invalid("namespace", "is not valid");
    let namespace = match new.namespace {
        None => db
            .user_namespace(owner.id)
            .await?
            .ok_or(Refusal::NotFound("Namespace"))?,
        Some(key) => {
            let namespace = db
                .namespace_by_key(key.trim())
                .await?
                .ok_or_else(namespace_invalid)?;
            if !creator.may_create_in(db, owner, &namespace).await? {
                return Err(namespace_invalid());
            }
            namespace
        }
    };
    check_visibility_allowed(creator.admin, new.visibility, new.restricted)?;
    check_group_visibility(&namespace, new.visibility)?;
    check_projects_limit(db, owner, &namespace).await?;
    check_taken(db, namespace.id, new.name, new.path, None).await?;
    Ok(namespace)
}

/// GitLab's transfer failure: 400 with the model errors shown the way Ruby prints them.
fn transfer_failed(message: &str) -> Refusal {
    Refusal::Rejected(format!(
        "Failed to transfer project {{:new_namespace=>{}}}",
        serde_json::Value::from(vec![message])
    ))
}

/// Moves `project` from `current` to the namespace `key` (an id or a full path) where
/// `creator` may create projects; its visibility drops to the target group's when that is
/// lower. The repository is keyed by project id, so only the row changes.
pub async fn transfer(
    db: &TenantDb,
    creator: Creator<'_>,
    project: &ProjectRow,
    current: &NamespaceRow,
    key: &str,
) -> Result<(), Refusal> {
    let namespace = db
        .namespace_by_key(key.trim())
        .await?
        .ok_or(Refusal::NotFound("Namespace"))?;
    if namespace.id == current.id {
        return Err(transfer_failed("Project is already in this namespace."));
    }
    if !creator.may_create_in(db, creator.user, &namespace).await? {
        return Err(transfer_failed("Transfer failed, please contact an admin."));
    }
    let (name_taken, path_taken) = db
        .project_taken(namespace.id, &project.name, &project.path, Some(project.id))
        .await?;
    if name_taken || path_taken {
        return Err(transfer_failed(
            "Project with same name or path in target namespace already exists",
        ));
    }
    let mut changes = ProjectChanges::default();
    changes.set("namespace_id", namespace.id);
    if namespace.is_group() && project.visibility > namespace.visibility {
        changes.set("visibility", namespace.visibility.as_str());
        changes.set("visibility_level", namespace.visibility.level());
    }
    super::projects::update(db, project.id, &changes, creator.user.id).await?;
    Ok(())
}

/// Shares a project with a group at `access` until `expires_at` (`YYYY-MM-DD`, in the future);
/// the new link's id. A group already shared with is GitLab's 409.
pub async fn share(
    db: &TenantDb,
    project_id: i64,
    group_id: i64,
    access: AccessLevel,
    expires_at: Option<&str>,
) -> Result<i64, Refusal> {
    if expires_at.is_some_and(|date| date <= today().as_str()) {
        return Err(Refusal::invalid("expires_at", "must be in the future"));
    }
    db.add_share(project_id, group_id, access.as_i64(), expires_at)
        .await?
        .ok_or_else(|| Refusal::Conflict("Group already shared with this group".into()))
}

/// Ends a project's share with a group: GitLab's 404 Group Link Not Found when there is none.
pub async fn unshare(db: &TenantDb, project_id: i64, group_id: i64) -> Result<(), Refusal> {
    match db.remove_share(project_id, group_id).await? {
        true => Ok(()),
        false => Err(Refusal::NotFound("Group Link")),
    }
}
