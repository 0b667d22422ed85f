//! `GET /issues`, `GET /groups/:id/issues`, `GET /projects/:id/issues`: the common filters,
//! read once into the shared `IssueFilter` and paginated by the shared helper.

use axum::extract::Path;
use axum::response::Response;
use serde_json::Value;

use super::{batch, is_reporter, issues_readable, shape, views};
use crate::api::access::{self, today, viewer};
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::{COUNT_CAP, Page, PageRequest, sort_direction};
use crate::http::request::Api;
use crate::model::issues::IssueRow;
use crate::store::issue_filter::{IssueFilter, IssueSource, Wildcard};
use crate::store::window::Direction;

/// GitLab's `order_by` values; those without a column here sort like `created_at`.
const ORDERS: &[&str] = &[
    "created_at",
    "updated_at",
    "title",
    "due_date",
    "popularity",
    "priority",
    "label_priority",
    "milestone_due",
    "relative_position",
];

const SCOPES: &[&str] = &[
    "created_by_me",
    "assigned_to_me",
    "all",
    "created-by-me",
    "assigned-to-me",
];

fn order_column(api: &Api) -> ApiResult<&'static str> {
    Ok(match api.params.one_of("order_by", ORDERS)?.as_deref() {
        Some("updated_at") => "updated_at",
        Some("title") => "title",
        Some("due_date") => "due_date",
        Some("popularity") => "upvotes",
        _ => "created_at",
    })
}

/// `None` and `Any` (any case) as wildcards, anything else as a value.
fn wildcard(value: Option<String>) -> Wildcard<String> {
    match value {
        None => Wildcard::Unset,
        Some(v) if v.eq_ignore_ascii_case("none") => Wildcard::None,
        Some(v) if v.eq_ignore_ascii_case("any") => Wildcard::Any,
        Some(v) => Wildcard::Value(v),
    }
}

fn exclusive(api: &Api, a: &str, b: &str) -> ApiResult<()> {
    if api.params.raw(a).is_some() && api.params.raw(b).is_some() {
        return Err(ApiError::InvalidParam(format!(
            "{a}, {b} are mutually exclusive"
        )));
    }
    Ok(())
}

fn labels_filter(api: &Api) -> ApiResult<Wildcard<Vec<String>>> {
    let Some(names) = api.params.string_list("labels")? else {
        return Ok(Wildcard::Unset);
    };
    if names.is_empty() {
        return Ok(Wildcard::Unset);
    }
    if let [only] = names.as_slice() {
        if only.eq_ignore_ascii_case("none") || only.eq_ignore_ascii_case("no label") {
            return Ok(Wildcard::None);
        }
        if only.eq_ignore_ascii_case("any") {
            return Ok(Wildcard::Any);
        }
    }
    Ok(Wildcard::Value(
        names.iter().map(|n| n.to_lowercase()).collect(),
    ))
}

/// The filters of the spec's table, for any of the three lists.
async fn filter(api: &Api, source: IssueSource, default_scope: &str) -> ApiResult<IssueFilter> {
    let p = &api.params;
    exclusive(api, "author_id", "author_username")?;
    exclusive(api, "assignee_id", "assignee_username")?;
    let mut filter = IssueFilter::new(source, viewer(api), today());
    filter.excluded_projects = access::refused_projects(api).await?;
    filter.state = match p.one_of("state", &["opened", "closed", "all"])?.as_deref() {
        Some("all") | None => None,
        Some(state) => Some(state.to_string()),
    };
    filter.labels = labels_filter(api)?;
    filter.milestone = wildcard(p.string("milestone")?.filter(|m| !m.is_empty()));
    let me = api.caller.as_ref().map(|c| c.user.id);
    let scope = p
        .one_of("scope", SCOPES)?
        .unwrap_or_else(|| default_scope.to_string())
        .replace('-', "_");
    match (scope.as_str(), me) {
        ("all", _) => {}
        // GitLab answers an anonymous "my issues" scope with nothing.
        (_, None) => filter.iids = Some(Vec::new()),
        ("created_by_me", Some(me)) => filter.author_id = Some(me),
        (_, Some(me)) => filter.assignee = Wildcard::Value(me),
    }
    if let Some(author) = p.int("author_id")? {
        filter.author_id = Some(match filter.author_id {
            Some(scoped) if scoped != author => 0,
            _ => author,
        });
    }
    if let Some(username) = p.string("author_username")?.filter(|u| !u.is_empty()) {
        let id = api
            .db()
            .user_by_username(&username)
            .await?
            .map_or(0, |u| u.id);
        filter.author_id = Some(match filter.author_id {
            Some(scoped) if scoped != id => 0,
            _ => id,
        });
    }
    let assignee = match wildcard(p.string("assignee_id")?.filter(|a| !a.is_empty())) {
        Wildcard::Value(v) => Wildcard::Value(
            v.trim()
                .parse::<i64>()
                .map_err(|_| ApiError::invalid("assignee_id"))?,
        ),
        Wildcard::None => Wildcard::None,
        Wildcard::Any => Wildcard::Any,
        Wildcard::Unset => Wildcard::Unset,
    };
    let assignee = match p.string_list("assignee_username")? {
        Some(names) if names.len() > 1 => {
            return Err(ApiError::InvalidParam(format!(
                "assignee_username allows one value, but found {}: {}",
                names.len(),
                names.join(", ")
            )));
        }
        Some(names) if names.len() == 1 => Wildcard::Value(
            api.db()
                .user_by_username(&names[0])
                .await?
                .map_or(0, |u| u.id),
        ),
        _ => assignee,
    };
    // `scope=assigned_to_me` and an explicit assignee must both hold.
    filter.assignee = match (&filter.assignee, assignee) {
        (current, Wildcard::Unset) => current.clone(),
        (Wildcard::Value(scoped), Wildcard::Value(id)) => {
            Wildcard::Value(if *scoped == id { id } else { 0 })
        }
        (Wildcard::Value(_), Wildcard::None) => Wildcard::Value(0),
        (Wildcard::Value(scoped), Wildcard::Any) => Wildcard::Value(*scoped),
        (_, assignee) => assignee,
    };
    filter.my_reaction_emoji = match (
        wildcard(p.string("my_reaction_emoji")?.filter(|e| !e.is_empty())),
        me,
    ) {
        (Wildcard::Unset, _) => Wildcard::Unset,
        (_, None) => {
            filter.iids = Some(Vec::new());
            Wildcard::Unset
        }
        (reaction, Some(_)) => reaction,
    };
    if let Some(iids) = p.int_list("iids")? {
        filter.iids = Some(match filter.iids.take() {
            Some(none) if none.is_empty() => none,
            _ => iids,
        });
    }
    filter.search = p
        .string("search")?
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    if let Some(fields) = p.string_list("in")? {
        if fields.is_empty() || fields.iter().any(|f| f != "title" && f != "description") {
            return Err(ApiError::InvalidParam(
                "in does not have a valid value".into(),
            ));
        }
        filter.search_title = fields.iter().any(|f| f == "title");
        filter.search_description = fields.iter().any(|f| f == "description");
    }
    let ms = |name: &str| -> ApiResult<Option<i64>> {
        Ok(p.datetime(name)?.map(|d| d.timestamp_millis()))
    };
    filter.created_after = ms("created_after")?;
    filter.created_before = ms("created_before")?;
    filter.updated_after = ms("updated_after")?;
    filter.updated_before = ms("updated_before")?;
    filter.confidential = p.bool("confidential")?;
    Ok(filter)
}

async fn respond(api: &Api, filter: IssueFilter) -> ApiResult<Response> {
    let request = PageRequest::from_params(&api.params)?;
    let order_by = order_column(api)?;
    let direction = sort_direction(&api.params, Direction::Desc)?;
    let window = request.window(&api.params, order_by, direction)?;
    let (rows, total) = api.db().issue_page(&filter, &window, COUNT_CAP + 1).await?;
    let total = Some(total);
    let shown = &rows[..rows.len().min(request.per_page as usize)];
    let batch = batch(api, shown, false).await?;
    let views = views(api);
    let shape = shape(api, false)?;
    Ok(Page { rows, total }.respond(
        &request,
        &api.origin,
        |i: &IssueRow| i.id,
        |i| -> Value { views.issue(i, &batch, shape) },
    ))
}

/// `GET /issues`: the caller's issues (`scope` defaults to `created_by_me`); anonymous
/// callers only with `scope=all` (public issues), as on GitLab.
pub async fn global(api: Api) -> ApiResult<Response> {
    if api.params.string("scope")?.as_deref() != Some("all") {
        api.user()?;
    }
    let filter = filter(&api, IssueSource::All, "created_by_me").await?;
    respond(&api, filter).await
}

pub async fn group(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let group = access::group(&api, &id).await?;
    let source = IssueSource::Group {
        traversal: group.group.traversal.clone(),
    };
    let filter = filter(&api, source, "all").await?;
    respond(&api, filter).await
}

pub async fn project(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let ctx = access::project(&api, &id).await?;
    let source = IssueSource::Project {
        id: ctx.project.id,
        see_confidential: is_reporter(&ctx),
    };
    let mut filter = filter(&api, source, "all").await?;
    if !issues_readable(&ctx) {
        // GitLab lists nothing when the issues feature is off for the caller.
        filter.iids = Some(Vec::new());
    }
    respond(&api, filter).await
}
