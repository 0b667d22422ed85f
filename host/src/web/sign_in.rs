//! `/users/sign_in` (username or email and password, with GitLab's lockout) and
//! `/users/sign_out`.

use crate::http::routes::Router;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use maud::html;

use super::layout::{self, csrf_field};
use super::session::{self, SESSION_COOKIE};
use super::{Web, WebResult, found};
use crate::context::ApiContext;
use crate::services::Refusal;
use crate::services::sessions::{self, NewSession};
use crate::settings::keys;

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/users/sign_in", get(form).post(sign_in))
        .route("/users/sign_out", post(sign_out).delete(sign_out))
}

/// Where to go after signing in: a local path only (never another site).
fn return_to(web: &Web) -> String {
    let asked = web.field("redirect_to");
    let local = asked.starts_with('/')
        && !asked.starts_with("//")
        && !asked.contains('\\')
        && !asked.chars().any(char::is_control);
    if local {
        asked
    } else {
        "/profile/applications".to_string()
    }
}

fn render(web: &Web, status: StatusCode, alert: Option<&str>, login: &str) -> Response {
    let (csrf, set_cookie) = session::csrf_token(web.session.as_ref(), &web.headers, web.secure());
    let body = html! {
        @if let Some(alert) = alert {
            p.error role="alert" { (alert) }
        }
        form method="post" action="/users/sign_in" {
            (csrf_field(&csrf))
            input type="hidden" name="redirect_to" value=(return_to(web));
            label for="user_login" { "Username or primary email" }
            input type="text" id="user_login" name="user[login]" value=(login)
                autocomplete="username" required autofocus;
            label for="user_password" { "Password" }
            input type="password" id="user_password" name="user[password]"
                autocomplete="current-password" required;
            button type="submit" name="commit" { "Sign in" }
        }
    };
    let cookies: Vec<String> = set_cookie.into_iter().collect();
    layout::page_with_cookies(status, "Sign in", None, body, &cookies)
}

async fn form(web: Web) -> WebResult {
    if web.session.is_some() {
        return Ok(found(&return_to(&web)));
    }
    Ok(render(&web, StatusCode::OK, None, ""))
}

fn nested_string(web: &Web, name: &str) -> String {
    web.nested("user", name)
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string()
}

async fn sign_in(web: Web) -> WebResult {
    web.check_csrf()?;
    let login = nested_string(&web, "login");
    let password = nested_string(&web, "password");
    let refuse = |message: &str| {
        Ok(render(
            &web,
            StatusCode::UNAUTHORIZED,
            Some(message),
            &login,
        ))
    };
    if !web
        .settings
        .get(keys::PASSWORD_AUTHENTICATION_ENABLED_FOR_WEB)
    {
        return refuse("Password authentication is disabled on this instance.");
    }
    if login.is_empty() || password.is_empty() {
        return refuse("Invalid login or password.");
    }
    let db = &web.tenant.db;
    // Unknown, wrong and locked look the same (see `sessions::check_password`).
    let Some(user) = sessions::check_password(db, &login, &password).await? else {
        return refuse("Invalid login or password.");
    };
    let (value, set_cookie) = session::new_session_cookie(web.secure());
    let new_session = NewSession {
        cookie_value: &value,
        replaces: web.session.as_ref().map(|old| old.digest.as_str()),
        peer_ip: web.peer_ip.as_deref(),
        expire_delay_minutes: web.settings.get(keys::SESSION_EXPIRE_DELAY),
    };
    match sessions::sign_in(db, &user, new_session).await {
        Ok(()) => {}
        Err(Refusal::Forbidden(Some(reason))) => return refuse(&reason),
        Err(other) => return Err(other.into()),
    }
    let mut response = found(&return_to(&web));
    append_cookie(&mut response, &set_cookie);
    append_cookie(
        &mut response,
        &session::clear_cookie_header(session::ANON_COOKIE, web.secure()),
    );
    Ok(response)
}

fn append_cookie(response: &mut Response, cookie: &str) {
    if let Ok(value) = axum::http::HeaderValue::from_str(cookie) {
        response
            .headers_mut()
            .append(axum::http::header::SET_COOKIE, value);
    }
}

async fn sign_out(web: Web) -> WebResult {
    let Some(session) = &web.session else {
        return Ok(found("/users/sign_in"));
    };
    web.check_csrf()?;
    sessions::sign_out(&web.tenant.db, &session.digest).await?;
    let mut response = found("/users/sign_in");
    append_cookie(
        &mut response,
        &session::clear_cookie_header(SESSION_COOKIE, web.secure()),
    );
    Ok(response)
}
