//! `GET /user/activities` and `GET /users/:id/memberships`, administrators only.

use axum::extract::Path;
use axum::response::Response;
use chrono::{Months, NaiveDate, Utc};

use super::user_by_id;
use crate::http::error::ApiResult;
use crate::http::pagination::{COUNT_CAP, Page, PageRequest};
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::store::user_admin::{ActivityRow, MembershipRow};
use crate::store::window::Direction;
use crate::views::user_admin::{ActivityView, MembershipView};

/// `GET /user/activities`: since `from`, six months back by default.
pub(super) struct ActivityQuery {
    from: NaiveDate,
}

impl FromParams for ActivityQuery {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let from = match p.date("from")? {
            Some(date) => date,
            None => Utc::now().date_naive() - Months::new(6),
        };
        Ok(ActivityQuery { from })
    }
}

/// `GET /users/:id/memberships`: `type` is `Project` or `Namespace`.
pub(super) struct MembershipQuery {
    source_type: Option<String>,
}

impl FromParams for MembershipQuery {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(MembershipQuery {
            source_type: p.one_of("type", &["Project", "Namespace"])?,
        })
    }
}

pub async fn activities(api: Api) -> ApiResult<Response> {
    api.admin()?;
    let ActivityQuery { from } = api.input()?;
    let from = from.format("%Y-%m-%d").to_string();
    let request = PageRequest::from_params(&api.params)?;
    let window = request.window(&api.params, "last_activity_on", Direction::Asc)?;
    let rows = api.db().activities(&from, &window).await?;
    let total = Some(api.db().count_activities(&from, COUNT_CAP + 1).await?);
    Ok(Page { rows, total }.respond(
        &request,
        &api.origin,
        |a: &ActivityRow| a.id,
        |a| ActivityView {
            username: a.username.clone(),
            last_activity_on: a.last_activity_on.clone(),
            last_activity_at: a.last_activity_on.clone(),
        },
    ))
}

/// Direct memberships of projects (`Project`) and groups (`Namespace`).
pub async fn memberships(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    api.admin()?;
    let MembershipQuery { source_type } = api.input()?;
    let user = user_by_id(&api, &id).await?;
    let request = PageRequest::from_params(&api.params)?;
    let offset = request.offset();
    let db = api.db();
    let rows = db
        .memberships(
            user.id,
            source_type.as_deref(),
            request.per_page + 1,
            offset,
        )
        .await?;
    let total = Some(
        db.count_memberships(user.id, source_type.as_deref())
            .await?,
    );
    Ok(Page { rows, total }.respond(
        &request,
        &api.origin,
        |m: &MembershipRow| m.source_id,
        |m| MembershipView {
            source_id: m.source_id,
            source_name: m.source_name.clone(),
            source_type: m.source_type.clone(),
            access_level: m.access_level,
        },
    ))
}
