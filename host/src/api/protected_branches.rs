//! Protected branches: `GET/POST /projects/:id/protected_branches`, `GET/PATCH/DELETE
//! /projects/:id/protected_branches/:name` (the name URL-encoded, wildcards included), as
//! GitLab's `API::ProtectedBranches`: every route needs Maintainer (GitLab's
//! `authorize_admin_project`). The push checks that enforce them are `services::push`'s.

use crate::http::json::Json;
use crate::http::routes::Doc;
use axum::extract::Path;
use axum::http::Method;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Map, Value};

use super::access::{self, ProjectCtx};
use super::issues::page_of;
use crate::access_level::AccessLevel;
use crate::context::ApiContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::PageRequest;
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::http::routes::Router;
use crate::model::protected_branches::ProtectedBranch;
use crate::services::protected_branches::{self, KINDS, PUSH_AND_MERGE_LEVELS, UNPROTECT_LEVELS};
use crate::store::protected_branches::{NewProtectedBranch, ProtectedBranchUpdate};
use crate::views::protected_branch::{ProtectedBranchView, protected_branch};

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route(
            "/api/v4/projects/{id}/protected_branches",
            get(list).post(create),
        )
        .doc(
            Method::GET,
            Doc::new()
                .input::<ProtectedBranchQuery>()
                .input::<PageRequest>()
                .answers_list::<ProtectedBranchView>(),
        )
        .doc(
            Method::POST,
            Doc::new()
                .input::<CreateProtectedBranch>()
                .answers::<ProtectedBranchView>(),
        )
        .route(
            "/api/v4/projects/{id}/protected_branches/{name}",
            get(show).patch(update).delete(remove),
        )
        .doc(Method::GET, Doc::new().answers::<ProtectedBranchView>())
        .doc(
            Method::PATCH,
            Doc::new()
                .input::<UpdateProtectedBranch>()
                .answers::<ProtectedBranchView>(),
        )
}

/// The project, for a Maintainer (or an administrator).
async fn maintained(api: &Api, id: &str) -> ApiResult<ProjectCtx> {
    api.user()?;
    let ctx = access::project(api, id).await?;
    ctx.require(AccessLevel::Maintainer)?;
    Ok(ctx)
}

async fn find(api: &Api, ctx: &ProjectCtx, name: &str) -> ApiResult<ProtectedBranch> {
    api.db()
        .protected_branch(ctx.project.id, name)
        .await?
        .ok_or_else(|| ApiError::NotFoundMessage("404 Not Found".into()))
}

/// The level a `*_access_level` parameter names, checked against the levels GitLab offers.
fn level(params: &Params, name: &str, allowed: &[i64]) -> ApiResult<Option<i64>> {
    match params.int(name)? {
        Some(level) if !allowed.contains(&level) => Err(ApiError::InvalidParam(format!(
            "{name} does not have a valid value"
        ))),
        other => Ok(other),
    }
}

fn allowed_levels(kind: &str) -> &'static [i64] {
    if kind == "unprotect" {
        UNPROTECT_LEVELS
    } else {
        PUSH_AND_MERGE_LEVELS
    }
}

/// One entry of `allowed_to_push`, `allowed_to_merge` or `allowed_to_unprotect`.
enum Allowed {
    /// `{access_level}`: a new level.
    Add(i64),
    /// `{id, access_level}`: an existing level changed.
    Change(i64, i64),
    /// `{id, _destroy: true}`: an existing level removed.
    Remove(i64),
}

/// The `allowed_to_<kind>` array: entries naming an access level (users, groups and deploy
/// keys are GitLab Premium's, and are refused here as an invalid value).
fn allowed_to(params: &Params, kind: &'static str) -> ApiResult<Vec<Allowed>> {
    let name = format!("allowed_to_{kind}");
    let invalid = || ApiError::invalid(&name);
    let Some(raw) = params.raw(&name) else {
        return Ok(Vec::new());
    };
    let entries: Vec<Map<String, Value>> = match raw {
        Value::Array(items) => items
            .iter()
            .map(|item| item.as_object().cloned().ok_or_else(invalid))
            .collect::<ApiResult<_>>()?,
        _ => return Err(invalid()),
    };
    entries
        .into_iter()
        .map(|entry| {
            let entry = Params::from_json_object(entry);
            let id = entry.int("id").map_err(|_| invalid())?;
            let destroy = entry
                .bool("_destroy")
                .map_err(|_| invalid())?
                .unwrap_or(false);
            let level = level(&entry, "access_level", allowed_levels(kind)).map_err(|_| {
                ApiError::InvalidParam(format!("{name} does not have a valid value"))
            })?;
            match (id, destroy, level) {
                (Some(id), true, _) => Ok(Allowed::Remove(id)),
                (Some(id), false, Some(level)) => Ok(Allowed::Change(id, level)),
                (None, false, Some(level)) => Ok(Allowed::Add(level)),
                _ => Err(invalid()),
            }
        })
        .collect()
}

/// `POST .../protected_branches`.
/// The list's `search`: a part of the names to keep.
struct ProtectedBranchQuery(Option<String>);

impl FromParams for ProtectedBranchQuery {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(ProtectedBranchQuery(
            p.string("search")?.filter(|s| !s.is_empty()),
        ))
    }
}

struct CreateProtectedBranch {
    name: String,
    levels: Vec<(&'static str, i64)>,
    allow_force_push: bool,
    code_owner_approval_required: bool,
}

impl FromParams for CreateProtectedBranch {
    fn from_params(params: &Params) -> ApiResult<Self> {
        let name = params.required_string("name")?;
        let mut levels = Vec::new();
        for kind in KINDS {
            let given = level(
                params,
                &format!("{kind}_access_level"),
                allowed_levels(kind),
            )?;
            // Entries naming existing levels (`id`) have nothing to name yet: ignored.
            let mut listed: Vec<i64> = allowed_to(params, kind)?
                .into_iter()
                .filter_map(|entry| match entry {
                    Allowed::Add(level) => Some(level),
                    _ => None,
                })
                .collect();
            // GitLab's default for each kind is Maintainers.
            if given.is_some() || listed.is_empty() {
                listed.insert(0, given.unwrap_or(AccessLevel::Maintainer.as_i64()));
            }
            listed.dedup();
            levels.extend(listed.into_iter().map(|level| (kind, level)));
        }
        Ok(CreateProtectedBranch {
            name,
            levels,
            allow_force_push: params.bool("allow_force_push")?.unwrap_or(false),
            code_owner_approval_required: params
                .bool("code_owner_approval_required")?
                .unwrap_or(false),
        })
    }
}

/// `PATCH .../protected_branches/:name`.
struct UpdateProtectedBranch {
    update: ProtectedBranchUpdate,
    /// Ids the `allowed_to_*` entries name, checked against the branch's own levels.
    named: Vec<(&'static str, i64)>,
}

impl FromParams for UpdateProtectedBranch {
    fn from_params(params: &Params) -> ApiResult<Self> {
        let mut update = ProtectedBranchUpdate {
            allow_force_push: params.bool("allow_force_push")?,
            code_owner_approval_required: params.bool("code_owner_approval_required")?,
            ..Default::default()
        };
        let mut named = Vec::new();
        for kind in KINDS {
            for entry in allowed_to(params, kind)? {
                match entry {
                    Allowed::Add(level) => update.add.push((kind, level)),
                    Allowed::Change(id, level) => {
                        named.push((kind, id));
                        update.change.push((id, level));
                    }
                    Allowed::Remove(id) => {
                        named.push((kind, id));
                        update.remove.push(id);
                    }
                }
            }
        }
        Ok(UpdateProtectedBranch { update, named })
    }
}

pub async fn list(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let ctx = maintained(&api, &id).await?;
    let ProtectedBranchQuery(search) = api.input()?;
    let mut all = api.db().protected_branches(ctx.project.id).await?;
    if let Some(search) = search {
        all.retain(|b| b.row.name.contains(&search));
    }
    let request = PageRequest::from_params(&api.params)?;
    Ok(page_of(all, &request).respond(&request, &api.origin, |b| b.row.id, protected_branch))
}

pub async fn show(
    Path((id, name)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<ProtectedBranchView>> {
    let ctx = maintained(&api, &id).await?;
    Ok(Json(protected_branch(&find(&api, &ctx, &name).await?)))
}

pub async fn create(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let ctx = maintained(&api, &id).await?;
    let input: CreateProtectedBranch = api.input()?;
    let new = NewProtectedBranch {
        name: &input.name,
        allow_force_push: input.allow_force_push,
        code_owner_approval_required: input.code_owner_approval_required,
        levels: input.levels.clone(),
    };
    let actor = api.user()?.user.id;
    let created = protected_branches::create(api.db(), ctx.project.id, &new, actor).await?;
    Ok((StatusCode::CREATED, Json(protected_branch(&created))).into_response())
}

pub async fn update(
    Path((id, name)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<ProtectedBranchView>> {
    let ctx = maintained(&api, &id).await?;
    let branch = find(&api, &ctx, &name).await?;
    let input: UpdateProtectedBranch = api.input()?;
    let actor = api.user()?.user.id;
    let updated =
        protected_branches::update(api.db(), &branch, &input.named, &input.update, actor).await?;
    Ok(Json(protected_branch(&updated)))
}

pub async fn remove(Path((id, name)): Path<(String, String)>, api: Api) -> ApiResult<StatusCode> {
    let ctx = maintained(&api, &id).await?;
    let branch = find(&api, &ctx, &name).await?;
    let actor = api.user()?.user.id;
    protected_branches::delete(api.db(), &branch, actor).await?;
    Ok(StatusCode::NO_CONTENT)
}
