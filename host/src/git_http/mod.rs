//! Git over smart HTTP at GitLab's URLs: `GET /<project path>.git/info/refs?service=...`,
//! `POST /<project path>.git/git-upload-pack` and `.../git-receive-pack`. Project paths have
//! any depth, so the router's fallback dispatches here ([`route`]). The caller comes from HTTP
//! Basic credentials (`auth::git`), the decision from `git_access` (shared with SSH); then
//! `git` runs as a process (`git::smart_http`) with no database connection held, and after
//! an accepted push the project's default branch and statistics are brought up to date.

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use tokio::io::AsyncReadExt;
use tokio::task::JoinHandle;

use crate::auth::git::find_for_git_client;
use crate::context::ApiContext;
use crate::git::Repository;
use crate::git::smart_http::{self, Service};
use crate::git_access::{self, Abilities, Allowed, Denied, Transport};
use crate::http::error::ApiError;
use crate::http::request::Api;
use crate::request_origin::Origin;
use crate::services::projects::refresh_statistics;
use crate::store::TenantDb;
use crate::store::projects::ProjectChanges;

/// A request the fallback hands to git.
#[derive(Debug, PartialEq, Eq)]
pub enum GitRoute {
    /// `info/refs` of a project path without `.git`: GitLab redirects it to the `.git` URL.
    Redirect(String),
    InfoRefs {
        project: String,
    },
    Rpc {
        project: String,
        service: Service,
    },
}

/// The git route `method` and `path` name, if any.
pub fn route(method: &Method, path: &str, query: Option<&str>) -> Option<GitRoute> {
    let (prefix, rpc) = if let Some(prefix) = path.strip_suffix("/info/refs") {
        (method == Method::GET).then_some((prefix, None))?
    } else {
        let (prefix, name) = path.rsplit_once('/')?;
        let service = Service::from_name(name)?;
        (method == Method::POST).then_some((prefix, Some(service)))?
    };
    let inner = prefix.strip_prefix('/')?;
    let Some(project) = inner.strip_suffix(".git") else {
        // Only `info/refs` redirects; git then posts to the URL it was sent to.
        let valid = rpc.is_none() && inner.contains('/') && !inner.contains("//");
        return valid.then(|| {
            let query = query.map(|q| format!("?{q}")).unwrap_or_default();
            GitRoute::Redirect(format!("{prefix}.git/info/refs{query}"))
        });
    };
    if !project.contains('/') || project.split('/').any(str::is_empty) {
        return None;
    }
    let project = project.to_string();
    Some(match rpc {
        None => GitRoute::InfoRefs { project },
        Some(service) => GitRoute::Rpc { project, service },
    })
}

pub async fn serve(ctx: ApiContext, request: Request, route: GitRoute) -> Response {
    let (project, service) = match route {
        GitRoute::Redirect(location) => {
            return (
                StatusCode::MOVED_PERMANENTLY,
                [(header::LOCATION, location)],
            )
                .into_response();
        }
        GitRoute::InfoRefs { project } => {
            let service = query_param(request.uri().query(), "service");
            match service.as_deref().and_then(Service::from_name) {
                Some(service) => (project, service),
                // Dumb HTTP (no service) is not served; GitLab does not serve it either.
                None => return text(StatusCode::FORBIDDEN, "Unsupported service"),
            }
        }
        GitRoute::Rpc { project, service } => (project, service),
    };
    let (parts, body) = request.into_parts();
    match prepare(&ctx, &parts, &project, service).await {
        Ok(Prepared { repo, after_push }) => run(&parts, body, &repo, service, after_push).await,
        Err(response) => *response,
    }
}

/// What running git needs once the request is allowed.
struct Prepared {
    repo: Repository,
    after_push: Option<AfterPush>,
}

/// Authenticates and authorizes (`git_access`); every refusal is the response GitLab gives.
async fn prepare(
    ctx: &ApiContext,
    parts: &Parts,
    project: &str,
    service: Service,
) -> Result<Prepared, Box<Response>> {
    let origin = Origin::from_parts(&parts.headers, &parts.uri)
        .map_err(|_| api_error(ApiError::BadRequest("Host header is malformed".into())))?;
    let tenant = ctx.tenant_for(&origin);
    let settings = ctx.settings.get(&tenant.db).await.map_err(api_error)?;
    let git_caller = match basic_credentials(&parts.headers) {
        Some((login, password)) => {
            match find_for_git_client(&tenant.db, &ctx.tokens, &settings, &login, &password)
                .await
                .map_err(api_error)?
            {
                Some(found) => Some(found),
                None => return Err(Box::new(access_denied())),
            }
        }
        None => None,
    };
    let abilities = git_caller.as_ref().map(|g| Abilities {
        download: g.download,
        push: g.push,
    });
    let client_ip = crate::request_origin::client_ip(parts, &ctx.config.trusted_proxies);
    let caller = git_caller.map(|g| g.caller);
    let api = Api::for_git(ctx, tenant, origin, settings, caller, client_ip);
    let allowed = git_access::authorize(&api, Transport::Http, abilities, project, service)
        .await
        .map_err(|denied| {
            Box::new(match denied {
                Denied::CredentialsNeeded => access_denied(),
                Denied::NotFound => text(StatusCode::NOT_FOUND, git_access::NOT_FOUND),
                Denied::Forbidden(message) => text(StatusCode::FORBIDDEN, &message),
                Denied::NoRepository => text(StatusCode::NOT_FOUND, git_access::NO_REPOSITORY),
                Denied::Failed(error) => error.into_response(),
            })
        })?;
    let after_push = (service == Service::ReceivePack).then(|| AfterPush::new(&api, &allowed));
    Ok(Prepared {
        repo: allowed.repo,
        after_push,
    })
}

/// Runs git for an allowed request.
async fn run(
    parts: &Parts,
    body: Body,
    repo: &Repository,
    service: Service,
    after_push: Option<AfterPush>,
) -> Response {
    let protocol = parts
        .headers
        .get("git-protocol")
        .and_then(|v| v.to_str().ok())
        .and_then(smart_http::protocol)
        .map(str::to_string);
    if parts.method == Method::GET {
        return match smart_http::advertisement(repo, service, protocol.as_deref()).await {
            Ok(body) => git_response(service, "advertisement", Body::from(body)),
            Err(error) => api_error(error).into_response(),
        };
    }
    let gzip = parts
        .headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("gzip") || v.eq_ignore_ascii_case("x-gzip"));
    let body = body.into_data_stream();
    let rpc = match smart_http::rpc(repo, service, protocol.as_deref(), body, gzip) {
        Ok(rpc) => rpc,
        Err(error) => return api_error(error).into_response(),
    };
    // Runs after git exits even if the client has gone; the response ends after it.
    let exit = rpc.exit;
    let finished = tokio::spawn(async move {
        match exit.await {
            Ok(Some((status, _))) if status.success() => {
                if let Some(after) = after_push {
                    after.run().await;
                }
            }
            Ok(Some((status, stderr))) => {
                tracing::warn!(%status, stderr, "git service failed");
            }
            _ => tracing::warn!("git service could not be awaited"),
        }
    });
    git_response(service, "result", stream(rpc.output, finished))
}

/// Git's stdout as the response body, 64 KiB at a time; it ends once `finished` has.
fn stream(output: tokio::process::ChildStdout, finished: JoinHandle<()>) -> Body {
    let state = Some((output, finished));
    Body::from_stream(futures_util::stream::unfold(state, |state| async move {
        let (mut output, finished) = state?;
        let mut buf = vec![0u8; 64 * 1024];
        match output.read(&mut buf).await {
            Ok(0) => {
                let _ = finished.await;
                None
            }
            Ok(n) => {
                buf.truncate(n);
                Some((Ok(Bytes::from(buf)), Some((output, finished))))
            }
            Err(error) => Some((Err(error), None)),
        }
    }))
}

fn git_response(service: Service, kind: &str, body: Body) -> Response {
    let content_type = format!("application/x-{}-{kind}", service.name());
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache".to_string()),
        ],
        body,
    )
        .into_response()
}

/// What an accepted push changes besides the repository (also run after a push over SSH).
pub struct AfterPush {
    db: TenantDb,
    repo: Repository,
    project_id: i64,
    default_branch: Option<String>,
    actor: Option<i64>,
}

impl AfterPush {
    /// The work after a push of `allowed` by `api.caller`.
    pub fn new(api: &Api, allowed: &Allowed) -> AfterPush {
        AfterPush {
            db: api.tenant.db.clone(),
            repo: allowed.repo.clone(),
            project_id: allowed.project.id,
            default_branch: allowed.project.default_branch.clone(),
            actor: api.caller.as_ref().map(|c| c.user.id),
        }
    }

    pub async fn run(self) {
        if let Err(error) = self.update().await {
            tracing::warn!(
                error = format!("{error:#}"),
                "updating a project after a push failed"
            );
        }
    }

    /// The first push into a repository whose default branch it did not create makes one of
    /// its branches the default (`main`, `master`, else the first by name), as Gitaly's
    /// default branch lookup does; then the statistics (commit count, so `empty_repo`, size,
    /// languages) are read again.
    async fn update(self) -> anyhow::Result<()> {
        let mut branch = self.default_branch.clone().unwrap_or_default();
        if branch.is_empty() || !self.repo.branch_exists(&branch).await? {
            let branches = self.repo.branches().await?;
            let chosen = ["main", "master"]
                .into_iter()
                .find(|b| branches.iter().any(|name| name == b))
                .map(str::to_string)
                .or_else(|| branches.first().cloned());
            if let Some(chosen) = chosen {
                self.repo.set_head(&chosen).await?;
                if self.default_branch.as_deref() != Some(chosen.as_str()) {
                    let mut changes = ProjectChanges::default();
                    changes.set("default_branch", chosen.as_str());
                    self.db
                        .update_project(self.project_id, &changes, self.actor)
                        .await?;
                }
                branch = chosen;
            }
        }
        refresh_statistics(&self.db, &self.repo, self.project_id, &branch).await?;
        Ok(())
    }
}

/// `Authorization: Basic` login and password.
fn basic_credentials(headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, encoded) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (login, password) = decoded.split_once(':')?;
    Some((login.to_string(), password.to_string()))
}

fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    form_urlencoded::parse(query?.as_bytes())
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
}

fn text(status: StatusCode, message: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        message.to_string(),
    )
        .into_response()
}

/// 401 with the challenge that makes git ask for (or send) credentials.
fn access_denied() -> Response {
    let mut response = text(
        StatusCode::UNAUTHORIZED,
        "HTTP Basic: Access denied. If a password was provided for Git authentication, the \
         password was incorrect or you're required to use a token instead of a password. If a \
         token was provided, it was either incorrect, expired, or improperly scoped.",
    );
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"GitLab\""),
    );
    response
}

fn api_error(error: impl Into<ApiError>) -> Box<Response> {
    Box::new(error.into().into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_follow_gitlab_urls() {
        let upload = Service::UploadPack;
        assert_eq!(
            route(
                &Method::GET,
                "/a/b/c.git/info/refs",
                Some("service=git-upload-pack")
            ),
            Some(GitRoute::InfoRefs {
                project: "a/b/c".into()
            })
        );
        assert_eq!(
            route(&Method::POST, "/a/b.git/git-upload-pack", None),
            Some(GitRoute::Rpc {
                project: "a/b".into(),
                service: upload
            })
        );
        assert_eq!(
            route(
                &Method::GET,
                "/a/b/info/refs",
                Some("service=git-upload-pack")
            ),
            Some(GitRoute::Redirect(
                "/a/b.git/info/refs?service=git-upload-pack".into()
            ))
        );
        assert_eq!(route(&Method::POST, "/a/b/git-upload-pack", None), None);
        assert_eq!(route(&Method::GET, "/a/b.git/git-upload-pack", None), None);
        assert_eq!(route(&Method::GET, "/b.git/info/refs", None), None);
        assert_eq!(route(&Method::GET, "/a//b.git/info/refs", None), None);
        assert_eq!(route(&Method::POST, "/a/b.git/git-other", None), None);
    }

    #[test]
    fn basic_credentials_are_decoded() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Basic b2F1dGgyOnM6ZWNyZXQ="),
        );
        assert_eq!(
            basic_credentials(&headers),
            Some(("oauth2".into(), "s:ecret".into()))
        );
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer x"));
        assert_eq!(basic_credentials(&headers), None);
    }
}
