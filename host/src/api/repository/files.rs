//! Repository files: `GET/HEAD /projects/:id/repository/files/:file_path` (base64 content
//! and GitLab's `X-Gitlab-*` headers), `.../raw` (streamed), `.../blame` (the file's lines
//! grouped by the commit that last changed them), and `POST`/`PUT`/`DELETE`, each one commit
//! made by `services::commit_actions` with a single action.

use crate::http::routes::Doc;
use crate::views::repository_file::{self, BlameRangeView, FileView, FileWriteView};
use axum::http::Method;
use std::ops::RangeInclusive;
use std::time::Duration;

use crate::http::json::Json;
use axum::body::Body;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::{readable, writable};
use crate::context::ApiContext;
use crate::git::blame::line_count;
use crate::git::tree::{Entry, valid_path};
use crate::http::error::{ApiError, ApiResult};
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::http::routes::Router;
use crate::http::stream::stream_body;
use crate::services::commit_actions::{self, Action, ActionKind, CommitRequest};
use crate::services::push::Timeouts;

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
                .input::<BlameQuery>()
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
    let entry = blob_entry(&repo, &commit_id, &path).await?;
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

/// The file at `path` in `commit`, or `404 File Not Found`.
async fn blob_entry(repo: &super::Repo, commit_id: &str, path: &str) -> ApiResult<Entry> {
    repo.repo
        .entry(commit_id, path)
        .await?
        .filter(|e| e.kind == "blob")
        .ok_or(ApiError::NotFound("File"))
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

/// The largest file blamed: blame's work and answer grow with the file, and a file under it
/// is read whole to count its lines.
const MAX_BLAME_BYTES: usize = 1024 * 1024;
/// The most lines one blame answers; longer files are blamed a range at a time.
const MAX_BLAME_LINES: usize = 10_000;

/// What the blame endpoint takes: `ref`, and GitLab's optional `range[start]`/`range[end]`
/// (1-based lines, both required with `range`, each above 0).
struct BlameQuery {
    reference: String,
    range: Option<(usize, usize)>,
}

impl FromParams for BlameQuery {
    fn from_params(params: &Params) -> ApiResult<Self> {
        let reference = params.required_string("ref")?;
        let range = match params.object("range")? {
            Some(range) => Some((range_line(range, "start")?, range_line(range, "end")?)),
            None => None,
        };
        Ok(BlameQuery { reference, range })
    }
}

/// `range[key]` as Grape checks it: present, not blank, an integer, above 0.
fn range_line(range: &Map<String, Value>, key: &str) -> ApiResult<usize> {
    let name = format!("range[{key}]");
    let line = match range.get(key) {
        // Grape's `is missing`, as an invalid parameter: `ApiError::Missing` would document
        // `range[start]` as a required top-level parameter (`http::input_doc`).
        None | Some(Value::Null) => {
            return Err(ApiError::InvalidParam(format!("{name} is missing")));
        }
        Some(Value::String(text)) if text.trim().is_empty() => {
            return Err(ApiError::InvalidParam(format!("{name} is empty")));
        }
        Some(Value::Number(number)) => number.as_i64(),
        Some(Value::String(text)) => text.trim().parse().ok(),
        Some(_) => None,
    };
    let line = line.ok_or_else(|| ApiError::invalid(&name))?;
    usize::try_from(line)
        .ok()
        .filter(|line| *line > 0)
        .ok_or_else(|| ApiError::InvalidParam(format!("{name} does not have a valid value")))
}

/// The lines to blame in a file of `file_lines` lines: all (`None`), or `range`, its end
/// cut to the file's as `git blame -L` does. GitLab's 400s for a reversed range and a start
/// past the file (Gitaly's message), and 413 past [`MAX_BLAME_LINES`].
fn blame_lines(
    file_lines: usize,
    range: Option<(usize, usize)>,
) -> ApiResult<Option<RangeInclusive<usize>>> {
    let Some((start, end)) = range else {
        return match file_lines > MAX_BLAME_LINES {
            true => Err(ApiError::TooLarge(format!(
                "The file has more than {MAX_BLAME_LINES} lines: blame it in parts with range[start] and range[end]"
            ))),
            false => Ok(None),
        };
    };
    if start > end {
        return Err(bad_request(
            "range[start] must be less than or equal to range[end]",
        ));
    }
    if start > file_lines {
        return Err(bad_request("range is outside of the file length"));
    }
    let end = end.min(file_lines);
    if end - start >= MAX_BLAME_LINES {
        return Err(ApiError::TooLarge(format!(
            "A blame covers at most {MAX_BLAME_LINES} lines"
        )));
    }
    Ok(Some(start..=end))
}

fn bad_request(message: &str) -> ApiError {
    ApiError::Rejected(message.into())
}

/// How many lines the file `entry` has, or 413 when it is over [`MAX_BLAME_BYTES`] (read up
/// to one byte past it, which tells).
async fn file_line_count(repo: &super::Repo, entry: &Entry, timeout: Duration) -> ApiResult<usize> {
    let limit = MAX_BLAME_BYTES as u64 + 1;
    let content = repo.repo.blob_start(&entry.id, limit, timeout).await?;
    if content.len() > MAX_BLAME_BYTES {
        return Err(ApiError::TooLarge(format!(
            "The file is larger than {MAX_BLAME_BYTES} bytes: it cannot be blamed"
        )));
    }
    Ok(line_count(&content))
}

/// `GET .../files/:file_path/blame?ref=`: GitLab's blame ranges, `{commit, lines}` for each run
/// of lines last changed by the same commit. Files over [`MAX_BLAME_BYTES`] are refused; git
/// runs within `git_backend_timeout_medium`.
async fn blame(
    Path((id, path)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<Vec<BlameRangeView>>> {
    let query = api.input::<BlameQuery>()?;
    let path = checked_path(&path)?;
    let repo = readable(&api, &id).await?;
    let commit_id = repo.commit_id(&query.reference, "Commit").await?;
    let entry = blob_entry(&repo, &commit_id, &path).await?;
    let timeout = Timeouts::from_settings(&api.settings).medium;
    let file_lines = file_line_count(&repo, &entry, timeout).await?;
    let lines = blame_lines(file_lines, query.range)?;
    let blame = repo
        .repo
        .blame(&commit_id, &entry.path, lines, timeout)
        .await?;
    Ok(Json(repository_file::blame_ranges(&blame)))
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn status(result: ApiResult<Option<RangeInclusive<usize>>>) -> StatusCode {
        result.unwrap_err().status()
    }

    #[test]
    fn blamed_lines_are_the_file_or_a_range_within_the_caps() {
        assert_eq!(blame_lines(3, None).unwrap(), None);
        assert_eq!(blame_lines(0, None).unwrap(), None);
        assert_eq!(blame_lines(10, Some((2, 4))).unwrap(), Some(2..=4));
        // an end past the file is the file's end, as `git blame -L`
        assert_eq!(blame_lines(10, Some((9, 50))).unwrap(), Some(9..=10));
        assert_eq!(
            status(blame_lines(10, Some((4, 2)))),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            status(blame_lines(10, Some((11, 12)))),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            status(blame_lines(0, Some((1, 1)))),
            StatusCode::BAD_REQUEST
        );
        let cap = MAX_BLAME_LINES;
        assert_eq!(blame_lines(cap, None).unwrap(), None);
        assert_eq!(
            status(blame_lines(cap + 1, None)),
            StatusCode::PAYLOAD_TOO_LARGE
        );
        assert_eq!(
            blame_lines(cap + 5, Some((6, cap + 5))).unwrap(),
            Some(6..=cap + 5)
        );
        assert_eq!(
            status(blame_lines(cap + 5, Some((5, cap + 5)))),
            StatusCode::PAYLOAD_TOO_LARGE
        );
    }

    #[test]
    fn range_lines_are_checked_as_grape_checks_them() {
        let query = |values: Value| {
            let Value::Object(values) = values else {
                unreachable!()
            };
            BlameQuery::from_params(&Params::from_json_object(values)).map(|q| q.range)
        };
        let message = |values: Value| query(values).err().map(|e| e.to_string());
        assert_eq!(query(json!({"ref": "main"})).unwrap(), None);
        let range = json!({"ref": "main", "range": {"start": "2", "end": 5}});
        assert_eq!(query(range).unwrap(), Some((2, 5)));
        let cases = [
            (json!({"start": "1"}), "range[end] is missing"),
            (json!({"start": "x", "end": "2"}), "range[start] is invalid"),
            (
                json!({"start": "0", "end": "2"}),
                "range[start] does not have a valid value",
            ),
            (
                json!({"start": "1", "end": "-2"}),
                "range[end] does not have a valid value",
            ),
            (json!({"start": "", "end": "2"}), "range[start] is empty"),
            (json!("5"), "range is invalid"),
        ];
        for (range, expected) in cases {
            let got = message(json!({"ref": "main", "range": range}));
            assert_eq!(got.as_deref(), Some(expected));
        }
    }
}
