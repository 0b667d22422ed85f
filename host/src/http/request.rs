//! `Api`: what every API handler receives. It resolves the tenant from `Host`, merges the
//! parameters, and authenticates the caller (which needs the merged parameters for `sudo`
//! and `access_token`), so handlers start from a known tenant, caller and parameter set.

use axum::body::Body;
use axum::extract::{FromRequest, MatchedPath, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, header};

use super::error::{ApiError, ApiResult};
use super::params::{BodyLimits, Params};
use crate::auth::{self, Caller};
use crate::context::ApiContext;
use crate::settings::Settings;
use crate::settings::keys;
use crate::store::TenantDb;
use crate::views::user::UserViews;
use std::sync::Arc;

/// The tenant a request belongs to.
#[derive(Clone)]
pub struct Tenant {
    pub id: i64,
    pub db: TenantDb,
    /// Where this tenant's web pages live: the external URL for the default tenant when one is
    /// configured, otherwise the scheme and host the request came in on.
    pub base_url: String,
}

/// The scheme, host, path and query of the request, for building links back to it.
#[derive(Debug, Clone)]
pub struct Origin {
    pub scheme: String,
    pub host: String,
    pub path: String,
    pub query: Vec<(String, String)>,
}

impl Origin {
    pub fn from_parts(headers: &HeaderMap, uri: &axum::http::Uri) -> Origin {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .or_else(|| uri.authority().map(|a| a.as_str()))
            .unwrap_or("localhost")
            .to_string();
        let scheme = headers
            .get("x-forwarded-proto")
            .and_then(|h| h.to_str().ok())
            .filter(|s| *s == "https" || *s == "http")
            .unwrap_or("http")
            .to_string();
        let query = uri
            .query()
            .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
            .unwrap_or_default();
        Origin {
            scheme,
            host,
            path: uri.path().to_string(),
            query,
        }
    }

    pub fn base_url(&self) -> String {
        format!("{}://{}", self.scheme, self.host)
    }

    /// The host name without port, lower-cased: the key tenants are found by.
    pub fn host_name(&self) -> String {
        host_name_of(&self.host)
    }

    pub fn param(&self, name: &str) -> Option<String> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }

    /// This request's URL with `remove` dropped from the query and `set` appended.
    /// Credentials in the query (`access_token`, `private_token`) are never copied into links.
    pub fn link(&self, set: &[(&str, String)], remove: &[&str]) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        for (key, value) in &self.query {
            if !remove.contains(&key.as_str()) && key != "access_token" && key != "private_token" {
                query.append_pair(key, value);
            }
        }
        for (key, value) in set {
            query.append_pair(key, value);
        }
        format!("{}{}?{}", self.base_url(), self.path, query.finish())
    }
}

/// `host[:port]` without the port, lower-cased.
fn host_name_of(host: &str) -> String {
    let name = if host.starts_with('[') {
        host.split_inclusive(']').next().unwrap_or(host)
    } else {
        host.rsplit_once(':').map_or(host, |(name, _)| name)
    };
    name.to_ascii_lowercase()
}

/// The tenant host name of a request (as [`Origin::host_name`]) without parsing the rest of
/// it: what middleware needs to find the tenant cheaply.
pub fn request_host_name(headers: &HeaderMap, uri: &axum::http::Uri) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| uri.authority().map(|a| a.as_str()))
        .unwrap_or("localhost");
    host_name_of(host)
}

pub struct Api {
    pub ctx: ApiContext,
    pub tenant: Tenant,
    pub caller: Option<Caller>,
    pub params: Params,
    pub origin: Origin,
    pub settings: Arc<Settings>,
    /// The connection's peer and `User-Agent` (the spam check and its log record them).
    pub client_ip: std::net::IpAddr,
    pub user_agent: Option<String>,
}

impl Api {
    pub fn db(&self) -> &TenantDb {
        &self.tenant.db
    }

    /// The user representations for this tenant and its avatar setting.
    pub fn user_views(&self) -> UserViews<'_> {
        UserViews {
            base_url: &self.tenant.base_url,
            avatar_service: self.settings.get(keys::AVATAR_SERVICE_ENABLED),
        }
    }

    /// The authenticated caller, or 401.
    pub fn user(&self) -> ApiResult<&Caller> {
        self.caller.as_ref().ok_or(ApiError::Unauthorized)
    }

    /// An authenticated administrator, or 401/403.
    pub fn admin(&self) -> ApiResult<&Caller> {
        let caller = self.user()?;
        if caller.is_admin() {
            Ok(caller)
        } else {
            Err(ApiError::forbidden())
        }
    }
}

/// What every extractor (API, OAuth endpoints, web pages) reads first: the tenant the Host
/// header names, and the query merged with the body (GET and HEAD bodies are not read).
/// `multipart_limit` caps multipart bodies; other bodies get `max_body_bytes`.
pub async fn tenant_and_params(
    ctx: &ApiContext,
    parts: &Parts,
    body: Body,
    multipart_limit: usize,
) -> ApiResult<(Origin, Tenant, Params)> {
    let origin = Origin::from_parts(&parts.headers, &parts.uri);
    let tenant = ctx.tenant_for(&origin);
    let mut params = Params::from_query(parts.uri.query());
    if !matches!(parts.method, Method::GET | Method::HEAD) {
        let limits = BodyLimits {
            structured: ctx.config.max_body_bytes,
            multipart: multipart_limit,
        };
        params.merge_body(&parts.headers, body, limits).await?;
    }
    Ok((origin, tenant, params))
}

impl FromRequest<ApiContext> for Api {
    type Rejection = ApiError;

    async fn from_request(request: Request, ctx: &ApiContext) -> Result<Self, Self::Rejection> {
        let (parts, body) = request.into_parts();
        let (origin, tenant, params) =
            tenant_and_params(ctx, &parts, body, ctx.config.max_upload_bytes).await?;
        let settings = ctx.settings.get(&tenant.db).await?;
        let route = parts
            .extensions
            .get::<MatchedPath>()
            .map(|m| m.as_str())
            .unwrap_or("");
        let request = auth::RequestAuth {
            headers: &parts.headers,
            method: &parts.method,
            route,
            params: &params,
        };
        let caller = auth::authenticate(&tenant.db, &ctx.tokens, &settings, request).await?;
        let client_ip = crate::ratelimit::client_ip(&parts);
        let user_agent = parts
            .headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        Ok(Api {
            ctx: ctx.clone(),
            tenant,
            caller,
            params,
            origin,
            settings,
            client_ip,
            user_agent,
        })
    }
}
