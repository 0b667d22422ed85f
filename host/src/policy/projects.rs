//! Who may see a project: private ones are visible to members only (direct, inherited from an
//! ancestor group, shared, or the personal namespace's owner), internal ones to any signed-in
//! non-external user, public ones to everyone; administrators see everything; the external
//! authorization service may refuse any of them. A project the caller may not see is "not
//! found", never "forbidden".

use super::Scope;
use crate::access_level::{AccessLevel, Permissions};
use crate::model::namespaces::NamespaceRow;
use crate::model::projects::ProjectRow;
use crate::model::today;
use crate::model::users::UserRow;
use crate::plugins::external_auth;
use crate::services::Refusal;
use crate::store::members::PROJECT;

/// A project with what requests about it need: its namespace, the personal namespace's
/// owner, and the caller's levels.
pub struct ProjectCtx {
    pub project: ProjectRow,
    pub namespace: NamespaceRow,
    pub owner: Option<UserRow>,
    pub permissions: Permissions,
    pub admin: bool,
}

impl ProjectCtx {
    /// The caller's effective level (no access when none).
    pub fn level(&self) -> AccessLevel {
        self.permissions.effective_level()
    }

    /// Forbidden unless the caller is an administrator or has `min` or above.
    pub fn require(&self, min: AccessLevel) -> Result<(), Refusal> {
        if self.admin || self.level() >= min {
            Ok(())
        } else {
            Err(Refusal::Forbidden(None))
        }
    }
}

/// The caller's levels in `project` (in `namespace`).
async fn permissions(
    scope: &Scope<'_>,
    project: &ProjectRow,
    namespace: &NamespaceRow,
) -> Result<Permissions, Refusal> {
    let Some(caller) = scope.caller else {
        return Ok(Permissions::default());
    };
    let today = today();
    let db = scope.db();
    let user = caller.user.id;
    let ancestry = if namespace.is_group() {
        namespace.ancestry()
    } else {
        Vec::new()
    };
    let ids = [project.id];
    // Independent lookups, run concurrently.
    let (member, group_level, shared) = tokio::try_join!(
        db.member(PROJECT, project.id, user),
        db.group_access(user, &ancestry, &today),
        db.shared_levels(user, &ids, &today),
    )?;
    let project_level = member
        .filter(|m| m.expires_at.as_deref().is_none_or(|e| e > today.as_str()))
        .map(|m| m.access_level);
    let shared = shared.into_iter().map(|(_, level)| level).max();
    Ok(Permissions {
        project: project_level.map(AccessLevel::from_stored),
        group: group_level.map(AccessLevel::from_stored),
        shared: shared.map(AccessLevel::from_stored),
        personal_owner: namespace.owner_id == Some(user),
    })
}

/// A project found by [`project`].
pub struct Found {
    pub ctx: ProjectCtx,
    /// Found at an old path it has moved from.
    pub moved: bool,
}

/// The project named by `key` (id or full path; at a path it has moved from, the project
/// itself) if the caller may see it, else "Project" not found.
pub async fn project(scope: &Scope<'_>, key: &str) -> Result<Found, Refusal> {
    let key = key.trim();
    let db = scope.db();
    let mut moved = false;
    let row = if !key.is_empty() && key.bytes().all(|b| b.is_ascii_digit()) {
        match key.parse() {
            Ok(id) => db.project_by_id(id).await?,
            Err(_) => None,
        }
    } else {
        match db.project_by_full_path(key).await? {
            Some(row) => Some(row),
            None => match db.project_moved_from(key).await? {
                Some(id) => {
                    moved = true;
                    db.project_by_id(id).await?
                }
                None => None,
            },
        }
    };
    let project = row.ok_or(Refusal::NotFound("Project"))?;
    let namespace = db
        .namespace_by_id(project.namespace_id)
        .await?
        .ok_or(Refusal::NotFound("Project"))?;
    let (owner, permissions) = tokio::try_join!(
        async {
            match (namespace.owner_id, scope.caller) {
                // The caller's own personal project: their row is already at hand.
                (Some(id), Some(caller)) if caller.user.id == id => {
                    Ok(Some(UserRow::clone(&caller.user)))
                }
                (Some(id), _) => db.user_by_id(id).await.map_err(Refusal::from),
                (None, _) => Ok(None),
            }
        },
        permissions(scope, &project, &namespace),
    )?;
    let ctx = ProjectCtx {
        project,
        namespace,
        owner,
        permissions,
        admin: scope.is_admin(),
    };
    if !may_see(scope, &ctx.project, &ctx.permissions).await? {
        return Err(Refusal::NotFound("Project"));
    }
    Ok(Found { ctx, moved })
}

/// Whether the caller, with `permissions` in `project`, may see it: what [`project`] decides
/// once it has the project, for those who load many at once (a page's fork sources). `false`
/// where [`project`] answers "not found"; external authorization's refusal is the error.
pub async fn may_see(
    scope: &Scope<'_>,
    project: &ProjectRow,
    permissions: &Permissions,
) -> Result<bool, Refusal> {
    let member = permissions.effective_level() >= AccessLevel::Guest;
    if !(scope.is_admin() || member || scope.open_to(project.visibility)) {
        return Ok(false);
    }
    external_authorization(scope, project).await?;
    Ok(true)
}

/// GitLab's external authorization of project access (plugins::external_auth), for every
/// caller, administrators included: forbidden with the service's reason when it refuses.
async fn external_authorization(scope: &Scope<'_>, project: &ProjectRow) -> Result<(), Refusal> {
    if !external_auth::enabled(scope.settings) {
        return Ok(());
    }
    let Some(label) = external_auth::label_for(scope.settings, &project.classification_label())
    else {
        return Ok(());
    };
    let decision = decide_label(scope, &label).await;
    if decision.allowed {
        Ok(())
    } else {
        Err(Refusal::Forbidden(Some(decision.reason)))
    }
}

/// The projects the external authorization service refuses the caller, which lists leave out
/// (so their counts agree): each distinct label of the tenant's projects is decided once
/// (and cached). Empty when the service is off.
pub async fn refused_projects(scope: &Scope<'_>) -> Result<Vec<i64>, Refusal> {
    if !external_auth::enabled(scope.settings) {
        return Ok(Vec::new());
    }
    let mut by_label: std::collections::HashMap<String, Vec<i64>> = Default::default();
    for project in scope.db().project_classification_labels().await? {
        if let Some(label) = external_auth::label_for(scope.settings, &project.1) {
            by_label.entry(label).or_default().push(project.0);
        }
    }
    let mut refused = Vec::new();
    for (label, ids) in by_label {
        if !decide_label(scope, &label).await.allowed {
            refused.extend(ids);
        }
    }
    Ok(refused)
}

/// The service's decision on the caller for `label` (cached).
async fn decide_label(scope: &Scope<'_>, label: &str) -> external_auth::Decision {
    let subject = scope.caller.map(|c| external_auth::Subject {
        user: external_auth::User {
            id: c.user.id.max(0) as u64,
            username: c.user.username.clone(),
            created_at: c.user.created_at,
            is_admin: c.user.is_admin,
            external: c.user.external,
        },
        email: c.user.email.clone(),
    });
    let identities = async {
        let Some(caller) = scope.caller else {
            return Vec::new();
        };
        match caller.identities(scope.db()).await {
            Ok(rows) => rows
                .iter()
                .map(|r| (r.provider.clone(), r.extern_uid.clone()))
                .collect(),
            Err(error) => {
                tracing::warn!(error = %error, "could not read identities for external authorization");
                Vec::new()
            }
        }
    };
    scope
        .ctx
        .external_auth
        .decide(
            scope.tenant.id,
            scope.settings,
            &scope.ctx.secret_key,
            subject.as_ref(),
            label,
            identities,
        )
        .await
}
