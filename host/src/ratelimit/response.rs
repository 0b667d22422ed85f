//! The answer to a limited request, as GitLab's Rack::Attack responder builds it
//! (`Gitlab::RackAttack.throttled_response_headers`): 429, `text/plain`, the configured
//! `rate_limiting_response_text` (or `Retry later`) and a line feed, and these headers:
//!
//! - `RateLimit-Name`: the rule, e.g. `throttle_authenticated_api`;
//! - `RateLimit-Limit`: the limit scaled to a 60-second window and rounded up
//!   (`ceil(limit * 60 / period)`), as GitLab sends it for clients that assume one minute;
//! - `RateLimit-Observed`: requests counted in the current window, this one included;
//! - `RateLimit-Remaining`: `limit - observed` of the configured (unscaled) limit, at least 0;
//! - `RateLimit-Reset`: when the window ends, Unix seconds; `RateLimit-ResetTime`: the same
//!   as an HTTP date; `Retry-After`: whole seconds until then (`period - now % period`).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::counter::Window;
use super::rules::Rule;

/// GitLab's `DEFAULT_RATE_LIMITING_RESPONSE_TEXT`.
pub const DEFAULT_TEXT: &str = "Retry later";

/// The headers of a limited request, in the order GitLab lists them.
pub fn headers(rule: &Rule, observed: i64, now: i64) -> Vec<(&'static str, String)> {
    let window = Window::at(now, rule.period);
    let period = rule.period.max(1);
    let rounded_limit = (rule.limit * 60 + period - 1).div_euclid(period);
    let reset_time = chrono::DateTime::from_timestamp(window.reset, 0)
        .unwrap_or_default()
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string();
    vec![
        ("RateLimit-Name", rule.name.to_string()),
        ("RateLimit-Limit", rounded_limit.to_string()),
        ("RateLimit-Observed", observed.to_string()),
        (
            "RateLimit-Remaining",
            (rule.limit - observed).max(0).to_string(),
        ),
        ("RateLimit-Reset", window.reset.to_string()),
        ("RateLimit-ResetTime", reset_time),
        ("Retry-After", window.retry_after(now).to_string()),
    ]
}

/// The body: the configured text, or the default when it is blank, and a line feed.
pub fn body(configured: &str) -> String {
    let text = if configured.trim().is_empty() {
        DEFAULT_TEXT
    } else {
        configured
    };
    format!("{text}\n")
}

pub fn throttled(rule: &Rule, observed: i64, now: i64, configured_text: &str) -> Response {
    let mut response = (StatusCode::TOO_MANY_REQUESTS, body(configured_text)).into_response();
    let map = response.headers_mut();
    map.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    for (name, value) in headers(rule, observed, now) {
        if let Ok(value) = HeaderValue::from_str(&value) {
            map.insert(name, value);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::super::rules::Who;
    use super::*;

    fn rule(limit: i64, period: i64) -> Rule {
        Rule {
            name: "throttle_authenticated_api",
            who: Who::Authenticated,
            limit,
            period,
        }
    }

    #[test]
    fn headers_follow_gitlab() {
        // GitLab's example match data: count 12, period 60, limit 1, epoch 1609833930
        let h = headers(&rule(1, 60), 12, 1_609_833_930);
        let get = |name: &str| h.iter().find(|(n, _)| *n == name).unwrap().1.clone();
        assert_eq!(get("RateLimit-Name"), "throttle_authenticated_api");
        assert_eq!(get("RateLimit-Limit"), "1");
        assert_eq!(get("RateLimit-Observed"), "12");
        assert_eq!(get("RateLimit-Remaining"), "0");
        assert_eq!(get("Retry-After"), "30");
        assert_eq!(get("RateLimit-Reset"), "1609833960");
        assert_eq!(get("RateLimit-ResetTime"), "Tue, 05 Jan 2021 08:06:00 GMT");
    }

    #[test]
    fn limit_is_scaled_to_a_minute_and_rounded_up() {
        let limit = |l, p| {
            headers(&rule(l, p), 1, 0)
                .into_iter()
                .find(|(n, _)| *n == "RateLimit-Limit")
                .unwrap()
                .1
        };
        assert_eq!(limit(7200, 3600), "120");
        assert_eq!(limit(100, 3600), "2");
        assert_eq!(limit(3, 1), "180");
        assert_eq!(limit(5, 2), "150");
        assert_eq!(limit(1000, 15), "4000");
        assert_eq!(limit(10, 60), "10");
        assert_eq!(limit(0, 60), "0");
    }

    #[test]
    fn body_text() {
        assert_eq!(body(""), "Retry later\n");
        assert_eq!(body("  "), "Retry later\n");
        assert_eq!(body("Slow down"), "Slow down\n");
    }
}
