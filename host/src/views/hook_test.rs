//! What testing and resending hooks answer: the system hook sample (also the body sent), a
//! project hook test's message, and a resent request's status.

use serde::Serialize;
use utoipa::ToSchema;

/// The fixed `project_create` event GitLab sends to test a system hook, and answers with.
#[derive(Clone, Copy, Serialize, ToSchema)]
pub struct SystemHookSample {
    pub project_id: i64,
    pub owner_email: &'static str,
    pub owner_name: &'static str,
    pub name: &'static str,
    pub path: &'static str,
    pub event_name: &'static str,
}

/// GitLab's sample, word for word.
pub const SYSTEM_HOOK_SAMPLE: SystemHookSample = SystemHookSample {
    project_id: 1,
    owner_email: "example@gitlabhq.com",
    owner_name: "Someone",
    name: "Ruby",
    path: "ruby",
    event_name: "project_create",
};

/// A project hook test the receiver accepted: always `201 Created`, as GitLab answers.
#[derive(Serialize, ToSchema)]
pub struct HookTestView {
    pub message: &'static str,
}

/// A logged request sent again: the status the receiver answered.
#[derive(Serialize, ToSchema)]
pub struct HookResendView {
    pub response_status: u16,
}
