//! `GET /user`: the authenticated user (or the sudo target), in the current-user view;
//! administrators get the admin view.

use crate::http::json::Json;
use crate::http::routes::Doc;
use crate::http::routes::Router;
use crate::views::user::UserSelf;
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::context::ApiContext;
use crate::http::error::ApiResult;
use crate::http::request::Api;

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/api/v4/user", get(current_user))
        .doc(Method::GET, Doc::new().answers::<UserSelf>())
}

async fn current_user(api: Api) -> ApiResult<Response> {
    let caller = api.user()?;
    let views = api.user_views();
    let identities = caller.identities(api.db()).await?;
    Ok(if caller.is_admin() {
        Json(views.admin(&caller.user, &identities)).into_response()
    } else {
        Json(views.own(&caller.user, &identities)).into_response()
    })
}
