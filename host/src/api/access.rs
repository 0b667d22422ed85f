//! Who may see and change projects and groups. A project or group the caller may not see is
//! 404, never 403: private ones are visible to members only (direct, inherited from an
//! ancestor group, or the personal namespace's owner), internal ones to any signed-in
//! non-external user, public ones to everyone. Administrators see everything.

use axum::http::Method;

use crate::access_level::{AccessLevel, Permissions};
use crate::http::error::{ApiError, ApiResult};
use crate::http::request::Api;
use crate::model::namespaces::NamespaceRow;
use crate::model::projects::ProjectRow;
pub use crate::model::today;
use crate::model::users::UserRow;
use crate::plugins::external_auth;
use crate::store::members::PROJECT;
use crate::store::projects::Viewer;

pub fn viewer(api: &Api) -> Viewer {
    match &api.caller {
        None => Viewer::Anonymous,
        Some(c) if c.is_admin() => Viewer::Admin { id: c.user.id },
        Some(c) => Viewer::User {
            id: c.user.id,
            external: c.user.external,
        },
    }
}

fn is_admin(api: &Api) -> bool {
    api.caller.as_ref().is_some_and(|c| c.is_admin())
}

/// Whether a namespace at `level` is open to the caller without membership.
fn open_to(api: &Api, visibility: &str) -> bool {
    match visibility {
        "public" => true,
        "internal" => api.caller.as_ref().is_some_and(|c| !c.user.external),
        _ => false,
    }
}

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

    /// 403 unless the caller is an administrator or has `min` or above.
    pub fn require(&self, min: AccessLevel) -> ApiResult<()> {
        if self.admin || self.level() >= min {
            Ok(())
        } else {
            Err(ApiError::forbidden())
        }
    }
}

/// The caller's levels in `project` (in `namespace`).
pub async fn permissions(
    api: &Api,
    project: &ProjectRow,
    namespace: &NamespaceRow,
) -> ApiResult<Permissions> {
    let Some(caller) = &api.caller else {
        return Ok(Permissions::default());
    };
    let today = today();
    let db = api.db();
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

/// The project named by `key` (id or URL-encoded full path) if the caller may see it, else
/// `404 Project Not Found`. At a moved project's old path, as GitLab's `find_project!`: a
/// read is redirected to the same request at the project's id, a write is refused (405).
pub async fn project(api: &Api, key: &str) -> ApiResult<ProjectCtx> {
    let found = project_following_moves(api, key).await?;
    if !found.moved {
        return Ok(found.ctx);
    }
    if !matches!(api.method, Method::GET | Method::HEAD) {
        return Err(ApiError::WriteToMovedProject);
    }
    match path_with_id(&api.origin.path, key.trim(), found.ctx.project.id) {
        Some(path) => Err(ApiError::Moved(api.origin.with_path(&path))),
        // Named elsewhere than in the path (a parameter): answered in place.
        None => Ok(found.ctx),
    }
}

/// `path` with its segment that names `key` replaced by the project id `id`.
fn path_with_id(path: &str, key: &str, id: i64) -> Option<String> {
    let mut segments: Vec<String> = path.split('/').map(str::to_string).collect();
    let named = segments
        .iter_mut()
        .find(|segment| percent_encoding::percent_decode_str(segment).decode_utf8_lossy() == key)?;
    *named = id.to_string();
    Some(segments.join("/"))
}

/// A project found by [`project_following_moves`].
pub struct Found {
    pub ctx: ProjectCtx,
    /// Found at an old path it has moved from.
    pub moved: bool,
}

/// The project named by `key` as [`project`] finds it, but at an old path it has moved from,
/// the project itself (git keeps serving moved projects).
pub async fn project_following_moves(api: &Api, key: &str) -> ApiResult<Found> {
    let key = key.trim();
    let mut moved = false;
    let row = if !key.is_empty() && key.bytes().all(|b| b.is_ascii_digit()) {
        match key.parse() {
            Ok(id) => api.db().project_by_id(id).await?,
            Err(_) => None,
        }
    } else {
        match api.db().project_by_full_path(key).await? {
            Some(row) => Some(row),
            None => match api.db().project_moved_from(key).await? {
                Some(id) => {
                    moved = true;
                    api.db().project_by_id(id).await?
                }
                None => None,
            },
        }
    };
    let project = row.ok_or(ApiError::NotFound("Project"))?;
    let namespace = api
        .db()
        .namespace_by_id(project.namespace_id)
        .await?
        .ok_or(ApiError::NotFound("Project"))?;
    let (owner, permissions) = tokio::try_join!(
        async {
            match (namespace.owner_id, &api.caller) {
                // The caller's own personal project: their row is already at hand.
                (Some(id), Some(caller)) if caller.user.id == id => {
                    Ok(Some(UserRow::clone(&caller.user)))
                }
                (Some(id), _) => api.db().user_by_id(id).await.map_err(ApiError::from),
                (None, _) => Ok(None),
            }
        },
        permissions(api, &project, &namespace),
    )?;
    let ctx = ProjectCtx {
        project,
        namespace,
        owner,
        permissions,
        admin: is_admin(api),
    };
    let member = ctx.level() >= AccessLevel::Guest;
    if !(ctx.admin || member || open_to(api, &ctx.project.visibility)) {
        return Err(ApiError::NotFound("Project"));
    }
    external_authorization(api, &ctx.project).await?;
    Ok(Found { ctx, moved })
}

/// GitLab's external authorization of project access (plugins::external_auth), for every
/// caller, administrators included: 403 with the service's reason when it refuses.
pub async fn external_authorization(api: &Api, project: &ProjectRow) -> ApiResult<()> {
    if !external_auth::enabled(&api.settings) {
        return Ok(());
    }
    let Some(label) = external_auth::label_for(&api.settings, &project.classification_label())
    else {
        return Ok(());
    };
    let decision = decide_label(api, &label).await;
    if decision.allowed {
        Ok(())
    } else {
        Err(ApiError::forbidden_because(decision.reason))
    }
}

/// The projects the external authorization service refuses the caller, which lists leave out
/// (so their counts agree): each distinct label of the tenant's projects is decided once
/// (and cached). Empty when the service is off.
pub async fn refused_projects(api: &Api) -> ApiResult<Vec<i64>> {
    if !external_auth::enabled(&api.settings) {
        return Ok(Vec::new());
    }
    let mut by_label: std::collections::HashMap<String, Vec<i64>> = Default::default();
    for project in api.db().project_classification_labels().await? {
        if let Some(label) = external_auth::label_for(&api.settings, &project.1) {
            by_label.entry(label).or_default().push(project.0);
        }
    }
    let mut refused = Vec::new();
    for (label, ids) in by_label {
        if !decide_label(api, &label).await.allowed {
            refused.extend(ids);
        }
    }
    Ok(refused)
}

/// The service's decision on the caller for `label` (cached).
pub async fn decide_label(api: &Api, label: &str) -> external_auth::Decision {
    let subject = api.caller.as_ref().map(|c| external_auth::Subject {
        user: crate::plugins::wit::since_v0_1::User {
            id: c.user.id.max(0) as u64,
            username: c.user.username.clone(),
            created_at: c.user.created_at,
            is_admin: c.user.is_admin,
            external: c.user.external,
        },
        email: c.user.email.clone(),
    });
    let identities = async {
        let Some(caller) = &api.caller else {
            return Vec::new();
        };
        match caller.identities(api.db()).await {
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
    api.ctx
        .external_auth
        .decide(
            api.tenant.id,
            &api.settings,
            &api.ctx.secret_key,
            subject.as_ref(),
            label,
            identities,
        )
        .await
}

/// A group with the caller's level in it (direct or inherited).
pub struct GroupCtx {
    pub group: NamespaceRow,
    pub level: Option<AccessLevel>,
    pub admin: bool,
}

impl GroupCtx {
    pub fn require(&self, min: AccessLevel) -> ApiResult<()> {
        if self.admin || self.level.unwrap_or_default() >= min {
            Ok(())
        } else {
            Err(ApiError::forbidden())
        }
    }
}

/// The group named by `key` (id or URL-encoded full path) if the caller may see it, else
/// `404 Group Not Found`.
pub async fn group(api: &Api, key: &str) -> ApiResult<GroupCtx> {
    let group = api
        .db()
        .namespace_by_key(key.trim())
        .await?
        .filter(NamespaceRow::is_group)
        .ok_or(ApiError::NotFound("Group"))?;
    let level = match &api.caller {
        Some(caller) => api
            .db()
            .group_access(caller.user.id, &group.ancestry(), &today())
            .await?
            .map(AccessLevel::from_stored),
        None => None,
    };
    let ctx = GroupCtx {
        group,
        level,
        admin: is_admin(api),
    };
    if ctx.admin || ctx.level.is_some() || open_to(api, &ctx.group.visibility) {
        return Ok(ctx);
    }
    if let Some(caller) = &api.caller
        && api
            .db()
            .member_below(caller.user.id, &ctx.group.traversal)
            .await?
    {
        return Ok(ctx);
    }
    Err(ApiError::NotFound("Group"))
}
