//! Personal access tokens: `GET/DELETE /personal_access_tokens[/self|/:id]` and the
//! administrator's `POST /users/:user_id/personal_access_tokens`.

use crate::http::json::Json;
use crate::http::routes::Doc;
use crate::http::routes::Router;
use axum::extract::Path;
use axum::http::Method;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use chrono::Utc;

use crate::auth::token_scopes::TOKEN_SCOPES;
use crate::context::ApiContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::{COUNT_CAP, Page, PageRequest, sort_direction};
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::model::tokens::TokenRow;
use crate::model::users::UserRow;
use crate::services::tokens::{self, Issue, TokenRequest};
use crate::settings::keys;
use crate::store::tokens::{TokenFilter, TokenState};
use crate::store::window::Direction;
use crate::views::token::TokenView;

const TOKEN_ORDERS: &[&str] = &["id", "created_at", "name", "last_used_at", "expires_at"];

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/api/v4/personal_access_tokens", get(list))
        .doc(
            Method::GET,
            Doc::new()
                .input::<TokenListQuery>()
                .input::<TokenOrder>()
                .input::<PageRequest>()
                .answers_list::<TokenView>(),
        )
        .route(
            "/api/v4/personal_access_tokens/self",
            get(show_self).delete(revoke_self),
        )
        .doc(Method::GET, Doc::new().answers::<TokenView>())
        .route(
            "/api/v4/personal_access_tokens/{id}",
            get(show).delete(revoke),
        )
        .doc(Method::GET, Doc::new().answers::<TokenView>())
        .route(
            "/api/v4/users/{user_id}/personal_access_tokens",
            post(create_for_user),
        )
        .doc(
            Method::POST,
            Doc::new().input::<CreateToken>().answers::<TokenView>(),
        )
}

fn today() -> String {
    Utc::now().date_naive().format("%Y-%m-%d").to_string()
}

/// `GET /personal_access_tokens`: whose tokens (administrators may name anyone) and which.
struct TokenListQuery {
    user_id: Option<i64>,
    state: TokenState,
}

impl FromParams for TokenListQuery {
    fn from_params(params: &Params) -> ApiResult<Self> {
        Ok(TokenListQuery {
            user_id: params.int("user_id")?,
            state: token_state(params, &["active", "inactive"])?,
        })
    }
}

/// `state` among `allowed`: `active`, `inactive`, or else all tokens.
pub fn token_state(params: &Params, allowed: &[&str]) -> ApiResult<TokenState> {
    Ok(match params.one_of("state", allowed)?.as_deref() {
        Some("active") => TokenState::Active,
        Some("inactive") => TokenState::Inactive,
        _ => TokenState::All,
    })
}

/// The order of a token list: by id, newest first, unless asked otherwise.
struct TokenOrder {
    order_by: &'static str,
    direction: Direction,
}

impl FromParams for TokenOrder {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let direction = sort_direction(p, Direction::Desc)?;
        let order_by = match p.one_of("order_by", TOKEN_ORDERS)?.as_deref() {
            Some("created_at") => "created_at",
            Some("name") => "name",
            Some("last_used_at") => "last_used_at",
            Some("expires_at") => "expires_at",
            _ => "id",
        };
        Ok(TokenOrder {
            order_by,
            direction,
        })
    }
}

/// One list of tokens (personal or impersonation) with GitLab's pagination.
pub async fn list_tokens(api: &Api, filter: TokenFilter) -> ApiResult<Response> {
    let request = PageRequest::from_params(&api.params)?;
    let order: TokenOrder = api.input()?;
    let window = request.window(&api.params, order.order_by, order.direction)?;
    let rows = api.db().list_tokens(&filter, &window).await?;
    let total = if request.keyset {
        None
    } else {
        Some(api.db().count_tokens(&filter, COUNT_CAP + 1).await?)
    };
    let today = today();
    Ok(Page { rows, total }.respond(
        &request,
        &api.origin,
        |t: &TokenRow| t.id,
        |t| TokenView::new(t, &today),
    ))
}

async fn list(api: Api) -> ApiResult<Response> {
    let caller = api.user()?;
    let query: TokenListQuery = api.input()?;
    let user_id = match query.user_id {
        Some(id) if id != caller.user.id && !caller.is_admin() => {
            return Err(ApiError::Unauthorized);
        }
        Some(id) => Some(id),
        None if caller.is_admin() => None,
        None => Some(caller.user.id),
    };
    let filter = TokenFilter {
        user_id,
        impersonation: false,
        state: query.state,
        today: today(),
    };
    list_tokens(&api, filter).await
}

/// A personal access token the caller may see: their own, or any for an administrator.
async fn visible_token(api: &Api, id: &str) -> ApiResult<TokenRow> {
    let caller = api.user()?;
    let id: i64 = id.parse().map_err(|_| ApiError::invalid("id"))?;
    match api.db().token_by_id(id).await? {
        Some(token)
            if !token.impersonation && (token.user_id == caller.user.id || caller.is_admin()) =>
        {
            Ok(token)
        }
        _ => Err(ApiError::NotFound("Personal Access Token")),
    }
}

async fn show(Path(id): Path<String>, api: Api) -> ApiResult<Json<TokenView>> {
    let token = visible_token(&api, &id).await?;
    Ok(Json(TokenView::new(&token, &today())))
}

async fn show_self(api: Api) -> ApiResult<Json<TokenView>> {
    let caller = api.user()?;
    let not_found = ApiError::NotFound("Personal Access Token");
    let id = caller.personal_token_id().ok_or(not_found)?;
    let token = api
        .db()
        .token_by_id(id)
        .await?
        .ok_or(ApiError::NotFound("Personal Access Token"))?;
    Ok(Json(TokenView::new(&token, &today())))
}

async fn revoke(Path(id): Path<String>, api: Api) -> ApiResult<StatusCode> {
    let token = visible_token(&api, &id).await?;
    tokens::revoke(api.db(), token.id, api.user()?.user.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn revoke_self(api: Api) -> ApiResult<StatusCode> {
    let caller = api.user()?;
    let id = caller
        .personal_token_id()
        .ok_or(ApiError::NotFound("Personal Access Token"))?;
    tokens::revoke(api.db(), id, caller.user.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST` of a new token: `name`, `scopes` (each one of the route's) and `expires_at`.
pub fn token_input(params: &Params, allowed: &[&str]) -> ApiResult<TokenRequest> {
    let name = params.required_string("name")?;
    let scopes = params
        .string_list("scopes")?
        .ok_or_else(|| ApiError::Missing("scopes".into()))?;
    if scopes.is_empty() || scopes.iter().any(|s| !allowed.contains(&s.as_str())) {
        return Err(ApiError::InvalidParam(
            "scopes does not have a valid value".into(),
        ));
    }
    Ok(TokenRequest {
        name,
        scopes,
        expires_at: params.date("expires_at")?,
    })
}

/// `POST /users/:user_id/personal_access_tokens`.
struct CreateToken(TokenRequest);

impl FromParams for CreateToken {
    fn from_params(params: &Params) -> ApiResult<Self> {
        token_input(params, TOKEN_SCOPES).map(CreateToken)
    }
}

/// Issues a token for `owner` and answers 201 with its one-time secret.
pub async fn issue_token(
    api: &Api,
    owner: &UserRow,
    request: TokenRequest,
    impersonation: bool,
) -> ApiResult<Response> {
    let prefix = api
        .settings
        .get(keys::PERSONAL_ACCESS_TOKEN_PREFIX)
        .unwrap_or_default();
    let issue = Issue {
        owner_id: owner.id,
        owner_is_admin: owner.is_admin,
        impersonation,
        prefix: &prefix,
        actor: api.user()?.user.id,
    };
    let (row, secret) = tokens::issue(api.db(), &request, issue, Utc::now().date_naive()).await?;
    Ok((
        StatusCode::CREATED,
        Json(TokenView::new(&row, &today()).with_secret(secret)),
    )
        .into_response())
}

async fn create_for_user(Path(user_id): Path<String>, api: Api) -> ApiResult<Response> {
    api.admin()?;
    let CreateToken(request) = api.input()?;
    let user = api
        .db()
        .user_by_id_or_username(&user_id)
        .await?
        .ok_or(ApiError::NotFound("User"))?;
    issue_token(&api, &user, request, false).await
}
