//! `GET /issues`, `GET /groups/:id/issues`, `GET /projects/:id/issues`: the common filters,
//! parsed once into an [`IssueListQuery`], resolved into the store's `IssueFilter` (user names
//! to ids, the caller's scope) and paginated by the shared helper.

use axum::extract::Path;
use axum::response::Response;

use super::{batch, is_reporter, issues_readable, views};
use crate::api::access::{self, today, viewer};
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::{COUNT_CAP, Page, PageRequest, sort_direction};
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::model::issues::IssueRow;
use crate::model::states::IssueState;
use crate::settings::keys;
use crate::store::issue_filter::{IssueCriteria, IssueFilter, IssueSource, Wildcard};
use crate::store::window::{Direction, Window};
use crate::views::issue::IssueShape;

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

/// Whose issues a list shows (`scope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    CreatedByMe,
    AssignedToMe,
    All,
}

/// A user named by id or by username; a username is looked up after parsing (an unknown one
/// matches nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserRef {
    Id(i64),
    Username(String),
}

/// What the three issue lists accept (GitLab's `issues_params` and pagination).
#[derive(Debug)]
pub struct IssueListQuery {
    /// The criteria passed to the store as read.
    pub criteria: IssueCriteria,
    /// `None`: the list's default (`created_by_me` for `GET /issues`, else `all`).
    pub scope: Option<Scope>,
    /// `author_id` or `author_username` (mutually exclusive).
    pub author: Option<UserRef>,
    /// `assignee_id` (`None`, `Any` or an id) or one `assignee_username` (mutually exclusive).
    pub assignee: Wildcard<UserRef>,
    pub my_reaction_emoji: Wildcard<String>,
    pub iids: Option<Vec<i64>>,
    pub page: PageRequest,
    /// `order_by`, `sort` and the keyset bounds.
    pub window: Window,
    pub with_labels_details: bool,
}

/// `None` and `Any` (any case) as wildcards, anything else as a value.
pub(crate) fn wildcard(value: Option<String>) -> Wildcard<String> {
    match value {
        None => Wildcard::Unset,
        Some(v) if v.eq_ignore_ascii_case("none") => Wildcard::None,
        Some(v) if v.eq_ignore_ascii_case("any") => Wildcard::Any,
        Some(v) => Wildcard::Value(v),
    }
}

pub(crate) fn exclusive(p: &Params, a: &str, b: &str) -> ApiResult<()> {
    if p.raw(a).is_some() && p.raw(b).is_some() {
        return Err(ApiError::InvalidParam(format!(
            "{a}, {b} are mutually exclusive"
        )));
    }
    Ok(())
}

pub(crate) fn labels(p: &Params) -> ApiResult<Wildcard<Vec<String>>> {
    let Some(names) = p.string_list("labels")? else {
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

fn scope(p: &Params) -> ApiResult<Option<Scope>> {
    Ok(p.one_of("scope", SCOPES)?
        .map(|s| match s.replace('-', "_").as_str() {
            "created_by_me" => Scope::CreatedByMe,
            "assigned_to_me" => Scope::AssignedToMe,
            _ => Scope::All,
        }))
}

pub(crate) fn author(p: &Params) -> ApiResult<Option<UserRef>> {
    let id = p.int("author_id")?.map(UserRef::Id);
    let username = p
        .string("author_username")?
        .filter(|u| !u.is_empty())
        .map(UserRef::Username);
    // Exclusive (checked first), so at most one is set.
    Ok(id.or(username))
}

fn assignee(p: &Params) -> ApiResult<Wildcard<UserRef>> {
    let by_id = match wildcard(p.string("assignee_id")?.filter(|a| !a.is_empty())) {
        Wildcard::Value(v) => Wildcard::Value(UserRef::Id(
            v.trim()
                .parse::<i64>()
                .map_err(|_| ApiError::invalid("assignee_id"))?,
        )),
        Wildcard::None => Wildcard::None,
        Wildcard::Any => Wildcard::Any,
        Wildcard::Unset => Wildcard::Unset,
    };
    Ok(match p.string_list("assignee_username")? {
        Some(names) if names.len() > 1 => {
            return Err(ApiError::InvalidParam(format!(
                "assignee_username allows one value, but found {}: {}",
                names.len(),
                names.join(", ")
            )));
        }
        Some(mut names) if names.len() == 1 => Wildcard::Value(UserRef::Username(names.remove(0))),
        _ => by_id,
    })
}

/// `in`: `title`, `description` or both; `(title, description)`.
pub(crate) fn search_in(p: &Params) -> ApiResult<(bool, bool)> {
    let Some(fields) = p.string_list("in")? else {
        return Ok((true, true));
    };
    if fields.is_empty() || fields.iter().any(|f| f != "title" && f != "description") {
        return Err(ApiError::InvalidParam(
            "in does not have a valid value".into(),
        ));
    }
    Ok((
        fields.iter().any(|f| f == "title"),
        fields.iter().any(|f| f == "description"),
    ))
}

fn order_column(p: &Params) -> ApiResult<&'static str> {
    Ok(match p.one_of("order_by", ORDERS)?.as_deref() {
        Some("updated_at") => "updated_at",
        Some("title") => "title",
        Some("due_date") => "due_date",
        Some("popularity") => "upvotes",
        _ => "created_at",
    })
}

impl FromParams for IssueListQuery {
    /// Reads the parameters in the order GitLab reports their errors: the filters, then the
    /// page.
    fn from_params(p: &Params) -> ApiResult<Self> {
        exclusive(p, "author_id", "author_username")?;
        exclusive(p, "assignee_id", "assignee_username")?;
        // `all` names no state: every issue.
        let states = [
            IssueState::Opened.as_str(),
            IssueState::Closed.as_str(),
            "all",
        ];
        let state = match p.one_of("state", &states)?.as_deref() {
            Some(state) => IssueState::parse(state),
            None => None,
        };
        let labels = labels(p)?;
        let milestone = wildcard(p.string("milestone")?.filter(|m| !m.is_empty()));
        let scope = scope(p)?;
        let author = author(p)?;
        let assignee = assignee(p)?;
        let my_reaction_emoji = wildcard(p.string("my_reaction_emoji")?.filter(|e| !e.is_empty()));
        let iids = p.int_list("iids")?;
        let search = p
            .string("search")?
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        let (search_title, search_description) = search_in(p)?;
        let ms = |name: &str| -> ApiResult<Option<i64>> {
            Ok(p.datetime(name)?.map(|d| d.timestamp_millis()))
        };
        let created_after = ms("created_after")?;
        let created_before = ms("created_before")?;
        let updated_after = ms("updated_after")?;
        let updated_before = ms("updated_before")?;
        let confidential = p.bool("confidential")?;
        let page = PageRequest::from_params(p)?;
        let order_by = order_column(p)?;
        let direction = sort_direction(p, Direction::Desc)?;
        let window = page.window(p, order_by, direction)?;
        Ok(IssueListQuery {
            criteria: IssueCriteria {
                state,
                labels,
                milestone,
                search,
                search_title,
                search_description,
                created_after,
                created_before,
                updated_after,
                updated_before,
                confidential,
            },
            scope,
            author,
            assignee,
            my_reaction_emoji,
            iids,
            page,
            window,
            with_labels_details: p.bool("with_labels_details")?.unwrap_or(false),
        })
    }
}

/// An author filter and the scope's `created_by_me` must both hold: a different id matches
/// nothing (id 0).
fn both_authors(scoped: Option<i64>, explicit: i64) -> i64 {
    match scoped {
        Some(scoped) if scoped != explicit => 0,
        _ => explicit,
    }
}

/// `scope=assigned_to_me` and an explicit assignee must both hold.
fn both_assignees(scoped: &Wildcard<i64>, explicit: Wildcard<i64>) -> Wildcard<i64> {
    match (scoped, explicit) {
        (current, Wildcard::Unset) => current.clone(),
        (Wildcard::Value(scoped), Wildcard::Value(id)) => {
            Wildcard::Value(if *scoped == id { id } else { 0 })
        }
        (Wildcard::Value(_), Wildcard::None) => Wildcard::Value(0),
        (Wildcard::Value(scoped), Wildcard::Any) => Wildcard::Value(*scoped),
        (_, explicit) => explicit,
    }
}

/// A user's id, looked up by username when so named; 0 (nobody) for an unknown name.
pub(crate) async fn user_id(api: &Api, user: UserRef) -> ApiResult<i64> {
    Ok(match user {
        UserRef::Id(id) => id,
        UserRef::Username(name) => api.db().user_by_username(&name).await?.map_or(0, |u| u.id),
    })
}

/// The store's filter for `query` over `source`, for this caller: the lookups that depend on
/// the input (user names, projects refused by external authorization) happen here.
async fn resolve(
    api: &Api,
    query: IssueListQuery,
    source: IssueSource,
    default_scope: Scope,
) -> ApiResult<IssueFilter> {
    let mut filter = IssueFilter::new(source, viewer(api), today());
    filter.excluded_projects = access::refused_projects(api).await?;
    filter.criteria = query.criteria;
    let me = api.caller.as_ref().map(|c| c.user.id);
    match (query.scope.unwrap_or(default_scope), me) {
        (Scope::All, _) => {}
        // GitLab answers an anonymous "my issues" scope with nothing.
        (_, None) => filter.iids = Some(Vec::new()),
        (Scope::CreatedByMe, Some(me)) => filter.author_id = Some(me),
        (Scope::AssignedToMe, Some(me)) => filter.assignee = Wildcard::Value(me),
    }
    if let Some(author) = query.author {
        let id = user_id(api, author).await?;
        filter.author_id = Some(both_authors(filter.author_id, id));
    }
    let assignee = match query.assignee {
        Wildcard::Value(user) => Wildcard::Value(user_id(api, user).await?),
        Wildcard::None => Wildcard::None,
        Wildcard::Any => Wildcard::Any,
        Wildcard::Unset => Wildcard::Unset,
    };
    filter.assignee = both_assignees(&filter.assignee, assignee);
    filter.my_reaction_emoji = match (query.my_reaction_emoji, me) {
        (Wildcard::Unset, _) => Wildcard::Unset,
        (_, None) => {
            filter.iids = Some(Vec::new());
            Wildcard::Unset
        }
        (reaction, Some(_)) => reaction,
    };
    if let Some(iids) = query.iids {
        filter.iids = Some(match filter.iids.take() {
            Some(none) if none.is_empty() => none,
            _ => iids,
        });
    }
    Ok(filter)
}

/// Lists issues: parse, resolve (unless `filter` is already empty), page, render.
async fn respond(
    api: &Api,
    query: IssueListQuery,
    source: IssueSource,
    default_scope: Scope,
    readable: bool,
) -> ApiResult<Response> {
    let request = query.page.clone();
    let window = query.window.clone();
    let shape = IssueShape {
        single: false,
        with_labels_details: query.with_labels_details,
        limit_to_hours: api.settings.get(keys::TIME_TRACKING_LIMIT_TO_HOURS),
    };
    let mut filter = resolve(api, query, source, default_scope).await?;
    if !readable {
        // GitLab lists nothing when the issues feature is off for the caller.
        filter.iids = Some(Vec::new());
    }
    let (rows, total) = api.db().issue_page(&filter, &window, COUNT_CAP + 1).await?;
    let total = Some(total);
    let shown = &rows[..rows.len().min(request.per_page as usize)];
    let batch = batch(api, shown, false).await?;
    let views = views(api);
    Ok(Page { rows, total }.respond(
        &request,
        &api.origin,
        |i: &IssueRow| i.id,
        |i| views.issue(i, &batch, shape),
    ))
}

/// `scope=all`, the one scope of `GET /issues` open to anonymous callers.
pub(super) struct AnonymousScope(bool);

impl FromParams for AnonymousScope {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(AnonymousScope(p.string("scope")?.as_deref() == Some("all")))
    }
}

/// `GET /issues`: the caller's issues (`scope` defaults to `created_by_me`); anonymous
/// callers only with `scope=all` (public issues), as on GitLab.
pub async fn global(api: Api) -> ApiResult<Response> {
    // Authentication comes before the other parameters' errors.
    let AnonymousScope(anonymous_allowed) = api.input()?;
    if !anonymous_allowed {
        api.user()?;
    }
    let query = api.input()?;
    respond(&api, query, IssueSource::All, Scope::CreatedByMe, true).await
}

pub async fn group(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let group = access::group(&api, &id).await?;
    let query = api.input()?;
    let source = IssueSource::Group {
        traversal: group.group.traversal.clone(),
    };
    respond(&api, query, source, Scope::All, true).await
}

pub async fn project(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let ctx = access::project(&api, &id).await?;
    let query = api.input()?;
    let source = IssueSource::Project {
        id: ctx.project.id,
        see_confidential: is_reporter(&ctx),
    };
    respond(&api, query, source, Scope::All, issues_readable(&ctx)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(q: &str) -> ApiResult<IssueListQuery> {
        IssueListQuery::from_params(&Params::from_query(Some(q)))
    }

    fn message(result: ApiResult<IssueListQuery>) -> String {
        match result {
            Err(ApiError::InvalidParam(m)) => m,
            other => panic!("expected an invalid parameter, got {other:?}"),
        }
    }

    #[test]
    fn defaults() {
        let q = query("").unwrap();
        assert_eq!(q.criteria.state, None);
        assert!(matches!(q.criteria.labels, Wildcard::Unset));
        assert_eq!(q.scope, None);
        assert_eq!(q.author, None);
        assert!(matches!(q.assignee, Wildcard::Unset));
        assert!(q.criteria.search_title && q.criteria.search_description);
        assert_eq!(q.window.order_by, "created_at");
        assert_eq!(q.window.direction, Direction::Desc);
        assert_eq!((q.page.page, q.page.per_page), (1, 20));
    }

    #[test]
    fn exclusive_pairs_and_bad_values() {
        assert_eq!(
            message(query("author_id=1&author_username=a")),
            "author_id, author_username are mutually exclusive"
        );
        assert_eq!(
            message(query("assignee_id=1&assignee_username=a")),
            "assignee_id, assignee_username are mutually exclusive"
        );
        assert_eq!(
            message(query("assignee_username[]=a&assignee_username[]=b")),
            "assignee_username allows one value, but found 2: a, b"
        );
        assert_eq!(message(query("assignee_id=x")), "assignee_id is invalid");
        assert_eq!(message(query("in=body")), "in does not have a valid value");
        assert_eq!(
            message(query("scope=mine")),
            "scope does not have a valid value"
        );
        assert_eq!(
            message(query("order_by=id")),
            "order_by does not have a valid value"
        );
    }

    #[test]
    fn wildcards_scopes_and_users() {
        let q =
            query("labels=No+Label&milestone=any&scope=assigned-to-me&assignee_id=None").unwrap();
        assert!(matches!(q.criteria.labels, Wildcard::None));
        assert!(matches!(q.criteria.milestone, Wildcard::Any));
        assert_eq!(q.scope, Some(Scope::AssignedToMe));
        assert!(matches!(q.assignee, Wildcard::None));
        let q = query("labels=Bug,UI&author_username=ann&assignee_username=bob&in=title").unwrap();
        assert!(matches!(q.criteria.labels, Wildcard::Value(ref l) if l == &["bug", "ui"]));
        assert_eq!(q.author, Some(UserRef::Username("ann".into())));
        assert!(matches!(q.assignee, Wildcard::Value(UserRef::Username(ref n)) if n == "bob"));
        assert!(q.criteria.search_title && !q.criteria.search_description);
        let q = query("state=all&order_by=popularity&sort=asc&author_id=7").unwrap();
        assert_eq!(q.criteria.state, None);
        assert_eq!(q.window.order_by, "upvotes");
        assert_eq!(q.author, Some(UserRef::Id(7)));
    }

    #[test]
    fn scoped_and_explicit_users_must_both_hold() {
        assert_eq!(both_authors(None, 5), 5);
        assert_eq!(both_authors(Some(5), 5), 5);
        assert_eq!(both_authors(Some(5), 6), 0);
        let mine = Wildcard::Value(5);
        assert!(matches!(
            both_assignees(&mine, Wildcard::Unset),
            Wildcard::Value(5)
        ));
        assert!(matches!(
            both_assignees(&mine, Wildcard::Value(6)),
            Wildcard::Value(0)
        ));
        assert!(matches!(
            both_assignees(&mine, Wildcard::None),
            Wildcard::Value(0)
        ));
        assert!(matches!(
            both_assignees(&mine, Wildcard::Any),
            Wildcard::Value(5)
        ));
        assert!(matches!(
            both_assignees(&Wildcard::Unset, Wildcard::None),
            Wildcard::None
        ));
    }
}
