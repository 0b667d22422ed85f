//! `GET/POST/DELETE /projects/:id/issues/:issue_iid/award_emoji[/:award_id]`. `thumbsup` and
//! `thumbsdown` are the issue's upvotes and downvotes (kept on the issue row by the store).

use std::collections::HashMap;

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::{IssueCtx, load, page_of, users_by_id, views};
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::PageRequest;
use crate::http::request::Api;
use crate::store::issue_notes::AwardRow;

async fn render(api: &Api, awards: &[AwardRow]) -> ApiResult<HashMap<i64, Value>> {
    let users = users_by_id(api, awards.iter().map(|a| a.user_id).collect()).await?;
    let views = views(api);
    Ok(awards
        .iter()
        .map(|a| (a.id, views.award(a, users.get(&a.user_id))))
        .collect())
}

async fn award_of(api: &Api, ctx: &IssueCtx, award_id: &str) -> ApiResult<AwardRow> {
    let id: i64 = award_id
        .trim()
        .parse()
        .map_err(|_| ApiError::invalid("award_id"))?;
    api.db()
        .issue_award(ctx.issue.id, id)
        .await?
        .ok_or(ApiError::NotFound("Award Emoji"))
}

pub async fn list(Path((id, iid)): Path<(String, String)>, api: Api) -> ApiResult<Response> {
    api.user()?;
    let ctx = load(&api, &id, &iid).await?;
    let request = PageRequest::from_params(&api.params)?;
    let page = page_of(api.db().issue_awards(ctx.issue.id).await?, &request);
    let views = render(&api, &page.rows).await?;
    Ok(page.respond(
        &request,
        &api.origin,
        |a| a.id,
        |a| views.get(&a.id).cloned().unwrap_or(Value::Null),
    ))
}

pub async fn show(
    Path((id, iid, award_id)): Path<(String, String, String)>,
    api: Api,
) -> ApiResult<Json<Value>> {
    api.user()?;
    let ctx = load(&api, &id, &iid).await?;
    let award = award_of(&api, &ctx, &award_id).await?;
    let views = render(&api, std::slice::from_ref(&award)).await?;
    Ok(Json(views.get(&award.id).cloned().unwrap_or(Value::Null)))
}

pub async fn create(Path((id, iid)): Path<(String, String)>, api: Api) -> ApiResult<Response> {
    let caller = api.user()?;
    let ctx = load(&api, &id, &iid).await?;
    let name = api.params.required_string("name")?;
    let name = name.trim().trim_matches(':').to_string();
    // GitLab answers a refused award with 404 and the validation message inside.
    if emojis::get_by_shortcode(&name).is_none() {
        return Err(ApiError::NotFoundMessage(
            "404 Award Emoji Name is not a valid emoji name Not Found".into(),
        ));
    }
    let award = match api
        .db()
        .create_award(ctx.issue.id, caller.user.id, &name)
        .await
    {
        Ok(award) => award,
        Err(sqlx::Error::Database(e)) if e.kind() == sqlx::error::ErrorKind::UniqueViolation => {
            return Err(ApiError::NotFoundMessage(
                "404 Award Emoji User has already been taken Not Found".into(),
            ));
        }
        Err(e) => return Err(e.into()),
    };
    let views = render(&api, std::slice::from_ref(&award)).await?;
    Ok((
        StatusCode::CREATED,
        Json(views.get(&award.id).cloned().unwrap_or(Value::Null)),
    )
        .into_response())
}

pub async fn remove(
    Path((id, iid, award_id)): Path<(String, String, String)>,
    api: Api,
) -> ApiResult<StatusCode> {
    let caller = api.user()?;
    let ctx = load(&api, &id, &iid).await?;
    let award = award_of(&api, &ctx, &award_id).await?;
    if award.user_id != caller.user.id && !caller.is_admin() {
        return Err(ApiError::Unauthorized);
    }
    api.db().delete_award(&award).await?;
    Ok(StatusCode::NO_CONTENT)
}
