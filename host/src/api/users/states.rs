//! `POST /users/:id/block|unblock|deactivate|activate`: 201 with GitLab's bodies, 403 for
//! the transitions GitLab refuses (directory-sync blocks, recent activity, blocked users).

use crate::events::EventKind;
use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use chrono::{Duration, Utc};
use serde_json::{Value, json};

use super::user_by_id;
use crate::http::error::{ApiError, ApiResult};
use crate::http::request::Api;

/// Users active within this many days cannot be deactivated.
const DEACTIVATION_INACTIVE_DAYS: i64 = 180;
const LDAP_BLOCKED: &str = "LDAP blocked users cannot be modified by the API";
const LDAP_UNBLOCK: &str = "LDAP blocked users cannot be unblocked by the API";

type StateResult = ApiResult<(StatusCode, Json<Value>)>;

fn created(body: Value) -> StateResult {
    Ok((StatusCode::CREATED, Json(body)))
}

pub async fn block(Path(id): Path<String>, api: Api) -> StateResult {
    let admin_id = api.admin()?.user.id;
    let user = user_by_id(&api, &id).await?;
    if user.id == admin_id {
        return Err(ApiError::forbidden_because(
            "The API initiating user cannot be blocked by the API",
        ));
    }
    match user.state.as_str() {
        "ldap_blocked" => Err(ApiError::forbidden_because(LDAP_BLOCKED)),
        "blocked" => created(Value::Null),
        _ => {
            api.db()
                .set_user_state(user.id, "blocked", EventKind::UserBlocked, Some(admin_id))
                .await?;
            created(json!(true))
        }
    }
}

pub async fn unblock(Path(id): Path<String>, api: Api) -> StateResult {
    let admin_id = api.admin()?.user.id;
    let user = user_by_id(&api, &id).await?;
    match user.state.as_str() {
        "ldap_blocked" => Err(ApiError::forbidden_because(LDAP_UNBLOCK)),
        "deactivated" => Err(ApiError::forbidden_because(
            "Deactivated users cannot be unblocked by the API",
        )),
        "blocked" => {
            api.db()
                .set_user_state(user.id, "active", EventKind::UserUnblocked, Some(admin_id))
                .await?;
            created(json!(true))
        }
        _ => created(json!(false)),
    }
}

pub async fn deactivate(Path(id): Path<String>, api: Api) -> StateResult {
    let admin_id = api.admin()?.user.id;
    let user = user_by_id(&api, &id).await?;
    match user.state.as_str() {
        "blocked" | "ldap_blocked" => Err(ApiError::forbidden_because(
            "A blocked user cannot be deactivated by the API",
        )),
        "deactivated" => created(json!(true)),
        _ => {
            let threshold = (Utc::now() - Duration::days(DEACTIVATION_INACTIVE_DAYS))
                .format("%Y-%m-%d")
                .to_string();
            if user
                .last_activity_on
                .as_deref()
                .is_some_and(|day| day > threshold.as_str())
            {
                return Err(ApiError::forbidden_because(format!(
                    "The user you are trying to deactivate has been active in the past {DEACTIVATION_INACTIVE_DAYS} days and cannot be deactivated"
                )));
            }
            api.db()
                .set_user_state(
                    user.id,
                    "deactivated",
                    EventKind::UserDeactivated,
                    Some(admin_id),
                )
                .await?;
            created(json!(true))
        }
    }
}

pub async fn activate(Path(id): Path<String>, api: Api) -> StateResult {
    let admin_id = api.admin()?.user.id;
    let user = user_by_id(&api, &id).await?;
    match user.state.as_str() {
        "blocked" | "ldap_blocked" => Err(ApiError::forbidden_because(
            "A blocked user must be unblocked to be activated",
        )),
        "deactivated" => {
            api.db()
                .set_user_state(user.id, "active", EventKind::UserActivated, Some(admin_id))
                .await?;
            created(json!(true))
        }
        _ => created(json!(true)),
    }
}
