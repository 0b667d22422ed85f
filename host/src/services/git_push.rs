//! Pushes, whichever transport carries them (smart HTTP in `git_http`, SSH in `git_ssh`).
//!
//! **The decision point is [`pre_receive`].** It gets the push session (project, pusher and
//! their level), the reference updates, and the environment under which git sees the pushed
//! (still quarantined) objects, and answers [`Verdict::Allow`] or [`Verdict::Refuse`] with
//! the message the git client shows as `remote: GitLab: <message>`. Protected branches are
//! its first check ([`protected_branch_checks`]); push rules go after them
//! ([`super::push_rules::check_push`], the tenant's `push_rules` plugin binding). It runs while git waits in its `pre-receive` hook
//! (`git::receive`, the callback in `git_hooks`), so a refusal moves no reference and git
//! drops the quarantined objects.
//!
//! **How a transport uses it**, after it has authenticated the pusher and checked that they
//! may push at all (Developer, not archived: `git_access::rules`):
//!
//! 1. `ctx.pushes.start(NewPush { .. })` registers a session and returns a [`Push`];
//! 2. run `git [-c config]... receive-pack` with [`Push::receive_options`]'s `config` before
//!    the subcommand and its `env` added (HTTP adds `--stateless-rpc`; SSH runs it plain on
//!    the channel), copying the client's bytes into it through [`Push::commands_tap`], so
//!    that push rules start on a pushed pack before the hook asks (`super::push_prescan`);
//! 3. once git has exited, whatever its status, call [`Push::finish`]. Dropping a `Push`
//!    instead (the client went away) unregisters the session and records nothing.
//!
//! [`Push::finish`] is what every accepted push changes: the default branch on the first push
//! (and its `default_branch_protection`), statistics, languages, `empty_repo`, the project's
//! `last_activity_at`, the pusher's `last_activity_on`, and one `push` or `tag_push` event per
//! updated branch or tag, all recorded in one store call. Git never runs inside a database
//! transaction: everything git says is read first.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use super::projects::refresh_statistics;
use super::protected_branches::{self as rules, Actor, DefaultBranchProtection};
use super::push_prescan::Prescan;
use super::push_rules::{self, PushSubject};
use super::ref_names;
use crate::access_level::AccessLevel;
use crate::events::{Event, EventKind};
use crate::git::commands_tap::CommandsTap;
use crate::git::receive::{self, PushedCommit, Quarantine, ReceiveOptions, RefUpdate};
use crate::git::{self, Repository};
use crate::model::projects::ProjectRow;
use crate::model::users::UserRow;
use crate::plugins::Plugins;
use crate::plugins::push_rules::PushVerdict;
use crate::settings::{Settings, keys};
use crate::store::TenantDb;
use crate::store::projects::ProjectChanges;

/// A commit through the API to a branch the caller may not push to (GitLab's commit services).
const API_PUSH_PROTECTED: &str = "You are not allowed to push into this branch";
/// GitLab's refusals, as its git access checks word them.
pub const PUSH_PROTECTED: &str =
    "You are not allowed to push code to protected branches on this project.";
pub const FORCE_PUSH_PROTECTED: &str =
    "You are not allowed to force push code to a protected branch on this project.";
pub const DELETE_PROTECTED: &str = "You are not allowed to delete protected branches from this project. Only a project maintainer or owner can delete a protected branch.";
pub const DELETE_PROTECTED_NOT_WEB: &str =
    "You can only delete protected branches using the web interface.";
pub const CREATE_PROTECTED: &str =
    "You are not allowed to create protected branches on this project.";
pub const CREATE_PROTECTED_NOT_WEB: &str =
    "You can only create protected branches using the web interface and API.";
pub const DELETE_DEFAULT_BRANCH: &str = "The default branch of a project cannot be deleted.";
// GitLab's `Gitlab::Checks::TagCheck` messages.
pub const CREATE_PROTECTED_TAG: &str = "You are not allowed to create this tag as it is protected.";
pub const UPDATE_PROTECTED_TAG: &str = "Protected tags cannot be updated.";
pub const DELETE_PROTECTED_TAG: &str = "You are not allowed to delete protected tags from this project. Only a project maintainer or owner can delete a protected tag.";
pub const DELETE_PROTECTED_TAG_NOT_WEB: &str =
    "You can only delete protected tags using the web interface.";
/// When the server cannot decide (git failed or timed out), the push is refused.
const UNDECIDED: &str = "The push could not be checked. Please try again later.";

/// The most commits a push event lists (GitLab's push hooks list the last 20).
pub const EVENT_COMMITS: usize = 20;

/// How long the server's own git work may run (the `git_backend_timeout_*` settings): `fast`
/// for each check of the decision, `medium` for each read of what a push brought, `default`
/// for the statistics.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub fast: Duration,
    pub medium: Duration,
    pub default: Duration,
}

impl Timeouts {
    pub fn from_settings(settings: &Settings) -> Timeouts {
        let seconds = |key: keys::IntSetting, fallback: i64| {
            Duration::from_secs(settings.get(key).filter(|s| *s > 0).unwrap_or(fallback) as u64)
        };
        Timeouts {
            fast: seconds(keys::GIT_BACKEND_TIMEOUT_FAST, 10),
            medium: seconds(keys::GIT_BACKEND_TIMEOUT_MEDIUM, 30),
            default: seconds(keys::GIT_BACKEND_TIMEOUT_DEFAULT, 55),
        }
    }
}

/// What a transport knows once it has authorized a push: who pushes where.
pub struct PushContext {
    pub db: TenantDb,
    pub repo: Repository,
    pub project: ProjectRow,
    /// The protection the project's default branch gets when a push creates it: the
    /// group's setting when it has one, else the instance's (see
    /// [`rules::DefaultBranchProtection::of`]).
    pub default_branch_protection: DefaultBranchProtection,
    pub pusher: UserRow,
    /// The pusher's avatar URL, as the push event shows it.
    pub pusher_avatar: Option<String>,
    /// The pusher's level in the project, and whether they administer the instance.
    pub actor: Actor,
    /// A change the server makes for the repository API rather than a `git push`: GitLab
    /// lets it create a protected branch with merge rights and a Maintainer delete one.
    pub via_api: bool,
    /// What the client is told when the push is allowed (a moved project's new remote).
    pub notice: Option<String>,
}

/// A push in progress: who pushes where, and what its `pre-receive` allowed.
pub struct PushSession {
    pub id: String,
    pub context: PushContext,
    pub timeouts: Timeouts,
    /// The plugins push rules run in.
    pub plugins: Arc<Plugins>,
    max_input_bytes: Option<u64>,
    /// `push_event_hooks_limit`: a push with more branch (or tag) changes of one kind than
    /// this records no push event for them.
    hooks_limit: usize,
    /// The updates `pre-receive` allowed, with the references' values before the push.
    allowed: Mutex<Option<Allowed>>,
    /// Push rules already running on the pushed objects, for `pre-receive` to take.
    prescan: Mutex<Option<Prescan>>,
}

impl PushSession {
    /// What push rules check of this push: `updates`, with the pushed objects seen through
    /// `quarantine_env`.
    pub fn push_rules_subject<'a>(
        &'a self,
        updates: &'a [RefUpdate],
        quarantine_env: &'a [(String, String)],
    ) -> PushSubject<'a> {
        PushSubject {
            project: &self.context.project,
            pusher: &self.context.pusher,
            updates,
            repository: self.context.repo.path(),
            quarantine_env,
        }
    }
}

struct Allowed {
    updates: Vec<RefUpdate>,
    refs_before: Vec<(String, String)>,
}

/// The sessions of this process's pushes in progress, by id, for the hook callback to find.
#[derive(Clone)]
pub struct PushSessions {
    sessions: Arc<Mutex<HashMap<String, Arc<PushSession>>>>,
    hooks_dir: PathBuf,
    socket: PathBuf,
    plugins: Arc<Plugins>,
}

impl PushSessions {
    /// `hooks_dir` holds the server's `pre-receive` (`git::receive::install_hooks`); the
    /// hook calls back on `socket` (`git_hooks::listen`); push rules run in `plugins`.
    pub fn new(hooks_dir: PathBuf, socket: PathBuf, plugins: Arc<Plugins>) -> PushSessions {
        PushSessions {
            sessions: Arc::default(),
            hooks_dir,
            socket,
            plugins,
        }
    }

    /// Registers a push. Its id is random (128 bits) and only ever given to the git it runs,
    /// so it also proves to the callback that the hook belongs to this push.
    pub fn start(&self, context: PushContext, settings: &Settings) -> Push {
        let id = crate::auth::secrets::generate("", 32);
        let max_input_bytes = settings
            .get(keys::RECEIVE_MAX_INPUT_SIZE)
            .filter(|mb| *mb > 0)
            .map(|mb| mb as u64 * 1024 * 1024);
        let session = Arc::new(PushSession {
            id: id.clone(),
            context,
            timeouts: Timeouts::from_settings(settings),
            plugins: self.plugins.clone(),
            max_input_bytes,
            hooks_limit: settings
                .get(keys::PUSH_EVENT_HOOKS_LIMIT)
                .and_then(|limit| usize::try_from(limit).ok())
                .unwrap_or(3),
            allowed: Mutex::new(None),
            prescan: Mutex::new(None),
        });
        self.lock().insert(id, session.clone());
        Push {
            session,
            sessions: self.clone(),
        }
    }

    /// The session `id` names, if it is in progress.
    pub fn get(&self, id: &str) -> Option<Arc<PushSession>> {
        self.lock().get(id).cloned()
    }

    pub fn socket(&self) -> &std::path::Path {
        &self.socket
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<PushSession>>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A registered push; unregistered when finished or dropped.
pub struct Push {
    session: Arc<PushSession>,
    sessions: PushSessions,
}

impl Drop for Push {
    fn drop(&mut self) {
        self.sessions.lock().remove(&self.session.id);
        // A prescan nobody took (the push failed before its hook) stops here.
        self.session
            .prescan
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
    }
}

impl Push {
    /// How to run `git receive-pack` for this push: the server's hooks, the largest pack
    /// (`receive_max_input_size`), and the session id and callback socket for the hook.
    pub fn receive_options(&self) -> ReceiveOptions {
        ReceiveOptions::new(
            &self.sessions.hooks_dir,
            self.session.max_input_bytes,
            vec![
                (receive::PUSH_ID_ENV.into(), self.session.id.clone()),
                (
                    receive::HOOK_SOCKET_ENV.into(),
                    self.sessions.socket.display().to_string(),
                ),
            ],
        )
    }

    /// What a transport passes the bytes it copies into `receive-pack` through, so that push
    /// rules start on the pushed objects as soon as git has indexed them
    /// ([`Prescan`]); `None` when the tenant has no push rules to run. Call it before
    /// starting git.
    pub fn commands_tap(&self) -> Option<CommandsTap> {
        let context = &self.session.context;
        if !push_rules::is_bound(&self.session.plugins, &context.db) {
            return None;
        }
        let before = receive::incoming_dirs(&context.repo);
        // The tap may outlive the push (a body still trickling in after git failed).
        let session = Arc::downgrade(&self.session);
        Some(CommandsTap::new(Box::new(move |updates| {
            let Some(session) = session.upgrade() else {
                return;
            };
            let prescan = Prescan::start(&session, before, updates);
            *session.prescan.lock().unwrap_or_else(|e| e.into_inner()) = Some(prescan);
        })))
    }

    /// After git has exited: what the accepted updates change besides the repository.
    /// Failures are logged; the push itself has happened.
    pub async fn finish(&self) {
        let allowed = self
            .session
            .allowed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let Some(allowed) = allowed else {
            return; // nothing passed pre-receive: nothing changed
        };
        if let Err(error) = after_push(&self.session, allowed).await {
            tracing::warn!(
                error = format!("{error:#}"),
                "updating a project after a push failed"
            );
        }
    }
}

impl Push {
    /// A change the server makes itself (the repository API's branches, tags and commits),
    /// decided as a pushed one: [`pre_receive`] on objects already in the repository, so
    /// protected branches and push rules apply and [`Push::finish`] records it.
    pub async fn check_server_update(&self, updates: &[RefUpdate]) -> git::Result<Verdict> {
        let session = &self.session;
        let refs_before = receive::refs(&session.context.repo, session.timeouts.fast).await?;
        let verdict = pre_receive(session, updates, &[]).await?;
        if verdict == Verdict::Allow {
            *session.allowed.lock().unwrap_or_else(|e| e.into_inner()) = Some(Allowed {
                updates: updates.to_vec(),
                refs_before,
            });
        }
        Ok(verdict)
    }
}

/// The answer of [`pre_receive`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// Refused, with the message the git client shows (`remote: GitLab: <message>`).
    Refuse(String),
}

/// **The pre-receive decision**: may `session`'s push make `updates`? `quarantine` is the
/// environment under which git sees the pushed objects (add it to any git command run on
/// `session.context.repo`). Checks run in order and the first refusal answers: protected branches, protected tags,
/// then push rules.
pub async fn pre_receive(
    session: &PushSession,
    updates: &[RefUpdate],
    quarantine: &[(String, String)],
) -> git::Result<Verdict> {
    if let Some(message) = ref_names::refusal(updates) {
        return Ok(Verdict::Refuse(message.into()));
    }
    let verdict = protected_branch_checks(session, updates, quarantine).await?;
    if verdict != Verdict::Allow {
        return Ok(verdict);
    }
    let verdict = protected_tag_checks(session, updates).await?;
    if verdict != Verdict::Allow {
        return Ok(verdict);
    }
    let prescan = session
        .prescan
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    let prescanned = match prescan {
        Some(prescan) => prescan.verdict(updates, quarantine).await,
        None => None,
    };
    let verdict = match prescanned {
        Some(verdict) => verdict,
        None => {
            let subject = session.push_rules_subject(updates, quarantine);
            push_rules::check_push(&session.plugins, &session.context.db, subject).await
        }
    };
    Ok(match verdict {
        PushVerdict::Allow => Verdict::Allow,
        PushVerdict::Refuse(message) => Verdict::Refuse(message),
    })
}

/// The hook callback's entry: finds the session, checks the quarantine environment, decides,
/// and remembers what it allowed for [`Push::finish`]. An unknown session is refused.
pub async fn check(
    sessions: &PushSessions,
    id: &str,
    updates: &[RefUpdate],
    quarantine: &Quarantine,
) -> Verdict {
    let Some(session) = sessions.get(id) else {
        return Verdict::Refuse(UNDECIDED.into());
    };
    let decided = async {
        let env = quarantine.env_for(&session.context.repo)?;
        let refs_before = receive::refs(&session.context.repo, session.timeouts.fast).await?;
        let verdict = pre_receive(&session, updates, &env).await?;
        Ok::<_, git::Error>((verdict, refs_before))
    };
    match decided.await {
        Ok((Verdict::Allow, refs_before)) => {
            *session.allowed.lock().unwrap_or_else(|e| e.into_inner()) = Some(Allowed {
                updates: updates.to_vec(),
                refs_before,
            });
            Verdict::Allow
        }
        Ok((refused, _)) => refused,
        Err(error) => {
            tracing::warn!(%error, "a push could not be checked");
            Verdict::Refuse(UNDECIDED.into())
        }
    }
}

/// GitLab's protected branch checks (`Gitlab::Checks::BranchCheck`) for each branch update:
/// the default branch may not be deleted; then, for a protected branch (any branch of an
/// empty repository while `default_branch_protection` protects its first push), no force
/// push unless allowed, creation and pushes by the levels allowed to push (creating also by
/// those allowed to merge, but only through the API), and no deletion over git.
pub async fn protected_branch_checks(
    session: &PushSession,
    updates: &[RefUpdate],
    quarantine: &[(String, String)],
) -> git::Result<Verdict> {
    let branches = updates.iter().filter(|u| u.branch().is_some());
    if branches.clone().next().is_none() {
        return Ok(Verdict::Allow);
    }
    let protected = session
        .context
        .db
        .protected_branches(session.context.project.id)
        .await
        .map_err(|e| git::Error::Failed {
            command: "pre-receive".into(),
            stderr: e.to_string(),
        })?;
    let empty = !session.context.repo.has_commits().await?;
    let actor = session.context.actor;
    let maintainer = actor.admin || actor.level >= AccessLevel::Maintainer;
    for update in branches {
        let name = update.branch().unwrap_or_default();
        let default = session.context.project.default_branch.as_deref() == Some(name);
        if update.is_deletion() && default && !empty {
            return Ok(refuse(DELETE_DEFAULT_BRANCH));
        }
        let (may_push, may_merge) = if empty
            && session
                .context
                .default_branch_protection
                .initial_push_needs_maintainer()
        {
            (maintainer, maintainer)
        } else if rules::matching(&protected, name).next().is_some() {
            (
                rules::allowed(&protected, name, "push", actor),
                rules::allowed(&protected, name, "merge", actor),
            )
        } else {
            continue;
        };
        if update.is_creation() {
            // Through the API, GitLab lets those allowed to merge create the branch too.
            let may_create = may_push || (session.context.via_api && may_merge);
            if !may_create {
                return Ok(refuse(if may_merge {
                    CREATE_PROTECTED_NOT_WEB
                } else {
                    CREATE_PROTECTED
                }));
            }
        } else if update.is_deletion() {
            if session.context.via_api && maintainer {
                continue;
            }
            return Ok(refuse(if maintainer {
                DELETE_PROTECTED_NOT_WEB
            } else {
                DELETE_PROTECTED
            }));
        } else {
            let forced = !receive::is_ancestor(
                &session.context.repo,
                &update.old,
                &update.new,
                quarantine,
                session.timeouts.fast,
            )
            .await?;
            if forced && !rules::force_push_allowed(&protected, name) {
                return Ok(refuse(FORCE_PUSH_PROTECTED));
            }
            if !may_push {
                // The API's commits answer as GitLab's commit services do.
                return Ok(refuse(if session.context.via_api {
                    API_PUSH_PROTECTED
                } else {
                    PUSH_PROTECTED
                }));
            }
        }
    }
    Ok(Verdict::Allow)
}

/// GitLab's protected tag checks (`Gitlab::Checks::TagCheck#protected_tag_checks`) for each
/// update of a protected tag: never moved; deleted only by a Maintainer through the API; and
/// created (or deleted) only by the level allowed to create it.
pub async fn protected_tag_checks(
    session: &PushSession,
    updates: &[RefUpdate],
) -> git::Result<Verdict> {
    let tags = updates.iter().filter_map(|u| Some((u, u.tag()?)));
    if tags.clone().next().is_none() {
        return Ok(Verdict::Allow);
    }
    let protected = session
        .context
        .db
        .protected_tags(session.context.project.id)
        .await
        .map_err(|e| git::Error::Failed {
            command: "pre-receive".into(),
            stderr: e.to_string(),
        })?;
    let actor = session.context.actor;
    for (update, name) in tags {
        if !rules::tag_is_protected(&protected, name) {
            continue;
        }
        if update.is_deletion() {
            let maintainer = actor.admin || actor.level >= AccessLevel::Maintainer;
            if !maintainer {
                return Ok(refuse(DELETE_PROTECTED_TAG));
            }
            if !session.context.via_api {
                return Ok(refuse(DELETE_PROTECTED_TAG_NOT_WEB));
            }
        } else if !update.is_creation() {
            return Ok(refuse(UPDATE_PROTECTED_TAG));
        }
        if !rules::may_create_tag(&protected, name, actor) {
            return Ok(refuse(CREATE_PROTECTED_TAG));
        }
    }
    Ok(Verdict::Allow)
}

fn refuse(message: &str) -> Verdict {
    Verdict::Refuse(message.to_string())
}

/// What an accepted push changes (see the module's documentation), in this order: read
/// everything from git, then write.
async fn after_push(session: &PushSession, allowed: Allowed) -> anyhow::Result<()> {
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
fn hooked_updates(applied: &[&RefUpdate], limit: usize) -> HashSet<String> {
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
) -> Value {
    json!({
        "before": update.old,
        "after": update.new,
        "ref": update.name,
        "ref_protected": ref_protected,
        "checkout_sha": pushed.checkout_sha,
        "message": pushed.message,
        "user_id": pusher.id,
        "user_name": pusher.name,
        "user_username": pusher.username,
        "user_email": pusher.email,
        "user_avatar": pusher_avatar,
        "commits": pushed.commits.iter().map(commit_payload).collect::<Vec<_>>(),
        "total_commits_count": pushed.total,
    })
}

fn commit_payload(commit: &PushedCommit) -> Value {
    let title = commit.message.lines().next().unwrap_or_default();
    json!({
        "id": commit.id,
        "message": commit.message,
        "title": title,
        "timestamp": commit.timestamp,
        "author": {"name": commit.author_name, "email": commit.author_email},
        "added": commit.added,
        "modified": commit.modified,
        "removed": commit.removed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::receive::ZERO_SHA;
    use crate::test_support;

    /// A project with a README commit on `main`, protected as `default_branch_protection`
    /// 2 protects it, in a fresh SQLite database under `dir`.
    async fn project(dir: &std::path::Path) -> (TenantDb, UserRow, ProjectRow, Repository) {
        let world = test_support::tenant(dir).await;
        let protection = Some(DefaultBranchProtection(2));
        let row = world.project(dir, "Pushed", protection).await;
        let repo = Repository::project(dir, world.tenant.tenant_id(), row.id);
        (world.tenant, world.root, row, repo)
    }

    fn git_out(repo: &Repository, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .arg("--git-dir")
            .arg(repo.path())
            .args(args)
            .env("GIT_AUTHOR_NAME", "A")
            .env("GIT_AUTHOR_EMAIL", "a@example.com")
            .env("GIT_COMMITTER_NAME", "A")
            .env("GIT_COMMITTER_EMAIL", "a@example.com")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    fn update(old: &str, new: &str, name: &str) -> Vec<RefUpdate> {
        vec![RefUpdate {
            old: old.into(),
            new: new.into(),
            name: name.into(),
        }]
    }

    #[test]
    fn only_groups_within_the_hooks_limit_get_push_events() {
        let update = |old: &str, new: &str, name: &str| RefUpdate {
            old: old.repeat(40),
            new: new.repeat(40),
            name: name.into(),
        };
        let mut updates: Vec<RefUpdate> = (0..4)
            .map(|n| update("0", "a", &format!("refs/heads/new-{n}")))
            .collect();
        updates.push(update("b", "a", "refs/heads/main"));
        updates.push(update("b", "0", "refs/heads/gone"));
        updates.push(update("0", "a", "refs/tags/v1"));
        let applied: Vec<&RefUpdate> = updates.iter().collect();
        let mut hooked: Vec<String> = hooked_updates(&applied, 3).into_iter().collect();
        hooked.sort();
        assert_eq!(
            hooked,
            ["refs/heads/gone", "refs/heads/main", "refs/tags/v1"]
        );
        assert_eq!(hooked_updates(&applied, 4).len(), 7);
    }

    #[tokio::test]
    async fn the_decision_follows_protected_branches() {
        let dir = tempfile::tempdir().unwrap();
        let (db, root, row, repo) = project(dir.path()).await;
        let main = git_out(&repo, &["rev-parse", "refs/heads/main"]);
        let tree = git_out(&repo, &["rev-parse", "refs/heads/main^{tree}"]);
        let child = git_out(&repo, &["commit-tree", &tree, "-p", &main, "-m", "child"]);
        let unrelated = git_out(&repo, &["commit-tree", &tree, "-m", "unrelated"]);
        let runtime =
            crate::plugins::runtime::Runtime::new(crate::plugins::runtime::RuntimeOptions {
                cache_dir: None,
                pool_instances: 1,
                max_memory_bytes: 64 << 20,
            })
            .unwrap();
        let plugins = Plugins::new(runtime, crate::plugins::Maxima::default());
        let sessions =
            PushSessions::new(dir.path().join("hooks"), dir.path().join("s.sock"), plugins);
        let settings = Settings::from_stored(1, 0, 0, "{}");
        let start = |level| {
            let context = PushContext {
                db: db.clone(),
                repo: repo.clone(),
                project: row.clone(),
                default_branch_protection: DefaultBranchProtection(2),
                pusher: root.clone(),
                pusher_avatar: None,
                actor: Actor {
                    level,
                    admin: false,
                },
                via_api: false,
                notice: None,
            };
            sessions.start(context, &settings)
        };
        let developer = start(AccessLevel::Developer);
        let maintainer = start(AccessLevel::Maintainer);
        let decide = |push: &Push, updates: Vec<RefUpdate>| {
            let session = push.session.clone();
            async move { pre_receive(&session, &updates, &[]).await.unwrap() }
        };
        let refused = |message: &str| Verdict::Refuse(message.to_string());
        let to_main = |new: &str| update(&main, new, "refs/heads/main");

        assert_eq!(
            decide(&developer, to_main(&child)).await,
            refused(PUSH_PROTECTED)
        );
        assert_eq!(decide(&maintainer, to_main(&child)).await, Verdict::Allow);
        assert_eq!(
            decide(&maintainer, to_main(&unrelated)).await,
            refused(FORCE_PUSH_PROTECTED)
        );
        assert_eq!(
            decide(&maintainer, to_main(ZERO_SHA)).await,
            refused(DELETE_DEFAULT_BRANCH)
        );
        let feature = update(ZERO_SHA, &child, "refs/heads/feature");
        assert_eq!(decide(&developer, feature).await, Verdict::Allow);
        let tag = update(ZERO_SHA, &unrelated, "refs/tags/v1");
        assert_eq!(decide(&developer, tag).await, Verdict::Allow);

        // A pattern allowing developers and force pushes.
        let new = crate::store::protected_branches::NewProtectedBranch {
            name: "rel/*",
            allow_force_push: true,
            code_owner_approval_required: false,
            levels: vec![("push", 30), ("merge", 40)],
        };
        db.create_protected_branch(row.id, &new, None)
            .await
            .unwrap();
        git_out(&repo, &["update-ref", "refs/heads/rel/1", &main]);
        let rel = update(&main, &unrelated, "refs/heads/rel/1");
        assert_eq!(decide(&developer, rel).await, Verdict::Allow);
        let delete = update(&main, ZERO_SHA, "refs/heads/rel/1");
        assert_eq!(
            decide(&developer, delete.clone()).await,
            refused(DELETE_PROTECTED)
        );
        assert_eq!(
            decide(&maintainer, delete).await,
            refused(DELETE_PROTECTED_NOT_WEB)
        );
        // Creating a branch only maintainers may push, as a developer.
        let new = crate::store::protected_branches::NewProtectedBranch {
            name: "locked",
            allow_force_push: false,
            code_owner_approval_required: false,
            levels: vec![("push", 40), ("merge", 30)],
        };
        db.create_protected_branch(row.id, &new, None)
            .await
            .unwrap();
        let locked = update(ZERO_SHA, &child, "refs/heads/locked");
        assert_eq!(
            decide(&developer, locked).await,
            refused(CREATE_PROTECTED_NOT_WEB)
        );
        // Unknown sessions are refused.
        let none = check(&sessions, "nope", &[], &Quarantine::default()).await;
        assert!(matches!(none, Verdict::Refuse(_)));
        drop(developer);
        assert!(sessions.get("nope").is_none());
    }
}
