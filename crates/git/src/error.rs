//! What repository work fails with: its own error, never disguised as a database error, so
//! callers can tell a failed `git` from a failed query.

use std::path::PathBuf;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `create` found something where the repository was to go: never adopted.
    #[error("repository {} already exists", .0.display())]
    Exists(PathBuf),
    /// A program could not be run, or filesystem work around the repository failed.
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A ref was not where a compare-and-swap expected it: someone else moved it first.
    #[error("{0} was changed by someone else")]
    RefMoved(String),
    /// `git` ran and failed, with its own message.
    #[error("git {command} failed: {stderr}")]
    Failed { command: String, stderr: String },
    /// `git` ran longer than the server lets its own git work run (`git_backend_timeout_*`).
    #[error("git {command} took longer than {seconds} seconds")]
    TimedOut { command: String, seconds: u64 },
}

impl Error {
    pub(super) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let what = what.into();
        move |source| Error::Io { what, source }
    }
}
