//! Project hooks (`/projects/:id/hooks`): configuration only, for maintainers, owners and
//! administrators. Hook delivery is not implemented. (The push rule is `push_rule`.)

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::access_level::AccessLevel;
use crate::api::access::{self, ProjectCtx};
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::{COUNT_CAP, Page, PageRequest};
use crate::http::request::Api;
use crate::model::hooks::HookRow;
use crate::outbound::{AddressPolicy, Unresolved};
use crate::store::window::Direction;
use crate::views;

/// The project, for an authenticated maintainer (401, then 404 when hidden, then 403).
pub(super) async fn managed_project(api: &Api, id: &str) -> ApiResult<ProjectCtx> {
    api.user()?;
    let ctx = access::project(api, id).await?;
    ctx.require(AccessLevel::Maintainer)?;
    Ok(ctx)
}

fn hook_id(value: &str) -> ApiResult<i64> {
    value.parse().map_err(|_| ApiError::invalid("hook_id"))
}

pub(super) fn created(body: Value) -> Response {
    (StatusCode::CREATED, Json(body)).into_response()
}

// ---- hooks ------------------------------------------------------------------

/// A hook target must be an absolute http(s) URL that is not local (unless the settings
/// allow it). Like GitLab, any URL problem is 422 "Invalid url given"; a host that does not
/// resolve (yet) passes, since delivery checks again.
async fn check_url(api: &Api, url: &str) -> ApiResult<()> {
    let invalid = || {
        ApiError::Custom(
            StatusCode::UNPROCESSABLE_ENTITY,
            json!({ "message": "Invalid url given" }),
        )
    };
    let parsed = url::Url::parse(url.trim()).map_err(|_| invalid())?;
    AddressPolicy::for_hooks_and_services(&api.ctx.config.outbound_allow_networks, &api.settings)
        .check(&parsed, &["http", "https"], Unresolved::Allow)
        .await
        .map_err(|_| invalid())?;
    Ok(())
}

/// Applies the request's settings to `hook`: `url` is required, toggles and the branch filter
/// change only when given, `token` (stored encrypted) replaces the secret ("" clears it).
async fn apply_hook_params(api: &Api, hook: &mut HookRow) -> ApiResult<()> {
    let url = api.params.required_string("url")?;
    check_url(api, &url).await?;
    hook.url = url.trim().to_string();
    for (name, on) in hook.flags.iter_mut() {
        let mut given = api.params.bool(name)?;
        if *name == "wiki_page_events" && given.is_none() {
            given = api.params.bool("wiki_events")?;
        }
        if let Some(value) = given {
            *on = value;
        }
    }
    if let Some(filter) = api.params.string("push_events_branch_filter")? {
        hook.push_events_branch_filter = Some(filter).filter(|f| !f.is_empty());
    }
    if let Some(token) = api.params.string("token")? {
        hook.token = (!token.is_empty()).then(|| api.ctx.secret_key.encrypt(&token));
    }
    Ok(())
}

pub async fn list_hooks(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let ctx = managed_project(&api, &id).await?;
    let request = PageRequest::from_params(&api.params)?;
    let window = request.window(&api.params, "id", Direction::Asc)?;
    let rows = api.db().list_hooks(ctx.project.id, &window).await?;
    let total = if request.keyset {
        None
    } else {
        Some(api.db().count_hooks(ctx.project.id, COUNT_CAP + 1).await?)
    };
    Ok(Page { rows, total }.respond(&request, &api.origin, |h| h.id, views::hook::hook))
}

async fn existing_hook(api: &Api, ctx: &ProjectCtx, id: &str) -> ApiResult<HookRow> {
    let id = hook_id(id)?;
    api.db()
        .hook(ctx.project.id, id)
        .await?
        .ok_or(ApiError::NotFound("Hook"))
}

pub async fn show_hook(
    Path((id, hook)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<Value>> {
    let ctx = managed_project(&api, &id).await?;
    let row = existing_hook(&api, &ctx, &hook).await?;
    Ok(Json(views::hook::hook(&row)))
}

pub async fn create_hook(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let ctx = managed_project(&api, &id).await?;
    let mut hook = HookRow::defaults(ctx.project.id);
    apply_hook_params(&api, &mut hook).await?;
    let row = api.db().insert_hook(&hook).await?;
    Ok(created(views::hook::hook(&row)))
}

pub async fn update_hook(
    Path((id, hook)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<Value>> {
    let ctx = managed_project(&api, &id).await?;
    let mut row = existing_hook(&api, &ctx, &hook).await?;
    apply_hook_params(&api, &mut row).await?;
    let row = api
        .db()
        .update_hook(&row)
        .await?
        .ok_or(ApiError::NotFound("Hook"))?;
    Ok(Json(views::hook::hook(&row)))
}

/// Idempotent, as the spec says: 204 whether or not the hook existed.
pub async fn delete_hook(
    Path((id, hook)): Path<(String, String)>,
    api: Api,
) -> ApiResult<StatusCode> {
    let ctx = managed_project(&api, &id).await?;
    api.db()
        .delete_hook(ctx.project.id, hook_id(&hook)?)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
