//! The Projects API: lists and single projects, create/edit/delete, stars, archiving and a
//! project's users. Members live in `api::members`, groups in `api::groups`.

pub mod delete;
mod fields;
mod fork;
pub(crate) mod hooks;
mod mirror;
mod push_rule;
mod read;
mod repository;
mod share;
mod star;
pub mod uploads;
mod write;

pub use fields::{check_visibility_allowed, default_visibility, restricted};
pub use read::{ListKind, group_projects, list_doc, user_projects};

use crate::api::hook_input::HookInput;
use crate::api::users::avatar::AvatarChange;
use crate::http::pagination::PageRequest;
use crate::http::routes::Doc;
use crate::model::webhooks::HookKind;
use axum::http::Method;
use std::collections::HashMap;

use crate::http::routes::Router;
use axum::routing::{get, post, put};

use super::access::{self, ProjectCtx, today};
use crate::access_level::{AccessLevel, Permissions};
use crate::context::ApiContext;
use crate::http::error::ApiError;
use crate::http::error::ApiResult;
use crate::http::params::{Audience, FromParamsIn, Params};
use crate::http::request::Api;
use crate::model::projects::ProjectRow;
use crate::store::members::{NAMESPACE, PROJECT};
use crate::views::hook::{HookLogView, HookView, PushRuleView, UploadView};
use crate::views::hook_test::{HookResendView, HookTestView};
use crate::views::project::ProjectContext;
use crate::views::project_answers::{
    LanguagesView, ProjectGroupLinkView, StarrerView, StartedView,
};
use crate::views::project_view::{ProjectSimple, ProjectView};
use crate::views::user::UserSummary;
use repository::may_see_statistics;

pub fn router() -> Router<ApiContext> {
    // The routes that change a project, or act on one, answer it as the caller sees it.
    let answers_project = || Doc::new().answers::<ProjectView>();
    let hook_input = || Doc::new().input_in::<HookInput, _>(HookKind::Project);
    let push_rule_input = || {
        Doc::new().reads(|p| {
            push_rule::apply_push_rule_params(p, &mut push_rule::PushRuleRow::defaults(0))
        })
    };
    let create = || {
        answers_project()
            .input_in::<fields::Fields, _>((fields::Mode::Create, Audience::ADMIN))
            .input::<AvatarChange>()
    };
    Router::new()
        .route("/api/v4/projects", get(read::list).post(write::create))
        .doc(Method::GET, list_doc(ListKind::All))
        .doc(Method::POST, create())
        .route(
            "/api/v4/projects/user/{user_id}",
            post(write::create_for_user),
        )
        .doc(Method::POST, create())
        .route(
            "/api/v4/projects/{id}",
            get(read::show).put(write::update).delete(delete::remove),
        )
        .doc(
            Method::GET,
            answers_project().input_in::<Shape, _>(Audience::ADMIN),
        )
        .doc(
            Method::PUT,
            answers_project()
                .input_in::<fields::Fields, _>((fields::Mode::Edit, Audience::ADMIN))
                .input::<AvatarChange>(),
        )
        .doc(Method::DELETE, Doc::new().input::<delete::DeleteProject>())
        .route("/api/v4/projects/{id}/restore", post(delete::restore))
        .doc(Method::POST, answers_project())
        .route(
            "/api/v4/projects/{id}/languages",
            get(repository::languages),
        )
        .doc(Method::GET, Doc::new().answers::<LanguagesView>())
        .route("/api/v4/projects/{id}/snapshot", get(repository::snapshot))
        .doc(
            Method::GET,
            Doc::new()
                .input::<repository::SnapshotQuery>()
                .answers_bytes(&[repository::SNAPSHOT_MEDIA_TYPE]),
        )
        .route(
            "/api/v4/projects/{id}/housekeeping",
            post(repository::housekeeping),
        )
        .doc(Method::POST, Doc::new().answers::<StartedView>())
        .route(
            "/api/v4/projects/{id}/fork",
            post(fork::create).delete(fork::unlink),
        )
        .doc(
            Method::POST,
            answers_project().input::<crate::services::project_forks::ForkRequest>(),
        )
        .route(
            "/api/v4/projects/{id}/fork/{forked_from_id}",
            post(fork::link),
        )
        .doc(Method::POST, answers_project())
        .route("/api/v4/projects/{id}/forks", get(fork::list))
        .doc(Method::GET, list_doc(ListKind::UserProjects))
        .route("/api/v4/projects/{id}/mirror/pull", post(mirror::pull))
        .doc(
            Method::POST,
            Doc::new()
                .input::<mirror::PullMirror>()
                .answers::<StartedView>(),
        )
        .route("/api/v4/projects/{id}/share", post(share::create))
        .doc(
            Method::POST,
            Doc::new()
                .input::<share::ShareProject>()
                .answers::<ProjectGroupLinkView>(),
        )
        .route(
            "/api/v4/projects/{id}/share/{group_id}",
            axum::routing::delete(share::remove),
        )
        .route("/api/v4/projects/{id}/transfer", put(share::transfer))
        .doc(
            Method::PUT,
            answers_project().input::<share::TransferProject>(),
        )
        .route(
            "/uploads/-/system/project/avatar/{id}/{filename}",
            get(write::serve_avatar),
        )
        .route("/api/v4/projects/{id}/users", get(read::users))
        .doc(
            Method::GET,
            Doc::new()
                .input::<read::ProjectUsersQuery>()
                .input::<PageRequest>()
                .answers_list::<UserSummary>(),
        )
        .route("/api/v4/projects/{id}/star", post(star::star))
        .doc(Method::POST, answers_project())
        .route("/api/v4/projects/{id}/unstar", post(star::unstar))
        .doc(Method::POST, answers_project())
        .route("/api/v4/projects/{id}/starrers", get(star::starrers))
        .doc(
            Method::GET,
            Doc::new()
                .input::<star::StarrerQuery>()
                .input::<PageRequest>()
                .answers_list::<StarrerView>(),
        )
        .route("/api/v4/projects/{id}/archive", post(write::archive))
        .doc(Method::POST, answers_project())
        .route("/api/v4/projects/{id}/unarchive", post(write::unarchive))
        .doc(Method::POST, answers_project())
        .route(
            "/api/v4/projects/{id}/hooks",
            get(hooks::list_hooks).post(hooks::create_hook),
        )
        .doc(
            Method::GET,
            Doc::new().input::<PageRequest>().answers_list::<HookView>(),
        )
        .doc(Method::POST, hook_input().answers::<HookView>())
        .route(
            "/api/v4/projects/{id}/hooks/{hook_id}",
            get(hooks::show_hook)
                .put(hooks::update_hook)
                .delete(hooks::delete_hook),
        )
        .doc(Method::GET, Doc::new().answers::<HookView>())
        .doc(Method::PUT, hook_input().answers::<HookView>())
        .route(
            "/api/v4/projects/{id}/hooks/{hook_id}/events",
            get(hooks::list_hook_events),
        )
        .doc(
            Method::GET,
            Doc::new()
                .reads(hooks::log_statuses)
                .input::<PageRequest>()
                .answers_list::<HookLogView>(),
        )
        .route(
            "/api/v4/projects/{id}/hooks/{hook_id}/events/{hook_log_id}/resend",
            post(hooks::resend_hook_event),
        )
        .doc(Method::POST, Doc::new().answers::<HookResendView>())
        .route(
            "/api/v4/projects/{id}/hooks/{hook_id}/test/{trigger}",
            post(hooks::test_hook),
        )
        .doc(Method::POST, Doc::new().answers::<HookTestView>())
        .route("/api/v4/projects/{id}/uploads", post(uploads::create))
        .doc(
            Method::POST,
            Doc::new()
                .input::<uploads::CreateUpload>()
                .answers::<UploadView>(),
        )
        .route(
            "/api/v4/projects/{id}/push_rule",
            get(push_rule::show_push_rule)
                .post(push_rule::create_push_rule)
                .put(push_rule::update_push_rule)
                .delete(push_rule::delete_push_rule),
        )
        .doc(Method::GET, Doc::new().answers_or_null::<PushRuleView>())
        .doc(Method::POST, push_rule_input().answers::<PushRuleView>())
        .doc(Method::PUT, push_rule_input().answers::<PushRuleView>())
}

/// How projects are shown in one response.
#[derive(Debug, Clone, Copy, Default)]
pub struct Shape {
    pub simple: bool,
    pub statistics: bool,
    pub license: bool,
    pub custom_attributes: bool,
}

/// Anonymous callers always get the simple view; only administrators may ask for custom
/// attributes.
impl FromParamsIn<Audience> for Shape {
    fn from_params_in(p: &Params, audience: Audience) -> ApiResult<Shape> {
        Ok(Shape {
            simple: !audience.signed_in || p.bool("simple")?.unwrap_or(false),
            statistics: p.bool("statistics")?.unwrap_or(false),
            license: p.bool("license")?.unwrap_or(false),
            custom_attributes: audience.admin && p.bool("with_custom_attributes")?.unwrap_or(false),
        })
    }
}

/// The simple view of the project a fork comes from, when the caller can see it.
async fn forked_from(api: &Api, project: &ProjectRow) -> ApiResult<Option<ProjectSimple>> {
    let Some(source) = project.forked_from_id else {
        return Ok(None);
    };
    match access::project(api, &source.to_string()).await {
        Ok(ctx) => Ok(Some(api.project_views().simple(
            &ctx.project,
            &ctx.namespace,
            ctx.owner.as_ref(),
        ))),
        Err(ApiError::NotFound(_)) => Ok(None),
        Err(other) => Err(other),
    }
}

/// One project as the caller sees it.
pub async fn render_one(api: &Api, ctx: &ProjectCtx, shape: Shape) -> ApiResult<ProjectView> {
    let views = api.project_views();
    if shape.simple {
        return Ok(ProjectView::Simple(Box::new(views.simple(
            &ctx.project,
            &ctx.namespace,
            ctx.owner.as_ref(),
        ))));
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
    let today = today();
    let (shares, source) = tokio::try_join!(
        async {
            api.db()
                .shares_of(&[ctx.project.id], &today)
                .await
                .map_err(ApiError::from)
        },
        forked_from(api, &ctx.project),
    )?;
    let context = ProjectContext {
        namespace: &ctx.namespace,
        owner: ctx.owner.as_ref(),
        permissions: ctx.permissions,
        statistics: shape.statistics && may_see_statistics(ctx.level(), ctx.admin),
        license: shape.license,
        custom_attributes,
        forked_from: source,
        shares: &shares,
    };
    Ok(ProjectView::Full(Box::new(views.full(
        &ctx.project,
        &context,
        ctx.admin,
    ))))
}

/// Many projects as the caller sees them, keyed by id; namespaces, owners, shares and the
/// caller's levels are loaded once for the whole page.
pub async fn render_many(
    api: &Api,
    rows: &[ProjectRow],
    shape: Shape,
) -> ApiResult<HashMap<i64, ProjectView>> {
    let db = api.db();
    let mut namespace_ids: Vec<i64> = rows.iter().map(|p| p.namespace_id).collect();
    namespace_ids.sort_unstable();
    namespace_ids.dedup();
    let ids: Vec<i64> = rows.iter().map(|p| p.id).collect();
    let today = today();
    let caller = api.caller.as_ref().filter(|_| !shape.simple);
    let full = !shape.simple;
    // The page's independent lookups run concurrently (each on its own pooled connection).
    let (namespaces, project_levels, group_levels, shared_levels, attributes, shares) = tokio::try_join!(
        db.namespaces_by_ids(&namespace_ids),
        async {
            match caller {
                Some(c) => db.levels_of(c.user.id, PROJECT, Some(&ids), &today).await,
                None => Ok(Vec::new()),
            }
        },
        async {
            match caller {
                Some(c) => db.levels_of(c.user.id, NAMESPACE, None, &today).await,
                None => Ok(Vec::new()),
            }
        },
        async {
            match caller {
                Some(c) => db.shared_levels(c.user.id, &ids, &today).await,
                None => Ok(Vec::new()),
            }
        },
        async {
            if shape.custom_attributes && full {
                db.project_custom_attributes_of(&ids).await.map(Some)
            } else {
                Ok(None)
            }
        },
        async {
            if full {
                db.shares_of(&ids, &today).await
            } else {
                Ok(Vec::new())
            }
        },
    )?;
    let namespaces: HashMap<i64, _> = namespaces.into_iter().map(|n| (n.id, n)).collect();
    let stored = |rows: Vec<(i64, i64)>| -> HashMap<i64, AccessLevel> {
        rows.into_iter()
            .map(|(id, level)| (id, AccessLevel::from_stored(level)))
            .collect()
    };
    let project_levels = stored(project_levels);
    let group_levels = stored(group_levels);
    let shared_levels = stored(shared_levels);
    let owner_ids: Vec<i64> = namespaces.values().filter_map(|n| n.owner_id).collect();
    let owners: HashMap<i64, _> = db
        .users_by_ids(&owner_ids)
        .await?
        .into_iter()
        .map(|u| (u.id, u))
        .collect();
    let mut sources: HashMap<i64, Option<ProjectSimple>> = HashMap::new();
    if !shape.simple {
        for project in rows {
            if let Some(source) = project.forked_from_id
                && !sources.contains_key(&source)
            {
                sources.insert(source, forked_from(api, project).await?);
            }
        }
    }
    let admin = api.caller.as_ref().is_some_and(|c| c.is_admin());
    let views = api.project_views();
    let mut out = HashMap::new();
    for project in rows {
        let Some(namespace) = namespaces.get(&project.namespace_id) else {
            continue;
        };
        let owner = namespace.owner_id.and_then(|id| owners.get(&id));
        if shape.simple {
            out.insert(
                project.id,
                ProjectView::Simple(Box::new(views.simple(project, namespace, owner))),
            );
            continue;
        }
        let inherited = if namespace.is_group() {
            namespace
                .ancestry()
                .iter()
                .filter_map(|id| group_levels.get(id).copied())
                .max()
        } else {
            None
        };
        let permissions = Permissions {
            project: project_levels.get(&project.id).copied(),
            group: inherited,
            shared: shared_levels.get(&project.id).copied(),
            personal_owner: caller.is_some_and(|c| namespace.owner_id == Some(c.user.id)),
        };
        let context = ProjectContext {
            namespace,
            owner,
            permissions,
            statistics: shape.statistics
                && may_see_statistics(permissions.effective_level(), admin),
            license: false,
            custom_attributes: attributes.as_ref().map(|all| {
                all.iter()
                    .filter(|(id, _, _)| *id == project.id)
                    .map(|(_, k, v)| (k.clone(), v.clone()))
                    .collect()
            }),
            forked_from: project
                .forked_from_id
                .and_then(|id| sources.get(&id).cloned().flatten()),
            shares: &shares,
        };
        out.insert(
            project.id,
            ProjectView::Full(Box::new(views.full(project, &context, admin))),
        );
    }
    Ok(out)
}

/// Re-reads the project after a change and shows it in the full form.
pub async fn reload(api: &Api, id: i64) -> ApiResult<ProjectView> {
    let ctx = access::project(api, &id.to_string()).await?;
    let shape = Shape {
        simple: api.caller.is_none(),
        ..Shape::default()
    };
    render_one(api, &ctx, shape).await
}
