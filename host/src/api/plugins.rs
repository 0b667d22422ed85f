//! The plugin catalog and hook bindings of a tenant, administrators only:
//! `GET|POST /application/plugins`, `DELETE /application/plugins/:id`,
//! `GET /application/plugin_hooks`, `PUT|DELETE /application/plugin_hooks/:hook`.
//! Built-in plugins are entered in the catalog on first use; uploads are compiled and checked
//! (a component targeting a known world) before they are stored. A binding is accepted only
//! when the plugin's `validate-config` accepts the configuration; this process's snapshot is
//! refreshed at once, the others poll within a second.

use std::sync::Arc;

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
use crate::model::plugins::PluginRow;
use crate::outbound::http::Grant;
use crate::plugins::runtime::Compiled;
use crate::plugins::spam::{self, SpammableKind};
use crate::plugins::{FailurePolicy, Hook, Limits, builtin};
use crate::settings::keys;
use crate::store::plugins::{NewBinding, NewPlugin};
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

fn catalog_entry(compiled: &Compiled) -> (&'static str, &str) {
    (
        compiled.target.world.world_name(),
        &compiled.target.package_version,
    )
}

/// Enters this binary's built-in plugins in the tenant's catalog (once per version).
async fn ensure_built_ins(api: &Api) -> ApiResult<()> {
    for (built_in, sha256) in builtin::with_digests() {
        if api.db().plugin_by_sha256(sha256).await?.is_some() {
            continue;
        }
        let compiled = api
            .ctx
            .plugins
            .compile(Arc::from(built_in.bytes))
            .await
            .map_err(|e| {
                ApiError::Internal(anyhow::anyhow!("built-in plugin {}: {e}", built_in.name))
            })?;
        let (world, api_version) = catalog_entry(&compiled);
        api.db()
            .insert_plugin(&NewPlugin {
                sha256,
                name: built_in.name,
                version: Some(built_in.version),
                world,
                api_version,
                size: built_in.bytes.len() as i64,
                content: None,
            })
            .await?;
    }
    Ok(())
}

/// The catalog without built-in entries of other releases (their binaries are not in this one).
async fn catalog(api: &Api) -> ApiResult<Vec<PluginRow>> {
    ensure_built_ins(api).await?;
    let mut rows = api.db().list_plugins().await?;
    rows.retain(|row| !row.built_in || builtin::by_sha256(&row.sha256).is_some());
    Ok(rows)
}

async fn list(api: Api) -> ApiResult<Json<Value>> {
    api.admin()?;
    let rows = catalog(&api).await?;
    Ok(Json(Value::Array(
        rows.iter().map(views::plugin::plugin).collect(),
    )))
}

async fn upload(api: Api) -> ApiResult<Response> {
    api.admin()?;
    if !api.ctx.config.allow_tenant_plugin_uploads {
        return Err(ApiError::forbidden_because(
            "Plugin uploads are disabled on this instance",
        ));
    }
    let Some(file) = api.params.file("file") else {
        return Err(if api.params.has("file") {
            ApiError::invalid("file")
        } else {
            ApiError::Missing("file".into())
        });
    };
    if file.bytes.len() > api.ctx.config.plugin_max_upload_bytes {
        return Err(ApiError::PayloadTooLarge);
    }
    let name = match api.params.present_string("name")? {
        Some(name) => name,
        None => file.filename.trim_end_matches(".wasm").trim().to_string(),
    };
    if name.is_empty() || name.len() > 255 {
        return Err(ApiError::field(
            "name",
            "must be between 1 and 255 characters",
        ));
    }
    let version = api.params.present_string("version")?;
    let compiled = api
        .ctx
        .plugins
        .compile_upload(Arc::from(&file.bytes[..]))
        .await
        .map_err(ApiError::BadRequest)?;
    ensure_built_ins(&api).await?;
    let (world, api_version) = catalog_entry(&compiled);
    let (row, created) = api
        .db()
        .insert_plugin(&NewPlugin {
            sha256: &compiled.sha256,
            name: &name,
            version: version.as_deref(),
            world,
            api_version,
            size: file.bytes.len() as i64,
            content: Some(&file.bytes),
        })
        .await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(views::plugin::plugin(&row))).into_response())
}

async fn plugin_by_id(api: &Api, id: &str) -> ApiResult<PluginRow> {
    let id: i64 = id.parse().map_err(|_| ApiError::NotFound("Plugin"))?;
    api.db()
        .plugin(id)
        .await?
        .ok_or(ApiError::NotFound("Plugin"))
}

async fn remove(Path(id): Path<String>, api: Api) -> ApiResult<StatusCode> {
    api.admin()?;
    let row = plugin_by_id(&api, &id).await?;
    if row.built_in {
        return Err(ApiError::forbidden_because(
            "Built-in plugins cannot be deleted",
        ));
    }
    if !api.db().delete_plugin(row.id).await? {
        return Err(ApiError::Conflict(
            "Plugin is bound to a hook; unbind it first".into(),
        ));
    }
    Ok(StatusCode::NO_CONTENT)
}

async fn hooks(api: Api) -> ApiResult<Json<Value>> {
    api.admin()?;
    let bindings = api.db().plugin_bindings().await?;
    let plugins = api.db().list_plugins().await?;
    let out = Hook::ALL
        .into_iter()
        .map(|hook| {
            let bound = bindings
                .iter()
                .find(|b| b.hook == hook.name())
                .and_then(|b| plugins.iter().find(|p| p.id == b.plugin_id).map(|p| (b, p)));
            views::plugin::hook(hook, bound)
        })
        .collect();
    Ok(Json(Value::Array(out)))
}

fn hook_param(name: &str) -> ApiResult<Hook> {
    Hook::ALL
        .into_iter()
        .find(|h| h.name() == name)
        .ok_or(ApiError::NotFound("Hook"))
}

/// The plugin named by exactly one of `plugin_id` and `sha256`.
async fn chosen_plugin(api: &Api) -> ApiResult<PluginRow> {
    let id = api.params.int("plugin_id")?;
    let sha256 = api.params.present_string("sha256")?;
    let row = match (id, sha256) {
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
        (Some(id), None) => api.db().plugin(id).await?,
        (None, Some(sha256)) => {
            api.db()
                .plugin_by_sha256(&sha256.to_ascii_lowercase())
                .await?
        }
    };
    match row {
        Some(row) if !row.built_in || builtin::by_sha256(&row.sha256).is_some() => Ok(row),
        _ => Err(ApiError::NotFound("Plugin")),
    }
}

/// `config`: a JSON object, given as an object or as JSON text; `{}` when absent.
fn config_param(api: &Api) -> ApiResult<String> {
    match api.params.raw("config") {
        None => Ok("{}".into()),
        Some(value @ Value::Object(_)) => Ok(value.to_string()),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(value @ Value::Object(_)) => Ok(value.to_string()),
            _ => Err(ApiError::InvalidParam(
                "config must be a JSON object".into(),
            )),
        },
        Some(_) => Err(ApiError::InvalidParam(
            "config must be a JSON object".into(),
        )),
    }
}

fn limits_param(api: &Api) -> ApiResult<Limits> {
    let maxima = api.ctx.plugins.maxima;
    let defaults = maxima.defaults();
    let positive = |name: &str| -> ApiResult<Option<u64>> {
        match api.params.int(name)? {
            Some(n) if n < 0 => Err(ApiError::invalid(name)),
            other => Ok(other.map(|n| n as u64)),
        }
    };
    let limits = Limits {
        timeout_ms: positive("timeout_ms")?.unwrap_or(defaults.timeout_ms),
        fuel: positive("fuel")?.or(defaults.fuel),
        memory_bytes: positive("memory_bytes")?.unwrap_or(defaults.memory_bytes),
    };
    maxima.check(&limits).map_err(ApiError::InvalidParam)?;
    Ok(limits)
}

async fn bind(Path(hook): Path<String>, api: Api) -> ApiResult<Json<Value>> {
    api.admin()?;
    let hook = hook_param(&hook)?;
    ensure_built_ins(&api).await?;
    let row = chosen_plugin(&api).await?;
    let config = config_param(&api)?;
    let policy = match api.params.one_of("failure_policy", &FailurePolicy::NAMES)? {
        Some(name) => FailurePolicy::parse(&name).unwrap_or(hook.default_policy()),
        None => hook.default_policy(),
    };
    let limits = limits_param(&api)?;
    let grant = match api.params.string_list("outbound_http")? {
        Some(origins) => Some(
            Grant::from_json(&Value::from(origins))
                .map_err(|reason| ApiError::BadRequest(format!("outbound_http {reason}")))?,
        ),
        None => None,
    };
    let plugins = &api.ctx.plugins;
    let compiled = plugins
        .load(&api.ctx.db, api.tenant.id, &row.sha256)
        .await
        .map_err(|e| ApiError::Internal(anyhow::anyhow!(e)))?;
    if compiled.target.world != hook.world() {
        return Err(ApiError::BadRequest(format!(
            "{} implements {}, but the {} hook needs {}",
            row.name,
            compiled.target.world.world_name(),
            hook.name(),
            hook.world().world_name()
        )));
    }
    if compiled.imports_outbound_http && grant.is_none() {
        return Err(ApiError::BadRequest(format!(
            "{} imports outbound-http: grant it the origins it may reach with outbound_http",
            row.name
        )));
    }
    let label = format!(
        "{}@{}",
        row.name,
        row.version.as_deref().unwrap_or("unversioned")
    );
    plugins
        .validate_config(api.tenant.id, hook, compiled, &label, &config, limits)
        .await
        .map_err(|reason| ApiError::BadRequest(format!("config is invalid: {reason}")))?;
    api.db()
        .bind_plugin(&NewBinding {
            hook: hook.name(),
            plugin_id: row.id,
            config: &config,
            failure_policy: policy.name(),
            timeout_ms: limits.timeout_ms as i64,
            fuel: limits.fuel.map(|f| f as i64),
            memory_bytes: limits.memory_bytes as i64,
            outbound_http: grant.map(|g| g.to_json().to_string()),
        })
        .await?;
    plugins.refresh(&api.ctx.db).await?;
    let bindings = api.db().plugin_bindings().await?;
    let bound = bindings.iter().find(|b| b.hook == hook.name());
    Ok(Json(views::plugin::hook(hook, bound.map(|b| (b, &row)))))
}

async fn unbind(Path(hook): Path<String>, api: Api) -> ApiResult<StatusCode> {
    api.admin()?;
    let hook = hook_param(&hook)?;
    if !api.db().unbind_plugin(hook.name()).await? {
        return Err(ApiError::NotFound("Hook binding"));
    }
    api.ctx.plugins.refresh(&api.ctx.db).await?;
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
    let binding = api
        .ctx
        .plugins
        .binding(api.tenant.id, Hook::SpamCheck)
        .ok_or(ApiError::NotFound("Hook binding"))?;
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
    let (outcome, stats) = spam::check_with(&api.ctx.plugins, &binding, &subject, captcha).await;
    Ok(Json(views::plugin::spam_test(&outcome, &stats)))
}
