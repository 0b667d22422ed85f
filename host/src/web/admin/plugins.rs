//! The console's plugin pages: the catalog and the hooks (`/admin/plugins`), uploading a
//! component, one plugin (`/admin/plugins/:id`: bind it with a configuration, a failure policy
//! and limits; try it; delete it), and one hook (`/admin/hooks/:hook`: its binding, unbind,
//! try the bound plugin, and watch its last hour of calls). The decisions are
//! `services::plugins`, as for `/api/v4/application/plugins` and `/plugin_hooks`.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::routing::{get, post};
use chrono::{TimeZone, Utc};
use maud::{Markup, html};
use serde_json::Value;

use super::{Admin, Section, alert, chart, field_error, notice, page};
use crate::context::ApiContext;
use crate::http::routes::Router;
use crate::model::plugins::{BindingRow, PluginRow};
use crate::outbound::http::Grant;
use crate::plugins::trial::{self, Report, SampleUser};
use crate::plugins::{FailurePolicy, Hook, Limits};
use crate::services::Refusal;
use crate::services::plugins::{self as service, Bind, HookState, Trial, Upload};
use crate::web::layout::csrf_field;
use crate::web::{WebError, WebResult, found};

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/admin/plugins", get(catalog).post(upload))
        .route("/admin/plugins/{id}", get(plugin))
        .route("/admin/plugins/{id}/bind", post(bind))
        .route("/admin/plugins/{id}/try", post(try_candidate))
        .route("/admin/plugins/{id}/delete", post(delete))
        .route("/admin/hooks/{hook}", get(hook))
        .route("/admin/hooks/{hook}/try", post(try_bound))
        .route("/admin/hooks/{hook}/unbind", post(unbind))
}

/// A service refusal on a console page: the console's 404 page, a 500 for the server's own
/// failure (its cause only logged), or the refusal's message.
fn page_error(refusal: Refusal) -> WebError {
    match refusal {
        Refusal::NotFound(_) | Refusal::Absent | Refusal::RecordNotFound => WebError::not_found(),
        Refusal::Internal(_) | Refusal::Store(_) | Refusal::Git(_) => {
            tracing::error!(error = format!("{refusal:#}"), "console page failed");
            WebError::new(StatusCode::INTERNAL_SERVER_ERROR, "Something went wrong.")
        }
        other => WebError::new(StatusCode::BAD_REQUEST, other.message()),
    }
}

/// What a form shows besides its fields: a refusal and field errors by field name.
#[derive(Default)]
struct Problems {
    form: Option<String>,
    fields: Vec<(&'static str, String)>,
}

impl Problems {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(field, _)| *field == name)
            .map(|(_, message)| message.as_str())
    }

    fn on(field: &'static str, message: impl Into<String>) -> Problems {
        Problems {
            form: None,
            fields: vec![(field, message.into())],
        }
    }

    fn whole(message: impl Into<String>) -> Problems {
        Problems {
            form: Some(message.into()),
            fields: Vec::new(),
        }
    }

    /// A service refusal placed next to the field it is about.
    fn from_error(refusal: Refusal) -> Result<Problems, WebError> {
        Ok(match refusal {
            Refusal::Unusable(reason) if reason.starts_with("config is invalid") => {
                Problems::on("config", reason)
            }
            Refusal::Invalid(field, _) => Problems::on(field, refusal.message()),
            Refusal::NotFound(_)
            | Refusal::Absent
            | Refusal::RecordNotFound
            | Refusal::Internal(_)
            | Refusal::Store(_)
            | Refusal::Git(_) => return Err(page_error(refusal)),
            other => Problems::whole(other.message()),
        })
    }
}

/// A text input or textarea with its label, hint and error, wired for assistive technology;
/// its id is `{form}_{name}` (two forms on a page may have fields of the same name).
fn text_field(
    form: &str,
    name: &str,
    label: &str,
    value: &str,
    hint: Option<Markup>,
    problems: &Problems,
    multiline: bool,
) -> Markup {
    let id = format!("{form}_{name}");
    let error_id = format!("{id}_error");
    let hint_id = format!("{id}_hint");
    let error = problems.field(name);
    let described = [
        hint.as_ref().map(|_| hint_id.clone()),
        error.map(|_| error_id.clone()),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" ");
    let described = (!described.is_empty()).then_some(described);
    let invalid = error.map(|_| "true");
    html! {
        label for=(id) { (label) }
        @if let Some(hint) = &hint { p.hint id=(hint_id) { (hint) } }
        @if multiline {
            textarea.code.tall[name == "input"] id=(id) name=(name) spellcheck="false"
                aria-describedby=[described.as_deref()] aria-invalid=[invalid] { (value) }
        } @else {
            input type="text" id=(id) name=(name) value=(value)
                aria-describedby=[described.as_deref()] aria-invalid=[invalid];
        }
        (field_error(&error_id, error))
    }
}

fn when(ms: i64) -> String {
    Utc.timestamp_millis_opt(ms)
        .single()
        .map_or_else(String::new, |t| t.format("%Y-%m-%d %H:%M UTC").to_string())
}

fn size(bytes: i64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

fn version(row: &PluginRow) -> &str {
    row.version.as_deref().unwrap_or("unversioned")
}

/// The hooks a plugin can be bound to: those of its world.
fn hooks_for(row: &PluginRow) -> Vec<Hook> {
    Hook::ALL
        .into_iter()
        .filter(|hook| hook.world().world_name() == row.world)
        .collect()
}

// ---- the catalog -------------------------------------------------------------------

struct UploadForm {
    name: String,
    version: String,
}

fn catalog_page(
    admin: &Admin,
    status: StatusCode,
    rows: &[PluginRow],
    hooks: &[HookState],
    form: &UploadForm,
    problems: &Problems,
) -> WebResult {
    let ctx = admin.ctx();
    let tenant = admin.web.tenant.id;
    let body = html! {
        section.card aria-labelledby="hooks-heading" {
            h2 id="hooks-heading" { "Hooks" }
            p.hint { "Each hook runs at most one plugin. Open a hook to change its binding, try it or watch its calls." }
            div.table-wrap {
                table {
                    thead { tr {
                        th scope="col" { "Hook" } th scope="col" { "Plugin" }
                        th scope="col" { "Failure policy" } th scope="col" { "Calls, last hour" }
                    } }
                    tbody {
                        @for state in hooks {
                            @let summary = ctx.plugins.watch.summary(tenant, state.hook);
                            tr {
                                td { a href={ "/admin/hooks/" (state.hook.name()) } { code { (state.hook.name()) } } }
                                td {
                                    @if let Some((_, plugin)) = &state.bound {
                                        a href={ "/admin/plugins/" (plugin.id) } { (plugin.name) } " " (version(plugin))
                                    } @else {
                                        span.badge { "not bound" }
                                    }
                                }
                                td { @if let Some((binding, _)) = &state.bound { (binding.failure_policy) } @else { "–" } }
                                td { (summary.total) @let failed: u64 = summary.by_kind.values().sum(); @if failed > 0 { " " span.badge.bad { (failed) " failed" } } }
                            }
                        }
                    }
                }
            }
        }
        h2 { "Catalog" }
        div.table-wrap {
            table {
                thead { tr {
                    th scope="col" { "Name" } th scope="col" { "Version" } th scope="col" { "World" }
                    th scope="col" { "API" } th scope="col" { "sha256" } th scope="col" { "Size" } th scope="col" { "Source" }
                } }
                tbody {
                    @for row in rows {
                        tr {
                            td { a href={ "/admin/plugins/" (row.id) } { (row.name) } }
                            td { (version(row)) }
                            td { code { (row.world) } }
                            td { (row.api_version) }
                            td { code title=(row.sha256) { (&row.sha256[..12.min(row.sha256.len())]) "…" } }
                            td { (size(row.size)) }
                            td { @if row.built_in { span.badge { "built in" } } @else { span.badge.ok { "uploaded" } } }
                        }
                    }
                }
            }
        }
        section.card aria-labelledby="upload-heading" style="margin-top:1.5rem" {
            h2 id="upload-heading" { "Upload a plugin" }
            @if ctx.config.allow_tenant_plugin_uploads {
                p.hint { "A WebAssembly component built against the " code { "trellis:policy" } " WIT package (see docs/plugins.md). It is compiled and checked before it is stored; the same file again finds its existing entry." }
                @if let Some(message) = &problems.form { (alert(message)) }
                form method="post" action="/admin/plugins" enctype="multipart/form-data" {
                    (csrf_field(admin.csrf()))
                    label for="field_file" { "Component (.wasm)" }
                    input type="file" id="field_file" name="file" accept=".wasm,application/wasm" required
                        aria-describedby=[problems.field("file").map(|_| "field_file_error")]
                        aria-invalid=[problems.field("file").map(|_| "true")];
                    (field_error("field_file_error", problems.field("file")))
                    div.grid {
                        div { (text_field("field", "name", "Name (optional)", &form.name, Some(html! { "Defaults to the file name." }), problems, false)) }
                        div { (text_field("field", "version", "Version (optional)", &form.version, None, problems, false)) }
                    }
                    button type="submit" { "Upload plugin" }
                }
            } @else {
                p.note role="note" { "Plugin uploads are disabled on this instance (the operator's " code { "--allow-tenant-plugin-uploads" } "). The built-in plugins can still be bound." }
            }
        }
    };
    Ok(page(admin, status, Section::Plugins, &[], "Plugins", body))
}

async fn catalog(admin: Admin) -> WebResult {
    let db = &admin.web.tenant.db;
    let rows = service::catalog(admin.ctx(), db)
        .await
        .map_err(page_error)?;
    let hooks = service::hooks(db).await.map_err(page_error)?;
    let form = UploadForm {
        name: String::new(),
        version: String::new(),
    };
    catalog_page(
        &admin,
        StatusCode::OK,
        &rows,
        &hooks,
        &form,
        &Problems::default(),
    )
}

async fn upload(admin: Admin) -> WebResult {
    admin.web.check_csrf()?;
    let web = &admin.web;
    let form = UploadForm {
        name: web.field("name").trim().to_string(),
        version: web.field("version").trim().to_string(),
    };
    let outcome = match (
        service::check_uploads_allowed(admin.ctx()),
        web.params.file("file"),
    ) {
        (Err(error), _) => Err(error),
        (Ok(()), None) => Err(Refusal::invalid("file", "must be a .wasm file to upload")),
        (Ok(()), Some(file)) if file.size == 0 => {
            Err(Refusal::invalid("file", "must be a .wasm file to upload"))
        }
        (Ok(()), Some(file)) => {
            let upload = Upload {
                file,
                name: (!form.name.is_empty()).then(|| form.name.clone()),
                version: (!form.version.is_empty()).then(|| form.version.clone()),
            };
            service::upload(admin.ctx(), &web.tenant.db, upload).await
        }
    };
    match outcome {
        Ok((row, created)) => {
            let done = if created { "uploaded" } else { "known" };
            Ok(found(&format!("/admin/plugins/{}?done={done}", row.id)))
        }
        Err(error) => {
            let problems = match error {
                // The compiler's reason goes next to the file it is about.
                Refusal::Unusable(reason) => Problems::on("file", reason),
                Refusal::UploadTooLarge => {
                    Problems::on("file", "is larger than this instance's upload limit")
                }
                other => Problems::from_error(other)?,
            };
            let db = &web.tenant.db;
            let rows = service::catalog(admin.ctx(), db)
                .await
                .map_err(page_error)?;
            let hooks = service::hooks(db).await.map_err(page_error)?;
            catalog_page(
                &admin,
                StatusCode::UNPROCESSABLE_ENTITY,
                &rows,
                &hooks,
                &form,
                &problems,
            )
        }
    }
}

// ---- one plugin: bind, try, delete ---------------------------------------------------

/// The bind form's values, as shown (the submitted ones after a refusal).
struct BindForm {
    hook: Hook,
    config: String,
    failure_policy: FailurePolicy,
    timeout_ms: String,
    fuel: String,
    memory_bytes: String,
    outbound_http: String,
}

fn pretty(config: &str) -> String {
    serde_json::from_str::<Value>(config)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| config.to_string())
}

impl BindForm {
    /// The current binding of `hook` when it binds this plugin, else the hook's defaults.
    fn of(hook: Hook, bound: Option<&(BindingRow, PluginRow)>, plugin_id: i64) -> BindForm {
        match bound.filter(|(b, _)| b.plugin_id == plugin_id) {
            Some((b, _)) => BindForm {
                hook,
                config: pretty(&b.config),
                failure_policy: FailurePolicy::parse(&b.failure_policy)
                    .unwrap_or(hook.default_policy()),
                timeout_ms: b.timeout_ms.to_string(),
                fuel: b.fuel.map(|f| f.to_string()).unwrap_or_default(),
                memory_bytes: b.memory_bytes.to_string(),
                outbound_http: crate::outbound::http::Grant::of_column(b.outbound_http.as_deref())
                    .map(|g| {
                        g.to_json()
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join("\n")
                    })
                    .unwrap_or_default(),
            },
            None => BindForm {
                hook,
                config: "{\n}".into(),
                failure_policy: hook.default_policy(),
                timeout_ms: String::new(),
                fuel: String::new(),
                memory_bytes: String::new(),
                outbound_http: String::new(),
            },
        }
    }

    fn read(admin: &Admin, hook: Hook) -> BindForm {
        let web = &admin.web;
        BindForm {
            hook,
            config: web.field("config"),
            failure_policy: FailurePolicy::parse(&web.field("failure_policy"))
                .unwrap_or(hook.default_policy()),
            timeout_ms: web.field("timeout_ms").trim().to_string(),
            fuel: web.field("fuel").trim().to_string(),
            memory_bytes: web.field("memory_bytes").trim().to_string(),
            outbound_http: web.field("outbound_http"),
        }
    }

    /// The limits asked for; blank fields take the operator's defaults.
    fn limits(&self, admin: &Admin) -> Result<Limits, Problems> {
        let number = |name: &'static str, text: &str| -> Result<Option<u64>, Problems> {
            if text.is_empty() {
                return Ok(None);
            }
            text.parse::<u64>()
                .map(Some)
                .map_err(|_| Problems::on(name, format!("{name} is invalid")))
        };
        let timeout_ms = number("timeout_ms", &self.timeout_ms)?;
        let fuel = number("fuel", &self.fuel)?;
        let memory_bytes = number("memory_bytes", &self.memory_bytes)?;
        service::limits(&admin.ctx().plugins.maxima, timeout_ms, fuel, memory_bytes)
            .map_err(|refusal| Problems::on("limits", refusal.message()))
    }

    fn config(&self) -> Result<String, Problems> {
        let text = if self.config.trim().is_empty() {
            "{}"
        } else {
            &self.config
        };
        service::config_from_text(text).map_err(|refusal| Problems::on("config", refusal.message()))
    }

    fn grant(&self) -> Result<Option<Grant>, Problems> {
        let origins: Vec<&str> = self
            .outbound_http
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .collect();
        if origins.is_empty() {
            return Ok(None);
        }
        Grant::from_json(&Value::from(origins))
            .map(Some)
            .map_err(|reason| Problems::on("outbound_http", format!("outbound_http {reason}")))
    }
}

fn bind_form(
    admin: &Admin,
    plugin: &PluginRow,
    form: &BindForm,
    choices: &[Hook],
    problems: &Problems,
) -> Markup {
    let maxima = admin.ctx().plugins.maxima;
    let defaults = maxima.defaults();
    html! {
        form method="post" action={ "/admin/plugins/" (plugin.id) "/bind" } {
            (csrf_field(admin.csrf()))
            @if let Some(message) = &problems.form { (alert(message)) }
            @if choices.len() == 1 {
                input type="hidden" name="hook" value=(form.hook.name());
                p { "Hook: " code { (form.hook.name()) } }
            } @else {
                label for="field_hook" { "Hook" }
                select id="field_hook" name="hook" {
                    @for hook in choices {
                        option value=(hook.name()) selected[*hook == form.hook] { (hook.name()) }
                    }
                }
            }
            (text_field("field", "config", "Configuration (JSON object)", &form.config,
                Some(html! { "Checked by the plugin's own " code { "validate-config" } " when you save." }), problems, true))
            fieldset {
                legend { strong { "Failure policy" } }
                p.hint { "What happens to the request when the plugin fails (times out, traps, runs out of memory…)." }
                @for policy in [FailurePolicy::FailOpen, FailurePolicy::FailClosed] {
                    label.inline {
                        input type="radio" name="failure_policy" value=(policy.name())
                            checked[policy == form.failure_policy];
                        @match policy {
                            FailurePolicy::FailOpen => { "Fail open: let the request through" }
                            FailurePolicy::FailClosed => { "Fail closed: refuse the request" }
                        }
                    }
                }
            }
            fieldset {
                legend { strong { "Limits per call" } }
                p.hint { "Blank takes the default. At most " (maxima.timeout_ms) " ms and " (maxima.memory_bytes) " bytes on this instance." }
                @if let Some(error) = problems.field("limits") { p.field-error role="alert" { (error) } }
                div.grid.tight {
                    div { (limit_input("timeout_ms", "Time (ms)", &form.timeout_ms, defaults.timeout_ms.to_string(), problems)) }
                    div { (limit_input("fuel", "Fuel", &form.fuel, defaults.fuel.map_or("unlimited".into(), |f| f.to_string()), problems)) }
                    div { (limit_input("memory_bytes", "Memory (bytes)", &form.memory_bytes, defaults.memory_bytes.to_string(), problems)) }
                }
            }
            (text_field("field", "outbound_http", "Outbound HTTP origins (one per line, optional)", &form.outbound_http,
                Some(html! { "Only for plugins that import " code { "outbound-http" } ", e.g. " code { "https://spam.example" } "." }), problems, true))
            button type="submit" { "Save binding" }
        }
    }
}

fn limit_input(
    name: &str,
    label: &str,
    value: &str,
    default: String,
    problems: &Problems,
) -> Markup {
    let id = format!("field_{name}");
    let error_id = format!("{id}_error");
    let error = problems.field(name);
    html! {
        label for=(id) { (label) }
        input type="number" min="0" id=(id) name=(name) value=(value) placeholder=(default)
            aria-describedby=[error.map(|_| error_id.clone())] aria-invalid=[error.map(|_| "true")];
        (field_error(&error_id, error))
    }
}

/// `hook`'s sample input, in `trellis plugin run --input`'s format, with `admin` acting.
fn sample_input(admin: &Admin, hook: Hook) -> String {
    let user = admin.user();
    let user = SampleUser {
        id: user.id,
        username: user.username.clone(),
        created_at: Utc
            .timestamp_millis_opt(user.created_at)
            .single()
            .unwrap_or_default(),
    };
    trial::sample(hook, &user)
}

/// The "Try it" form and, after a run, its report.
fn try_form(
    admin: &Admin,
    hook: Hook,
    action: &str,
    config: Option<&str>,
    input: &str,
    report: Option<&Report>,
    problems: &Problems,
) -> Markup {
    let input_label = format!(
        "Input ({}, as `trellis plugin run --input`)",
        hook.name().replace('_', "-")
    );
    html! {
        p.hint { "Runs the plugin once on the input below, as " code { "trellis plugin run" } " does: nothing is logged, blocked, written or delivered, no repository is read (a push is the sample's commits, and " code { "read-blob" } " answers from their files), and the call is not counted in the hook's chart." }
        @if let Some(message) = &problems.form { (alert(message)) }
        form method="post" action=(action) {
            (csrf_field(admin.csrf()))
            @if let Some(config) = config {
                (text_field("try", "config", "Configuration (JSON object)", config, None, problems, true))
            }
            (text_field("try", "input", &input_label, input, None, problems, true))
            button.secondary type="submit" { "Try it" }
        }
        @if let Some(report) = report {
            h3 { "Result" }
            @match report.answer.verdict {
                Some(verdict) => {
                    p.verdict id="try-verdict" {
                        "Verdict: "
                        @let class = match verdict { "allow" | "noop" | "deliver" => "badge ok", "conditional_allow" | "skip" => "badge warn", _ => "badge bad" };
                        span class=(class) { (verdict) }
                    }
                }
                None => { p.verdict id="try-verdict" { "Failed: " span.badge.bad { (report.answer.error.as_ref().map_or("error", |e| e.outcome())) } } }
            }
            pre id="try-report" { (report.text()) }
        }
    }
}

/// `hook`'s input from the trial's text, or the problem with it.
fn trial_input(hook: Hook, input: &str) -> Result<trial::Input, Problems> {
    trial::input(hook, input)
        .map_err(|error| Problems::on("input", format!("input is invalid: {error:#}")))
}

struct PluginView<'a> {
    bind: Option<&'a BindForm>,
    bind_problems: &'a Problems,
    try_config: &'a str,
    try_input: &'a str,
    report: Option<&'a Report>,
    try_problems: &'a Problems,
    done: Option<&'a str>,
}

async fn plugin_page(
    admin: &Admin,
    status: StatusCode,
    row: &PluginRow,
    view: PluginView<'_>,
) -> WebResult {
    let db = &admin.web.tenant.db;
    let hooks = service::hooks(db).await.map_err(page_error)?;
    let choices = hooks_for(row);
    let bound_to: Vec<&HookState> = hooks
        .iter()
        .filter(|s| s.bound.as_ref().is_some_and(|(_, p)| p.id == row.id))
        .collect();
    let default_form;
    let form = match view.bind {
        Some(form) => Some(form),
        None => match choices.first() {
            Some(&first) => {
                let hook = bound_to.first().map_or(first, |s| s.hook);
                let state = hooks.iter().find(|s| s.hook == hook);
                default_form = BindForm::of(hook, state.and_then(|s| s.bound.as_ref()), row.id);
                Some(&default_form)
            }
            None => None,
        },
    };
    let body = html! {
        @match view.done {
            Some("uploaded") => { (notice("The plugin was uploaded. Bind it to a hook below.")) }
            Some("known") => { (notice("This component is already in the catalog: here is its entry.")) }
            _ => {}
        }
        div.grid {
            section.card aria-labelledby="facts-heading" {
                h2 id="facts-heading" { "About" }
                dl.facts {
                    dt { "Version" } dd { (version(row)) }
                    dt { "World" } dd { code { (row.world) } }
                    dt { "API version" } dd { (row.api_version) }
                    dt { "sha256" } dd { code { (row.sha256) } }
                    dt { "Size" } dd { (size(row.size)) " (" (row.size) " bytes)" }
                    dt { "Source" } dd { @if row.built_in { "Built in" } @else { "Uploaded " (when(row.created_at)) } }
                    dt { "Bound to" } dd {
                        @if bound_to.is_empty() { "No hook" }
                        @for s in &bound_to { a href={ "/admin/hooks/" (s.hook.name()) } { code { (s.hook.name()) } } " " }
                    }
                }
                @if !row.built_in {
                    form method="post" action={ "/admin/plugins/" (row.id) "/delete" } {
                        (csrf_field(admin.csrf()))
                        button.danger type="submit" disabled[!bound_to.is_empty()] { "Delete plugin" }
                        @if !bound_to.is_empty() { p.hint { "Unbind it first." } }
                    }
                }
            }
            section.card aria-labelledby="bind-heading" {
                h2 id="bind-heading" { "Bind to a hook" }
                @match form {
                    Some(form) => { (bind_form(admin, row, form, &choices, view.bind_problems)) }
                    None => { p { "No hook implements the " code { (row.world) } " world yet." } }
                }
            }
        }
        @if let Some(&hook) = choices.first() {
            section.card aria-labelledby="try-heading" style="margin-top:1.25rem" {
                h2 id="try-heading" { "Try it" }
                (try_form(admin, hook, &format!("/admin/plugins/{}/try", row.id), Some(view.try_config), view.try_input, view.report, view.try_problems))
            }
        }
    };
    let crumbs = [("/admin/plugins", "Plugins")];
    let title = format!("{} {}", row.name, version(row));
    Ok(page(admin, status, Section::Plugins, &crumbs, &title, body))
}

async fn plugin_of(admin: &Admin, id: &str) -> Result<PluginRow, WebError> {
    let id: i64 = id.parse().map_err(|_| WebError::not_found())?;
    service::plugin(&admin.web.tenant.db, id)
        .await
        .map_err(page_error)
}

async fn plugin(Path(id): Path<String>, admin: Admin) -> WebResult {
    let row = plugin_of(&admin, &id).await?;
    let done = admin.web.field("done");
    let input = hooks_for(&row)
        .first()
        .map_or_else(String::new, |&hook| sample_input(&admin, hook));
    let view = PluginView {
        bind: None,
        bind_problems: &Problems::default(),
        try_config: "{\n}",
        try_input: &input,
        report: None,
        try_problems: &Problems::default(),
        done: Some(done.as_str()),
    };
    plugin_page(&admin, StatusCode::OK, &row, view).await
}

/// What a form submission came to: done, or refused with problems to show on the form
/// (the outer error is a page error: 404, 500).
type Attempt<T> = Result<Result<T, Problems>, WebError>;

/// A service refusal as problems on the form (a missing object or a failure stays a page error).
fn refused<T>(refusal: Refusal) -> Attempt<T> {
    Problems::from_error(refusal).map(Err)
}

async fn attempt_bind(admin: &Admin, row: &PluginRow, hook: Hook, form: &BindForm) -> Attempt<()> {
    let (config, limits, outbound_http) = match (form.config(), form.limits(admin), form.grant()) {
        (Ok(config), Ok(limits), Ok(grant)) => (config, limits, grant),
        (Err(problems), _, _) | (_, Err(problems), _) | (_, _, Err(problems)) => {
            return Ok(Err(problems));
        }
    };
    let db = &admin.web.tenant.db;
    let plugin = match service::chosen(db, service::Choice::Id(row.id)).await {
        Ok(plugin) => plugin,
        Err(error) => return refused(error),
    };
    let bind = Bind {
        hook,
        plugin,
        config,
        failure_policy: form.failure_policy,
        limits,
        outbound_http,
    };
    match service::bind(admin.ctx(), &admin.web.tenant, bind).await {
        Ok(_) => Ok(Ok(())),
        Err(error) => refused(error),
    }
}

async fn bind(Path(id): Path<String>, admin: Admin) -> WebResult {
    admin.web.check_csrf()?;
    let row = plugin_of(&admin, &id).await?;
    let hook = service::hook_named(&admin.web.field("hook")).map_err(|_| {
        WebError::new(
            StatusCode::BAD_REQUEST,
            "Choose one of the hooks this plugin implements.",
        )
    })?;
    let form = BindForm::read(&admin, hook);
    let problems = match attempt_bind(&admin, &row, hook, &form).await? {
        Ok(()) => return Ok(found(&format!("/admin/hooks/{}?done=bound", hook.name()))),
        Err(problems) => problems,
    };
    let input = sample_input(&admin, hook);
    let view = PluginView {
        bind: Some(&form),
        bind_problems: &problems,
        try_config: &form.config,
        try_input: &input,
        report: None,
        try_problems: &Problems::default(),
        done: None,
    };
    plugin_page(&admin, StatusCode::UNPROCESSABLE_ENTITY, &row, view).await
}

/// Runs a trial of `hook` on the input text (the candidate's configuration checked first).
async fn attempt_trial(
    admin: &Admin,
    hook: Hook,
    trial: Result<Trial, Problems>,
    input: &str,
) -> Attempt<Report> {
    let (trial, input) = match (trial, trial_input(hook, input)) {
        (Ok(trial), Ok(input)) => (trial, input),
        (Err(problems), _) | (_, Err(problems)) => return Ok(Err(problems)),
    };
    match service::try_hook(admin.ctx(), &admin.web.tenant, hook, trial, input).await {
        Ok(report) => Ok(Ok(report)),
        Err(Refusal::NotFound("Hook binding")) => {
            Ok(Err(Problems::whole("No plugin is bound to this hook.")))
        }
        Err(error) => refused(error),
    }
}

fn status_of<T>(outcome: &Result<T, Problems>) -> StatusCode {
    if outcome.is_ok() {
        StatusCode::OK
    } else {
        StatusCode::UNPROCESSABLE_ENTITY
    }
}

async fn try_candidate(Path(id): Path<String>, admin: Admin) -> WebResult {
    admin.web.check_csrf()?;
    let row = plugin_of(&admin, &id).await?;
    let config_text = admin.web.field("config");
    let input = admin.web.field("input");
    let &hook = hooks_for(&row).first().ok_or_else(|| {
        WebError::new(
            StatusCode::BAD_REQUEST,
            "No hook implements this plugin's world.",
        )
    })?;
    let form = BindForm {
        config: config_text.clone(),
        ..BindForm::of(hook, None, row.id)
    };
    let trial = form.config().map(|config| Trial::Candidate {
        plugin: Box::new(row.clone()),
        config,
        limits: admin.ctx().plugins.maxima.defaults(),
    });
    let outcome = attempt_trial(&admin, hook, trial, &input).await?;
    let none = Problems::default();
    let view = PluginView {
        bind: None,
        bind_problems: &none,
        try_config: &config_text,
        try_input: &input,
        report: outcome.as_ref().ok(),
        try_problems: outcome.as_ref().err().unwrap_or(&none),
        done: None,
    };
    plugin_page(&admin, status_of(&outcome), &row, view).await
}

async fn delete(Path(id): Path<String>, admin: Admin) -> WebResult {
    admin.web.check_csrf()?;
    let row = plugin_of(&admin, &id).await?;
    service::remove(&admin.web.tenant.db, &row)
        .await
        .map_err(page_error)?;
    Ok(found("/admin/plugins"))
}

// ---- one hook: binding, try the bound plugin, watch, unbind --------------------------

fn hook_of(name: &str) -> Result<Hook, WebError> {
    service::hook_named(name).map_err(|_| WebError::not_found())
}

async fn hook_page(
    admin: &Admin,
    status: StatusCode,
    hook: Hook,
    input: &str,
    report: Option<&Report>,
    problems: &Problems,
    done: Option<&str>,
) -> WebResult {
    let db = &admin.web.tenant.db;
    let hooks = service::hooks(db).await.map_err(page_error)?;
    let bound = hooks
        .into_iter()
        .find(|s| s.hook == hook)
        .and_then(|s| s.bound);
    let summary = admin.ctx().plugins.watch.summary(admin.web.tenant.id, hook);
    let action = format!("/admin/hooks/{}", hook.name());
    let body = html! {
        @match done {
            Some("bound") => { (notice("The binding is saved and in effect.")) }
            Some("unbound") => { (notice("The hook is unbound.")) }
            _ => {}
        }
        div.grid {
            section.card aria-labelledby="binding-heading" {
                h2 id="binding-heading" { "Binding" }
                @if let Some((binding, plugin)) = &bound {
                    dl.facts {
                        dt { "Plugin" } dd { a href={ "/admin/plugins/" (plugin.id) } { (plugin.name) " " (version(plugin)) } }
                        dt { "World" } dd { code { (hook.world().world_name()) } }
                        dt { "Failure policy" } dd { (binding.failure_policy) }
                        dt { "Limits" } dd {
                            (binding.timeout_ms) " ms, "
                            (binding.fuel.map_or("unlimited".into(), |f| f.to_string())) " fuel, "
                            (binding.memory_bytes) " bytes"
                        }
                        dt { "Updated" } dd { (when(binding.updated_at)) }
                    }
                    h3 { "Configuration" }
                    pre { (pretty(&binding.config)) }
                    div.row-actions {
                        a.button href={ "/admin/plugins/" (plugin.id) } { "Change binding" }
                        form method="post" action={ (action) "/unbind" } {
                            (csrf_field(admin.csrf()))
                            button.danger type="submit" { "Unbind" }
                        }
                    }
                } @else {
                    p { "No plugin is bound: the hook does nothing." }
                    p { a href="/admin/plugins" { "Choose a plugin from the catalog" } " whose world is " code { (hook.world().world_name()) } "." }
                }
            }
            section.card aria-labelledby="watch-heading" {
                h2 id="watch-heading" { "Watch it" }
                p.hint { "Calls through this binding over the last hour, served by this process." }
                (chart::stats(&summary))
                (chart::chart(&summary))
                (chart::failures(&summary))
            }
        }
        @if bound.is_some() {
            section.card aria-labelledby="try-heading" style="margin-top:1.25rem" {
                h2 id="try-heading" { "Try it" }
                (try_form(admin, hook, &format!("{action}/try"), None, input, report, problems))
            }
        }
    };
    let crumbs = [("/admin/plugins", "Plugins")];
    let title = format!("Hook {}", hook.name());
    Ok(page(admin, status, Section::Plugins, &crumbs, &title, body))
}

async fn hook(Path(name): Path<String>, admin: Admin) -> WebResult {
    let hook = hook_of(&name)?;
    let done = admin.web.field("done");
    let input = sample_input(&admin, hook);
    hook_page(
        &admin,
        StatusCode::OK,
        hook,
        &input,
        None,
        &Problems::default(),
        Some(done.as_str()),
    )
    .await
}

async fn try_bound(Path(name): Path<String>, admin: Admin) -> WebResult {
    admin.web.check_csrf()?;
    let hook = hook_of(&name)?;
    let input = admin.web.field("input");
    let outcome = attempt_trial(&admin, hook, Ok(Trial::Bound), &input).await?;
    let none = Problems::default();
    let problems = outcome.as_ref().err().unwrap_or(&none);
    hook_page(
        &admin,
        status_of(&outcome),
        hook,
        &input,
        outcome.as_ref().ok(),
        problems,
        None,
    )
    .await
}

async fn unbind(Path(name): Path<String>, admin: Admin) -> WebResult {
    admin.web.check_csrf()?;
    let hook = hook_of(&name)?;
    match service::unbind(admin.ctx(), &admin.web.tenant, hook).await {
        Ok(()) | Err(Refusal::NotFound(_)) => {
            Ok(found(&format!("/admin/hooks/{}?done=unbound", hook.name())))
        }
        Err(error) => Err(page_error(error)),
    }
}
