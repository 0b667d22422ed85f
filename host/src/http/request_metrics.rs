//! The request metrics (`http_requests_total` by route, method and status, and
//! `http_request_duration_seconds` by route), recorded through handles kept per route: asking
//! the recorder for a metric by its labels allocates the labels and hashes them into its
//! registry, which on a fast route cost more than the rest of the bookkeeping.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::http::{Method, StatusCode};
use metrics::{Counter, Histogram};

#[derive(Clone, Default)]
pub struct RequestMetrics {
    routes: Arc<RwLock<HashMap<Box<str>, Arc<RouteMetrics>>>>,
}

struct RouteMetrics {
    duration: Histogram,
    /// One counter per method and status the route has answered: a handful.
    answers: RwLock<Vec<(Method, StatusCode, Counter)>>,
}

impl RequestMetrics {
    pub fn record(&self, route: &str, method: &Method, status: StatusCode, elapsed: Duration) {
        let metrics = self.route(route);
        metrics.duration.record(elapsed.as_secs_f64());
        let known = |(m, s, _): &&(Method, StatusCode, Counter)| m == method && *s == status;
        if let Some((_, _, counter)) = metrics
            .answers
            .read()
            .expect("request metrics")
            .iter()
            .find(known)
        {
            counter.increment(1);
            return;
        }
        let mut answers = metrics.answers.write().expect("request metrics");
        match answers.iter().find(known) {
            Some((_, _, counter)) => counter.increment(1),
            None => {
                let counter = metrics::counter!(
                    "http_requests_total",
                    "route" => route.to_string(),
                    "method" => method.to_string(),
                    "status" => status.as_u16().to_string()
                );
                counter.increment(1);
                answers.push((method.clone(), status, counter));
            }
        }
    }

    fn route(&self, route: &str) -> Arc<RouteMetrics> {
        if let Some(metrics) = self.routes.read().expect("request metrics").get(route) {
            return metrics.clone();
        }
        self.routes
            .write()
            .expect("request metrics")
            .entry(route.into())
            .or_insert_with(|| {
                Arc::new(RouteMetrics {
                    duration: metrics::histogram!(
                        "http_request_duration_seconds",
                        "route" => route.to_string()
                    ),
                    answers: RwLock::new(Vec::new()),
                })
            })
            .clone()
    }
}
