//! `GET /projects/:id/repository/tree`: `path`, `ref` (the default branch), `recursive`;
//! offset pages, or keyset pages (`pagination=keyset`) continued from `page_token`, the id
//! of the last entry of the previous page, as GitLab does.

use crate::http::json::Json;
use crate::http::routes::Doc;
use crate::views::repository::TreeEntryView;
use axum::extract::Path;
use axum::http::Method;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::{page, path_param, readable};
use crate::context::ApiContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::PageRequest;
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::http::routes::Router;
use crate::views::repository::tree_entry;

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/api/v4/projects/{id}/repository/tree", get(list))
        .doc(
            Method::GET,
            Doc::new()
                .input::<TreeQuery>()
                .input::<PageRequest>()
                .answers_list::<TreeEntryView>(),
        )
}

struct TreeQuery {
    path: Option<String>,
    reference: Option<String>,
    recursive: bool,
    page_token: Option<String>,
}

impl FromParams for TreeQuery {
    fn from_params(params: &Params) -> ApiResult<Self> {
        let path = path_param(params)?;
        Ok(TreeQuery {
            path,
            reference: params.string("ref")?.filter(|r| !r.is_empty()),
            recursive: params.bool("recursive")?.unwrap_or(false),
            page_token: params.string("page_token")?.filter(|t| !t.is_empty()),
        })
    }
}

async fn list(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let query = api.input::<TreeQuery>()?;
    let request = PageRequest::from_params(&api.params)?;
    let repo = readable(&api, &id).await?;
    let commit = repo
        .commit_or_default(query.reference.as_deref(), "Tree")
        .await?;
    let entries = repo
        .repo
        .tree(&commit, query.path.as_deref(), query.recursive)
        .await?
        .ok_or(ApiError::NotFound("Tree"))?;
    if !request.keyset {
        return page(&api, entries.iter().map(tree_entry).collect());
    }
    let start = match &query.page_token {
        Some(token) => entries
            .iter()
            .position(|e| &e.id == token)
            .map(|i| i + 1)
            .ok_or_else(|| ApiError::InvalidParam("page_token is invalid".into()))?,
        None => 0,
    };
    let rest = &entries[start..];
    let shown = &rest[..rest.len().min(request.per_page as usize)];
    let mut headers = HeaderMap::new();
    if rest.len() > shown.len()
        && let Some(last) = shown.last()
    {
        let next = api
            .origin
            .link(&[("page_token", last.id.clone())], &["page_token", "page"]);
        if let Ok(value) = HeaderValue::from_str(&format!("<{next}>; rel=\"next\"")) {
            headers.insert("link", value);
        }
    }
    let body: Vec<_> = shown.iter().map(tree_entry).collect();
    Ok((headers, Json(body)).into_response())
}
