//! `GET /merge_requests`, `GET /groups/:id/merge_requests`, `GET /projects/:id/merge_requests`:
//! GitLab's filters, parsed once into a [`MergeRequestListQuery`], resolved into the store's
//! `MergeRequestFilter` (user names to ids, the caller's scope) and paginated by the shared
//! helper. The reading of users, labels and search terms is the issue lists'.

use axum::extract::Path;
use axum::response::Response;

use super::{shape, views};
use crate::api::access::{self, today, viewer};
use crate::api::issues::list::{UserRef, author, exclusive, labels, search_in, user_id, wildcard};
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::{COUNT_CAP, Page, PageRequest, sort_direction};
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::model::merge_requests::{MergeRequestRow, MergeRequestState};
use crate::policy::merge_requests::merge_requests_readable;
use crate::store::issue_filter::Wildcard;
use crate::store::merge_request_filter::{MergeRequestFilter, MergeRequestSource};
use crate::store::window::{Direction, Window};
use crate::views::merge_request::{MergeRequestBatch, MergeRequestListEntry};

/// GitLab's `order_by` values; those without a column here sort like `created_at`.
const ORDERS: &[&str] = &[
    "created_at",
    "updated_at",
    "title",
    "merged_at",
    "label_priority",
    "milestone_due",
    "popularity",
    "priority",
];

const SCOPES: &[&str] = &[
    "created_by_me",
    "assigned_to_me",
    "reviews_for_me",
    "all",
    "created-by-me",
    "assigned-to-me",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    CreatedByMe,
    AssignedToMe,
    ReviewsForMe,
    All,
}

/// What the three lists accept (GitLab's `merge_requests_params` and pagination).
pub struct MergeRequestListQuery {
    state: Option<MergeRequestState>,
    scope: Option<Scope>,
    author: Option<UserRef>,
    assignee: Wildcard<UserRef>,
    reviewer: Wildcard<UserRef>,
    labels: Wildcard<Vec<String>>,
    milestone: Wildcard<String>,
    iids: Option<Vec<i64>>,
    source_branch: Option<String>,
    target_branch: Option<String>,
    search: Option<String>,
    search_title: bool,
    search_description: bool,
    draft: Option<bool>,
    my_reaction_emoji: Wildcard<String>,
    created_after: Option<i64>,
    created_before: Option<i64>,
    updated_after: Option<i64>,
    updated_before: Option<i64>,
    simple: bool,
    with_labels_details: bool,
    page: PageRequest,
    window: Window,
}

/// `assignee_id`/`reviewer_id` (`None`, `Any` or an id) or one `..._username`.
fn person(p: &Params, id_name: &str, username_name: &str) -> ApiResult<Wildcard<UserRef>> {
    exclusive(p, id_name, username_name)?;
    let by_id = match wildcard(p.string(id_name)?.filter(|a| !a.is_empty())) {
        Wildcard::Value(v) => Wildcard::Value(UserRef::Id(
            v.trim()
                .parse::<i64>()
                .map_err(|_| ApiError::invalid(id_name))?,
        )),
        Wildcard::None => Wildcard::None,
        Wildcard::Any => Wildcard::Any,
        Wildcard::Unset => Wildcard::Unset,
    };
    Ok(match p.string_list(username_name)? {
        Some(mut names) if names.len() == 1 => Wildcard::Value(UserRef::Username(names.remove(0))),
        Some(names) if names.len() > 1 => {
            return Err(ApiError::InvalidParam(format!(
                "{username_name} allows one value, but found {}: {}",
                names.len(),
                names.join(", ")
            )));
        }
        _ => by_id,
    })
}

/// `draft` (a boolean) or the older `wip` (`yes` or `no`).
fn draft(p: &Params) -> ApiResult<Option<bool>> {
    if let Some(draft) = p.bool("draft")? {
        return Ok(Some(draft));
    }
    Ok(p.one_of("wip", &["yes", "no"])?.map(|value| value == "yes"))
}

impl FromParams for MergeRequestListQuery {
    fn from_params(p: &Params) -> ApiResult<Self> {
        exclusive(p, "author_id", "author_username")?;
        let states = ["opened", "closed", "locked", "merged", "all"];
        let state = match p.one_of("state", &states)?.as_deref() {
            Some(state) => MergeRequestState::parse(state),
            None => None,
        };
        let order_by = match p.one_of("order_by", ORDERS)?.as_deref() {
            Some("updated_at") => "updated_at",
            Some("title") => "title",
            Some("merged_at") => "merged_at",
            Some("popularity") => "upvotes",
            _ => "created_at",
        };
        let scope = p
            .one_of("scope", SCOPES)?
            .map(|s| match s.replace('-', "_").as_str() {
                "created_by_me" => Scope::CreatedByMe,
                "assigned_to_me" => Scope::AssignedToMe,
                "reviews_for_me" => Scope::ReviewsForMe,
                _ => Scope::All,
            });
        let ms = |name: &str| -> ApiResult<Option<i64>> {
            Ok(p.datetime(name)?.map(|d| d.timestamp_millis()))
        };
        let (search_title, search_description) = search_in(p)?;
        let view = p.one_of("view", &["simple"])?;
        let page = PageRequest::from_params(p)?;
        let direction = sort_direction(p, Direction::Desc)?;
        let window = page.window(p, order_by, direction)?;
        Ok(MergeRequestListQuery {
            state,
            scope,
            author: author(p)?,
            assignee: person(p, "assignee_id", "assignee_username")?,
            reviewer: person(p, "reviewer_id", "reviewer_username")?,
            labels: labels(p)?,
            milestone: wildcard(p.string("milestone")?.filter(|m| !m.is_empty())),
            iids: p.int_list("iids")?,
            source_branch: p.string("source_branch")?.filter(|b| !b.is_empty()),
            target_branch: p.string("target_branch")?.filter(|b| !b.is_empty()),
            search: p
                .string("search")?
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty()),
            search_title,
            search_description,
            draft: draft(p)?,
            my_reaction_emoji: wildcard(p.string("my_reaction_emoji")?.filter(|e| !e.is_empty())),
            created_after: ms("created_after")?,
            created_before: ms("created_before")?,
            updated_after: ms("updated_after")?,
            updated_before: ms("updated_before")?,
            simple: view.is_some(),
            with_labels_details: p.bool("with_labels_details")?.unwrap_or(false),
            page,
            window,
        })
    }
}

async fn person_id(api: &Api, person: Wildcard<UserRef>) -> ApiResult<Wildcard<i64>> {
    Ok(match person {
        Wildcard::Value(user) => Wildcard::Value(user_id(api, user).await?),
        Wildcard::None => Wildcard::None,
        Wildcard::Any => Wildcard::Any,
        Wildcard::Unset => Wildcard::Unset,
    })
}

/// The store's filter for `query` over `source`, for this caller.
async fn resolve(
    api: &Api,
    query: &mut MergeRequestListQuery,
    source: MergeRequestSource,
    default_scope: Scope,
) -> ApiResult<MergeRequestFilter> {
    let mut filter = MergeRequestFilter::new(source, viewer(api), today());
    filter.excluded_projects = access::refused_projects(api).await?;
    filter.state = query.state;
    filter.labels = std::mem::replace(&mut query.labels, Wildcard::Unset);
    filter.milestone = std::mem::replace(&mut query.milestone, Wildcard::Unset);
    filter.source_branch = query.source_branch.take();
    filter.target_branch = query.target_branch.take();
    filter.search = query.search.take();
    filter.search_title = query.search_title;
    filter.search_description = query.search_description;
    filter.draft = query.draft;
    filter.created_after = query.created_after;
    filter.created_before = query.created_before;
    filter.updated_after = query.updated_after;
    filter.updated_before = query.updated_before;
    filter.iids = query.iids.take();
    if let Some(author) = query.author.take() {
        filter.author_id = Some(user_id(api, author).await?);
    }
    filter.assignee =
        person_id(api, std::mem::replace(&mut query.assignee, Wildcard::Unset)).await?;
    filter.reviewer =
        person_id(api, std::mem::replace(&mut query.reviewer, Wildcard::Unset)).await?;
    let me = api.caller.as_ref().map(|c| c.user.id);
    filter.my_reaction_emoji = std::mem::replace(&mut query.my_reaction_emoji, Wildcard::Unset);
    if me.is_none() && !matches!(filter.my_reaction_emoji, Wildcard::Unset) {
        // Nobody's reactions: an anonymous caller's filter matches nothing.
        filter.iids = Some(Vec::new());
    }
    match (query.scope.unwrap_or(default_scope), me) {
        (Scope::All, _) => {}
        // GitLab answers an anonymous "my merge requests" scope with nothing.
        (_, None) => filter.iids = Some(Vec::new()),
        (Scope::CreatedByMe, Some(me)) => match filter.author_id {
            Some(author) if author != me => filter.iids = Some(Vec::new()),
            _ => filter.author_id = Some(me),
        },
        (Scope::AssignedToMe, Some(me)) => filter.assignee = Wildcard::Value(me),
        (Scope::ReviewsForMe, Some(me)) => filter.reviewer = Wildcard::Value(me),
    }
    Ok(filter)
}

async fn respond(
    api: &Api,
    mut query: MergeRequestListQuery,
    source: MergeRequestSource,
    default_scope: Scope,
    readable: bool,
) -> ApiResult<Response> {
    let mut filter = resolve(api, &mut query, source, default_scope).await?;
    if !readable {
        filter.iids = Some(Vec::new());
    }
    let (rows, total) = api
        .db()
        .merge_request_page(&filter, &query.window, COUNT_CAP + 1)
        .await?;
    let shown = &rows[..rows.len().min(query.page.per_page as usize)];
    let batch = MergeRequestBatch::load(api.db(), shown).await?;
    let views = views(api);
    let shape = shape(api, query.with_labels_details);
    let simple = query.simple;
    Ok(Page {
        rows,
        total: Some(total),
    }
    .respond(
        &query.page,
        &api.origin,
        |m: &MergeRequestRow| m.id,
        |m| match simple {
            true => MergeRequestListEntry::Simple(views.simple(m, &batch)),
            false => MergeRequestListEntry::Full(Box::new(views.merge_request(m, &batch, shape))),
        },
    ))
}

/// `GET /merge_requests`: the caller's MRs (`scope` defaults to `created_by_me`); anonymous
/// callers only with `scope=all`.
pub async fn global(api: Api) -> ApiResult<Response> {
    let anonymous_allowed = api.params.string("scope")?.as_deref() == Some("all");
    if !anonymous_allowed {
        api.user()?;
    }
    let query = api.input()?;
    respond(
        &api,
        query,
        MergeRequestSource::All,
        Scope::CreatedByMe,
        true,
    )
    .await
}

pub async fn group(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let group = access::group(&api, &id).await?;
    let query = api.input()?;
    let source = MergeRequestSource::Group {
        traversal: group.group.traversal.clone(),
    };
    respond(&api, query, source, Scope::All, true).await
}

pub async fn project(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let ctx = access::project(&api, &id).await?;
    let query = api.input()?;
    let source = MergeRequestSource::Project { id: ctx.project.id };
    respond(
        &api,
        query,
        source,
        Scope::All,
        merge_requests_readable(&ctx),
    )
    .await
}
