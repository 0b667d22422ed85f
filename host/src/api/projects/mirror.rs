//! `POST /projects/:id/mirror/pull`: fetches a pull mirror again (`services::imports`).

use crate::http::json::Json;
use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::access_level::AccessLevel;
use crate::api::access;
use crate::http::error::{ApiError, ApiResult};
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::services::imports::{check_import_url, schedule_fetch};
use crate::services::projects;
use crate::store::projects::ProjectChanges;
use crate::views::project_answers::StartedView;

/// `POST /projects/:id/mirror/pull`: `import_url` when not blank.
pub(super) struct PullMirror {
    import_url: Option<String>,
}

impl FromParams for PullMirror {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(PullMirror {
            import_url: p.string("import_url")?.filter(|u| !u.trim().is_empty()),
        })
    }
}

/// `POST /projects/:id/mirror/pull`: maintainers; with `import_url` the project becomes a
/// pull mirror of it. 400 "The project is not mirrored" without one.
pub async fn pull(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    api.user()?;
    let PullMirror { import_url } = api.input()?;
    let ctx = access::project(&api, &id).await?;
    ctx.require(AccessLevel::Maintainer)?;
    let mut project = ctx.project.clone();
    if let Some(url) = import_url {
        check_import_url(&api.ctx, &api.settings, &url).await?;
        let mut settings = project.settings_json();
        settings.insert("mirror".into(), json!(true));
        let mut changes = ProjectChanges::default();
        changes.set("import_url", url.trim());
        changes.set("settings", serde_json::Value::Object(settings).to_string());
        project = projects::update(api.db(), project.id, &changes, api.user()?.user.id).await?;
    }
    let mirrored = project.settings_json().get("mirror") == Some(&json!(true));
    let Some(url) = project.import_url.clone().filter(|_| mirrored) else {
        return Err(ApiError::Rejected("The project is not mirrored".into()));
    };
    schedule_fetch(api.db(), &project, url)
        .await?
        .queue(&api.ctx, api.db())
        .await?;
    Ok(Json(StartedView {}).into_response())
}
