//! Doorkeeper's error responses: `{"error","error_description"}` (plus `state` where the
//! request had one), 401 with `WWW-Authenticate: Bearer` for client and token errors, 400
//! otherwise, and never cached.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::http::error::ApiError;
use crate::http::json::Json;
use crate::services::Refusal;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    InvalidRequest,
    InvalidClient,
    InvalidGrant,
    InvalidScope,
    InvalidRedirectUri,
    UnauthorizedClient,
    UnsupportedGrantType,
    UnsupportedResponseType,
    AccessDenied,
    InvalidToken,
    InsufficientScope,
    ServerError,
}

impl Kind {
    pub fn code(self) -> &'static str {
        match self {
            Kind::InvalidRequest => "invalid_request",
            Kind::InvalidClient => "invalid_client",
            Kind::InvalidGrant => "invalid_grant",
            Kind::InvalidScope => "invalid_scope",
            Kind::InvalidRedirectUri => "invalid_redirect_uri",
            Kind::UnauthorizedClient => "unauthorized_client",
            Kind::UnsupportedGrantType => "unsupported_grant_type",
            Kind::UnsupportedResponseType => "unsupported_response_type",
            Kind::AccessDenied => "access_denied",
            Kind::InvalidToken => "invalid_token",
            Kind::InsufficientScope => "insufficient_scope",
            Kind::ServerError => "server_error",
        }
    }

    /// Doorkeeper's English description of the error.
    pub fn description(self) -> &'static str {
        match self {
            Kind::InvalidRequest => {
                "The request is missing a required parameter, includes an unsupported parameter value, or is otherwise malformed."
            }
            Kind::InvalidClient => {
                "Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method."
            }
            Kind::InvalidGrant => {
                "The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client."
            }
            Kind::InvalidScope => "The requested scope is invalid, unknown, or malformed.",
            Kind::InvalidRedirectUri => {
                "The requested redirect uri is malformed or doesn't match client redirect URI."
            }
            Kind::UnauthorizedClient => {
                "The client is not authorized to perform this request using this method."
            }
            Kind::UnsupportedGrantType => {
                "The authorization grant type is not supported by the authorization server."
            }
            Kind::UnsupportedResponseType => {
                "The authorization server does not support this response type."
            }
            Kind::AccessDenied => "The resource owner or authorization server denied the request.",
            Kind::InvalidToken => "The access token is invalid",
            Kind::InsufficientScope => {
                "The request requires higher privileges than provided by the access token."
            }
            Kind::ServerError => {
                "The authorization server encountered an unexpected condition which prevented it from fulfilling the request."
            }
        }
    }
}

#[derive(Debug)]
pub struct OAuthError {
    pub kind: Kind,
    pub description: String,
    pub state: Option<String>,
    pub status: StatusCode,
}

impl OAuthError {
    pub fn new(kind: Kind) -> Self {
        let status = match kind {
            Kind::InvalidClient | Kind::InvalidToken => StatusCode::UNAUTHORIZED,
            Kind::ServerError => StatusCode::INTERNAL_SERVER_ERROR,
            Kind::InsufficientScope => StatusCode::FORBIDDEN,
            _ => StatusCode::BAD_REQUEST,
        };
        OAuthError {
            kind,
            description: kind.description().to_string(),
            state: None,
            status,
        }
    }

    /// `invalid_request` naming the missing parameter, as Doorkeeper words it.
    pub fn missing(param: &str) -> Self {
        Self::new(Kind::InvalidRequest).describe(format!("Missing required parameter: {param}."))
    }

    pub fn describe(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    pub fn with_status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    pub fn with_state(mut self, state: Option<String>) -> Self {
        self.state = state;
        self
    }
}

pub type OAuthResult<T> = Result<T, OAuthError>;

impl From<crate::store::Error> for OAuthError {
    fn from(error: crate::store::Error) -> Self {
        tracing::error!(error = %error, "oauth request failed");
        Self::new(Kind::ServerError)
    }
}

/// A service's refusal in OAuth's words: `Invalid("grant")` and `Invalid("scope")` are
/// `invalid_grant` and `invalid_scope` (see `services::oauth`), `Forbidden` a client acting on
/// another client's token (`unauthorized_client`, 403, with the reason); the server's own
/// failures are `server_error`, their cause only logged.
impl From<Refusal> for OAuthError {
    fn from(refusal: Refusal) -> Self {
        match refusal {
            Refusal::Invalid("grant", _) => Self::new(Kind::InvalidGrant),
            Refusal::Invalid("scope", _) => Self::new(Kind::InvalidScope),
            Refusal::Forbidden(reason) => {
                let error = Self::new(Kind::UnauthorizedClient).with_status(StatusCode::FORBIDDEN);
                match reason {
                    Some(reason) => error.describe(reason),
                    None => error,
                }
            }
            Refusal::Store(error) => error.into(),
            other => {
                tracing::error!(error = format!("{other:#}"), "oauth request failed");
                Self::new(Kind::ServerError)
            }
        }
    }
}

/// A malformed parameter (an array where a string belongs, an oversize body...).
impl From<ApiError> for OAuthError {
    fn from(error: ApiError) -> Self {
        if let ApiError::Internal(cause) = &error {
            tracing::error!(error = format!("{cause:#}"), "oauth request failed");
            return Self::new(Kind::ServerError);
        }
        let status = match error.status() {
            StatusCode::PAYLOAD_TOO_LARGE => StatusCode::PAYLOAD_TOO_LARGE,
            _ => StatusCode::BAD_REQUEST,
        };
        Self::new(Kind::InvalidRequest).with_status(status)
    }
}

/// Headers every OAuth JSON answer carries: tokens must not be cached (RFC 6749 5.1).
pub fn no_store(response: &mut Response) {
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let mut body = json!({
            "error": self.kind.code(),
            "error_description": self.description,
        });
        if let Some(state) = &self.state {
            body["state"] = json!(state);
        }
        let mut response = (self.status, Json(body)).into_response();
        no_store(&mut response);
        if self.status == StatusCode::UNAUTHORIZED {
            let value = format!(
                "Bearer realm=\"Doorkeeper\", error=\"{}\", error_description=\"{}\"",
                self.kind.code(),
                self.description.replace('"', "'")
            );
            if let Ok(value) = HeaderValue::from_str(&value) {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, value);
            }
        }
        response
    }
}
