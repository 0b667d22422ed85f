//! The repository API (`/projects/:id/repository/...`): branches, tags, the tree, files,
//! commits, compare, archives and blobs, in GitLab's shapes. Reading needs what `git clone`
//! needs and writing what `git push` needs (`git_access::rules`, the same rules); the git work
//! is in the `trellis-git` crate (`crates/git`), server-side commits and ref changes in `services::repository`.

mod archive;
mod blobs;
mod branches;
mod commits;
mod compare;
mod contributors;
mod files;
mod tags;
mod tree;

use axum::response::Response;
use serde::Serialize;

use crate::api::access::{self, ProjectCtx};
use crate::context::ApiContext;
use crate::git::Repository;
use crate::git::refs::Revision;
use crate::git::smart_http::Service;
use crate::git::tree::valid_path;
use crate::git_access::Allowed;
use crate::git_access::rules::project_allows;
use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::{Page, PageRequest};
use crate::http::params::Params;
use crate::http::request::Api;
use crate::http::routes::Router;
use crate::model::users::UserRow;
use crate::services::protected_branches::Actor;
use crate::services::push::PushOrigin;
use crate::services::repository::Target;
use crate::views::repository::RepoViews;

pub fn router() -> Router<ApiContext> {
    Router::new()
        .merge(branches::router())
        .merge(tags::router())
        .merge(tree::router())
        .merge(files::router())
        .merge(commits::router())
        .merge(compare::router())
        .merge(contributors::router())
        .merge(archive::router())
        .merge(blobs::router())
}

/// The media type raw files and blobs are documented with: GitLab sends them as text whatever
/// they hold (`text/plain; charset=utf-8` with `nosniff`), and so does Trellis.
const RAW_MEDIA_TYPES: &[&str] = &["text/plain"];

/// A project whose repository the caller may read.
pub struct Repo {
    pub ctx: ProjectCtx,
    pub repo: Repository,
    pub web_url: String,
}

/// The project `id` if the caller may read its repository: 404 when the project is hidden
/// from them, 403 when its repository is (`repository_access_level`, private projects'
/// guests).
pub async fn readable(api: &Api, id: &str) -> ApiResult<Repo> {
    let ctx = access::project(api, id).await?;
    if project_allows(&ctx, Service::UploadPack).is_err() {
        return Err(ApiError::forbidden());
    }
    open(api, ctx).await
}

/// The project `id` and the caller if they may push to it (Developer and up, not archived,
/// repository readable): 401 without a caller, 404 when the project is hidden, else 403
/// (with `reason` when GitLab gives one for the endpoint).
pub async fn writable<'a>(
    api: &'a Api,
    id: &str,
    reason: Option<&str>,
) -> ApiResult<(Repo, &'a UserRow)> {
    let caller = api.user()?;
    let ctx = access::project(api, id).await?;
    if project_allows(&ctx, Service::ReceivePack).is_err() {
        return Err(ApiError::Forbidden(reason.map(str::to_string)));
    }
    let repo = open(api, ctx).await?;
    Ok((repo, caller.user.as_ref()))
}

pub(crate) async fn open(api: &Api, ctx: ProjectCtx) -> ApiResult<Repo> {
    let repo = Repository::project(
        &api.ctx.config.storage.data_dir,
        api.tenant.id,
        ctx.project.id,
    );
    if !repo.exists().await {
        return Err(ApiError::NotFound("Repository"));
    }
    let web_url = format!(
        "{}/{}/{}",
        api.tenant.base_url, ctx.namespace.full_path, ctx.project.path
    );
    Ok(Repo { ctx, repo, web_url })
}

impl Repo {
    pub fn views(&self) -> RepoViews<'_> {
        RepoViews {
            web_url: &self.web_url,
            project_id: self.ctx.project.id,
        }
    }

    pub fn default_branch(&self) -> Option<&str> {
        self.ctx.project.default_branch.as_deref()
    }

    /// The commit `name` resolves to, or `404 <what> Not Found`.
    pub async fn commit_id(&self, name: &str, what: &'static str) -> ApiResult<String> {
        let revision = Revision::parse(name).ok_or(ApiError::NotFound(what))?;
        self.repo
            .resolve_commit(&revision)
            .await?
            .ok_or(ApiError::NotFound(what))
    }

    /// The commit `name` (the default branch when `None`) resolves to, or 404.
    pub async fn commit_or_default(
        &self,
        name: Option<&str>,
        what: &'static str,
    ) -> ApiResult<String> {
        let name = name.or(self.default_branch()).unwrap_or("HEAD");
        self.commit_id(name, what).await
    }

    /// The write target for `services::repository`, with the push session its changes run
    /// in (as a push by `actor`, made through the API).
    pub fn target<'a>(&'a self, api: &'a Api, actor: &'a UserRow) -> Target<'a> {
        self.target_from(api, actor, PushOrigin::Api)
    }

    /// The write target for a change from `origin` (the repository API, or a merge).
    pub fn target_from<'a>(
        &'a self,
        api: &'a Api,
        actor: &'a UserRow,
        origin: PushOrigin,
    ) -> Target<'a> {
        let place = Allowed {
            project: self.ctx.project.clone(),
            repo: self.repo.clone(),
            namespace: self.ctx.namespace.clone(),
            actor: Actor {
                level: self.ctx.level(),
                admin: self.ctx.admin,
            },
            moved: None,
        };
        let push = place.push_by(&api.scope(), actor, origin);
        Target {
            repo: &self.repo,
            project: &self.ctx.project,
            actor,
            push,
        }
    }
}

/// An offset page of a list built in memory (branches, tags, diffs, refs), with the `X-*`
/// and `Link` headers; these lists have no keyset pagination in GitLab.
pub fn page<T: Serialize + Clone>(api: &Api, items: Vec<T>) -> ApiResult<Response> {
    let mut request = PageRequest::from_params(&api.params)?;
    request.keyset = false;
    let total = items.len() as i64;
    let start = request.offset().min(total) as usize;
    let rows = items
        .into_iter()
        .skip(start)
        .take(request.per_page as usize + 1)
        .collect();
    let page = Page {
        rows,
        total: Some(total),
    };
    Ok(page.respond(&request, &api.origin, |_| 0, T::clone))
}

/// The `path` parameter of the tree and archive endpoints: a path in the repository, its
/// slashes at either end dropped; none when blank.
pub fn path_param(params: &Params) -> ApiResult<Option<String>> {
    let path = params
        .string("path")?
        .map(|p| p.trim_matches('/').to_string())
        .filter(|p| !p.is_empty());
    if path.as_deref().is_some_and(|p| !valid_path(p)) {
        return Err(ApiError::InvalidParam(
            "path should be a valid file path".into(),
        ));
    }
    Ok(path)
}

/// A revision named in a path or parameter, or `404 <what> Not Found`.
pub fn revision(name: &str, what: &'static str) -> ApiResult<Revision> {
    Revision::parse(name).ok_or(ApiError::NotFound(what))
}
