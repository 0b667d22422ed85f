//! What an accepted push changes, and the push event it records.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use super::sessions::{Allowed, PushSession};
use crate::events::{CommitAuthor, CommitRecord, Event, EventKind, PushRecord};
use crate::git::receive::{self, PushedCommit, RefUpdate};
use crate::git::{self, Repository};
use crate::jobs::Job;
use crate::model::users::UserRow;
use crate::services::merge_requests;
use crate::services::projects::refresh_statistics;
use crate::services::protected_branches::{self as rules};
use crate::store::projects::ProjectChanges;

/// The most commits a push event lists (GitLab's push hooks list the last 20).
pub const EVENT_COMMITS: usize = 20;

/// What an accepted push changes (see the module's documentation), in this order: read
/// everything from git, then write.
pub(super) async fn after_push(session: &PushSession, allowed: Allowed) -> anyhow::Result<()> {
    let timeouts = session.timeouts;
    let refs_now: HashMap<String, String> = receive::refs(&session.context.repo, timeouts.medium)
        .await?
        .into_iter()
        .collect();
    // What git did apply: a reference now at its new value (or gone, for a deletion).
    let applied: Vec<&RefUpdate> = allowed
        .updates
        .iter()
        .filter(|u| match refs_now.get(&u.name) {
            Some(value) => *value == u.new,
            None => u.is_deletion(),
        })
        .collect();
    if applied.is_empty() {
        return Ok(());
    }
    let branch = default_branch(session, &applied).await?;
    let statistics = refresh_statistics(
        &session.context.db,
        &session.context.repo,
        session.context.project.id,
        &branch,
    );
    // Dropped at the deadline, its git is killed (`kill_on_drop`); the events still go.
    match tokio::time::timeout(timeouts.default, statistics).await {
        Ok(done) => done?,
        Err(_) => tracing::warn!("reading the statistics after a push timed out"),
    }
    let known: Vec<String> = allowed
        .refs_before
        .iter()
        .map(|(_, sha)| sha.clone())
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    // After `default_branch`, which may have just protected the branch the push created.
    let protected = session
        .context
        .db
        .protected_branches(session.context.project.id)
        .await?;
    let protected_tags = match applied.iter().any(|u| u.tag().is_some()) {
        true => {
            session
                .context
                .db
                .protected_tags(session.context.project.id)
                .await?
        }
        false => Vec::new(),
    };
    let hooked = hooked_updates(&applied, session.hooks_limit);
    let pushed_branches: Vec<String> = applied
        .iter()
        .filter_map(|u| u.branch().map(str::to_string))
        .collect();
    let mut events = Vec::new();
    for update in applied.into_iter().filter(|u| hooked.contains(&u.name)) {
        let kind = if update.branch().is_some() {
            EventKind::Push
        } else if update.tag().is_some() {
            EventKind::TagPush
        } else {
            continue; // other references (notes, merge requests) have no hook
        };
        let pushed = if update.is_deletion() {
            Pushed::default()
        } else if kind == EventKind::TagPush {
            Pushed::tag(&session.context.repo, update, timeouts.medium).await?
        } else {
            let (total, commits) = receive::pushed_commits(
                &session.context.repo,
                &update.new,
                &known,
                EVENT_COMMITS,
                timeouts.medium,
            )
            .await?;
            Pushed {
                total,
                commits,
                checkout_sha: Some(update.new.clone()),
                message: None,
            }
        };
        let ref_protected = match (update.branch(), update.tag()) {
            (Some(branch), _) => rules::matching(&protected, branch).next().is_some(),
            (_, Some(tag)) => rules::tag_is_protected(&protected_tags, tag),
            _ => false,
        };
        let context = &session.context;
        let payload = push_payload(
            &context.pusher,
            context.pusher_avatar.as_deref(),
            update,
            ref_protected,
            &pushed,
        );
        events.push(
            Event::new(
                kind,
                Some(session.context.pusher.id),
                session.context.project.id,
            )
            .in_project(session.context.project.id)
            .after(&payload),
        );
    }
    let today = chrono::Utc::now()
        .date_naive()
        .format("%Y-%m-%d")
        .to_string();
    session
        .context
        .db
        .record_push(session.context.project.id, &events)
        .await?;
    // Not skipped on the session's row, which may come from the token cache: the update
    // itself writes (and drops cached callers) only when the stored day is older.
    session
        .context
        .db
        .record_activity(session.context.pusher.id, &today)
        .await?;
    refresh_merge_requests(session, &pushed_branches).await
}

/// The open merge requests from or into the pushed branches get their new diff version and
/// a new mergeability check (queued: any process's workers run it).
async fn refresh_merge_requests(session: &PushSession, branches: &[String]) -> anyhow::Result<()> {
    let context = &session.context;
    for branch in branches {
        let to_check = merge_requests::refresh_after_push(
            &context.db,
            &context.repo,
            &context.project,
            branch,
            context.pusher.id,
        )
        .await?;
        for merge_request_id in to_check {
            let job = Job::MergeabilityCheck {
                project_id: context.project.id,
                merge_request_id,
            };
            crate::jobs::queue(&context.db, &job).await?;
        }
    }
    Ok(())
}

/// The project's default branch after the push: when it does not exist (the first push), one
/// of the branches becomes the default (`main`, `master`, else the first by name, as Gitaly's
/// default branch lookup does) and gets the `default_branch_protection` GitLab gives it when
/// a push creates it.
async fn default_branch(session: &PushSession, applied: &[&RefUpdate]) -> anyhow::Result<String> {
    let repo = &session.context.repo;
    let configured = session
        .context
        .project
        .default_branch
        .clone()
        .unwrap_or_default();
    let mut branch = configured.clone();
    if branch.is_empty() || !repo.branch_exists(&branch).await? {
        let branches = repo.branches().await?;
        let chosen = ["main", "master"]
            .into_iter()
            .find(|b| branches.iter().any(|name| name == b))
            .map(str::to_string)
            .or_else(|| branches.first().cloned());
        let Some(chosen) = chosen else {
            return Ok(branch);
        };
        repo.set_head(&chosen).await?;
        if configured != chosen {
            let mut changes = ProjectChanges::default();
            changes.set("default_branch", chosen.as_str());
            session
                .context
                .db
                .update_project(
                    session.context.project.id,
                    &changes,
                    Some(session.context.pusher.id),
                )
                .await?;
        }
        branch = chosen;
    }
    let created = applied
        .iter()
        .any(|u| u.is_creation() && u.branch() == Some(branch.as_str()));
    if created {
        rules::protect_default_branch(
            &session.context.db,
            session.context.project.id,
            &branch,
            session.context.default_branch_protection,
        )
        .await?;
    }
    Ok(branch)
}

/// The references whose updates get a push event, as GitLab's `Git::ProcessRefChangesService`
/// decides: updates are grouped by kind (branch or tag) and action (create, update, delete),
/// and a group larger than `limit` (`push_event_hooks_limit`) fires no hooks. So a push of
/// thousands of references costs no git work per reference after it is received.
pub(super) fn hooked_updates(applied: &[&RefUpdate], limit: usize) -> HashSet<String> {
    let group = |u: &RefUpdate| (u.tag().is_some(), u.is_creation(), u.is_deletion());
    let mut sizes: HashMap<(bool, bool, bool), usize> = HashMap::new();
    for update in applied {
        *sizes.entry(group(update)).or_default() += 1;
    }
    applied
        .iter()
        .filter(|u| sizes[&group(u)] <= limit)
        .map(|u| u.name.clone())
        .collect()
}

/// What a push event tells of the commits a reference update brought. A branch lists its new
/// commits (the first `EVENT_COMMITS` of `total`) and checks out its new head; a tag, as
/// GitLab's `TagHooksService` does, lists only the commit it points at, which is also its
/// `checkout_sha`, and carries an annotated tag's message. A deletion has none of these.
#[derive(Default)]
pub(crate) struct Pushed {
    pub(crate) total: i64,
    pub(crate) commits: Vec<PushedCommit>,
    pub(crate) checkout_sha: Option<String>,
    pub(crate) message: Option<String>,
}

impl Pushed {
    async fn tag(repo: &Repository, update: &RefUpdate, timeout: Duration) -> anyhow::Result<Self> {
        let target = git::refs::Revision::parse(&update.new);
        let commit = match target {
            Some(target) => repo.resolve_commit(&target).await?,
            None => None,
        };
        let Some(commit) = commit else {
            return Ok(Pushed::default()); // a tag of a tree or a blob
        };
        // One commit, read directly: counting what the tag "brought" would walk its history.
        let commits =
            receive::described_commits(repo, std::slice::from_ref(&commit), timeout).await?;
        Ok(Pushed {
            total: commits.len() as i64,
            commits,
            checkout_sha: Some(commit),
            message: repo.tag_message(&update.name).await?,
        })
    }
}

/// The push event's object: what GitLab's Push Hook and Tag Push Hook carry.
pub(crate) fn push_payload(
    pusher: &UserRow,
    pusher_avatar: Option<&str>,
    update: &RefUpdate,
    ref_protected: bool,
    pushed: &Pushed,
) -> PushRecord {
    PushRecord {
        before: update.old.clone(),
        after: update.new.clone(),
        reference: update.name.clone(),
        ref_protected,
        checkout_sha: pushed.checkout_sha.clone(),
        message: pushed.message.clone(),
        user_id: pusher.id,
        user_name: pusher.name.clone(),
        user_username: pusher.username.clone(),
        user_email: pusher.email.clone(),
        user_avatar: pusher_avatar.map(str::to_string),
        commits: pushed.commits.iter().map(commit_record).collect(),
        total_commits_count: pushed.total,
    }
}

fn commit_record(commit: &PushedCommit) -> CommitRecord {
    CommitRecord {
        id: commit.id.clone(),
        message: commit.message.clone(),
        title: commit
            .message
            .lines()
            .next()
            .unwrap_or_default()
            .to_string(),
        timestamp: commit.timestamp.clone(),
        author: CommitAuthor {
            name: commit.author_name.clone(),
            email: commit.author_email.clone(),
        },
        added: commit.added.clone(),
        modified: commit.modified.clone(),
        removed: commit.removed.clone(),
    }
}
