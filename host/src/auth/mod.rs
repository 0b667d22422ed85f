//! Who is calling: personal access tokens (header, bearer or query), scope checks per route,
//! and `sudo`. Errors follow GitLab's API guard: unknown token 401, expired or revoked 401 in
//! the OAuth bearer shape, missing scope 403 `insufficient_scope`.

pub mod cache;
pub mod git;
pub mod oauth;
pub mod password;
pub mod secrets;
pub mod ssh;
pub mod token_scopes;

use std::sync::Arc;

use axum::http::{HeaderMap, Method};

use crate::http::error::{ApiError, ApiResult};
use crate::http::params::Params;
use crate::model::user_admin::IdentityRow;
use crate::model::users::UserRow;
use crate::services;
use crate::settings::Settings;
use crate::settings::keys;
use crate::store::TenantDb;

#[derive(Debug, Clone)]
pub struct Caller {
    /// The user the request acts as (the sudo target when sudo is used).
    pub user: Arc<UserRow>,
    pub token_id: i64,
    /// The token is an OAuth access token (`token_id` is not a personal access token's id).
    pub oauth: bool,
    /// The administrator behind a sudo request.
    pub sudo_by: Option<i64>,
    /// Whether the instance's admin mode requires the `admin_mode` scope for admin rights.
    admin_mode: bool,
    /// The token as the cache holds it, with what is cached about its owner.
    token: Arc<cache::KnownToken>,
}

impl Caller {
    /// The caller a known token makes, acting as its owner (no sudo yet).
    fn for_token(token: Arc<cache::KnownToken>, settings: &Settings) -> Caller {
        Caller {
            user: token.user.clone(),
            token_id: token.id,
            oauth: token.oauth,
            sudo_by: None,
            admin_mode: settings.get(keys::ADMIN_MODE),
            token,
        }
    }

    /// The id of the personal (or impersonation) access token the request carries.
    pub fn personal_token_id(&self) -> Option<i64> {
        (!self.oauth).then_some(self.token_id)
    }

    /// Administrator rights for this request: an admin user, and with admin mode on, a token
    /// carrying the `admin_mode` scope.
    pub fn is_admin(&self) -> bool {
        self.user.is_admin && (!self.admin_mode || self.has_scope("admin_mode"))
    }

    pub fn has_scope(&self, scope: &str) -> bool {
        self.token.scope_list().any(|s| s == scope)
    }

    /// The identities (external providers) of the user the request acts as. `GET /user` and
    /// external authorization need them on every request, so the token's owner's are read once
    /// per cache entry (any write drops it, as for the user row itself); a sudo target's are
    /// read each time.
    pub async fn identities(&self, db: &TenantDb) -> crate::store::Result<Arc<[IdentityRow]>> {
        let own = self.sudo_by.is_none();
        if own && let Some(cached) = self.token.owner_identities.get() {
            return Ok(cached.clone());
        }
        let rows: Arc<[IdentityRow]> = db.identities_of(&[self.user.id]).await?.into();
        if own {
            // A concurrent request may have filled it first; both read the same rows.
            let _ = self.token.owner_identities.set(rows.clone());
        }
        Ok(rows)
    }
}

pub struct RequestAuth<'a> {
    pub headers: &'a HeaderMap,
    pub method: &'a Method,
    /// The matched route template, e.g. `/api/v4/users/{id}`.
    pub route: &'a str,
    pub params: &'a Params,
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// The token from `PRIVATE-TOKEN`, `Authorization: Bearer`, or `private_token`/`access_token`.
fn presented_token(request: &RequestAuth<'_>) -> ApiResult<Option<String>> {
    presented_secret(request.headers, request.params)
}

/// The token a request carries in its headers or its parameters (query and body).
pub fn presented_secret(headers: &HeaderMap, params: &Params) -> ApiResult<Option<String>> {
    if let Some(token) = header(headers, "private-token") {
        return Ok(Some(token.to_string()));
    }
    if let Some(value) = header(headers, "authorization")
        && let Some((scheme, token)) = value.split_once(' ')
        && scheme.eq_ignore_ascii_case("bearer")
    {
        return Ok(Some(token.trim().to_string()));
    }
    for name in ["private_token", "access_token"] {
        if let Some(token) = params.string(name)?.filter(|t| !t.is_empty()) {
            return Ok(Some(token));
        }
    }
    Ok(None)
}

/// Routes under `/users` that GitLab's Projects API declares, not its Users API: `read_user`
/// reads profiles, never project lists, so these take `read_api` or `api` like other reads.
const PROJECT_LISTS_UNDER_USERS: &[&str] = &[
    "/api/v4/users/{id}/projects",
    "/api/v4/users/{id}/starred_projects",
];

/// The scopes that may call this route with this method, as GitLab's API declares them.
fn allowed_scopes(method: &Method, route: &str) -> &'static [&'static str] {
    let read = matches!(*method, Method::GET | Method::HEAD);
    let user_route = (route.starts_with("/api/v4/user")
        && !PROJECT_LISTS_UNDER_USERS.contains(&route))
        || route == "/api/v4/version"
        || route == "/api/v4/metadata"
        || route.starts_with("/api/v4/personal_access_tokens/self");
    match (read, user_route) {
        (true, true) => &["api", "read_api", "read_user"],
        (true, false) => &["api", "read_api"],
        (false, _) => &["api"],
    }
}

pub async fn authenticate(
    db: &TenantDb,
    tokens: &cache::TokenCache,
    settings: &Settings,
    request: RequestAuth<'_>,
) -> ApiResult<Option<Caller>> {
    let sudo = match header(request.headers, "sudo") {
        Some(value) => Some(value.to_string()),
        None => request.params.string("sudo")?.filter(|s| !s.is_empty()),
    };
    let Some(secret) = presented_token(&request)? else {
        return if sudo.is_some() {
            Err(ApiError::Unauthorized)
        } else {
            Ok(None)
        };
    };
    let Some(found) = tokens.lookup(db, &secrets::digest(&secret)).await? else {
        return Err(ApiError::Unauthorized);
    };
    if found.revoked {
        return Err(ApiError::InvalidToken("Token has been revoked."));
    }
    if found.is_expired() {
        return Err(ApiError::InvalidToken("Token has expired."));
    }
    // A blocked or deactivated user is treated as if no valid token had been given.
    if !found.user.can_use_api() {
        return Err(ApiError::Unauthorized);
    }
    let allowed = allowed_scopes(request.method, request.route);
    if !found.scope_list().any(|s| allowed.contains(&s)) {
        return Err(ApiError::InsufficientScope(allowed[0]));
    }
    services::tokens::record_use(db, &found).await?;
    let mut caller = Caller::for_token(found.clone(), settings);
    if let Some(target) = sudo {
        if !caller.is_admin() {
            return Err(ApiError::forbidden_because("Must be admin to use sudo"));
        }
        if !caller.has_scope("sudo") {
            return Err(ApiError::InsufficientScope("sudo"));
        }
        let Some(user) = db.user_by_id_or_username(&target).await? else {
            return Err(ApiError::NotFoundMessage(format!(
                "404 User with ID or username '{target}' Not Found"
            )));
        };
        caller.sudo_by = Some(caller.user.id);
        caller.user = Arc::new(user);
    }
    Ok(Some(caller))
}

/// The user whose token a request carries, as the rate limiter sees it before the request is
/// routed: a token in `PRIVATE-TOKEN`, `Authorization: Bearer` or the parameters
/// (`private_token`, `access_token`, from the query or the body the limiter read) that exists,
/// is neither revoked nor expired, and whose owner may use the API. Anything else is an
/// unauthenticated request, as for GitLab's Rack::Attack. `sudo` is not applied: throttles
/// count the token's owner. Lookups share the token cache with [`authenticate`], so the
/// extractor that runs next finds the token cached.
pub async fn token_owner(
    db: &TenantDb,
    tokens: &cache::TokenCache,
    headers: &HeaderMap,
    params: &Params,
) -> crate::store::Result<Option<i64>> {
    let Ok(Some(secret)) = presented_secret(headers, params) else {
        return Ok(None);
    };
    let Some(found) = tokens.lookup(db, &secrets::digest(&secret)).await? else {
        return Ok(None);
    };
    if found.revoked || found.is_expired() || !found.user.can_use_api() {
        return Ok(None);
    }
    Ok(Some(found.user.id))
}
