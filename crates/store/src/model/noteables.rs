//! What notes, award emoji, subscriptions, to-do items and time logs hang on: an issue or a
//! merge request. Their tables are named after it (`issue_award_emoji`,
//! `merge_request_award_emoji`, ...), so one query serves both.

/// An issue or a merge request, by id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Noteable {
    Issue(i64),
    MergeRequest(i64),
}

impl Noteable {
    pub fn id(self) -> i64 {
        match self {
            Noteable::Issue(id) | Noteable::MergeRequest(id) => id,
        }
    }

    /// GitLab's class name, as `noteable_type`, `awardable_type` and `target_type` say it.
    pub fn type_name(self) -> &'static str {
        match self {
            Noteable::Issue(_) => "Issue",
            Noteable::MergeRequest(_) => "MergeRequest",
        }
    }

    /// The prefix of its tables and the name of their column that holds its id.
    pub(crate) fn prefix(self) -> &'static str {
        match self {
            Noteable::Issue(_) => "issue",
            Noteable::MergeRequest(_) => "merge_request",
        }
    }

    pub(crate) fn table(self) -> &'static str {
        match self {
            Noteable::Issue(_) => "issues",
            Noteable::MergeRequest(_) => "merge_requests",
        }
    }

    pub(crate) fn todos_table(self) -> &'static str {
        match self {
            Noteable::Issue(_) => "todos",
            Noteable::MergeRequest(_) => "merge_request_todos",
        }
    }
}
