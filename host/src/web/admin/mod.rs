//! The administrators' console under `/admin`: plugins (`plugins`, with the watch chart in
//! `chart`), application settings (`settings`) and users (`users`). Only administrators see
//! it; anyone else, signed in or not, gets a 404 (as GitLab answers non-admins in its Admin
//! Area). When the `admin_mode` setting is on, an administrator first re-enters their password
//! (`/admin/session/new`, GitLab's admin mode), which opens admin mode on their web session for
//! [`ADMIN_MODE_MINUTES`]. Every POST carries the session's CSRF token; the pages are plain
//! forms that work without JavaScript. The handlers parse and render: what is allowed and
//! what happens is in `services` (the same functions the API handlers call).

mod chart;
mod plugins;
mod settings;
mod usage;
mod users;

use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use maud::{Markup, html};
use serde_json::Value;

use super::layout::{self, csrf_field};
use super::session::Session;
use super::{Web, WebError, WebResult, found};
use crate::context::ApiContext;
use crate::http::error::ApiError;
use crate::http::routes::Router;
use crate::model::now_ms;
use crate::model::users::UserRow;
use crate::services::Refusal;
use crate::services::sessions::{self, ADMIN_MODE_MINUTES};
use crate::settings::keys;

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/admin", get(home))
        .route("/admin/session/new", get(admin_mode_form))
        .route("/admin/session", post(open_admin_mode))
        .route("/admin/session/destroy", post(close_admin_mode))
        .merge(plugins::router())
        .merge(settings::router())
        .merge(users::router())
        .merge(usage::router())
}

/// A request from a signed-in administrator (in admin mode when the setting asks for it).
pub struct Admin {
    pub web: Web,
}

/// The signed-in administrator's session, or a 404 for everyone else.
fn admin_session(web: &Web) -> Result<&Session, WebError> {
    web.session
        .as_ref()
        .filter(|session| session.user.is_admin)
        .ok_or_else(WebError::not_found)
}

fn admin_mode_required(web: &Web) -> bool {
    web.settings.get(keys::ADMIN_MODE)
}

impl FromRequest<ApiContext> for Admin {
    type Rejection = WebError;

    async fn from_request(request: Request, ctx: &ApiContext) -> Result<Self, Self::Rejection> {
        let web = Web::from_request(request, ctx).await?;
        let session = admin_session(&web)?;
        if admin_mode_required(&web) {
            let until = web
                .tenant
                .db
                .session_admin_mode_until(&session.digest)
                .await?;
            if until.is_none_or(|until| until <= now_ms()) {
                let back = if web.method == axum::http::Method::GET {
                    web.origin.path.clone()
                } else {
                    "/admin".to_string()
                };
                let query = form_urlencoded::Serializer::new(String::new())
                    .append_pair("redirect_to", &back)
                    .finish();
                return Err(WebError::Redirect(format!("/admin/session/new?{query}")));
            }
        }
        Ok(Admin { web })
    }
}

impl Admin {
    pub fn session(&self) -> &Session {
        self.web
            .session
            .as_ref()
            .expect("an Admin always has a session")
    }

    pub fn user(&self) -> &UserRow {
        &self.session().user
    }

    pub fn csrf(&self) -> &str {
        &self.session().csrf
    }

    pub fn ctx(&self) -> &ApiContext {
        &self.web.ctx
    }
}

/// The console's sections, for the navigation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Plugins,
    Settings,
    Users,
    Usage,
}

/// The instance's name: the host its pages are served on.
fn instance_name(web: &Web) -> &str {
    let base = &web.tenant.base_url;
    base.split_once("://")
        .map_or(base.as_str(), |(_, host)| host)
}

fn bar(web: &Web, session: &Session, current: Option<Section>) -> Markup {
    let link = |section: Section, href: &str, label: &str| {
        html! {
            li {
                a href=(href) aria-current=[(current == Some(section)).then_some("page")] { (label) }
            }
        }
    };
    let in_admin_mode = admin_mode_required(web);
    html! {
        div.bar {
            div.bar-inner {
                a.brand href="/admin" {
                    (instance_name(web)) small { "Admin console" }
                }
                nav aria-label="Admin console" {
                    ul {
                        (link(Section::Plugins, "/admin/plugins", "Plugins"))
                        (link(Section::Settings, "/admin/settings", "Settings"))
                        (link(Section::Users, "/admin/users", "Users"))
                        (link(Section::Usage, "/admin/usage", "Usage quotas"))
                    }
                }
                div.account {
                    span { "Signed in as " strong { (session.user.username) } }
                    @if in_admin_mode {
                        form method="post" action="/admin/session/destroy" {
                            (csrf_field(&session.csrf))
                            button type="submit" { "Leave admin mode" }
                        }
                    }
                    form method="post" action="/users/sign_out" {
                        (csrf_field(&session.csrf))
                        button type="submit" { "Sign out" }
                    }
                }
            }
        }
    }
}

/// A console page: the bar with the instance, the sections and the account, then `body`
/// under a heading `title` (and `crumbs`, links back up).
pub fn page(
    admin: &Admin,
    status: StatusCode,
    section: Section,
    crumbs: &[(&str, &str)],
    title: &str,
    body: Markup,
) -> Response {
    let main = html! {
        @if !crumbs.is_empty() {
            nav.crumbs aria-label="Breadcrumb" {
                @for (i, (href, label)) in crumbs.iter().enumerate() {
                    @if i > 0 { " / " }
                    a href=(href) { (label) }
                }
            }
        }
        h1 { (title) }
        (body)
    };
    let header = bar(&admin.web, admin.session(), Some(section));
    layout::document(status, title, "console", header, main, &[])
}

/// A message after an action (`role=status`, read out by screen readers).
pub fn notice(text: &str) -> Markup {
    html! { p.notice role="status" { (text) } }
}

/// A refusal for the whole form.
pub fn alert(text: &str) -> Markup {
    html! { p.alert role="alert" { (text) } }
}

/// An error under a field, referenced by the field's `aria-describedby`.
pub fn field_error(id: &str, error: Option<&str>) -> Markup {
    html! {
        @if let Some(error) = error {
            p.field-error id=(id) { (error) }
        }
    }
}

/// An API error by field, for the forms that show them inline (settings, a new user):
/// `{"error": "a is invalid, b is invalid"}` and `{"message": {"field": ["problem"]}}`,
/// worded as the API words them.
pub fn field_errors(error: ApiError) -> Result<Vec<(String, String)>, WebError> {
    Ok(match error {
        ApiError::InvalidParam(message) => message
            .split(", ")
            .map(|part| {
                let field = part.split_whitespace().next().unwrap_or_default();
                (field.to_string(), part.to_string())
            })
            .collect(),
        ApiError::Missing(field) => vec![(field.clone(), format!("{field} is missing"))],
        ApiError::Validation(fields) => fields
            .into_iter()
            .flat_map(|(field, messages)| {
                let list: Vec<String> = match messages {
                    Value::Array(items) => items
                        .iter()
                        .map(|m| m.as_str().map_or_else(|| m.to_string(), str::to_string))
                        .collect(),
                    other => vec![other.to_string()],
                };
                list.into_iter()
                    .map(move |m| (field.clone(), format!("{field} {m}")))
            })
            .collect(),
        ApiError::Conflict(message) => vec![(String::new(), message)],
        other => return Err(other.into()),
    })
}

/// The console opens on the plugins (the `Admin` extractor keeps everyone else out).
async fn home(_admin: Admin) -> WebResult {
    Ok(found("/admin/plugins"))
}

/// Where to go once admin mode is open: a local `/admin` path only.
fn admin_return_to(web: &Web) -> String {
    let asked = web.field("redirect_to");
    if asked.starts_with("/admin") && !asked.contains("//") && !asked.contains('\\') {
        asked
    } else {
        "/admin".to_string()
    }
}

fn admin_mode_page(
    web: &Web,
    session: &Session,
    status: StatusCode,
    error: Option<&str>,
) -> Response {
    let main = html! {
        h1 { "Enter admin mode" }
        p { "Admin mode is on for this instance: confirm your password to use the admin console. It stays open for "
            (ADMIN_MODE_MINUTES / 60) " hours or until you sign out." }
        @if let Some(error) = error { (alert(error)) }
        form method="post" action="/admin/session" {
            (csrf_field(&session.csrf))
            input type="hidden" name="redirect_to" value=(admin_return_to(web));
            label for="admin_password" { "Password" }
            input type="password" id="admin_password" name="password"
                autocomplete="current-password" required autofocus;
            button type="submit" { "Enter admin mode" }
        }
    };
    let header = bar(web, session, None);
    layout::document(status, "Enter admin mode", "console", header, main, &[])
}

async fn admin_mode_form(web: Web) -> WebResult {
    let session = admin_session(&web)?;
    Ok(admin_mode_page(&web, session, StatusCode::OK, None))
}

/// Checks the administrator's password (with the sign-in lockout) and opens admin mode.
async fn open_admin_mode(web: Web) -> WebResult {
    let session = admin_session(&web)?;
    web.check_csrf()?;
    let given = web.field("password");
    match sessions::enter_admin_mode(&web.tenant.db, &session.digest, &session.user, &given).await {
        Ok(()) => Ok(found(&admin_return_to(&web))),
        Err(Refusal::Unauthorized) => Ok(admin_mode_page(
            &web,
            session,
            StatusCode::UNAUTHORIZED,
            Some("Invalid login or password"),
        )),
        Err(other) => Err(other.into()),
    }
}

async fn close_admin_mode(web: Web) -> WebResult {
    let session = admin_session(&web)?;
    web.check_csrf()?;
    sessions::leave_admin_mode(&web.tenant.db, &session.digest).await?;
    Ok(found("/profile/applications"))
}
