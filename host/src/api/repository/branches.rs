//! Branches: `GET/POST /projects/:id/repository/branches` (with `search` and `regex`),
//! `GET/HEAD/DELETE .../branches/:branch` and `DELETE .../merged_branches`.

use crate::http::json::Json;
use crate::http::pagination::PageRequest;
use crate::http::routes::Doc;
use axum::extract::Path;
use axum::http::Method;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get};
use serde_json::json;

use super::{Repo, page, readable, writable};
use crate::context::ApiContext;
use crate::git::refs::Branch;
use crate::git::smart_http::Service;
use crate::git_access::rules::project_allows;
use crate::http::error::{ApiError, ApiResult};
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::http::routes::Router;
use crate::model::protected_branches::ProtectedBranch;
use crate::services::protected_branches::{self, Actor};
use crate::services::repository::{self, branch_rules};
use crate::views::repository::{BranchFacts, BranchView};

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route(
            "/api/v4/projects/{id}/repository/branches",
            get(list).post(create),
        )
        .doc(
            Method::GET,
            Doc::new()
                .input::<BranchListQuery>()
                .input::<PageRequest>()
                .answers_list::<BranchView>(),
        )
        .doc(
            Method::POST,
            Doc::new().input::<CreateBranch>().answers::<BranchView>(),
        )
        .route(
            "/api/v4/projects/{id}/repository/branches/{branch}",
            get(show).delete(remove),
        )
        .doc(Method::GET, Doc::new().answers::<BranchView>())
        .route(
            "/api/v4/projects/{id}/repository/merged_branches",
            delete(remove_merged),
        )
}

/// `GET .../branches`: `search` (`^prefix`, `suffix$`, else a substring, ignoring case) or
/// `regex` (RE2 syntax, which the `regex` crate shares), `sort`.
struct BranchListQuery {
    search: Option<String>,
    regex: Option<regex::Regex>,
    sort: Option<String>,
}

impl FromParams for BranchListQuery {
    fn from_params(params: &Params) -> ApiResult<Self> {
        let regex = match params.string("regex")?.filter(|r| !r.is_empty()) {
            Some(pattern) => Some(
                regex::RegexBuilder::new(&pattern)
                    .size_limit(1 << 20)
                    .build()
                    .map_err(|_| ApiError::InvalidParam("regex is invalid".into()))?,
            ),
            None => None,
        };
        Ok(BranchListQuery {
            search: params.string("search")?.filter(|s| !s.is_empty()),
            regex,
            sort: params.one_of("sort", &["name_asc", "updated_asc", "updated_desc"])?,
        })
    }
}

impl BranchListQuery {
    fn matches(&self, name: &str) -> bool {
        let search_ok = self
            .search
            .as_deref()
            .is_none_or(|search| matches_search(name, search));
        search_ok && self.regex.as_ref().is_none_or(|r| r.is_match(name))
    }
}

/// GitLab's ref search: `^x` matches prefixes, `x$` suffixes, anything else a substring,
/// all ignoring case.
pub fn matches_search(name: &str, search: &str) -> bool {
    let name = name.to_lowercase();
    let search = search.to_lowercase();
    match (search.strip_prefix('^'), search.strip_suffix('$')) {
        (Some(prefix), _) => match prefix.strip_suffix('$') {
            Some(exact) => name == exact,
            None => name.starts_with(prefix),
        },
        (None, Some(suffix)) => name.ends_with(suffix),
        (None, None) => name.contains(&search),
    }
}

/// The branch facts the view shows, for every branch of one listing.
struct Facts {
    merged: std::collections::HashSet<String>,
    may_push: bool,
    protected: Vec<ProtectedBranch>,
    /// The caller, for `can_push` under the protected branches' push levels.
    actor: Actor,
}

impl Facts {
    async fn of(api: &Api, repo: &Repo) -> ApiResult<Facts> {
        let protected = api.db().protected_branches(repo.ctx.project.id).await?;
        let merged = match repo.default_branch() {
            Some(default) if repo.repo.branch_exists(default).await? => {
                repo.repo
                    .merged_into(&format!("refs/heads/{default}"))
                    .await?
            }
            _ => Default::default(),
        };
        Ok(Facts {
            merged,
            may_push: project_allows(&repo.ctx, Service::ReceivePack).is_ok(),
            protected,
            actor: Actor {
                level: repo.ctx.level(),
                admin: repo.ctx.admin,
            },
        })
    }

    fn view(&self, repo: &Repo, branch: &Branch) -> BranchView {
        let rules = branch_rules(&self.protected, &branch.name);
        let default = repo.default_branch() == Some(branch.name.as_str());
        repo.views().branch(
            branch,
            &BranchFacts {
                merged: !default && self.merged.contains(&branch.name),
                protected: rules.protected,
                developers_can_push: rules.developers_can_push,
                developers_can_merge: rules.developers_can_merge,
                can_push: self.may_push
                    && (!rules.protected
                        || protected_branches::allowed(
                            &self.protected,
                            &branch.name,
                            "push",
                            self.actor,
                        )),
                default,
            },
        )
    }
}

async fn list(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let query = api.input::<BranchListQuery>()?;
    let repo = readable(&api, &id).await?;
    let mut branches: Vec<Branch> = repo
        .repo
        .branch_list()
        .await?
        .into_iter()
        .filter(|b| query.matches(&b.name))
        .collect();
    match query.sort.as_deref() {
        Some("updated_asc") => {
            branches.sort_by(|a, b| a.commit.committed_date.cmp(&b.commit.committed_date))
        }
        Some("updated_desc") => {
            branches.sort_by(|a, b| b.commit.committed_date.cmp(&a.commit.committed_date))
        }
        _ => {}
    }
    let facts = Facts::of(&api, &repo).await?;
    let items = branches.iter().map(|b| facts.view(&repo, b)).collect();
    page(&api, items)
}

async fn find(repo: &Repo, name: &str) -> ApiResult<Branch> {
    if !crate::git::refs::valid_ref_name(name) {
        return Err(ApiError::NotFound("Branch"));
    }
    repo.repo
        .branch_list()
        .await?
        .into_iter()
        .find(|b| b.name == name)
        .ok_or(ApiError::NotFound("Branch"))
}

async fn show(Path((id, name)): Path<(String, String)>, api: Api) -> ApiResult<Json<BranchView>> {
    let repo = readable(&api, &id).await?;
    let branch = find(&repo, &name).await?;
    let facts = Facts::of(&api, &repo).await?;
    Ok(Json(facts.view(&repo, &branch)))
}

/// `POST .../branches`: `branch` and `ref`.
struct CreateBranch {
    branch: String,
    reference: String,
}

impl FromParams for CreateBranch {
    fn from_params(params: &Params) -> ApiResult<Self> {
        Ok(CreateBranch {
            branch: params.required_string("branch")?,
            reference: params.required_string("ref")?,
        })
    }
}

async fn create(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let input = api.input::<CreateBranch>()?;
    let (repo, actor) = writable(&api, &id, None).await?;
    repository::create_branch(&repo.target(&api, actor), &input.branch, &input.reference).await?;
    let branch = find(&repo, &input.branch).await?;
    let facts = Facts::of(&api, &repo).await?;
    Ok((StatusCode::CREATED, Json(facts.view(&repo, &branch))).into_response())
}

async fn remove(Path((id, name)): Path<(String, String)>, api: Api) -> ApiResult<StatusCode> {
    let (repo, actor) = writable(&api, &id, None).await?;
    repository::delete_branch(&repo.target(&api, actor), &name).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `DELETE .../merged_branches`: every branch merged into the default branch, except the
/// default branch and protected branches (Maintainer, as in GitLab); 202 when done.
async fn remove_merged(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let (repo, actor) = writable(&api, &id, None).await?;
    repo.ctx
        .require(crate::access_level::AccessLevel::Maintainer)?;
    let facts = Facts::of(&api, &repo).await?;
    let target = repo.target(&api, actor);
    for name in &facts.merged {
        if repo.default_branch() == Some(name.as_str())
            || branch_rules(&facts.protected, name).protected
        {
            continue;
        }
        repository::delete_branch(&target, name).await?;
    }
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({ "message": "202 Accepted" })),
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::matches_search;

    #[test]
    fn search_anchors_like_gitlab() {
        assert!(matches_search("feature/Login", "login"));
        assert!(matches_search("feature/login", "^feat"));
        assert!(!matches_search("my-feature", "^feat"));
        assert!(matches_search("fix-1", "1$"));
        assert!(matches_search("main", "^main$"));
        assert!(!matches_search("main2", "^main$"));
    }
}
