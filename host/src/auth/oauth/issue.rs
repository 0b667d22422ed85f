//! Issuing access tokens (with or without a refresh token) and the token response body.

use crate::http::json::Json;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::error::no_store;
use super::{ACCESS_TOKEN_SECONDS, random_hex};
use crate::auth::secrets;
use crate::model::now_ms;
use crate::store::oauth::{AccessTokenRow, NewAccessToken};

/// The `token_type` of every token response, as GitLab's documentation shows it.
pub const TOKEN_TYPE: &str = "bearer";

/// The plaintexts of a token about to be stored, and their digests.
pub struct TokenSecrets {
    pub access: String,
    pub refresh: Option<String>,
    access_digest: String,
    refresh_digest: Option<String>,
}

impl TokenSecrets {
    pub fn new(with_refresh: bool) -> Self {
        let access = random_hex();
        let refresh = with_refresh.then(random_hex);
        TokenSecrets {
            access_digest: secrets::digest(&access),
            refresh_digest: refresh.as_deref().map(secrets::digest),
            access,
            refresh,
        }
    }

    /// The row to store for application `application_id`, user `user_id`.
    pub fn row<'a>(
        &'a self,
        application_id: i64,
        user_id: i64,
        scopes: &'a str,
        grant_id: Option<i64>,
    ) -> NewAccessToken<'a> {
        NewAccessToken {
            application_id,
            user_id,
            token_digest: &self.access_digest,
            refresh_digest: self.refresh_digest.as_deref(),
            scopes,
            grant_id,
            expires_at: Some(now_ms() + ACCESS_TOKEN_SECONDS * 1000),
        }
    }
}

/// The remaining lifetime of a token in whole seconds (`None` for a token that never expires).
pub fn expires_in(row: &AccessTokenRow) -> Option<i64> {
    row.expires_at
        .map(|at| ((at - now_ms()) as f64 / 1000.0).ceil().max(0.0) as i64)
}

/// The token response (`access_token`, `token_type`, `expires_in`, `refresh_token`, `scope`,
/// `created_at`); the password grant's omits `refresh_token` and `created_at`, as the spec
/// shows it.
pub fn token_body(secrets: &TokenSecrets, row: &AccessTokenRow, full: bool) -> Value {
    let mut body = json!({
        "access_token": secrets.access,
        "token_type": TOKEN_TYPE,
        "expires_in": expires_in(row),
    });
    if full && let Some(refresh) = &secrets.refresh {
        body["refresh_token"] = json!(refresh);
    }
    body["scope"] = json!(row.scopes);
    if full {
        body["created_at"] = json!(row.created_at / 1000);
    }
    body
}

pub fn token_response(body: Value) -> Response {
    let mut response = Json(body).into_response();
    no_store(&mut response);
    response
}
