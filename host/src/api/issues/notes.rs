//! `GET/POST/PUT/DELETE /projects/:id/issues/:issue_iid/notes[/:note_id]`. Anyone who can read
//! the issue may comment, except on a locked discussion, where only project members may
//! (GitLab's 403). Authors edit their notes; authors and maintainers delete them. System notes
//! (written by changes to the issue) are listed too, and nobody edits or deletes them (403).

use crate::http::json::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::input::NoteListQuery;
use super::{IssueCtx, is_owner, is_reporter, load, users_by_id, views};
use crate::access_level::AccessLevel;
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::Page;
use crate::http::request::Api;
use crate::model::issue_notes::NoteRow;
use crate::services::notes::{self, Commenter, CreateNote, UpdateNote};
use crate::views::issue::NoteView;

fn parse_id(value: &str, name: &str) -> ApiResult<i64> {
    value.trim().parse().map_err(|_| ApiError::invalid(name))
}

pub(super) async fn note_of(api: &Api, ctx: &IssueCtx, note_id: &str) -> ApiResult<NoteRow> {
    let id = parse_id(note_id, "note_id")?;
    api.db()
        .issue_note(ctx.issue.id, id)
        .await?
        .filter(|n| !n.internal || is_reporter(&ctx.project))
        .ok_or(ApiError::NotFound("Note"))
}

/// The caller as the note rules see them.
fn commenter(api: &Api, ctx: &IssueCtx) -> ApiResult<Commenter> {
    let project = &ctx.project;
    Ok(Commenter {
        user_id: api.user()?.user.id,
        admin: project.admin,
        member: project.admin || project.level() >= AccessLevel::Guest,
        reporter: is_reporter(project),
        maintainer: project.admin || project.level() >= AccessLevel::Maintainer,
        owner: is_owner(project),
    })
}

/// The views of `notes`, in their order, their authors read at once.
async fn render(api: &Api, ctx: &IssueCtx, notes: &[NoteRow]) -> ApiResult<Vec<NoteView>> {
    let users = users_by_id(api, notes.iter().map(|n| n.author_id).collect()).await?;
    let views = views(api);
    Ok(notes
        .iter()
        .map(|n| views.note(n, users.get(&n.author_id), &ctx.issue))
        .collect())
}

async fn render_one(api: &Api, ctx: &IssueCtx, note: &NoteRow) -> ApiResult<NoteView> {
    Ok(render(api, ctx, std::slice::from_ref(note))
        .await?
        .remove(0))
}

pub async fn list(Path((id, iid)): Path<(String, String)>, api: Api) -> ApiResult<Response> {
    let ctx = load(&api, &id, &iid).await?;
    let NoteListQuery {
        order,
        page: request,
    } = api.input()?;
    let mut rows = api
        .db()
        .issue_notes(ctx.issue.id, order, request.per_page + 1, request.offset())
        .await?;
    let mut total = api.db().count_issue_notes(ctx.issue.id).await?;
    if !is_reporter(&ctx.project) {
        let before = rows.len();
        rows.retain(|n| !n.internal);
        total -= (before - rows.len()) as i64;
    }
    Ok(Page {
        rows: render(&api, &ctx, &rows).await?,
        total: Some(total),
    }
    .respond(&request, &api.origin, |n| n.id, NoteView::clone))
}

pub async fn show(
    Path((id, iid, note_id)): Path<(String, String, String)>,
    api: Api,
) -> ApiResult<Json<NoteView>> {
    let ctx = load(&api, &id, &iid).await?;
    let note = note_of(&api, &ctx, &note_id).await?;
    Ok(Json(render_one(&api, &ctx, &note).await?))
}

pub async fn create(Path((id, iid)): Path<(String, String)>, api: Api) -> ApiResult<Response> {
    let ctx = load(&api, &id, &iid).await?;
    let commenter = commenter(&api, &ctx)?;
    notes::may_comment(&commenter, &ctx.issue)?;
    let input: CreateNote = api.input()?;
    let note = notes::create(api.db(), &commenter, &ctx.issue, input).await?;
    Ok((
        StatusCode::CREATED,
        Json(render_one(&api, &ctx, &note).await?),
    )
        .into_response())
}

pub async fn update(
    Path((id, iid, note_id)): Path<(String, String, String)>,
    api: Api,
) -> ApiResult<Json<NoteView>> {
    let ctx = load(&api, &id, &iid).await?;
    let commenter = commenter(&api, &ctx)?;
    let note = note_of(&api, &ctx, &note_id).await?;
    notes::may_edit(&commenter, &note)?;
    let input: UpdateNote = api.input()?;
    let note = notes::update(api.db(), &commenter, &ctx.issue, &note, input).await?;
    Ok(Json(render_one(&api, &ctx, &note).await?))
}

pub async fn remove(
    Path((id, iid, note_id)): Path<(String, String, String)>,
    api: Api,
) -> ApiResult<StatusCode> {
    let ctx = load(&api, &id, &iid).await?;
    let commenter = commenter(&api, &ctx)?;
    let note = note_of(&api, &ctx, &note_id).await?;
    notes::delete(api.db(), &commenter, &ctx.issue, &note).await?;
    Ok(StatusCode::NO_CONTENT)
}
