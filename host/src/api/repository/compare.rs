//! `GET /projects/:id/repository/compare?from=&to=&straight=`: the commits in `to` that are
//! not in `from`, oldest first, and the diff from their merge base (`straight=true`: from
//! `from` itself) to `to`; and `GET /projects/:id/repository/merge_base?refs[]=` (the merge
//! base's commit, as GitLab's `API::Repositories`).

use crate::http::json::Json;
use crate::http::routes::Doc;
use crate::views::repository::{CommitView, CompareView};
use axum::extract::Path;
use axum::http::Method;
use axum::routing::get;

use super::readable;
use crate::context::ApiContext;
use crate::git::commits::LogQuery;
use crate::git::refs::Revision;
use crate::http::error::{ApiError, ApiResult};
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::http::routes::Router;
use crate::services::diffs::{self, Presentation};

/// GitLab caps a comparison's commits.
const MAX_COMMITS: i64 = 100;

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/api/v4/projects/{id}/repository/compare", get(compare))
        .doc(
            Method::GET,
            Doc::new().input::<CompareQuery>().answers::<CompareView>(),
        )
        .route(
            "/api/v4/projects/{id}/repository/merge_base",
            get(merge_base),
        )
        .doc(
            Method::GET,
            Doc::new().input::<MergeBaseQuery>().answers::<CommitView>(),
        )
}

struct CompareQuery {
    from: String,
    to: String,
    straight: bool,
}

impl FromParams for CompareQuery {
    fn from_params(params: &Params) -> ApiResult<Self> {
        Ok(CompareQuery {
            from: params.required_string("from")?,
            to: params.required_string("to")?,
            straight: params.bool("straight")?.unwrap_or(false),
        })
    }
}

/// `GET .../merge_base`: `refs`, two or more names (an array, or comma-separated).
struct MergeBaseQuery {
    refs: Vec<String>,
}

impl FromParams for MergeBaseQuery {
    fn from_params(params: &Params) -> ApiResult<Self> {
        let refs = params
            .string_list("refs")?
            .ok_or_else(|| ApiError::Missing("refs".into()))?;
        Ok(MergeBaseQuery { refs })
    }
}

async fn merge_base(Path(id): Path<String>, api: Api) -> ApiResult<Json<CommitView>> {
    let query = api.input::<MergeBaseQuery>()?;
    let repo = readable(&api, &id).await?;
    if query.refs.len() < 2 {
        return Err(ApiError::Rejected("Provide at least 2 refs".into()));
    }
    let mut commits = Vec::with_capacity(query.refs.len());
    let mut unknown = Vec::new();
    for name in &query.refs {
        match repo.commit_id(name, "Ref").await {
            Ok(id) => commits.push(id),
            Err(ApiError::NotFound(_)) => unknown.push(name.as_str()),
            Err(error) => return Err(error),
        }
    }
    if !unknown.is_empty() {
        let noun = if unknown.len() == 1 { "ref" } else { "refs" };
        let message = format!("Could not find {noun}: {}", unknown.join(", "));
        return Err(ApiError::Rejected(message));
    }
    let commits: Vec<&str> = commits.iter().map(String::as_str).collect();
    let base = repo.repo.merge_base(&commits).await?;
    let commit = match base.as_deref().and_then(Revision::parse) {
        Some(revision) => repo.repo.commit(&revision).await?,
        None => None,
    };
    let commit = commit.ok_or(ApiError::NotFound("Merge Base"))?;
    Ok(Json(repo.views().commit(&commit)))
}

async fn compare(Path(id): Path<String>, api: Api) -> ApiResult<Json<CompareView>> {
    let query = api.input::<CompareQuery>()?;
    let repo = readable(&api, &id).await?;
    let from = repo.commit_id(&query.from, "Ref").await?;
    let to = repo.commit_id(&query.to, "Ref").await?;
    let base = match query.straight {
        true => Some(from.clone()),
        false => repo.repo.merge_base(&[&from, &to]).await?,
    };
    let to_revision = Revision::parse(&to).ok_or(ApiError::NotFound("Ref"))?;
    let commits = repo
        .repo
        .log(&LogQuery {
            revision: Some(&to_revision),
            exclude: Some(from.as_str()),
            reverse: true,
            limit: MAX_COMMITS,
            ..LogQuery::default()
        })
        .await?;
    // Unrelated histories have no merge base: the diff is then from `from` itself.
    let diff_from = base.as_deref().unwrap_or(&from);
    let diffs = diffs::read(
        &repo.repo,
        &api.settings,
        Some(diff_from),
        &to,
        Presentation::Collapsible,
    )
    .await?;
    Ok(Json(repo.views().compare(
        &query.from,
        &query.to,
        &commits,
        &diffs,
        query.straight,
    )))
}
