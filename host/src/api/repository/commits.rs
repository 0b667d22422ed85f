//! Commits: `GET /projects/:id/repository/commits` (`ref_name`, `since`, `until`, `path`,
//! `all`, `first_parent`, `with_stats`), `POST` with several actions in one commit,
//! `GET .../commits/:sha` (with stats), `.../:sha/diff` and `.../:sha/refs`.

use crate::http::json::Json;
use crate::http::routes::Doc;
use crate::views::repository::{CommitDetail, CommitView};
use crate::views::repository_file::CommitRefView;
use axum::extract::Path;
use axum::http::Method;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Map, Value};

use super::files::decode;
use super::{page, readable, revision, writable};
use crate::context::ApiContext;
use crate::git::commits::LogQuery;
use crate::git::tree::valid_path;
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::{Page, PageRequest};
use crate::http::params::{FromParams, Params, flag_input, parse_bool};
use crate::http::request::Api;
use crate::http::routes::Router;
use crate::services::commit_actions::{self, Action, ActionKind, CommitRequest};
use crate::services::diffs::{self, Presentation};

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route(
            "/api/v4/projects/{id}/repository/commits",
            get(list).post(create),
        )
        .doc(
            Method::GET,
            Doc::new()
                .input::<CommitListQuery>()
                .input::<PageRequest>()
                .answers_list::<CommitView>(),
        )
        .doc(
            Method::POST,
            Doc::new().input::<CreateCommit>().answers::<CommitDetail>(),
        )
        .route("/api/v4/projects/{id}/repository/commits/{sha}", get(show))
        .doc(
            Method::GET,
            Doc::new().input::<CommitStats>().answers::<CommitDetail>(),
        )
        .route(
            "/api/v4/projects/{id}/repository/commits/{sha}/diff",
            get(diff),
        )
        .doc(
            Method::GET,
            Doc::new()
                .input::<PageRequest>()
                .answers_list::<crate::views::repository::DiffView>(),
        )
        .route(
            "/api/v4/projects/{id}/repository/commits/{sha}/refs",
            get(refs),
        )
        .doc(
            Method::GET,
            Doc::new()
                .reads(refs_type)
                .input::<PageRequest>()
                .answers_list::<CommitRefView>(),
        )
}

struct CommitListQuery {
    ref_name: Option<String>,
    since: Option<String>,
    until: Option<String>,
    path: Option<String>,
    all: bool,
    first_parent: bool,
    with_stats: bool,
}

impl FromParams for CommitListQuery {
    fn from_params(params: &Params) -> ApiResult<Self> {
        let iso = |name: &str| -> ApiResult<Option<String>> {
            Ok(params.datetime(name)?.map(|d| d.to_rfc3339()))
        };
        let path = params.string("path")?.filter(|p| !p.is_empty());
        if path
            .as_deref()
            .is_some_and(|p| !valid_path(p.trim_matches('/')))
        {
            return Err(ApiError::InvalidParam(
                "path should be a valid file path".into(),
            ));
        }
        Ok(CommitListQuery {
            ref_name: params.string("ref_name")?.filter(|r| !r.is_empty()),
            since: iso("since")?,
            until: iso("until")?,
            path: path.map(|p| p.trim_matches('/').to_string()),
            all: params.bool("all")?.unwrap_or(false),
            first_parent: params.bool("first_parent")?.unwrap_or(false),
            with_stats: params.bool("with_stats")?.unwrap_or(false),
        })
    }
}

/// Newest first; an unknown `ref_name` is an empty list, as in GitLab.
async fn list(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let query = api.input::<CommitListQuery>()?;
    let mut request = PageRequest::from_params(&api.params)?;
    request.keyset = false;
    let repo = readable(&api, &id).await?;
    let name = query
        .ref_name
        .clone()
        .or_else(|| repo.default_branch().map(str::to_string))
        .unwrap_or_else(|| "HEAD".into());
    let revision = (!query.all)
        .then(|| crate::git::refs::Revision::parse(&name))
        .flatten();
    let known = match &revision {
        Some(r) => repo.repo.resolve_commit(r).await?.is_some(),
        None => query.all,
    };
    let commits = if known {
        repo.repo
            .log(&LogQuery {
                revision: revision.as_ref(),
                all: query.all,
                path: query.path.as_deref(),
                since: query.since.clone(),
                until: query.until.clone(),
                first_parent: query.first_parent,
                skip: request.offset(),
                limit: request.per_page + 1,
                ..LogQuery::default()
            })
            .await?
    } else {
        Vec::new()
    };
    let views = repo.views();
    let mut rows = Vec::with_capacity(commits.len());
    for commit in &commits {
        rows.push(if query.with_stats {
            views.commit_with_stats(commit, repo.repo.stats(&commit.id).await?)
        } else {
            views.commit(commit)
        });
    }
    let page = Page { rows, total: None };
    Ok(page.respond(&request, &api.origin, |_| 0, CommitView::clone))
}

async fn show(Path((id, sha)): Path<(String, String)>, api: Api) -> ApiResult<Json<CommitDetail>> {
    let CommitStats(with_stats) = api.input()?;
    let repo = readable(&api, &id).await?;
    let commit = repo
        .repo
        .commit(&revision(&sha, "Commit")?)
        .await?
        .ok_or(ApiError::NotFound("Commit"))?;
    let stats = match with_stats {
        true => Some(repo.repo.stats(&commit.id).await?),
        false => None,
    };
    Ok(Json(repo.views().commit_detail(&commit, stats)))
}

async fn diff(Path((id, sha)): Path<(String, String)>, api: Api) -> ApiResult<Response> {
    let repo = readable(&api, &id).await?;
    let commit = repo.commit_id(&sha, "Commit").await?;
    let diffs = diffs::read(
        &repo.repo,
        &api.settings,
        None,
        &commit,
        Presentation::Expanded,
    )
    .await?;
    let views = diffs.files.iter().map(crate::views::repository::diff);
    page(&api, views.collect())
}

/// `GET .../refs`' `type`: branch, tag or all (the default).
fn refs_type(params: &Params) -> ApiResult<String> {
    Ok(params
        .one_of("type", &["branch", "tag", "all"])?
        .unwrap_or_else(|| "all".into()))
}

flag_input!(
    /// `GET .../commits/:sha`' `stats`: with the commit's line counts (the default).
    CommitStats,
    "stats",
    true
);

async fn refs(Path((id, sha)): Path<(String, String)>, api: Api) -> ApiResult<Response> {
    let kind = refs_type(&api.params)?;
    let repo = readable(&api, &id).await?;
    let commit = repo.commit_id(&sha, "Commit").await?;
    let items = repo
        .repo
        .refs_containing(&commit)
        .await?
        .into_iter()
        .filter(|(k, _)| kind == "all" || *k == kind)
        .map(|(kind, name)| CommitRefView { kind, name })
        .collect();
    page(&api, items)
}

/// `POST .../commits`: `branch`, `commit_message`, `actions[]`, `start_branch`, `start_sha`,
/// `author_*`, `stats`.
struct CreateCommit {
    request: CommitRequest,
    stats: bool,
}

impl FromParams for CreateCommit {
    fn from_params(params: &Params) -> ApiResult<Self> {
        let branch = params.required_string("branch")?;
        let message = params.required_string("commit_message")?;
        let actions = match params.raw("actions") {
            Some(Value::Array(items)) if !items.is_empty() => items
                .iter()
                .enumerate()
                .map(|(i, item)| action(i, item))
                .collect::<ApiResult<Vec<_>>>()?,
            Some(_) => return Err(ApiError::invalid("actions")),
            None => return Err(ApiError::Missing("actions".into())),
        };
        Ok(CreateCommit {
            request: CommitRequest {
                branch,
                start_branch: params.string("start_branch")?.filter(|s| !s.is_empty()),
                start_sha: params.string("start_sha")?.filter(|s| !s.is_empty()),
                message,
                actions,
                author_name: params.string("author_name")?.filter(|s| !s.is_empty()),
                author_email: params.string("author_email")?.filter(|s| !s.is_empty()),
            },
            stats: params.bool("stats")?.unwrap_or(true),
        })
    }
}

/// One entry of `actions`, with Grape's messages naming it `actions[i][field]`.
fn action(index: usize, item: &Value) -> ApiResult<Action> {
    let name = |field: &str| format!("actions[{index}][{field}]");
    let Value::Object(fields) = item else {
        return Err(ApiError::invalid(&format!("actions[{index}]")));
    };
    let text = |field: &str| -> ApiResult<Option<String>> {
        match fields.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(_) => Err(ApiError::invalid(&name(field))),
        }
    };
    let kind = text("action")?.ok_or_else(|| ApiError::Missing(name("action")))?;
    let kind = ActionKind::parse(&kind).ok_or_else(|| {
        ApiError::InvalidParam(format!("{} does not have a valid value", name("action")))
    })?;
    let file_path = text("file_path")?.ok_or_else(|| ApiError::Missing(name("file_path")))?;
    let previous_path = text("previous_path")?;
    for path in std::iter::once(&file_path).chain(&previous_path) {
        if !valid_path(path) {
            return Err(ApiError::InvalidParam(format!(
                "{} should be a valid file path",
                name("file_path")
            )));
        }
    }
    if kind == ActionKind::Move && previous_path.is_none() {
        return Err(ApiError::Missing(name("previous_path")));
    }
    let encoding = text("encoding")?;
    if encoding
        .as_deref()
        .is_some_and(|e| e != "text" && e != "base64")
    {
        return Err(ApiError::InvalidParam(format!(
            "{} does not have a valid value",
            name("encoding")
        )));
    }
    let content = match text("content")? {
        Some(content) => Some(decode(content, encoding.as_deref(), &name("content"))?),
        None => None,
    };
    Ok(Action {
        kind,
        file_path,
        previous_path,
        content,
        execute_filemode: flag(fields, "execute_filemode")
            .map_err(|_| ApiError::invalid(&name("execute_filemode")))?,
        last_commit_id: text("last_commit_id")?.filter(|s| !s.is_empty()),
    })
}

/// A boolean field of an action, as Grape coerces it.
fn flag(fields: &Map<String, Value>, field: &str) -> Result<Option<bool>, ()> {
    match fields.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) => parse_bool(s).map(Some).ok_or(()),
        Some(_) => Err(()),
    }
}

async fn create(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let input = api.input::<CreateCommit>()?;
    let (repo, actor) = writable(
        &api,
        &id,
        Some("You are not allowed to push into this branch"),
    )
    .await?;
    let commit = commit_actions::commit(&repo.target(&api, actor), &input.request).await?;
    let stats = match input.stats {
        true => Some(repo.repo.stats(&commit.id).await?),
        false => None,
    };
    let body = repo.views().commit_detail(&commit, stats);
    Ok((StatusCode::CREATED, Json(body)).into_response())
}
