//! `GET/POST/DELETE .../award_emoji[/:award_id]` on an issue or a merge request, and the same
//! under `.../notes/:note_id/`. `thumbsup` and `thumbsdown` on the issue or merge request itself
//! are its upvotes and downvotes (kept on its row by the store); on a note they count for
//! nothing. One set of handlers serves both, through [`Awardables`].

use std::future::Future;

use crate::http::json::Json;
use axum::extract::Path;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::issues::input::CreateAward;
use super::issues::{page_of, users_by_id, views};
use crate::context::ApiContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::{Page, PageRequest};
use crate::http::request::Api;
use crate::http::routes::{Doc, Router};
use crate::model::issue_notes::AwardRow;
use crate::model::noteables::Noteable;
use crate::services::noteable_actions::{self, Target};
use crate::views::issue::AwardView;

/// What the awards hang on: the issue or merge request (`note_id` 0) or one of its notes the
/// caller may read.
pub struct Awardable {
    pub on: Noteable,
    pub project_id: i64,
    pub title: String,
    pub note_id: i64,
}

impl Awardable {
    fn target(&self) -> Target<'_> {
        Target {
            on: self.on,
            project_id: self.project_id,
            title: &self.title,
        }
    }
}

/// How a kind of noteable finds the awardable a path names: `(project, iid)`, then the note
/// when the path names one, each with its own 404s.
pub trait Awardables: Send + Sync + 'static {
    fn resolve(
        api: &Api,
        id: &str,
        iid: &str,
        note: Option<&str>,
    ) -> impl Future<Output = ApiResult<Awardable>> + Send;
}

/// The award emoji routes under `base` (an issue's or merge request's path).
pub fn routes<K: Awardables>(router: Router<ApiContext>, base: &str) -> Router<ApiContext> {
    let award_list = || {
        Doc::new()
            .input::<PageRequest>()
            .answers_list::<AwardView>()
    };
    let award_create = || Doc::new().input::<CreateAward>().answers::<AwardView>();
    router
        .route(
            &format!("{base}/award_emoji"),
            get(list::<K>).post(create::<K>),
        )
        .doc(Method::GET, award_list())
        .doc(Method::POST, award_create())
        .route(
            &format!("{base}/award_emoji/{{award_id}}"),
            get(show::<K>).delete(remove::<K>),
        )
        .doc(Method::GET, Doc::new().answers::<AwardView>())
        .route(
            &format!("{base}/notes/{{note_id}}/award_emoji"),
            get(note_list::<K>).post(note_create::<K>),
        )
        .doc(Method::GET, award_list())
        .doc(Method::POST, award_create())
        .route(
            &format!("{base}/notes/{{note_id}}/award_emoji/{{award_id}}"),
            get(note_show::<K>).delete(note_remove::<K>),
        )
        .doc(Method::GET, Doc::new().answers::<AwardView>())
}

async fn awardable<K: Awardables>(
    api: &Api,
    id: &str,
    iid: &str,
    note: Option<&str>,
) -> ApiResult<Awardable> {
    // GitLab's award emoji endpoints all `authenticate!` first.
    api.user()?;
    K::resolve(api, id, iid, note).await
}

/// The views of `awards`, in their order, their users read at once.
async fn render(api: &Api, on: Noteable, awards: &[AwardRow]) -> ApiResult<Vec<AwardView>> {
    let users = users_by_id(api, awards.iter().map(|a| a.user_id).collect()).await?;
    let views = views(api);
    Ok(awards
        .iter()
        .map(|a| views.award(a, on, users.get(&a.user_id)))
        .collect())
}

async fn render_one(api: &Api, on: Noteable, award: &AwardRow) -> ApiResult<AwardView> {
    Ok(render(api, on, std::slice::from_ref(award))
        .await?
        .remove(0))
}

async fn award_of(api: &Api, on: &Awardable, award_id: &str) -> ApiResult<AwardRow> {
    let id: i64 = award_id
        .trim()
        .parse()
        .map_err(|_| ApiError::invalid("award_id"))?;
    api.db()
        .award(on.on, on.note_id, id)
        .await?
        .ok_or(ApiError::NotFound("Award Emoji"))
}

async fn list_of(api: Api, on: Awardable) -> ApiResult<Response> {
    let request = PageRequest::from_params(&api.params)?;
    let page = page_of(api.db().awards(on.on, on.note_id).await?, &request);
    let views = Page {
        rows: render(&api, on.on, &page.rows).await?,
        total: page.total,
    };
    Ok(views.respond(&request, &api.origin, |a| a.id, AwardView::clone))
}

async fn create_on(api: Api, on: Awardable) -> ApiResult<Response> {
    let caller = api.user()?;
    let CreateAward { name } = api.input()?;
    let award =
        noteable_actions::award(api.db(), caller.user.id, on.target(), on.note_id, &name).await?;
    Ok((
        StatusCode::CREATED,
        Json(render_one(&api, on.on, &award).await?),
    )
        .into_response())
}

async fn show_of(api: Api, on: Awardable, award_id: &str) -> ApiResult<Json<AwardView>> {
    let award = award_of(&api, &on, award_id).await?;
    Ok(Json(render_one(&api, on.on, &award).await?))
}

async fn remove_from(api: Api, on: Awardable, award_id: &str) -> ApiResult<StatusCode> {
    let caller = api.user()?;
    let award = award_of(&api, &on, award_id).await?;
    noteable_actions::revoke_award(
        api.db(),
        caller.user.id,
        caller.is_admin(),
        on.target(),
        &award,
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

type OwnPath = Path<(String, String)>;
type ItemPath = Path<(String, String, String)>;
type NoteItemPath = Path<(String, String, String, String)>;

async fn list<K: Awardables>(Path((id, iid)): OwnPath, api: Api) -> ApiResult<Response> {
    let on = awardable::<K>(&api, &id, &iid, None).await?;
    list_of(api, on).await
}

async fn note_list<K: Awardables>(
    Path((id, iid, note)): ItemPath,
    api: Api,
) -> ApiResult<Response> {
    let on = awardable::<K>(&api, &id, &iid, Some(&note)).await?;
    list_of(api, on).await
}

async fn show<K: Awardables>(
    Path((id, iid, award)): ItemPath,
    api: Api,
) -> ApiResult<Json<AwardView>> {
    let on = awardable::<K>(&api, &id, &iid, None).await?;
    show_of(api, on, &award).await
}

async fn note_show<K: Awardables>(
    Path((id, iid, note, award)): NoteItemPath,
    api: Api,
) -> ApiResult<Json<AwardView>> {
    let on = awardable::<K>(&api, &id, &iid, Some(&note)).await?;
    show_of(api, on, &award).await
}

async fn create<K: Awardables>(Path((id, iid)): OwnPath, api: Api) -> ApiResult<Response> {
    let on = awardable::<K>(&api, &id, &iid, None).await?;
    create_on(api, on).await
}

async fn note_create<K: Awardables>(
    Path((id, iid, note)): ItemPath,
    api: Api,
) -> ApiResult<Response> {
    let on = awardable::<K>(&api, &id, &iid, Some(&note)).await?;
    create_on(api, on).await
}

async fn remove<K: Awardables>(
    Path((id, iid, award)): ItemPath,
    api: Api,
) -> ApiResult<StatusCode> {
    let on = awardable::<K>(&api, &id, &iid, None).await?;
    remove_from(api, on, &award).await
}

async fn note_remove<K: Awardables>(
    Path((id, iid, note, award)): NoteItemPath,
    api: Api,
) -> ApiResult<StatusCode> {
    let on = awardable::<K>(&api, &id, &iid, Some(&note)).await?;
    remove_from(api, on, &award).await
}
