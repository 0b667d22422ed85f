//! Server-rendered HTML pages: sign in and out, the OAuth applications a user registers, the
//! OAuth consent page, and the administrators' console under `/admin` (`admin/`). Plain HTML
//! forms, no JavaScript. Every page and redirect from here
//! carries `Referrer-Policy: no-referrer` and `X-Frame-Options: DENY`, and is never cached.

mod admin;
mod applications;
mod authorize;
mod layout;
mod session;
mod sign_in;

use std::net::SocketAddr;
use std::sync::Arc;

use crate::http::routes::Router;
use axum::extract::{ConnectInfo, FromRequest, Request};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tower_http::set_header::SetResponseHeaderLayer;

use crate::context::ApiContext;
use crate::http::error::ApiError;
use crate::http::params::Params;
use crate::http::request::read_params;
use crate::http::resolve::RequestTenant;
use crate::request_origin::Origin;
use crate::request_origin::client_ip;
use crate::settings::Settings;
use crate::tenants::Tenant;
use session::Session;

pub fn router() -> Router<ApiContext> {
    Router::new()
        .merge(sign_in::router())
        .merge(admin::router())
        .merge(applications::router())
        .merge(authorize::router())
        .layer(SetResponseHeaderLayer::overriding(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::X_FRAME_OPTIONS,
            HeaderValue::from_static("DENY"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::CACHE_CONTROL,
            HeaderValue::from_static("no-store"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(
                "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
            ),
        ))
}

/// Room for a multipart body's boundaries and other fields besides the file itself.
const MULTIPART_ENVELOPE: usize = 64 * 1024;

/// What a page handler receives: the tenant, its settings, query and form parameters, the
/// cookies, and the signed-in session if there is one.
pub struct Web {
    pub ctx: ApiContext,
    pub tenant: Tenant,
    pub settings: Arc<Settings>,
    pub params: Params,
    pub method: Method,
    pub origin: Origin,
    pub headers: HeaderMap,
    pub session: Option<Session>,
    /// The client's address, recorded at sign-in.
    pub peer_ip: Option<String>,
}

impl FromRequest<ApiContext> for Web {
    type Rejection = WebError;

    async fn from_request(request: Request, ctx: &ApiContext) -> Result<Self, Self::Rejection> {
        let (mut parts, body) = request.into_parts();
        let unreadable =
            |error: ApiError| WebError::new(error.status(), "The request could not be read.");
        let resolved = RequestTenant::of(ctx, &mut parts);
        resolved.origin().map_err(unreadable)?;
        let settings = resolved.settings(ctx).await?;
        let (origin, tenant) = resolved.into_origin_and_tenant().map_err(unreadable)?;
        // A signed-in browser may upload a plugin (the admin console checks the size and who
        // may); the session is checked before the body is read, and without one a multipart
        // body gets the small limit.
        let session = Session::load(&tenant.db, &parts.headers).await?;
        let multipart_limit = if session.is_some() {
            (ctx.config.plugin_max_upload_bytes + MULTIPART_ENVELOPE).max(ctx.config.max_body_bytes)
        } else {
            ctx.config.max_body_bytes
        };
        let params = read_params(ctx, &parts, body, multipart_limit)
            .await
            .map_err(unreadable)?;
        let peer_ip = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|_| client_ip(&parts, &ctx.config.trusted_proxies).to_string());
        Ok(Web {
            ctx: ctx.clone(),
            tenant,
            settings,
            params,
            method: parts.method,
            origin,
            headers: parts.headers,
            session,
            peer_ip,
        })
    }
}

impl Web {
    /// A form or query value ("" when absent or not a string).
    pub fn field(&self, name: &str) -> String {
        self.params.string(name).ok().flatten().unwrap_or_default()
    }

    /// A field of a nested form object such as `user[login]`.
    pub fn nested(&self, object: &str, name: &str) -> Option<&serde_json::Value> {
        self.params.object(object).ok().flatten()?.get(name)
    }

    /// Whether cookies must be `Secure`: the tenant's external URL is https.
    pub fn secure(&self) -> bool {
        self.tenant.base_url.starts_with("https://")
    }

    /// The signed-in session, or a redirect to the sign-in page that comes back here.
    pub fn require_session(&self) -> Result<&Session, WebError> {
        self.session.as_ref().ok_or_else(|| {
            let mut back = self.origin.path.clone();
            if self.method == Method::GET && !self.origin.query.is_empty() {
                let query = form_urlencoded::Serializer::new(String::new())
                    .extend_pairs(self.origin.query.iter())
                    .finish();
                back = format!("{back}?{query}");
            }
            let target = form_urlencoded::Serializer::new(String::new())
                .append_pair("redirect_to", &back)
                .finish();
            WebError::Redirect(format!("/users/sign_in?{target}"))
        })
    }

    /// The form's `authenticity_token` must be the one bound to this session (or, before
    /// sign-in, to the anonymous CSRF cookie).
    pub fn check_csrf(&self) -> Result<(), WebError> {
        let sent = self.field("authenticity_token");
        if session::csrf_matches(self.session.as_ref(), &self.headers, &sent) {
            Ok(())
        } else {
            Err(WebError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Your session has expired or the form's authenticity token is invalid. Go back, reload the page and try again.",
            ))
        }
    }
}

/// A page-level failure: an error page, or a redirect (to the sign-in page).
#[derive(Debug)]
pub enum WebError {
    Page(StatusCode, String),
    Redirect(String),
}

impl WebError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        WebError::Page(status, message.into())
    }

    pub fn not_found() -> Self {
        WebError::new(StatusCode::NOT_FOUND, "The page could not be found.")
    }
}

impl From<crate::store::Error> for WebError {
    fn from(error: crate::store::Error) -> Self {
        tracing::error!(error = %error, "page failed");
        WebError::new(StatusCode::INTERNAL_SERVER_ERROR, "Something went wrong.")
    }
}

impl From<crate::services::Refusal> for WebError {
    fn from(refusal: crate::services::Refusal) -> Self {
        match refusal {
            // The store failing is the same page whether a service or the handler called it.
            crate::services::Refusal::Store(error) => error.into(),
            other => ApiError::from(other).into(),
        }
    }
}

impl From<ApiError> for WebError {
    fn from(error: ApiError) -> Self {
        // The page names no cause; the log keeps the server's (a store, git or plugin failure).
        if let ApiError::Internal(cause) = &error {
            tracing::error!(error = format!("{cause:#}"), "page failed");
        }
        WebError::new(error.status(), "The request could not be processed.")
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        match self {
            WebError::Redirect(to) => found(&to),
            WebError::Page(status, message) => {
                layout::page(status, "Error", None, layout::message_body(&message))
            }
        }
    }
}

pub type WebResult = Result<Response, WebError>;

/// A `302 Found` to `location` (what OAuth clients and Doorkeeper expect).
pub fn found(location: &str) -> Response {
    match HeaderValue::from_str(location) {
        Ok(value) => (StatusCode::FOUND, [(header::LOCATION, value)]).into_response(),
        Err(_) => WebError::new(StatusCode::BAD_REQUEST, "Invalid redirect.").into_response(),
    }
}
