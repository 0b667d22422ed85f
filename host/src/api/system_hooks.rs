//! System hooks (`/hooks`), for administrators: GitLab's list, create, show, edit, delete and
//! test. Their events (projects, users, keys, groups, memberships, pushes) are delivered by
//! `crate::webhooks` under `allow_local_requests_from_system_hooks`.

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use super::projects::hooks::check_url;
use crate::context::ApiContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::{COUNT_CAP, Page, PageRequest};
use crate::http::request::Api;
use crate::http::routes::Router;
use crate::model::hooks::SystemHookRow;
use crate::outbound::AddressPolicy;
use crate::services::webhooks as hook_service;
use crate::store::window::Direction;
use crate::views;
use crate::webhooks::dispatch::uuid_v4;
use crate::webhooks::format;

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/api/v4/hooks", get(list).post(create))
        .route(
            "/api/v4/hooks/{hook_id}",
            get(show).post(test).put(update).delete(remove),
        )
}

async fn existing(api: &Api, id: &str) -> ApiResult<SystemHookRow> {
    let id: i64 = id.parse().map_err(|_| ApiError::invalid("hook_id"))?;
    api.db()
        .system_hook(id)
        .await?
        .ok_or(ApiError::NotFound("Hook"))
}

/// `url` is required; toggles and the formatter change when given; `token` replaces the
/// secret ("" clears it).
async fn apply_params(api: &Api, hook: &mut SystemHookRow) -> ApiResult<()> {
    let url = api.params.required_string("url")?;
    let policy =
        AddressPolicy::for_system_hooks(&api.ctx.config.outbound_allow_networks, &api.settings);
    check_url(&policy, &url).await?;
    hook.url = url.trim().to_string();
    for (name, on) in hook.flags.iter_mut() {
        if let Some(value) = api.params.bool(name)? {
            *on = value;
        }
    }
    if let Some(formatter) = api.params.one_of("formatter", format::FORMATTERS)? {
        hook.formatter = formatter;
    }
    if let Some(token) = api.params.string("token")? {
        hook.token = (!token.is_empty()).then(|| api.ctx.secret_key.encrypt(&token));
    }
    hook.instance_url = api.tenant.base_url.clone();
    if hook.uuid.is_empty() {
        hook.uuid = uuid_v4();
    }
    Ok(())
}

async fn list(api: Api) -> ApiResult<Response> {
    api.admin()?;
    let request = PageRequest::from_params(&api.params)?;
    let window = request.window(&api.params, "id", Direction::Asc)?;
    let rows = api.db().list_system_hooks(&window).await?;
    let total = if request.keyset {
        None
    } else {
        Some(api.db().count_system_hooks(COUNT_CAP + 1).await?)
    };
    Ok(Page { rows, total }.respond(&request, &api.origin, |h| h.id, views::hook::system_hook))
}

async fn show(Path(id): Path<String>, api: Api) -> ApiResult<Json<Value>> {
    api.admin()?;
    let row = existing(&api, &id).await?;
    Ok(Json(views::hook::system_hook(&row)))
}

async fn create(api: Api) -> ApiResult<Response> {
    api.admin()?;
    let mut hook = SystemHookRow::defaults();
    apply_params(&api, &mut hook).await?;
    let row = api.db().insert_system_hook(&hook).await?;
    Ok((StatusCode::CREATED, Json(views::hook::system_hook(&row))).into_response())
}

async fn update(Path(id): Path<String>, api: Api) -> ApiResult<Json<Value>> {
    api.admin()?;
    let mut row = existing(&api, &id).await?;
    apply_params(&api, &mut row).await?;
    let row = api
        .db()
        .update_system_hook(&row)
        .await?
        .ok_or(ApiError::NotFound("Hook"))?;
    Ok(Json(views::hook::system_hook(&row)))
}

async fn remove(Path(id): Path<String>, api: Api) -> ApiResult<StatusCode> {
    api.admin()?;
    let row = existing(&api, &id).await?;
    api.db().delete_system_hook(row.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// GitLab sends a fixed `project_create` sample and answers it (201), whatever the receiver
/// said; the delivery log has the answer.
async fn test(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    api.admin()?;
    let row = existing(&api, &id).await?;
    let (data, _) = hook_service::test_system_hook(&api.ctx, api.db(), &row).await?;
    Ok((StatusCode::CREATED, Json(json!(data))).into_response())
}
