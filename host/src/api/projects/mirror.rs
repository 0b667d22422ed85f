//! Repository imports and pull mirrors: `import_url` on create starts an import, and
//! `POST /projects/:id/mirror/pull` fetches the mirror again. The URL is checked against the
//! outbound address policy when stored and again before every fetch (with the checked
//! addresses pinned for git's HTTP client, so a second DNS answer cannot redirect it).

use std::net::SocketAddr;

use axum::Json;
use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::repository::{self, default_branch, spawn_logged};
use crate::access_level::AccessLevel;
use crate::api::access;
use crate::http::error::{ApiError, ApiResult};
use crate::http::request::Api;
use crate::model::projects::ProjectRow;
use crate::outbound::{AddressPolicy, Unresolved};
use crate::services::projects::refresh_statistics;
use crate::store::projects::ProjectChanges;

/// Schemes GitLab accepts for imports and pull mirrors over the network.
const SCHEMES: &[&str] = &["http", "https", "git"];

/// Validates an `import_url` before it is stored: 400 `{"import_url": ["is blocked: ..."]}`.
pub async fn check_import_url(api: &Api, url: &str) -> ApiResult<()> {
    let blocked = |reason: String| ApiError::field("import_url", format!("is blocked: {reason}"));
    let parsed = url::Url::parse(url.trim()).map_err(|_| blocked("URI is invalid".into()))?;
    AddressPolicy::for_hooks_and_services(&api.ctx.config.outbound_allow_networks, &api.settings)
        .check(&parsed, SCHEMES, Unresolved::Allow)
        .await
        .map_err(|reason| blocked(reason.to_string()))?;
    Ok(())
}

/// `-c` options for fetching `url` from the checked `addresses`: only network protocols, no
/// redirects, and curl told which address each host name resolves to.
fn fetch_config(url: &url::Url, addresses: &[SocketAddr]) -> Vec<String> {
    let mut config = vec![
        "protocol.allow=never".to_string(),
        "protocol.http.allow=always".to_string(),
        "protocol.https.allow=always".to_string(),
        "protocol.git.allow=always".to_string(),
        "http.followRedirects=false".to_string(),
    ];
    if let (Some(host), Some(address)) = (url.host_str(), addresses.first()) {
        let ip = match address.ip() {
            std::net::IpAddr::V6(v6) => format!("[{v6}]"),
            v4 => v4.to_string(),
        };
        config.push(format!(
            "http.curloptResolve={host}:{}:{ip}",
            address.port()
        ));
    }
    config
}

/// A fetch that has been scheduled and starts with [`PendingFetch::start`] (after the
/// answer showing `scheduled` is ready, so the background work cannot overtake it).
pub struct PendingFetch(std::pin::Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>>);

impl PendingFetch {
    pub fn start(self) {
        spawn_logged("import", self.0);
    }
}

/// Marks the project `scheduled` and prepares fetching `url` into its repository in the
/// background; `import_status` ends `finished`, or `failed` with `import_error`.
pub async fn schedule_fetch(
    api: &Api,
    project: &ProjectRow,
    url: String,
) -> ApiResult<PendingFetch> {
    let db = api.db().clone();
    db.set_import_status(project.id, "scheduled", None).await?;
    let policy = AddressPolicy::for_hooks_and_services(
        &api.ctx.config.outbound_allow_networks,
        &api.settings,
    );
    let repo = repository::repository(api, project.id, false);
    let branch = default_branch(project);
    let id = project.id;
    Ok(PendingFetch(Box::pin(async move {
        db.set_import_status(id, "started", None).await?;
        let fetched = async {
            let parsed = url::Url::parse(url.trim())?;
            let addresses = policy
                .check(&parsed, SCHEMES, Unresolved::Refuse)
                .await
                .map_err(|reason| anyhow::anyhow!("Import url is blocked: {reason}"))?;
            repo.ensure(&branch).await?;
            repo.fetch(url.trim(), None, &fetch_config(&parsed, &addresses))
                .await?;
            if repo.branch_exists(&branch).await? {
                repo.set_head(&branch).await?;
            }
            refresh_statistics(&db, &repo, id, &branch).await?;
            anyhow::Ok(())
        }
        .await;
        match fetched {
            Ok(()) => db.set_import_status(id, "finished", None).await?,
            Err(error) => {
                // never show credentials from the URL
                let message = format!("{error:#}").replace(url.trim(), "[import url]");
                db.set_import_status(id, "failed", Some(&message)).await?
            }
        }
        Ok(())
    })))
}

/// `POST /projects/:id/mirror/pull`: maintainers; with `import_url` the project becomes a
/// pull mirror of it. 400 "The project is not mirrored" without one.
pub async fn pull(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    api.user()?;
    let ctx = access::project(&api, &id).await?;
    ctx.require(AccessLevel::Maintainer)?;
    let mut project = ctx.project.clone();
    if let Some(url) = api
        .params
        .string("import_url")?
        .filter(|u| !u.trim().is_empty())
    {
        check_import_url(&api, &url).await?;
        let mut settings = project.settings_json();
        settings.insert("mirror".into(), json!(true));
        let mut changes = ProjectChanges::default();
        changes.set("import_url", url.trim());
        changes.set("settings", serde_json::Value::Object(settings).to_string());
        project = api
            .db()
            .update_project(project.id, &changes, Some(api.user()?.user.id))
            .await?
            .ok_or(ApiError::NotFound("Project"))?;
    }
    let mirrored = project.settings_json().get("mirror") == Some(&json!(true));
    let Some(url) = project.import_url.clone().filter(|_| mirrored) else {
        return Err(ApiError::Custom(
            axum::http::StatusCode::BAD_REQUEST,
            json!({ "message": "The project is not mirrored" }),
        ));
    };
    schedule_fetch(&api, &project, url).await?.start();
    Ok(Json(json!({})).into_response())
}
