//! Project hooks (`/projects/:id/hooks`) and the push rule (`/projects/:id/push_rule`):
//! configuration only, for maintainers, owners and administrators. Hook delivery and push
//! rule enforcement are not implemented.

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
use crate::model::hooks::{HookRow, PUSH_RULE_FLAGS, PUSH_RULE_REGEXES, PushRuleRow};
use crate::outbound::{AddressPolicy, Unresolved};
use crate::store::window::Direction;
use crate::views;

/// The project, for an authenticated maintainer (401, then 404 when hidden, then 403).
async fn managed_project(api: &Api, id: &str) -> ApiResult<ProjectCtx> {
    api.user()?;
    let ctx = access::project(api, id).await?;
    ctx.require(AccessLevel::Maintainer)?;
    Ok(ctx)
}

fn hook_id(value: &str) -> ApiResult<i64> {
    value.parse().map_err(|_| ApiError::invalid("hook_id"))
}

fn created(body: Value) -> Response {
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

// ---- push rule --------------------------------------------------------------

/// GitLab's `at_least_one_of` list for push rules.
fn push_rule_params() -> Vec<&'static str> {
    let mut names: Vec<&str> = PUSH_RULE_REGEXES
        .iter()
        .chain(PUSH_RULE_FLAGS)
        .copied()
        .chain(["max_file_size"])
        .collect();
    names.sort_unstable();
    names
}

/// Applies the given settings to `rule`. Regexes must compile (RE2-like syntax); blank clears
/// one. `max_file_size` (MB) is an integer of at least 0.
fn apply_push_rule_params(api: &Api, rule: &mut PushRuleRow) -> ApiResult<()> {
    let names = push_rule_params();
    if !names.iter().any(|n| api.params.has(n)) {
        return Err(ApiError::InvalidParam(format!(
            "{} are missing, at least one parameter must be provided",
            names.join(", ")
        )));
    }
    for (name, on) in rule.flags.iter_mut() {
        if let Some(value) = api.params.bool(name)? {
            *on = value;
        }
    }
    if let Some(size) = api.params.int("max_file_size")? {
        if size < 0 {
            return Err(ApiError::field(
                "max_file_size",
                "must be greater than or equal to 0",
            ));
        }
        rule.max_file_size = size;
    }
    let mut problems = serde_json::Map::new();
    for (name, regex) in rule.regexes.iter_mut() {
        let Some(given) = api.params.string(name)? else {
            continue;
        };
        if given.is_empty() {
            *regex = None;
            continue;
        }
        if let Err(error) = regex_syntax::Parser::new().parse(&given) {
            let reason = error.to_string();
            let reason = reason.lines().last().unwrap_or("invalid").trim();
            problems.insert(
                (*name).to_string(),
                json!([format!("not valid RE2 syntax: {reason}")]),
            );
        }
        *regex = Some(given);
    }
    if !problems.is_empty() {
        return Err(ApiError::Validation(problems));
    }
    Ok(())
}

/// `GET /projects/:id/push_rule`: the rule, or `null` when there is none.
pub async fn show_push_rule(Path(id): Path<String>, api: Api) -> ApiResult<Json<Value>> {
    let ctx = managed_project(&api, &id).await?;
    let rule = api.db().push_rule(ctx.project.id).await?;
    Ok(Json(
        rule.as_ref().map_or(Value::Null, views::hook::push_rule),
    ))
}

fn push_rule_exists() -> ApiError {
    ApiError::Custom(
        StatusCode::UNPROCESSABLE_ENTITY,
        json!({ "error": "Project push rule exists" }),
    )
}

pub async fn create_push_rule(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let ctx = managed_project(&api, &id).await?;
    if api.db().push_rule(ctx.project.id).await?.is_some() {
        return Err(push_rule_exists());
    }
    let mut rule = PushRuleRow::defaults(ctx.project.id);
    apply_push_rule_params(&api, &mut rule)?;
    let row = api
        .db()
        .insert_push_rule(&rule)
        .await
        .map_err(|error| match &error {
            sqlx::Error::Database(db)
                if matches!(db.kind(), sqlx::error::ErrorKind::UniqueViolation) =>
            {
                push_rule_exists()
            }
            _ => ApiError::from(error),
        })?;
    Ok(created(views::hook::push_rule(&row)))
}

pub async fn update_push_rule(Path(id): Path<String>, api: Api) -> ApiResult<Json<Value>> {
    let ctx = managed_project(&api, &id).await?;
    let mut rule = api
        .db()
        .push_rule(ctx.project.id)
        .await?
        .ok_or(ApiError::NotFound("Push Rule"))?;
    apply_push_rule_params(&api, &mut rule)?;
    let row = api
        .db()
        .update_push_rule(&rule)
        .await?
        .ok_or(ApiError::NotFound("Push Rule"))?;
    Ok(Json(views::hook::push_rule(&row)))
}

/// Idempotent, as the spec says: 204 whether or not a rule existed.
pub async fn delete_push_rule(Path(id): Path<String>, api: Api) -> ApiResult<StatusCode> {
    let ctx = managed_project(&api, &id).await?;
    api.db().delete_push_rule(ctx.project.id).await?;
    Ok(StatusCode::NO_CONTENT)
}
