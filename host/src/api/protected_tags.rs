//! Protected tags: `GET/POST /projects/:id/protected_tags` and `GET/DELETE
//! /projects/:id/protected_tags/:name` (the name URL-encoded, wildcards included), as GitLab's
//! `API::ProtectedTags`: every route needs Maintainer. The push checks that enforce them are
//! `services::push`'s.

use crate::http::json::Json;
use crate::http::routes::Doc;
use axum::extract::Path;
use axum::http::Method;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::Value;

use super::access::{self, ProjectCtx};
use super::issues::page_of;
use crate::access_level::AccessLevel;
use crate::context::ApiContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::PageRequest;
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::http::routes::Router;
use crate::model::protected_tags::ProtectedTagRow;
use crate::services::protected_branches::{self, PUSH_AND_MERGE_LEVELS};
use crate::views::protected_branch::{ProtectedTagView, protected_tag};

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route(
            "/api/v4/projects/{id}/protected_tags",
            get(list).post(create),
        )
        .doc(
            Method::GET,
            Doc::new()
                .input::<PageRequest>()
                .answers_list::<ProtectedTagView>(),
        )
        .doc(
            Method::POST,
            Doc::new()
                .input::<CreateProtectedTag>()
                .answers::<ProtectedTagView>(),
        )
        .route(
            "/api/v4/projects/{id}/protected_tags/{name}",
            get(show).delete(remove),
        )
        .doc(Method::GET, Doc::new().answers::<ProtectedTagView>())
}

/// The project, for a Maintainer (or an administrator).
async fn maintained(api: &Api, id: &str) -> ApiResult<ProjectCtx> {
    api.user()?;
    let ctx = access::project(api, id).await?;
    ctx.require(AccessLevel::Maintainer)?;
    Ok(ctx)
}

async fn find(api: &Api, ctx: &ProjectCtx, name: &str) -> ApiResult<ProtectedTagRow> {
    api.db()
        .protected_tag(ctx.project.id, name)
        .await?
        .ok_or_else(|| ApiError::NotFoundMessage("404 Not Found".into()))
}

/// `POST .../protected_tags`: the name, and the level allowed to create it from
/// `create_access_level` or an `allowed_to_create` entry naming an access level (GitLab's
/// default: Maintainers). Entries naming users or groups are GitLab Premium's: invalid here.
struct CreateProtectedTag {
    name: String,
    create_access_level: i64,
}

impl FromParams for CreateProtectedTag {
    fn from_params(params: &Params) -> ApiResult<Self> {
        let name = params.required_string("name")?;
        let invalid_level =
            |name: &str| ApiError::InvalidParam(format!("{name} does not have a valid value"));
        let given = match params.int("create_access_level")? {
            Some(level) if !PUSH_AND_MERGE_LEVELS.contains(&level) => {
                return Err(invalid_level("create_access_level"));
            }
            other => other,
        };
        let listed = match params.raw("allowed_to_create") {
            None => None,
            Some(Value::Array(entries)) => {
                let levels = entries
                    .iter()
                    .map(|entry| {
                        let level = entry.as_object().and_then(|e| e.get("access_level"));
                        let level = level.and_then(|l| {
                            l.as_i64()
                                .or_else(|| l.as_str().and_then(|s| s.parse().ok()))
                        });
                        level
                            .filter(|l| PUSH_AND_MERGE_LEVELS.contains(l))
                            .ok_or_else(|| invalid_level("allowed_to_create"))
                    })
                    .collect::<ApiResult<Vec<i64>>>()?;
                // Several levels mean any of them may create: the lowest one that lets anyone
                // in is the rule ("No one" only when it is all there is).
                let anyone = levels.iter().copied().filter(|l| *l != 0).min();
                anyone.or(levels.first().copied())
            }
            Some(_) => return Err(invalid_level("allowed_to_create")),
        };
        Ok(CreateProtectedTag {
            name,
            create_access_level: given.or(listed).unwrap_or(AccessLevel::Maintainer.as_i64()),
        })
    }
}

pub async fn list(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let ctx = maintained(&api, &id).await?;
    let all = api.db().protected_tags(ctx.project.id).await?;
    let request = PageRequest::from_params(&api.params)?;
    Ok(page_of(all, &request).respond(&request, &api.origin, |t| t.id, protected_tag))
}

pub async fn show(
    Path((id, name)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<ProtectedTagView>> {
    let ctx = maintained(&api, &id).await?;
    Ok(Json(protected_tag(&find(&api, &ctx, &name).await?)))
}

pub async fn create(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let ctx = maintained(&api, &id).await?;
    let input: CreateProtectedTag = api.input()?;
    let actor = api.user()?.user.id;
    let created = protected_branches::create_tag(
        api.db(),
        ctx.project.id,
        &input.name,
        input.create_access_level,
        actor,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(protected_tag(&created))).into_response())
}

pub async fn remove(Path((id, name)): Path<(String, String)>, api: Api) -> ApiResult<StatusCode> {
    let ctx = maintained(&api, &id).await?;
    let tag = find(&api, &ctx, &name).await?;
    let actor = api.user()?.user.id;
    protected_branches::delete_tag(api.db(), &tag, actor).await?;
    Ok(StatusCode::NO_CONTENT)
}
