//! Sessions: a random cookie whose SHA-256 digest names a server-side row, and CSRF tokens
//! derived from the cookie (so a token is bound to its session and useless without it).
//! Before sign-in, a separate random cookie carries the CSRF binding for the sign-in form.

use axum::http::{HeaderMap, header};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::auth::secrets;
use crate::model::users::UserRow;
use crate::store::TenantDb;

pub const SESSION_COOKIE: &str = "_gitlab_session";
pub const ANON_COOKIE: &str = "_trellis_csrf";

pub struct Session {
    pub digest: String,
    pub csrf: String,
    pub user: UserRow,
}

pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, value)| *key == name && !value.is_empty())
        .map(|(_, value)| value)
}

/// The CSRF token bound to a cookie value.
fn csrf_for(kind: &str, cookie_value: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"trellis-csrf:");
    hasher.update(kind.as_bytes());
    hasher.update(b":");
    hasher.update(cookie_value.as_bytes());
    hex::encode(hasher.finalize())
}

impl Session {
    pub async fn load(db: &TenantDb, headers: &HeaderMap) -> crate::store::Result<Option<Session>> {
        let Some(value) = cookie(headers, SESSION_COOKIE) else {
            return Ok(None);
        };
        let digest = secrets::digest(value);
        // Only active users have a usable session: blocking a user ends their sessions.
        let Some(user) = db.session_user(&digest).await?.filter(UserRow::can_use_api) else {
            return Ok(None);
        };
        Ok(Some(Session {
            digest,
            csrf: csrf_for("session", value),
            user,
        }))
    }
}

/// A new session cookie value and the `Set-Cookie` header for it.
pub fn new_session_cookie(secure: bool) -> (String, String) {
    let value = secrets::generate("", 48);
    let header = cookie_header(SESSION_COOKIE, &value, secure, None);
    (value, header)
}

pub fn cookie_header(name: &str, value: &str, secure: bool, max_age: Option<i64>) -> String {
    let mut header = format!("{name}={value}; Path=/; HttpOnly; SameSite=Lax");
    if let Some(age) = max_age {
        header.push_str(&format!("; Max-Age={age}"));
    }
    if secure {
        header.push_str("; Secure");
    }
    header
}

pub fn clear_cookie_header(name: &str, secure: bool) -> String {
    cookie_header(name, "", secure, Some(0))
}

/// The CSRF token for a form on this request's page, and a `Set-Cookie` header when an
/// anonymous CSRF cookie has to be created first.
pub fn csrf_token(
    session: Option<&Session>,
    headers: &HeaderMap,
    secure: bool,
) -> (String, Option<String>) {
    if let Some(session) = session {
        return (session.csrf.clone(), None);
    }
    if let Some(value) = cookie(headers, ANON_COOKIE) {
        return (csrf_for("anonymous", value), None);
    }
    let value = secrets::generate("", 32);
    (
        csrf_for("anonymous", &value),
        Some(cookie_header(ANON_COOKIE, &value, secure, None)),
    )
}

pub fn csrf_matches(session: Option<&Session>, headers: &HeaderMap, sent: &str) -> bool {
    let expected = match session {
        Some(session) => session.csrf.clone(),
        None => match cookie(headers, ANON_COOKIE) {
            Some(value) => csrf_for("anonymous", value),
            None => return false,
        },
    };
    !sent.is_empty() && bool::from(expected.as_bytes().ct_eq(sent.as_bytes()))
}
