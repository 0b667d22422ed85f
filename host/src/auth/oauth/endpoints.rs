//! The JSON endpoints of the provider: `POST /oauth/token` (authorization code, password,
//! refresh token), `GET /oauth/token/info`, `POST /oauth/revoke` (RFC 7009),
//! `POST /oauth/introspect` (RFC 7662) and the RFC 8414 / OpenID discovery documents.

use std::sync::Arc;

use crate::http::json::Json;
use crate::http::routes::Router;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use super::error::{Kind, OAuthError, OAuthResult, no_store};
use super::issue::{expires_in, token_body, token_response};
use super::{client, oidc, pkce, scopes};
use crate::auth::secrets;
use crate::context::ApiContext;
use crate::http::params::Params;
use crate::http::request::tenant_and_params;
use crate::links::UserLinks;
use crate::model::now_ms;
use crate::model::oauth::ApplicationRow;
use crate::model::users::UserRow;
use crate::services::oauth::{self, Redeemed};
use crate::settings::Settings;
use crate::settings::keys;
use crate::store::oauth::AccessTokenRow;
use crate::tenants::Tenant;

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/oauth/token", post(token))
        .route("/oauth/token/info", get(token_info))
        .route("/oauth/revoke", post(revoke))
        .route("/oauth/introspect", post(introspect))
        .route("/oauth/userinfo", get(userinfo).post(userinfo))
        .route("/oauth/discovery/keys", get(keys))
        .route("/.well-known/oauth-authorization-server", get(metadata))
        .route("/.well-known/openid-configuration", get(metadata))
}

/// What an OAuth endpoint receives: the tenant, its settings, the merged query and form
/// parameters, and the headers (for client and bearer credentials).
pub struct OAuthRequest {
    pub ctx: ApiContext,
    pub tenant: Tenant,
    pub settings: Arc<Settings>,
    pub params: Params,
    pub headers: HeaderMap,
}

impl FromRequest<ApiContext> for OAuthRequest {
    type Rejection = OAuthError;

    async fn from_request(request: Request, ctx: &ApiContext) -> Result<Self, Self::Rejection> {
        let (mut parts, body) = request.into_parts();
        let (tenant, settings, params) = tenant_and_params(ctx, &mut parts, body).await?;
        Ok(OAuthRequest {
            ctx: ctx.clone(),
            tenant,
            settings,
            params,
            headers: parts.headers,
        })
    }
}

impl OAuthRequest {
    fn string(&self, name: &str) -> OAuthResult<Option<String>> {
        Ok(self.params.string(name)?.filter(|s| !s.is_empty()))
    }

    fn required(&self, name: &str) -> OAuthResult<String> {
        self.string(name)?.ok_or_else(|| OAuthError::missing(name))
    }

    async fn client(&self) -> OAuthResult<ApplicationRow> {
        client::required(&self.tenant.db, &self.headers, &self.params).await
    }

    fn user_links(&self) -> UserLinks<'_> {
        UserLinks {
            base_url: &self.tenant.base_url,
            avatar_service: self.settings.get(keys::AVATAR_SERVICE_ENABLED),
        }
    }

    /// The token response for a code or a refresh token, with an ID token when the grant
    /// carries the `openid` scope.
    async fn respond(
        &self,
        redeemed: &Redeemed,
        app: &ApplicationRow,
        nonce: Option<&str>,
    ) -> Result<Response, OAuthError> {
        let row = &redeemed.token.row;
        let mut body = token_body(&redeemed.token.secrets, row, true);
        if row.scopes.split_whitespace().any(|s| s == "openid") {
            let pair = oauth::signing_key(&self.tenant.db, &self.ctx.secret_key).await?;
            let id_token = oidc::IdToken {
                issuer: &self.tenant.base_url,
                audience: &app.uid,
                nonce,
                user: &redeemed.owner,
                links: self.user_links(),
            };
            body["id_token"] = json!(id_token.sign(&pair));
        }
        Ok(token_response(body))
    }

    /// A bearer token from `Authorization: Bearer` or `access_token`.
    fn bearer(&self) -> OAuthResult<Option<String>> {
        if let Some(value) = self
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            && let Some((scheme, token)) = value.trim().split_once(' ')
            && scheme.eq_ignore_ascii_case("bearer")
        {
            return Ok(Some(token.trim().to_string()).filter(|t| !t.is_empty()));
        }
        self.string("access_token")
    }
}

async fn token(request: OAuthRequest) -> Result<Response, OAuthError> {
    let grant_type = request.required("grant_type")?;
    match grant_type.as_str() {
        "authorization_code" => authorization_code(&request).await,
        "password" => password_grant(&request).await,
        "refresh_token" => refresh(&request).await,
        _ => Err(OAuthError::new(Kind::UnsupportedGrantType)),
    }
}

async fn authorization_code(request: &OAuthRequest) -> Result<Response, OAuthError> {
    let db = &request.tenant.db;
    let app = request.client().await?;
    let code = request.required("code")?;
    let grant = oauth::grant_for_code(db, app.id, &code).await?;
    let verifier = request.string("code_verifier")?;
    if grant.code_challenge.is_some() && verifier.is_none() {
        return Err(OAuthError::missing("code_verifier"));
    }
    let redirect_uri = request.required("redirect_uri")?;
    let redeemed = oauth::redeem_grant(db, &grant, &redirect_uri, verifier.as_deref()).await?;
    request
        .respond(&redeemed, &app, grant.nonce.as_deref())
        .await
}

async fn password_grant(request: &OAuthRequest) -> Result<Response, OAuthError> {
    let app = request.client().await?;
    let username = request.required("username")?;
    let password = request.required("password")?;
    let scopes = scopes::requested(request.string("scope")?.as_deref(), &app.scope_list())
        .ok_or_else(|| OAuthError::new(Kind::InvalidScope))?;
    if !request
        .settings
        .get(keys::PASSWORD_AUTHENTICATION_ENABLED_FOR_GIT)
    {
        return Err(OAuthError::new(Kind::InvalidGrant));
    }
    let issued = oauth::password_grant(
        &request.tenant.db,
        app.id,
        &username,
        &password,
        &scopes.join(" "),
    )
    .await?;
    Ok(token_response(token_body(
        &issued.secrets,
        &issued.row,
        false,
    )))
}

async fn refresh(request: &OAuthRequest) -> Result<Response, OAuthError> {
    let db = &request.tenant.db;
    let app = request.client().await?;
    let refresh_token = request.required("refresh_token")?;
    let old = oauth::token_for_refresh(db, app.id, &refresh_token).await?;
    let asked = request.string("scope")?;
    let redeemed = oauth::refresh(db, &old, asked.as_deref()).await?;
    request.respond(&redeemed, &app, None).await
}

/// OpenID Connect userinfo: the claims about the owner of a token with the `openid` scope.
async fn userinfo(request: OAuthRequest) -> Result<Response, OAuthError> {
    let db = &request.tenant.db;
    let unauthorized = || OAuthError::new(Kind::InvalidToken);
    let token = request.bearer()?.ok_or_else(unauthorized)?;
    let row = db
        .access_token_by_digest(&secrets::digest(&token))
        .await?
        .filter(|row| row.is_active(now_ms()))
        .ok_or_else(unauthorized)?;
    if !row.scopes.split_whitespace().any(|s| s == "openid") {
        return Err(OAuthError::new(Kind::InsufficientScope));
    }
    let user = db
        .user_by_id(row.user_id)
        .await?
        .filter(UserRow::can_use_api)
        .ok_or_else(unauthorized)?;
    Ok(token_response(oidc::user_claims(
        &user,
        &request.user_links(),
    )))
}

/// The tenant's ID-token signing keys (JWKS).
async fn keys(request: OAuthRequest) -> Result<Response, OAuthError> {
    let pair = oauth::signing_key(&request.tenant.db, &request.ctx.secret_key).await?;
    Ok(Json(oidc::key_set(&pair)).into_response())
}

/// The token-info failure GitLab answers: `invalid_token` with `state: unauthorized`.
fn invalid_token(description: &str) -> OAuthError {
    OAuthError::new(Kind::InvalidToken)
        .describe(description)
        .with_state(Some("unauthorized".into()))
}

async fn token_info(request: OAuthRequest) -> Result<Response, OAuthError> {
    let db = &request.tenant.db;
    let token = request
        .bearer()?
        .ok_or_else(|| invalid_token(Kind::InvalidToken.description()))?;
    let row = db
        .access_token_by_digest(&secrets::digest(&token))
        .await?
        .ok_or_else(|| invalid_token(Kind::InvalidToken.description()))?;
    if row.revoked_at.is_some() {
        return Err(invalid_token("The access token was revoked"));
    }
    if !row.is_active(now_ms()) {
        return Err(invalid_token("The access token expired"));
    }
    let app = db
        .application_by_id(row.application_id)
        .await?
        .ok_or_else(|| invalid_token(Kind::InvalidToken.description()))?;
    let scope: Vec<&str> = row.scopes.split_whitespace().collect();
    let expires = expires_in(&row);
    Ok(token_response(json!({
        "resource_owner_id": row.user_id,
        "scope": scope,
        "expires_in": expires,
        "application": { "uid": app.uid },
        "created_at": row.created_at / 1000,
        "scopes": scope,
        "expires_in_seconds": expires,
    })))
}

/// A token named by `token` (and optionally `token_type_hint`): as an access token or a
/// refresh token.
async fn named_token(request: &OAuthRequest) -> OAuthResult<Option<AccessTokenRow>> {
    let Some(token) = request.string("token")? else {
        return Ok(None);
    };
    let digest = secrets::digest(&token);
    let db = &request.tenant.db;
    let refresh_first = request.string("token_type_hint")?.as_deref() == Some("refresh_token");
    let (first, second) = if refresh_first {
        (
            db.access_token_by_refresh(&digest).await?,
            db.access_token_by_digest(&digest).await?,
        )
    } else {
        (
            db.access_token_by_digest(&digest).await?,
            db.access_token_by_refresh(&digest).await?,
        )
    };
    Ok(first.or(second))
}

/// RFC 7009: the client revokes one of its own tokens (access and refresh token together).
/// Unknown tokens are answered 200 as the RFC asks; another client's token is 403.
async fn revoke(request: OAuthRequest) -> Result<Response, OAuthError> {
    let app = request.client().await?;
    if let Some(row) = named_token(&request).await? {
        oauth::revoke_token(&request.tenant.db, app.id, &row).await?;
    }
    Ok(token_response(json!({})))
}

/// RFC 7662: an authenticated client (or a bearer of a valid token) asks whether a token is
/// active. Tokens of other applications are reported inactive.
async fn introspect(request: OAuthRequest) -> Result<Response, OAuthError> {
    let db = &request.tenant.db;
    let caller_app = match client::presented(&request.headers, &request.params)? {
        Some(credentials) => client::authenticate(db, &credentials).await?.id,
        None => {
            let bearer = request
                .bearer()?
                .ok_or_else(|| OAuthError::new(Kind::InvalidClient))?;
            db.access_token_by_digest(&secrets::digest(&bearer))
                .await?
                .filter(|row| row.is_active(now_ms()))
                .ok_or_else(|| OAuthError::new(Kind::InvalidToken))?
                .application_id
        }
    };
    let Some(row) = named_token(&request)
        .await?
        .filter(|row| row.is_active(now_ms()) && row.application_id == caller_app)
    else {
        return Ok(token_response(json!({ "active": false })));
    };
    let app = db.application_by_id(row.application_id).await?;
    let user = db.user_by_id(row.user_id).await?;
    let mut body = json!({
        "active": true,
        "scope": row.scopes,
        "client_id": app.map(|a| a.uid),
        "token_type": "Bearer",
        "exp": row.expires_at.map(|at| at / 1000),
        "iat": row.created_at / 1000,
        "sub": row.user_id.to_string(),
    });
    if let Some(user) = user {
        body["username"] = json!(user.username);
    }
    Ok(token_response(body))
}

/// RFC 8414 authorization server metadata (also served as the OpenID discovery document).
async fn metadata(request: OAuthRequest) -> Response {
    let base = &request.tenant.base_url;
    let scopes: Vec<&str> = scopes::all().collect();
    let mut grant_types = vec!["authorization_code", "password", "refresh_token"];
    let mut response_types = vec!["code"];
    if request.settings.get(keys::OAUTH_IMPLICIT_GRANT_ENABLED) {
        grant_types.push("implicit");
        response_types.push("token");
    }
    let body: Value = json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/oauth/authorize"),
        "token_endpoint": format!("{base}/oauth/token"),
        "revocation_endpoint": format!("{base}/oauth/revoke"),
        "introspection_endpoint": format!("{base}/oauth/introspect"),
        "scopes_supported": scopes,
        "response_types_supported": response_types,
        "response_modes_supported": ["query", "fragment"],
        "grant_types_supported": grant_types,
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "revocation_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "introspection_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "code_challenge_methods_supported": pkce::METHODS,
        "userinfo_endpoint": format!("{base}/oauth/userinfo"),
        "jwks_uri": format!("{base}/oauth/discovery/keys"),
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "claims_supported": ["iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "name",
            "nickname", "preferred_username", "email", "email_verified", "website", "profile",
            "picture"],
    });
    let mut response = Json(body).into_response();
    no_store(&mut response);
    response
}
