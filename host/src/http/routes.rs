//! The route table: a thin wrapper over axum's `Router` that also remembers every path it
//! routes. axum cannot list its routes, and the cross-tenant test suite must reach every one of
//! them, so that a new route cannot be missed (`trellis routes` prints the table).

use std::convert::Infallible;

use axum::extract::Request;
use axum::response::IntoResponse;
use axum::routing::{MethodRouter, Route};
use tower::{Layer, Service};

pub struct Router<S = ()> {
    inner: axum::Router<S>,
    paths: Vec<String>,
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
            paths: Vec::new(),
        }
    }

    pub fn route(mut self, path: &str, method_router: MethodRouter<S>) -> Self {
        self.paths.push(path.to_string());
        self.inner = self.inner.route(path, method_router);
        self
    }

    pub fn merge(mut self, other: Router<S>) -> Self {
        self.paths.extend(other.paths);
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

    /// The paths routed, in the order they were added.
    pub fn paths(&self) -> &[String] {
        &self.paths
    }

    pub fn into_inner(self) -> axum::Router<S> {
        self.inner
    }
}
