//! Project labels: `GET/POST/PUT/DELETE /projects/:id/labels[/:label_id]`. Reading needs the
//! project; changing needs reporter access. Names are unique per project, case-insensitively.

use crate::http::json::Json;
use crate::http::routes::Doc;
use crate::http::routes::Router;
use crate::views::issue::LabelView;
use axum::extract::Path;
use axum::http::Method;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::access::{self, ProjectCtx};
use super::issues::{is_reporter, issues_readable, page_of, views};
use crate::access_level::AccessLevel;
use crate::context::ApiContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::{Page, PageRequest};
use crate::http::params::{FromParams, Params, flag_input};
use crate::http::request::Api;
use crate::model::colors::label_color;
use crate::model::labels::{LabelCounts, LabelRow};
use crate::services::labels::{self, LabelChanges, NewLabel};
use crate::store::labels::ConfidentialIssues;

/// The longest label description: GitLab's limit for text columns
/// (`Gitlab::Database::MAX_TEXT_SIZE_LIMIT`).
const DESCRIPTION_MAX: usize = 1_000_000;

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route(
            "/api/v4/projects/{id}/labels",
            get(list)
                .post(create)
                .put(update_by_name)
                .delete(remove_by_name),
        )
        .doc(
            Method::GET,
            Doc::new()
                .input::<LabelListQuery>()
                .input::<PageRequest>()
                .answers_list::<LabelView>(),
        )
        .doc(
            Method::POST,
            Doc::new().input::<CreateLabel>().answers::<LabelView>(),
        )
        .doc(
            Method::PUT,
            Doc::new()
                .input::<LabelKey>()
                .input::<UpdateLabel>()
                .answers::<LabelView>(),
        )
        .doc(Method::DELETE, Doc::new().input::<LabelKey>())
        .route(
            "/api/v4/projects/{id}/labels/{label_id}",
            get(show).put(update).delete(remove),
        )
        .doc(
            Method::GET,
            Doc::new().input::<LabelShape>().answers::<LabelView>(),
        )
        .doc(
            Method::PUT,
            Doc::new().input::<UpdateLabel>().answers::<LabelView>(),
        )
}

fn check_name(name: &str) -> ApiResult<()> {
    if name.trim().is_empty() {
        return Err(ApiError::field("title", "can't be blank"));
    }
    if name.contains(',') {
        return Err(ApiError::field("title", "is invalid"));
    }
    Ok(())
}

/// `#RGB`, `#RRGGBB` or a CSS color name, as GitLab's color validator accepts; a name is
/// stored as its hex value, as GitLab stores it.
fn stored_color(color: &str) -> ApiResult<String> {
    label_color(color).ok_or_else(|| ApiError::field("color", "must be a valid color code"))
}

flag_input!(
    /// `with_counts`: whether a label shows its issue and merge request counts.
    LabelShape,
    "with_counts",
    false
);

/// `GET .../labels`.
struct LabelListQuery {
    search: Option<String>,
    shape: LabelShape,
}

impl FromParams for LabelListQuery {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(LabelListQuery {
            search: p.string("search")?.filter(|s| !s.is_empty()),
            shape: LabelShape::from_params(p)?,
        })
    }
}

/// `POST .../labels`.
struct CreateLabel {
    name: String,
    color: String,
    description: Option<String>,
    priority: Option<i64>,
    shape: LabelShape,
}

impl FromParams for CreateLabel {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let name = p.required_string("name")?;
        check_name(&name)?;
        let color = stored_color(&p.required_string("color")?)?;
        Ok(CreateLabel {
            name,
            color,
            description: p.string_at_most("description", DESCRIPTION_MAX)?,
            priority: p.int("priority")?,
            shape: LabelShape::from_params(p)?,
        })
    }
}

/// `PUT .../labels[/:label_id]`: at least one of the fields; `description` and `priority`
/// given as null clear them.
struct UpdateLabel {
    new_name: Option<String>,
    color: Option<String>,
    description: Option<Option<String>>,
    priority: Option<Option<i64>>,
    shape: LabelShape,
}

impl FromParams for UpdateLabel {
    fn from_params(p: &Params) -> ApiResult<Self> {
        const FIELDS: &[&str] = &["new_name", "color", "description", "priority"];
        if !FIELDS.iter().any(|f| p.has(f)) {
            return Err(ApiError::InvalidParam(format!(
                "{} are missing, at least one parameter must be provided",
                FIELDS.join(", ")
            )));
        }
        let new_name = p.string("new_name")?;
        if let Some(name) = &new_name {
            check_name(name)?;
        }
        let color = p
            .string("color")?
            .as_deref()
            .map(stored_color)
            .transpose()?;
        let description = match p.has("description") {
            true => Some(p.string_at_most("description", DESCRIPTION_MAX)?),
            false => None,
        };
        let priority = match p.has("priority") {
            true => Some(p.int("priority")?),
            false => None,
        };
        Ok(UpdateLabel {
            new_name,
            color,
            description,
            priority,
            shape: LabelShape::from_params(p)?,
        })
    }
}

/// The older form naming the label in the body (`label_id` or `name`).
struct LabelKey(String);

impl FromParams for LabelKey {
    fn from_params(p: &Params) -> ApiResult<Self> {
        match (p.string("label_id")?, p.string("name")?) {
            (Some(key), _) | (None, Some(key)) => Ok(LabelKey(key)),
            (None, None) => Err(ApiError::InvalidParam(
                "label_id, name are missing, exactly one parameter must be provided".into(),
            )),
        }
    }
}

async fn render(
    api: &Api,
    ctx: &ProjectCtx,
    label: &LabelRow,
    shape: &LabelShape,
) -> ApiResult<LabelView> {
    let counts = match (shape.0, issues_readable(ctx)) {
        (false, _) => None,
        // GitLab counts the issues the caller could list: none when the feature is off for them.
        (true, false) => Some(LabelCounts::default()),
        (true, true) => Some(
            api.db()
                .label_counts(label.id, confidential_counted(api, ctx))
                .await?,
        ),
    };
    Ok(views(api).label(label, counts, false))
}

/// The confidential issues a caller sees: all for Reporters and up, else their own.
fn confidential_counted(api: &Api, ctx: &ProjectCtx) -> ConfidentialIssues {
    if is_reporter(ctx) {
        return ConfidentialIssues::All;
    }
    match &api.caller {
        Some(caller) => ConfidentialIssues::Involving(caller.user.id),
        None => ConfidentialIssues::None,
    }
}

async fn label_of(api: &Api, ctx: &ProjectCtx, key: &str) -> ApiResult<LabelRow> {
    api.db()
        .project_label(ctx.project.id, key)
        .await?
        .ok_or(ApiError::NotFound("Label"))
}

async fn writable(api: &Api, id: &str) -> ApiResult<ProjectCtx> {
    api.user()?;
    let ctx = access::project(api, id).await?;
    ctx.require(AccessLevel::Reporter)?;
    Ok(ctx)
}

pub async fn list(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let query: LabelListQuery = api.input()?;
    let request = PageRequest::from_params(&api.params)?;
    let ctx = access::project(&api, &id).await?;
    let all = api
        .db()
        .project_labels(ctx.project.id, query.search.as_deref())
        .await?;
    let page = page_of(all, &request);
    let mut rendered = Vec::with_capacity(page.rows.len());
    for label in &page.rows {
        rendered.push(render(&api, &ctx, label, &query.shape).await?);
    }
    let views = Page {
        rows: rendered,
        total: page.total,
    };
    Ok(views.respond(&request, &api.origin, |l| l.detail.id, LabelView::clone))
}

pub async fn show(
    Path((id, label_id)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<LabelView>> {
    let shape: LabelShape = api.input()?;
    let ctx = access::project(&api, &id).await?;
    let label = label_of(&api, &ctx, &label_id).await?;
    Ok(Json(render(&api, &ctx, &label, &shape).await?))
}

pub async fn create(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    api.user()?;
    let CreateLabel {
        name,
        color,
        description,
        priority,
        shape,
    } = api.input()?;
    let ctx = writable(&api, &id).await?;
    let new = NewLabel {
        name: &name,
        color: &color,
        description: description.as_deref(),
        priority,
    };
    let label = labels::create(api.db(), ctx.project.id, new).await?;
    Ok((
        StatusCode::CREATED,
        Json(render(&api, &ctx, &label, &shape).await?),
    )
        .into_response())
}

async fn update_label(
    api: &Api,
    id: &str,
    key: &str,
    input: UpdateLabel,
) -> ApiResult<Json<LabelView>> {
    let ctx = writable(api, id).await?;
    let label = label_of(api, &ctx, key).await?;
    let changes = LabelChanges {
        name: input.new_name,
        color: input.color,
        description: input.description,
        priority: input.priority,
    };
    let label = labels::update(api.db(), label, changes).await?;
    Ok(Json(render(api, &ctx, &label, &input.shape).await?))
}

pub async fn update(
    Path((id, label_id)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<LabelView>> {
    api.user()?;
    let input = api.input()?;
    update_label(&api, &id, &label_id, input).await
}

pub async fn update_by_name(Path(id): Path<String>, api: Api) -> ApiResult<Json<LabelView>> {
    api.user()?;
    let LabelKey(key) = api.input()?;
    let input = api.input()?;
    update_label(&api, &id, &key, input).await
}

async fn delete_label(api: &Api, id: &str, key: &str) -> ApiResult<StatusCode> {
    let ctx = writable(api, id).await?;
    let label = label_of(api, &ctx, key).await?;
    labels::delete(api.db(), &label).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn remove(
    Path((id, label_id)): Path<(String, String)>,
    api: Api,
) -> ApiResult<StatusCode> {
    delete_label(&api, &id, &label_id).await
}

pub async fn remove_by_name(Path(id): Path<String>, api: Api) -> ApiResult<StatusCode> {
    api.user()?;
    let LabelKey(key) = api.input()?;
    delete_label(&api, &id, &key).await
}
