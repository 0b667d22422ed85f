//! `POST /projects`, `POST /projects/user/:user_id`, `PUT /projects/:id`,
//! `DELETE /projects/:id`, archive and unarchive.

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use super::fields::{self, Mode, check_visibility_allowed, default_visibility, path_from_name};
use super::reload;
use super::{delete, mirror};
use crate::access_level::AccessLevel;
use crate::api::access::{self, today};
use crate::api::users::avatar::{self, AvatarChange};
use crate::http::error::{ApiError, ApiResult, OnConstraint};
use crate::http::request::Api;
use crate::model::namespaces::NamespaceRow;
use crate::model::users::UserRow;
use crate::services::projects::{self, NewProject, PROJECT_UNIQUES};
use crate::services::protected_branches::DefaultBranchProtection;
use crate::settings::keys;
use crate::store::namespaces::visibility_level;
use crate::store::projects::ProjectChanges;

fn namespace_invalid() -> ApiError {
    ApiError::field("namespace", "is not valid")
}

/// The namespace a new project goes to: `namespace_id` (id or full path) when given and the
/// caller may create projects there, else `owner`'s personal namespace.
async fn target_namespace(api: &Api, owner: &UserRow) -> ApiResult<NamespaceRow> {
    let key = api
        .params
        .string("namespace_id")?
        .or(api.params.string("namespace")?)
        .filter(|s| !s.trim().is_empty());
    let Some(key) = key else {
        return api
            .db()
            .user_namespace(owner.id)
            .await?
            .ok_or(ApiError::NotFound("Namespace"));
    };
    let namespace = api
        .db()
        .namespace_by_key(key.trim())
        .await?
        .ok_or_else(namespace_invalid)?;
    if may_create_in(api, owner, &namespace).await? {
        Ok(namespace)
    } else {
        Err(namespace_invalid())
    }
}

/// Whether the caller may create a project owned by `owner` in `namespace`: administrators
/// anywhere, others in groups where their level meets `project_creation_level`, or in
/// `owner`'s personal namespace.
pub async fn may_create_in(
    api: &Api,
    owner: &UserRow,
    namespace: &NamespaceRow,
) -> ApiResult<bool> {
    let caller = api.user()?;
    if caller.is_admin() {
        return Ok(true);
    }
    if !namespace.is_group() {
        return Ok(namespace.owner_id == Some(owner.id));
    }
    let level = api
        .db()
        .group_access(caller.user.id, &namespace.ancestry(), &today())
        .await?
        .map(AccessLevel::from_stored);
    let needed =
        match super::super::groups::setting_str(namespace, "project_creation_level").as_str() {
            "noone" => return Ok(false),
            "maintainer" => AccessLevel::Maintainer,
            _ => AccessLevel::Developer,
        };
    Ok(level.is_some_and(|level| level >= needed))
}

/// The user's personal project limit, for projects in their own namespace.
pub async fn check_projects_limit(
    api: &Api,
    owner: &UserRow,
    namespace: &NamespaceRow,
) -> ApiResult<()> {
    if namespace.owner_id != Some(owner.id) {
        return Ok(());
    }
    let message = if owner.projects_limit <= 0 {
        "Personal project creation is not allowed. Please contact your administrator with questions"
            .to_string()
    } else {
        let count = api.db().count_namespace_projects(namespace.id).await?;
        if count < owner.projects_limit {
            return Ok(());
        }
        format!(
            "Your project limit is {} projects! Please contact your administrator to increase it",
            owner.projects_limit
        )
    };
    Err(ApiError::field("limit_reached", message))
}

/// A project's visibility may not exceed its group's.
pub fn check_group_visibility(namespace: &NamespaceRow, visibility: &str) -> ApiResult<()> {
    if namespace.is_group()
        && visibility_level(visibility) > visibility_level(&namespace.visibility)
    {
        return Err(ApiError::field(
            "visibility_level",
            format!(
                "{visibility} is not allowed in a {} group.",
                namespace.visibility
            ),
        ));
    }
    Ok(())
}

/// "has already been taken" for the name and/or path, as one field map.
pub async fn check_taken(
    api: &Api,
    namespace_id: i64,
    name: &str,
    path: &str,
    except: Option<i64>,
) -> ApiResult<()> {
    let (name_taken, path_taken) = api
        .db()
        .project_taken(namespace_id, name, path, except)
        .await?;
    let mut map = Map::new();
    if name_taken {
        map.insert("name".into(), json!(["has already been taken"]));
    }
    if path_taken {
        map.insert("path".into(), json!(["has already been taken"]));
    }
    if map.is_empty() {
        Ok(())
    } else {
        Err(ApiError::Validation(map))
    }
}

async fn create_as(api: &Api, owner: &UserRow) -> ApiResult<Response> {
    let mut settings = Map::new();
    let mut fields = fields::read(api, Mode::Create, &mut settings)?;
    let import_url = api
        .params
        .string("import_url")?
        .filter(|u| !u.trim().is_empty());
    if let Some(url) = &import_url {
        mirror::check_import_url(api, url).await?;
    }
    let avatar = avatar::requested(api)?;
    let (name, path) = match (fields.name.take(), fields.path.take()) {
        (None, None) => {
            return Err(ApiError::InvalidParam(
                "name, path are missing, at least one parameter must be provided".into(),
            ));
        }
        (Some(name), Some(path)) => (name, path),
        (Some(name), None) => {
            let path = path_from_name(&name);
            if !fields::valid_path(&path) {
                return Err(ApiError::field("path", fields::PATH_MESSAGE));
            }
            (name, path)
        }
        (None, Some(path)) => (path.clone(), path),
    };
    if !fields::valid_name(&name) {
        return Err(ApiError::field("name", fields::NAME_MESSAGE));
    }
    let namespace = target_namespace(api, owner).await?;
    let visibility = fields
        .visibility
        .clone()
        .unwrap_or_else(|| default_visibility(api, keys::DEFAULT_PROJECT_VISIBILITY));
    check_visibility_allowed(api, &visibility)?;
    check_group_visibility(&namespace, &visibility)?;
    check_projects_limit(api, owner, &namespace).await?;
    check_taken(api, namespace.id, &name, &path, None).await?;
    let mut changes = fields.changes;
    changes.set_name_and_path(&name, &path);
    changes.set("visibility", visibility.as_str());
    changes.set("visibility_level", visibility_level(&visibility));
    if changes.get("default_branch").is_none() {
        let configured = api
            .settings
            .get(keys::DEFAULT_BRANCH_NAME)
            .unwrap_or_default();
        let branch = if configured.trim().is_empty() {
            "master".to_string()
        } else {
            configured
        };
        changes.set("default_branch", branch);
    }
    if fields.initialize_with_readme {
        settings.insert("initialize_with_readme".into(), json!(true));
    }
    changes.set("settings", Value::Object(settings).to_string());
    if let AvatarChange::Set(_, name) = &avatar {
        changes.set("avatar_path", name.as_str());
    }
    let data_dir = &api.ctx.config.storage.data_dir;
    let new = NewProject {
        namespace_id: namespace.id,
        creator: owner,
        changes,
        with_readme: fields.initialize_with_readme,
        default_branch_protection: Some(DefaultBranchProtection::of(&api.settings, &namespace)),
    };
    let project = projects::create(api.db(), data_dir, new).await?;
    if let AvatarChange::Set(file, name) = &avatar
        && let Err(error) = avatar::store(api, avatar::PROJECT, project.id, file, name).await
    {
        delete::purge(api.db(), data_dir, project.id, Some(api.user()?.user.id)).await?;
        return Err(error);
    }
    let import = match import_url {
        Some(url) => Some(mirror::schedule_fetch(api, &project, url).await?),
        None => None,
    };
    let body = reload(api, project.id).await?;
    if let Some(import) = import {
        import.start();
    }
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

pub async fn create(api: Api) -> ApiResult<Response> {
    let caller = api.user()?;
    let user = (*caller.user).clone();
    create_as(&api, &user).await
}

/// `POST /projects/user/:user_id`: an administrator creates a project owned by the user.
pub async fn create_for_user(Path(user_id): Path<String>, api: Api) -> ApiResult<Response> {
    api.admin()?;
    let id: i64 = user_id.parse().map_err(|_| ApiError::NotFound("User"))?;
    let user = api
        .db()
        .user_by_id(id)
        .await?
        .filter(|u| u.user_type == "human")
        .ok_or(ApiError::NotFound("User"))?;
    if api.params.string("name")?.is_none() {
        return Err(ApiError::Missing("name".into()));
    }
    create_as(&api, &user).await
}

pub async fn update(Path(id): Path<String>, api: Api) -> ApiResult<Json<Value>> {
    api.user()?;
    let ctx = access::project(&api, &id).await?;
    ctx.require(AccessLevel::Maintainer)?;
    let mut settings = ctx.project.settings_json();
    let fields = fields::read(&api, Mode::Edit, &mut settings)?;
    if let Some(url) = api
        .params
        .string("import_url")?
        .filter(|u| !u.trim().is_empty())
    {
        mirror::check_import_url(&api, &url).await?;
    }
    let avatar = avatar::requested(&api)?;
    let mut changes = fields.changes;
    let name = fields.name.unwrap_or_else(|| ctx.project.name.clone());
    let path = fields.path.unwrap_or_else(|| ctx.project.path.clone());
    if let Some(visibility) = &fields.visibility {
        if *visibility != ctx.project.visibility {
            check_visibility_allowed(&api, visibility)?;
        }
        check_group_visibility(&ctx.namespace, visibility)?;
    }
    if name != ctx.project.name || path != ctx.project.path {
        check_taken(&api, ctx.namespace.id, &name, &path, Some(ctx.project.id)).await?;
    }
    changes.set_name_and_path(&name, &path);
    changes.set("settings", Value::Object(settings).to_string());
    match &avatar {
        AvatarChange::Keep => {}
        AvatarChange::Set(file, name) => {
            avatar::store(&api, avatar::PROJECT, ctx.project.id, file, name).await?;
            changes.set("avatar_path", name.as_str());
        }
        AvatarChange::Remove => {
            avatar::remove(&api, avatar::PROJECT, ctx.project.id).await?;
            changes.set("avatar_path", None::<String>);
        }
    }
    save(&api, ctx.project.id, &changes).await
}

/// `GET /uploads/-/system/project/avatar/:id/:filename`: the avatar, to whoever may see the
/// project (404 otherwise).
pub async fn serve_avatar(
    Path((id, filename)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Response> {
    let not_found = || ApiError::NotFoundMessage("404 Not Found".into());
    let ctx = access::project(&api, &id).await.map_err(|_| not_found())?;
    if ctx.project.avatar_path.as_deref() != Some(filename.as_str()) {
        return Err(not_found());
    }
    avatar::send(&api, avatar::PROJECT, ctx.project.id, &filename).await
}

/// Applies `changes` to a project and answers with its full view.
pub async fn save(api: &Api, id: i64, changes: &ProjectChanges) -> ApiResult<Json<Value>> {
    api.db()
        .update_project(id, changes, Some(api.user()?.user.id))
        .await
        .on_constraints(PROJECT_UNIQUES)?
        .ok_or(ApiError::NotFound("Project"))?;
    Ok(Json(reload(api, id).await?))
}

async fn set_archived(id: &str, api: &Api, archived: bool) -> ApiResult<Response> {
    api.user()?;
    let ctx = access::project(api, id).await?;
    ctx.require(AccessLevel::Owner)?;
    if ctx.project.archived != archived {
        let mut changes = crate::store::projects::ProjectChanges::default();
        changes.set("archived", archived);
        api.db()
            .update_project(ctx.project.id, &changes, Some(api.user()?.user.id))
            .await?;
    }
    Ok((
        StatusCode::CREATED,
        Json(reload(api, ctx.project.id).await?),
    )
        .into_response())
}

pub async fn archive(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    set_archived(&id, &api, true).await
}

pub async fn unarchive(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    set_archived(&id, &api, false).await
}
