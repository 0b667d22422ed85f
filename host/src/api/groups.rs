//! Groups (`/groups`, `/groups/:id`, `/groups/:id/subgroups`, `/groups/:id/descendant_groups`,
//! `/groups/:id/projects`) and the
//! namespace API (`/namespaces`, `/namespaces/:id`). Groups nest through `parent_id`; a group's visibility
//! may not exceed its parent's nor fall below what it contains.

use crate::http::routes::Doc;
use crate::http::routes::Router;
use axum::Json;
use axum::extract::Path;
use axum::http::Method;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Map, Value, json};

use super::access::{self, today};
use super::projects::{self, Shape, check_visibility_allowed, default_visibility, valid_path};
use super::users::avatar::{self, AvatarChange};
use crate::access_level::AccessLevel;
use crate::context::ApiContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::{COUNT_CAP, Page, PageRequest, sort_direction};
use crate::http::params::{FromParams, Params, flag_input};
use crate::http::request::Api;
use crate::model::namespaces::NamespaceRow;
use crate::services::TakenOn;
use crate::services::project_deletion;
use crate::settings::keys;
use crate::store::namespaces::{NamespaceChanges, NamespaceFilter, NewGroup, visibility_level};
use crate::store::projects::{GroupScope, ProjectFilter, Viewer};
use crate::store::window::{Direction, Window};
use crate::views::namespace::{GROUP_SETTINGS, NamespaceViews};
use crate::views::namespace_view::{GroupDetail, GroupView, NamespaceView};
use crate::views::project_view::ProjectView;

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
const GROUP_UNIQUES: &[(&str, &str, &str)] = &[("namespaces", "path_lower", "path")];
const GROUP_NAME_MESSAGE: &str = "can contain only letters, digits, emojis, '_', '.', dash, space, parenthesis. It must start with letter, digit, emoji or '_'.";
const GROUP_PATH_MESSAGE: &str = "can contain only letters, digits, '_', '-' and '.'. Cannot start with '-' or end in '.', '.git' or '.atom'.";

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

fn valid_group_name(name: &str) -> bool {
    let mut chars = name.chars();
    let ok_first =
        |c: char| c.is_alphanumeric() || c == '_' || ('\u{00A9}'..='\u{1f9ff}').contains(&c);
    match chars.next() {
        Some(c) if ok_first(c) => {}
        _ => return false,
    }
    chars.all(|c| ok_first(c) || matches!(c, '.' | '-' | ' ' | '(' | ')'))
}

/// `GET /groups` and `GET /groups/:id/subgroups`.
struct GroupListQuery {
    search: Option<String>,
    owned: bool,
    min_access_level: Option<i64>,
    visibility: Option<String>,
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
        let visibility = p.one_of("visibility", projects::VISIBILITIES)?;
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
        visibility: query.visibility.clone(),
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

/// Up to 100 projects of `scope` that the caller may see and external authorization allows,
/// by id, in the shape `GET /groups/:id` embeds them.
async fn embedded_projects(api: &Api, scope: GroupScope) -> ApiResult<Vec<ProjectView>> {
    let filter = ProjectFilter {
        viewer: access::viewer(api),
        today: today(),
        group: Some(scope),
        excluded: access::refused_projects(api).await?,
        ..ProjectFilter::default()
    };
    let window = Window::first_by_id(100);
    let rows = api.db().list_projects(&filter, &window).await?;
    let shape = Shape {
        simple: api.caller.is_none(),
        ..Shape::default()
    };
    let mut rendered = projects::render_many(api, &rows, shape).await?;
    Ok(rows.iter().filter_map(|p| rendered.remove(&p.id)).collect())
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
    let mut view = GroupDetail {
        group: views(api).group(group),
        projects: None,
        shared_projects: None,
        shared_with_groups: Vec::new(),
    };
    if shape.0 {
        let scope = |own: bool| GroupScope {
            group_id: group.id,
            own,
            subgroups_of: None,
            shared: !own,
        };
        view.projects = Some(embedded_projects(api, scope(true)).await?);
        view.shared_projects = Some(embedded_projects(api, scope(false)).await?);
    }
    Ok(view)
}

async fn show(Path(id): Path<String>, api: Api) -> ApiResult<Json<GroupDetail>> {
    let shape: GroupShape = api.input()?;
    let ctx = access::group(&api, &id).await?;
    Ok(Json(group_view(&api, &ctx.group, &shape).await?))
}

/// The group settings a create or update gives, typed as their defaults are.
struct GroupSettings(Map<String, Value>);

impl FromParams for GroupSettings {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let mut settings = Map::new();
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
                settings.insert(key.to_string(), value);
            }
        }
        // GitLab's parameter, and the setting's own name, which some clients send.
        let branch = match p.string("default_branch")? {
            Some(branch) => Some(branch),
            None => p.string("default_branch_name")?,
        };
        if let Some(branch) = branch {
            // Blank clears it, as GitLab normalises a blank name to none.
            let value = match branch.trim() {
                "" => Value::Null,
                _ => Value::from(branch),
            };
            settings.insert("default_branch".into(), value);
        }
        Ok(GroupSettings(settings))
    }
}

/// `POST /groups`.
struct CreateGroup {
    name: String,
    path: String,
    visibility: Option<String>,
    parent_id: Option<i64>,
    settings: GroupSettings,
    description: String,
    shape: GroupShape,
}

impl FromParams for CreateGroup {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let name = p.required_string("name")?.trim().to_string();
        let path = p.required_string("path")?.trim().to_string();
        check_name_path(&name, &path)?;
        Ok(CreateGroup {
            name,
            path,
            visibility: p.one_of("visibility", projects::VISIBILITIES)?,
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
    visibility: Option<String>,
    settings: GroupSettings,
    shape: GroupShape,
}

impl FromParams for UpdateGroup {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(UpdateGroup {
            name: p.string("name")?.map(|s| s.trim().to_string()),
            path: p.string("path")?.map(|s| s.trim().to_string()),
            description: p.string_at_most("description", DESCRIPTION_MAX)?,
            visibility: p.one_of("visibility", projects::VISIBILITIES)?,
            settings: GroupSettings::from_params(p)?,
            shape: GroupShape::from_params(p)?,
        })
    }
}

fn check_name_path(name: &str, path: &str) -> ApiResult<()> {
    if name.trim().is_empty() {
        return Err(ApiError::field("name", "can't be blank"));
    }
    if !valid_group_name(name) {
        return Err(ApiError::field("name", GROUP_NAME_MESSAGE));
    }
    if !valid_path(path) {
        return Err(ApiError::field("path", GROUP_PATH_MESSAGE));
    }
    Ok(())
}

fn check_parent_visibility(parent: Option<&NamespaceRow>, visibility: &str) -> ApiResult<()> {
    if let Some(parent) = parent
        && visibility_level(visibility) > visibility_level(&parent.visibility)
    {
        return Err(ApiError::field(
            "visibility_level",
            format!(
                "{visibility} is not allowed since the parent group has a {} visibility.",
                parent.visibility
            ),
        ));
    }
    Ok(())
}

async fn create(api: Api) -> ApiResult<Response> {
    let caller = api.user()?;
    let avatar: AvatarChange = api.input()?;
    let CreateGroup {
        name,
        path,
        visibility,
        parent_id,
        settings: GroupSettings(settings),
        description,
        shape,
    } = api.input()?;
    let visibility = match visibility {
        Some(v) => v,
        None => default_visibility(&api, keys::DEFAULT_GROUP_VISIBILITY),
    };
    check_visibility_allowed(&api, &visibility)?;
    let parent = match parent_id {
        Some(parent_id) => {
            let ctx = access::group(&api, &parent_id.to_string()).await?;
            let needed = if setting_str(&ctx.group, "subgroup_creation_level") == "maintainer" {
                AccessLevel::Maintainer
            } else {
                AccessLevel::Owner
            };
            ctx.require(needed)?;
            Some(ctx.group)
        }
        None => {
            if !caller.is_admin() && !caller.user.can_create_group {
                return Err(ApiError::forbidden());
            }
            None
        }
    };
    check_parent_visibility(parent.as_ref(), &visibility)?;
    let group = api
        .db()
        .create_group(NewGroup {
            name: &name,
            path: &path,
            description: &description,
            visibility: &visibility,
            parent: parent.as_ref(),
            settings: &Value::Object(settings).to_string(),
            creator_id: caller.user.id,
        })
        .await
        .taken_on(GROUP_UNIQUES)?;
    let group = match avatar {
        AvatarChange::Set(..) => {
            let mut changes = NamespaceChanges::default();
            set_avatar(&api, &group, avatar, &mut changes).await?;
            api.db()
                .update_group(&group, &changes, &name, &path, caller.user.id)
                .await?
        }
        _ => group,
    };
    Ok((
        StatusCode::CREATED,
        Json(group_view(&api, &group, &shape).await?),
    )
        .into_response())
}

/// Stores or removes the group's avatar file as `avatar` asks, and records it in `changes`.
async fn set_avatar(
    api: &Api,
    group: &NamespaceRow,
    avatar: AvatarChange,
    changes: &mut NamespaceChanges,
) -> ApiResult<()> {
    match avatar {
        AvatarChange::Keep => {}
        AvatarChange::Set(file, name) => {
            avatar::store(api, avatar::GROUP, group.id, &file, &name).await?;
            changes.set("avatar_path", name);
        }
        AvatarChange::Remove => {
            avatar::remove(api, avatar::GROUP, group.id).await?;
            changes.set("avatar_path", None::<String>);
        }
    }
    Ok(())
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
    api.user()?;
    let input: UpdateGroup = api.input()?;
    let avatar: AvatarChange = api.input()?;
    let ctx = access::group(&api, &id).await?;
    ctx.require(AccessLevel::Owner)?;
    let group = &ctx.group;
    let name = input.name.unwrap_or_else(|| group.name.clone());
    let path = input.path.unwrap_or_else(|| group.path.clone());
    check_name_path(&name, &path)?;
    let mut changes = NamespaceChanges::default();
    changes.set("name", name.as_str());
    changes.set("path", path.as_str());
    changes.set("path_lower", path.to_lowercase());
    if let Some(description) = input.description {
        changes.set("description", description);
    }
    if let Some(visibility) = input.visibility {
        if visibility != group.visibility {
            check_visibility_allowed(&api, &visibility)?;
            let parent = match group.parent_id {
                Some(id) => api.db().namespace_by_id(id).await?,
                None => None,
            };
            check_parent_visibility(parent.as_ref(), &visibility)?;
            check_contents_visibility(&api, group, &visibility).await?;
        }
        changes.set("visibility_level", visibility_level(&visibility));
        changes.set("visibility", visibility);
    }
    let mut settings = group.settings_json();
    settings.extend(input.settings.0);
    changes.set("settings", Value::Object(settings).to_string());
    set_avatar(&api, group, avatar, &mut changes).await?;
    let updated = api
        .db()
        .update_group(group, &changes, &name, &path, api.user()?.user.id)
        .await
        .taken_on(GROUP_UNIQUES)?;
    Ok(Json(group_view(&api, &updated, &input.shape).await?))
}

/// A group may not become more private than a subgroup or project in it.
async fn check_contents_visibility(
    api: &Api,
    group: &NamespaceRow,
    visibility: &str,
) -> ApiResult<()> {
    let level = visibility_level(visibility);
    let filter = NamespaceFilter {
        kind: Some("group"),
        parent: Some(Some(group.id)),
        admin: true,
        today: today(),
        ..NamespaceFilter::default()
    };
    let window = Window::first_by_id(10_000);
    let children = api.db().list_namespaces(&filter, &window).await?;
    if children
        .iter()
        .any(|c| visibility_level(&c.visibility) > level)
    {
        return Err(ApiError::field(
            "visibility_level",
            format!(
                "{visibility} is not allowed since there are sub-groups with higher visibility."
            ),
        ));
    }
    let projects = ProjectFilter {
        viewer: Viewer::Admin { id: 0 },
        today: today(),
        namespace_id: Some(group.id),
        ..ProjectFilter::default()
    };
    let rows = api.db().list_projects(&projects, &window).await?;
    if rows.iter().any(|p| visibility_level(&p.visibility) > level) {
        return Err(ApiError::field(
            "visibility_level",
            format!(
                "{visibility} is not allowed since this group contains projects with higher visibility."
            ),
        ));
    }
    Ok(())
}

async fn remove(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let actor = api.user()?.user.id;
    let ctx = access::group(&api, &id).await?;
    ctx.require(AccessLevel::Owner)?;
    // The subgroups go with the group: their avatars too.
    let subgroups = NamespaceFilter {
        kind: Some("group"),
        descendants_of: Some(ctx.group.traversal.clone()),
        admin: true,
        ..NamespaceFilter::default()
    };
    let mut groups = api
        .db()
        .list_namespaces(&subgroups, &Window::first_by_id(100_000))
        .await?;
    groups.push(ctx.group.clone());
    let projects = api.db().delete_group(&ctx.group, actor).await?;
    project_deletion::remove_files_of(&api.ctx.config.storage.data_dir, api.tenant.id, &projects)
        .await;
    for group in groups {
        if let Err(error) = avatar::remove(&api, avatar::GROUP, group.id).await {
            tracing::warn!(
                group = group.id,
                ?error,
                "could not remove a group's avatar"
            );
        }
    }
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
    let views = views(&api);
    let owners = api
        .db()
        .users_by_ids(&rows.iter().filter_map(|n| n.owner_id).collect::<Vec<_>>())
        .await?;
    let users = api.user_views();
    Ok(Page { rows, total }.respond(
        &request,
        &api.origin,
        |n| n.id,
        |n| {
            let owner = owners.iter().find(|u| Some(u.id) == n.owner_id);
            views.namespace(n, views.avatar_url(n, owner, &users))
        },
    ))
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
    let owner = match ns.owner_id {
        Some(id) => api.db().user_by_id(id).await?,
        None => None,
    };
    let views = views(&api);
    let users = api.user_views();
    Ok(Json(views.namespace(
        &ns,
        views.avatar_url(&ns, owner.as_ref(), &users),
    )))
}
