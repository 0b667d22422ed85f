//! The bodies of the system notes GitLab writes on an issue or a merge request when something
//! about it changes (GitLab's `SystemNotes::IssuablesService`, `TimeTrackingService`,
//! `MergeRequestsService` and `CommitService`, called by `Issuable::CommonSystemNotesService`
//! and the issue and merge request services). Labels, milestones and the
//! state are resource events in GitLab, not notes, so nothing here speaks of them.
//!
//! Only text lives here; the notes are written by the store in the transaction of the change.

use chrono::{DateTime, NaiveDate};

use crate::model::issue_text::{human_duration, task_items};
use crate::model::issues::ProjectRef;
use crate::model::users::UserRow;

/// Rails' `Array#to_sentence` in English: `a`, `a and b`, `a, b, and c`.
pub fn to_sentence(words: &[String]) -> String {
    match words {
        [] => String::new(),
        [one] => one.clone(),
        [a, b] => format!("{a} and {b}"),
        [rest @ .., last] => format!("{}, and {last}", rest.join(", ")),
    }
}

/// A user as a system note names them: id and username.
pub type Named<'a> = (i64, &'a str);

pub fn named(user: &UserRow) -> Named<'_> {
    (user.id, &user.username)
}

fn mentions(users: &[&Named]) -> String {
    let refs: Vec<String> = users.iter().map(|(_, name)| format!("@{name}")).collect();
    to_sentence(&refs)
}

/// `<added> @a and @b and <removed> @c`: who was added (in the new order) and who was removed
/// (in the old order); `None` when the set did not change.
fn people_change(old: &[Named], new: &[Named], added: &str, removed: &str) -> Option<String> {
    let added_users: Vec<&Named> = new
        .iter()
        .filter(|u| !old.iter().any(|o| o.0 == u.0))
        .collect();
    let removed_users: Vec<&Named> = old
        .iter()
        .filter(|u| !new.iter().any(|n| n.0 == u.0))
        .collect();
    let mut parts = Vec::new();
    if !added_users.is_empty() {
        parts.push(format!("{added} {}", mentions(&added_users)));
    }
    if !removed_users.is_empty() {
        parts.push(format!("{removed} {}", mentions(&removed_users)));
    }
    (!parts.is_empty()).then(|| parts.join(" and "))
}

/// `assigned to @a and @b and unassigned @c`.
pub fn assignees(old: &[Named], new: &[Named]) -> Option<String> {
    people_change(old, new, "assigned to", "unassigned")
}

/// `requested review from @a and removed review request for @b`.
pub fn reviewers(old: &[Named], new: &[Named]) -> Option<String> {
    people_change(
        old,
        new,
        "requested review from",
        "removed review request for",
    )
}

/// The chunks of one side of a diff joined, the changed ones wrapped in `{<sign>...<sign>}`.
fn mark(chunks: &[(bool, &str)], sign: char) -> String {
    let mut out = String::new();
    for (changed, text) in chunks {
        if *changed {
            out.push('{');
            out.push(sign);
            out.push_str(text);
            out.push(sign);
            out.push('}');
        } else {
            out.push_str(text);
        }
    }
    out
}

/// `changed title from **{-Old-} title** to **{+New+} title**`: GitLab's inline diff
/// (diff-match-patch with semantic cleanup), deletions marked in the old title and
/// insertions in the new one.
pub fn title(old: &str, new: &str) -> String {
    let mut old_chunks: Vec<(bool, &str)> = Vec::new();
    let mut new_chunks: Vec<(bool, &str)> = Vec::new();
    for chunk in dissimilar::diff(old, new) {
        match chunk {
            dissimilar::Chunk::Equal(text) => {
                old_chunks.push((false, text));
                new_chunks.push((false, text));
            }
            dissimilar::Chunk::Delete(text) => old_chunks.push((true, text)),
            dissimilar::Chunk::Insert(text) => new_chunks.push((true, text)),
        }
    }
    format!(
        "changed title from **{}** to **{}**",
        mark(&old_chunks, '-'),
        mark(&new_chunks, '+')
    )
}

/// A changed description: one `marked the checklist item **text** as completed` (or
/// `incomplete`) per task item that kept its place and text but changed its box, or else
/// `changed the description` (GitLab's `handle_description_change_note`).
pub fn description(old: Option<&str>, new: Option<&str>) -> Vec<String> {
    let applicable = |text| {
        task_items(text)
            .into_iter()
            .filter(|t| !t.inapplicable)
            .collect::<Vec<_>>()
    };
    let (before, after) = (applicable(old), applicable(new));
    let toggled: Vec<String> = after
        .iter()
        .zip(&before)
        .filter(|(now, was)| now.text == was.text && now.done != was.done)
        .map(|(now, _)| {
            let status = if now.done { "completed" } else { "incomplete" };
            format!("marked the checklist item **{}** as {status}", now.text)
        })
        .collect();
    if toggled.is_empty() {
        vec!["changed the description".to_string()]
    } else {
        toggled
    }
}

pub fn confidential(confidential: bool) -> String {
    if confidential {
        "made the issue confidential".to_string()
    } else {
        "made the issue visible to everyone".to_string()
    }
}

/// `noun`: what is locked, as GitLab's model name reads (`issue`, `merge request`).
pub fn discussion_lock(locked: bool, noun: &str) -> String {
    let action = if locked { "locked" } else { "unlocked" };
    format!("{action} the discussion in this {noun}")
}

/// A merge request's title gained or lost its draft prefix.
pub fn draft(draft: bool) -> String {
    let status = if draft { "draft" } else { "ready" };
    format!("marked this merge request as **{status}**")
}

pub fn target_branch(old: &str, new: &str) -> String {
    format!("changed target branch from `{old}` to `{new}`")
}

pub fn approval(approved: bool) -> String {
    let action = if approved { "approved" } else { "unapproved" };
    format!("{action} this merge request")
}

/// Rails' `html_escape`, as `content_tag` applies it to a commit title.
fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// `added 2 commits`, the commits (short id and title, oldest first) as a list, and a link to
/// compare the new version with the previous one (`compare_path`, none for a first push).
pub fn added_commits(commits: &[(String, String)], compare_path: Option<&str>) -> String {
    let count = commits.len();
    let noun = if count == 1 { "commit" } else { "commits" };
    let items: String = commits
        .iter()
        .map(|(short_id, title)| format!("<li>{short_id} - {}</li>", escape_html(title)))
        .collect();
    let mut body = format!("added {count} {noun}\n\n<ul>{items}</ul>");
    if let Some(path) = compare_path {
        body.push_str(&format!("\n\n[Compare with previous version]({path})"));
    }
    body
}

/// A date as Rails' `to_fs(:long)` prints it: `June 5, 2025`.
fn long_date(date: &str) -> String {
    NaiveDate::parse_from_str(date, "%Y-%m-%d")
        .map(|d| d.format("%B %-d, %Y").to_string())
        .unwrap_or_else(|_| date.to_string())
}

/// `changed due date to June 5, 2025` or `removed due date June 5, 2025`; `None` when equal.
pub fn due_date(old: Option<&str>, new: Option<&str>) -> Option<String> {
    match (old, new) {
        (old, new) if old == new => None,
        (_, Some(new)) => Some(format!("changed due date to {}", long_date(new))),
        (Some(old), None) => Some(format!("removed due date {}", long_date(old))),
        (None, None) => None,
    }
}

/// `added time estimate of 1h`, `changed time estimate to 2h from 1h`, `removed time
/// estimate of 2h`; `None` when the estimate stays.
pub fn time_estimate(old: i64, new: i64, limit_to_hours: bool) -> Option<String> {
    let human = |s| human_duration(s, limit_to_hours).unwrap_or_default();
    if old == new {
        None
    } else if old == 0 {
        Some(format!("added time estimate of {}", human(new)))
    } else if new == 0 {
        Some(format!("removed time estimate of {}", human(old)))
    } else {
        Some(format!(
            "changed time estimate to {} from {}",
            human(new),
            human(old)
        ))
    }
}

/// `added 1h of time spent at 2025-06-05 12:00:00 UTC` (or `subtracted`), the time being when
/// it was logged, in UTC (Trellis users have no time zone); `None` for zero.
pub fn time_spent(seconds: i64, at_ms: i64, limit_to_hours: bool) -> Option<String> {
    if seconds == 0 {
        return None;
    }
    let action = if seconds > 0 { "added" } else { "subtracted" };
    let human = human_duration(seconds.abs(), limit_to_hours).unwrap_or_default();
    let at = DateTime::from_timestamp_millis(at_ms)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_default();
    Some(format!("{action} {human} of time spent at {at}"))
}

pub const TIME_SPENT_REMOVED: &str = "removed time spent";

/// How project `to` is named in a reference written in project `from` (GitLab's
/// `Project#to_reference_base`): its full path from another namespace, its path from the
/// same namespace.
pub fn project_reference(to: &ProjectRef, to_namespace_id: i64, from_namespace_id: i64) -> String {
    if to_namespace_id == from_namespace_id {
        to.path.clone()
    } else {
        to.full_path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_join_as_rails_does() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(to_sentence(&words(&["@a"])), "@a");
        assert_eq!(to_sentence(&words(&["@a", "@b"])), "@a and @b");
        assert_eq!(to_sentence(&words(&["@a", "@b", "@c"])), "@a, @b, and @c");
    }

    #[test]
    fn reviewer_changes_and_merge_request_notes() {
        let (a, b) = ((1, "a"), (2, "b"));
        assert_eq!(
            reviewers(&[a], &[b]).as_deref(),
            Some("requested review from @b and removed review request for @a")
        );
        assert_eq!(reviewers(&[a], &[a]), None);
        assert_eq!(draft(true), "marked this merge request as **draft**");
        assert_eq!(
            discussion_lock(false, "merge request"),
            "unlocked the discussion in this merge request"
        );
        let commits = [
            ("0123abcd".to_string(), "Add <b>".to_string()),
            ("4567ef01".to_string(), "Fix".to_string()),
        ];
        assert_eq!(
            added_commits(
                &commits,
                Some("/g/p/-/merge_requests/1/diffs?diff_id=2&start_sha=9")
            ),
            "added 2 commits\n\n<ul><li>0123abcd - Add &lt;b&gt;</li><li>4567ef01 - Fix</li></ul>\n\n\
             [Compare with previous version](/g/p/-/merge_requests/1/diffs?diff_id=2&start_sha=9)"
        );
        assert_eq!(
            added_commits(&commits[..1], None),
            "added 1 commit\n\n<ul><li>0123abcd - Add &lt;b&gt;</li></ul>"
        );
    }

    #[test]
    fn assignee_changes() {
        let (a, b, c) = ((1, "a"), (2, "b"), (3, "c"));
        assert_eq!(assignees(&[], &[a]).as_deref(), Some("assigned to @a"));
        assert_eq!(
            assignees(&[a], &[b, c]).as_deref(),
            Some("assigned to @b and @c and unassigned @a")
        );
        assert_eq!(
            assignees(&[a, b, c], &[]).as_deref(),
            Some("unassigned @a, @b, and @c")
        );
        assert_eq!(assignees(&[a, b], &[b, a]), None);
    }

    #[test]
    fn titles_mark_what_changed() {
        assert_eq!(
            title("Old title", "New title"),
            "changed title from **{-Old-} title** to **{+New+} title**"
        );
        assert_eq!(
            title("Old title", "Lorem ipsum"),
            "changed title from **{-Old title-}** to **{+Lorem ipsum+}**"
        );
        assert_eq!(
            title("Fix bug", "Fix bug now"),
            "changed title from **Fix bug** to **Fix bug{+ now+}**"
        );
    }

    #[test]
    fn descriptions_and_checklists() {
        assert_eq!(
            description(None, Some("text")),
            vec!["changed the description"]
        );
        assert_eq!(
            description(Some("- [ ] one\n- [ ] two"), Some("- [ ] one\n- [x] two")),
            vec!["marked the checklist item **two** as completed"]
        );
        assert_eq!(
            description(Some("- [x] one"), Some("- [ ] one")),
            vec!["marked the checklist item **one** as incomplete"]
        );
        assert_eq!(
            description(Some("- [ ] one"), Some("- [x] uno")),
            vec!["changed the description"]
        );
    }

    #[test]
    fn dates_and_durations() {
        assert_eq!(
            due_date(None, Some("2025-06-05")).as_deref(),
            Some("changed due date to June 5, 2025")
        );
        assert_eq!(
            due_date(Some("2025-12-24"), None).as_deref(),
            Some("removed due date December 24, 2025")
        );
        assert_eq!(due_date(Some("2025-12-24"), Some("2025-12-24")), None);
        assert_eq!(
            time_estimate(0, 3600, false).as_deref(),
            Some("added time estimate of 1h")
        );
        assert_eq!(
            time_estimate(3600, 5400, false).as_deref(),
            Some("changed time estimate to 1h 30m from 1h")
        );
        assert_eq!(
            time_estimate(277_200, 0, false).as_deref(),
            Some("removed time estimate of 1w 4d 5h")
        );
        assert_eq!(time_estimate(60, 60, false), None);
        assert_eq!(
            time_spent(277_200, 1_648_598_400_000, true).as_deref(),
            Some("added 77h of time spent at 2022-03-30 00:00:00 UTC")
        );
        assert_eq!(
            time_spent(-1800, 1_648_598_400_000, false).as_deref(),
            Some("subtracted 30m of time spent at 2022-03-30 00:00:00 UTC")
        );
        assert_eq!(time_spent(0, 0, false), None);
    }
}
