//! System hooks (`/hooks`), for administrators: GitLab's list, create, show, edit, delete and
//! test. Their events (projects, users, keys, groups, memberships, pushes) are delivered by
//! `crate::webhooks` under `allow_local_requests_from_system_hooks`.

use crate::http::json::Json;
use crate::http::routes::Doc;
use axum::extract::Path;
use axum::http::Method;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::hook_input::HookInput;
use crate::context::ApiContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::{COUNT_CAP, Page, PageRequest};
use crate::http::request::Api;
use crate::http::routes::Router;
use crate::model::hooks::SystemHookRow;
use crate::model::webhooks::HookKind;
use crate::services::hooks;
use crate::services::webhooks as hook_service;
use crate::store::window::Direction;
use crate::views;
use crate::views::hook::SystemHookView;
use crate::views::hook_test::{SYSTEM_HOOK_SAMPLE, SystemHookSample};
use crate::views::webhook_payload::body_text;

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/api/v4/hooks", get(list).post(create))
        .doc(
            Method::GET,
            Doc::new()
                .input::<PageRequest>()
                .answers_list::<SystemHookView>(),
        )
        .doc(
            Method::POST,
            Doc::new()
                .input_in::<HookInput, _>(HookKind::System)
                .answers::<SystemHookView>(),
        )
        .route(
            "/api/v4/hooks/{hook_id}",
            get(show).post(test).put(update).delete(remove),
        )
        .doc(Method::GET, Doc::new().answers::<SystemHookView>())
        .doc(Method::POST, Doc::new().answers::<SystemHookSample>())
        .doc(
            Method::PUT,
            Doc::new()
                .input_in::<HookInput, _>(HookKind::System)
                .answers::<SystemHookView>(),
        )
}

async fn existing(api: &Api, id: &str) -> ApiResult<SystemHookRow> {
    let id: i64 = id.parse().map_err(|_| ApiError::invalid("hook_id"))?;
    api.db()
        .system_hook(id)
        .await?
        .ok_or(ApiError::NotFound("Hook"))
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

async fn show(Path(id): Path<String>, api: Api) -> ApiResult<Json<SystemHookView>> {
    api.admin()?;
    let row = existing(&api, &id).await?;
    Ok(Json(views::hook::system_hook(&row)))
}

async fn create(api: Api) -> ApiResult<Response> {
    api.admin()?;
    let input: HookInput = api.input_in(HookKind::System)?;
    let mut hook = SystemHookRow::defaults();
    input.apply_to_system_hook(&api, &mut hook).await?;
    let row = hooks::create_system_hook(api.db(), &hook).await?;
    Ok((StatusCode::CREATED, Json(views::hook::system_hook(&row))).into_response())
}

async fn update(Path(id): Path<String>, api: Api) -> ApiResult<Json<SystemHookView>> {
    api.admin()?;
    let input: HookInput = api.input_in(HookKind::System)?;
    let mut row = existing(&api, &id).await?;
    input.apply_to_system_hook(&api, &mut row).await?;
    let row = hooks::update_system_hook(api.db(), &row).await?;
    Ok(Json(views::hook::system_hook(&row)))
}

async fn remove(Path(id): Path<String>, api: Api) -> ApiResult<StatusCode> {
    api.admin()?;
    let row = existing(&api, &id).await?;
    hooks::delete_system_hook(api.db(), &row).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// GitLab sends a fixed `project_create` sample and answers it (201), whatever the receiver
/// said; the delivery log has the answer.
async fn test(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    api.admin()?;
    let row = existing(&api, &id).await?;
    let sample = body_text(&SYSTEM_HOOK_SAMPLE);
    hook_service::test_system_hook(&api.ctx, api.db(), &row, sample).await?;
    Ok((StatusCode::CREATED, Json(SYSTEM_HOOK_SAMPLE)).into_response())
}
