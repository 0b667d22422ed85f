//! Forks: `POST /projects/:id/fork` answers 201 at once with `import_status` `scheduled`
//! while a background task copies the repository (`git fetch` from the source's bare
//! repository) and then sets `finished`, or `failed` with `import_error`.
//! `GET /projects/:id/forks`, `POST /projects/:id/fork/:forked_from_id` (link an existing
//! project) and `DELETE /projects/:id/fork` (unlink).

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::fields::{self, path_from_name};
use super::repository::{self, spawn_logged};
use super::write::{check_projects_limit, check_taken, may_create_in};
use super::{VISIBILITIES, reload};
use crate::access_level::AccessLevel;
use crate::api::access::{self, ProjectCtx};
use crate::http::error::{ApiError, ApiResult};
use crate::http::request::Api;
use crate::model::namespaces::NamespaceRow;
use crate::model::project_settings::setting;
use crate::services::projects::{self, NewProject, refresh_statistics};
use crate::store::namespaces::visibility_level;
use crate::store::projects::ProjectChanges;

/// Settings a fork does not inherit: mirroring belongs to the source.
const NOT_INHERITED: &[&str] = &["mirror", "mirror_user_id", "mirror_trigger_builds"];

/// Whether the caller may fork the project: forking not disabled, and for private projects
/// (or forking limited to members) a reporter or above.
fn may_fork(ctx: &ProjectCtx) -> bool {
    if ctx.admin {
        return true;
    }
    let settings = ctx.project.settings_json();
    let members_only = match setting(&settings, "forking_access_level").as_str() {
        Some("disabled") => return false,
        Some("private") => true,
        _ => ctx.project.visibility == "private",
    };
    !members_only || ctx.level() >= AccessLevel::Reporter
}

/// The fork's namespace: `namespace_id`, `namespace_path` or the deprecated `namespace`
/// (404 Namespace Not Found when unknown), else the caller's own.
async fn fork_namespace(api: &Api) -> ApiResult<NamespaceRow> {
    let caller = api.user()?;
    let key = match api.params.string("namespace_id")? {
        Some(key) => Some(key),
        None => match api.params.string("namespace_path")? {
            Some(path) => Some(path),
            None => api.params.string("namespace")?,
        },
    }
    .map(|k| k.trim().to_string())
    .filter(|k| !k.is_empty());
    let namespace = match key {
        Some(key) => api.db().namespace_by_key(&key).await?,
        None => api.db().user_namespace(caller.user.id).await?,
    };
    let namespace = namespace.ok_or(ApiError::NotFound("Namespace"))?;
    if may_create_in(api, &caller.user, &namespace).await? {
        Ok(namespace)
    } else {
        Err(ApiError::NotFound("Target Namespace"))
    }
}

/// GitLab answers a fork that fails validation with 409 and the field map.
fn conflict(error: ApiError) -> ApiError {
    match error {
        ApiError::Validation(map) => {
            ApiError::Custom(StatusCode::CONFLICT, json!({ "message": map }))
        }
        other => other,
    }
}

/// `POST /projects/:id/fork`.
pub async fn create(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let caller = api.user()?;
    let source = access::project(&api, &id).await?;
    if !may_fork(&source) {
        return Err(ApiError::NotFoundMessage("404 Not Found".into()));
    }
    let namespace = fork_namespace(&api).await?;
    let name = api
        .params
        .string("name")?
        .unwrap_or_else(|| source.project.name.clone());
    let path = match api.params.string("path")? {
        Some(path) => path,
        None if api.params.has("name") => path_from_name(&name),
        None => source.project.path.clone(),
    };
    if !fields::valid_name(&name) {
        return Err(conflict(ApiError::field("name", fields::NAME_MESSAGE)));
    }
    if !fields::valid_path(&path) {
        return Err(conflict(ApiError::field("path", fields::PATH_MESSAGE)));
    }
    // The fork is at most as visible as its source, its group and the requested level.
    let mut level = visibility_level(&source.project.visibility);
    if namespace.is_group() {
        level = level.min(visibility_level(&namespace.visibility));
    }
    if let Some(requested) = api.params.one_of("visibility", VISIBILITIES)? {
        level = level.min(visibility_level(&requested));
    }
    let visibility = VISIBILITIES
        .iter()
        .copied()
        .find(|v| visibility_level(v) == level)
        .unwrap_or("private");
    let branches: Option<Vec<String>> = api.params.string("branches")?.map(|b| {
        b.split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    });
    let branches = branches.filter(|b| !b.is_empty());
    check_projects_limit(&api, &caller.user, &namespace)
        .await
        .map_err(conflict)?;
    check_taken(&api, namespace.id, &name, &path, None)
        .await
        .map_err(conflict)?;

    let project = &source.project;
    let mut settings = project.settings_json();
    for key in NOT_INHERITED {
        settings.remove(*key);
    }
    if let Some(own) = api.params.bool("mr_default_target_self")? {
        settings.insert("mr_default_target_self".into(), json!(own));
    }
    let mut changes = ProjectChanges::default();
    changes.set_name_and_path(&name, &path);
    changes.set("visibility", visibility);
    changes.set("visibility_level", level);
    let description = api
        .params
        .string("description")?
        .or_else(|| project.description.clone());
    changes.set("description", description);
    changes.set("default_branch", project.default_branch.clone());
    changes.set("tag_list", project.tag_list.as_str());
    changes.set("issues_access_level", project.issues_access_level.as_str());
    changes.set(
        "merge_requests_access_level",
        project.merge_requests_access_level.as_str(),
    );
    changes.set("settings", Value::Object(settings).to_string());
    changes.set("forked_from_id", project.id);
    changes.set("import_status", "scheduled");
    // The fork starts with an empty repository; the copy runs in the background once its row
    // exists (GitLab answers `scheduled` at once), outside any transaction.
    let new = NewProject {
        namespace_id: namespace.id,
        creator: &caller.user,
        changes,
        with_readme: false,
        default_branch_protection: None,
    };
    let fork = projects::create(api.db(), &api.ctx.config.storage.data_dir, new)
        .await
        .map_err(|error| conflict(error.into()))?;
    let body = reload(&api, fork.id).await?;

    let db = api.db().clone();
    let from = repository::repository(&api, project.id, false);
    let into = repository::repository(&api, fork.id, false);
    let branch = repository::default_branch(&fork);
    let source_branch = repository::default_branch(project);
    spawn_logged("fork", async move {
        db.set_import_status(fork.id, "started", None).await?;
        let copied = async {
            from.ensure(&source_branch).await?;
            into.fetch(&from.path().to_string_lossy(), branches.as_deref(), &[])
                .await?;
            if into.branch_exists(&branch).await? {
                into.set_head(&branch).await?;
            }
            refresh_statistics(&db, &into, fork.id, &branch).await?;
            anyhow::Ok(())
        }
        .await;
        match copied {
            Ok(()) => db.set_import_status(fork.id, "finished", None).await?,
            Err(error) => {
                db.set_import_status(fork.id, "failed", Some(&format!("{error:#}")))
                    .await?
            }
        }
        Ok(())
    });
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// `GET /projects/:id/forks`: the direct forks the caller can see.
pub async fn list(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let ctx = access::project(&api, &id).await?;
    super::read::forks_of(api, ctx.project.id).await
}

/// `POST /projects/:id/fork/:forked_from_id`: owners and administrators mark the project as a
/// fork of another one they can see (409 when it already is a fork).
pub async fn link(
    Path((id, forked_from_id)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Response> {
    api.user()?;
    let ctx = access::project(&api, &id).await?;
    ctx.require(AccessLevel::Owner)?;
    let source = access::project(&api, &forked_from_id).await?;
    if !may_fork(&source) {
        return Err(ApiError::forbidden());
    }
    if ctx.project.forked_from_id.is_some() || source.project.id == ctx.project.id {
        return Err(ApiError::Custom(
            StatusCode::CONFLICT,
            json!({ "message": "Project already forked" }),
        ));
    }
    api.db()
        .set_forked_from(ctx.project.id, Some(source.project.id))
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(reload(&api, ctx.project.id).await?),
    )
        .into_response())
}

/// `DELETE /projects/:id/fork`: owners and administrators; 204, or 304 when it is no fork.
pub async fn unlink(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    api.user()?;
    let ctx = access::project(&api, &id).await?;
    ctx.require(AccessLevel::Owner)?;
    if api.db().set_forked_from(ctx.project.id, None).await? {
        Ok(StatusCode::NO_CONTENT.into_response())
    } else {
        Err(ApiError::NotModified)
    }
}
