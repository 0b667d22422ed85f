//! One error type for the whole API. Every failure a handler can produce maps to the body
//! shape GitLab's Grape API uses for it, so clients that parse GitLab errors parse ours.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use super::json::Json;
use crate::services;
use crate::{git, store};

pub type ApiResult<T> = Result<T, ApiError>;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A required parameter is absent: `{"error":"title is missing"}`.
    #[error("{0} is missing")]
    Missing(String),
    /// A parameter has the wrong type or an unknown value: `{"error":"state does not have a valid value"}`.
    #[error("{0}")]
    InvalidParam(String),
    /// A model validation failure: `{"message":{"field":["problem"]}}`.
    #[error("validation failed")]
    Validation(Map<String, Value>),
    /// Any other 400, with GitLab's `400 Bad request - reason` message.
    #[error("bad request: {0}")]
    BadRequest(String),
    #[error("unauthorized")]
    Unauthorized,
    /// OAuth-style bearer errors (expired or revoked token): 401 with `WWW-Authenticate`.
    #[error("invalid token: {0}")]
    InvalidToken(&'static str),
    /// The token lacks a scope the route needs: 403 `insufficient_scope`.
    #[error("insufficient scope")]
    InsufficientScope(&'static str),
    #[error("forbidden")]
    Forbidden(Option<String>),
    /// The named resource does not exist or is not visible: `{"message":"404 Project Not Found"}`.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// A 404 with a free-form message (GitLab's sudo and route errors).
    #[error("{0}")]
    NotFoundMessage(String),
    #[error("method not allowed")]
    MethodNotAllowed,
    /// A read at a moved project's old path: 302 to the same request at the project's id.
    #[error("moved to {0}")]
    Moved(String),
    /// A write at a moved project's old path: GitLab's 405.
    #[error("write to a moved project")]
    WriteToMovedProject,
    #[error("conflict: {0}")]
    Conflict(String),
    #[error("not modified")]
    NotModified,
    #[error("payload too large")]
    PayloadTooLarge,
    /// GitLab's `render_api_error!(message, 400)`: the message alone.
    #[error("rejected: {0}")]
    Rejected(String),
    /// 405 with GitLab's message (deleting the default branch).
    #[error("not allowed: {0}")]
    NotAllowed(String),
    /// 406 with GitLab's message (a merge git cannot make).
    #[error("not acceptable: {0}")]
    NotAcceptable(String),
    /// 405 from the pagination rules, as Grape's `error!`: `{"error": ...}`.
    #[error("pagination: {0}")]
    PaginationRefused(String),
    /// 422 with GitLab's message, a string or a list of them: `{"message": ...}`.
    #[error("unprocessable: {0}")]
    Unprocessable(Value),
    /// 422 as Grape's `error!`: `{"error": ...}`.
    #[error("unprocessable: {0}")]
    UnprocessableError(&'static str),
    /// A model validation failure GitLab answers with 409 (a fork that cannot be made).
    #[error("conflicting fields")]
    ConflictFields(Map<String, Value>),
    /// 409 with a list of messages.
    #[error("conflicts: {0:?}")]
    Conflicts(Vec<String>),
    /// 413 with GitLab's message (a file too large to blame).
    #[error("too large: {0}")]
    TooLarge(String),
    /// 429 with the message of a throttle outside the rate limiter (the fetch slots).
    #[error("too many requests: {0}")]
    TooManyRequests(&'static str),
    /// No route matches: Grape's `{"error":"404 Not Found"}`.
    #[error("no route")]
    NoRoute,
    /// The request ran past its deadline.
    #[error("timed out")]
    TimedOut,
    /// The spam check refused the write: 400, or 409 asking for a CAPTCHA.
    #[error("refused as spam")]
    Spam(services::spam::SpamRefusal),
    #[error("internal error: {0}")]
    Internal(#[from] anyhow::Error),
}

impl ApiError {
    pub fn forbidden() -> Self {
        Self::Forbidden(None)
    }

    pub fn forbidden_because(reason: impl Into<String>) -> Self {
        Self::Forbidden(Some(reason.into()))
    }

    /// `{"message":{"field":["message"]}}` for a single field.
    pub fn field(field: &str, message: impl Into<String>) -> Self {
        let mut map = Map::new();
        map.insert(field.to_string(), json!([message.into()]));
        Self::Validation(map)
    }

    pub fn invalid(param: &str) -> Self {
        Self::InvalidParam(format!("{param} is invalid"))
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::Missing(_)
            | Self::InvalidParam(_)
            | Self::Validation(_)
            | Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Unauthorized | Self::InvalidToken(_) => StatusCode::UNAUTHORIZED,
            Self::InsufficientScope(_) | Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotFound(_) | Self::NotFoundMessage(_) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed | Self::WriteToMovedProject => StatusCode::METHOD_NOT_ALLOWED,
            Self::Moved(_) => StatusCode::FOUND,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::NotModified => StatusCode::NOT_MODIFIED,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Self::Rejected(_) => StatusCode::BAD_REQUEST,
            Self::NotAllowed(_) | Self::PaginationRefused(_) => StatusCode::METHOD_NOT_ALLOWED,
            Self::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            Self::Unprocessable(_) | Self::UnprocessableError(_) => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            Self::ConflictFields(_) | Self::Conflicts(_) => StatusCode::CONFLICT,
            Self::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::TooManyRequests(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::NoRoute => StatusCode::NOT_FOUND,
            Self::TimedOut => StatusCode::SERVICE_UNAVAILABLE,
            // The merge request API reports the spam check's `base` error as any other
            // (`handle_merge_request_errors!`): 422.
            Self::Spam(refusal) if refusal.noteable_type == "MergeRequest" => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            Self::Spam(refusal) if refusal.captcha.is_some() => StatusCode::CONFLICT,
            Self::Spam(_) => StatusCode::BAD_REQUEST,
        }
    }

    fn body(&self) -> Value {
        match self {
            Self::Missing(param) => json!({ "error": format!("{param} is missing") }),
            Self::InvalidParam(message) => json!({ "error": message }),
            Self::Validation(fields) => json!({ "message": fields }),
            Self::BadRequest(reason) => json!({ "message": format!("400 Bad request - {reason}") }),
            Self::Unauthorized => json!({ "message": "401 Unauthorized" }),
            Self::InvalidToken(description) => {
                json!({ "error": "invalid_token", "error_description": description })
            }
            Self::InsufficientScope(scope) => json!({
                "error": "insufficient_scope",
                "error_description": "The request requires higher privileges than provided by the access token.",
                "scope": scope,
            }),
            Self::Forbidden(None) => json!({ "message": "403 Forbidden" }),
            Self::Forbidden(Some(reason)) => {
                json!({ "message": format!("403 Forbidden - {reason}") })
            }
            Self::NotFound(what) => json!({ "message": format!("404 {what} Not Found") }),
            Self::NotFoundMessage(message) => json!({ "message": message }),
            Self::MethodNotAllowed => json!({ "message": "405 Method Not Allowed" }),
            Self::WriteToMovedProject => {
                json!({ "message": "Non GET methods are not allowed for moved projects" })
            }
            Self::Moved(location) => {
                json!({ "message": format!("This resource has been moved temporarily to {location}.") })
            }
            Self::Conflict(message) => json!({ "message": message }),
            Self::NotModified => Value::Null,
            Self::PayloadTooLarge => json!({ "message": "413 Request Entity Too Large" }),
            Self::Internal(_) => json!({ "message": "500 Internal Server Error" }),
            Self::Rejected(message)
            | Self::NotAllowed(message)
            | Self::NotAcceptable(message)
            | Self::TooLarge(message) => {
                json!({ "message": message })
            }
            Self::PaginationRefused(message) => json!({ "error": message }),
            Self::Unprocessable(message) => json!({ "message": message }),
            Self::UnprocessableError(message) => json!({ "error": message }),
            Self::ConflictFields(fields) => json!({ "message": fields }),
            Self::Conflicts(messages) => json!({ "message": messages }),
            Self::TooManyRequests(message) => json!({ "message": message }),
            Self::NoRoute => json!({ "error": "404 Not Found" }),
            Self::TimedOut => {
                json!({ "message": "503 Service Unavailable: the request took too long" })
            }
            Self::Spam(refusal) => spam_body(refusal),
        }
    }
}

/// GitLab's answers to a write the spam check refused
/// (`SpammableActions::CaptchaCheck::RestApiActionsSupport`).
fn spam_body(refusal: &services::spam::SpamRefusal) -> Value {
    let entity = &refusal.entity;
    if refusal.noteable_type == "MergeRequest" {
        let message = match refusal.captcha {
            Some(_) => format!(
                "Your {entity} has been recognized as spam. Please, change the content or solve the reCAPTCHA to proceed."
            ),
            None => format!(
                "Your {entity} has been recognized as spam. Please, change the content to proceed."
            ),
        };
        return json!({ "message": [message] });
    }
    match &refusal.captcha {
        Some(captcha) => json!({
            "needs_captcha_response": true,
            "spam_log_id": captcha.spam_log_id,
            "captcha_site_key": captcha.site_key,
            "message": {
                "error": format!("Your {entity} has been recognized as spam. Please, change the content or solve the reCAPTCHA to proceed.")
            },
        }),
        None => json!({
            "message": {
                "base": [format!("Your {entity} has been recognized as spam. Please, change the content to proceed.")]
            }
        }),
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        if let Self::Internal(error) = &self {
            // The client sees only "500 Internal Server Error"; the cause goes to the log.
            tracing::error!(error = format!("{error:#}"), "request failed");
        }
        if status == StatusCode::NOT_MODIFIED {
            return status.into_response();
        }
        let mut response = (status, Json(self.body())).into_response();
        if let Self::Moved(location) = &self
            && let Ok(value) = HeaderValue::from_str(location)
        {
            response.headers_mut().insert(header::LOCATION, value);
        }
        if let Self::InvalidToken(description) = &self {
            let value = format!(
                "Bearer realm=\"Protected by OAuth 2.0\", error=\"invalid_token\", error_description=\"{description}\""
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

impl From<store::Error> for ApiError {
    fn from(error: store::Error) -> Self {
        Self::Internal(error.into())
    }
}

/// A repository that cannot be made or read is the server's failure: 500 (the cause goes to
/// the log), as before git got an error type of its own.
impl From<git::Error> for ApiError {
    fn from(error: git::Error) -> Self {
        Self::Internal(error.into())
    }
}

impl From<services::Refusal> for ApiError {
    fn from(refusal: services::Refusal) -> Self {
        use services::Refusal;
        match refusal {
            Refusal::Forbidden(reason) => Self::Forbidden(reason),
            Refusal::Unauthorized => Self::Unauthorized,
            Refusal::NotFound(what) => Self::NotFound(what),
            Refusal::Conflict(message) => Self::Conflict(message),
            Refusal::Conflicts(messages) => Self::Conflicts(messages),
            Refusal::Invalid(field, message) => Self::field(field, message),
            Refusal::Fields(fields) => {
                // A field refused for several reasons lists them all, in order.
                let mut map = Map::new();
                for (field, message) in fields {
                    let messages = map.entry(field).or_insert_with(|| json!([]));
                    if let Value::Array(list) = messages {
                        list.push(Value::String(message));
                    }
                }
                Self::Validation(map)
            }
            Refusal::Rejected(message) => Self::Rejected(message),
            Refusal::NotAllowed(message) => Self::NotAllowed(message),
            Refusal::Unprocessable(message) => Self::Unprocessable(Value::String(message)),
            Refusal::ModelErrors(messages) => Self::Unprocessable(json!(messages)),
            Refusal::Exists(message) => Self::UnprocessableError(message),
            Refusal::Absent => Self::NotFoundMessage("404 Not Found".into()),
            Refusal::RecordNotFound => Self::NotFoundMessage("404 Not found".into()),
            Refusal::NotAcceptable(message) => Self::NotAcceptable(message),
            Refusal::Spam(refusal) => Self::Spam(refusal),
            Refusal::InvalidParam(message) => Self::InvalidParam(message),
            Refusal::Unusable(reason) => Self::BadRequest(reason),
            Refusal::UploadTooLarge => Self::PayloadTooLarge,
            Refusal::Store(error) => error.into(),
            Refusal::Git(error) => error.into(),
            Refusal::Internal(error) => Self::Internal(error),
        }
    }
}
