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

use super::access::{self, ProjectCtx};
use crate::context::ApiContext;
use crate::http::error::ApiResult;
use crate::http::params::{Audience, FromParamsIn, Params};
use crate::http::request::Api;
use crate::model::projects::ProjectRow;
use crate::views::hook::{HookLogView, HookView, PushRuleView, UploadView};
use crate::views::hook_test::{HookResendView, HookTestView};
use crate::views::project::{ProjectReader, ProjectShape, ProjectView};
use crate::views::project_answers::{
    LanguagesView, ProjectGroupLinkView, StarrerView, StartedView,
};
use crate::views::user::UserSummary;

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
            answers_project().input_in::<ProjectShape, _>(Audience::ADMIN),
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

/// Anonymous callers always get the simple view; only administrators may ask for custom
/// attributes.
impl FromParamsIn<Audience> for ProjectShape {
    fn from_params_in(p: &Params, audience: Audience) -> ApiResult<ProjectShape> {
        Ok(ProjectShape {
            simple: !audience.signed_in || p.bool("simple")?.unwrap_or(false),
            statistics: p.bool("statistics")?.unwrap_or(false),
            license: p.bool("license")?.unwrap_or(false),
            custom_attributes: audience.admin && p.bool("with_custom_attributes")?.unwrap_or(false),
        })
    }
}

/// One project as the caller sees it.
pub async fn render_one(
    api: &Api,
    ctx: &ProjectCtx,
    shape: ProjectShape,
) -> ApiResult<ProjectView> {
    let scope = api.scope();
    let reader = ProjectReader::of(&scope);
    Ok(api.project_views().load_one(reader, ctx, shape).await?)
}

/// Many projects as the caller sees them, keyed by id (`ProjectViews::load_page`).
pub async fn render_many(
    api: &Api,
    rows: &[ProjectRow],
    shape: ProjectShape,
) -> ApiResult<HashMap<i64, ProjectView>> {
    let scope = api.scope();
    let reader = ProjectReader::of(&scope);
    Ok(api.project_views().load_page(reader, rows, shape).await?)
}

/// Re-reads the project after a change and shows it in the full form.
pub async fn reload(api: &Api, id: i64) -> ApiResult<ProjectView> {
    let ctx = access::project(api, &id.to_string()).await?;
    let shape = ProjectShape {
        simple: api.caller.is_none(),
        ..ProjectShape::default()
    };
    render_one(api, &ctx, shape).await
}
