//! A tenant's plugin catalog and hook bindings: what the admin API (`api/plugins.rs`) and the
//! admin console (`web/admin/plugins.rs`) both do, so they decide alike. Built-in plugins are
//! entered in the catalog on first use; uploads are compiled and checked (a component
//! targeting a known world) before they are stored; a binding is accepted only when the
//! plugin's `validate-config` accepts the configuration, and this process's snapshot is
//! refreshed at once (the others poll within a second).

use std::sync::Arc;

use crate::context::ApiContext;
use crate::model::plugins::{BindingRow, PluginRow};
use crate::outbound::http::Grant;
use crate::plugins::runtime::Compiled;
use crate::plugins::spam::{self, SpamOutcome, SpamSubject};
use crate::plugins::trial;
use crate::plugins::{Binding, CallStats, FailurePolicy, Hook, Limits, Maxima, builtin};
use crate::services::Refusal;
use crate::services::uploads::UploadedFile;
use crate::store::TenantDb;
use crate::store::plugins::{NewBinding, NewPlugin};
use crate::tenants::Tenant;

fn catalog_entry(compiled: &Compiled) -> (&'static str, &str) {
    (
        compiled.target.world.world_name(),
        &compiled.target.package_version,
    )
}

/// Enters this binary's built-in plugins in the tenant's catalog (once per version).
pub async fn ensure_built_ins(ctx: &ApiContext, db: &TenantDb) -> Result<(), Refusal> {
    for (built_in, sha256) in builtin::with_digests() {
        if db.plugin_by_sha256(sha256).await?.is_some() {
            continue;
        }
        let compiled = ctx
            .plugins
            .compile(Arc::from(built_in.bytes))
            .await
            .map_err(|e| anyhow::anyhow!("built-in plugin {}: {e}", built_in.name))?;
        let (world, api_version) = catalog_entry(&compiled);
        db.insert_plugin(&NewPlugin {
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
pub async fn catalog(ctx: &ApiContext, db: &TenantDb) -> Result<Vec<PluginRow>, Refusal> {
    ensure_built_ins(ctx, db).await?;
    let mut rows = db.list_plugins().await?;
    rows.retain(|row| !row.built_in || builtin::by_sha256(&row.sha256).is_some());
    Ok(rows)
}

/// Uploads must be allowed by the operator (`--allow-tenant-plugin-uploads`).
pub fn check_uploads_allowed(ctx: &ApiContext) -> Result<(), Refusal> {
    if ctx.config.allow_tenant_plugin_uploads {
        Ok(())
    } else {
        Err(Refusal::forbidden_because(
            "Plugin uploads are disabled on this instance",
        ))
    }
}

/// An uploaded component and what to call it (`name` defaults to the file name).
pub struct Upload<'a> {
    pub file: &'a UploadedFile,
    pub name: Option<String>,
    pub version: Option<String>,
}

/// Compiles, checks and stores an upload; `true` when it is new (the catalog is content
/// addressed: the same binary again answers its existing entry).
pub async fn upload(
    ctx: &ApiContext,
    db: &TenantDb,
    upload: Upload<'_>,
) -> Result<(PluginRow, bool), Refusal> {
    if upload.file.size > ctx.config.plugin_max_upload_bytes as u64 {
        return Err(Refusal::UploadTooLarge);
    }
    let name = match upload.name {
        Some(name) => name,
        None => upload
            .file
            .filename
            .trim_end_matches(".wasm")
            .trim()
            .to_string(),
    };
    if name.is_empty() || name.len() > 255 {
        return Err(Refusal::invalid(
            "name",
            "must be between 1 and 255 characters",
        ));
    }
    let bytes = upload.file.read().await.map_err(anyhow::Error::from)?;
    let compiled = ctx
        .plugins
        .compile_upload(db.tenant_id(), Arc::from(bytes.as_slice()))
        .await
        .map_err(Refusal::Unusable)?;
    ensure_built_ins(ctx, db).await?;
    let (world, api_version) = catalog_entry(&compiled);
    Ok(db
        .insert_plugin(&NewPlugin {
            sha256: &compiled.sha256,
            name: &name,
            version: upload.version.as_deref(),
            world,
            api_version,
            size: bytes.len() as i64,
            content: Some(&bytes),
        })
        .await?)
}

/// A catalog entry of this tenant by id (404 for another tenant's ids).
pub async fn plugin(db: &TenantDb, id: i64) -> Result<PluginRow, Refusal> {
    db.plugin(id).await?.ok_or(Refusal::NotFound("Plugin"))
}

/// How a binding names its plugin.
pub enum Choice {
    Id(i64),
    Sha256(String),
}

/// The plugin a binding or a trial names, when this binary can run it (a built-in entry of
/// another release cannot be).
pub async fn chosen(db: &TenantDb, choice: Choice) -> Result<PluginRow, Refusal> {
    let row = match choice {
        Choice::Id(id) => db.plugin(id).await?,
        Choice::Sha256(sha256) => db.plugin_by_sha256(&sha256.to_ascii_lowercase()).await?,
    };
    row.filter(|row| !row.built_in || builtin::by_sha256(&row.sha256).is_some())
        .ok_or(Refusal::NotFound("Plugin"))
}

/// Deletes an uploaded plugin that no hook binds.
pub async fn remove(db: &TenantDb, row: &PluginRow) -> Result<(), Refusal> {
    if row.built_in {
        return Err(Refusal::forbidden_because(
            "Built-in plugins cannot be deleted",
        ));
    }
    if !db.delete_plugin(row.id).await? {
        return Err(Refusal::Conflict(
            "Plugin is bound to a hook; unbind it first".into(),
        ));
    }
    Ok(())
}

/// A hook and what is bound to it.
pub struct HookState {
    pub hook: Hook,
    pub bound: Option<(BindingRow, PluginRow)>,
}

/// Every hook with its binding, in [`Hook::ALL`] order.
pub async fn hooks(db: &TenantDb) -> Result<Vec<HookState>, Refusal> {
    let bindings = db.plugin_bindings().await?;
    let plugins = db.list_plugins().await?;
    Ok(Hook::ALL
        .into_iter()
        .map(|hook| HookState {
            hook,
            bound: bindings
                .iter()
                .find(|b| b.hook == hook.name())
                .and_then(|b| {
                    plugins
                        .iter()
                        .find(|p| p.id == b.plugin_id)
                        .map(|p| (b.clone(), p.clone()))
                }),
        })
        .collect())
}

/// The hook of this name (404 otherwise).
pub fn hook_named(name: &str) -> Result<Hook, Refusal> {
    Hook::ALL
        .into_iter()
        .find(|h| h.name() == name)
        .ok_or(Refusal::NotFound("Hook"))
}

/// A configuration given as JSON text must be a JSON object.
pub fn config_from_text(text: &str) -> Result<String, Refusal> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value @ serde_json::Value::Object(_)) => Ok(value.to_string()),
        _ => Err(Refusal::InvalidParam("config must be a JSON object".into())),
    }
}

/// A binding's limits: the operator's defaults for what is not given, within the maxima.
pub fn limits(
    maxima: &Maxima,
    timeout_ms: Option<u64>,
    fuel: Option<u64>,
    memory_bytes: Option<u64>,
) -> Result<Limits, Refusal> {
    let defaults = maxima.defaults();
    let limits = Limits {
        timeout_ms: timeout_ms.unwrap_or(defaults.timeout_ms),
        fuel: fuel.or(defaults.fuel),
        memory_bytes: memory_bytes.unwrap_or(defaults.memory_bytes),
    };
    maxima.check(&limits).map_err(Refusal::InvalidParam)?;
    Ok(limits)
}

/// A binding to make: the plugin, its configuration (a JSON object's text), and how it runs.
pub struct Bind {
    pub hook: Hook,
    pub plugin: PluginRow,
    pub config: String,
    pub failure_policy: FailurePolicy,
    pub limits: Limits,
    pub outbound_http: Option<Grant>,
}

fn label(row: &PluginRow) -> String {
    format!(
        "{}@{}",
        row.name,
        row.version.as_deref().unwrap_or("unversioned")
    )
}

/// The plugin compiled for `hook`, refused when it implements another world.
async fn compiled_for(
    ctx: &ApiContext,
    tenant: &Tenant,
    hook: Hook,
    row: &PluginRow,
) -> Result<Arc<Compiled>, Refusal> {
    let compiled = ctx
        .plugins
        .load(&ctx.db, tenant.id, &row.sha256)
        .await
        .map_err(|e| Refusal::Internal(anyhow::anyhow!(e)))?;
    if compiled.target.world != hook.world() {
        return Err(Refusal::Unusable(format!(
            "{} implements {}, but the {} hook needs {}",
            row.name,
            compiled.target.world.world_name(),
            hook.name(),
            hook.world().world_name()
        )));
    }
    Ok(compiled)
}

/// Runs the plugin's `validate-config`; its refusal is the error.
async fn validate_config(
    ctx: &ApiContext,
    tenant: &Tenant,
    hook: Hook,
    row: &PluginRow,
    compiled: Arc<Compiled>,
    config: &str,
    limits: Limits,
) -> Result<(), Refusal> {
    ctx.plugins
        .validate_config(tenant.id, hook, compiled, &label(row), config, limits)
        .await
        .map_err(|reason| Refusal::Unusable(format!("config is invalid: {reason}")))
}

/// Binds (or rebinds) a hook, once the plugin fits it and accepts the configuration.
pub async fn bind(
    ctx: &ApiContext,
    tenant: &Tenant,
    bind: Bind,
) -> Result<Option<(BindingRow, PluginRow)>, Refusal> {
    let compiled = compiled_for(ctx, tenant, bind.hook, &bind.plugin).await?;
    if compiled.imports_outbound_http && bind.outbound_http.is_none() {
        return Err(Refusal::Unusable(format!(
            "{} imports outbound-http: grant it the origins it may reach with outbound_http",
            bind.plugin.name
        )));
    }
    validate_config(
        ctx,
        tenant,
        bind.hook,
        &bind.plugin,
        compiled,
        &bind.config,
        bind.limits,
    )
    .await?;
    let db = &tenant.db;
    db.bind_plugin(&NewBinding {
        hook: bind.hook.name(),
        plugin_id: bind.plugin.id,
        config: &bind.config,
        failure_policy: bind.failure_policy.name(),
        timeout_ms: bind.limits.timeout_ms as i64,
        fuel: bind.limits.fuel.map(|f| f as i64),
        memory_bytes: bind.limits.memory_bytes as i64,
        outbound_http: bind.outbound_http.map(|g| g.to_json().to_string()),
    })
    .await?;
    ctx.plugins.refresh(&ctx.db).await?;
    let bindings = db.plugin_bindings().await?;
    Ok(bindings
        .into_iter()
        .find(|b| b.hook == bind.hook.name())
        .map(|b| (b, bind.plugin)))
}

/// Removes a hook's binding (404 when nothing is bound).
pub async fn unbind(ctx: &ApiContext, tenant: &Tenant, hook: Hook) -> Result<(), Refusal> {
    if !tenant.db.unbind_plugin(hook.name()).await? {
        return Err(Refusal::NotFound("Hook binding"));
    }
    ctx.plugins.refresh(&ctx.db).await?;
    Ok(())
}

/// What a trial run calls: the hook's live binding, or a catalog entry with a configuration
/// and limits that are not bound (yet).
pub enum Trial {
    Bound,
    Candidate {
        plugin: Box<PluginRow>,
        config: String,
        limits: Limits,
    },
}

/// What a spam-check trial answered: the outcome (verdict and action), and its cost and log.
pub struct TrialReport {
    pub outcome: SpamOutcome,
    pub stats: CallStats,
}

/// Runs a spam check on `subject` without logging, blocking or writing anything (as GitLab's
/// hook tests) and without counting in the hook's watch window; with the action the API
/// would take.
pub async fn try_spam_check(
    ctx: &ApiContext,
    tenant: &Tenant,
    trial: Trial,
    subject: &SpamSubject,
    captcha_enabled: bool,
) -> Result<TrialReport, Refusal> {
    let binding = trial_binding(ctx, tenant, Hook::SpamCheck, trial).await?;
    let (outcome, stats) = spam::check_with(&ctx.plugins, &binding, subject, captcha_enabled).await;
    Ok(TrialReport { outcome, stats })
}

/// Calls `hook`'s plugin once on `input` (any hook; a push is a sample, no repository is
/// read), as [`try_spam_check`] does: nothing is written or counted.
pub async fn try_hook(
    ctx: &ApiContext,
    tenant: &Tenant,
    hook: Hook,
    trial: Trial,
    input: trial::Input,
) -> Result<trial::Report, Refusal> {
    let binding = trial_binding(ctx, tenant, hook, trial).await?;
    Ok(trial::run(&ctx.plugins, &binding, input).await)
}

/// The binding a trial calls through: a copy of the live one (the same plugin and settings,
/// not counted as live), or the candidate's after `validate-config`, as a binding's would.
async fn trial_binding(
    ctx: &ApiContext,
    tenant: &Tenant,
    hook: Hook,
    trial: Trial,
) -> Result<Arc<Binding>, Refusal> {
    Ok(match trial {
        // A copy of the live binding: the same plugin and settings, not counted as live.
        Trial::Bound => {
            let live = ctx
                .plugins
                .binding(tenant.id, hook)
                .ok_or(Refusal::NotFound("Hook binding"))?;
            Arc::new(Binding::clone(&live))
        }
        Trial::Candidate {
            plugin,
            config,
            limits,
        } => {
            let compiled = compiled_for(ctx, tenant, hook, &plugin).await?;
            validate_config(
                ctx,
                tenant,
                hook,
                &plugin,
                compiled.clone(),
                &config,
                limits,
            )
            .await?;
            Arc::new(Binding {
                tenant_id: tenant.id,
                hook,
                plugin: Ok(compiled),
                label: Arc::from(label(&plugin)),
                config: Arc::from(config),
                failure_policy: hook.default_policy(),
                limits,
                outbound: None,
            })
        }
    })
}
