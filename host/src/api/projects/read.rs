//! `GET /projects`, `GET /projects/:id`, `GET /projects/:id/users`, a user's project lists
//! (`GET /users/:id/projects`, `/starred_projects`) and a group's (`GET /groups/:id/projects`,
//! `/groups/:id/projects/shared`).

use crate::http::json::Json;
use crate::http::routes::Doc;
use crate::views::project::ProjectView;
use axum::extract::Path;
use axum::response::Response;

use super::{render_many, render_one};
use crate::access_level::AccessLevel;
use crate::api::access::{self, today, viewer};
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::{COUNT_CAP, PROJECT_MAX_OFFSET, Page, PageRequest, sort_direction};
use crate::http::params::{Audience, FromParams, FromParamsIn, Params};
use crate::http::request::Api;
use crate::model::namespaces::NamespaceRow;
use crate::model::projects::ProjectRow;
use crate::model::visibility::Visibility;
use crate::store::members::ProjectUsersFilter;
use crate::store::projects::{GroupScope, ProjectFilter};
use crate::store::window::Direction;
use crate::views::project::ProjectShape;

const ORDERS: &[&str] = &[
    "id",
    "name",
    "path",
    "created_at",
    "updated_at",
    "last_activity_at",
    "similarity",
    "star_count",
    "repository_size",
    "storage_size",
    "packages_size",
    "wiki_size",
];

/// Group project lists order by the same keys minus the storage sizes.
const GROUP_ORDERS: &[&str] = ORDERS.split_at(8).0;

/// Which list is being filtered: the general one has every filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    All,
    UserProjects,
    Starred,
    Group,
}

/// What a list of `kind` takes, for the OpenAPI document.
pub fn list_doc(kind: ListKind) -> Doc {
    Doc::new()
        .input_in::<ProjectListQuery, _>((kind, Audience::ADMIN))
        .input_in::<ProjectShape, _>(Audience::ADMIN)
        .input::<PageRequest>()
        .answers_list::<ProjectView>()
}

/// What a project list accepts; which filters depends on the list (`ListKind`) and on who
/// asks (custom attributes and storage-size orders are for administrators).
struct ProjectListQuery {
    /// The filters as given; who the viewer is and what external authorization refuses are
    /// added once known (`filter`).
    criteria: ProjectFilter,
    /// Group lists: their subgroups' projects too, and those shared with the group.
    include_subgroups: bool,
    with_shared: bool,
    order_by: &'static str,
    direction: Direction,
}

impl FromParamsIn<(ListKind, Audience)> for ProjectListQuery {
    fn from_params_in(p: &Params, (kind, audience): (ListKind, Audience)) -> ApiResult<Self> {
        let archived = p.bool("archived")?;
        let visibility = p.one_of_named("visibility", Visibility::ALL)?;
        let search = p
            .string("search")?
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        let search_namespaces = p.bool("search_namespaces")?.unwrap_or(false);
        let owned = p.bool("owned")?.unwrap_or(false);
        let membership = p.bool("membership")?.unwrap_or(false);
        let min_access_level = p.int("min_access_level")?;
        let starred = p.bool("starred")?.unwrap_or(false);
        let with_issues_enabled = p.bool("with_issues_enabled")?.unwrap_or(false);
        let with_merge_requests_enabled = p.bool("with_merge_requests_enabled")?.unwrap_or(false);
        if let Some(level) = min_access_level
            && AccessLevel::grantable(level).is_none()
        {
            return Err(ApiError::InvalidParam(
                "min_access_level does not have a valid value".into(),
            ));
        }
        let mut criteria = ProjectFilter {
            archived,
            visibility,
            search,
            search_namespaces,
            owned,
            membership,
            min_access_level,
            starred,
            with_issues_enabled,
            with_merge_requests_enabled,
            ..ProjectFilter::default()
        };
        let mut query = ProjectListQuery {
            criteria: ProjectFilter::default(),
            include_subgroups: false,
            with_shared: true,
            order_by: "created_at",
            direction: Direction::Desc,
        };
        if matches!(kind, ListKind::All | ListKind::UserProjects) {
            criteria.with_programming_language = p
                .string("with_programming_language")?
                .filter(|s| !s.is_empty());
        }
        if kind == ListKind::All {
            let millis = |name| Ok::<_, ApiError>(p.datetime(name)?.map(|d| d.timestamp_millis()));
            criteria.last_activity_after = millis("last_activity_after")?;
            criteria.last_activity_before = millis("last_activity_before")?;
            if audience.admin {
                criteria.custom_attributes = p.custom_attributes()?;
            }
        }
        if kind == ListKind::Group {
            // accepted for compatibility: there are no security reports
            p.bool("with_security_reports")?;
            query.include_subgroups = p.bool("include_subgroups")?.unwrap_or(false);
            query.with_shared = p.bool("with_shared")?.unwrap_or(true);
        }
        query.order_by = order_by(p, kind, audience.admin)?;
        query.direction = sort_direction(p, Direction::Desc)?;
        query.criteria = criteria;
        Ok(query)
    }
}

/// The ordering: `created_at` by default, storage sizes for administrators only (and not in
/// group lists, where they are not valid values).
fn order_by(p: &Params, kind: ListKind, admin: bool) -> ApiResult<&'static str> {
    let orders = if kind == ListKind::Group {
        GROUP_ORDERS
    } else {
        ORDERS
    };
    Ok(match p.one_of("order_by", orders)?.as_deref() {
        Some("id") => "id",
        Some("name") => "name",
        Some("path") => "path",
        Some("updated_at") => "updated_at",
        Some("last_activity_at") => "last_activity_at",
        Some("star_count") => "star_count",
        Some("repository_size") if admin => "repository_size",
        Some("storage_size") if admin => "storage_size",
        Some("packages_size") if admin => "packages_size",
        Some("wiki_size") if admin => "wiki_size",
        _ => "created_at",
    })
}

/// The store's filter for `query`, limited to what the caller sees.
async fn filter(api: &Api, query: &ProjectListQuery) -> ApiResult<ProjectFilter> {
    Ok(ProjectFilter {
        viewer: viewer(api),
        today: today(),
        excluded: access::refused_projects(api).await?,
        ..query.criteria.clone()
    })
}

async fn respond(
    api: &Api,
    query: &ProjectListQuery,
    filter: ProjectFilter,
) -> ApiResult<Response> {
    let request = PageRequest::from_params(&api.params)?;
    request.check_offset_cap(PROJECT_MAX_OFFSET, "Project")?;
    let window = request.window(&api.params, query.order_by, query.direction)?;
    let shape: ProjectShape = api.input_in(api.audience())?;
    let rows = api.db().list_projects(&filter, &window).await?;
    let total = if request.keyset {
        None
    } else {
        Some(api.db().count_projects(&filter, COUNT_CAP + 1).await?)
    };
    let views = render_many(api, &rows, shape).await?;
    let page = Page { rows, total };
    Ok(page.respond(
        &request,
        &api.origin,
        |p: &ProjectRow| p.id,
        |p| views.get(&p.id).cloned(),
    ))
}

/// The list of `kind`: its query read and its filter built.
async fn query_of(api: &Api, kind: ListKind) -> ApiResult<(ProjectListQuery, ProjectFilter)> {
    let query: ProjectListQuery = api.input_in((kind, api.audience()))?;
    let filter = filter(api, &query).await?;
    Ok((query, filter))
}

pub async fn list(api: Api) -> ApiResult<Response> {
    let (query, filter) = query_of(&api, ListKind::All).await?;
    respond(&api, &query, filter).await
}

pub async fn show(Path(id): Path<String>, api: Api) -> ApiResult<Json<ProjectView>> {
    let shape: ProjectShape = api.input_in(api.audience())?;
    let ctx = access::project(&api, &id).await?;
    Ok(Json(render_one(&api, &ctx, shape).await?))
}

/// `GET /users/:user_id/projects` (projects in the user's personal namespace) and
/// `/starred_projects` (projects the user starred), both limited to what the caller sees.
pub async fn user_projects(api: Api, key: &str, starred: bool) -> ApiResult<Response> {
    let kind = if starred {
        ListKind::Starred
    } else {
        ListKind::UserProjects
    };
    let (query, mut filter) = query_of(&api, kind).await?;
    let user = api
        .db()
        .user_by_id_or_username(key)
        .await?
        .filter(|u| u.user_type == "human")
        .ok_or(ApiError::NotFound("User"))?;
    if starred {
        filter.starred_by = Some(user.id);
    } else {
        let namespace = api
            .db()
            .user_namespace(user.id)
            .await?
            .ok_or(ApiError::NotFound("User"))?;
        filter.namespace_id = Some(namespace.id);
    }
    respond(&api, &query, filter).await
}

/// `GET /groups/:id/projects` (the group's projects, its subgroups' with `include_subgroups`,
/// and those shared with it unless `with_shared=false`) and `GET /groups/:id/projects/shared`
/// (only those shared with it), with the group-list filters, limited to what the caller sees.
pub async fn group_projects(
    api: Api,
    group: &NamespaceRow,
    shared_only: bool,
) -> ApiResult<Response> {
    let (query, mut filter) = query_of(&api, ListKind::Group).await?;
    filter.group = Some(GroupScope {
        group_id: group.id,
        own: !shared_only,
        subgroups_of: query.include_subgroups.then(|| group.traversal.clone()),
        shared: shared_only || query.with_shared,
    });
    respond(&api, &query, filter).await
}

/// `GET /projects/:id/forks`: the direct forks of a project, with the user-list filters.
pub async fn forks_of(api: Api, project_id: i64) -> ApiResult<Response> {
    let (query, mut filter) = query_of(&api, ListKind::UserProjects).await?;
    filter.forked_from = Some(project_id);
    respond(&api, &query, filter).await
}

/// `GET /projects/:id/users`.
pub(super) struct ProjectUsersQuery {
    /// Part of a name or username, lower case.
    search: Option<String>,
    /// `skip_users`.
    skip: Vec<i64>,
}

impl FromParams for ProjectUsersQuery {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(ProjectUsersQuery {
            search: p
                .string("search")?
                .map(|s| s.trim().to_lowercase())
                .filter(|s| !s.is_empty()),
            skip: p.int_list("skip_users")?.unwrap_or_default(),
        })
    }
}

/// `GET /projects/:id/users`: the active users with access to the project through
/// membership (direct, inherited from its groups, or through a group it is shared with),
/// matching `search`, without `skip_users`, by name; filtered and paged in SQL.
pub async fn users(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let ProjectUsersQuery { search, skip } = api.input()?;
    let ctx = access::project(&api, &id).await?;
    let today = today();
    let mut group_ids = if ctx.namespace.is_group() {
        ctx.namespace.ancestry()
    } else {
        Vec::new()
    };
    let shares = api.db().shares_of(&[ctx.project.id], &today).await?;
    let shared: Vec<i64> = shares.iter().map(|s| s.group_id).collect();
    for group in api.db().namespaces_by_ids(&shared).await? {
        group_ids.extend(group.ancestry());
    }
    group_ids.sort_unstable();
    group_ids.dedup();
    let filter = ProjectUsersFilter {
        project_id: ctx.project.id,
        group_ids: &group_ids,
        today: &today,
        search: search.as_deref(),
        skip: &skip,
    };
    let request = PageRequest::from_params(&api.params)?;
    let rows = api
        .db()
        .project_users(&filter, request.per_page + 1, request.offset())
        .await?;
    let total = api.db().count_project_users(&filter).await?;
    let views = api.user_views();
    Ok(Page {
        rows,
        total: Some(total),
    }
    .respond(&request, &api.origin, |u| u.id, |u| views.summary(u)))
}
