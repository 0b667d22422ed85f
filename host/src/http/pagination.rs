//! GitLab's pagination, for every list: offset pages (`page`, `per_page`, the `X-*` headers
//! and `Link`) and keyset pages (`pagination=keyset`, a `Link rel="next"` with `id_after` or
//! `id_before`). Links are built from the request's own scheme, host, path and parameters.

use crate::http::json::Json;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::error::{ApiError, ApiResult};
use super::params::{FromParams, Params};
use crate::request_origin::Origin;
use crate::store::window::{Direction, Window};

pub const DEFAULT_PER_PAGE: i64 = 20;
pub const MAX_PER_PAGE: i64 = 100;
/// Above this many rows GitLab stops counting and omits `X-Total` and `X-Total-Pages`.
pub const COUNT_CAP: i64 = 10_000;

#[derive(Debug, Clone)]
pub struct PageRequest {
    pub page: i64,
    pub per_page: i64,
    pub keyset: bool,
}

impl FromParams for PageRequest {
    fn from_params(params: &Params) -> ApiResult<Self> {
        PageRequest::from_params(params)
    }
}

impl PageRequest {
    pub fn from_params(params: &Params) -> ApiResult<Self> {
        let page = params.int("page")?.filter(|p| *p >= 1).unwrap_or(1);
        let per_page = params
            .int("per_page")?
            .filter(|p| *p >= 1)
            .unwrap_or(DEFAULT_PER_PAGE)
            .min(MAX_PER_PAGE);
        let keyset = match params.string("pagination")?.as_deref() {
            None | Some("") | Some("offset") => false,
            Some("keyset") => true,
            Some(_) => {
                return Err(ApiError::InvalidParam(
                    "pagination does not have a valid value".into(),
                ));
            }
        };
        Ok(PageRequest {
            page,
            per_page,
            keyset,
        })
    }

    /// The query window for this page. Keyset pages need `order_by=id`, as on GitLab.
    pub fn window(
        &self,
        params: &Params,
        order_by: &'static str,
        direction: Direction,
    ) -> ApiResult<Window> {
        if self.keyset && order_by != "id" {
            return Err(ApiError::PaginationRefused(
                "Keyset pagination is not yet available for this type of request".into(),
            ));
        }
        Ok(Window {
            order_by,
            direction,
            limit: self.per_page + 1,
            offset: if self.keyset { 0 } else { self.offset() },
            id_after: params.int("id_after")?,
            id_before: params.int("id_before")?,
        })
    }
}

impl PageRequest {
    /// The rows before this page. `page` is any positive i64 a client sends, so the product
    /// saturates instead of overflowing: a page past the end is just empty.
    pub fn offset(&self) -> i64 {
        (self.page - 1).saturating_mul(self.per_page)
    }
}

/// Offset pages of projects stop at this offset; keyset pages (`order_by=id`) go further.
pub const PROJECT_MAX_OFFSET: i64 = 50_000;

impl PageRequest {
    /// GitLab's cap on offset pagination for large types: an offset beyond `max_offset`
    /// answers 405 and points at keyset pagination.
    pub fn check_offset_cap(&self, max_offset: i64, type_name: &str) -> ApiResult<()> {
        if self.keyset || self.offset() <= max_offset {
            return Ok(());
        }
        Err(ApiError::PaginationRefused(format!(
            "Offset pagination has a maximum allowed offset of {max_offset} for requests that return objects of type {type_name}. Remaining records can be retrieved using keyset pagination."
        )))
    }
}

/// The `sort` parameter (`asc` or `desc`), or `default` when absent.
pub fn sort_direction(params: &Params, default: Direction) -> ApiResult<Direction> {
    Ok(match params.one_of("sort", &["asc", "desc"])?.as_deref() {
        Some("asc") => Direction::Asc,
        Some("desc") => Direction::Desc,
        _ => default,
    })
}

/// One page of a list: `rows` as fetched with [`Window::limit`] (one more than a page),
/// `total` as counted up to [`COUNT_CAP`] + 1 (`None` when the caller did not count).
pub struct Page<T> {
    pub rows: Vec<T>,
    pub total: Option<i64>,
}

impl<T> Page<T> {
    pub fn respond<V: Serialize>(
        mut self,
        request: &PageRequest,
        origin: &Origin,
        id_of: impl Fn(&T) -> i64,
        view: impl Fn(&T) -> V,
    ) -> Response {
        let has_next = self.rows.len() as i64 > request.per_page;
        self.rows.truncate(request.per_page as usize);
        let body: Vec<V> = self.rows.iter().map(view).collect();
        let mut headers = HeaderMap::new();
        if request.keyset {
            if has_next && let Some(last) = self.rows.last() {
                let key = if origin.param("sort").as_deref() == Some("asc") {
                    "id_after"
                } else {
                    "id_before"
                };
                let next = origin.link(
                    &[(key, id_of(last).to_string())],
                    &["page", "id_after", "id_before"],
                );
                set(&mut headers, "link", format!("<{next}>; rel=\"next\""));
            }
            set(&mut headers, "x-per-page", request.per_page.to_string());
            return (headers, Json(body)).into_response();
        }
        self.offset_headers(&mut headers, request, origin, has_next);
        (headers, Json(body)).into_response()
    }

    fn offset_headers(
        &self,
        headers: &mut HeaderMap,
        request: &PageRequest,
        origin: &Origin,
        has_next: bool,
    ) {
        let page = request.page;
        let per_page = request.per_page;
        let total = self.total.filter(|t| *t <= COUNT_CAP);
        let total_pages = total.map(|t| ((t + per_page - 1) / per_page).max(1));
        let next = match total_pages {
            Some(pages) => (page < pages).then(|| page + 1),
            None => has_next.then(|| page.checked_add(1)).flatten(),
        };
        let prev = (page > 1).then_some(page - 1);
        set(headers, "x-page", page.to_string());
        set(headers, "x-per-page", per_page.to_string());
        set(
            headers,
            "x-next-page",
            next.map(|p| p.to_string()).unwrap_or_default(),
        );
        set(
            headers,
            "x-prev-page",
            prev.map(|p| p.to_string()).unwrap_or_default(),
        );
        if let (Some(total), Some(pages)) = (total, total_pages) {
            set(headers, "x-total", total.to_string());
            set(headers, "x-total-pages", pages.to_string());
        }
        let link_to = |p: i64| {
            origin.link(
                &[("page", p.to_string()), ("per_page", per_page.to_string())],
                &["page", "per_page"],
            )
        };
        let mut links = Vec::new();
        if let Some(p) = prev {
            links.push(format!("<{}>; rel=\"prev\"", link_to(p)));
        }
        if let Some(p) = next {
            links.push(format!("<{}>; rel=\"next\"", link_to(p)));
        }
        links.push(format!("<{}>; rel=\"first\"", link_to(1)));
        if let Some(pages) = total_pages {
            links.push(format!("<{}>; rel=\"last\"", link_to(pages)));
        }
        set(headers, "link", links.join(", "));
    }
}

fn set(headers: &mut HeaderMap, name: &'static str, value: String) {
    if let Ok(value) = HeaderValue::from_str(&value) {
        headers.insert(HeaderName::from_static(name), value);
    }
}
