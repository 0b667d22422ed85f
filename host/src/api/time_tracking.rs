//! Time tracking on an issue or a merge request (GitLab's `TimeTrackingEndpoints`):
//! `time_estimate`, `reset_time_estimate`, `add_spent_time`, `reset_spent_time`, `time_stats`.
//! One set of handlers serves both, through [`TimeTrackables`]. Writes authenticate first
//! (GitLab's `authenticate_non_get!`), and who may track time is checked before the duration
//! is read (403 before 400).

use std::future::Future;

use axum::extract::Path;
use axum::http::{Method, StatusCode};
use axum::routing::{get, post};

use crate::api::issues::input::{SpentTime, TimeEstimate};
use crate::context::ApiContext;
use crate::http::error::ApiResult;
use crate::http::json::Json;
use crate::http::request::Api;
use crate::http::routes::{Doc, Router};
use crate::settings::keys;
use crate::views::issue::{TimeStats, time_stats};

/// The estimate and the total spent, in seconds.
pub struct Times {
    pub estimate: i64,
    pub spent: i64,
}

/// How a kind of noteable is found, who may track time on it, and how its times change.
pub trait TimeTrackables: Send + Sync + 'static {
    type Item: Send + Sync;

    /// What `(project, iid)` names, if the caller may read it.
    fn load(api: &Api, id: &str, iid: &str) -> impl Future<Output = ApiResult<Self::Item>> + Send;

    fn times(item: &Self::Item) -> Times;

    /// Whether the caller may change its times (GitLab's `admin_issue` or
    /// `admin_merge_request`).
    fn may_track(api: &Api, item: &Self::Item) -> bool;

    /// Sets the estimate, with its system note; answers the new times.
    fn set_estimate(
        api: &Api,
        item: &Self::Item,
        seconds: i64,
        limit_to_hours: bool,
    ) -> impl Future<Output = ApiResult<Times>> + Send;

    /// Logs `Some(seconds)` (negative subtracts) or resets (`None`), with its system note;
    /// answers the new total.
    fn log_spent(
        api: &Api,
        item: &Self::Item,
        seconds: Option<i64>,
        limit_to_hours: bool,
    ) -> impl Future<Output = ApiResult<i64>> + Send;
}

/// The time tracking routes under `base` (an issue's or merge request's path).
pub fn routes<K: TimeTrackables>(router: Router<ApiContext>, base: &str) -> Router<ApiContext> {
    let answers = || Doc::new().answers::<TimeStats>();
    router
        .route(&format!("{base}/time_estimate"), post(set_estimate::<K>))
        .doc(Method::POST, answers().input::<TimeEstimate>())
        .route(
            &format!("{base}/reset_time_estimate"),
            post(reset_estimate::<K>),
        )
        .doc(Method::POST, answers())
        .route(&format!("{base}/add_spent_time"), post(add_spent::<K>))
        .doc(Method::POST, answers().input::<SpentTime>())
        .route(&format!("{base}/reset_spent_time"), post(reset_spent::<K>))
        .doc(Method::POST, answers())
        .route(&format!("{base}/time_stats"), get(stats_of::<K>))
        .doc(Method::GET, answers())
}

fn limit_to_hours(api: &Api) -> bool {
    api.settings.get(keys::TIME_TRACKING_LIMIT_TO_HOURS)
}

fn stats(api: &Api, times: Times) -> Json<TimeStats> {
    Json(time_stats(times.estimate, times.spent, limit_to_hours(api)))
}

/// The item, once the caller is known and may track time on it.
async fn trackable<K: TimeTrackables>(api: &Api, id: &str, iid: &str) -> ApiResult<K::Item> {
    api.user()?;
    let item = K::load(api, id, iid).await?;
    if !K::may_track(api, &item) {
        return Err(crate::http::error::ApiError::forbidden());
    }
    Ok(item)
}

/// Sets the estimate (`reset`: to zero).
async fn estimate<K: TimeTrackables>(
    api: &Api,
    id: &str,
    iid: &str,
    reset: bool,
) -> ApiResult<Json<TimeStats>> {
    let item = trackable::<K>(api, id, iid).await?;
    let seconds = match reset {
        true => 0,
        false => api.input::<TimeEstimate>()?.seconds,
    };
    let times = K::set_estimate(api, &item, seconds, limit_to_hours(api)).await?;
    Ok(stats(api, times))
}

/// Logs spent time (`reset`: removes it all).
async fn spent<K: TimeTrackables>(
    api: &Api,
    id: &str,
    iid: &str,
    reset: bool,
) -> ApiResult<Json<TimeStats>> {
    let item = trackable::<K>(api, id, iid).await?;
    let seconds = match reset {
        true => None,
        false => Some(api.input::<SpentTime>()?.seconds),
    };
    let total = K::log_spent(api, &item, seconds, limit_to_hours(api)).await?;
    let estimate = K::times(&item).estimate;
    Ok(stats(
        api,
        Times {
            estimate,
            spent: total,
        },
    ))
}

type ItemPath = Path<(String, String)>;

async fn set_estimate<K: TimeTrackables>(
    Path((id, iid)): ItemPath,
    api: Api,
) -> ApiResult<Json<TimeStats>> {
    estimate::<K>(&api, &id, &iid, false).await
}

async fn reset_estimate<K: TimeTrackables>(
    Path((id, iid)): ItemPath,
    api: Api,
) -> ApiResult<Json<TimeStats>> {
    estimate::<K>(&api, &id, &iid, true).await
}

async fn add_spent<K: TimeTrackables>(
    Path((id, iid)): ItemPath,
    api: Api,
) -> ApiResult<(StatusCode, Json<TimeStats>)> {
    Ok((
        StatusCode::CREATED,
        spent::<K>(&api, &id, &iid, false).await?,
    ))
}

async fn reset_spent<K: TimeTrackables>(
    Path((id, iid)): ItemPath,
    api: Api,
) -> ApiResult<Json<TimeStats>> {
    spent::<K>(&api, &id, &iid, true).await
}

async fn stats_of<K: TimeTrackables>(
    Path((id, iid)): ItemPath,
    api: Api,
) -> ApiResult<Json<TimeStats>> {
    let item = K::load(&api, &id, &iid).await?;
    Ok(stats(&api, K::times(&item)))
}
