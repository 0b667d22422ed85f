//! Services: the layer between the API handlers and the store. Handlers parse requests into
//! typed inputs, call a service and render its answer; a service decides whether a change is
//! allowed (GitLab's rules, as pure functions the unit tests exercise), orders the steps of
//! work that spans the database and the repositories on disk, and cleans up after one that
//! fails; the store runs SQL only (each change and its domain event in one transaction) and
//! calls nothing above it.

pub mod commit_actions;
pub mod diffs;
pub mod groups;
pub mod hooks;
pub mod imports;
pub mod issues;
pub mod keys;
pub mod labels;
pub mod members;
pub mod merge_request_notes;
pub mod merge_requests;
pub mod milestones;
pub mod noteable_actions;
pub mod notes;
pub mod notify;
pub mod oauth;
pub mod plugins;
pub mod project_deletion;
pub mod project_forks;
pub mod project_placement;
pub mod projects;
pub mod protected_branches;
pub mod push;
mod push_prescan;
pub mod push_rules;
pub mod quotas;
mod readme;
mod ref_names;
pub mod repository;
pub mod sessions;
pub mod settings;
pub mod spam;
pub mod system_notes;
pub mod tenant_deletion;
pub mod tokens;
pub mod uploads;
pub mod users;
pub mod webhooks;

use crate::store;

/// Why a service refuses a change (or could not make it). The API renders each as GitLab's
/// answer for the case (`http::error`).
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// 403, with GitLab's reason when it gives one.
    #[error("forbidden")]
    Forbidden(Option<String>),
    /// 401: GitLab's answer where the caller is known but not the one who may (revoking
    /// another's award emoji).
    #[error("unauthorized")]
    Unauthorized,
    /// 404 for the named resource.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// 409 with GitLab's message.
    #[error("conflict: {0}")]
    Conflict(String),
    /// 409 with GitLab's list of messages (a model's validation GitLab answers with 409).
    #[error("conflicts: {0:?}")]
    Conflicts(Vec<String>),
    /// A model validation failure on one field: 400 `{"message":{"field":["message"]}}`.
    #[error("{0} {1}")]
    Invalid(&'static str, String),
    /// Model validation failures on several fields at once, as one field map.
    #[error("invalid: {0:?}")]
    Fields(Vec<(&'static str, String)>),
    /// Any other refusal GitLab answers with 400 and its message as is (`{"message":"..."}`).
    #[error("rejected: {0}")]
    Rejected(String),
    /// The change is not allowed on this object at all (deleting the default branch): GitLab's
    /// 405 with its message.
    #[error("not allowed: {0}")]
    NotAllowed(String),
    /// The change is well-formed but cannot be made as asked (a hook test whose URL changed):
    /// GitLab's 422 with its message.
    #[error("unprocessable: {0}")]
    Unprocessable(String),
    /// A model's full error messages, which GitLab answers with 422 and the list
    /// (`render_api_error!(record.errors.full_messages, 422)`).
    #[error("invalid: {0:?}")]
    ModelErrors(Vec<String>),
    /// The one object of its kind is there already (a project's push rule): GitLab's 422
    /// with its message as Grape's `error!` gives it.
    #[error("exists: {0}")]
    Exists(&'static str),
    /// GitLab's bare `404 Not Found`, where it names no resource.
    #[error("not found")]
    Absent,
    /// GitLab's answer to a record its finder does not find (`ActiveRecord::RecordNotFound`,
    /// as for a merge request's iid): `404 Not found`.
    #[error("record not found")]
    RecordNotFound,
    /// GitLab's 406 with its message (a merge git cannot make).
    #[error("not acceptable: {0}")]
    NotAcceptable(String),
    /// The spam check refused the write.
    #[error("refused as spam")]
    Spam(spam::SpamRefusal),
    /// A parameter of the wrong type or value, in Grape's words: 400 `{"error": ...}`.
    #[error("{0}")]
    InvalidParam(String),
    /// What the request carries or names cannot be used as asked (a component that does not
    /// compile, a plugin of another world, a configuration its plugin refuses): GitLab's
    /// `400 Bad request - reason`.
    #[error("{0}")]
    Unusable(String),
    /// An uploaded file over the instance's upload limit: 413.
    #[error("the file is larger than the upload limit")]
    UploadTooLarge,
    #[error(transparent)]
    Store(#[from] store::Error),
    /// A repository that could not be read or changed: the server's failure.
    #[error(transparent)]
    Git(#[from] crate::git::Error),
    /// Any other failure of the server's (a plugin that cannot be loaded): 500, the cause
    /// only logged.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
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

    /// The refusal in words for a person, as the admin console shows it beside a form: the
    /// reason or message alone, without what GitLab's API adds around it; the server's own
    /// failures name no cause.
    pub fn message(&self) -> String {
        match self {
            Refusal::Forbidden(Some(reason)) => reason.clone(),
            Refusal::Conflict(message)
            | Refusal::Rejected(message)
            | Refusal::NotAllowed(message)
            | Refusal::NotAcceptable(message)
            | Refusal::Unprocessable(message) => message.clone(),
            Refusal::Exists(message) => message.to_string(),
            Refusal::ModelErrors(messages) | Refusal::Conflicts(messages) => messages.join(", "),
            Refusal::Store(_) | Refusal::Git(_) | Refusal::Internal(_) => {
                "Something went wrong.".into()
            }
            other => other.to_string(),
        }
    }

    /// [`TakenOn::taken_on`] for a store error at hand.
    pub fn taken(error: store::Error, indexes: &[(&str, &str, &'static str)]) -> Self {
        match error.conflict_label(indexes) {
            Some(field) => Refusal::invalid(field, "has already been taken"),
            None => Refusal::Store(error),
        }
    }
}

/// The one way a write says GitLab's "has already been taken": a unique index's refusal of a
/// row, on the field of the first of `indexes` (`(table, column, field)` each) that refused
/// it. Any other failure stays the store's.
pub trait TakenOn<T> {
    fn taken_on(self, indexes: &[(&str, &str, &'static str)]) -> Result<T, Refusal>;
}

impl<T> TakenOn<T> for store::Result<T> {
    fn taken_on(self, indexes: &[(&str, &str, &'static str)]) -> Result<T, Refusal> {
        self.map_err(|error| Refusal::taken(error, indexes))
    }
}

#[cfg(test)]
mod tests {
    use super::Refusal;

    #[test]
    fn a_message_is_the_reason_alone_and_never_a_failures_cause() {
        let cases = [
            (
                Refusal::forbidden_because("Built-in plugins cannot be deleted"),
                "Built-in plugins cannot be deleted",
            ),
            (
                Refusal::Conflict("Plugin is bound to a hook; unbind it first".into()),
                "Plugin is bound to a hook; unbind it first",
            ),
            (
                Refusal::invalid("name", "must be between 1 and 255 characters"),
                "name must be between 1 and 255 characters",
            ),
            (
                Refusal::InvalidParam("config must be a JSON object".into()),
                "config must be a JSON object",
            ),
            (
                Refusal::Unusable("config is invalid: no".into()),
                "config is invalid: no",
            ),
            (
                Refusal::UploadTooLarge,
                "the file is larger than the upload limit",
            ),
            (
                Refusal::Internal(anyhow::anyhow!("/var/lib/trellis is unreadable")),
                "Something went wrong.",
            ),
        ];
        for (refusal, message) in cases {
            assert_eq!(refusal.message(), message);
        }
    }
}
