//! Impersonation tokens (administrators only): `/users/:user_id/impersonation_tokens`. They
//! are personal access token rows with `impersonation` set, so they authenticate as their
//! user, and the personal access token lists leave them out.

use crate::http::json::Json;
use crate::http::routes::Doc;
use crate::http::routes::Router;
use axum::extract::Path;
use axum::http::Method;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use chrono::Utc;

use super::keys::{admin_target, path_id};
use super::tokens::{issue_token, list_tokens, token_input, token_state};
use crate::context::ApiContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::model::tokens::TokenRow;
use crate::model::users::UserRow;
use crate::services::tokens::{self, TokenRequest};
use crate::store::tokens::{TokenFilter, TokenState};
use crate::views::token::TokenView;

/// The scopes an impersonation token may carry: the spec's `api` and `read_user`, and the
/// read/repository scopes GitLab also offers for acting as a user.
pub const IMPERSONATION_SCOPES: &[&str] = &[
    "api",
    "read_user",
    "read_api",
    "read_repository",
    "write_repository",
];

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route(
            "/api/v4/users/{user_id}/impersonation_tokens",
            get(list).post(create),
        )
        .doc(
            Method::GET,
            Doc::new()
                .input::<ImpersonationTokenQuery>()
                .answers_list::<TokenView>(),
        )
        .doc(
            Method::POST,
            Doc::new()
                .input::<CreateImpersonationToken>()
                .answers::<TokenView>(),
        )
        .route(
            "/api/v4/users/{user_id}/impersonation_tokens/{impersonation_token_id}",
            get(show).delete(revoke),
        )
        .doc(Method::GET, Doc::new().answers::<TokenView>())
}

fn today() -> String {
    Utc::now().date_naive().format("%Y-%m-%d").to_string()
}

/// `GET /users/:user_id/impersonation_tokens`: `state` is `all` (the default), `active` or
/// `inactive`.
struct ImpersonationTokenQuery {
    state: TokenState,
}

impl FromParams for ImpersonationTokenQuery {
    fn from_params(params: &Params) -> ApiResult<Self> {
        let state = token_state(params, &["all", "active", "inactive"])?;
        Ok(ImpersonationTokenQuery { state })
    }
}

async fn list(Path(user_id): Path<String>, api: Api) -> ApiResult<Response> {
    let user = admin_target(&api, &user_id).await?;
    let query: ImpersonationTokenQuery = api.input()?;
    let filter = TokenFilter {
        user_id: Some(user.id),
        impersonation: true,
        state: query.state,
        today: today(),
    };
    list_tokens(&api, filter).await
}

/// `POST /users/:user_id/impersonation_tokens`.
struct CreateImpersonationToken(TokenRequest);

impl FromParams for CreateImpersonationToken {
    fn from_params(params: &Params) -> ApiResult<Self> {
        token_input(params, IMPERSONATION_SCOPES).map(CreateImpersonationToken)
    }
}

async fn create(Path(user_id): Path<String>, api: Api) -> ApiResult<Response> {
    api.admin()?;
    let CreateImpersonationToken(request) = api.input()?;
    let user = admin_target(&api, &user_id).await?;
    issue_token(&api, &user, request, true).await
}

async fn find(api: &Api, user: &UserRow, token_id: &str) -> ApiResult<TokenRow> {
    let id = path_id(token_id, "impersonation_token_id")?;
    match api.db().token_by_id(id).await? {
        Some(token) if token.impersonation && token.user_id == user.id => Ok(token),
        _ => Err(ApiError::NotFound("Impersonation Token")),
    }
}

async fn show(
    Path((user_id, token_id)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<TokenView>> {
    let user = admin_target(&api, &user_id).await?;
    let token = find(&api, &user, &token_id).await?;
    Ok(Json(TokenView::new(&token, &today())))
}

async fn revoke(
    Path((user_id, token_id)): Path<(String, String)>,
    api: Api,
) -> ApiResult<StatusCode> {
    let user = admin_target(&api, &user_id).await?;
    let token = find(&api, &user, &token_id).await?;
    tokens::revoke(api.db(), token.id, api.user()?.user.id).await?;
    Ok(StatusCode::NO_CONTENT)
}
