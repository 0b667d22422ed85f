//! `GET /users`, `GET /users/:id`, `GET /user_counts`, and a user's project lists.

use crate::http::json::Json;
use axum::extract::Path;
use axum::response::Response;
use serde_json::{Value, json};

use super::{UserShape, admin_view, user_by_id};
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::{COUNT_CAP, Page, PageRequest, sort_direction};
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::model::users::UserRow;
use crate::model::visibility::Visibility;
use crate::settings::keys;
use crate::store::user_admin::UserFilter;
use crate::store::window::Direction;
use crate::views::user_status::UserCounts;

const ADMIN_ORDERS: &[&str] = &["id", "name", "username", "created_at", "updated_at"];

/// Anonymous callers may read users unless the instance restricts public visibility.
fn check_list_access(api: &Api) -> ApiResult<()> {
    if api.caller.is_none() && restricts_public(api) {
        return Err(ApiError::Unauthorized);
    }
    Ok(())
}

fn restricts_public(api: &Api) -> bool {
    api.settings
        .get(keys::RESTRICTED_VISIBILITY_LEVELS)
        .contains(&Visibility::Public)
}

/// `GET /users`: the filters everyone may use, and the order (which only administrators'
/// requests follow, though everyone's is checked).
pub(super) struct UserListQuery {
    username: Option<String>,
    search: Option<String>,
    active: bool,
    blocked: bool,
    exclude_external: bool,
    order_by: Option<String>,
    sort: Direction,
}

impl FromParams for UserListQuery {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(UserListQuery {
            username: p.string("username")?.filter(|s| !s.is_empty()),
            search: p
                .string("search")?
                .filter(|s| !s.trim().is_empty())
                .map(|s| s.trim().to_string()),
            active: p.bool("active")?.unwrap_or(false),
            blocked: p.bool("blocked")?.unwrap_or(false),
            exclude_external: p.bool("exclude_external")?.unwrap_or(false),
            order_by: p.one_of("order_by", ADMIN_ORDERS)?,
            sort: sort_direction(p, Direction::Desc)?,
        })
    }
}

/// The filters of `GET /users` only administrators may use: read for them alone, since GitLab
/// ignores them (and their bad values) for everyone else.
pub(super) struct AdminUserFilters {
    external: bool,
    two_factor: Option<bool>,
    created_after: Option<i64>,
    created_before: Option<i64>,
    /// `(provider, extern_uid)`: both or neither.
    identity: Option<(String, String)>,
    custom_attributes: Vec<(String, String)>,
    without_projects: bool,
}

impl FromParams for AdminUserFilters {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let external = p.bool("external")?.unwrap_or(false);
        let two_factor = p
            .one_of("two_factor", &["enabled", "disabled"])?
            .map(|v| v == "enabled");
        let created_after = p.datetime("created_after")?.map(|d| d.timestamp_millis());
        let created_before = p.datetime("created_before")?.map(|d| d.timestamp_millis());
        let identity = match (p.string("extern_uid")?, p.string("provider")?) {
            (Some(uid), Some(provider)) => Some((provider, uid)),
            (None, None) => None,
            _ => {
                return Err(ApiError::InvalidParam(
                    "extern_uid, provider provide all or none of parameters".into(),
                ));
            }
        };
        Ok(AdminUserFilters {
            external,
            two_factor,
            created_after,
            created_before,
            identity,
            custom_attributes: p.custom_attributes()?,
            without_projects: p.bool("without_projects")?.unwrap_or(false),
        })
    }
}

fn filter(query: UserListQuery, admin: Option<AdminUserFilters>) -> UserFilter {
    let filter = UserFilter {
        username: query.username,
        search: query.search,
        search_emails: admin.is_some(),
        active: query.active,
        blocked: query.blocked,
        exclude_external: query.exclude_external,
        ..UserFilter::default()
    };
    let Some(admin) = admin else {
        return filter;
    };
    UserFilter {
        external: admin.external,
        two_factor: admin.two_factor,
        created_after: admin.created_after,
        created_before: admin.created_before,
        identity: admin.identity,
        custom_attributes: admin.custom_attributes,
        without_projects: admin.without_projects,
        ..filter
    }
}

pub async fn list(api: Api) -> ApiResult<Response> {
    check_list_access(&api)?;
    let admin = api.caller.as_ref().is_some_and(|c| c.is_admin());
    let query: UserListQuery = api.input()?;
    let admin_filters = match admin {
        true => Some(api.input::<AdminUserFilters>()?),
        false => None,
    };
    let order_by = match query.order_by.as_deref() {
        Some("name") if admin => "name",
        Some("username") if admin => "username_lower",
        Some("created_at") if admin => "created_at",
        Some("updated_at") if admin => "updated_at",
        _ => "id",
    };
    // `order_by` and `sort` are administrator options; others get GitLab's id descending.
    let direction = if admin { query.sort } else { Direction::Desc };
    let filter = filter(query, admin_filters);
    let request = PageRequest::from_params(&api.params)?;
    let window = request.window(&api.params, order_by, direction)?;
    let rows = api.db().list_users(&filter, &window).await?;
    let total = if request.keyset {
        None
    } else {
        Some(api.db().count_users(&filter, COUNT_CAP + 1).await?)
    };
    let page = Page { rows, total };
    if !admin {
        let views = api.user_views();
        return Ok(page.respond(
            &request,
            &api.origin,
            |u: &UserRow| u.id,
            |u| views.summary(u),
        ));
    }
    let UserShape(with_custom_attributes) = api.input()?;
    let ids: Vec<i64> = page.rows.iter().map(|u| u.id).collect();
    let identities = api.db().identities_of(&ids).await?;
    let attributes = if with_custom_attributes {
        Some(api.db().custom_attributes_of(&ids).await?)
    } else {
        None
    };
    let views = api.user_views();
    Ok(page.respond(
        &request,
        &api.origin,
        |u: &UserRow| u.id,
        |u| views.admin_detail(u, &identities, attributes.as_deref()),
    ))
}

pub async fn show(Path(id): Path<String>, api: Api) -> ApiResult<Json<Value>> {
    check_list_access(&api)?;
    let user = user_by_id(&api, &id).await?;
    let caller = api.caller.as_ref();
    if caller.is_some_and(|c| c.is_admin()) {
        return Ok(Json(json!(admin_view(&api, &user).await?)));
    }
    let views = api.user_views();
    let own = caller.is_some_and(|c| c.user.id == user.id);
    if user.private_profile && !own {
        return Ok(Json(json!(views.summary(&user))));
    }
    Ok(Json(json!(views.public(&user))))
}

/// `GET /user_counts`: all zero (see `UserCounts`).
pub async fn counts(api: Api) -> ApiResult<Json<UserCounts>> {
    api.user()?;
    Ok(Json(UserCounts::default()))
}

/// `GET /users/:id/projects`: projects in the user's personal namespace.
pub async fn projects(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    crate::api::projects::user_projects(api, &id, false).await
}

/// `GET /users/:id/starred_projects`: projects the user starred.
pub async fn starred_projects(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    crate::api::projects::user_projects(api, &id, true).await
}
