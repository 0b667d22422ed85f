//! `POST /projects`, `POST /projects/user/:user_id`, `PUT /projects/:id`,
//! `DELETE /projects/:id`, archive and unarchive.

use crate::http::json::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use super::fields::{Fields, Mode, check_visibility_allowed, default_visibility, restricted};
use super::reload;
use crate::access_level::AccessLevel;
use crate::api::access;
use crate::api::users::avatar::{self, AvatarChange};
use crate::http::error::{ApiError, ApiResult};
use crate::http::request::Api;
use crate::model::namespaces::NamespaceRow;
use crate::model::project_names::{
    NAME_MESSAGE, PATH_MESSAGE, path_from_name, valid_name, valid_path,
};
use crate::model::projects::DEFAULT_BRANCH;
use crate::model::users::UserRow;
use crate::services::imports;
use crate::services::project_deletion;
use crate::services::project_placement::{self as placement, Creator, NewPlacement};
use crate::services::projects::{self, NewProject};
use crate::services::protected_branches::DefaultBranchProtection;
use crate::settings::keys;
use crate::store::projects::ProjectChanges;
use crate::views::project::ProjectView;

/// The caller as the creator of projects.
pub fn creator(api: &Api) -> ApiResult<Creator<'_>> {
    let caller = api.user()?;
    Ok(Creator {
        user: &caller.user,
        admin: caller.is_admin(),
    })
}

async fn create_as(
    api: &Api,
    owner: &UserRow,
    mut fields: Fields,
    avatar: AvatarChange,
) -> ApiResult<Response> {
    let mut settings = Map::new();
    fields.merge_settings(&mut settings);
    let import_url = fields.import_url.take();
    if let Some(url) = &import_url {
        imports::check_import_url(&api.ctx, &api.settings, url).await?;
    }
    let (name, path) = match (fields.name.take(), fields.path.take()) {
        (None, None) => {
            return Err(ApiError::InvalidParam(
                "name, path are missing, at least one parameter must be provided".into(),
            ));
        }
        (Some(name), Some(path)) => (name, path),
        (Some(name), None) => {
            let path = path_from_name(&name);
            if !valid_path(&path) {
                return Err(ApiError::field("path", PATH_MESSAGE));
            }
            (name, path)
        }
        (None, Some(path)) => (path.clone(), path),
    };
    if !valid_name(&name) {
        return Err(ApiError::field("name", NAME_MESSAGE));
    }
    let visibility = fields
        .visibility
        .unwrap_or_else(|| default_visibility(api, keys::DEFAULT_PROJECT_VISIBILITY));
    let placement = NewPlacement {
        namespace: fields.namespace.as_deref(),
        name: &name,
        path: &path,
        visibility,
        restricted: restricted(api, visibility),
    };
    let namespace = placement::place_new(api.db(), creator(api)?, owner, placement).await?;
    let mut changes = fields.changes;
    changes.set_name_and_path(&name, &path);
    changes.set("visibility", visibility.as_str());
    changes.set("visibility_level", visibility.level());
    if changes.get("default_branch").is_none() {
        changes.set("default_branch", initial_branch(api, &namespace).await?);
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
        project_deletion::purge(api.db(), data_dir, project.id, Some(api.user()?.user.id)).await?;
        return Err(error);
    }
    let import = match import_url {
        Some(url) => Some(imports::schedule_fetch(api.db(), &project, url).await?),
        None => None,
    };
    let body = reload(api, project.id).await?;
    if let Some(import) = import {
        import.queue(&api.ctx, api.db()).await?;
    }
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

pub async fn create(api: Api) -> ApiResult<Response> {
    let caller = api.user()?;
    let fields: Fields = api.input_in((Mode::Create, api.audience()))?;
    let avatar: AvatarChange = api.input()?;
    let user = (*caller.user).clone();
    create_as(&api, &user, fields, avatar).await
}

/// `POST /projects/user/:user_id`: an administrator creates a project owned by the user.
pub async fn create_for_user(Path(user_id): Path<String>, api: Api) -> ApiResult<Response> {
    api.admin()?;
    let fields: Fields = api.input_in((Mode::Create, api.audience()))?;
    if fields.name.is_none() {
        return Err(ApiError::Missing("name".into()));
    }
    let avatar: AvatarChange = api.input()?;
    let id: i64 = user_id.parse().map_err(|_| ApiError::NotFound("User"))?;
    let user = api
        .db()
        .user_by_id(id)
        .await?
        .filter(|u| u.user_type == "human")
        .ok_or(ApiError::NotFound("User"))?;
    create_as(&api, &user, fields, avatar).await
}

pub async fn update(Path(id): Path<String>, api: Api) -> ApiResult<Json<ProjectView>> {
    api.user()?;
    let fields: Fields = api.input_in((Mode::Edit, api.audience()))?;
    let avatar: AvatarChange = api.input()?;
    let ctx = access::project(&api, &id).await?;
    ctx.require(AccessLevel::Maintainer)?;
    let mut settings = ctx.project.settings_json();
    fields.merge_settings(&mut settings);
    if let Some(url) = &fields.import_url {
        imports::check_import_url(&api.ctx, &api.settings, url).await?;
    }
    let mut changes = fields.changes;
    let name = fields.name.unwrap_or_else(|| ctx.project.name.clone());
    let path = fields.path.unwrap_or_else(|| ctx.project.path.clone());
    if let Some(visibility) = fields.visibility {
        if visibility != ctx.project.visibility {
            check_visibility_allowed(&api, visibility)?;
        }
        placement::check_group_visibility(&ctx.namespace, visibility)?;
    }
    if name != ctx.project.name || path != ctx.project.path {
        let except = Some(ctx.project.id);
        placement::check_taken(api.db(), ctx.namespace.id, &name, &path, except).await?;
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
    let ctx = access::project(&api, &id)
        .await
        .map_err(|_| ApiError::NotFoundMessage("404 Not Found".into()))?;
    let stored = ctx.project.avatar_path.as_deref();
    avatar::send_current(&api, avatar::PROJECT, ctx.project.id, stored, &filename).await
}

/// Applies `changes` to a project and answers with its full view.
pub async fn save(api: &Api, id: i64, changes: &ProjectChanges) -> ApiResult<Json<ProjectView>> {
    projects::update(api.db(), id, changes, api.user()?.user.id).await?;
    Ok(Json(reload(api, id).await?))
}

async fn set_archived(id: &str, api: &Api, archived: bool) -> ApiResult<Response> {
    api.user()?;
    let ctx = access::project(api, id).await?;
    ctx.require(AccessLevel::Owner)?;
    if ctx.project.archived != archived {
        let mut changes = crate::store::projects::ProjectChanges::default();
        changes.set("archived", archived);
        projects::update(api.db(), ctx.project.id, &changes, api.user()?.user.id).await?;
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

/// A new project's default branch when the request names none: the nearest group's
/// `default_branch` (the project's group, else its ancestors'), else the instance's
/// `default_branch_name`, else `main` (GitLab's `Gitlab::DefaultBranch`).
async fn initial_branch(api: &Api, namespace: &NamespaceRow) -> ApiResult<String> {
    if namespace.is_group() {
        let mut groups = api.db().namespaces_by_ids(&namespace.ancestry()).await?;
        groups.sort_by_key(|group| std::cmp::Reverse(group.traversal.len()));
        if let Some(name) = groups.iter().find_map(NamespaceRow::default_branch_name) {
            return Ok(name);
        }
    }
    let configured = api
        .settings
        .get(keys::DEFAULT_BRANCH_NAME)
        .unwrap_or_default();
    Ok(if configured.trim().is_empty() {
        DEFAULT_BRANCH.to_string()
    } else {
        configured
    })
}
