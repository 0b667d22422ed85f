//! Tags: `GET/POST /projects/:id/repository/tags` (`search`, `order_by`, `sort`) and
//! `GET/DELETE .../tags/:tag_name`. A tag created with a `message` is annotated.

use crate::http::pagination::PageRequest;
use crate::http::routes::Doc;
use crate::views::repository::TagView;
use axum::http::Method;
use std::cmp::Ordering;

use crate::http::json::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::branches::matches_search;
use super::{Repo, page, readable, writable};
use crate::context::ApiContext;
use crate::git::refs::{Tag, valid_ref_name};
use crate::http::error::{ApiError, ApiResult};
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::http::routes::Router;
use crate::model::protected_tags::ProtectedTagRow;
use crate::services::{protected_branches, repository};

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route(
            "/api/v4/projects/{id}/repository/tags",
            get(list).post(create),
        )
        .doc(
            Method::GET,
            Doc::new()
                .input::<TagListQuery>()
                .input::<PageRequest>()
                .answers_list::<TagView>(),
        )
        .doc(
            Method::POST,
            Doc::new().input::<CreateTag>().answers::<TagView>(),
        )
        .route(
            "/api/v4/projects/{id}/repository/tags/{tag_name}",
            get(show).delete(remove),
        )
        .doc(Method::GET, Doc::new().answers::<TagView>())
}

/// `GET .../tags`: newest commit first by default, as GitLab.
struct TagListQuery {
    search: Option<String>,
    order_by: String,
    descending: bool,
}

impl FromParams for TagListQuery {
    fn from_params(params: &Params) -> ApiResult<Self> {
        Ok(TagListQuery {
            search: params.string("search")?.filter(|s| !s.is_empty()),
            order_by: params
                .one_of("order_by", &["name", "updated", "version"])?
                .unwrap_or_else(|| "updated".into()),
            descending: params.one_of("sort", &["asc", "desc"])?.as_deref() != Some("asc"),
        })
    }
}

/// Compares version-like names piece by piece: runs of digits as numbers (`v1.10` after
/// `v1.9`), the rest as text.
fn version_order(a: &str, b: &str) -> Ordering {
    fn pieces(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let bytes = s.as_bytes();
        for i in 1..=bytes.len() {
            if i == bytes.len() || bytes[i].is_ascii_digit() != bytes[start].is_ascii_digit() {
                out.push((bytes[start].is_ascii_digit(), &s[start..i]));
                start = i;
            }
        }
        out
    }
    for (x, y) in pieces(a).into_iter().zip(pieces(b)) {
        let order = match (x, y) {
            ((true, x), (true, y)) => x
                .trim_start_matches('0')
                .len()
                .cmp(&y.trim_start_matches('0').len())
                .then_with(|| x.trim_start_matches('0').cmp(y.trim_start_matches('0'))),
            ((_, x), (_, y)) => x.cmp(y),
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    a.len().cmp(&b.len())
}

async fn list(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let query = api.input::<TagListQuery>()?;
    let repo = readable(&api, &id).await?;
    let mut tags: Vec<Tag> = repo
        .repo
        .tag_list()
        .await?
        .into_iter()
        .filter(|t| {
            query
                .search
                .as_deref()
                .is_none_or(|s| matches_search(&t.name, s))
        })
        .collect();
    tags.sort_by(|a, b| {
        let order = match query.order_by.as_str() {
            "name" => a.name.cmp(&b.name),
            "version" => version_order(&a.name, &b.name),
            _ => a.commit.committed_date.cmp(&b.commit.committed_date),
        };
        if query.descending {
            order.reverse()
        } else {
            order
        }
    });
    let views = repo.views();
    let rules = protected_rules(&api, &repo).await?;
    page(
        &api,
        tags.iter()
            .map(|t| views.tag(t, is_protected(&rules, &t.name)))
            .collect(),
    )
}

/// The project's protected tag rules, for each tag's `protected`.
async fn protected_rules(api: &Api, repo: &Repo) -> ApiResult<Vec<ProtectedTagRow>> {
    Ok(api.db().protected_tags(repo.ctx.project.id).await?)
}

fn is_protected(rules: &[ProtectedTagRow], name: &str) -> bool {
    rules
        .iter()
        .any(|rule| protected_branches::matches(&rule.name, name))
}

async fn tag_view(api: &Api, repo: &Repo, tag: &Tag) -> ApiResult<TagView> {
    let rules = protected_rules(api, repo).await?;
    Ok(repo.views().tag(tag, is_protected(&rules, &tag.name)))
}

async fn find(repo: &Repo, name: &str) -> ApiResult<Tag> {
    if !valid_ref_name(name) {
        return Err(ApiError::NotFound("Tag"));
    }
    repo.repo
        .tag_list()
        .await?
        .into_iter()
        .find(|t| t.name == name)
        .ok_or(ApiError::NotFound("Tag"))
}

async fn show(Path((id, name)): Path<(String, String)>, api: Api) -> ApiResult<Json<TagView>> {
    let repo = readable(&api, &id).await?;
    let tag = find(&repo, &name).await?;
    Ok(Json(tag_view(&api, &repo, &tag).await?))
}

/// `POST .../tags`: `tag_name`, `ref`, `message` (annotated when given).
struct CreateTag {
    tag_name: String,
    reference: String,
    message: Option<String>,
}

impl FromParams for CreateTag {
    fn from_params(params: &Params) -> ApiResult<Self> {
        Ok(CreateTag {
            tag_name: params.required_string("tag_name")?,
            reference: params.required_string("ref")?,
            message: params.string("message")?,
        })
    }
}

async fn create(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let input = api.input::<CreateTag>()?;
    let (repo, actor) = writable(&api, &id, None).await?;
    repository::create_tag(
        &repo.target(&api, actor),
        &input.tag_name,
        &input.reference,
        input.message.as_deref(),
    )
    .await?;
    let tag = find(&repo, &input.tag_name).await?;
    Ok((
        StatusCode::CREATED,
        Json(tag_view(&api, &repo, &tag).await?),
    )
        .into_response())
}

async fn remove(Path((id, name)): Path<(String, String)>, api: Api) -> ApiResult<StatusCode> {
    let (repo, actor) = writable(&api, &id, None).await?;
    repository::delete_tag(&repo.target(&api, actor), &name).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_numbers_as_numbers() {
        assert_eq!(version_order("v1.10", "v1.9"), Ordering::Greater);
        assert_eq!(version_order("v2.0", "v10.0"), Ordering::Less);
        assert_eq!(version_order("v1.0", "v1.0"), Ordering::Equal);
        assert_eq!(version_order("v1.0", "v1.0.1"), Ordering::Less);
    }
}
