//! `GET /user`: the authenticated user (or the sudo target), in the current-user view;
//! administrators get the admin view.

use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};

use crate::context::ApiContext;
use crate::http::error::ApiResult;
use crate::http::request::Api;
use crate::views::user::UserViews;

pub fn router() -> Router<ApiContext> {
    Router::new().route("/api/v4/user", get(current_user))
}

async fn current_user(api: Api) -> ApiResult<Response> {
    let caller = api.user()?;
    let views = UserViews {
        base_url: &api.tenant.base_url,
    };
    Ok(if caller.is_admin() {
        Json(views.admin(&caller.user)).into_response()
    } else {
        Json(views.own(&caller.user)).into_response()
    })
}
