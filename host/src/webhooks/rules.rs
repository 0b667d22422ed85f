//! GitLab's auto-disabling of failing project hooks, and Trellis's retries: pure rules over a
//! hook's [`DeliveryState`], unit-tested here and applied by the sender.
//!
//! GitLab sends each event once. A request that fails (no answer, or a status outside 2xx)
//! counts against the hook: after 4 consecutive failures it is disabled for 1 minute, each
//! further failure doubling that up to 24 hours; after 40 it is disabled for good, until a
//! successful test or an edit re-enables it. Trellis also retries the delivery itself: the
//! first retry 1 s later, doubling, [`MAX_ATTEMPTS`] attempts in all.

use crate::model::hooks::DeliveryState;

/// Consecutive failures that disable a hook for a while.
pub const FAILURE_THRESHOLD: i64 = 4;
/// Consecutive failures that disable a hook until it is re-enabled.
pub const PERMANENT_FAILURES: i64 = 40;
const INITIAL_BACKOFF_MS: i64 = 60_000;
const MAX_BACKOFF_MS: i64 = 24 * 60 * 60 * 1000;

/// Attempts per delivery (the first and five retries).
pub const MAX_ATTEMPTS: i64 = 6;
const FIRST_RETRY_MS: i64 = 1_000;

/// GitLab's `alert_status` of a hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlertStatus {
    Executable,
    TemporarilyDisabled,
    PermanentlyDisabled,
}

impl AlertStatus {
    pub fn name(self) -> &'static str {
        match self {
            AlertStatus::Executable => "executable",
            AlertStatus::TemporarilyDisabled => "temporarily_disabled",
            AlertStatus::PermanentlyDisabled => "permanently_disabled",
        }
    }
}

pub fn alert_status(state: &DeliveryState, now: i64) -> AlertStatus {
    if state.recent_failures >= PERMANENT_FAILURES {
        AlertStatus::PermanentlyDisabled
    } else if state.disabled_until.is_some_and(|until| until > now) {
        AlertStatus::TemporarilyDisabled
    } else {
        AlertStatus::Executable
    }
}

/// A request succeeded: the hook is executable again.
pub fn after_success(_: DeliveryState) -> DeliveryState {
    DeliveryState::default()
}

/// A request failed at `now`.
pub fn after_failure(state: DeliveryState, now: i64) -> DeliveryState {
    let recent_failures = (state.recent_failures + 1).min(PERMANENT_FAILURES);
    if recent_failures >= PERMANENT_FAILURES {
        return DeliveryState {
            recent_failures,
            backoff_count: state.backoff_count,
            disabled_until: None,
        };
    }
    if recent_failures < FAILURE_THRESHOLD {
        return DeliveryState {
            recent_failures,
            ..state
        };
    }
    let doublings = u32::try_from(state.backoff_count)
        .unwrap_or(u32::MAX)
        .min(20);
    let backoff = INITIAL_BACKOFF_MS
        .saturating_mul(1 << doublings)
        .min(MAX_BACKOFF_MS);
    DeliveryState {
        recent_failures,
        backoff_count: state.backoff_count + 1,
        disabled_until: Some(now + backoff),
    }
}

/// When to try a delivery again after its `attempts`-th attempt failed; `None` to give up.
pub fn retry_at(attempts: i64, now: i64) -> Option<i64> {
    if attempts >= MAX_ATTEMPTS {
        return None;
    }
    let doublings = u32::try_from(attempts.max(1) - 1).unwrap_or(0).min(20);
    Some(now + FIRST_RETRY_MS * (1 << doublings))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fail(times: usize) -> DeliveryState {
        (0..times).fold(DeliveryState::default(), |s, _| after_failure(s, 0))
    }

    #[test]
    fn four_failures_disable_for_a_minute_then_doubling() {
        assert_eq!(alert_status(&fail(3), 0), AlertStatus::Executable);
        let state = fail(4);
        assert_eq!(state.disabled_until, Some(60_000));
        assert_eq!(alert_status(&state, 0), AlertStatus::TemporarilyDisabled);
        assert_eq!(alert_status(&state, 60_000), AlertStatus::Executable);
        assert_eq!(fail(5).disabled_until, Some(120_000));
        assert_eq!(fail(6).disabled_until, Some(240_000));
        assert_eq!(fail(39).disabled_until, Some(MAX_BACKOFF_MS));
    }

    #[test]
    fn forty_failures_disable_for_good_and_success_resets() {
        let state = fail(40);
        assert_eq!(
            alert_status(&state, i64::MAX),
            AlertStatus::PermanentlyDisabled
        );
        assert_eq!(state.disabled_until, None);
        assert_eq!(fail(45).recent_failures, PERMANENT_FAILURES);
        let state = after_success(state);
        assert_eq!(alert_status(&state, 0), AlertStatus::Executable);
    }

    #[test]
    fn retries_start_within_ten_seconds_and_are_bounded() {
        assert_eq!(retry_at(1, 0), Some(1_000));
        assert_eq!(retry_at(2, 0), Some(2_000));
        assert_eq!(retry_at(3, 0), Some(4_000));
        assert_eq!(retry_at(5, 0), Some(16_000));
        assert_eq!(retry_at(MAX_ATTEMPTS, 0), None);
    }
}
