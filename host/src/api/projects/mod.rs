//! The Projects API: lists and single projects, create/edit/delete, stars, archiving and a
//! project's users. Members live in `api::members`, groups in `api::groups`.

mod fields;
mod hooks;
mod read;
mod star;
pub mod uploads;
mod write;

pub use fields::{VISIBILITIES, check_visibility_allowed, default_visibility, valid_path};
pub use read::user_projects;

use std::collections::HashMap;

use axum::Router;
use axum::routing::{get, post};
use serde_json::Value;

use super::access::{self, ProjectCtx, today};
use crate::context::ApiContext;
use crate::http::error::ApiResult;
use crate::http::request::Api;
use crate::store::members::{NAMESPACE, PROJECT};
use crate::store::projects::ProjectRow;
use crate::views::project::{Permissions, ProjectContext, ProjectViews};

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/api/v4/projects", get(read::list).post(write::create))
        .route(
            "/api/v4/projects/user/{user_id}",
            post(write::create_for_user),
        )
        .route(
            "/api/v4/projects/{id}",
            get(read::show).put(write::update).delete(write::remove),
        )
        .route("/api/v4/projects/{id}/users", get(read::users))
        .route("/api/v4/projects/{id}/star", post(star::star))
        .route("/api/v4/projects/{id}/unstar", post(star::unstar))
        .route("/api/v4/projects/{id}/starrers", get(star::starrers))
        .route("/api/v4/projects/{id}/archive", post(write::archive))
        .route("/api/v4/projects/{id}/unarchive", post(write::unarchive))
        .route(
            "/api/v4/projects/{id}/hooks",
            get(hooks::list_hooks).post(hooks::create_hook),
        )
        .route(
            "/api/v4/projects/{id}/hooks/{hook_id}",
            get(hooks::show_hook)
                .put(hooks::update_hook)
                .delete(hooks::delete_hook),
        )
        .route("/api/v4/projects/{id}/uploads", post(uploads::create))
        .route(
            "/api/v4/projects/{id}/push_rule",
            get(hooks::show_push_rule)
                .post(hooks::create_push_rule)
                .put(hooks::update_push_rule)
                .delete(hooks::delete_push_rule),
        )
}

/// How projects are shown in one response.
#[derive(Debug, Clone, Copy, Default)]
pub struct Shape {
    pub simple: bool,
    pub statistics: bool,
    pub license: bool,
    pub custom_attributes: bool,
}

impl Shape {
    pub fn from_params(api: &Api) -> ApiResult<Shape> {
        let admin = api.caller.as_ref().is_some_and(|c| c.is_admin());
        Ok(Shape {
            simple: api.caller.is_none() || api.params.bool("simple")?.unwrap_or(false),
            statistics: api.params.bool("statistics")?.unwrap_or(false),
            license: api.params.bool("license")?.unwrap_or(false),
            custom_attributes: admin && api.params.bool("with_custom_attributes")?.unwrap_or(false),
        })
    }
}

pub fn views(api: &Api) -> ProjectViews<'_> {
    let base = api.tenant.base_url.as_str();
    let host = base.split_once("://").map_or(base, |(_, rest)| rest);
    ProjectViews {
        base_url: base,
        host,
        users: api.user_views(),
    }
}

/// One project as the caller sees it.
pub async fn render_one(api: &Api, ctx: &ProjectCtx, shape: Shape) -> ApiResult<Value> {
    let views = views(api);
    if shape.simple {
        return Ok(Value::Object(views.simple(
            &ctx.project,
            &ctx.namespace,
            ctx.owner.as_ref(),
        )));
    }
    let custom_attributes = if shape.custom_attributes {
        Some(
            api.db()
                .project_custom_attributes_of(&[ctx.project.id])
                .await?
                .into_iter()
                .map(|(_, k, v)| (k, v))
                .collect(),
        )
    } else {
        None
    };
    let context = ProjectContext {
        namespace: &ctx.namespace,
        owner: ctx.owner.as_ref(),
        permissions: ctx.permissions,
        statistics: shape.statistics,
        license: shape.license,
        custom_attributes,
    };
    Ok(views.full(&ctx.project, &context, ctx.admin))
}

/// Many projects as the caller sees them, keyed by id; namespaces, owners and the caller's
/// levels are loaded once for the whole page.
pub async fn render_many(
    api: &Api,
    rows: &[ProjectRow],
    shape: Shape,
) -> ApiResult<HashMap<i64, Value>> {
    let db = api.db();
    let mut namespace_ids: Vec<i64> = rows.iter().map(|p| p.namespace_id).collect();
    namespace_ids.sort_unstable();
    namespace_ids.dedup();
    let namespaces: HashMap<i64, _> = db
        .namespaces_by_ids(&namespace_ids)
        .await?
        .into_iter()
        .map(|n| (n.id, n))
        .collect();
    let owner_ids: Vec<i64> = namespaces.values().filter_map(|n| n.owner_id).collect();
    let owners: HashMap<i64, _> = db
        .users_by_ids(&owner_ids)
        .await?
        .into_iter()
        .map(|u| (u.id, u))
        .collect();
    let ids: Vec<i64> = rows.iter().map(|p| p.id).collect();
    let today = today();
    let (project_levels, group_levels): (HashMap<i64, i64>, HashMap<i64, i64>) =
        match (&api.caller, shape.simple) {
            (Some(caller), false) => (
                db.levels_of(caller.user.id, PROJECT, Some(&ids), &today)
                    .await?
                    .into_iter()
                    .collect(),
                db.levels_of(caller.user.id, NAMESPACE, None, &today)
                    .await?
                    .into_iter()
                    .collect(),
            ),
            _ => (HashMap::new(), HashMap::new()),
        };
    let attributes = if shape.custom_attributes && !shape.simple {
        Some(db.project_custom_attributes_of(&ids).await?)
    } else {
        None
    };
    let admin = api.caller.as_ref().is_some_and(|c| c.is_admin());
    let views = views(api);
    let mut out = HashMap::new();
    for project in rows {
        let Some(namespace) = namespaces.get(&project.namespace_id) else {
            continue;
        };
        let owner = namespace.owner_id.and_then(|id| owners.get(&id));
        if shape.simple {
            out.insert(
                project.id,
                Value::Object(views.simple(project, namespace, owner)),
            );
            continue;
        }
        let group = if namespace.is_group() {
            namespace
                .ancestry()
                .iter()
                .filter_map(|id| group_levels.get(id).copied())
                .max()
        } else {
            None
        };
        let context = ProjectContext {
            namespace,
            owner,
            permissions: Permissions {
                project: project_levels.get(&project.id).copied(),
                group,
            },
            statistics: shape.statistics,
            license: false,
            custom_attributes: attributes.as_ref().map(|all| {
                all.iter()
                    .filter(|(id, _, _)| *id == project.id)
                    .map(|(_, k, v)| (k.clone(), v.clone()))
                    .collect()
            }),
        };
        out.insert(project.id, views.full(project, &context, admin));
    }
    Ok(out)
}

/// Re-reads the project after a change and shows it in the full form.
pub async fn reload(api: &Api, id: i64) -> ApiResult<Value> {
    let ctx = access::project(api, &id.to_string()).await?;
    let shape = Shape {
        simple: api.caller.is_none(),
        ..Shape::default()
    };
    render_one(api, &ctx, shape).await
}
