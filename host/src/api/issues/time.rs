//! Time tracking: `time_estimate`, `reset_time_estimate`, `add_spent_time`, `reset_spent_time`,
//! `time_stats`. Durations are GitLab's human format (`1mo 2w 3d 4h 5m 6s`, 1mo = 4w, 1w = 5d,
//! 1d = 8h; a bare number is hours; a leading `-` subtracts spent time).

use crate::http::json::Json;
use axum::extract::Path;
use axum::http::StatusCode;

use super::input::{SpentTime, TimeEstimate};
use super::load;
use super::write::editor;
use crate::http::error::ApiResult;
use crate::http::request::Api;
use crate::model::issue_text::{DAY, HOUR, MINUTE, MONTH, WEEK};
use crate::services::issues;
use crate::settings::keys;
use crate::views::issue::TimeStats;
use crate::views::issue::time_stats;

fn unit_seconds(unit: &str) -> Option<f64> {
    let seconds = match unit {
        "mo" | "mon" | "mos" | "month" | "months" => MONTH,
        "w" | "wk" | "wks" | "week" | "weeks" => WEEK,
        "d" | "day" | "days" => DAY,
        "" | "h" | "hr" | "hrs" | "hour" | "hours" => HOUR,
        "m" | "min" | "mins" | "minute" | "minutes" => MINUTE,
        "s" | "sec" | "secs" | "second" | "seconds" => 1,
        _ => return None,
    };
    Some(seconds as f64)
}

/// Seconds of a human duration, or `None` when it does not parse.
pub fn parse_duration(text: &str) -> Option<i64> {
    let text = text.trim().to_lowercase();
    let (negative, rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest.trim_start()),
        None => (false, text.as_str()),
    };
    let bytes = rest.as_bytes();
    let mut i = 0;
    let mut total = 0.0;
    let mut terms = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
            i += 1;
        }
        let number: f64 = rest[start..i].parse().ok()?;
        while i < bytes.len() && bytes[i] == b' ' {
            i += 1;
        }
        let unit_start = i;
        while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
            i += 1;
        }
        total += number * unit_seconds(&rest[unit_start..i])?;
        terms += 1;
    }
    if terms == 0 {
        return None;
    }
    let seconds = total.round() as i64;
    Some(if negative { -seconds } else { seconds })
}

fn limit_to_hours(api: &Api) -> bool {
    api.settings.get(keys::TIME_TRACKING_LIMIT_TO_HOURS)
}

fn stats(api: &Api, estimate: i64, spent: i64) -> Json<TimeStats> {
    Json(time_stats(estimate, spent, limit_to_hours(api)))
}

/// Sets the estimate (`reset`: to zero). Only reporters may, checked before the duration
/// is read (403 before 400).
async fn set_time_estimate(
    api: &Api,
    id: &str,
    iid: &str,
    reset: bool,
) -> ApiResult<Json<TimeStats>> {
    let ctx = load(api, id, iid).await?;
    let caller = api.user()?;
    let editor = editor(&caller.user, &ctx.project);
    issues::require_reporter(&editor)?;
    let seconds = if reset {
        0
    } else {
        api.input::<TimeEstimate>()?.seconds
    };
    let row =
        issues::set_time_estimate(api.db(), &editor, &ctx.issue, seconds, limit_to_hours(api))
            .await?;
    Ok(stats(api, row.time_estimate, row.total_time_spent))
}

pub async fn set_estimate(
    Path((id, iid)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<TimeStats>> {
    set_time_estimate(&api, &id, &iid, false).await
}

pub async fn reset_estimate(
    Path((id, iid)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<TimeStats>> {
    set_time_estimate(&api, &id, &iid, true).await
}

/// Logs spent time (`reset`: removes it all); reporters only, as for the estimate.
async fn log_spent_time(api: &Api, id: &str, iid: &str, reset: bool) -> ApiResult<Json<TimeStats>> {
    let ctx = load(api, id, iid).await?;
    let caller = api.user()?;
    let editor = editor(&caller.user, &ctx.project);
    issues::require_reporter(&editor)?;
    let seconds = if reset {
        None
    } else {
        Some(api.input::<SpentTime>()?.seconds)
    };
    let total =
        issues::log_spent_time(api.db(), &editor, &ctx.issue, seconds, limit_to_hours(api)).await?;
    Ok(stats(api, ctx.issue.time_estimate, total))
}

pub async fn add_spent(
    Path((id, iid)): Path<(String, String)>,
    api: Api,
) -> ApiResult<(StatusCode, Json<TimeStats>)> {
    Ok((
        StatusCode::CREATED,
        log_spent_time(&api, &id, &iid, false).await?,
    ))
}

pub async fn reset_spent(
    Path((id, iid)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<TimeStats>> {
    log_spent_time(&api, &id, &iid, true).await
}

pub async fn stats_of(
    Path((id, iid)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<TimeStats>> {
    let ctx = load(&api, &id, &iid).await?;
    Ok(stats(
        &api,
        ctx.issue.time_estimate,
        ctx.issue.total_time_spent,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_in_gitlab_units() {
        assert_eq!(parse_duration("3h30m"), Some(3 * HOUR + 30 * MINUTE));
        assert_eq!(parse_duration("3h 30m"), Some(3 * HOUR + 30 * MINUTE));
        assert_eq!(
            parse_duration("1mo 2w 3d 4h 5m"),
            Some(MONTH + 2 * WEEK + 3 * DAY + 4 * HOUR + 5 * MINUTE)
        );
        assert_eq!(parse_duration("1w"), Some(5 * 8 * HOUR));
        assert_eq!(parse_duration("-1h"), Some(-HOUR));
        assert_eq!(parse_duration("2"), Some(2 * HOUR));
        assert_eq!(parse_duration("1.5h"), Some(90 * MINUTE));
        assert_eq!(parse_duration("abc"), None);
        assert_eq!(parse_duration(""), None);
        assert_eq!(parse_duration("3x"), None);
    }
}
