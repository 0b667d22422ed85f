//! Notes and discussions of a merge request: `GET/POST .../notes`, `GET/PUT/DELETE
//! .../notes/:note_id`, `GET/POST .../discussions`, `GET/PUT .../discussions/:discussion_id`,
//! `POST .../discussions/:discussion_id/notes` and `PUT/DELETE` of a discussion's note.
//! Anyone who can read the MR may comment (members only on a locked discussion); the rules
//! are `services::notes`' and `services::merge_request_notes`'.

use std::collections::HashMap;

use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::input::{CreateDiscussionInput, DiscussionNoteUpdate, ResolveQuery};
use super::{load, views};
use crate::access_level::AccessLevel;
use crate::api::issues::input::NoteListQuery;
use crate::http::error::{ApiError, ApiResult};
use crate::http::json::Json;
use crate::http::pagination::Page;
use crate::http::request::Api;
use crate::model::merge_requests::MergeRequestNoteRow;
use crate::model::users::UserRow;
use crate::policy::merge_requests::{MergeRequestCtx, is_developer};
use crate::services::merge_request_notes::{self as mr_notes, CreateMergeRequestNote};
use crate::services::notes::{Commenter, CreateNote, UpdateNote};
use crate::views::merge_request::{DiscussionView, MergeRequestNoteView};
use crate::views::unique;

fn reporter(ctx: &MergeRequestCtx) -> bool {
    ctx.project.admin || ctx.project.level() >= AccessLevel::Reporter
}

/// The caller as the note rules see them.
fn commenter(api: &Api, ctx: &MergeRequestCtx) -> ApiResult<Commenter> {
    let project = &ctx.project;
    Ok(Commenter {
        user_id: api.user()?.user.id,
        admin: project.admin,
        member: project.admin || project.level() >= AccessLevel::Guest,
        reporter: reporter(ctx),
        maintainer: project.admin || project.level() >= AccessLevel::Maintainer,
        owner: project.admin || project.level() >= AccessLevel::Owner,
    })
}

/// The MR's author and Developers resolve threads.
fn may_resolve(api: &Api, ctx: &MergeRequestCtx) -> bool {
    is_developer(&ctx.project)
        || api
            .caller
            .as_ref()
            .is_some_and(|c| c.user.id == ctx.mr.author_id)
}

/// The notes the caller may see: internal ones for Reporters and up.
fn visible(ctx: &MergeRequestCtx, notes: Vec<MergeRequestNoteRow>) -> Vec<MergeRequestNoteRow> {
    let all = reporter(ctx);
    notes.into_iter().filter(|n| all || !n.internal).collect()
}

async fn authors(api: &Api, notes: &[MergeRequestNoteRow]) -> ApiResult<HashMap<i64, UserRow>> {
    let ids = unique(
        notes
            .iter()
            .flat_map(|n| [Some(n.author_id), n.resolved_by_id])
            .flatten(),
    );
    Ok(api
        .db()
        .users_by_ids(&ids)
        .await?
        .into_iter()
        .map(|u| (u.id, u))
        .collect())
}

async fn render_note(
    api: &Api,
    ctx: &MergeRequestCtx,
    note: &MergeRequestNoteRow,
) -> ApiResult<MergeRequestNoteView> {
    let users = authors(api, std::slice::from_ref(note)).await?;
    Ok(views(api).note(note, &ctx.mr, &users))
}

fn parse_id(value: &str, name: &str) -> ApiResult<i64> {
    value.trim().parse().map_err(|_| ApiError::invalid(name))
}

pub(super) async fn note_of(
    api: &Api,
    ctx: &MergeRequestCtx,
    note_id: &str,
) -> ApiResult<MergeRequestNoteRow> {
    let id = parse_id(note_id, "note_id")?;
    api.db()
        .merge_request_note(ctx.mr.id, id)
        .await?
        .filter(|n| !n.internal || reporter(ctx))
        .ok_or(ApiError::NotFound("Note"))
}

/// The notes of one discussion, or GitLab's 404 for an unknown one.
async fn thread_of(
    api: &Api,
    ctx: &MergeRequestCtx,
    discussion_id: &str,
) -> ApiResult<Vec<MergeRequestNoteRow>> {
    let notes = api
        .db()
        .merge_request_discussion_notes(ctx.mr.id, Some(discussion_id))
        .await?;
    let notes = visible(ctx, notes);
    if notes.is_empty() {
        return Err(ApiError::NotFound("Discussion"));
    }
    Ok(notes)
}

async fn render_thread(
    api: &Api,
    ctx: &MergeRequestCtx,
    notes: &[MergeRequestNoteRow],
) -> ApiResult<DiscussionView> {
    let users = authors(api, notes).await?;
    let mut discussions = views(api).discussions(notes, &ctx.mr, &users);
    discussions.pop().ok_or(ApiError::NotFound("Discussion"))
}

pub async fn list(Path((id, iid)): Path<(String, String)>, api: Api) -> ApiResult<Response> {
    let ctx = load(&api, &id, &iid).await?;
    let NoteListQuery {
        order,
        page: request,
    } = api.input()?;
    let rows = api
        .db()
        .merge_request_notes(ctx.mr.id, order, request.per_page + 1, request.offset())
        .await?;
    let total = api.db().count_merge_request_notes(ctx.mr.id).await?;
    let before = rows.len();
    let rows = visible(&ctx, rows);
    let total = total - (before - rows.len()) as i64;
    let users = authors(&api, &rows).await?;
    let views = views(&api);
    let shown: Vec<MergeRequestNoteView> = rows
        .iter()
        .map(|n| views.note(n, &ctx.mr, &users))
        .collect();
    Ok(Page {
        rows: shown,
        total: Some(total),
    }
    .respond(&request, &api.origin, |n| n.id, MergeRequestNoteView::clone))
}

pub async fn show(
    Path((id, iid, note_id)): Path<(String, String, String)>,
    api: Api,
) -> ApiResult<Json<MergeRequestNoteView>> {
    let ctx = load(&api, &id, &iid).await?;
    let note = note_of(&api, &ctx, &note_id).await?;
    Ok(Json(render_note(&api, &ctx, &note).await?))
}

pub async fn create(Path((id, iid)): Path<(String, String)>, api: Api) -> ApiResult<Response> {
    let ctx = load(&api, &id, &iid).await?;
    let commenter = commenter(&api, &ctx)?;
    crate::services::notes::may_comment_when(&commenter, ctx.mr.discussion_locked)?;
    let CreateNote {
        body,
        internal,
        created_at,
    } = api.input()?;
    let input = CreateMergeRequestNote {
        body,
        internal,
        created_at,
        position: None,
    };
    let note = mr_notes::create(api.db(), &commenter, &ctx.mr, input, false).await?;
    Ok((
        StatusCode::CREATED,
        Json(render_note(&api, &ctx, &note).await?),
    )
        .into_response())
}

pub async fn update(
    Path((id, iid, note_id)): Path<(String, String, String)>,
    api: Api,
) -> ApiResult<Json<MergeRequestNoteView>> {
    let ctx = load(&api, &id, &iid).await?;
    let commenter = commenter(&api, &ctx)?;
    let note = note_of(&api, &ctx, &note_id).await?;
    crate::services::notes::may_edit(&commenter, &note)?;
    let UpdateNote { body } = api.input()?;
    let note = mr_notes::update(api.db(), &commenter, &ctx.mr, &note, &body).await?;
    Ok(Json(render_note(&api, &ctx, &note).await?))
}

pub async fn remove(
    Path((id, iid, note_id)): Path<(String, String, String)>,
    api: Api,
) -> ApiResult<StatusCode> {
    let ctx = load(&api, &id, &iid).await?;
    let commenter = commenter(&api, &ctx)?;
    let note = note_of(&api, &ctx, &note_id).await?;
    mr_notes::delete(api.db(), &commenter, &ctx.mr, &note).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET .../discussions`: every discussion, in the order they started, paginated.
pub async fn discussions(Path((id, iid)): Path<(String, String)>, api: Api) -> ApiResult<Response> {
    let ctx = load(&api, &id, &iid).await?;
    let notes = api
        .db()
        .merge_request_discussion_notes(ctx.mr.id, None)
        .await?;
    let notes = visible(&ctx, notes);
    let users = authors(&api, &notes).await?;
    let all = views(&api).discussions(&notes, &ctx.mr, &users);
    crate::api::repository::page(&api, all)
}

pub async fn discussion(
    Path((id, iid, discussion_id)): Path<(String, String, String)>,
    api: Api,
) -> ApiResult<Json<DiscussionView>> {
    let ctx = load(&api, &id, &iid).await?;
    let notes = thread_of(&api, &ctx, &discussion_id).await?;
    Ok(Json(render_thread(&api, &ctx, &notes).await?))
}

/// `POST .../discussions`: a new thread, on the diff when `position` is given.
pub async fn start(Path((id, iid)): Path<(String, String)>, api: Api) -> ApiResult<Response> {
    let ctx = load(&api, &id, &iid).await?;
    let commenter = commenter(&api, &ctx)?;
    crate::services::notes::may_comment_when(&commenter, ctx.mr.discussion_locked)?;
    let CreateDiscussionInput { note, position } = api.input()?;
    let input = CreateMergeRequestNote {
        body: note.body,
        internal: note.internal,
        created_at: note.created_at,
        position,
    };
    let first = mr_notes::create(api.db(), &commenter, &ctx.mr, input, true).await?;
    let thread = render_thread(&api, &ctx, std::slice::from_ref(&first)).await?;
    Ok((StatusCode::CREATED, Json(thread)).into_response())
}

/// `POST .../discussions/:discussion_id/notes`: a reply.
pub async fn reply(
    Path((id, iid, discussion_id)): Path<(String, String, String)>,
    api: Api,
) -> ApiResult<Response> {
    let ctx = load(&api, &id, &iid).await?;
    let commenter = commenter(&api, &ctx)?;
    let thread = thread_of(&api, &ctx, &discussion_id).await?;
    let CreateNote { body, .. } = api.input()?;
    let note = mr_notes::reply(api.db(), &commenter, &ctx.mr, &thread, &body).await?;
    Ok((
        StatusCode::CREATED,
        Json(render_note(&api, &ctx, &note).await?),
    )
        .into_response())
}

/// `PUT .../discussions/:discussion_id?resolved=`.
pub async fn resolve(
    Path((id, iid, discussion_id)): Path<(String, String, String)>,
    api: Api,
) -> ApiResult<Json<DiscussionView>> {
    let ctx = load(&api, &id, &iid).await?;
    let commenter = commenter(&api, &ctx)?;
    thread_of(&api, &ctx, &discussion_id).await?;
    let ResolveQuery(resolved) = api.input()?;
    let allowed = may_resolve(&api, &ctx);
    mr_notes::resolve(
        api.db(),
        &commenter,
        allowed,
        &ctx.mr,
        &discussion_id,
        resolved,
    )
    .await?;
    let notes = thread_of(&api, &ctx, &discussion_id).await?;
    Ok(Json(render_thread(&api, &ctx, &notes).await?))
}

/// `PUT .../discussions/:discussion_id/notes/:note_id`: a new body, or the thread resolved.
pub async fn update_in_thread(
    Path((id, iid, discussion_id, note_id)): Path<(String, String, String, String)>,
    api: Api,
) -> ApiResult<Json<MergeRequestNoteView>> {
    let ctx = load(&api, &id, &iid).await?;
    let commenter = commenter(&api, &ctx)?;
    let note = note_of(&api, &ctx, &note_id).await?;
    if note.discussion_id != discussion_id {
        return Err(ApiError::NotFound("Note"));
    }
    let DiscussionNoteUpdate { body, resolved } = api.input()?;
    let note = match (body, resolved) {
        (Some(body), _) => mr_notes::update(api.db(), &commenter, &ctx.mr, &note, &body).await?,
        (None, Some(resolved)) => {
            let allowed = may_resolve(&api, &ctx);
            mr_notes::resolve(
                api.db(),
                &commenter,
                allowed,
                &ctx.mr,
                &discussion_id,
                resolved,
            )
            .await?;
            note_of(&api, &ctx, &note_id).await?
        }
        (None, None) => note,
    };
    Ok(Json(render_note(&api, &ctx, &note).await?))
}

/// `DELETE .../discussions/:discussion_id/notes/:note_id`.
pub async fn remove_in_thread(
    Path((id, iid, discussion_id, note_id)): Path<(String, String, String, String)>,
    api: Api,
) -> ApiResult<StatusCode> {
    let ctx = load(&api, &id, &iid).await?;
    let commenter = commenter(&api, &ctx)?;
    let note = note_of(&api, &ctx, &note_id).await?;
    if note.discussion_id != discussion_id {
        return Err(ApiError::NotFound("Note"));
    }
    mr_notes::delete(api.db(), &commenter, &ctx.mr, &note).await?;
    Ok(StatusCode::NO_CONTENT)
}
