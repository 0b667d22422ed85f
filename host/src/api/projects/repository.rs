//! A project's git repository (made with the project by `services::projects`): its
//! statistics and languages refreshed after the server changes it, and the endpoints
//! `GET /projects/:id/languages`, `GET /projects/:id/snapshot` (admin) and
//! `POST /projects/:id/housekeeping`.

use crate::http::json::Json;
use axum::body::Body;
use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::access_level::AccessLevel;
use crate::api::access;
use crate::git::{Languages, Repository};
use crate::http::error::{ApiError, ApiResult};
use crate::http::params::flag_input;
use crate::http::request::Api;
use crate::http::stream::stream_body;
use crate::jobs::{self, Job};
use crate::views::project_answers::{LanguagesView, StartedView};

/// The project's repository (`wiki`: its wiki repository).
pub fn repository(api: &Api, project_id: i64, wiki: bool) -> Repository {
    let data_dir = &api.ctx.config.storage.data_dir;
    if wiki {
        Repository::wiki(data_dir, api.tenant.id, project_id)
    } else {
        Repository::project(data_dir, api.tenant.id, project_id)
    }
}

/// `GET /projects/:id/languages`: shares of the default branch (`{}` when empty).
pub async fn languages(Path(id): Path<String>, api: Api) -> ApiResult<Json<LanguagesView>> {
    let ctx = access::project(&api, &id).await?;
    let Languages(shares) = Languages::from_json(&ctx.project.repository_languages);
    Ok(Json(LanguagesView(shares.into_iter().collect())))
}

flag_input!(
    /// `GET /projects/:id/snapshot`: the wiki's repository with `wiki=true`.
    pub(super) SnapshotQuery,
    "wiki",
    false
);

/// A snapshot is an uncompressed tar.
pub(super) const SNAPSHOT_MEDIA_TYPE: &str = "application/x-tar";

/// `GET /projects/:id/snapshot`: administrators only; an uncompressed tar of the bare
/// repository (`wiki=true`: the wiki's, 404 when there is none).
pub async fn snapshot(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    api.user()?;
    let ctx = access::project(&api, &id).await?;
    api.admin()?;
    let SnapshotQuery(wiki) = api.input()?;
    let repo = repository(&api, ctx.project.id, wiki);
    if !repo.exists().await {
        return Err(ApiError::NotFoundMessage("404 Not Found".into()));
    }
    let stdout = repo.tar()?;
    let filename = format!(
        "{}-{}-snapshot.tar",
        ctx.namespace.full_path.replace('/', "-"),
        ctx.project.path
    );
    Ok((
        [
            (header::CONTENT_TYPE, SNAPSHOT_MEDIA_TYPE.to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{filename}\""),
            ),
        ],
        Body::from_stream(stream_body(stdout)),
    )
        .into_response())
}

/// `POST /projects/:id/housekeeping`: maintainers; `git gc` runs in the background and the
/// answer is 201 at once.
pub async fn housekeeping(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    api.user()?;
    let ctx = access::project(&api, &id).await?;
    ctx.require(AccessLevel::Maintainer)?;
    let housekeeping = Job::Housekeeping {
        project_id: ctx.project.id,
    };
    jobs::enqueue(&api.ctx, api.db(), &housekeeping).await?;
    Ok((StatusCode::CREATED, Json(StartedView {})).into_response())
}
