//! The request's tenant, resolved once: the admission middleware finds the tenant the `Host`
//! header names (in memory, before the fair share, which counts by tenant) and then, within
//! the request limits (a slot and the timeout, since it may query the database), reads its
//! settings. It leaves both in the request's extensions for the rate limiter and the
//! extractors (API, OAuth, web pages, git over HTTP), which would otherwise each resolve and
//! read them again.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::request::Parts;
use axum::http::{HeaderMap, Uri};
use axum::response::{IntoResponse, Response};

use super::error::{ApiError, ApiResult};
use crate::context::ApiContext;
use crate::request_origin::{Origin, request_host_name};
use crate::settings::Settings;
use crate::tenants::Tenant;

/// What the middleware resolved for one request.
#[derive(Clone)]
pub struct RequestTenant {
    /// `None` when the host is malformed: such a request is answered 400 by whatever reads
    /// its origin, and only counted (fair share, rate limits) under the tenant its host
    /// name falls back to.
    origin: Option<Origin>,
    pub tenant: Tenant,
    /// `None` until read, or when reading them failed: the reader asks again and answers the
    /// error its way.
    settings: Option<Arc<Settings>>,
}

impl RequestTenant {
    fn resolve(ctx: &ApiContext, headers: &HeaderMap, uri: &Uri) -> RequestTenant {
        let origin = Origin::from_parts(headers, uri).ok();
        let tenant = match &origin {
            Some(origin) => ctx.tenant_for(origin),
            None => {
                let id = ctx.tenants.resolve(&request_host_name(headers, uri));
                Tenant {
                    id,
                    db: ctx.db.tenant(id),
                    base_url: String::new(),
                }
            }
        };
        RequestTenant {
            origin,
            tenant,
            settings: None,
        }
    }

    /// The middleware's answer for this request, taken out of its extensions (or resolved
    /// here, for a request that did not pass through it).
    pub fn of(ctx: &ApiContext, parts: &mut Parts) -> RequestTenant {
        match parts.extensions.remove::<RequestTenant>() {
            Some(resolved) => resolved,
            None => RequestTenant::resolve(ctx, &parts.headers, &parts.uri),
        }
    }

    /// The middleware's answer, left in place for the layers further in.
    pub fn peek(request: &Request) -> Option<&RequestTenant> {
        request.extensions().get::<RequestTenant>()
    }

    /// The request's origin, or 400 for a malformed host.
    pub fn origin(&self) -> ApiResult<&Origin> {
        self.origin.as_ref().ok_or_else(malformed_host)
    }

    /// The origin and tenant, or 400 for a malformed host.
    pub fn into_origin_and_tenant(self) -> ApiResult<(Origin, Tenant)> {
        match self.origin {
            Some(origin) => Ok((origin, self.tenant)),
            None => Err(malformed_host()),
        }
    }

    /// The tenant's settings, read here only when the middleware could not read them.
    pub async fn settings(&self, ctx: &ApiContext) -> crate::store::Result<Arc<Settings>> {
        match &self.settings {
            Some(settings) => Ok(settings.clone()),
            None => ctx.settings.get(&self.tenant.db).await,
        }
    }
}

fn malformed_host() -> ApiError {
    ApiError::BadRequest("Host header is malformed".into())
}

/// A step of `http::admit`: leaves the request's tenant in its extensions. Health checks are
/// left alone: they name no tenant and must answer while the database does not.
/// The answer when the tenant is suspended (monitoring paths are not the tenant's, and stay
/// open).
pub fn resolve(ctx: &ApiContext, request: &mut Request) -> Option<Response> {
    if crate::ratelimit::rules::classify(request.uri().path())
        != crate::ratelimit::rules::PathClass::Health
    {
        let resolved = RequestTenant::resolve(ctx, request.headers(), request.uri());
        if ctx.tenants.is_suspended(resolved.tenant.id) {
            return Some(ApiError::forbidden_because(SUSPENDED).into_response());
        }
        request.extensions_mut().insert(resolved);
    }
    None
}

/// Why a suspended tenant's requests are refused.
const SUSPENDED: &str = "This instance has been suspended by its operator";

/// A step of `http::admit`, within the request limits: reads the settings of the tenant
/// [`resolve`] left, once for every reader after it.
pub async fn read_settings(ctx: &ApiContext, request: &mut Request) {
    if let Some(resolved) = request.extensions_mut().get_mut::<RequestTenant>() {
        resolved.settings = ctx.settings.get(&resolved.tenant.db).await.ok();
    }
}
