//! The route table: a thin wrapper over axum's `Router` that also remembers every path it
//! routes. axum cannot list its routes, and the cross-tenant test suite must reach every one of
//! them, so that a new route cannot be missed (`trellis routes` prints the table). The OpenAPI
//! document (`http/openapi.rs`) is built from the same table, with each route's methods.

use std::convert::Infallible;

use axum::extract::Request;
use axum::http::Method;
use axum::response::IntoResponse;
use axum::routing::{MethodRouter, Route};
use tower::{Layer, Service};

pub use super::input_doc::Doc;

pub struct Router<S = ()> {
    inner: axum::Router<S>,
    routes: Vec<RouteEntry>,
}

/// One routed path template, the methods it answers, and what the methods documented with
/// `Router::doc` take and answer.
#[derive(Debug, Clone)]
pub struct RouteEntry {
    pub path: String,
    pub methods: Vec<Method>,
    pub docs: Vec<(Method, Doc)>,
}

impl<S: Clone + Send + Sync + 'static> Default for Router<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: Clone + Send + Sync + 'static> Router<S> {
    pub fn new() -> Self {
        Router {
            inner: axum::Router::new(),
            routes: Vec::new(),
        }
    }

    pub fn route(mut self, path: &str, method_router: MethodRouter<S>) -> Self {
        self.routes.push(RouteEntry {
            path: path.to_string(),
            methods: methods_of(&method_router),
            docs: Vec::new(),
        });
        self.inner = self.inner.route(path, method_router);
        self
    }

    /// Documents what `method` of the route added last takes and answers (`input_doc.rs`).
    pub fn doc(mut self, method: Method, doc: Doc) -> Self {
        let route = self.routes.last_mut().expect("doc follows a route");
        assert!(
            route.methods.contains(&method),
            "{method} is not routed on {}",
            route.path
        );
        route.docs.push((method, doc));
        self
    }

    pub fn merge(mut self, other: Router<S>) -> Self {
        self.routes.extend(other.routes);
        self.inner = self.inner.merge(other.inner);
        self
    }

    /// axum's `Router::layer`, with its bounds.
    pub fn layer<L>(mut self, layer: L) -> Self
    where
        L: Layer<Route> + Clone + Send + Sync + 'static,
        L::Service: Service<Request> + Clone + Send + Sync + 'static,
        <L::Service as Service<Request>>::Response: IntoResponse + 'static,
        <L::Service as Service<Request>>::Error: Into<Infallible> + 'static,
        <L::Service as Service<Request>>::Future: Send + 'static,
    {
        self.inner = self.inner.layer(layer);
        self
    }

    /// The routes, in the order they were added.
    pub fn routes(&self) -> &[RouteEntry] {
        &self.routes
    }

    pub fn into_inner(self) -> axum::Router<S> {
        self.inner
    }
}

/// The methods a `MethodRouter` answers. axum keeps them only as the `Allow` header value it
/// sends with 405s and exposes that value through `Debug` alone; reading it there keeps every
/// module's `route(path, get(a).post(b))` call as it is. A unit test fails if axum changes it.
fn methods_of<S>(method_router: &MethodRouter<S>) -> Vec<Method> {
    let debug = format!("{method_router:?}");
    let allow = debug
        .split("allow_header: Bytes(b\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_default();
    allow
        .split(',')
        .filter_map(|method| method.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use axum::routing::get;

    use super::*;

    #[test]
    fn records_the_methods_of_each_route() {
        let router: Router =
            Router::new().route("/a", get(|| async {}).post(|| async {}).delete(|| async {}));
        assert_eq!(
            router.routes()[0].methods,
            [Method::GET, Method::HEAD, Method::POST, Method::DELETE]
        );
    }

    #[test]
    fn every_route_of_the_server_has_methods() {
        for route in crate::http::route_entries() {
            assert!(!route.methods.is_empty(), "{} has no methods", route.path);
        }
    }
}
