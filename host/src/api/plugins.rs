//! The plugin catalog and hook bindings of a tenant, administrators only:
//! `GET|POST /application/plugins`, `DELETE /application/plugins/:id`,
//! `GET /application/plugin_hooks`, `PUT|DELETE /application/plugin_hooks/:hook`, and
//! `POST /application/plugin_hooks/spam_check/test`. The handlers parse and render; what is
//! allowed and what happens is `services::plugins` (which the admin console calls too).

use crate::http::json::Json;
use crate::http::routes::Doc;
use crate::http::routes::Router;
use axum::extract::Path;
use axum::http::Method;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use serde_json::Value;

use crate::context::ApiContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::params::{FromParams, Params, UploadedFile};
use crate::http::request::Api;
use crate::outbound::http::Grant;
use crate::plugins::spam::SpammableKind;
use crate::plugins::{FailurePolicy, Hook};
use crate::services::plugins::{self as service, Bind, Choice, Trial, Upload};
use crate::services::spam;
use crate::settings::keys;
use crate::views;
use crate::views::plugin::{PluginHookView, PluginView, SpamTestView};

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/api/v4/application/plugins", get(list).post(upload))
        .doc(Method::GET, Doc::new().answers_list::<PluginView>())
        .doc(
            Method::POST,
            Doc::new().input::<UploadPlugin>().answers::<PluginView>(),
        )
        .route("/api/v4/application/plugins/{id}", delete(remove))
        .route("/api/v4/application/plugin_hooks", get(hooks))
        .doc(Method::GET, Doc::new().answers_list::<PluginHookView>())
        .route(
            "/api/v4/application/plugin_hooks/{hook}",
            put(bind).delete(unbind),
        )
        .doc(
            Method::PUT,
            Doc::new().input::<BindPlugin>().answers::<PluginHookView>(),
        )
        .route(
            "/api/v4/application/plugin_hooks/spam_check/test",
            post(test_spam_check),
        )
        .doc(
            Method::POST,
            Doc::new().input::<TrySpamCheck>().answers::<SpamTestView>(),
        )
}

async fn list(api: Api) -> ApiResult<Json<Vec<PluginView>>> {
    api.admin()?;
    let rows = service::catalog(&api.ctx, api.db()).await?;
    Ok(Json(rows.iter().map(views::plugin::plugin).collect()))
}

/// `POST /application/plugins`: the component `file`, and the catalog's `name` and `version`
/// for it when given.
struct UploadPlugin {
    file: UploadedFile,
    name: Option<String>,
    version: Option<String>,
}

impl FromParams for UploadPlugin {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let Some(file) = p.file("file") else {
            return Err(if p.has("file") {
                ApiError::invalid("file")
            } else {
                ApiError::Missing("file".into())
            });
        };
        Ok(UploadPlugin {
            file: file.clone(),
            name: p.present_string("name")?,
            version: p.present_string("version")?,
        })
    }
}

async fn upload(api: Api) -> ApiResult<Response> {
    api.admin()?;
    service::check_uploads_allowed(&api.ctx)?;
    let input: UploadPlugin = api.input()?;
    let upload = Upload {
        file: &input.file,
        name: input.name,
        version: input.version,
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

async fn hooks(api: Api) -> ApiResult<Json<Vec<PluginHookView>>> {
    api.admin()?;
    let out = service::hooks(api.db())
        .await?
        .iter()
        .map(|state| views::plugin::hook(state.hook, state.bound.as_ref().map(|(b, p)| (b, p))))
        .collect();
    Ok(Json(out))
}

/// `PUT /application/plugin_hooks/:hook`: the plugin (exactly one of `plugin_id` and
/// `sha256`), its `config`, and what the hook's defaults and the operator's limits fill in
/// when not given.
struct BindPlugin {
    choice: Choice,
    /// A JSON object as text: given as an object or as JSON text; `{}` when absent.
    config: String,
    failure_policy: Option<FailurePolicy>,
    timeout_ms: Option<u64>,
    fuel: Option<u64>,
    memory_bytes: Option<u64>,
    outbound_http: Option<Grant>,
}

impl FromParams for BindPlugin {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let choice = match (p.int("plugin_id")?, p.present_string("sha256")?) {
            (Some(_), Some(_)) => {
                return Err(ApiError::InvalidParam(
                    "plugin_id, sha256 are mutually exclusive".into(),
                ));
            }
            (None, None) => {
                return Err(ApiError::InvalidParam(
                    "plugin_id, sha256 are missing, exactly one parameter must be provided".into(),
                ));
            }
            (Some(id), None) => Choice::Id(id),
            (None, Some(sha256)) => Choice::Sha256(sha256),
        };
        let config = match p.raw("config") {
            None => "{}".into(),
            Some(value @ Value::Object(_)) => value.to_string(),
            Some(Value::String(text)) => service::config_from_text(text)?,
            Some(_) => {
                return Err(ApiError::InvalidParam(
                    "config must be a JSON object".into(),
                ));
            }
        };
        let failure_policy = p
            .one_of("failure_policy", &FailurePolicy::NAMES)?
            .and_then(|name| FailurePolicy::parse(&name));
        let positive = |name: &str| -> ApiResult<Option<u64>> {
            match p.int(name)? {
                Some(n) if n < 0 => Err(ApiError::invalid(name)),
                other => Ok(other.map(|n| n as u64)),
            }
        };
        let (timeout_ms, fuel, memory_bytes) = (
            positive("timeout_ms")?,
            positive("fuel")?,
            positive("memory_bytes")?,
        );
        let outbound_http = match p.string_list("outbound_http")? {
            Some(origins) => Some(
                Grant::from_json(&Value::from(origins))
                    .map_err(|reason| ApiError::BadRequest(format!("outbound_http {reason}")))?,
            ),
            None => None,
        };
        Ok(BindPlugin {
            choice,
            config,
            failure_policy,
            timeout_ms,
            fuel,
            memory_bytes,
            outbound_http,
        })
    }
}

async fn bind(Path(hook): Path<String>, api: Api) -> ApiResult<Json<PluginHookView>> {
    api.admin()?;
    let hook = service::hook_named(&hook)?;
    let input: BindPlugin = api.input()?;
    service::ensure_built_ins(&api.ctx, api.db()).await?;
    let plugin = service::chosen(api.db(), input.choice).await?;
    let limits = service::limits(
        &api.ctx.plugins.maxima,
        input.timeout_ms,
        input.fuel,
        input.memory_bytes,
    )?;
    let bound = service::bind(
        &api.ctx,
        &api.tenant,
        Bind {
            hook,
            plugin,
            config: input.config,
            failure_policy: input
                .failure_policy
                .unwrap_or_else(|| hook.default_policy()),
            limits,
            outbound_http: input.outbound_http,
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

/// `POST /application/plugin_hooks/spam_check/test`: an issue's `title` and `description`
/// to check, as user `user_id` (default: the caller).
struct TrySpamCheck {
    user_id: Option<i64>,
    title: String,
    description: String,
    is_update: bool,
    confidential: bool,
}

impl FromParams for TrySpamCheck {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(TrySpamCheck {
            user_id: p.int("user_id")?,
            title: p.required_string("title")?,
            description: p.string("description")?.unwrap_or_default(),
            is_update: p.bool("is_update")?.unwrap_or(false),
            confidential: p.bool("confidential")?.unwrap_or(false),
        })
    }
}

/// Runs the bound spam check on the input and shows the verdict and what the API would do,
/// without logging, blocking or writing anything (as GitLab's hook tests).
async fn test_spam_check(api: Api) -> ApiResult<Json<SpamTestView>> {
    let caller = api.admin()?;
    let input: TrySpamCheck = api.input()?;
    let author = match input.user_id {
        Some(id) => api
            .db()
            .user_by_id(id)
            .await?
            .ok_or(ApiError::NotFound("User"))?,
        None => (*caller.user).clone(),
    };
    if api
        .ctx
        .plugins
        .binding(api.tenant.id, Hook::SpamCheck)
        .is_none()
    {
        return Err(ApiError::NotFound("Hook binding"));
    }
    let origin = spam::Origin {
        ip: api.client_ip,
        user_agent: api.user_agent.as_deref(),
    };
    let subject = spam::subject(
        &origin,
        &author,
        &spam::Spammable {
            kind: SpammableKind::Issue,
            noteable_type: "Issue",
            title: &input.title,
            description: &input.description,
            is_update: input.is_update,
            confidential: input.confidential,
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
