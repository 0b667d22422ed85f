//! Project hooks (`/projects/:id/hooks`: settings, the delivery log, resending, tests), for
//! maintainers, owners and administrators. Delivery itself is `crate::webhooks`. (The push
//! rule is `push_rule`.)

use crate::http::json::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::access_level::AccessLevel;
use crate::api::access::{self, ProjectCtx};
use crate::api::hook_input::HookInput;
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::{COUNT_CAP, Page, PageRequest};
use crate::http::params::Params;
use crate::http::request::Api;
use crate::model::hooks::HookRow;
use crate::model::now_ms;
use crate::model::webhooks::HookKind;
use crate::services::hooks;
use crate::services::webhooks as hook_service;
use crate::store::window::Direction;
use crate::views;
use crate::views::hook::HookView;
use crate::views::hook_test::{HookResendView, HookTestView};
use crate::webhooks::rules;

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

pub(super) fn created(body: impl Serialize) -> Response {
    (StatusCode::CREATED, Json(body)).into_response()
}

// ---- hooks ------------------------------------------------------------------

/// The hook's JSON with its current `alert_status`.
fn hook_view(row: &HookRow) -> HookView {
    let status = rules::alert_status(&row.delivery, now_ms());
    views::hook::hook(row, status.name())
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
    Ok(Page { rows, total }.respond(&request, &api.origin, |h| h.id, hook_view))
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
) -> ApiResult<Json<HookView>> {
    let ctx = managed_project(&api, &id).await?;
    let row = existing_hook(&api, &ctx, &hook).await?;
    Ok(Json(hook_view(&row)))
}

pub async fn create_hook(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let ctx = managed_project(&api, &id).await?;
    let input: HookInput = api.input_in(HookKind::Project)?;
    let mut hook = HookRow::defaults(ctx.project.id);
    input.apply_to_project_hook(&api, &mut hook).await?;
    let row = hooks::create_project_hook(api.db(), &hook).await?;
    Ok(created(hook_view(&row)))
}

pub async fn update_hook(
    Path((id, hook)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<HookView>> {
    let ctx = managed_project(&api, &id).await?;
    let input: HookInput = api.input_in(HookKind::Project)?;
    let mut row = existing_hook(&api, &ctx, &hook).await?;
    input.apply_to_project_hook(&api, &mut row).await?;
    let row = hooks::update_project_hook(api.db(), &row).await?;
    Ok(Json(hook_view(&row)))
}

/// Idempotent, as the spec says: 204 whether or not the hook existed.
pub async fn delete_hook(
    Path((id, hook)): Path<(String, String)>,
    api: Api,
) -> ApiResult<StatusCode> {
    let ctx = managed_project(&api, &id).await?;
    let hook_id = hook_id(&hook)?;
    hooks::delete_project_hook(api.db(), ctx.project.id, hook_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// GitLab's `status` filter of the events list: codes, or `successful`, `client_failure`,
/// `server_failure` (which includes requests that got no answer).
pub(super) fn log_statuses(params: &Params) -> ApiResult<Option<Vec<String>>> {
    let Some(given) = params.string_list("status")? else {
        return Ok(None);
    };
    let mut statuses = Vec::new();
    for status in given {
        let range = match status.as_str() {
            "successful" => 200..300,
            "client_failure" => 400..500,
            "server_failure" => {
                statuses.push("internal error".to_string());
                500..600
            }
            code => match code.parse::<u16>() {
                Ok(code) if (100..600).contains(&code) => code..code + 1,
                _ => return Err(ApiError::invalid("status")),
            },
        };
        statuses.extend(range.map(|code| code.to_string()));
    }
    Ok(Some(statuses))
}

/// `GET /projects/:id/hooks/:hook_id/events`: the hook's recent deliveries, newest first.
pub async fn list_hook_events(
    Path((id, hook)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Response> {
    let ctx = managed_project(&api, &id).await?;
    let row = existing_hook(&api, &ctx, &hook).await?;
    let statuses = log_statuses(&api.params)?;
    let request = PageRequest::from_params(&api.params)?;
    let window = request.window(&api.params, "id", Direction::Desc)?;
    let rows = api
        .db()
        .hook_logs(HookKind::Project, row.id, statuses.as_deref(), &window)
        .await?;
    Ok(Page { rows, total: None }.respond(&request, &api.origin, |l| l.id, views::hook::log))
}

/// `POST /projects/:id/hooks/:hook_id/events/:hook_log_id/resend`: sends a logged delivery's
/// payload again (same idempotency key) and answers the receiver's status.
pub async fn resend_hook_event(
    Path((id, hook, log_id)): Path<(String, String, String)>,
    api: Api,
) -> ApiResult<Response> {
    let ctx = managed_project(&api, &id).await?;
    let row = existing_hook(&api, &ctx, &hook).await?;
    let log_id: i64 = log_id
        .parse()
        .map_err(|_| ApiError::invalid("hook_log_id"))?;
    let log = api
        .db()
        .hook_log(HookKind::Project, row.id, log_id)
        .await?
        .ok_or(ApiError::NotFound("Hook log"))?;
    let tried = hook_service::resend(&api.ctx, api.db(), &row, &log).await?;
    match tried.status {
        Some(status) => Ok(created(HookResendView {
            response_status: status,
        })),
        None => Err(ApiError::Unprocessable(tried.message.into())),
    }
}

/// `POST /projects/:id/hooks/:hook_id/test/:trigger`: a sample of the trigger's event, sent at
/// once; 201 when the receiver answered 2xx, else 422 with why.
pub async fn test_hook(
    Path((id, hook, trigger)): Path<(String, String, String)>,
    api: Api,
) -> ApiResult<Response> {
    let ctx = managed_project(&api, &id).await?;
    let row = existing_hook(&api, &ctx, &hook).await?;
    if !hook_service::TEST_TRIGGERS
        .iter()
        .any(|(t, _, _)| *t == trigger)
    {
        return Err(ApiError::InvalidParam(
            "trigger does not have a valid value".into(),
        ));
    }
    let unprocessable = |message: String| ApiError::Unprocessable(message.into());
    let tester = &api.user()?.user;
    match hook_service::test_project_hook(&api.ctx, api.db(), &row, &trigger, tester).await? {
        Ok(tried) if tried.success => Ok(created(HookTestView {
            message: "201 Created",
        })),
        Ok(tried) => Err(unprocessable(tried.message)),
        Err(missing) => Err(unprocessable(missing)),
    }
}
