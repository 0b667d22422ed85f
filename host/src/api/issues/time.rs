//! Time tracking on issues (the routes are `api::time_tracking`'s), and the durations it reads:
//! GitLab's human format (`1mo 2w 3d 4h 5m 6s`, 1mo = 4w, 1w = 5d, 1d = 8h; a bare number is
//! hours; a leading `-` subtracts spent time).

use super::write::editor;
use super::{IssueCtx, Issues, is_reporter, load};
use crate::api::time_tracking::{TimeTrackables, Times};
use crate::http::error::ApiResult;
use crate::http::request::Api;
use crate::model::issue_text::{DAY, HOUR, MINUTE, MONTH, WEEK};
use crate::services::issues;

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

impl TimeTrackables for Issues {
    type Item = IssueCtx;

    async fn load(api: &Api, id: &str, iid: &str) -> ApiResult<IssueCtx> {
        load(api, id, iid).await
    }

    fn times(ctx: &IssueCtx) -> Times {
        Times {
            estimate: ctx.issue.time_estimate,
            spent: ctx.issue.total_time_spent,
        }
    }

    /// Reporters and up (GitLab's `admin_issue`).
    fn may_track(_api: &Api, ctx: &IssueCtx) -> bool {
        is_reporter(&ctx.project)
    }

    async fn set_estimate(
        api: &Api,
        ctx: &IssueCtx,
        seconds: i64,
        limit_to_hours: bool,
    ) -> ApiResult<Times> {
        let caller = api.user()?;
        let editor = editor(&caller.user, &ctx.project);
        let row = issues::set_time_estimate(api.db(), &editor, &ctx.issue, seconds, limit_to_hours)
            .await?;
        Ok(Times {
            estimate: row.time_estimate,
            spent: row.total_time_spent,
        })
    }

    async fn log_spent(
        api: &Api,
        ctx: &IssueCtx,
        seconds: Option<i64>,
        limit_to_hours: bool,
    ) -> ApiResult<i64> {
        let caller = api.user()?;
        let editor = editor(&caller.user, &ctx.project);
        Ok(issues::log_spent_time(api.db(), &editor, &ctx.issue, seconds, limit_to_hours).await?)
    }
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
