//! What the issue and note endpoints accept: one typed input per endpoint, read from the merged
//! parameters with Grape's coercion and messages (and GitLab's model validations of the text).
//! The issue writes' inputs are the commands of `services::issues`; the lookups they imply
//! (users, milestones) happen after parsing, there. The list's input is `list::IssueListQuery`.

use serde_json::Value;

use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::PageRequest;
use crate::http::params::{FromParams, Params};
use crate::services::issues::{CreateIssue, Metadata, StateEvent, UpdateIssue};
use crate::services::notes::{CreateNote, UpdateNote};
use crate::store::issue_notes::NoteOrder;
use crate::store::issues::LabelChange;

pub const TITLE_MAX: usize = 255;
pub const DESCRIPTION_MAX: usize = 1_000_000;

/// GitLab's `update_params_at_least_one_of`.
const UPDATE_PARAMS: &[&str] = &[
    "assignee_id",
    "assignee_ids",
    "confidential",
    "created_at",
    "description",
    "discussion_locked",
    "due_date",
    "labels",
    "add_labels",
    "remove_labels",
    "milestone_id",
    "state_event",
    "title",
    "issue_type",
];

fn check_title(title: &str) -> ApiResult<()> {
    if title.trim().is_empty() {
        return Err(ApiError::field("title", "can't be blank"));
    }
    if title.chars().count() > TITLE_MAX {
        return Err(ApiError::field(
            "title",
            format!("is too long (maximum is {TITLE_MAX} characters)"),
        ));
    }
    Ok(())
}

/// A description or a note's body (`field`) no longer than GitLab allows.
fn check_length(field: &str, text: &str) -> ApiResult<()> {
    if text.chars().count() > DESCRIPTION_MAX {
        return Err(ApiError::field(
            field,
            format!("is too long (maximum is {DESCRIPTION_MAX} characters)"),
        ));
    }
    Ok(())
}

fn description(p: &Params) -> ApiResult<Option<String>> {
    let description = p.string("description")?;
    if let Some(description) = &description {
        check_length("description", description)?;
    }
    Ok(description)
}

/// Whether the parameter is present and blank (`""`, `[]`, `0` or `[0]`): "unset it".
fn blank_or_zero(p: &Params, name: &str) -> bool {
    match p.raw(name) {
        Some(Value::String(s)) => s.trim().is_empty() || s.trim() == "0",
        Some(Value::Array(items)) => items
            .iter()
            .all(|i| i.as_i64() == Some(0) || i.as_str().is_some_and(|s| s.trim() == "0")),
        Some(Value::Number(n)) => n.as_i64() == Some(0),
        _ => false,
    }
}

fn millis(p: &Params, name: &str) -> ApiResult<Option<i64>> {
    Ok(p.datetime(name)?.map(|d| d.timestamp_millis()))
}

/// Grape's `CommaSeparatedToIntegerArray`, as GitLab reads `assignee_ids` and `reviewer_ids`:
/// comma-separated items (or an array of them), each read as Ruby's `to_i` reads it (its
/// leading digits, else 0), the zeros (none, "unassign") left out. `None` when absent.
pub(crate) fn user_ids(p: &Params, name: &str) -> Option<Vec<i64>> {
    fn to_i(text: &str) -> i64 {
        let text = text.trim_start();
        let (sign, digits) = match text.strip_prefix('-') {
            Some(rest) => (-1, rest),
            None => (1, text.strip_prefix('+').unwrap_or(text)),
        };
        let end = digits
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(digits.len());
        digits[..end].parse::<i64>().map_or(0, |n| sign * n)
    }
    let items: Vec<String> = match p.raw(name)? {
        Value::String(text) => text.split(',').map(str::to_string).collect(),
        Value::Array(values) => values
            .iter()
            .flat_map(|v| match v {
                Value::String(text) => text.split(',').map(str::to_string).collect(),
                other => vec![other.to_string()],
            })
            .collect(),
        Value::Number(n) => vec![n.to_string()],
        _ => Vec::new(),
    };
    Some(
        items
            .iter()
            .map(|i| to_i(i))
            .filter(|id| *id != 0)
            .collect(),
    )
}

/// `assignee_ids` (or the older `assignee_id`): `Some(empty)` unassigns everyone.
pub(crate) fn assignee_ids(p: &Params) -> ApiResult<Option<Vec<i64>>> {
    Ok(if let Some(ids) = user_ids(p, "assignee_ids") {
        Some(ids)
    } else if p.raw("assignee_id").is_some() {
        Some(match p.int("assignee_id")? {
            Some(0) | None => Vec::new(),
            Some(id) => vec![id],
        })
    } else {
        None
    })
}

/// `milestone_id`: `Some(None)` removes the milestone.
pub(crate) fn milestone_id(p: &Params) -> ApiResult<Option<Option<i64>>> {
    Ok(if p.raw("milestone_id").is_none() {
        None
    } else if blank_or_zero(p, "milestone_id") {
        Some(None)
    } else {
        Some(Some(p.int("milestone_id")?.unwrap_or(0)))
    })
}

/// `labels`, `add_labels` and `remove_labels`; `None` when none is given.
pub(crate) fn label_change(p: &Params) -> ApiResult<Option<LabelChange>> {
    let labels = LabelChange {
        replace: p.string_list("labels")?,
        add: p.string_list("add_labels")?.unwrap_or_default(),
        remove: p.string_list("remove_labels")?.unwrap_or_default(),
    };
    Ok((labels != LabelChange::default()).then_some(labels))
}

impl FromParams for Metadata {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let assignee_ids = assignee_ids(p)?;
        let milestone_id = milestone_id(p)?;
        let labels = label_change(p)?;
        let due_date = if p.raw("due_date").is_some() {
            Some(p.date("due_date")?.map(|d| d.to_string()))
        } else {
            None
        };
        Ok(Metadata {
            assignee_ids,
            milestone_id,
            labels,
            due_date,
            discussion_locked: p.bool("discussion_locked")?,
        })
    }
}

/// The parameters of `POST /projects/:id/issues` besides the issue: Trellis has no merge
/// requests, so one named here is always unknown.
pub struct CreateIssueRequest {
    pub issue: CreateIssue,
    pub merge_request_to_resolve_discussions_of: Option<i64>,
}

impl FromParams for CreateIssueRequest {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let title = p.required_string("title")?;
        check_title(&title)?;
        let description = description(p)?;
        let merge_request_to_resolve_discussions_of =
            p.int("merge_request_to_resolve_discussions_of")?;
        let issue = CreateIssue {
            title,
            description,
            confidential: p.bool("confidential")?.unwrap_or(false),
            iid: p.int("iid")?,
            created_at: millis(p, "created_at")?,
            metadata: Metadata::from_params(p)?,
        };
        Ok(CreateIssueRequest {
            issue,
            merge_request_to_resolve_discussions_of,
        })
    }
}

impl FromParams for UpdateIssue {
    fn from_params(p: &Params) -> ApiResult<Self> {
        if !UPDATE_PARAMS.iter().any(|name| p.has(name)) {
            return Err(ApiError::InvalidParam(format!(
                "{} are missing, at least one parameter must be provided",
                UPDATE_PARAMS.join(", ")
            )));
        }
        let title = p.string("title")?;
        if let Some(title) = &title {
            check_title(title)?;
        }
        let description = description(p)?;
        let confidential = p.bool("confidential")?;
        let updated_at = millis(p, "updated_at")?;
        let created_at = millis(p, "created_at")?;
        let state_event = match p.one_of("state_event", &["close", "reopen"])?.as_deref() {
            Some("close") => Some(StateEvent::Close),
            Some(_) => Some(StateEvent::Reopen),
            None => None,
        };
        Ok(UpdateIssue {
            title,
            description,
            confidential,
            created_at,
            updated_at,
            state_event,
            metadata: Metadata::from_params(p)?,
        })
    }
}

/// `POST .../move`.
pub struct MoveIssue {
    pub to_project_id: i64,
}

impl FromParams for MoveIssue {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(MoveIssue {
            to_project_id: p
                .int("to_project_id")?
                .ok_or_else(|| ApiError::Missing("to_project_id".into()))?,
        })
    }
}

fn note_body(p: &Params) -> ApiResult<String> {
    let body = p.required_string("body")?;
    if body.trim().is_empty() {
        return Err(ApiError::field("note", "can't be blank"));
    }
    check_length("note", &body)?;
    Ok(body)
}

/// `GET .../notes`.
pub struct NoteListQuery {
    pub order: NoteOrder,
    pub page: PageRequest,
}

impl FromParams for NoteListQuery {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let order = NoteOrder {
            updated: p
                .one_of("order_by", &["created_at", "updated_at"])?
                .as_deref()
                == Some("updated_at"),
            ascending: p.one_of("sort", &["asc", "desc"])?.as_deref() == Some("asc"),
        };
        Ok(NoteListQuery {
            order,
            page: PageRequest::from_params(p)?,
        })
    }
}

impl FromParams for CreateNote {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let body = note_body(p)?;
        let internal = p
            .bool("internal")?
            .or(p.bool("confidential")?)
            .unwrap_or(false);
        Ok(CreateNote {
            body,
            internal,
            created_at: millis(p, "created_at")?,
        })
    }
}

impl FromParams for UpdateNote {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(UpdateNote {
            body: note_body(p)?,
        })
    }
}

/// `duration` in GitLab's human format (`time_estimate`, `add_spent_time`), as seconds; a
/// format error names the issue's field (`field`).
fn duration(p: &Params, field: &str) -> ApiResult<i64> {
    let text = p.required_string("duration")?;
    super::time::parse_duration(&text)
        .ok_or_else(|| ApiError::field(field, "has an invalid format"))
}

/// `POST .../time_estimate`.
pub struct TimeEstimate {
    pub seconds: i64,
}

impl FromParams for TimeEstimate {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let seconds = duration(p, "time_estimate")?;
        if seconds < 0 {
            return Err(ApiError::field(
                "time_estimate",
                "must have a valid format and be greater than or equal to zero.",
            ));
        }
        Ok(TimeEstimate { seconds })
    }
}

/// `POST .../add_spent_time`: negative subtracts.
pub struct SpentTime {
    pub seconds: i64,
}

impl FromParams for SpentTime {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(SpentTime {
            seconds: duration(p, "time_spent")?,
        })
    }
}

/// `POST .../award_emoji`: an emoji's shortcode (`:thumbsup:` or `thumbsup`).
pub struct CreateAward {
    pub name: String,
}

impl FromParams for CreateAward {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let name = p.required_string("name")?;
        let name = name.trim().trim_matches(':').to_string();
        // GitLab answers a refused award with 404 and the validation message inside.
        if emojis::get_by_shortcode(&name).is_none() {
            return Err(ApiError::NotFoundMessage(
                "404 Award Emoji Name is not a valid emoji name Not Found".into(),
            ));
        }
        Ok(CreateAward { name })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(q: &str) -> Params {
        Params::from_query(Some(q))
    }

    fn field_error(result: ApiResult<impl Sized>) -> String {
        match result {
            Err(ApiError::Validation(map)) => serde_json::Value::Object(map).to_string(),
            Err(other) => panic!("expected a validation error, got {other:?}"),
            Ok(_) => panic!("expected a validation error"),
        }
    }

    #[test]
    fn user_ids_read_items_as_ruby_to_i() {
        let ids = |q: &str| user_ids(&params(q), "assignee_ids");
        assert_eq!(ids("assignee_ids=3,4"), Some(vec![3, 4]));
        assert_eq!(ids("assignee_ids=abc"), Some(vec![]));
        assert_eq!(ids("assignee_ids=0"), Some(vec![]));
        assert_eq!(ids("assignee_ids="), Some(vec![]));
        assert_eq!(ids("assignee_ids=%207x,-2"), Some(vec![7, -2]));
        assert_eq!(ids("assignee_ids[]=5&assignee_ids[]=6"), Some(vec![5, 6]));
        assert_eq!(ids("title=x"), None);
    }

    #[test]
    fn create_needs_a_title() {
        assert!(matches!(
            CreateIssueRequest::from_params(&params("description=x")),
            Err(ApiError::Missing(m)) if m == "title"
        ));
        assert_eq!(
            field_error(CreateIssueRequest::from_params(&params("title=%20"))),
            r#"{"title":["can't be blank"]}"#
        );
        let long = "x".repeat(TITLE_MAX + 1);
        assert_eq!(
            field_error(CreateIssueRequest::from_params(&params(&format!(
                "title={long}"
            )))),
            r#"{"title":["is too long (maximum is 255 characters)"]}"#
        );
    }

    #[test]
    fn update_needs_one_parameter_and_reads_state_events() {
        let error = UpdateIssue::from_params(&params("foo=1")).err().unwrap();
        assert!(
            matches!(error, ApiError::InvalidParam(m) if m.ends_with("at least one parameter must be provided"))
        );
        let update = UpdateIssue::from_params(&params("state_event=close")).unwrap();
        assert_eq!(update.state_event, Some(StateEvent::Close));
        assert!(matches!(
            UpdateIssue::from_params(&params("state_event=shut")),
            Err(ApiError::InvalidParam(m)) if m == "state_event does not have a valid value"
        ));
    }

    #[test]
    fn metadata_blanks_unset_and_labels_combine() {
        let m = Metadata::from_params(&params("assignee_ids=&milestone_id=0&due_date=")).unwrap();
        assert_eq!(m.assignee_ids, Some(vec![]));
        assert_eq!(m.milestone_id, Some(None));
        assert_eq!(m.due_date, Some(None));
        assert_eq!(m.labels, None);
        let m = Metadata::from_params(&params(
            "assignee_id=4&milestone_id=7&add_labels=a,b&remove_labels=c",
        ))
        .unwrap();
        assert_eq!(m.assignee_ids, Some(vec![4]));
        assert_eq!(m.milestone_id, Some(Some(7)));
        let labels = m.labels.unwrap();
        assert_eq!(
            (labels.replace, labels.add.len(), labels.remove.len()),
            (None, 2, 1)
        );
        assert!(Metadata::from_params(&params("due_date=2024-13-01")).is_err());
    }

    #[test]
    fn durations_and_notes() {
        assert_eq!(
            TimeEstimate::from_params(&params("duration=1h30m"))
                .unwrap()
                .seconds,
            5400
        );
        assert_eq!(
            field_error(TimeEstimate::from_params(&params("duration=-1h"))),
            r#"{"time_estimate":["must have a valid format and be greater than or equal to zero."]}"#
        );
        assert_eq!(
            field_error(SpentTime::from_params(&params("duration=soon"))),
            r#"{"time_spent":["has an invalid format"]}"#
        );
        assert_eq!(
            SpentTime::from_params(&params("duration=-30m"))
                .unwrap()
                .seconds,
            -1800
        );
        assert_eq!(
            field_error(CreateNote::from_params(&params("body=%20"))),
            r#"{"note":["can't be blank"]}"#
        );
        let note = CreateNote::from_params(&params("body=hi&confidential=true")).unwrap();
        assert!(note.internal);
        assert_eq!(
            CreateAward::from_params(&params("name=:thumbsup:"))
                .unwrap()
                .name,
            "thumbsup"
        );
        assert!(matches!(
            CreateAward::from_params(&params("name=nope-not-an-emoji")),
            Err(ApiError::NotFoundMessage(_))
        ));
    }
}
