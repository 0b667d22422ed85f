//! The plugin catalog and hook bindings of a tenant, administrators only:
//! `GET|POST /application/plugins`, `DELETE /application/plugins/:id`,
//! `GET /application/plugin_hooks`, `PUT|DELETE /application/plugin_hooks/:hook`, and
//! `POST /application/plugin_hooks/spam_check/test`. The handlers parse and render; what is
//! allowed and what happens is `services::plugins` (which the admin console calls too).

use crate::http::routes::Router;
use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use serde_json::Value;

use crate::context::ApiContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::request::Api;
use crate::outbound::http::Grant;
use crate::plugins::spam::SpammableKind;
use crate::plugins::{FailurePolicy, Hook, Limits};
use crate::services::plugins::{self as service, Bind, Choice, Error, Trial, Upload};
use crate::settings::keys;
use crate::views;

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/api/v4/application/plugins", get(list).post(upload))
        .route("/api/v4/application/plugins/{id}", delete(remove))
        .route("/api/v4/application/plugin_hooks", get(hooks))
        .route(
            "/api/v4/application/plugin_hooks/{hook}",
            put(bind).delete(unbind),
        )
        .route(
            "/api/v4/application/plugin_hooks/spam_check/test",
            post(test_spam_check),
        )
}

impl From<Error> for ApiError {
    fn from(error: Error) -> Self {
        match error {
            Error::Param(message) => ApiError::InvalidParam(message),
            Error::Field(field, message) => ApiError::field(field, message),
            Error::Rejected(reason) => ApiError::BadRequest(reason),
            Error::Forbidden(reason) => ApiError::forbidden_because(reason),
            Error::NotFound(what) => ApiError::NotFound(what),
            Error::Conflict(message) => ApiError::Conflict(message.into()),
            Error::TooLarge => ApiError::PayloadTooLarge,
            Error::Internal(error) => ApiError::Internal(error),
        }
    }
}

async fn list(api: Api) -> ApiResult<Json<Value>> {
    api.admin()?;
    let rows = service::catalog(&api.ctx, api.db()).await?;
    Ok(Json(Value::Array(
        rows.iter().map(views::plugin::plugin).collect(),
    )))
}

async fn upload(api: Api) -> ApiResult<Response> {
    api.admin()?;
    service::check_uploads_allowed(&api.ctx)?;
    let Some(file) = api.params.file("file") else {
        return Err(if api.params.has("file") {
            ApiError::invalid("file")
        } else {
            ApiError::Missing("file".into())
        });
    };
    let upload = Upload {
        file,
        name: api.params.present_string("name")?,
        version: api.params.present_string("version")?,
    };
    let (row, created) = service::upload(&api.ctx, api.db(), upload).await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(views::plugin::plugin(&row))).into_response())
}

async fn remove(Path(id): Path<String>, api: Api) -> ApiResult<StatusCode> {
    api.admin()?;
    let id: i64 = id.parse().map_err(|_| ApiError::NotFound("Plugin"))?;
    let row = service::plugin(api.db(), id).await?;
    service::remove(api.db(), &row).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn hooks(api: Api) -> ApiResult<Json<Value>> {
    api.admin()?;
    let out = service::hooks(api.db())
        .await?
        .iter()
        .map(|state| views::plugin::hook(state.hook, state.bound.as_ref().map(|(b, p)| (b, p))))
        .collect();
    Ok(Json(Value::Array(out)))
}

/// The plugin named by exactly one of `plugin_id` and `sha256`.
fn choice_param(api: &Api) -> ApiResult<Choice> {
    let id = api.params.int("plugin_id")?;
    let sha256 = api.params.present_string("sha256")?;
    match (id, sha256) {
        (Some(_), Some(_)) => Err(ApiError::InvalidParam(
            "plugin_id, sha256 are mutually exclusive".into(),
        )),
        (None, None) => Err(ApiError::InvalidParam(
            "plugin_id, sha256 are missing, exactly one parameter must be provided".into(),
        )),
        (Some(id), None) => Ok(Choice::Id(id)),
        (None, Some(sha256)) => Ok(Choice::Sha256(sha256)),
    }
}

/// `config`: a JSON object, given as an object or as JSON text; `{}` when absent.
fn config_param(api: &Api) -> ApiResult<String> {
    match api.params.raw("config") {
        None => Ok("{}".into()),
        Some(value @ Value::Object(_)) => Ok(value.to_string()),
        Some(Value::String(text)) => Ok(service::config_from_text(text)?),
        Some(_) => Err(ApiError::InvalidParam(
            "config must be a JSON object".into(),
        )),
    }
}

fn limits_param(api: &Api) -> ApiResult<Limits> {
    let positive = |name: &str| -> ApiResult<Option<u64>> {
        match api.params.int(name)? {
            Some(n) if n < 0 => Err(ApiError::invalid(name)),
            other => Ok(other.map(|n| n as u64)),
        }
    };
    let (timeout_ms, fuel, memory_bytes) = (
        positive("timeout_ms")?,
        positive("fuel")?,
        positive("memory_bytes")?,
    );
    Ok(service::limits(
        &api.ctx.plugins.maxima,
        timeout_ms,
        fuel,
        memory_bytes,
    )?)
}

async fn bind(Path(hook): Path<String>, api: Api) -> ApiResult<Json<Value>> {
    api.admin()?;
    let hook = service::hook_named(&hook)?;
    service::ensure_built_ins(&api.ctx, api.db()).await?;
    let plugin = service::chosen(api.db(), choice_param(&api)?).await?;
    let config = config_param(&api)?;
    let failure_policy = match api.params.one_of("failure_policy", &FailurePolicy::NAMES)? {
        Some(name) => FailurePolicy::parse(&name).unwrap_or(hook.default_policy()),
        None => hook.default_policy(),
    };
    let limits = limits_param(&api)?;
    let outbound_http = match api.params.string_list("outbound_http")? {
        Some(origins) => Some(
            Grant::from_json(&Value::from(origins))
                .map_err(|reason| ApiError::BadRequest(format!("outbound_http {reason}")))?,
        ),
        None => None,
    };
    let bound = service::bind(
        &api.ctx,
        &api.tenant,
        Bind {
            hook,
            plugin,
            config,
            failure_policy,
            limits,
            outbound_http,
        },
    )
    .await?;
    Ok(Json(views::plugin::hook(
        hook,
        bound.as_ref().map(|(b, p)| (b, p)),
    )))
}

async fn unbind(Path(hook): Path<String>, api: Api) -> ApiResult<StatusCode> {
    api.admin()?;
    let hook = service::hook_named(&hook)?;
    service::unbind(&api.ctx, &api.tenant, hook).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /application/plugin_hooks/spam_check/test`: runs the bound spam check on `title` and
/// `description` as user `user_id` (default: the caller) and shows the verdict and what the
/// API would do, without logging, blocking or writing anything (as GitLab's hook tests).
async fn test_spam_check(api: Api) -> ApiResult<Json<Value>> {
    let caller = api.admin()?;
    let author = match api.params.int("user_id")? {
        Some(id) => api
            .db()
            .user_by_id(id)
            .await?
            .ok_or(ApiError::NotFound("User"))?,
        None => (*caller.user).clone(),
    };
    let title = api.params.required_string("title")?;
    let description = api.params.string("description")?.unwrap_or_default();
    // Nothing bound answers 404 before the remaining parameters are read.
    if api
        .ctx
        .plugins
        .binding(api.tenant.id, Hook::SpamCheck)
        .is_none()
    {
        return Err(ApiError::NotFound("Hook binding"));
    }
    let subject = super::spam::subject(
        &api,
        &author,
        &super::spam::Spammable {
            kind: SpammableKind::Issue,
            noteable_type: "Issue",
            title: &title,
            description: &description,
            is_update: api.params.bool("is_update")?.unwrap_or(false),
            confidential: api.params.bool("confidential")?.unwrap_or(false),
            project: None,
        },
    );
    let captcha = api.settings.get(keys::CAPTCHA_ENABLED);
    let report =
        service::try_spam_check(&api.ctx, &api.tenant, Trial::Bound, &subject, captcha).await?;
    Ok(Json(views::plugin::spam_test(
        &report.outcome,
        &report.stats,
    )))
}
