//! Members of projects and groups: `/projects/:id/members` and `/groups/:id/members`, each
//! with `/all` (members inherited from ancestor groups, and for projects from the project's
//! group and the groups it is shared with, at their highest level).

use crate::http::routes::Doc;
use axum::http::Method;
use std::collections::HashMap;

use crate::http::json::Json;
use crate::http::routes::Router;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::access::{self, today};
use crate::access_level::AccessLevel;
use crate::context::ApiContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::{Page, PageRequest};
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::model::members::MemberRow;
use crate::model::users::UserRow;
use crate::services::members::{self, NewMember, Source};
use crate::store::members::{MemberFilter, NAMESPACE, PROJECT};
use crate::views::namespace::{MemberView, member};

pub fn router() -> Router<ApiContext> {
    // The direct and the inherited lists take and answer the same.
    let listed = || {
        Doc::new()
            .input::<MemberListQuery>()
            .input::<PageRequest>()
            .answers_list::<MemberView>()
    };
    let mut router = Router::new();
    for kind in ["projects", "groups"] {
        router = router
            .route(
                &format!("/api/v4/{kind}/{{id}}/members"),
                get(list).post(add),
            )
            .doc(Method::GET, listed())
            .doc(
                Method::POST,
                Doc::new().input::<AddMember>().answers::<MemberView>(),
            )
            .route(&format!("/api/v4/{kind}/{{id}}/members/all"), get(list_all))
            .doc(Method::GET, listed())
            .route(
                &format!("/api/v4/{kind}/{{id}}/members/all/{{user_id}}"),
                get(show_all),
            )
            .doc(Method::GET, Doc::new().answers::<MemberView>())
            .route(
                &format!("/api/v4/{kind}/{{id}}/members/{{user_id}}"),
                get(show).put(update).delete(remove),
            )
            .doc(Method::GET, Doc::new().answers::<MemberView>())
            .doc(
                Method::PUT,
                Doc::new().input::<UpdateMember>().answers::<MemberView>(),
            );
    }
    router
}

/// The source a members request is about, with the caller's standing in it.
struct Target {
    source: Source,
    /// Sources whose members count as inherited (ancestor groups), nearest last.
    inherited_groups: Vec<i64>,
}

async fn target(api: &Api, kind: &str, id: &str) -> ApiResult<Target> {
    if kind == "projects" {
        let ctx = access::project(api, id).await?;
        let inherited_groups = if ctx.namespace.is_group() {
            ctx.namespace.ancestry()
        } else {
            Vec::new()
        };
        return Ok(Target {
            source: Source {
                kind: PROJECT,
                id: ctx.project.id,
                manage_level: AccessLevel::Maintainer,
                caller_level: ctx.level(),
                admin: ctx.admin,
            },
            inherited_groups,
        });
    }
    let ctx = access::group(api, id).await?;
    let mut ancestry = ctx.group.ancestry();
    ancestry.retain(|g| *g != ctx.group.id);
    Ok(Target {
        source: Source {
            kind: NAMESPACE,
            id: ctx.group.id,
            manage_level: AccessLevel::Owner,
            caller_level: ctx.level.unwrap_or_default(),
            admin: ctx.admin,
        },
        inherited_groups: ancestry,
    })
}

/// Which kind of source the matched route names.
fn kind_of(api: &Api) -> &'static str {
    if api.origin.path.starts_with("/api/v4/groups/") {
        "groups"
    } else {
        "projects"
    }
}

/// Direct and inherited members, one per user at the highest level.
async fn effective_members(api: &Api, target: &Target) -> ApiResult<Vec<MemberRow>> {
    let today = today();
    let source = &target.source;
    let mut all = api
        .db()
        .members_of(source.kind, &[source.id], &today)
        .await?;
    all.extend(
        api.db()
            .members_of(NAMESPACE, &target.inherited_groups, &today)
            .await?,
    );
    if source.kind == PROJECT {
        all.extend(invited_members(api, source.id, &today).await?);
    }
    let mut best: HashMap<i64, MemberRow> = HashMap::new();
    let mut order = Vec::new();
    for m in all {
        match best.get(&m.user_id) {
            Some(existing) if existing.access_level >= m.access_level => {}
            Some(_) => {
                best.insert(m.user_id, m);
            }
            None => {
                order.push(m.user_id);
                best.insert(m.user_id, m);
            }
        }
    }
    Ok(order.into_iter().filter_map(|u| best.remove(&u)).collect())
}

/// Members of the groups a project is shared with (and of those groups' ancestors), each at
/// the lower of their level and the share's `group_access`, as GitLab's invited members.
async fn invited_members(api: &Api, project_id: i64, today: &str) -> ApiResult<Vec<MemberRow>> {
    let shares = api.db().shares_of(&[project_id], today).await?;
    let group_ids: Vec<i64> = shares.iter().map(|s| s.group_id).collect();
    let groups = api.db().namespaces_by_ids(&group_ids).await?;
    let mut invited = Vec::new();
    for share in &shares {
        let Some(group) = groups.iter().find(|g| g.id == share.group_id) else {
            continue;
        };
        for mut m in api
            .db()
            .members_of(NAMESPACE, &group.ancestry(), today)
            .await?
        {
            m.access_level = m.access_level.min(share.group_access);
            invited.push(m);
        }
    }
    Ok(invited)
}

/// The filters of member lists (paging is read by `PageRequest`).
struct MemberListQuery {
    /// Part of the username or name, lower case.
    query: Option<String>,
    user_ids: Option<Vec<i64>>,
}

impl FromParams for MemberListQuery {
    fn from_params(params: &Params) -> ApiResult<Self> {
        let query = params
            .string("query")?
            .map(|s| s.trim().to_lowercase())
            .filter(|s| !s.is_empty());
        Ok(MemberListQuery {
            query,
            user_ids: params.int_list("user_ids")?,
        })
    }
}

/// `POST .../members`.
struct AddMember {
    /// `user_id`, or else `username`: an id or a username.
    user: String,
    access_level: AccessLevel,
    expires_at: Option<String>,
}

impl FromParams for AddMember {
    fn from_params(params: &Params) -> ApiResult<Self> {
        let user = match params.string("user_id")? {
            Some(key) => key,
            None => params
                .string("username")?
                .ok_or_else(|| ApiError::Missing("user_id".into()))?,
        };
        Ok(AddMember {
            user,
            access_level: access_level(params)?,
            expires_at: expires_at(params)?.flatten(),
        })
    }
}

/// `PUT .../members/:user_id`.
struct UpdateMember {
    access_level: AccessLevel,
    /// Absent: unchanged; `Some(None)`: cleared.
    expires_at: Option<Option<String>>,
}

impl FromParams for UpdateMember {
    fn from_params(params: &Params) -> ApiResult<Self> {
        Ok(UpdateMember {
            access_level: access_level(params)?,
            expires_at: expires_at(params)?,
        })
    }
}

/// The required `access_level` parameter.
fn access_level(params: &Params) -> ApiResult<AccessLevel> {
    let level = params
        .int("access_level")?
        .ok_or_else(|| ApiError::Missing("access_level".into()))?;
    AccessLevel::grantable(level)
        .ok_or_else(|| ApiError::InvalidParam("access_level does not have a valid value".into()))
}

/// `expires_at` when given (`Some(None)` when blank).
fn expires_at(params: &Params) -> ApiResult<Option<Option<String>>> {
    if !params.has("expires_at") {
        return Ok(None);
    }
    Ok(Some(
        params
            .date("expires_at")?
            .map(|d| d.format("%Y-%m-%d").to_string()),
    ))
}

/// Filters by `query`/`user_ids`, pages and renders members (the effective members, merged
/// from several sources in memory).
async fn respond(api: &Api, members: Vec<MemberRow>) -> ApiResult<Response> {
    let users = users_of(api, &members).await?;
    let MemberListQuery {
        query,
        user_ids: only,
    } = api.input()?;
    let members: Vec<MemberRow> = members
        .into_iter()
        .filter(|m| {
            let Some(user) = users.get(&m.user_id) else {
                return false;
            };
            only.as_ref().is_none_or(|ids| ids.contains(&m.user_id))
                && query.as_ref().is_none_or(|q| {
                    user.username.to_lowercase().contains(q) || user.name.to_lowercase().contains(q)
                })
        })
        .collect();
    let request = PageRequest::from_params(&api.params)?;
    let total = members.len() as i64;
    let rows: Vec<MemberRow> = members
        .into_iter()
        .skip(request.offset() as usize)
        .take(request.per_page as usize + 1)
        .collect();
    render_page(api, &request, rows, total, users)
}

fn render_page(
    api: &Api,
    request: &PageRequest,
    rows: Vec<MemberRow>,
    total: i64,
    users: HashMap<i64, UserRow>,
) -> ApiResult<Response> {
    let views = api.user_views();
    Ok(Page {
        rows,
        total: Some(total),
    }
    .respond(
        request,
        &api.origin,
        |m| m.user_id,
        |m| users.get(&m.user_id).map(|user| member(&views, user, m)),
    ))
}

/// `GET .../members`: the direct members, filtered and paged in SQL.
async fn list(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let source = target(&api, kind_of(&api), &id).await?.source;
    let MemberListQuery { query, user_ids } = api.input()?;
    let today = today();
    let filter = MemberFilter {
        source_type: source.kind,
        source_id: source.id,
        today: &today,
        query: query.as_deref(),
        user_ids: user_ids.as_deref(),
    };
    let request = PageRequest::from_params(&api.params)?;
    let rows = api
        .db()
        .members_page(&filter, request.per_page + 1, request.offset())
        .await?;
    let total = api.db().count_members(&filter).await?;
    let users = users_of(&api, &rows).await?;
    render_page(&api, &request, rows, total, users)
}

/// The users of `members`, by id.
async fn users_of(api: &Api, members: &[MemberRow]) -> ApiResult<HashMap<i64, UserRow>> {
    let ids: Vec<i64> = members.iter().map(|m| m.user_id).collect();
    Ok(api
        .db()
        .users_by_ids(&ids)
        .await?
        .into_iter()
        .map(|u| (u.id, u))
        .collect())
}

async fn list_all(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let target = target(&api, kind_of(&api), &id).await?;
    let members = effective_members(&api, &target).await?;
    respond(&api, members).await
}

async fn render(api: &Api, m: &MemberRow) -> ApiResult<MemberView> {
    let user = api
        .db()
        .user_by_id(m.user_id)
        .await?
        .ok_or(ApiError::NotFound("Member"))?;
    Ok(member(&api.user_views(), &user, m))
}

fn user_id_of(raw: &str) -> ApiResult<i64> {
    raw.trim()
        .parse()
        .map_err(|_| ApiError::InvalidParam("user_id is invalid".into()))
}

async fn show(
    Path((id, user_id)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<MemberView>> {
    let source = target(&api, kind_of(&api), &id).await?.source;
    let m = api
        .db()
        .member(source.kind, source.id, user_id_of(&user_id)?)
        .await?
        .ok_or(ApiError::NotFound("Member"))?;
    Ok(Json(render(&api, &m).await?))
}

async fn show_all(
    Path((id, user_id)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<MemberView>> {
    let target = target(&api, kind_of(&api), &id).await?;
    let user_id = user_id_of(&user_id)?;
    let m = effective_members(&api, &target)
        .await?
        .into_iter()
        .find(|m| m.user_id == user_id)
        .ok_or(ApiError::NotFound("Member"))?;
    Ok(Json(render(&api, &m).await?))
}

async fn add(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let caller = api.user()?;
    let source = target(&api, kind_of(&api), &id).await?.source;
    source.require_manage()?;
    let input: AddMember = api.input()?;
    let member = NewMember {
        user: &input.user,
        level: input.access_level,
        expires_at: input.expires_at.as_deref(),
    };
    let m = members::add(api.db(), &source, member, caller.user.id).await?;
    Ok((StatusCode::CREATED, Json(render(&api, &m).await?)).into_response())
}

async fn update(
    Path((id, user_id)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<MemberView>> {
    let caller = api.user()?;
    let source = target(&api, kind_of(&api), &id).await?.source;
    source.require_manage()?;
    let user_id = user_id_of(&user_id)?;
    let input: UpdateMember = api.input()?;
    let expires_at = input.expires_at.as_ref().map(|e| e.as_deref());
    let m = members::update(
        api.db(),
        &source,
        user_id,
        input.access_level,
        expires_at,
        caller.user.id,
    )
    .await?;
    Ok(Json(render(&api, &m).await?))
}

async fn remove(Path((id, user_id)): Path<(String, String)>, api: Api) -> ApiResult<StatusCode> {
    let caller = api.user()?;
    let source = target(&api, kind_of(&api), &id).await?.source;
    let user_id = user_id_of(&user_id)?;
    members::remove(api.db(), &source, user_id, caller.user.id).await?;
    Ok(StatusCode::NO_CONTENT)
}
