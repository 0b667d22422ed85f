//! What a user does to one merge request for themselves (subscribe or unsubscribe, with 304
//! when already so; mark a to-do, 304 when one is pending; award emoji) and its time
//! tracking (Developers), as on issues.

use crate::http::json::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::notes::note_of;
use super::write::editor;
use super::{SingleExtras, load, render};
use crate::api::award_emoji::{Awardable, Awardables};
use crate::api::time_tracking::{TimeTrackables, Times};
use crate::http::error::{ApiError, ApiResult};
use crate::http::request::Api;
use crate::model::merge_requests::MergeRequestRow;
use crate::model::noteables::Noteable;
use crate::policy::merge_requests::{MergeRequestCtx, is_developer};
use crate::services::merge_requests;
use crate::services::noteable_actions::{self, Target};
use crate::views::issue::TodoTarget;

type MergeRequestPath = Path<(String, String)>;

fn target(mr: &MergeRequestRow) -> Target<'_> {
    Target {
        on: Noteable::MergeRequest(mr.id),
        project_id: mr.project_id,
        title: &mr.title,
    }
}

async fn set_subscription(api: &Api, id: &str, iid: &str, subscribe: bool) -> ApiResult<Response> {
    let caller = api.user()?;
    let ctx = load(api, id, iid).await?;
    if !noteable_actions::set_subscription(api.db(), caller.user.id, target(&ctx.mr), subscribe)
        .await?
    {
        return Err(ApiError::NotModified);
    }
    let view = render(api, &ctx, &ctx.mr, false, SingleExtras::default()).await?;
    Ok((StatusCode::CREATED, Json(view)).into_response())
}

pub async fn subscribe(Path((id, iid)): MergeRequestPath, api: Api) -> ApiResult<Response> {
    set_subscription(&api, &id, &iid, true).await
}

pub async fn unsubscribe(Path((id, iid)): MergeRequestPath, api: Api) -> ApiResult<Response> {
    set_subscription(&api, &id, &iid, false).await
}

pub async fn todo(Path((id, iid)): MergeRequestPath, api: Api) -> ApiResult<Response> {
    let caller = api.user()?;
    let ctx = load(&api, &id, &iid).await?;
    let Some(todo) = noteable_actions::mark_todo(api.db(), caller.user.id, target(&ctx.mr)).await?
    else {
        return Err(ApiError::NotModified);
    };
    let project = crate::api::issues::project_ref(&ctx.project);
    let view = render(&api, &ctx, &ctx.mr, false, SingleExtras::default()).await?;
    let target = TodoTarget::MergeRequest(Box::new(view));
    let body = crate::api::issues::views(&api).todo(&todo, &project, Some(&caller.user), target);
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// Merge requests and their notes take award emoji; merge requests track time.
pub struct MergeRequests;

impl Awardables for MergeRequests {
    async fn resolve(api: &Api, id: &str, iid: &str, note: Option<&str>) -> ApiResult<Awardable> {
        let ctx = load(api, id, iid).await?;
        let note_id = match note {
            Some(note) => note_of(api, &ctx, note).await?.id,
            None => 0,
        };
        Ok(Awardable {
            on: Noteable::MergeRequest(ctx.mr.id),
            project_id: ctx.mr.project_id,
            title: ctx.mr.title,
            note_id,
        })
    }
}

impl TimeTrackables for MergeRequests {
    type Item = MergeRequestCtx;

    async fn load(api: &Api, id: &str, iid: &str) -> ApiResult<MergeRequestCtx> {
        load(api, id, iid).await
    }

    fn times(ctx: &MergeRequestCtx) -> Times {
        Times {
            estimate: ctx.mr.time_estimate,
            spent: ctx.mr.total_time_spent,
        }
    }

    /// Developers and up (GitLab's `admin_merge_request`).
    fn may_track(_api: &Api, ctx: &MergeRequestCtx) -> bool {
        is_developer(&ctx.project)
    }

    async fn set_estimate(
        api: &Api,
        ctx: &MergeRequestCtx,
        seconds: i64,
        limit_to_hours: bool,
    ) -> ApiResult<Times> {
        let caller = api.user()?;
        let editor = editor(&caller.user, ctx);
        let row =
            merge_requests::set_time_estimate(api.db(), &editor, &ctx.mr, seconds, limit_to_hours)
                .await?;
        Ok(Times {
            estimate: row.time_estimate,
            spent: row.total_time_spent,
        })
    }

    async fn log_spent(
        api: &Api,
        ctx: &MergeRequestCtx,
        seconds: Option<i64>,
        limit_to_hours: bool,
    ) -> ApiResult<i64> {
        let caller = api.user()?;
        let editor = editor(&caller.user, ctx);
        Ok(
            merge_requests::log_spent_time(api.db(), &editor, &ctx.mr, seconds, limit_to_hours)
                .await?,
        )
    }
}
