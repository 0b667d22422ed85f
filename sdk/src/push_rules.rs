//! The `push-rules` world (`trellis:policy@0.2`): accept or refuse a push before any
//! reference moves.
//!
//! The host calls [`PushRules::check_refs`] once per push, then [`PushRules::check_commits`]
//! with the new commits of each reference update in bounded batches, and stops at the first
//! refusal. The default `check_commits` asks [`PushRules::check_commit`] about each commit,
//! so a custom rule is usually that one function:
//!
//! ```ignore
//! use trellis_sdk::push_rules::{Commit, Decision, Push, PushRules, RefUpdate};
//!
//! struct NoWip;
//! impl PushRules for NoWip {
//!     type Config = ();
//!     fn check_commit(_: &(), _: &Push, _: &RefUpdate, commit: &Commit) -> Result<Decision, String> {
//!         Ok(if commit.message.starts_with("WIP") {
//!             Decision::refuse(format!("Commit {} is a work in progress", commit.sha))
//!         } else {
//!             Decision::Allow
//!         })
//!     }
//! }
//! trellis_sdk::export_push_rules!(NoWip);
//! ```
//!
//! The plugin's configuration, logging and the host's `read-blob` are this package version's
//! own ([`config`], [`log`], [`read_blob`]); the crate root's helpers speak 0.1.

use serde::de::DeserializeOwned;

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit/since_v0.2.0",
        world: "push-rules-plugin",
        additional_derives: [PartialEq],
        pub_export_macro: true,
        export_macro_name: "__export_push_rules_plugin",
        default_bindings_module: "trellis_sdk::push_rules::bindings",
    });
}

pub use bindings::exports::trellis::policy::push_rules::{
    ChangedFile, Commit, Decision, Push, Pusher, RefUpdate, Rule, Signature,
};
pub use bindings::trellis::policy::types::{LogLevel, Project, User, Visibility};

/// A push-rules plugin.
pub trait PushRules {
    /// The binding's configuration (`{}` or no configuration gives `Default`).
    type Config: DeserializeOwned + Default;

    /// Checks a configuration beyond what deserialisation checks.
    fn validate(_config: &Self::Config) -> Result<(), String> {
        Ok(())
    }

    /// The reference updates alone (branch names, tag deletions). Allows by default.
    fn check_refs(_config: &Self::Config, _push: &Push) -> Result<Decision, String> {
        Ok(Decision::Allow)
    }

    /// One batch of the new commits of `push.updates[update]`: the first refusal of
    /// [`PushRules::check_commit`] by default.
    fn check_commits(
        config: &Self::Config,
        push: &Push,
        update: &RefUpdate,
        commits: &[Commit],
    ) -> Result<Decision, String> {
        for commit in commits {
            let decision = Self::check_commit(config, push, update, commit)?;
            if decision != Decision::Allow {
                return Ok(decision);
            }
        }
        Ok(Decision::Allow)
    }

    /// One new commit. Allows by default.
    fn check_commit(
        _config: &Self::Config,
        _push: &Push,
        _update: &RefUpdate,
        _commit: &Commit,
    ) -> Result<Decision, String> {
        Ok(Decision::Allow)
    }
}

impl Decision {
    pub fn refuse(message: impl Into<String>) -> Decision {
        Decision::Refuse(message.into())
    }
}

/// The configuration of the current call.
pub fn config<T: DeserializeOwned + Default>() -> Result<T, String> {
    crate::config::parse(&bindings::trellis::policy::host::config())
}

/// Writes a log line (at most 1 KiB per call in all).
pub fn log(level: LogLevel, message: &str) {
    bindings::trellis::policy::host::log(level, message);
}

/// Up to `max_bytes` (the host caps it at 1 MiB, and 16 MiB per call) of a changed file's
/// content, by its `blob_id`.
pub fn read_blob(blob_id: &str, max_bytes: u32) -> Result<Vec<u8>, String> {
    bindings::trellis::policy::push_scan::read_blob(blob_id, max_bytes)
}

/// Whether a reference update deletes the reference (its new id is all zeros).
pub fn deletes(update: &RefUpdate) -> bool {
    is_zero(&update.new_sha)
}

/// Whether a reference update creates the reference (its old id is all zeros).
pub fn creates(update: &RefUpdate) -> bool {
    is_zero(&update.old_sha)
}

fn is_zero(sha: &str) -> bool {
    !sha.is_empty() && sha.bytes().all(|b| b == b'0')
}

// ---- builders for tests -----------------------------------------------------

impl Rule {
    /// A push rule with nothing set; set the fields under test.
    pub fn none() -> Rule {
        Rule {
            commit_message_regex: None,
            commit_message_negative_regex: None,
            branch_name_regex: None,
            author_email_regex: None,
            file_name_regex: None,
            deny_delete_tag: false,
            member_check: false,
            prevent_secrets: false,
            commit_committer_check: false,
            reject_unsigned_commits: false,
            max_file_size: 0,
        }
    }
}

impl Push {
    /// A push to project `group/project` (default branch `main`) by user `pusher`
    /// (`pusher@example.com`, verified), with no push rule and no updates.
    pub fn new() -> Push {
        Push {
            project: Project {
                id: 1,
                path: "group/project".into(),
                visibility: Visibility::Private,
            },
            default_branch: "main".into(),
            rule: None,
            pusher: Pusher {
                user: User {
                    id: 1,
                    username: "pusher".into(),
                    created_at: 0,
                    is_admin: false,
                    external: false,
                },
                name: "Pusher".into(),
                verified_emails: vec!["pusher@example.com".into()],
            },
            updates: Vec::new(),
        }
    }

    pub fn rule(mut self, rule: Rule) -> Push {
        self.rule = Some(rule);
        self
    }

    /// Adds an update of `ref_name` from `old` to `new` (use [`ZERO`] to create or delete).
    pub fn update(mut self, ref_name: &str, old: &str, new: &str) -> Push {
        self.updates.push(RefUpdate {
            ref_name: ref_name.into(),
            old_sha: old.into(),
            new_sha: new.into(),
        });
        self
    }

    pub fn verified_emails(mut self, emails: &[&str]) -> Push {
        self.pusher.verified_emails = emails.iter().map(|e| e.to_string()).collect();
        self
    }
}

impl Default for Push {
    fn default() -> Push {
        Push::new()
    }
}

/// The all-zero object id of a created reference's old side and a deleted one's new side.
pub const ZERO: &str = "0000000000000000000000000000000000000000";

impl Commit {
    /// A commit with `message` by the pusher (`Pusher <pusher@example.com>`, a user),
    /// unsigned, changing no file.
    pub fn new(message: &str) -> Commit {
        Commit {
            sha: "1111111111111111111111111111111111111111".into(),
            message: message.into(),
            author_name: "Pusher".into(),
            author_email: "pusher@example.com".into(),
            committer_name: "Pusher".into(),
            committer_email: "pusher@example.com".into(),
            author_is_user: true,
            committer_is_user: true,
            signature: Signature::Unsigned,
            files: Vec::new(),
        }
    }

    pub fn author(mut self, name: &str, email: &str, is_user: bool) -> Commit {
        (self.author_name, self.author_email) = (name.into(), email.into());
        self.author_is_user = is_user;
        self
    }

    pub fn committer(mut self, name: &str, email: &str, is_user: bool) -> Commit {
        (self.committer_name, self.committer_email) = (name.into(), email.into());
        self.committer_is_user = is_user;
        self
    }

    pub fn signature(mut self, signature: Signature) -> Commit {
        self.signature = signature;
        self
    }

    /// Adds a new file of `size` bytes.
    pub fn added(mut self, path: &str, size: u64) -> Commit {
        self.files.push(ChangedFile {
            path: path.into(),
            size,
            added: true,
            deleted: false,
            blob_id: "2222222222222222222222222222222222222222".into(),
        });
        self
    }

    /// Adds a changed (not new) file of `size` bytes.
    pub fn modified(mut self, path: &str, size: u64) -> Commit {
        self.files.push(ChangedFile {
            path: path.into(),
            size,
            added: false,
            deleted: false,
            blob_id: "3333333333333333333333333333333333333333".into(),
        });
        self
    }

    /// Adds a deleted file.
    pub fn deleted(mut self, path: &str) -> Commit {
        self.files.push(ChangedFile {
            path: path.into(),
            size: 0,
            added: false,
            deleted: true,
            blob_id: String::new(),
        });
        self
    }
}

#[doc(hidden)]
pub fn __validate<T: PushRules>(json: &str) -> Result<(), String> {
    T::validate(&crate::config::parse(json)?)
}

#[doc(hidden)]
pub fn __check_refs<T: PushRules>(push: Push) -> Result<Decision, String> {
    T::check_refs(&config()?, &push)
}

#[doc(hidden)]
pub fn __check_commits<T: PushRules>(
    push: Push,
    update: u32,
    commits: Vec<Commit>,
) -> Result<Decision, String> {
    let ref_update = push
        .updates
        .get(update as usize)
        .ok_or_else(|| format!("no reference update {update}"))?;
    T::check_commits(&config()?, &push, ref_update, &commits)
}

/// Exports a [`PushRules`] implementation as the plugin's `push-rules` world. Only on
/// WebAssembly: built natively (for unit tests) the crate exports nothing.
#[macro_export]
macro_rules! export_push_rules {
    ($plugin:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            struct __TrellisPlugin;
            impl $crate::push_rules::bindings::exports::trellis::policy::push_rules::Guest
                for __TrellisPlugin
            {
                fn check_refs(
                    push: $crate::push_rules::Push,
                ) -> ::core::result::Result<$crate::push_rules::Decision, ::std::string::String>
                {
                    $crate::push_rules::__check_refs::<$plugin>(push)
                }
                fn check_commits(
                    push: $crate::push_rules::Push,
                    update: u32,
                    commits: ::std::vec::Vec<$crate::push_rules::Commit>,
                ) -> ::core::result::Result<$crate::push_rules::Decision, ::std::string::String>
                {
                    $crate::push_rules::__check_commits::<$plugin>(push, update, commits)
                }
            }
            impl $crate::push_rules::bindings::exports::trellis::policy::configurable::Guest
                for __TrellisPlugin
            {
                fn validate_config(
                    config: ::std::string::String,
                ) -> ::core::result::Result<(), ::std::string::String> {
                    $crate::push_rules::__validate::<$plugin>(&config)
                }
            }
            $crate::push_rules::bindings::__export_push_rules_plugin!(
                __TrellisPlugin with_types_in $crate::push_rules::bindings
            );
        };
    };
}
