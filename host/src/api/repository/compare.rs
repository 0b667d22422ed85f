//! `GET /projects/:id/repository/compare?from=&to=&straight=`: the commits in `to` that are
//! not in `from`, oldest first, and the diff from their merge base (`straight=true`: from
//! `from` itself) to `to`.

use axum::Json;
use axum::extract::Path;
use axum::routing::get;
use serde_json::Value;

use super::readable;
use crate::context::ApiContext;
use crate::git::commits::LogQuery;
use crate::git::refs::Revision;
use crate::http::error::{ApiError, ApiResult};
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::http::routes::Router;

/// GitLab caps a comparison's commits.
const MAX_COMMITS: i64 = 100;

pub fn router() -> Router<ApiContext> {
    Router::new().route("/api/v4/projects/{id}/repository/compare", get(compare))
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

async fn compare(Path(id): Path<String>, api: Api) -> ApiResult<Json<Value>> {
    let query = api.input::<CompareQuery>()?;
    let repo = readable(&api, &id).await?;
    let from = repo.commit_id(&query.from, "Ref").await?;
    let to = repo.commit_id(&query.to, "Ref").await?;
    let base = match query.straight {
        true => Some(from.clone()),
        false => repo.repo.merge_base(&from, &to).await?,
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
    let diffs = repo.repo.diff(Some(diff_from), &to).await?;
    Ok(Json(repo.views().compare(
        &query.from,
        &query.to,
        &commits,
        &diffs,
        query.straight,
    )))
}
