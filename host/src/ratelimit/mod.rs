//! Rate limits: GitLab's `throttle_*` groups (Rack::Attack), `issues_create_limit`,
//! `search_rate_limit(_unauthenticated)`, `raw_blob_request_limit` and a fixed limit on blame
//! requests (`rules::BLAME_LIMIT`), enforced by one axum
//! middleware ([`enforce`]) before a request reaches its handler.
//!
//! Why a middleware rather than the `Api` extractor: the throttles cover requests no handler
//! extracts `Api` for (web paths, unknown routes answered 404, health checks excluded), GitLab
//! checks them before routing, and a rejected request should not have its body read first. The
//! price is a second look at the token, kept small: the limiter takes the tenant and settings
//! resolved once for the request (`http::resolve`), decides from the path and settings
//! alone whether any rule could apply (by default only requests with `search=`, raw
//! file paths and blames do), and only then looks the token up through the shared
//! token cache — which the extractor then hits, so a request is still authenticated against
//! the database at most once. The body is read only when the head carries no token and a
//! per-user rule applies, since GitLab also takes a token from the body.
//!
//! `rules` says which limits a request falls under, `counter` counts (in memory on SQLite, one
//! upsert per request on PostgreSQL), `response` builds the 429.

pub mod counter;
pub mod response;
pub mod rules;

use std::net::IpAddr;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{MatchedPath, Request};
use axum::http::request::Parts;
use axum::http::{HeaderName, Method};
use axum::response::{IntoResponse, Response};

use crate::context::ApiContext;
use crate::http::params::{BodyLimits, Params, read_limited};
use crate::http::resolve::RequestTenant;
use crate::request_origin::client_ip;
use crate::settings::keys;
use crate::store::rate_limits::CounterHit;
use crate::store::{Db, TenantDb};
pub use counter::Counters;
use counter::{CounterError, Window};
use rules::{RequestFacts, Rule, Who};

/// How often finished windows are deleted.
pub const PURGE_INTERVAL: Duration = Duration::from_secs(60);

pub struct Limiter {
    counters: Counters,
    /// Requests carrying this header with the value `1` skip every limit (GitLab's
    /// `GITLAB_THROTTLE_BYPASS_HEADER`; only safe behind a proxy that strips it from clients).
    bypass_header: Option<HeaderName>,
}

impl Limiter {
    pub fn new(counters: Counters, bypass_header: Option<&str>) -> anyhow::Result<Limiter> {
        let bypass_header = bypass_header
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .map(|h| {
                HeaderName::from_bytes(h.to_ascii_lowercase().as_bytes())
                    .map_err(|_| anyhow::anyhow!("invalid throttle bypass header name {h:?}"))
            })
            .transpose()?;
        Ok(Limiter {
            counters,
            bypass_header,
        })
    }

    pub async fn purge(&self, db: &Db) -> crate::store::Result<u64> {
        self.counters.purge(db, unix_now()).await
    }
}

/// Failed git Basic authentications from one address within [`GIT_AUTH_FIND_TIME`] seconds that
/// ban it, and for how long: GitLab's `rack_attack.git_basic_auth` defaults (`maxretry`,
/// `findtime`, `bantime`).
const GIT_AUTH_MAX_RETRY: i64 = 10;
const GIT_AUTH_FIND_TIME: i64 = 60;
const GIT_AUTH_BAN_TIME: i64 = 3600;

impl Limiter {
    /// Whether git over HTTP is refused to `ip` for its failed authentications. A ban that
    /// cannot be read is taken as none, as a request that cannot be counted passes.
    pub async fn git_auth_banned(&self, db: &TenantDb, ip: IpAddr) -> bool {
        let key = format!("git_basic_auth:ban:{ip}");
        self.counters
            .banned(db, &key, unix_now())
            .await
            .unwrap_or_else(|error| {
                tracing::warn!(%error, "rate limiter: could not read a git authentication ban");
                false
            })
    }

    /// Counts a failed git Basic authentication from `ip`; the one that reaches the limit
    /// within the window bans the address.
    pub async fn git_auth_failed(&self, db: &TenantDb, ip: IpAddr) {
        if let Err(error) = self.count_git_auth_failure(db, ip).await {
            tracing::warn!(%error, "rate limiter: could not count a failed git authentication");
        }
    }

    async fn count_git_auth_failure(&self, db: &TenantDb, ip: IpAddr) -> Result<(), CounterError> {
        let now = unix_now();
        let window = Window::at(now, GIT_AUTH_FIND_TIME);
        let hit = CounterHit {
            key: format!("git_basic_auth:failed:{ip}"),
            window_start: window.start,
            expires_at: window.reset,
        };
        let failures = self.counters.count(db, &[hit]).await?;
        if failures.first().is_some_and(|n| *n >= GIT_AUTH_MAX_RETRY) {
            let key = format!("git_basic_auth:ban:{ip}");
            self.counters.ban(db, &key, now + GIT_AUTH_BAN_TIME).await?;
        }
        Ok(())
    }
}

fn unix_now() -> i64 {
    crate::model::now_ms().div_euclid(1000)
}

/// The key of a counter: rule, period (a changed period starts fresh counters) and subject.
pub fn counter_key(rule: &Rule, subject: &str) -> String {
    format!("{}:{}:{}", rule.name, rule.period, subject)
}

/// A step of `http::admit`: a limited request is answered 429 here; others go on unchanged
/// (with their body, when the limiter had to read it to find a token).
pub async fn enforce(ctx: &ApiContext, request: Request) -> Result<Request, Response> {
    let (parts, body) = request.into_parts();
    let body = check(ctx, &parts, body).await?;
    Ok(Request::from_parts(parts, body))
}

/// The caller's user id, from a token in the headers, the query or, failing those, the body
/// (GitLab takes `private_token` and `access_token` from any of them, so a limiter that
/// ignored the body would let a token there bypass every per-user limit and count the
/// caller per IP instead). The body is read only for a request that has no token in its head
/// and falls under a per-user rule, up to `--max-body-bytes` (413 beyond), and is handed on.
async fn caller_of(
    ctx: &ApiContext,
    db: &TenantDb,
    parts: &Parts,
    body: Body,
) -> Result<(Option<i64>, Body), Response> {
    let mut params = Params::from_query(parts.uri.query());
    let in_head = matches!(
        crate::auth::presented_secret(&parts.headers, &params),
        Ok(Some(_))
    );
    let body = if in_head || matches!(parts.method, Method::GET | Method::HEAD) {
        body
    } else {
        let bytes = read_limited(body, ctx.config.max_body_bytes)
            .await
            .map_err(IntoResponse::into_response)?;
        let limits = BodyLimits {
            structured: bytes.len(),
            multipart: bytes.len(),
            spool: None,
        };
        // A body that does not parse carries no token; the handler answers its 400.
        let _ = params
            .merge_body(&parts.headers, Body::from(bytes.clone()), limits)
            .await;
        Body::from(bytes)
    };
    match crate::auth::token_owner(db, &ctx.tokens, &parts.headers, &params).await {
        Ok(user) => Ok((user, body)),
        Err(error) => {
            tracing::warn!(%error, "rate limiter: could not look the token up");
            Ok((None, body))
        }
    }
}

/// Counts the request against every rule it falls under; the 429 of the first rule (in
/// [`rules::candidates`] order) it exceeds, if any. A request counts against all its rules in
/// one step (one statement on PostgreSQL), also when one of them rejects it. Storage errors
/// let the request through (logged): the limiter never takes the API down with it.
async fn check(ctx: &ApiContext, parts: &Parts, body: Body) -> Result<Body, Response> {
    let path = parts.uri.path();
    if rules::classify(path) == rules::PathClass::Health {
        return Ok(body);
    }
    if let Some(name) = &ctx.limiter.bypass_header
        && parts
            .headers
            .get(name)
            .is_some_and(|v| v.as_bytes() == b"1")
    {
        return Ok(body);
    }
    let Some(resolved) = parts.extensions.get::<RequestTenant>() else {
        return Ok(body);
    };
    let db = &resolved.tenant.db;
    let settings = match resolved.settings(ctx).await {
        Ok(settings) => settings,
        Err(error) => {
            tracing::warn!(%error, "rate limiter: could not read the settings");
            return Ok(body);
        }
    };
    let facts = RequestFacts {
        method: &parts.method,
        path,
        route: parts
            .extensions
            .get::<MatchedPath>()
            .map(MatchedPath::as_str),
        query: parts.uri.query(),
    };
    let mut candidates = rules::candidates(&settings, &facts);
    if let Some(limit) = ctx
        .tenants
        .quotas(resolved.tenant.id)
        .max_requests_per_second
    {
        candidates.insert(0, rules::tenant_quota(limit));
    }
    if candidates.is_empty() {
        return Ok(body);
    }
    let (user, body) = if candidates
        .iter()
        .any(|r| !matches!(r.who, Who::PerPath | Who::Tenant))
    {
        caller_of(ctx, db, parts, body).await?
    } else {
        (None, body)
    };
    let ip = client_ip(parts, &ctx.config.trusted_proxies);
    let now = unix_now();
    let (applying, hits): (Vec<Rule>, Vec<CounterHit>) = candidates
        .into_iter()
        .filter(|rule| rules::applies(rule, user.is_some()))
        .map(|rule| {
            let subject = match (rule.who, user) {
                (Who::PerPath, _) => format!("path:{path}"),
                (Who::Tenant, _) => "tenant".to_string(),
                (_, Some(id)) => format!("user:{id}"),
                (_, None) => format!("ip:{ip}"),
            };
            let window = Window::at(now, rule.period);
            let hit = CounterHit {
                key: counter_key(&rule, &subject),
                window_start: window.start,
                expires_at: window.reset,
            };
            (rule, hit)
        })
        .unzip();
    if hits.is_empty() {
        return Ok(body);
    }
    let counts = match ctx.limiter.counters.count(db, &hits).await {
        Ok(counts) => counts,
        Err(error) => {
            tracing::warn!(%error, "rate limiter: could not count the request");
            return Ok(body);
        }
    };
    let Some((rule, observed)) = applying
        .iter()
        .zip(counts)
        .find(|(rule, count)| *count > rule.limit)
    else {
        return Ok(body);
    };
    metrics::counter!("rate_limited_requests_total", "rule" => rule.name).increment(1);
    Err(response::throttled(
        rule,
        observed,
        now,
        &settings
            .get(keys::RATE_LIMITING_RESPONSE_TEXT)
            .unwrap_or_default(),
    ))
}

/// Deletes finished windows every [`PURGE_INTERVAL`] (memory on SQLite, the table on
/// PostgreSQL, where every process runs it; deleting the same rows twice is harmless).
pub async fn purge_loop(ctx: ApiContext) {
    let mut interval = tokio::time::interval(PURGE_INTERVAL);
    loop {
        interval.tick().await;
        if let Err(error) = ctx.limiter.purge(&ctx.db).await {
            tracing::warn!(%error, "could not purge rate limit counters");
        }
    }
}
