//! The sessions of pushes in progress: who pushes where, and what its pre-receive allowed.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::after_push::after_push;
use super::pre_receive::pre_receive;
use crate::git::commands_tap::CommandsTap;
use crate::git::receive::{self, ReceiveOptions, RefUpdate};
use crate::git::{self, Repository};
use crate::model::projects::ProjectRow;
use crate::model::users::UserRow;
use crate::plugins::Plugins;
use crate::plugins::push_rules::PushVerdict;
use crate::services::protected_branches::{Actor, DefaultBranchProtection};
use crate::services::push_prescan::Prescan;
use crate::services::push_rules::{self, PushSubject};
use crate::settings::{Settings, keys};
use crate::store::TenantDb;

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
    /// Who asked for the change: a `git push`, the repository API, or a merge.
    pub origin: PushOrigin,
    /// What the client is told when the push is allowed (a moved project's new remote).
    pub notice: Option<String>,
}

/// Where a change to a repository comes from, which decides some protected branch rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushOrigin {
    /// `git push` over HTTP or SSH.
    Git,
    /// The repository API: GitLab lets it create a protected branch with merge rights and a
    /// Maintainer delete one.
    Api,
    /// The merge of a merge request: those allowed to merge into a protected branch may
    /// move it (GitLab's `MatchingMergeRequest` check).
    Merge,
}

impl PushOrigin {
    /// Made by the server on a caller's behalf rather than pushed.
    pub fn by_server(self) -> bool {
        self != PushOrigin::Git
    }
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
    pub(super) hooks_limit: usize,
    /// The updates `pre-receive` allowed, with the references' values before the push.
    pub(super) allowed: Mutex<Option<Allowed>>,
    /// Push rules already running on the pushed objects, for `pre-receive` to take.
    pub(super) prescan: Mutex<Option<Prescan>>,
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

pub(super) struct Allowed {
    pub(super) updates: Vec<RefUpdate>,
    pub(super) refs_before: Vec<(String, String)>,
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
    pub(super) session: Arc<PushSession>,
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
    pub async fn check_server_update(&self, updates: &[RefUpdate]) -> git::Result<PushVerdict> {
        let session = &self.session;
        let refs_before = receive::refs(&session.context.repo, session.timeouts.fast).await?;
        let verdict = pre_receive(session, updates, &[]).await?;
        if verdict == PushVerdict::Allow {
            *session.allowed.lock().unwrap_or_else(|e| e.into_inner()) = Some(Allowed {
                updates: updates.to_vec(),
                refs_before,
            });
        }
        Ok(verdict)
    }
}
