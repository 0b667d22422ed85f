//! Where a request comes from, read from its head alone: the scheme, host and query it was
//! sent to ([`Origin`]), the host name tenants are found by, and the peer address. A leaf:
//! the extractors (`http`) and the rate limiter (`ratelimit`, which runs before them) both
//! read these, so neither has to import the other.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use axum::extract::ConnectInfo;
use axum::http::request::Parts;
use axum::http::{HeaderMap, Uri, header};

/// The scheme, host, path and query of the request, for building links back to it.
#[derive(Debug, Clone)]
pub struct Origin {
    pub scheme: String,
    pub host: String,
    pub path: String,
    pub query: Vec<(String, String)>,
}

impl Origin {
    pub fn from_parts(headers: &HeaderMap, uri: &Uri) -> Origin {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .or_else(|| uri.authority().map(|a| a.as_str()))
            .unwrap_or("localhost")
            .to_string();
        let scheme = headers
            .get("x-forwarded-proto")
            .and_then(|h| h.to_str().ok())
            .filter(|s| *s == "https" || *s == "http")
            .unwrap_or("http")
            .to_string();
        let query = uri
            .query()
            .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
            .unwrap_or_default();
        Origin {
            scheme,
            host,
            path: uri.path().to_string(),
            query,
        }
    }

    pub fn base_url(&self) -> String {
        format!("{}://{}", self.scheme, self.host)
    }

    /// The host name without port, lower-cased: the key tenants are found by.
    pub fn host_name(&self) -> String {
        host_name_of(&self.host)
    }

    pub fn param(&self, name: &str) -> Option<String> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }

    /// This request's URL with `remove` dropped from the query and `set` appended.
    /// Credentials in the query (`access_token`, `private_token`) are never copied into links.
    pub fn link(&self, set: &[(&str, String)], remove: &[&str]) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        for (key, value) in &self.query {
            if !remove.contains(&key.as_str()) && key != "access_token" && key != "private_token" {
                query.append_pair(key, value);
            }
        }
        for (key, value) in set {
            query.append_pair(key, value);
        }
        format!("{}{}?{}", self.base_url(), self.path, query.finish())
    }
}

/// `host[:port]` without the port, lower-cased.
fn host_name_of(host: &str) -> String {
    let name = if host.starts_with('[') {
        host.split_inclusive(']').next().unwrap_or(host)
    } else {
        host.rsplit_once(':').map_or(host, |(name, _)| name)
    };
    name.to_ascii_lowercase()
}

/// The tenant host name of a request (as [`Origin::host_name`]) without parsing the rest of
/// it: what middleware needs to find the tenant cheaply.
pub fn request_host_name(headers: &HeaderMap, uri: &Uri) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| uri.authority().map(|a| a.as_str()))
        .unwrap_or("localhost");
    host_name_of(host)
}

/// The peer address of the connection (proxies' forwarding headers are not trusted).
pub fn client_ip(parts: &Parts) -> IpAddr {
    parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |info| {
            info.0.ip().to_canonical()
        })
}
