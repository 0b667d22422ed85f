//! Client authentication at the token, revocation and introspection endpoints: HTTP Basic
//! (`client_id:client_secret`) or `client_id`/`client_secret` in the body. A public
//! (non-confidential) application may present its id alone; a secret, when presented, must be
//! right. Secrets are compared as digests in constant time.

use axum::http::{HeaderMap, header};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use subtle::ConstantTimeEq;

use super::error::{Kind, OAuthError, OAuthResult};
use crate::auth::secrets;
use crate::http::params::Params;
use crate::model::oauth::ApplicationRow;
use crate::store::TenantDb;

pub struct Credentials {
    pub id: String,
    pub secret: Option<String>,
}

fn percent_decoded(value: &str) -> String {
    // RFC 6749 2.3.1: id and secret are form-encoded before Basic encoding.
    form_urlencoded::parse(format!("v={value}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// The credentials a request presents, if any.
pub fn presented(headers: &HeaderMap, params: &Params) -> OAuthResult<Option<Credentials>> {
    if let Some(value) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        && let Some((scheme, encoded)) = value.trim().split_once(' ')
        && scheme.eq_ignore_ascii_case("basic")
    {
        let decoded = STANDARD
            .decode(encoded.trim())
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or_else(|| OAuthError::new(Kind::InvalidClient))?;
        let (id, secret) = decoded
            .split_once(':')
            .ok_or_else(|| OAuthError::new(Kind::InvalidClient))?;
        return Ok(Some(Credentials {
            id: percent_decoded(id),
            secret: Some(percent_decoded(secret)).filter(|s| !s.is_empty()),
        }));
    }
    let Some(id) = params.string("client_id")?.filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    let secret = params.string("client_secret")?.filter(|s| !s.is_empty());
    Ok(Some(Credentials { id, secret }))
}

pub fn secret_matches(app: &ApplicationRow, secret: &str) -> bool {
    let digest = secrets::digest(secret);
    digest.as_bytes().ct_eq(app.secret_digest.as_bytes()).into()
}

/// The application the credentials authenticate, or `invalid_client`.
pub async fn authenticate(db: &TenantDb, credentials: &Credentials) -> OAuthResult<ApplicationRow> {
    let app = db
        .application_by_uid(&credentials.id)
        .await?
        .ok_or_else(|| OAuthError::new(Kind::InvalidClient))?;
    let ok = match &credentials.secret {
        Some(secret) => secret_matches(&app, secret),
        None => !app.confidential,
    };
    if ok {
        Ok(app)
    } else {
        Err(OAuthError::new(Kind::InvalidClient))
    }
}

/// The authenticated client of a request that must carry one.
pub async fn required(
    db: &TenantDb,
    headers: &HeaderMap,
    params: &Params,
) -> OAuthResult<ApplicationRow> {
    let credentials =
        presented(headers, params)?.ok_or_else(|| OAuthError::new(Kind::InvalidClient))?;
    authenticate(db, &credentials).await
}
