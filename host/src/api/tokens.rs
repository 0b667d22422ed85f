//! Personal access tokens: `GET/DELETE /personal_access_tokens[/self|/:id]` and the
//! administrator's `POST /users/:user_id/personal_access_tokens`.

use crate::http::routes::Router;
use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use chrono::Utc;

use crate::auth::secrets;
use crate::auth::token_scopes::{ADMIN_ONLY_SCOPES, TOKEN_SCOPES};
use crate::context::ApiContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::{COUNT_CAP, Page, PageRequest, sort_direction};
use crate::http::request::Api;
use crate::model::tokens::TokenRow;
use crate::settings::keys;
use crate::store::tokens::{NewToken, TokenFilter, TokenState};
use crate::store::window::Direction;
use crate::views::token::TokenView;

const TOKEN_ORDERS: &[&str] = &["id", "created_at", "name", "last_used_at", "expires_at"];

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/api/v4/personal_access_tokens", get(list))
        .route(
            "/api/v4/personal_access_tokens/self",
            get(show_self).delete(revoke_self),
        )
        .route(
            "/api/v4/personal_access_tokens/{id}",
            get(show).delete(revoke),
        )
        .route(
            "/api/v4/users/{user_id}/personal_access_tokens",
            post(create_for_user),
        )
}

fn today() -> String {
    Utc::now().date_naive().format("%Y-%m-%d").to_string()
}

fn token_state(api: &Api) -> ApiResult<TokenState> {
    Ok(
        match api
            .params
            .one_of("state", &["active", "inactive"])?
            .as_deref()
        {
            Some("active") => TokenState::Active,
            Some("inactive") => TokenState::Inactive,
            _ => TokenState::All,
        },
    )
}

/// One list of tokens (personal or impersonation) with GitLab's pagination.
pub async fn list_tokens(api: &Api, filter: TokenFilter) -> ApiResult<Response> {
    let request = PageRequest::from_params(&api.params)?;
    let direction = sort_direction(&api.params, Direction::Desc)?;
    let order_by = match api.params.one_of("order_by", TOKEN_ORDERS)?.as_deref() {
        Some("created_at") => "created_at",
        Some("name") => "name",
        Some("last_used_at") => "last_used_at",
        Some("expires_at") => "expires_at",
        _ => "id",
    };
    let window = request.window(&api.params, order_by, direction)?;
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
    let user_id = match api.params.int("user_id")? {
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
        state: token_state(&api)?,
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
    api.db().revoke_token(token.id, api.user()?.user.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn revoke_self(api: Api) -> ApiResult<StatusCode> {
    let caller = api.user()?;
    let id = caller
        .personal_token_id()
        .ok_or(ApiError::NotFound("Personal Access Token"))?;
    api.db().revoke_token(id, caller.user.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Validated `name`, `scopes` and `expires_at` for a new token of `owner_is_admin`'s user.
pub struct TokenRequest {
    pub name: String,
    pub scopes: Vec<String>,
    pub expires_at: Option<String>,
}

pub fn token_request(api: &Api, owner_is_admin: bool, allowed: &[&str]) -> ApiResult<TokenRequest> {
    let name = api.params.required_string("name")?;
    let scopes = api
        .params
        .string_list("scopes")?
        .ok_or_else(|| ApiError::Missing("scopes".into()))?;
    if scopes.is_empty() || scopes.iter().any(|s| !allowed.contains(&s.as_str())) {
        return Err(ApiError::InvalidParam(
            "scopes does not have a valid value".into(),
        ));
    }
    if !owner_is_admin
        && scopes
            .iter()
            .any(|s| ADMIN_ONLY_SCOPES.contains(&s.as_str()))
    {
        return Err(ApiError::field(
            "scopes",
            "can only contain available scopes",
        ));
    }
    if name.trim().is_empty() {
        return Err(ApiError::field("name", "can't be blank"));
    }
    let expires_at = api.params.date("expires_at")?;
    if expires_at.is_some_and(|d| d <= Utc::now().date_naive()) {
        return Err(ApiError::field("expires_at", "must be in the future"));
    }
    Ok(TokenRequest {
        name,
        scopes,
        expires_at: expires_at.map(|d| d.format("%Y-%m-%d").to_string()),
    })
}

/// Creates a token and answers 201 with its one-time secret.
pub async fn issue_token(
    api: &Api,
    user_id: i64,
    request: TokenRequest,
    impersonation: bool,
) -> ApiResult<Response> {
    let secret = secrets::generate(
        &api.settings
            .get(keys::PERSONAL_ACCESS_TOKEN_PREFIX)
            .unwrap_or_default(),
        20,
    );
    let digest = secrets::digest(&secret);
    let row = api
        .db()
        .insert_token(
            NewToken {
                user_id,
                name: &request.name,
                digest: &digest,
                scopes: &request.scopes,
                impersonation,
                expires_at: request.expires_at,
            },
            Some(api.user()?.user.id),
        )
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(TokenView::new(&row, &today()).with_secret(secret)),
    )
        .into_response())
}

async fn create_for_user(Path(user_id): Path<String>, api: Api) -> ApiResult<Response> {
    api.admin()?;
    let user = api
        .db()
        .user_by_id_or_username(&user_id)
        .await?
        .ok_or(ApiError::NotFound("User"))?;
    let request = token_request(&api, user.is_admin, TOKEN_SCOPES)?;
    issue_token(&api, user.id, request, false).await
}
