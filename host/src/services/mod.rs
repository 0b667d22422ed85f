//! Services: the layer between the API handlers and the store. Handlers parse requests into
//! typed inputs, call a service and render its answer; a service decides whether a change is
//! allowed (GitLab's rules, as pure functions the unit tests exercise), orders the steps of
//! work that spans the database and the repositories on disk, and cleans up after one that
//! fails; the store runs SQL only (each change and its domain event in one transaction) and
//! calls nothing above it.

pub mod issues;
pub mod keys;
pub mod members;
pub mod plugins;
pub mod projects;
mod readme;
pub mod settings;
pub mod system_notes;
pub mod tokens;
pub mod users;

use crate::store;

/// Why a service refuses a change (or could not make it). The API renders each as GitLab's
/// answer for the case (`http::error`).
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// 403, with GitLab's reason when it gives one.
    #[error("forbidden")]
    Forbidden(Option<String>),
    /// 404 for the named resource.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// 409 with GitLab's message.
    #[error("conflict: {0}")]
    Conflict(String),
    /// A model validation failure on one field: 400 `{"message":{"field":["message"]}}`.
    #[error("{0} {1}")]
    Invalid(&'static str, String),
    #[error(transparent)]
    Store(#[from] store::Error),
}

impl Refusal {
    pub fn forbidden() -> Self {
        Refusal::Forbidden(None)
    }

    pub fn forbidden_because(reason: impl Into<String>) -> Self {
        Refusal::Forbidden(Some(reason.into()))
    }

    pub fn invalid(field: &'static str, message: impl Into<String>) -> Self {
        Refusal::Invalid(field, message.into())
    }
}

impl From<sqlx::Error> for Refusal {
    fn from(error: sqlx::Error) -> Self {
        Refusal::Store(error.into())
    }
}

/// A unique index's refusal of a row as GitLab's "has already been taken" on `field`; any
/// other failure stays the store's.
fn taken(
    error: impl Into<store::Error>,
    table: &str,
    column: &str,
    field: &'static str,
) -> Refusal {
    let error = error.into();
    if error.conflicts_on(table, column) {
        Refusal::invalid(field, "has already been taken")
    } else {
        Refusal::Store(error)
    }
}
