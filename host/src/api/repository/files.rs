//! Repository files: `GET/HEAD /projects/:id/repository/files/:file_path` (base64 content
//! and GitLab's `X-Gitlab-*` headers), `.../raw` (streamed), `.../blame` (the file's lines
//! grouped by the commit that last changed them), and `POST`/`PUT`/`DELETE`, each one commit
//! made by `services::commit_actions` with a single action.

use crate::http::routes::Doc;
use crate::views::repository::CommitView;
use crate::views::repository_file::{BlameRangeView, FileView, FileWriteView};
use axum::http::Method;
use std::collections::HashMap;

use axum::Json;
use axum::body::Body;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};

use super::{readable, writable};
use crate::context::ApiContext;
use crate::git::refs::Revision;
use crate::git::tree::{Entry, valid_path};
use crate::http::error::{ApiError, ApiResult};
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::http::routes::Router;
use crate::http::stream::stream_body;
use crate::services::commit_actions::{self, Action, ActionKind, CommitRequest};

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route(
            "/api/v4/projects/{id}/repository/files/{file_path}",
            get(show).post(create).put(update).delete(remove),
        )
        .doc(
            Method::GET,
            Doc::new().input::<RequiredRef>().answers::<FileView>(),
        )
        .doc(
            Method::POST,
            Doc::new().input::<FileWrite>().answers::<FileWriteView>(),
        )
        .doc(
            Method::PUT,
            Doc::new().input::<FileWrite>().answers::<FileWriteView>(),
        )
        .doc(Method::DELETE, Doc::new().input::<FileWrite>())
        .route(
            "/api/v4/projects/{id}/repository/files/{file_path}/raw",
            get(raw),
        )
        .doc(
            Method::GET,
            Doc::new()
                .input::<OptionalRef>()
                .answers_bytes(super::RAW_MEDIA_TYPES),
        )
        .route(
            "/api/v4/projects/{id}/repository/files/{file_path}/blame",
            get(blame),
        )
        .doc(
            Method::GET,
            Doc::new()
                .input::<RequiredRef>()
                .answers_list::<BlameRangeView>(),
        )
}

/// `ref` as the file and blame endpoints require it.
struct RequiredRef(String);

impl FromParams for RequiredRef {
    fn from_params(p: &Params) -> ApiResult<Self> {
        p.required_string("ref").map(RequiredRef)
    }
}

/// `ref` as the raw endpoint takes it: the default branch when blank or absent.
struct OptionalRef(Option<String>);

impl FromParams for OptionalRef {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(OptionalRef(p.string("ref")?.filter(|r| !r.is_empty())))
    }
}

/// GitLab's refusal of a path outside the repository.
fn checked_path(path: &str) -> ApiResult<String> {
    if valid_path(path) {
        Ok(path.to_string())
    } else {
        Err(ApiError::InvalidParam(
            "file_path should be a valid file path".into(),
        ))
    }
}

/// What a file read shows: its entry at the commit, the commit and the last commit that
/// changed it.
struct Found {
    entry: Entry,
    reference: String,
    commit_id: String,
    last_commit_id: String,
}

async fn find(
    api: &Api,
    id: &str,
    path: &str,
    reference: Option<&str>,
) -> ApiResult<(super::Repo, Found)> {
    let path = checked_path(path)?;
    let repo = readable(api, id).await?;
    let reference = reference
        .map(str::to_string)
        .or_else(|| repo.default_branch().map(str::to_string))
        .unwrap_or_else(|| "HEAD".into());
    let commit_id = repo.commit_id(&reference, "Commit").await?;
    let entry = repo
        .repo
        .entry(&commit_id, &path)
        .await?
        .filter(|e| e.kind == "blob")
        .ok_or(ApiError::NotFound("File"))?;
    let last_commit_id = repo
        .repo
        .last_commit_for(&commit_id, &path)
        .await?
        .unwrap_or_else(|| commit_id.clone());
    Ok((
        repo,
        Found {
            entry,
            reference,
            commit_id,
            last_commit_id,
        },
    ))
}

/// `GET/HEAD .../files/:file_path?ref=`.
async fn show(Path((id, path)): Path<(String, String)>, api: Api) -> ApiResult<Response> {
    let RequiredRef(reference) = api.input()?;
    let (repo, found) = find(&api, &id, &path, Some(&reference)).await?;
    let content = repo.repo.blob(&found.entry.id).await?;
    let file = FileView {
        file_name: found.entry.name().to_string(),
        file_path: found.entry.path.clone(),
        size: content.len() as u64,
        encoding: "base64",
        content: STANDARD.encode(&content),
        content_sha256: hex::encode(Sha256::digest(&content)),
        reference: found.reference,
        blob_id: found.entry.id.clone(),
        commit_id: found.commit_id,
        last_commit_id: found.last_commit_id,
        execute_filemode: found.entry.mode == "100755",
    };
    let headers = gitlab_headers(&file);
    Ok((headers, Json(file)).into_response())
}

/// The `X-Gitlab-*` headers GitLab sends with a file (what `HEAD` is for).
fn gitlab_headers(file: &FileView) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let fields = [
        ("x-gitlab-blob-id", file.blob_id.clone()),
        ("x-gitlab-commit-id", file.commit_id.clone()),
        ("x-gitlab-content-sha256", file.content_sha256.clone()),
        ("x-gitlab-encoding", file.encoding.to_string()),
        ("x-gitlab-file-name", file.file_name.clone()),
        ("x-gitlab-file-path", file.file_path.clone()),
        ("x-gitlab-last-commit-id", file.last_commit_id.clone()),
        ("x-gitlab-ref", file.reference.clone()),
        ("x-gitlab-size", file.size.to_string()),
        (
            "x-gitlab-execute-filemode",
            file.execute_filemode.to_string(),
        ),
    ];
    for (name, text) in fields {
        if let Ok(value) = HeaderValue::from_str(&text) {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
    headers
}

/// `GET .../files/:file_path/raw?ref=` (the default branch without `ref`).
async fn raw(Path((id, path)): Path<(String, String)>, api: Api) -> ApiResult<Response> {
    let OptionalRef(reference) = api.input()?;
    let (repo, found) = find(&api, &id, &path, reference.as_deref()).await?;
    let size = repo.repo.blob_size(&found.entry.id).await?.unwrap_or(0);
    let stdout = repo.repo.blob_stream(&found.entry.id)?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                "text/plain; charset=utf-8".to_string(),
            ),
            (header::CONTENT_LENGTH, size.to_string()),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_string()),
            (
                HeaderName::from_static("x-gitlab-blob-id"),
                found.entry.id.clone(),
            ),
            (
                HeaderName::from_static("x-gitlab-commit-id"),
                found.commit_id.clone(),
            ),
            (
                HeaderName::from_static("x-gitlab-last-commit-id"),
                found.last_commit_id.clone(),
            ),
        ],
        Body::from_stream(stream_body(stdout)),
    )
        .into_response())
}

/// `GET .../files/:file_path/blame?ref=`: GitLab's blame ranges, `{commit, lines}` for each run
/// of lines last changed by the same commit.
async fn blame(
    Path((id, path)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<Vec<BlameRangeView>>> {
    let RequiredRef(reference) = api.input()?;
    let (repo, found) = find(&api, &id, &path, Some(&reference)).await?;
    let mut ranges: Vec<(String, Vec<String>)> = Vec::new();
    for (sha, line) in repo.repo.blame(&found.commit_id, &found.entry.path).await? {
        match ranges.last_mut() {
            Some((last, lines)) if *last == sha => lines.push(line),
            _ => ranges.push((sha, vec![line])),
        }
    }
    let mut commits: HashMap<String, CommitView> = HashMap::new();
    let mut out = Vec::with_capacity(ranges.len());
    for (sha, lines) in ranges {
        if !commits.contains_key(&sha) {
            let revision = Revision::parse(&sha).ok_or(ApiError::NotFound("Commit"))?;
            let commit = repo
                .repo
                .commit(&revision)
                .await?
                .ok_or(ApiError::NotFound("Commit"))?;
            commits.insert(sha.clone(), repo.views().commit(&commit));
        }
        out.push(BlameRangeView {
            commit: commits[&sha].clone(),
            lines,
        });
    }
    Ok(Json(out))
}

/// What `POST`, `PUT` and `DELETE` take: `branch`, `commit_message`, `content` (with
/// `encoding` `text` or `base64`), `start_branch`, `author_*`, `execute_filemode`,
/// `last_commit_id`.
struct FileWrite {
    branch: String,
    commit_message: String,
    content: Option<Vec<u8>>,
    start_branch: Option<String>,
    author_name: Option<String>,
    author_email: Option<String>,
    execute_filemode: Option<bool>,
    last_commit_id: Option<String>,
}

impl FromParams for FileWrite {
    fn from_params(params: &Params) -> ApiResult<Self> {
        let branch = params.required_string("branch")?;
        let commit_message = params.required_string("commit_message")?;
        let content = match params.string("content")? {
            Some(content) => Some(decode(
                content,
                params.one_of("encoding", &["text", "base64"])?.as_deref(),
                "content",
            )?),
            None => None,
        };
        Ok(FileWrite {
            branch,
            commit_message,
            content,
            start_branch: params.string("start_branch")?.filter(|s| !s.is_empty()),
            author_name: params.string("author_name")?.filter(|s| !s.is_empty()),
            author_email: params.string("author_email")?.filter(|s| !s.is_empty()),
            execute_filemode: params.bool("execute_filemode")?,
            last_commit_id: params.string("last_commit_id")?.filter(|s| !s.is_empty()),
        })
    }
}

/// Content as sent: text, or base64 with `encoding=base64`.
pub fn decode(content: String, encoding: Option<&str>, field: &str) -> ApiResult<Vec<u8>> {
    match encoding {
        Some("base64") => STANDARD
            .decode(content.trim())
            .map_err(|_| ApiError::InvalidParam(format!("{field} is invalid"))),
        _ => Ok(content.into_bytes()),
    }
}

/// Makes the one-action commit for a file write.
async fn write(
    api: &Api,
    id: &str,
    path: &str,
    kind: ActionKind,
    input: FileWrite,
) -> ApiResult<()> {
    let path = checked_path(path)?;
    if matches!(kind, ActionKind::Create | ActionKind::Update) && input.content.is_none() {
        return Err(ApiError::Missing("content".into()));
    }
    let (repo, actor) = writable(
        api,
        id,
        Some("You are not allowed to push into this branch"),
    )
    .await?;
    let request = CommitRequest {
        branch: input.branch,
        start_branch: input.start_branch,
        start_sha: None,
        message: input.commit_message,
        actions: vec![Action {
            kind,
            file_path: path,
            previous_path: None,
            content: input.content,
            execute_filemode: input.execute_filemode,
            last_commit_id: input.last_commit_id,
        }],
        author_name: input.author_name,
        author_email: input.author_email,
    };
    commit_actions::commit(&repo.target(api, actor), &request).await?;
    Ok(())
}

async fn create(Path((id, path)): Path<(String, String)>, api: Api) -> ApiResult<Response> {
    let input = api.input::<FileWrite>()?;
    let branch = input.branch.clone();
    write(&api, &id, &path, ActionKind::Create, input).await?;
    let body = FileWriteView {
        file_path: path,
        branch,
    };
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

async fn update(
    Path((id, path)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<FileWriteView>> {
    let input = api.input::<FileWrite>()?;
    let branch = input.branch.clone();
    write(&api, &id, &path, ActionKind::Update, input).await?;
    Ok(Json(FileWriteView {
        file_path: path,
        branch,
    }))
}

async fn remove(Path((id, path)): Path<(String, String)>, api: Api) -> ApiResult<StatusCode> {
    let input = api.input::<FileWrite>()?;
    write(&api, &id, &path, ActionKind::Delete, input).await?;
    Ok(StatusCode::NO_CONTENT)
}
