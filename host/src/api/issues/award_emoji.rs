//! `GET/POST/DELETE /projects/:id/issues/:issue_iid/award_emoji[/:award_id]` and the same
//! under `.../notes/:note_id/`. `thumbsup` and `thumbsdown` on the issue itself are its upvotes
//! and downvotes (kept on the issue row by the store); on a note they count for nothing.

use crate::http::json::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::input::CreateAward;
use super::notes::note_of;
use super::{load, page_of, users_by_id, views};
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::{Page, PageRequest};
use crate::http::request::Api;
use crate::model::issue_notes::AwardRow;
use crate::model::issues::IssueRow;
use crate::services::issue_actions;
use crate::views::issue::AwardView;

/// What the awards hang on: the issue (`note_id` 0) or one of its notes the caller may read.
struct Awardable {
    issue: IssueRow,
    note_id: i64,
}

/// `(project, issue_iid)`, then the note when the path names one.
async fn awardable(api: &Api, id: &str, iid: &str, note: Option<&str>) -> ApiResult<Awardable> {
    // GitLab's award emoji endpoints all `authenticate!` first.
    api.user()?;
    let ctx = load(api, id, iid).await?;
    let note_id = match note {
        Some(note) => note_of(api, &ctx, note).await?.id,
        None => 0,
    };
    Ok(Awardable {
        issue: ctx.issue,
        note_id,
    })
}

/// The views of `awards`, in their order, their users read at once.
async fn render(api: &Api, awards: &[AwardRow]) -> ApiResult<Vec<AwardView>> {
    let users = users_by_id(api, awards.iter().map(|a| a.user_id).collect()).await?;
    let views = views(api);
    Ok(awards
        .iter()
        .map(|a| views.award(a, users.get(&a.user_id)))
        .collect())
}

async fn render_one(api: &Api, award: &AwardRow) -> ApiResult<AwardView> {
    Ok(render(api, std::slice::from_ref(award)).await?.remove(0))
}

async fn award_of(api: &Api, on: &Awardable, award_id: &str) -> ApiResult<AwardRow> {
    let id: i64 = award_id
        .trim()
        .parse()
        .map_err(|_| ApiError::invalid("award_id"))?;
    api.db()
        .award(on.issue.id, on.note_id, id)
        .await?
        .ok_or(ApiError::NotFound("Award Emoji"))
}

async fn list(api: Api, on: Awardable) -> ApiResult<Response> {
    let request = PageRequest::from_params(&api.params)?;
    let page = page_of(api.db().awards(on.issue.id, on.note_id).await?, &request);
    let views = Page {
        rows: render(&api, &page.rows).await?,
        total: page.total,
    };
    Ok(views.respond(&request, &api.origin, |a| a.id, AwardView::clone))
}

async fn create(api: Api, on: Awardable) -> ApiResult<Response> {
    let caller = api.user()?;
    let CreateAward { name } = api.input()?;
    let award =
        issue_actions::award(api.db(), caller.user.id, &on.issue, on.note_id, &name).await?;
    Ok((StatusCode::CREATED, Json(render_one(&api, &award).await?)).into_response())
}

async fn remove(api: Api, on: Awardable, award_id: &str) -> ApiResult<StatusCode> {
    let caller = api.user()?;
    let award = award_of(&api, &on, award_id).await?;
    issue_actions::revoke_award(
        api.db(),
        caller.user.id,
        caller.is_admin(),
        &on.issue,
        &award,
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

type IssuePath = Path<(String, String)>;
type IssueItemPath = Path<(String, String, String)>;
type NoteItemPath = Path<(String, String, String, String)>;

pub async fn issue_list(Path((id, iid)): IssuePath, api: Api) -> ApiResult<Response> {
    let on = awardable(&api, &id, &iid, None).await?;
    list(api, on).await
}

pub async fn note_list(Path((id, iid, note)): IssueItemPath, api: Api) -> ApiResult<Response> {
    let on = awardable(&api, &id, &iid, Some(&note)).await?;
    list(api, on).await
}

pub async fn issue_show(
    Path((id, iid, award)): IssueItemPath,
    api: Api,
) -> ApiResult<Json<AwardView>> {
    let on = awardable(&api, &id, &iid, None).await?;
    Ok(Json(
        render_one(&api, &award_of(&api, &on, &award).await?).await?,
    ))
}

pub async fn note_show(
    Path((id, iid, note, award)): NoteItemPath,
    api: Api,
) -> ApiResult<Json<AwardView>> {
    let on = awardable(&api, &id, &iid, Some(&note)).await?;
    Ok(Json(
        render_one(&api, &award_of(&api, &on, &award).await?).await?,
    ))
}

pub async fn issue_create(Path((id, iid)): IssuePath, api: Api) -> ApiResult<Response> {
    let on = awardable(&api, &id, &iid, None).await?;
    create(api, on).await
}

pub async fn note_create(Path((id, iid, note)): IssueItemPath, api: Api) -> ApiResult<Response> {
    let on = awardable(&api, &id, &iid, Some(&note)).await?;
    create(api, on).await
}

pub async fn issue_remove(
    Path((id, iid, award)): IssueItemPath,
    api: Api,
) -> ApiResult<StatusCode> {
    let on = awardable(&api, &id, &iid, None).await?;
    remove(api, on, &award).await
}

pub async fn note_remove(
    Path((id, iid, note, award)): NoteItemPath,
    api: Api,
) -> ApiResult<StatusCode> {
    let on = awardable(&api, &id, &iid, Some(&note)).await?;
    remove(api, on, &award).await
}
