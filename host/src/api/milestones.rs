//! Project milestones: `GET/POST/PUT/DELETE /projects/:id/milestones[/:milestone_id]`, with
//! `state_event` close/activate. Reading needs the project; changing needs reporter access.

use crate::http::json::Json;
use crate::http::routes::Doc;
use crate::http::routes::Router;
use crate::views::issue::MilestoneView;
use axum::extract::Path;
use axum::http::Method;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::access::{self, ProjectCtx};
use super::issues::{page_of, views};
use crate::access_level::AccessLevel;
use crate::context::ApiContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::PageRequest;
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::model::milestones::MilestoneRow;
use crate::model::states::MilestoneState;
use crate::services::milestones::{self, MilestoneFields, StateEvent};
use crate::store::milestones::MilestoneFilter;

/// The longest milestone description: GitLab's limit for text columns
/// (`Gitlab::Database::MAX_TEXT_SIZE_LIMIT`), as for issues.
const DESCRIPTION_MAX: usize = 1_000_000;

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/api/v4/projects/{id}/milestones", get(list).post(create))
        .doc(
            Method::GET,
            Doc::new()
                .input::<MilestoneListQuery>()
                .input::<PageRequest>()
                .answers_list::<MilestoneView>(),
        )
        .doc(
            Method::POST,
            Doc::new()
                .input::<CreateMilestone>()
                .answers::<MilestoneView>(),
        )
        .route(
            "/api/v4/projects/{id}/milestones/{milestone_id}",
            get(show).put(update).delete(remove),
        )
        .doc(Method::GET, Doc::new().answers::<MilestoneView>())
        .doc(
            Method::PUT,
            Doc::new()
                .input::<UpdateMilestone>()
                .answers::<MilestoneView>(),
        )
}

async fn render(api: &Api, milestone: &MilestoneRow) -> ApiResult<MilestoneView> {
    let project = api.db().project_refs(&[milestone.project_id]).await?.pop();
    // GitLab's `Milestone` has no `closed_at`; only the spec's single issue adds it.
    Ok(views(api).milestone(milestone, project.as_ref(), false))
}

async fn milestone_of(api: &Api, ctx: &ProjectCtx, key: &str) -> ApiResult<MilestoneRow> {
    let id: i64 = key
        .trim()
        .parse()
        .map_err(|_| ApiError::invalid("milestone_id"))?;
    api.db()
        .milestone_by_id(id)
        .await?
        .filter(|m| m.project_id == ctx.project.id)
        .ok_or(ApiError::NotFound("Milestone"))
}

async fn writable(api: &Api, id: &str) -> ApiResult<ProjectCtx> {
    api.user()?;
    let ctx = access::project(api, id).await?;
    ctx.require(AccessLevel::Reporter)?;
    Ok(ctx)
}

impl FromParams for MilestoneFields {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let title = p.string("title")?;
        if title.as_ref().is_some_and(|t| t.trim().is_empty()) {
            return Err(ApiError::field("title", "can't be blank"));
        }
        let description = match p.has("description") {
            true => Some(p.string_at_most("description", DESCRIPTION_MAX)?),
            false => None,
        };
        let date = |name: &str| -> ApiResult<Option<Option<String>>> {
            match p.has(name) {
                true => Ok(Some(p.date(name)?.map(|d| d.to_string()))),
                false => Ok(None),
            }
        };
        Ok(MilestoneFields {
            title,
            description,
            due_date: date("due_date")?,
            start_date: date("start_date")?,
        })
    }
}

/// `POST .../milestones`: a title is required.
struct CreateMilestone(MilestoneFields);

impl FromParams for CreateMilestone {
    fn from_params(p: &Params) -> ApiResult<Self> {
        p.required_string("title")?;
        Ok(CreateMilestone(MilestoneFields::from_params(p)?))
    }
}

/// `PUT .../milestones/:milestone_id`.
struct UpdateMilestone {
    fields: MilestoneFields,
    state_event: Option<StateEvent>,
}

impl FromParams for UpdateMilestone {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(UpdateMilestone {
            fields: MilestoneFields::from_params(p)?,
            state_event: p
                .one_of("state_event", &["close", "activate"])?
                .map(|event| match event.as_str() {
                    "close" => StateEvent::Close,
                    _ => StateEvent::Activate,
                }),
        })
    }
}

/// `GET .../milestones`.
struct MilestoneListQuery {
    state: Option<MilestoneState>,
    iids: Vec<i64>,
    title: Option<String>,
    search: Option<String>,
}

impl FromParams for MilestoneListQuery {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(MilestoneListQuery {
            state: p.one_of_named("state", MilestoneState::ALL)?,
            iids: p.int_list("iids")?.unwrap_or_default(),
            title: p.string("title")?,
            search: p.string("search")?.filter(|s| !s.is_empty()),
        })
    }
}

pub async fn list(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let query: MilestoneListQuery = api.input()?;
    let request = PageRequest::from_params(&api.params)?;
    let ctx = access::project(&api, &id).await?;
    let filter = MilestoneFilter {
        project_id: ctx.project.id,
        state: query.state,
        iids: query.iids,
        title: query.title,
        search: query.search,
    };
    let all = api.db().list_milestones(&filter).await?;
    let page = page_of(all, &request);
    let project = api.db().project_refs(&[ctx.project.id]).await?.pop();
    let views = views(&api);
    Ok(page.respond(
        &request,
        &api.origin,
        |m| m.id,
        |m| views.milestone(m, project.as_ref(), false),
    ))
}

pub async fn show(
    Path((id, milestone_id)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<MilestoneView>> {
    let ctx = access::project(&api, &id).await?;
    let milestone = milestone_of(&api, &ctx, &milestone_id).await?;
    Ok(Json(render(&api, &milestone).await?))
}

pub async fn create(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    api.user()?;
    let CreateMilestone(fields) = api.input()?;
    let ctx = writable(&api, &id).await?;
    let milestone = milestones::create(api.db(), ctx.project.id, fields).await?;
    Ok((StatusCode::CREATED, Json(render(&api, &milestone).await?)).into_response())
}

pub async fn update(
    Path((id, milestone_id)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<MilestoneView>> {
    api.user()?;
    let UpdateMilestone {
        fields,
        state_event,
    } = api.input()?;
    let ctx = writable(&api, &id).await?;
    let milestone = milestone_of(&api, &ctx, &milestone_id).await?;
    milestones::update(api.db(), &milestone, fields, state_event).await?;
    let milestone = milestone_of(&api, &ctx, &milestone_id).await?;
    Ok(Json(render(&api, &milestone).await?))
}

pub async fn remove(
    Path((id, milestone_id)): Path<(String, String)>,
    api: Api,
) -> ApiResult<StatusCode> {
    let ctx = writable(&api, &id).await?;
    let milestone = milestone_of(&api, &ctx, &milestone_id).await?;
    milestones::delete(api.db(), &milestone).await?;
    Ok(StatusCode::NO_CONTENT)
}
