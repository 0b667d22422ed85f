//! `Api`: what every API handler receives. It takes the tenant `Host` names and its settings
//! (resolved once per request, `resolve.rs`), merges the parameters, and authenticates the
//! caller (which needs the merged parameters for `sudo` and `access_token`), so handlers start
//! from a known tenant, caller and parameter set.

use axum::body::Body;
use axum::extract::{FromRequest, MatchedPath, Request};
use axum::http::request::Parts;
use axum::http::{Method, header};

use super::error::{ApiError, ApiResult};
use super::params::{Audience, BodyLimits, FromParams, FromParamsIn, Params, is_multipart};
use super::resolve::RequestTenant;
use crate::auth::{self, Caller};
use crate::context::ApiContext;
use crate::policy::Scope;
use crate::request_origin::Origin;
use crate::settings::Settings;
use crate::store::TenantDb;
use crate::tenants::Tenant;
use crate::views::project::ProjectViews;
use crate::views::user::UserViews;
use std::sync::Arc;

pub struct Api {
    pub ctx: ApiContext,
    pub tenant: Tenant,
    pub caller: Option<Caller>,
    pub params: Params,
    pub method: Method,
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

    /// Who asks, and where, as the domain's rules read it.
    pub fn scope(&self) -> Scope<'_> {
        Scope {
            ctx: &self.ctx,
            tenant: &self.tenant,
            caller: self.caller.as_ref(),
            settings: &self.settings,
        }
    }

    /// The user representations for this tenant and its avatar setting.
    pub fn user_views(&self) -> UserViews<'_> {
        UserViews::of(&self.scope())
    }

    /// The project representations for this tenant (its URLs and SSH port).
    pub fn project_views(&self) -> ProjectViews<'_> {
        ProjectViews::of(&self.scope())
    }

    /// The endpoint's typed input, read from the merged parameters.
    pub fn input<T: FromParams>(&self) -> ApiResult<T> {
        T::from_params(&self.params)
    }

    /// The endpoint's typed input, when what it accepts depends on `context`.
    pub fn input_in<T: FromParamsIn<C>, C>(&self, context: C) -> ApiResult<T> {
        T::from_params_in(&self.params, context)
    }

    /// Who is asking: signed in or not, an administrator or not.
    pub fn audience(&self) -> Audience {
        Audience {
            signed_in: self.caller.is_some(),
            admin: self.caller.as_ref().is_some_and(|c| c.is_admin()),
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

/// What the OAuth endpoints read first: the tenant the Host header names, its settings, and
/// the query merged with the body (GET and HEAD bodies are not read).
pub async fn tenant_and_params(
    ctx: &ApiContext,
    parts: &mut Parts,
    body: Body,
) -> ApiResult<(Tenant, Arc<Settings>, Params)> {
    let resolved = RequestTenant::of(ctx, parts);
    resolved.origin()?;
    let params = read_params(ctx, parts, body, ctx.config.max_body_bytes).await?;
    let settings = resolved.settings(ctx).await?;
    Ok((resolved.tenant, settings, params))
}

/// The query merged with the body; multipart files are streamed to the data directory.
pub async fn read_params(
    ctx: &ApiContext,
    parts: &Parts,
    body: Body,
    multipart_limit: usize,
) -> ApiResult<Params> {
    let mut params = Params::from_query(parts.uri.query());
    if !matches!(parts.method, Method::GET | Method::HEAD) {
        let spool = super::upload::spool_dir(&ctx.config.storage.data_dir);
        let limits = BodyLimits {
            structured: ctx.config.max_body_bytes,
            multipart: multipart_limit,
            spool: Some(&spool),
        };
        params.merge_body(&parts.headers, body, limits).await?;
    }
    Ok(params)
}

impl FromRequest<ApiContext> for Api {
    type Rejection = ApiError;

    async fn from_request(request: Request, ctx: &ApiContext) -> Result<Self, Self::Rejection> {
        let (mut parts, body) = request.into_parts();
        let resolved = RequestTenant::of(ctx, &mut parts);
        // Uploads are for callers who authenticate in the head: only a valid token there
        // (checked before a byte of the body is read) opens `--max-upload-bytes`; anyone
        // else's multipart body gets the small limit.
        resolved.origin()?;
        // Looked up only for a multipart body: for any other, the limit does not apply, and
        // `authenticate` below finds the token anyway.
        let authenticated = is_multipart(&parts.headers) && {
            let query = Params::from_query(parts.uri.query());
            auth::token_owner(&resolved.tenant.db, &ctx.tokens, &parts.headers, &query)
                .await?
                .is_some()
        };
        let multipart_limit = if authenticated {
            ctx.config.max_upload_bytes
        } else {
            ctx.config.max_upload_bytes.min(ctx.config.max_body_bytes)
        };
        let params = read_params(ctx, &parts, body, multipart_limit).await?;
        let settings = resolved.settings(ctx).await?;
        let (origin, tenant) = resolved.into_origin_and_tenant()?;
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
        let client_ip = crate::request_origin::client_ip(&parts, &ctx.config.trusted_proxies);
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
            method: parts.method,
            origin,
            settings,
            client_ip,
            user_agent,
        })
    }
}
