//! `POST /users/:id/block|unblock|deactivate|activate`: 201 with GitLab's bodies, 403 for
//! the transitions GitLab refuses (the rules are `services::users::transition`).

use crate::http::json::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use chrono::Utc;

use super::user_by_id;
use crate::http::error::ApiResult;
use crate::http::request::Api;
use crate::services::users::{self, Outcome, StateAction};
use crate::views::user_admin::UserStateAnswer;

type StateResult = ApiResult<(StatusCode, Json<UserStateAnswer>)>;

pub async fn block(Path(id): Path<String>, api: Api) -> StateResult {
    change(&api, &id, StateAction::Block).await
}

pub async fn unblock(Path(id): Path<String>, api: Api) -> StateResult {
    change(&api, &id, StateAction::Unblock).await
}

pub async fn deactivate(Path(id): Path<String>, api: Api) -> StateResult {
    change(&api, &id, StateAction::Deactivate).await
}

pub async fn activate(Path(id): Path<String>, api: Api) -> StateResult {
    change(&api, &id, StateAction::Activate).await
}

async fn change(api: &Api, id: &str, action: StateAction) -> StateResult {
    let admin_id = api.admin()?.user.id;
    let user = user_by_id(api, id).await?;
    let today = Utc::now().date_naive();
    let answer = match users::change_state(api.db(), &user, action, admin_id, today).await? {
        Outcome::Changed { .. } => Some(true),
        Outcome::Unchanged(answer) => answer,
    };
    Ok((StatusCode::CREATED, Json(UserStateAnswer(answer))))
}
