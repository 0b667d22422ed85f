//! Groups (`/groups`, `/groups/:id`, `/groups/:id/subgroups`, `/groups/:id/descendant_groups`,
//! `/groups/:id/projects`) and the
//! namespace API (`/namespaces`, `/namespaces/:id`). Groups nest through `parent_id`; the rules
//! and steps of creating, changing and deleting one are `services::groups`.

use crate::http::json::Json;
use crate::http::routes::Doc;
use crate::http::routes::Router;
use axum::extract::Path;
use axum::http::Method;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Map, Value, json};

use super::access::{self, today};
use super::projects::{self, check_visibility_allowed, default_visibility, restricted};
use super::users::avatar::{self, AvatarChange};
use crate::access_level::AccessLevel;
use crate::context::ApiContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::{COUNT_CAP, Page, PageRequest, sort_direction};
use crate::http::params::{FromParams, Params, flag_input};
use crate::http::request::Api;
use crate::model::namespaces::NamespaceRow;
use crate::model::visibility::Visibility;
use crate::services::groups::{self, GivenSettings, Parent};
use crate::services::project_placement::Creator;
use crate::settings::keys;
use crate::store::namespaces::NamespaceFilter;
use crate::store::window::{Direction, Window};
use crate::views::namespace::{
    GROUP_SETTINGS, GroupDetail, GroupView, NamespaceView, NamespaceViews,
};

pub fn router() -> Router<ApiContext> {
    // Lists of groups read the same filters; a single group comes with its projects.
    let group_list = || {
        Doc::new()
            .input::<GroupListQuery>()
            .input::<PageRequest>()
            .answers_list::<GroupView>()
    };
    let group_detail = || Doc::new().answers::<GroupDetail>();
    Router::new()
        .route("/api/v4/groups", get(list).post(create))
        .doc(Method::GET, group_list())
        .doc(Method::POST, group_detail().input::<CreateGroup>())
        .route("/api/v4/groups/{id}", get(show).put(update).delete(remove))
        .doc(Method::GET, group_detail().input::<GroupShape>())
        .doc(Method::PUT, group_detail().input::<UpdateGroup>())
        .route("/api/v4/groups/{id}/subgroups", get(subgroups))
        .doc(Method::GET, group_list())
        .route(
            "/api/v4/groups/{id}/descendant_groups",
            get(descendant_groups),
        )
        .doc(Method::GET, group_list())
        .route(
            "/uploads/-/system/group/avatar/{id}/{filename}",
            get(serve_avatar),
        )
        .route("/api/v4/groups/{id}/projects", get(group_projects))
        .doc(Method::GET, projects::list_doc(projects::ListKind::Group))
        .route("/api/v4/groups/{id}/projects/shared", get(shared_projects))
        .doc(Method::GET, projects::list_doc(projects::ListKind::Group))
        .route("/api/v4/namespaces", get(namespaces))
        .doc(
            Method::GET,
            Doc::new()
                .input::<NamespaceListQuery>()
                .input::<PageRequest>()
                .answers_list::<NamespaceView>(),
        )
        .route("/api/v4/namespaces/{id}", get(namespace))
        .doc(Method::GET, Doc::new().answers::<NamespaceView>())
}

/// GitLab validates a namespace's description (`Namespace::Detail`) to this many characters.
const DESCRIPTION_MAX: usize = 255;

/// A group setting from its JSON column, as text.
pub fn setting_str(ns: &NamespaceRow, key: &str) -> String {
    match crate::views::namespace::setting(&ns.settings_json(), key) {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

fn views(api: &Api) -> NamespaceViews<'_> {
    NamespaceViews {
        base_url: &api.tenant.base_url,
    }
}

/// `GET /groups` and `GET /groups/:id/subgroups`.
struct GroupListQuery {
    search: Option<String>,
    owned: bool,
    min_access_level: Option<i64>,
    visibility: Option<Visibility>,
    skip_groups: Vec<i64>,
    top_level_only: bool,
    /// Every visible group rather than the caller's own; the default depends on the caller.
    all_available: Option<bool>,
    order_by: &'static str,
    direction: Direction,
}

impl FromParams for GroupListQuery {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let search = p
            .string("search")?
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        let owned = p.bool("owned")?.unwrap_or(false);
        let min_access_level = p.int("min_access_level")?;
        let visibility = p.one_of_named("visibility", Visibility::ALL)?;
        let skip_groups = p.int_list("skip_groups")?.unwrap_or_default();
        let top_level_only = p.bool("top_level_only")?.unwrap_or(false);
        let all_available = p.bool("all_available")?;
        let order_by = match p
            .one_of("order_by", &["name", "path", "id", "similarity"])?
            .as_deref()
        {
            Some("path") => "path",
            Some("id") => "id",
            _ => "name",
        };
        Ok(GroupListQuery {
            search,
            owned,
            min_access_level,
            visibility,
            skip_groups,
            top_level_only,
            all_available,
            order_by,
            direction: sort_direction(p, Direction::Asc)?,
        })
    }
}

fn filter(api: &Api, query: &GroupListQuery) -> NamespaceFilter {
    let admin = api.caller.as_ref().is_some_and(|c| c.is_admin());
    let mut filter = NamespaceFilter {
        kind: Some("group"),
        search: query.search.clone(),
        viewer: api.caller.as_ref().map(|c| c.user.id),
        viewer_external: api.caller.as_ref().is_some_and(|c| c.user.external),
        admin,
        owned: query.owned,
        min_access_level: query.min_access_level,
        visibility: query.visibility,
        skip: query.skip_groups.clone(),
        today: today(),
        ..NamespaceFilter::default()
    };
    if query.top_level_only {
        filter.parent = Some(None);
    }
    let all_available = query.all_available.unwrap_or(admin || api.caller.is_none());
    if let Some(caller) = &api.caller
        && (!all_available || filter.min_access_level.is_some())
    {
        filter.member_of = Some(caller.user.id);
    }
    filter
}

async fn respond_groups(
    api: &Api,
    query: &GroupListQuery,
    filter: NamespaceFilter,
) -> ApiResult<Response> {
    let request = PageRequest::from_params(&api.params)?;
    let window: Window = request.window(&api.params, query.order_by, query.direction)?;
    let rows = api.db().list_namespaces(&filter, &window).await?;
    let total = if request.keyset {
        None
    } else {
        Some(api.db().count_namespaces(&filter, COUNT_CAP + 1).await?)
    };
    let views = views(api);
    Ok(Page { rows, total }.respond(&request, &api.origin, |g| g.id, |g| views.group(g)))
}

async fn list(api: Api) -> ApiResult<Response> {
    let query: GroupListQuery = api.input()?;
    let filter = filter(&api, &query);
    respond_groups(&api, &query, filter).await
}

async fn subgroups(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let query: GroupListQuery = api.input()?;
    let ctx = access::group(&api, &id).await?;
    let mut filter = filter(&api, &query);
    filter.parent = Some(Some(ctx.group.id));
    // subgroups lists show every visible subgroup unless asked otherwise
    if query.all_available.is_none() && filter.min_access_level.is_none() {
        filter.member_of = None;
    }
    respond_groups(&api, &query, filter).await
}

/// `GET /groups/:id/descendant_groups`: the subgroups at every depth, with the subgroup list's
/// filters.
async fn descendant_groups(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let query: GroupListQuery = api.input()?;
    let ctx = access::group(&api, &id).await?;
    let mut filter = filter(&api, &query);
    filter.descendants_of = Some(ctx.group.traversal.clone());
    if query.all_available.is_none() && filter.min_access_level.is_none() {
        filter.member_of = None;
    }
    respond_groups(&api, &query, filter).await
}

async fn group_projects(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let ctx = access::group(&api, &id).await?;
    projects::group_projects(api, &ctx.group, false).await
}

async fn shared_projects(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let ctx = access::group(&api, &id).await?;
    projects::group_projects(api, &ctx.group, true).await
}

flag_input!(
    /// `with_projects`: whether a group's view embeds its projects (it does by default).
    GroupShape,
    "with_projects",
    true
);

/// The group with its own projects and the projects shared with it, as `GET /groups/:id`
/// shows it.
async fn group_view(api: &Api, group: &NamespaceRow, shape: &GroupShape) -> ApiResult<GroupDetail> {
    Ok(views(api)
        .load_group_detail(&api.scope(), group, shape.0)
        .await?)
}

async fn show(Path(id): Path<String>, api: Api) -> ApiResult<Json<GroupDetail>> {
    let shape: GroupShape = api.input()?;
    let ctx = access::group(&api, &id).await?;
    Ok(Json(group_view(&api, &ctx.group, &shape).await?))
}

/// The group settings a create or update gives, typed as their defaults are.
struct GroupSettings(GivenSettings);

impl FromParams for GroupSettings {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let mut values = Map::new();
        for (key, default) in GROUP_SETTINGS {
            if !p.has(key) {
                continue;
            }
            let value = match serde_json::from_str::<Value>(default).unwrap_or(Value::Null) {
                Value::Bool(_) => p.bool(key)?.map(Value::from),
                Value::Number(_) => p.int(key)?.map(Value::from),
                _ => p.string(key)?.map(Value::from),
            };
            if let Some(value) = value {
                values.insert(key.to_string(), value);
            }
        }
        // GitLab's parameter, and the setting's own name, which some clients send.
        let default_branch = match p.string("default_branch")? {
            Some(branch) => Some(branch),
            None => p.string("default_branch_name")?,
        };
        Ok(GroupSettings(GivenSettings {
            values,
            default_branch,
        }))
    }
}

/// `POST /groups`.
struct CreateGroup {
    name: String,
    path: String,
    visibility: Option<Visibility>,
    parent_id: Option<i64>,
    settings: GroupSettings,
    description: String,
    shape: GroupShape,
}

impl FromParams for CreateGroup {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let name = p.required_string("name")?.trim().to_string();
        let path = p.required_string("path")?.trim().to_string();
        groups::check_name_path(&name, &path)?;
        Ok(CreateGroup {
            name,
            path,
            visibility: p.one_of_named("visibility", Visibility::ALL)?,
            parent_id: p.int("parent_id")?,
            settings: GroupSettings::from_params(p)?,
            description: p
                .string_at_most("description", DESCRIPTION_MAX)?
                .unwrap_or_default(),
            shape: GroupShape::from_params(p)?,
        })
    }
}

/// `PUT /groups/:id`: absent fields keep their values.
struct UpdateGroup {
    name: Option<String>,
    path: Option<String>,
    description: Option<String>,
    visibility: Option<Visibility>,
    settings: GroupSettings,
    shape: GroupShape,
}

impl FromParams for UpdateGroup {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(UpdateGroup {
            name: p.string("name")?.map(|s| s.trim().to_string()),
            path: p.string("path")?.map(|s| s.trim().to_string()),
            description: p.string_at_most("description", DESCRIPTION_MAX)?,
            visibility: p.one_of_named("visibility", Visibility::ALL)?,
            settings: GroupSettings::from_params(p)?,
            shape: GroupShape::from_params(p)?,
        })
    }
}

async fn create(api: Api) -> ApiResult<Response> {
    let caller = api.user()?;
    let avatar: AvatarChange = api.input()?;
    let input: CreateGroup = api.input()?;
    let visibility = match input.visibility {
        Some(v) => v,
        None => default_visibility(&api, keys::DEFAULT_GROUP_VISIBILITY),
    };
    check_visibility_allowed(&api, visibility)?;
    let parent = match input.parent_id {
        Some(parent_id) => Some(access::group(&api, &parent_id.to_string()).await?),
        None => None,
    };
    let creator = Creator {
        user: &caller.user,
        admin: caller.is_admin(),
    };
    let parent = parent.as_ref().map(|ctx| Parent {
        group: &ctx.group,
        level: ctx.level,
    });
    let new = groups::CreateGroup {
        name: input.name,
        path: input.path,
        description: input.description,
        visibility,
        settings: input.settings.0,
    };
    let group = groups::create(api.db(), creator, parent, new).await?;
    let group = match &avatar {
        AvatarChange::Set(file, name) => {
            avatar::store(&api, avatar::GROUP, group.id, file, name).await?;
            groups::set_avatar(api.db(), &group, name, caller.user.id).await?
        }
        _ => group,
    };
    Ok((
        StatusCode::CREATED,
        Json(group_view(&api, &group, &input.shape).await?),
    )
        .into_response())
}

/// `GET /uploads/-/system/group/avatar/:id/:filename`: the avatar, to whoever may see the
/// group (404 otherwise).
async fn serve_avatar(
    Path((id, filename)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Response> {
    let ctx = access::group(&api, &id)
        .await
        .map_err(|_| ApiError::NotFoundMessage("404 Not Found".into()))?;
    let stored = ctx.group.avatar_path.as_deref();
    avatar::send_current(&api, avatar::GROUP, ctx.group.id, stored, &filename).await
}

async fn update(Path(id): Path<String>, api: Api) -> ApiResult<Json<GroupDetail>> {
    let caller = api.user()?;
    let input: UpdateGroup = api.input()?;
    let avatar: AvatarChange = api.input()?;
    let ctx = access::group(&api, &id).await?;
    ctx.require(AccessLevel::Owner)?;
    let group = &ctx.group;
    let update = groups::UpdateGroup {
        restricted: input.visibility.is_some_and(|v| restricted(&api, v)),
        name: input.name,
        path: input.path,
        description: input.description,
        visibility: input.visibility,
        settings: input.settings.0,
    };
    let mut change = groups::check_update(api.db(), group, caller.is_admin(), update).await?;
    // The file changes once every rule passed, before the row names it.
    match &avatar {
        AvatarChange::Keep => {}
        AvatarChange::Set(file, name) => {
            avatar::store(&api, avatar::GROUP, group.id, file, name).await?;
            change.set_avatar(Some(name));
        }
        AvatarChange::Remove => {
            avatar::remove(&api, avatar::GROUP, group.id).await?;
            change.set_avatar(None);
        }
    }
    let updated = groups::save(api.db(), group, change, caller.user.id).await?;
    Ok(Json(group_view(&api, &updated, &input.shape).await?))
}

async fn remove(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let actor = api.user()?.user.id;
    let ctx = access::group(&api, &id).await?;
    ctx.require(AccessLevel::Owner)?;
    let data_dir = &api.ctx.config.storage.data_dir;
    groups::delete(api.db(), data_dir, &ctx.group, actor).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({ "message": "202 Accepted" })),
    )
        .into_response())
}

/// `GET /namespaces`.
struct NamespaceListQuery {
    search: Option<String>,
    owned_only: bool,
}

impl FromParams for NamespaceListQuery {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(NamespaceListQuery {
            search: p
                .string("search")?
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty()),
            owned_only: p.bool("owned_only")?.unwrap_or(false),
        })
    }
}

/// `GET /namespaces`: the caller's own namespace and the groups they belong to (every
/// namespace for administrators).
async fn namespaces(api: Api) -> ApiResult<Response> {
    let caller = api.user()?;
    let NamespaceListQuery { search, owned_only } = api.input()?;
    // make sure the caller's personal namespace exists
    api.db().user_namespace(caller.user.id).await?;
    let admin = caller.is_admin();
    let filter = NamespaceFilter {
        search,
        viewer: Some(caller.user.id),
        admin,
        today: today(),
        owned: owned_only,
        member_of: None,
        ..NamespaceFilter::default()
    };
    let request = PageRequest::from_params(&api.params)?;
    let window = request.window(&api.params, "id", Direction::Asc)?;
    let mut sql_filter = filter;
    sql_filter.mine = !admin;
    let rows = api.db().list_namespaces(&sql_filter, &window).await?;
    let total = Some(
        api.db()
            .count_namespaces(&sql_filter, COUNT_CAP + 1)
            .await?,
    );
    let views = views(&api)
        .load_page(api.db(), &api.user_views(), &rows)
        .await?;
    Ok(Page { rows, total }.respond(&request, &api.origin, |n| n.id, |n| views.get(&n.id)))
}

async fn namespace(Path(id): Path<String>, api: Api) -> ApiResult<Json<NamespaceView>> {
    let caller = api.user()?;
    let ns = api
        .db()
        .namespace_by_key(id.trim())
        .await?
        .ok_or(ApiError::NotFound("Namespace"))?;
    let visible = if ns.is_group() {
        access::group(&api, &ns.id.to_string()).await.is_ok()
    } else {
        caller.is_admin() || ns.owner_id == Some(caller.user.id)
    };
    if !visible {
        return Err(ApiError::NotFound("Namespace"));
    }
    Ok(Json(
        views(&api)
            .load_one(api.db(), &api.user_views(), &ns)
            .await?,
    ))
}
