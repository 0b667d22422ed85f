//! Testing and resending hooks: GitLab's `POST /projects/:id/hooks/:hook_id/test/:trigger`,
//! `POST .../events/:hook_log_id/resend` and `POST /hooks/:id` (system hooks). Each makes one
//! attempt at once (not through the queue), logged like every delivery; a project hook's
//! success re-enables it and a failure counts against it, as in GitLab.

use super::Refusal;
use super::push::{Pushed, Timeouts, push_payload};
use crate::context::ApiContext;
use crate::events::{Event, EventKind};
use crate::git::Repository;
use crate::git::commits::LogQuery;
use crate::git::receive::{self, RefUpdate, ZERO_SHA};
use crate::git::refs::Revision;
use crate::links::UserLinks;
use crate::model::hooks::{HookRow, SystemHookRow};
use crate::model::users::UserRow;
use crate::model::webhooks::{EventRow, LogRow};
use crate::settings::{Settings, keys};
use crate::store::TenantDb;
use crate::webhooks::dispatch::uuid_v4;
use crate::webhooks::payload::{self, Audience, BatchRows, Loader};
use crate::webhooks::send::{self, Attempt, Message, Target};

/// GitLab's test triggers, with the outbox events a sample comes from and the message when
/// the project has none.
pub const TEST_TRIGGERS: &[(&str, &[EventKind], &str)] = &[
    (
        "push_events",
        &[EventKind::Push],
        "Ensure the project has at least one commit.",
    ),
    (
        "tag_push_events",
        &[EventKind::TagPush],
        "Ensure the project has tags.",
    ),
    (
        "issues_events",
        ISSUE_EVENTS,
        "Ensure the project has issues.",
    ),
    (
        "confidential_issues_events",
        ISSUE_EVENTS,
        "Ensure the project has issues.",
    ),
    ("note_events", NOTE_EVENTS, "Ensure the project has notes."),
    (
        "confidential_note_events",
        NOTE_EVENTS,
        "Ensure the project has notes.",
    ),
    (
        "merge_requests_events",
        MERGE_REQUEST_EVENTS,
        "Ensure the project has merge requests.",
    ),
    ("job_events", &[], "Ensure the project has CI jobs."),
    (
        "pipeline_events",
        &[],
        "Ensure the project has CI pipelines.",
    ),
    (
        "wiki_page_events",
        &[],
        "Ensure the wiki is enabled and has pages.",
    ),
    ("releases_events", &[], "Ensure the project has releases."),
];

const MERGE_REQUEST_EVENTS: &[EventKind] = &[
    EventKind::MergeRequestOpened,
    EventKind::MergeRequestUpdated,
    EventKind::MergeRequestClosed,
    EventKind::MergeRequestReopened,
    EventKind::MergeRequestMerged,
];
const ISSUE_EVENTS: &[EventKind] = &[
    EventKind::IssueOpened,
    EventKind::IssueUpdated,
    EventKind::IssueClosed,
    EventKind::IssueReopened,
];
const NOTE_EVENTS: &[EventKind] = &[EventKind::NoteCreated, EventKind::NoteUpdated];

/// How a test or resend went, for the API's answer.
pub struct Tried {
    /// The receiver's status, if it answered.
    pub status: Option<u16>,
    pub success: bool,
    /// Why it failed, GitLab-style.
    pub message: String,
}

fn tried(attempt: &Attempt) -> Tried {
    let log = attempt.log();
    let status = log.and_then(|l| l.response_status.parse::<u16>().ok());
    let success = matches!(attempt, Attempt::Made { success: true, .. });
    let message = match (status, log) {
        (Some(code), _) => format!("{code} {}", reason(code)),
        (None, Some(log)) => log
            .internal_error_message
            .clone()
            .unwrap_or_else(|| "internal error".into()),
        (None, None) => "the formatter is busy, try again".into(),
    };
    Tried {
        status,
        success,
        message,
    }
}

fn reason(code: u16) -> &'static str {
    axum::http::StatusCode::from_u16(code)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("")
}

async fn run(
    ctx: &ApiContext,
    db: &TenantDb,
    target: &Target,
    message: Message,
) -> Result<Tried, Refusal> {
    let attempt = send::attempt(ctx, db, target, &message).await;
    send::finish(db, &attempt, None).await?;
    Ok(tried(&attempt))
}

/// Sends a sample of `trigger` to a project hook: the project's newest event of that kind,
/// built as it would be delivered now.
pub async fn test_project_hook(
    ctx: &ApiContext,
    db: &TenantDb,
    hook: &HookRow,
    trigger: &str,
    tester: &UserRow,
) -> Result<Result<Tried, String>, Refusal> {
    let Some((_, kinds, missing)) = TEST_TRIGGERS.iter().find(|(t, _, _)| *t == trigger) else {
        return Ok(Err("Testing not available for this hook".into()));
    };
    let settings = ctx.settings.get(db).await?;
    let rows = BatchRows::default();
    let loader = Loader {
        db,
        rows: &rows,
        data_dir: &ctx.config.storage.data_dir,
        base_url: &hook.instance_url,
        avatar_service: settings.get(keys::AVATAR_SERVICE_ENABLED),
    };
    let mut events = if kinds.is_empty() {
        Vec::new()
    } else {
        db.recent_project_events(hook.project_id, kinds, 50).await?
    };
    if events.is_empty() && trigger == "push_events" {
        events.extend(sample_push(ctx, db, &settings, hook, tester).await?);
    }
    for event in &events {
        let recorded = payload::recorded(event);
        for candidate in payload::candidates(event, &recorded) {
            let wanted = matches!(&candidate.audience, Audience::Project { toggle, .. } if *toggle == trigger);
            if !wanted {
                continue;
            }
            let body = loader.build(event, &recorded, &candidate).await?;
            let Some(body) = body else { continue };
            let message = Message {
                trigger: candidate.trigger.to_string(),
                event_name: candidate.event_name.to_string(),
                payload: body,
                event_uuid: uuid_v4(),
                idempotency_key: uuid_v4(),
            };
            return Ok(Ok(run(ctx, db, &Target::project(hook, ctx), message).await?));
        }
    }
    Ok(Err((*missing).to_string()))
}

/// How many of the default branch's commits a sample push lists, as GitLab's `build_sample`.
const SAMPLE_COMMITS: usize = 3;

/// A push of the default branch's newest commits by `tester`, as GitLab's
/// `Gitlab::DataBuilder::Push.build_sample` makes for a project that has commits but no push
/// yet (one made by `initialize_with_readme`); `None` for an empty repository.
async fn sample_push(
    ctx: &ApiContext,
    db: &TenantDb,
    settings: &Settings,
    hook: &HookRow,
    tester: &UserRow,
) -> Result<Option<EventRow>, Refusal> {
    let Some(project) = db.project_by_id(hook.project_id).await? else {
        return Ok(None);
    };
    let repo = Repository::project(&ctx.config.storage.data_dir, db.tenant_id(), project.id);
    let branch = project.head_branch();
    let Some(revision) = Revision::parse(&format!("refs/heads/{branch}")) else {
        return Ok(None);
    };
    let newest = repo
        .log(&LogQuery {
            revision: Some(&revision),
            limit: SAMPLE_COMMITS as i64,
            ..LogQuery::default()
        })
        .await
        .unwrap_or_default();
    let Some(head) = newest.first() else {
        return Ok(None);
    };
    let ids: Vec<String> = newest.iter().map(|c| c.id.clone()).collect();
    let timeout = Timeouts::from_settings(settings).medium;
    let commits = receive::described_commits(&repo, &ids, timeout).await?;
    let update = RefUpdate {
        old: ZERO_SHA.into(),
        new: head.id.clone(),
        name: format!("refs/heads/{branch}"),
    };
    let pushed = Pushed {
        total: commits.len() as i64,
        commits,
        checkout_sha: Some(head.id.clone()),
        message: None,
    };
    let links = UserLinks {
        base_url: &hook.instance_url,
        avatar_service: settings.get(keys::AVATAR_SERVICE_ENABLED),
    };
    let avatar = links.avatar_url(tester);
    let payload = push_payload(tester, avatar.as_deref(), &update, false, &pushed);
    // As the outbox records an event: the state after it, nothing before.
    let event = Event::new(EventKind::Push, Some(tester.id), project.id)
        .in_project(project.id)
        .after(&payload);
    Ok(Some(EventRow {
        id: 0,
        kind: event.kind,
        actor_id: event.actor_id,
        project_id: event.project_id,
        subject_id: event.subject_id,
        payload: event.payload(),
        created_at: crate::model::now_ms(),
    }))
}

/// Sends `sample` (GitLab's fixed one, as JSON text) to a system hook; returns how the
/// request went.
pub async fn test_system_hook(
    ctx: &ApiContext,
    db: &TenantDb,
    hook: &SystemHookRow,
    sample: String,
) -> Result<Tried, Refusal> {
    let message = Message {
        trigger: "system_hooks".into(),
        event_name: "System Hook".into(),
        payload: sample,
        event_uuid: uuid_v4(),
        idempotency_key: uuid_v4(),
    };
    run(ctx, db, &Target::system(hook, ctx), message).await
}

/// What a resend of a request made for another URL answers (GitLab's `WebHookLog#url_current?`).
pub const URL_CHANGED: &str = "The hook URL has changed, and this log entry cannot be retried";

/// Sends a logged request's payload again, with its idempotency key; only to the URL it was
/// made for, so that a hook pointed elsewhere never receives another receiver's deliveries.
pub async fn resend(
    ctx: &ApiContext,
    db: &TenantDb,
    hook: &HookRow,
    log: &LogRow,
) -> Result<Tried, Refusal> {
    if log.url != hook.url {
        return Err(Refusal::Unprocessable(URL_CHANGED.into()));
    }
    let message = Message {
        trigger: log.trigger_name.clone(),
        event_name: log.event_name.clone(),
        payload: log.payload.clone(),
        event_uuid: uuid_v4(),
        idempotency_key: log.idempotency_key.clone(),
    };
    run(ctx, db, &Target::project(hook, ctx), message).await
}
