//! The console's settings pages: the application settings grouped by section, as in GitLab's
//! admin area (`/admin/settings/:section`), with a field per setting generated from the
//! settings catalog: a checkbox for a flag, a select for an enumeration (the catalog's
//! choices), a text field for numbers, text and lists, a JSON field for maps, and a write-only password field for secrets (left blank: unchanged).
//! A save sends only the fields that changed through the same validation and write as
//! `PUT /application/settings` (`services::settings`), and shows its errors inline.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::routing::get;
use maud::{Markup, html};
use serde_json::{Map, Value};

use super::{Admin, Section, field_error, field_errors, notice, page};
use crate::context::ApiContext;
use crate::http::params::Params;
use crate::http::routes::Router;
use crate::services::settings as service;
use crate::settings::Settings;
use crate::settings::catalog::{self, CATALOG, Entry, Kind};
use crate::settings::validate::SettingsUpdate;
use crate::web::layout::csrf_field;
use crate::web::{WebError, WebResult, found};

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/admin/settings", get(index))
        .route("/admin/settings/{section}", get(show).post(save))
}

/// A section of the settings: its path, title, what it covers, and which settings it holds
/// (by name; the first section whose test matches takes a setting).
struct Group {
    slug: &'static str,
    title: &'static str,
    about: &'static str,
    holds: fn(&str) -> bool,
}

fn starts(name: &str, prefixes: &[&str]) -> bool {
    prefixes.iter().any(|p| name.starts_with(p))
}

const GROUPS: &[Group] = &[
    Group {
        slug: "sign_in",
        title: "Sign-up and sign-in",
        about: "Who may register and sign in, passwords, sessions, two-factor authentication, admin mode and tokens.",
        holds: |n| {
            starts(
                n,
                &[
                    "signup",
                    "signin",
                    "sign_in",
                    "sign_up",
                    "after_sign",
                    "password_",
                    "require_",
                    "send_user_confirmation",
                    "session_",
                    "two_factor",
                    "admin_mode",
                    "domain_",
                    "user_",
                    "disable_feed_token",
                    "disabled_oauth",
                    "oauth_",
                    "git_two_factor",
                    "max_personal_access_token",
                    "personal_access_token",
                    "deactivate_dormant",
                    "terms",
                    "enforce_terms",
                ],
            )
        },
    },
    Group {
        slug: "visibility",
        title: "Visibility and access controls",
        about: "Default visibility, project creation, branch defaults, import sources, Git access and SSH key restrictions.",
        holds: |n| {
            starts(
                n,
                &[
                    "default_",
                    "restricted_visibility",
                    "import_sources",
                    "enabled_git_access",
                    "authorized_keys",
                    "project_export",
                    "max_ssh_key",
                ],
            ) || n.ends_with("_key_restriction")
        },
    },
    Group {
        slug: "spam",
        title: "Spam and anti-abuse",
        about: "Spam checks, CAPTCHA, abuse reports and unique IP limits.",
        holds: |n| {
            starts(
                n,
                &[
                    "spam_",
                    "captcha",
                    "recaptcha",
                    "akismet",
                    "invisible_captcha",
                    "abuse_",
                    "admin_notification",
                    "unique_ips",
                ],
            )
        },
    },
    Group {
        slug: "rate_limits",
        title: "Rate limits",
        about: "Request throttles per user and per IP, and the limits of searches, issue creation and raw files.",
        holds: |n| {
            starts(n, &["throttle_", "rate_limiting", "search_rate_limit"])
                || (n.ends_with("_limit")
                    && starts(n, &["issues_", "raw_blob", "user_email", "pipeline_"]))
        },
    },
    Group {
        slug: "outbound",
        title: "Outbound requests",
        about: "Which local addresses webhooks, integrations and mirrors may reach.",
        holds: |n| {
            starts(
                n,
                &["allow_local_requests", "outbound_local", "dns_rebinding"],
            )
        },
    },
    Group {
        slug: "external_authorization",
        title: "External authorization",
        about: "A service that decides access to projects by their classification label.",
        holds: |n| starts(n, &["external_auth"]),
    },
    Group {
        slug: "repository",
        title: "Repository",
        about: "Housekeeping, repository size and storage, mirrors, diffs, and deletion of projects and groups.",
        holds: |n| {
            starts(
                n,
                &[
                    "housekeeping",
                    "repository_",
                    "diff_max",
                    "receive_max",
                    "mirror_",
                    "delayed_",
                    "deletion_adjourned",
                    "delete_inactive",
                    "inactive_projects",
                    "max_",
                    "hashed_storage",
                    "git_backend",
                ],
            )
        },
    },
    Group {
        slug: "general",
        title: "General",
        about: "Everything else: help texts, email, integrations, metrics and other instance-wide preferences.",
        holds: |_| true,
    },
];

/// The settings a section shows: the catalog's, without deprecated aliases.
fn entries(group: &Group) -> Vec<&'static Entry> {
    CATALOG
        .iter()
        .filter(|e| e.alias_of.is_none())
        .filter(|e| {
            GROUPS
                .iter()
                .find(|g| (g.holds)(e.name))
                .is_some_and(|g| g.slug == group.slug)
        })
        .collect()
}

fn group(slug: &str) -> Result<&'static Group, WebError> {
    GROUPS
        .iter()
        .find(|g| g.slug == slug)
        .ok_or_else(WebError::not_found)
}

/// `default_projects_limit` → `Default projects limit`.
fn label(name: &str) -> String {
    let mut text = name.replace('_', " ");
    if let Some(first) = text.get(..1) {
        text.replace_range(..1, &first.to_uppercase());
    }
    text
}

/// A setting's value as its field shows it.
fn shown(entry: &Entry, value: &Value) -> String {
    match (entry.kind, value) {
        (_, Value::Null) => String::new(),
        (_, Value::String(s)) => s.clone(),
        (Kind::StrList | Kind::IntList, Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
            .collect::<Vec<_>>()
            .join(", "),
        (Kind::IntMap, value) => value.to_string(),
        (_, value) => value.to_string(),
    }
}

/// What the form shows for each setting, and the errors of a refused save.
struct Form {
    values: Map<String, Value>,
    errors: Vec<(String, String)>,
}

impl Form {
    fn error(&self, name: &str) -> Option<&str> {
        self.errors
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, message)| message.as_str())
    }
}

fn field(entry: &Entry, settings: &Settings, form: &Form) -> Markup {
    let name = entry.name;
    let id = format!("setting_{name}");
    let error_id = format!("{id}_error");
    let error = form.error(name);
    let invalid = error.map(|_| "true");
    let described = error.map(|_| error_id.clone());
    let value = form
        .values
        .get(name)
        .cloned()
        .unwrap_or_else(|| settings.catalog_value(entry));
    html! {
        div.setting {
            @match entry.kind {
                Kind::Bool if !entry.secret => {
                    label.inline for=(id) {
                        input type="checkbox" id=(id) name=(name) value="true"
                            checked[value.as_bool().unwrap_or(false)]
                            aria-describedby=[described.as_deref()] aria-invalid=[invalid];
                        (label(name))
                    }
                }
                _ => {
                    label for=(id) { (label(name)) }
                    @if entry.secret {
                        @let set = settings.stored().get(name).is_some_and(|v| !v.is_null());
                        p.hint id={ (id) "_hint" } {
                            "Write-only: " @if set { "a value is set (stored encrypted). Enter a new one to replace it." } @else { "not set." }
                        }
                        @let described = match error { Some(_) => format!("{id}_hint {error_id}"), None => format!("{id}_hint") };
                        input type="password" id=(id) name=(name) autocomplete="new-password"
                            aria-describedby=(described) aria-invalid=[invalid];
                    } @else if let Some(choices) = catalog::choices(name) {
                        @let current = shown(entry, &value);
                        select id=(id) name=(name)
                            aria-describedby=[described.as_deref()] aria-invalid=[invalid] {
                            @for (choice, text) in choices {
                                option value=(choice) selected[current == *choice] { (text) }
                            }
                        }
                    } @else if entry.kind == Kind::IntMap {
                        textarea.code id=(id) name=(name) rows="3" spellcheck="false"
                            aria-describedby=[described.as_deref()] aria-invalid=[invalid] { (shown(entry, &value)) }
                    } @else {
                        @let mode = match entry.kind { Kind::Int | Kind::IntList => Some("numeric"), Kind::Float => Some("decimal"), _ => None };
                        input type="text" id=(id) name=(name) value=(shown(entry, &value)) inputmode=[mode]
                            aria-describedby=[described.as_deref()] aria-invalid=[invalid];
                        @if matches!(entry.kind, Kind::StrList | Kind::IntList) {
                            p.hint { "Comma-separated." }
                        }
                    }
                }
            }
            (field_error(&error_id, error))
        }
    }
}

fn cache_note(admin: &Admin) -> Markup {
    let seconds = admin.ctx().config.settings_cache_seconds;
    html! {
        @if seconds > 0 {
            p.note role="note" {
                "A saved change applies at once on the process that saved it, and on the other processes serving this instance as soon as they hear of it (through PostgreSQL or Redis); a process that missed the news reads settings again within "
                (seconds) " seconds (" code { "--settings-cache-seconds" } ")."
            }
        }
    }
}

fn section_page(
    admin: &Admin,
    status: StatusCode,
    group: &Group,
    settings: &Settings,
    form: &Form,
    done: bool,
) -> WebResult {
    let action = format!("/admin/settings/{}", group.slug);
    let body = html! {
        p { (group.about) }
        @if done { (notice("Application settings saved successfully")) }
        @if !form.errors.is_empty() {
            div.alert role="alert" {
                p { "The settings were not saved:" }
                ul { @for (_, message) in &form.errors { li { (message) } } }
            }
        }
        (cache_note(admin))
        form method="post" action=(action) {
            (csrf_field(admin.csrf()))
            // An unchecked box sends nothing: this names the ones the form has.
            input type="hidden" name="checkboxes" value=(checkboxes(group).join(","));
            div.grid {
                @for entry in entries(group) {
                    (field(entry, settings, form))
                }
            }
            button type="submit" { "Save changes" }
        }
    };
    let crumbs = [("/admin/settings", "Settings")];
    Ok(page(
        admin,
        status,
        Section::Settings,
        &crumbs,
        group.title,
        body,
    ))
}

async fn index(admin: Admin) -> WebResult {
    let body = html! {
        p { "The application settings of this instance, as " code { "GET /api/v4/application/settings" } " shows them, by section." }
        (cache_note(&admin))
        div.grid {
            @for group in GROUPS {
                section.card {
                    h2 { a href={ "/admin/settings/" (group.slug) } { (group.title) } }
                    p { (group.about) }
                    p.hint { (entries(group).len()) " settings" }
                }
            }
        }
    };
    Ok(page(
        &admin,
        StatusCode::OK,
        Section::Settings,
        &[],
        "Settings",
        body,
    ))
}

async fn show(Path(slug): Path<String>, admin: Admin) -> WebResult {
    let group = group(&slug)?;
    let settings = service::current(&admin.web.tenant).await?;
    let form = Form {
        values: Map::new(),
        errors: Vec::new(),
    };
    let done = admin.web.field("done") == "saved";
    section_page(&admin, StatusCode::OK, group, &settings, &form, done)
}

/// The flags of a section: its checkboxes.
fn checkboxes(group: &Group) -> Vec<&'static str> {
    entries(group)
        .into_iter()
        .filter(|e| e.kind == Kind::Bool && !e.secret)
        .map(|e| e.name)
        .collect()
}

/// The fields whose submitted value differs from what the form showed, as a form PUT would
/// send them (strings; flags as booleans; secrets only when a value was entered). Fields the
/// form did not send are left alone (a flag is sent as unchecked when `checkboxes` names it).
fn changes(admin: &Admin, group: &Group, settings: &Settings) -> Map<String, Value> {
    let mut update = Map::new();
    let listed = admin.web.field("checkboxes");
    let boxes: Vec<&str> = listed.split(',').collect();
    for entry in entries(group) {
        let name = entry.name;
        let present = if entry.kind == Kind::Bool && !entry.secret {
            boxes.contains(&name)
        } else {
            admin.web.params.has(name)
        };
        if !present {
            continue;
        }
        let submitted = admin.web.field(name);
        if entry.secret {
            if !submitted.is_empty() {
                update.insert(name.into(), Value::String(submitted));
            }
            continue;
        }
        let current = settings.catalog_value(entry);
        if entry.kind == Kind::Bool {
            let on = submitted == "true";
            if current.as_bool() != Some(on) {
                update.insert(name.into(), Value::Bool(on));
            }
            continue;
        }
        if submitted.trim() == shown(entry, &current).trim() {
            continue;
        }
        let value = match entry.kind {
            Kind::IntMap => serde_json::from_str(&submitted).unwrap_or(Value::String(submitted)),
            _ => Value::String(submitted),
        };
        update.insert(name.into(), value);
    }
    update
}

async fn save(Path(slug): Path<String>, admin: Admin) -> WebResult {
    admin.web.check_csrf()?;
    let group = group(&slug)?;
    let settings = service::current(&admin.web.tenant).await?;
    let update = changes(&admin, group, &settings);
    if update.is_empty() {
        return Ok(found(&format!("/admin/settings/{}?done=saved", group.slug)));
    }
    let params = Params::from_json_object(update.clone());
    let saved = match SettingsUpdate::parse(&params) {
        Ok(update) => service::update(admin.ctx(), &admin.web.tenant, &update).await,
        Err(refusal) => Err(refusal),
    };
    match saved {
        Ok(_) => Ok(found(&format!("/admin/settings/{}?done=saved", group.slug))),
        Err(error) => {
            let mut values = update;
            // Secrets are never sent back to the browser.
            values.retain(|name, _| CATALOG.iter().any(|e| e.name == name && !e.secret));
            let form = Form {
                values,
                errors: field_errors(error.into())?,
            };
            section_page(
                &admin,
                StatusCode::UNPROCESSABLE_ENTITY,
                group,
                &settings,
                &form,
                false,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section_of(name: &str) -> &'static str {
        GROUPS
            .iter()
            .find(|g| entries(g).iter().any(|e| e.name == name))
            .map_or("none", |g| g.slug)
    }

    #[test]
    fn every_setting_has_one_section_and_every_section_has_settings() {
        let shown: usize = GROUPS.iter().map(|g| entries(g).len()).sum();
        let canonical = CATALOG.iter().filter(|e| e.alias_of.is_none()).count();
        assert_eq!(shown, canonical);
        for group in GROUPS {
            assert!(!entries(group).is_empty(), "{} is empty", group.slug);
        }
        assert_eq!(section_of("admin_mode"), "sign_in");
        assert_eq!(section_of("default_projects_limit"), "visibility");
        assert_eq!(section_of("captcha_private_key"), "spam");
        assert_eq!(
            section_of("throttle_protected_paths_enabled"),
            "rate_limits"
        );
        assert_eq!(section_of("search_rate_limit"), "rate_limits");
        assert_eq!(
            section_of("external_authorization_service_url"),
            "external_authorization"
        );
        assert_eq!(section_of("housekeeping_enabled"), "repository");
        assert_eq!(section_of("help_page_text"), "general");
    }

    #[test]
    fn fields_show_values_as_a_form_sends_them() {
        let list = CATALOG.iter().find(|e| e.kind == Kind::StrList).unwrap();
        assert_eq!(shown(list, &serde_json::json!(["a", "b"])), "a, b");
        let int = CATALOG.iter().find(|e| e.kind == Kind::Int).unwrap();
        assert_eq!(shown(int, &serde_json::json!(42)), "42");
        assert_eq!(shown(int, &Value::Null), "");
        assert_eq!(label("default_projects_limit"), "Default projects limit");
    }
}
