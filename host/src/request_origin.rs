//! Where a request comes from, read from its head alone: the scheme, host and query it was
//! sent to ([`Origin`]), the host name tenants are found by, and the peer address. A leaf:
//! the extractors (`http`) and the rate limiter (`ratelimit`, which runs before them) both
//! read these, so neither has to import the other.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use axum::extract::ConnectInfo;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, Uri, header};
use ipnet::IpNet;

const X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");

/// The scheme, host, path and query of the request, for building links back to it.
#[derive(Debug, Clone)]
pub struct Origin {
    pub scheme: &'static str,
    pub host: String,
    pub path: String,
    pub query: Vec<(String, String)>,
}

/// A `Host` (or URI authority) that is not `name[:port]`, such as `b.test:@evil.example`:
/// such a request gets 400, since links built from it would point elsewhere.
#[derive(Debug)]
pub struct MalformedHost;

impl Origin {
    /// The request's origin, with its host checked and lower-cased ([`canonical_host`]).
    pub fn from_parts(headers: &HeaderMap, uri: &Uri) -> Result<Origin, MalformedHost> {
        let host = canonical_host(raw_host(headers, uri)).ok_or(MalformedHost)?;
        let scheme = match headers.get(X_FORWARDED_PROTO).map(|h| h.as_bytes()) {
            Some(b"https") => "https",
            _ => "http",
        };
        let query = uri
            .query()
            .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
            .unwrap_or_default();
        Ok(Origin {
            scheme,
            host,
            path: uri.path().to_string(),
            query,
        })
    }

    pub fn base_url(&self) -> String {
        [self.scheme, "://", &self.host].concat()
    }

    /// This request's URL with its path replaced by `path` (percent-encoded) and its
    /// query kept whole.
    pub fn with_path(&self, path: &str) -> String {
        let mut url = format!("{}{path}", self.base_url());
        if !self.query.is_empty() {
            let query = form_urlencoded::Serializer::new(String::new())
                .extend_pairs(&self.query)
                .finish();
            url.push('?');
            url.push_str(&query);
        }
        url
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

/// The host the request names: `Host`, else the URI's authority (HTTP/2, absolute-form).
fn raw_host<'a>(headers: &'a HeaderMap, uri: &'a Uri) -> &'a str {
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| uri.authority().map(|a| a.as_str()))
        .unwrap_or("localhost")
}

/// `host` lower-cased if it is `name[:port]` (RFC 9110 7.2) and nothing else: a name of
/// letters, digits, `-`, `_` and dots, an IPv4 address, or a bracketed IPv6 address, then at
/// most a port of digits. Anything else (user information, a path, a second colon, spaces)
/// is refused, so whatever is built from the result names the host the tenant was found by.
fn canonical_host(host: &str) -> Option<String> {
    let port = match host.strip_prefix('[') {
        Some(rest) => {
            let (address, after) = rest.split_once(']')?;
            address.parse::<Ipv6Addr>().ok()?;
            match after {
                "" => None,
                _ => Some(after.strip_prefix(':')?),
            }
        }
        None => {
            let (name, port) = match host.split_once(':') {
                Some((name, port)) => (name, Some(port)),
                None => (host, None),
            };
            let name_ok = !name.is_empty()
                && name.len() <= 253
                && !name.starts_with(['.', '-'])
                && !name.contains("..")
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
            if !name_ok {
                return None;
            }
            port
        }
    };
    // Digits only: `u16`'s parser alone would also take `+80`.
    let port_ok = port.is_none_or(|p| {
        !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u16>().is_ok()
    });
    port_ok.then(|| host.to_ascii_lowercase())
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
    host_name_of(raw_host(headers, uri))
}

/// The client's address: the connection's peer, or, when the peer is one of the operator's
/// `--trusted-proxies`, the address the proxies forwarded ([`forwarded_client`]).
pub fn client_ip(parts: &Parts, trusted_proxies: &[IpNet]) -> IpAddr {
    let peer = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |info| {
            info.0.ip().to_canonical()
        });
    forwarded_client(peer, &parts.headers, trusted_proxies)
}

/// As Rails' `RemoteIp` with GitLab's `trusted_proxies`: a peer that is not a trusted proxy is
/// the client, whatever it sends; behind trusted proxies, the client is the nearest address in
/// `X-Forwarded-For` (read from the right, where each proxy appended its peer) that is not one
/// of them. Entries left of it are the client's own claims and are never believed.
pub fn forwarded_client(peer: IpAddr, headers: &HeaderMap, trusted_proxies: &[IpNet]) -> IpAddr {
    let trusted = |ip: &IpAddr| trusted_proxies.iter().any(|net| net.contains(ip));
    if !trusted(&peer) {
        return peer;
    }
    let hops: Vec<IpAddr> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|hop| hop.trim().parse::<IpAddr>().ok())
        .map(|ip| ip.to_canonical())
        .collect();
    hops.iter()
        .rev()
        .find(|ip| !trusted(ip))
        .or(hops.first())
        .copied()
        .unwrap_or(peer)
}

#[cfg(test)]
mod tests {
    use super::{canonical_host, forwarded_client};

    #[test]
    fn forwarded_addresses_count_only_behind_trusted_proxies() {
        let proxies: Vec<ipnet::IpNet> = vec![
            "127.0.0.0/8".parse().unwrap(),
            "10.0.0.0/8".parse().unwrap(),
        ];
        let headers = |value: &str| {
            let mut map = axum::http::HeaderMap::new();
            map.insert("x-forwarded-for", value.parse().unwrap());
            map
        };
        let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
        // A client that is not a proxy cannot claim another address.
        assert_eq!(
            forwarded_client(ip("203.0.113.9"), &headers("1.2.3.4"), &proxies),
            ip("203.0.113.9")
        );
        // Behind proxies, the nearest untrusted hop; the client's own claims to its left are ignored.
        assert_eq!(
            forwarded_client(
                ip("127.0.0.1"),
                &headers("6.6.6.6, 198.51.100.7, 10.1.2.3"),
                &proxies
            ),
            ip("198.51.100.7")
        );
        // A proxy without the header, or with only proxies in it.
        assert_eq!(
            forwarded_client(ip("127.0.0.1"), &axum::http::HeaderMap::new(), &proxies),
            ip("127.0.0.1")
        );
        assert_eq!(
            forwarded_client(ip("127.0.0.1"), &headers("10.0.0.1, 10.0.0.2"), &proxies),
            ip("10.0.0.1")
        );
        // With no trusted proxies, the header is never read.
        assert_eq!(
            forwarded_client(ip("127.0.0.1"), &headers("198.51.100.7"), &[]),
            ip("127.0.0.1")
        );
    }

    #[test]
    fn host_and_port_only() {
        for (raw, canonical) in [
            ("b.test", "b.test"),
            ("B.Test:8080", "b.test:8080"),
            ("127.0.0.1:3000", "127.0.0.1:3000"),
            ("[::1]:8080", "[::1]:8080"),
            ("[::1]", "[::1]"),
            ("my_service", "my_service"),
        ] {
            assert_eq!(canonical_host(raw).as_deref(), Some(canonical), "{raw}");
        }
        for raw in [
            "b.test:@evil.example",
            "user@b.test",
            "b.test:80@evil.example",
            "b.test/path",
            "b.test:",
            "b.test:99999",
            "b.test:+80",
            "b.test:80:80",
            "b.test evil",
            "",
            ".b.test",
            "b..test",
            "[::1",
            "[::1]x",
            "[nope]:80",
            "b.test\\evil",
        ] {
            assert_eq!(canonical_host(raw), None, "{raw:?}");
        }
    }
}
