//! Git over smart HTTP at GitLab's URLs: `GET /<project path>.git/info/refs?service=...`,
//! `POST /<project path>.git/git-upload-pack` and `.../git-receive-pack`. Project paths have
//! any depth, so the router's fallback dispatches here ([`route`]). The caller comes from HTTP
//! Basic credentials (`auth::git`), the decision from `git_access` (shared with SSH); then
//! `git` runs as a process (`git::smart_http`) with no database connection held. A push runs
//! as a session of `services::push` (started by `git_access::Allowed::start_push`): its
//! `pre-receive` decides (protected branches, push rules) and its `finish` records what the
//! push changed once git has exited.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use futures_util::StreamExt;
use tokio::io::AsyncReadExt;
use tokio::process::ChildStdout;
use tokio::task::JoinHandle;

use crate::auth::git::find_for_git_client;
use crate::context::ApiContext;
use crate::git::Repository;
use crate::git::smart_http::{self, Service};
use crate::git_access::slots::{Slot, TOO_MANY, TOO_MANY_PUSHES};
use crate::git_access::transfers::{Clock, Marked};
use crate::git_access::{self, Abilities, Denied, GitClient, Transport};
use crate::http::error::ApiError;
use crate::http::resolve::RequestTenant;
use crate::services::push::Push;

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
        // Only `info/refs` redirects; git then posts to the URL it was sent to. Only a path
        // of project path segments is redirected: `//host/...` or `/\\host/...` would make
        // the Location point at another site.
        let valid = rpc.is_none() && git_access::plain_project_path(inner);
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
    let (mut parts, body) = request.into_parts();
    match prepare(&ctx, &mut parts, &project, service).await {
        Ok(prepared) => run(&ctx, &parts, body, prepared, service).await,
        Err(response) => *response,
    }
}

/// What running git needs once the request is allowed.
struct Prepared {
    repo: Repository,
    /// The push session of a `git-receive-pack` request.
    push: Option<Push>,
    /// The tenant's slot a fetch or a push holds while git runs.
    slot: Option<Slot>,
}

/// Authenticates and authorizes (`git_access`); every refusal is the response GitLab gives.
async fn prepare(
    ctx: &ApiContext,
    parts: &mut Parts,
    project: &str,
    service: Service,
) -> Result<Prepared, Box<Response>> {
    let resolved = RequestTenant::of(ctx, parts);
    resolved.origin().map_err(api_error)?;
    let settings = resolved.settings(ctx).await.map_err(api_error)?;
    let tenant = resolved.tenant;
    let client_ip = crate::request_origin::client_ip(parts, &ctx.config.trusted_proxies);
    // GitLab's Rack::Attack ban of an address after repeated failed git authentications.
    if ctx.limiter.git_auth_banned(&tenant.db, client_ip).await {
        return Err(Box::new(text(StatusCode::FORBIDDEN, "Forbidden\n")));
    }
    let git_caller = match basic_credentials(&parts.headers) {
        Some((login, password)) => {
            match find_for_git_client(&tenant.db, &ctx.tokens, &settings, &login, &password)
                .await
                .map_err(api_error)?
            {
                Some(found) => Some(found),
                None => {
                    ctx.limiter.git_auth_failed(&tenant.db, client_ip).await;
                    return Err(Box::new(access_denied()));
                }
            }
        }
        None => None,
    };
    let abilities = git_caller.as_ref().map(|g| Abilities {
        download: g.download,
        push: g.push,
    });
    let caller = git_caller.map(|g| g.caller);
    let tenant_id = tenant.db.tenant_id();
    let client = GitClient {
        ctx: ctx.clone(),
        tenant,
        settings,
        caller,
        client_ip,
    };
    let scope = client.scope();
    let allowed = git_access::authorize(&scope, Transport::Http, abilities, project, service)
        .await
        .map_err(|denied| {
            Box::new(match denied {
                Denied::CredentialsNeeded => access_denied(),
                Denied::NotFound => text(StatusCode::NOT_FOUND, git_access::NOT_FOUND),
                Denied::Forbidden(message) => text(StatusCode::FORBIDDEN, &message),
                Denied::NoRepository => text(StatusCode::NOT_FOUND, git_access::NO_REPOSITORY),
                Denied::Failed(refusal) => ApiError::from(refusal).into_response(),
            })
        })?;
    // `info/refs` only advertises: the fetch or push itself is the POST, and that is what
    // takes a slot and a push session.
    if parts.method != Method::POST {
        return Ok(Prepared {
            repo: allowed.repo,
            push: None,
            slot: None,
        });
    }
    let transfers = &ctx.transfers;
    let (push, slot) = match service {
        Service::ReceivePack => {
            let (Some(push), Some(caller)) = (allowed.start_push(&scope), scope.caller) else {
                return Err(Box::new(access_denied()));
            };
            match transfers.pushes.acquire(tenant_id, caller.user.id).await {
                Some(slot) => (Some(push), slot),
                None => {
                    return Err(Box::new(text(
                        StatusCode::TOO_MANY_REQUESTS,
                        TOO_MANY_PUSHES,
                    )));
                }
            }
        }
        Service::UploadPack => match transfers.fetches.acquire(tenant_id, client_ip).await {
            Some(slot) => (None, slot),
            None => return Err(Box::new(text(StatusCode::TOO_MANY_REQUESTS, TOO_MANY))),
        },
    };
    Ok(Prepared {
        repo: allowed.repo,
        push,
        slot: Some(slot),
    })
}

/// Runs git for an allowed request. A POST's transfer is stopped at its deadline or once it
/// has moved nothing for the idle time (`git_access::transfers`), however far its response
/// has streamed.
async fn run(
    ctx: &ApiContext,
    parts: &Parts,
    body: Body,
    prepared: Prepared,
    service: Service,
) -> Response {
    let Prepared { repo, push, slot } = prepared;
    let protocol = parts
        .headers
        .get("git-protocol")
        .and_then(|v| v.to_str().ok())
        .and_then(smart_http::protocol)
        .map(str::to_string);
    if parts.method == Method::GET {
        return match smart_http::advertisement(&repo, service, protocol.as_deref()).await {
            Ok(body) => git_response(service, "advertisement", Body::from(body)),
            Err(error) => api_error(error).into_response(),
        };
    }
    let gzip = parts
        .headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("gzip") || v.eq_ignore_ascii_case("x-gzip"));
    let clock = ctx.transfers.clock();
    let body = {
        let marks = clock.clone();
        body.into_data_stream()
            .inspect(move |_| marks.mark())
            .take_until(clock.clone().expired())
    };
    let options = push.as_ref().map(Push::receive_options);
    let tap = push.as_ref().and_then(Push::commands_tap);
    let rpc = match smart_http::rpc(
        &repo,
        service,
        protocol.as_deref(),
        options.as_ref(),
        body,
        gzip,
        tap,
    ) {
        Ok(rpc) => rpc,
        Err(error) => return api_error(error).into_response(),
    };
    // Runs after git exits even if the client has gone; the response ends after it.
    let mut exit = rpc.exit;
    let expired = clock.clone().expired();
    let finished = tokio::spawn(async move {
        // The slot is free once git has exited.
        let _slot = slot;
        tokio::select! {
            exited = &mut exit => match exited {
                Ok(Some((status, _))) if status.success() => {}
                // Mostly a client that went away or sent a broken request: not the
                // operator's concern, and a warning each would let clients flood the log.
                Ok(Some((status, stderr))) => {
                    tracing::debug!(%status, stderr, "git service failed");
                }
                _ => tracing::warn!("git service could not be awaited"),
            },
            () = expired => {
                // Dropping the task's child kills git (`kill_on_drop`).
                exit.abort();
                let _ = exit.await;
                tracing::info!("git transfer stopped: past its deadline or idle");
            }
        }
        // Whatever git's status: finish records only the updates git did apply.
        if let Some(push) = push {
            push.finish().await;
        }
    });
    git_response(service, "result", stream(rpc.output, clock, finished))
}

/// Git's stdout as the response body, 64 KiB at a time, each piece marking the transfer's
/// `clock`; it ends once `finished` has.
fn stream(output: ChildStdout, clock: Arc<Clock>, finished: JoinHandle<()>) -> Body {
    let output = Marked::new(output, clock);
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
        for hostile in [
            "//evil.example/x/info/refs",
            "/\\evil.example/x/info/refs",
            "/a\\b/c/info/refs",
            "/%2F%2Fevil.example/x/info/refs",
        ] {
            assert_eq!(route(&Method::GET, hostile, None), None, "{hostile}");
        }
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
