//! `GET /projects/:id/repository/contributors` (`ref`, `order_by` name, email or commits, `sort`
//! asc or desc): the authors of the default branch's history (or `ref`'s), one per email, with
//! their commit counts, as GitLab's `API::Repositories`. GitLab reports `additions` and
//! `deletions` as 0 (it stopped counting them), and so does this.

use crate::http::pagination::PageRequest;
use crate::http::routes::Doc;
use axum::http::Method;
use std::collections::HashMap;

use axum::extract::Path;
use axum::response::Response;
use axum::routing::get;

use super::{page, readable};
use crate::context::ApiContext;
use crate::http::error::ApiResult;
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::http::routes::Router;
use crate::views::repository_file::ContributorView;

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/api/v4/projects/{id}/repository/contributors", get(list))
        .doc(
            Method::GET,
            Doc::new()
                .input::<ContributorsQuery>()
                .input::<PageRequest>()
                .answers_list::<ContributorView>(),
        )
}

struct ContributorsQuery {
    reference: Option<String>,
    order_by: String,
    descending: bool,
}

impl FromParams for ContributorsQuery {
    fn from_params(params: &Params) -> ApiResult<Self> {
        Ok(ContributorsQuery {
            reference: params.string("ref")?.filter(|r| !r.is_empty()),
            order_by: params
                .one_of("order_by", &["name", "email", "commits"])?
                .unwrap_or_else(|| "commits".into()),
            descending: params.one_of("sort", &["asc", "desc"])?.as_deref() == Some("desc"),
        })
    }
}

async fn list(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let query = api.input::<ContributorsQuery>()?;
    let repo = readable(&api, &id).await?;
    let commit = repo
        .commit_or_default(query.reference.as_deref(), "Ref")
        .await?;
    let mut contributors: Vec<ContributorView> = Vec::new();
    let mut by_email: HashMap<String, usize> = HashMap::new();
    for (name, email) in repo.repo.authors(&commit).await? {
        match by_email.get(&email) {
            Some(&at) => contributors[at].commits += 1,
            None => {
                by_email.insert(email.clone(), contributors.len());
                contributors.push(ContributorView {
                    name,
                    email,
                    commits: 1,
                    additions: 0,
                    deletions: 0,
                });
            }
        }
    }
    contributors.sort_by(|a, b| {
        let order = match query.order_by.as_str() {
            "name" => a.name.cmp(&b.name),
            "email" => a.email.cmp(&b.email),
            _ => a.commits.cmp(&b.commits),
        };
        if query.descending {
            order.reverse()
        } else {
            order
        }
    });
    page(&api, contributors)
}
