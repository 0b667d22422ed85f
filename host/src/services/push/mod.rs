//! Pushes, whichever transport carries them (smart HTTP in `git_http`, SSH in `ssh`), split by
//! job: the sessions of pushes in progress ([`sessions`]), the pre-receive decision
//! ([`pre_receive`]), protected branches and tags ([`protected_refs`]), and what an accepted
//! push changes ([`after_push`]).
//!
//! **The decision point is [`pre_receive`].** It gets the push session (project, pusher and
//! their level), the reference updates, and the environment under which git sees the pushed
//! (still quarantined) objects, and answers [`PushVerdict::Allow`] or [`PushVerdict::Refuse`] with
//! the message the git client shows as `remote: GitLab: <message>`. Protected branches are
//! its first check ([`protected_refs`]); push rules go after them
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

mod after_push;
mod pre_receive;
mod protected_refs;
mod sessions;
#[cfg(test)]
mod tests;

pub use crate::plugins::push_rules::PushVerdict;
pub(crate) use after_push::{Pushed, push_payload};
pub use pre_receive::check;
pub use sessions::{Push, PushContext, PushOrigin, PushSession, PushSessions, Timeouts};
