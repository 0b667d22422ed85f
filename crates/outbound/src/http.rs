//! Outbound HTTP as plugins use it (and, later, hook deliveries and mirrors): a request goes
//! only to an origin the administrator granted, to an address [`AddressPolicy`] accepts, over a
//! connection opened to exactly that checked address (a second DNS answer cannot switch it;
//! unless `dns_rebinding_protection_enabled` is off, see [`AddressPolicy::pin`]), over TLS for
//! `https` (server name and certificate checked against the URL's host), without following
//! redirects, with the response body capped at [`MAX_BODY_BYTES`] and the whole exchange ended
//! at the caller's deadline.

use std::net::SocketAddr;
use std::time::Instant;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::rt::{Read, Write};
use hyper_util::rt::TokioIo;
use serde_json::Value;

use crate::tls::Tls;
use crate::{AddressPolicy, Unresolved};

/// Response bodies larger than this are refused (the plugin gets an error, not a prefix).
pub(crate) const MAX_BODY_BYTES: usize = 1 << 20;

/// The schemes outbound HTTP speaks.
const SCHEMES: &[&str] = &["http", "https"];

/// An origin a binding may send requests to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub(crate) scheme: String,
    pub(crate) host: String,
    pub(crate) port: u16,
}

impl Origin {
    /// `scheme://host[:port]` (the default port of the scheme when absent); nothing else.
    pub fn parse(text: &str) -> Result<Origin, String> {
        let url = url::Url::parse(text).map_err(|_| format!("{text:?} is not a URL"))?;
        let origin = Origin::of(&url).ok_or_else(|| format!("{text:?} has no host"))?;
        if !matches!(url.path(), "" | "/") || url.query().is_some() || !url.username().is_empty() {
            return Err(format!(
                "{text:?} must be an origin only (scheme://host:port)"
            ));
        }
        if !["http", "https"].contains(&origin.scheme.as_str()) {
            return Err(format!(
                "{text:?}: only http and https origins can be granted"
            ));
        }
        Ok(origin)
    }

    fn of(url: &url::Url) -> Option<Origin> {
        Some(Origin {
            scheme: url.scheme().to_string(),
            host: url.host_str()?.to_ascii_lowercase(),
            port: url.port_or_known_default()?,
        })
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
    }
}

/// The origins an administrator granted a binding (stored as a JSON array of strings).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grant {
    pub origins: Vec<Origin>,
}

impl Grant {
    /// The grant a binding's stored column holds, if any (a JSON array of origins).
    pub fn of_column(column: Option<&str>) -> Option<Grant> {
        let value = serde_json::from_str(column?).ok()?;
        Grant::from_json(&value).ok()
    }

    /// Parses the API parameter / stored column: an array of origin strings.
    pub fn from_json(value: &Value) -> Result<Grant, String> {
        let items = value
            .as_array()
            .ok_or("must be an array of origins (scheme://host:port)")?;
        let origins = items
            .iter()
            .map(|item| {
                item.as_str()
                    .ok_or_else(|| "must be an array of origins (scheme://host:port)".to_string())
                    .and_then(Origin::parse)
            })
            .collect::<Result<Vec<_>, _>>()?;
        if origins.is_empty() {
            return Err("must name at least one origin".into());
        }
        Ok(Grant { origins })
    }

    pub fn to_json(&self) -> Value {
        Value::from(
            self.origins
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
        )
    }

    pub fn allows(&self, url: &url::Url) -> bool {
        Origin::of(url).is_some_and(|o| self.origins.contains(&o))
    }
}

/// A request as a plugin makes it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// The outbound client as one kind of caller sets it up: where it may connect, and how it
/// speaks TLS (trust roots, and the client certificate of the service it calls, if any).
#[derive(Clone)]
pub struct Client {
    pub policy: AddressPolicy,
    pub tls: Tls,
}

impl Client {
    /// Sends `request` if `grant` and the policy allow it, giving up at `deadline`. The error
    /// says why (for the plugin, and through it the logs).
    pub async fn send(
        &self,
        grant: &Grant,
        request: Request,
        deadline: Instant,
    ) -> Result<Response, String> {
        let url = url::Url::parse(&request.url).map_err(|_| "the URL is invalid".to_string())?;
        if !grant.allows(&url) {
            return Err(format!(
                "{} is not among the origins granted to this plugin",
                Origin::of(&url).map_or_else(|| request.url.clone(), |o| o.to_string())
            ));
        }
        self.deliver(request, deadline).await
    }

    /// Sends `request` if the policy allows its URL (no grant: the caller chose the URL, as
    /// a webhook's is chosen by its administrator), giving up at `deadline`.
    pub async fn deliver(&self, request: Request, deadline: Instant) -> Result<Response, String> {
        let url = url::Url::parse(&request.url).map_err(|_| "the URL is invalid".to_string())?;
        // GitLab lets an unresolvable host pass validation when it connects by name anyway.
        let unresolved = if self.policy.pin {
            Unresolved::Refuse
        } else {
            Unresolved::Allow
        };
        let addresses = self
            .policy
            .check(&url, SCHEMES, unresolved)
            .await
            .map_err(|blocked| format!("URL is blocked: {blocked}"))?;
        let deadline = tokio::time::Instant::from_std(deadline);
        tokio::time::timeout_at(deadline, self.exchange(&url, &addresses, request))
            .await
            .map_err(|_| "the request timed out".to_string())?
    }

    async fn exchange(
        &self,
        url: &url::Url,
        addresses: &[SocketAddr],
        request: Request,
    ) -> Result<Response, String> {
        let host = url.host_str().unwrap_or_default();
        let stream = if self.policy.pin {
            connect(addresses).await?
        } else {
            let port = url.port_or_known_default().unwrap_or(80);
            let stream = tokio::net::TcpStream::connect((host, port))
                .await
                .map_err(|e| format!("connecting to {host}:{port} failed: {e}"))?;
            // Whatever the second DNS answer was, the operator's limits still hold.
            let peer = stream
                .peer_addr()
                .map_err(|e| format!("connecting to {host}:{port} failed: {e}"))?;
            self.policy
                .check_address(Some(host), peer)
                .map_err(|blocked| format!("URL is blocked: {blocked}"))?;
            stream
        };
        if url.scheme() == "https" {
            let stream = self.tls.connect(host, stream).await?;
            over(TokioIo::new(stream), url, request).await
        } else {
            over(TokioIo::new(stream), url, request).await
        }
    }
}

/// The HTTP/1 exchange over an open connection (plain or TLS).
async fn over<T>(io: T, url: &url::Url, request: Request) -> Result<Response, String>
where
    T: Read + Write + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| format!("HTTP handshake failed: {e}"))?;
    tokio::spawn(connection);
    let method = hyper::Method::from_bytes(request.method.as_bytes())
        .map_err(|_| format!("{:?} is not an HTTP method", request.method))?;
    let target = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_string(),
    };
    let host = match url.port() {
        Some(port) => format!("{}:{port}", url.host_str().unwrap_or_default()),
        None => url.host_str().unwrap_or_default().to_string(),
    };
    let mut builder = hyper::Request::builder()
        .method(method)
        .uri(target)
        .header(hyper::header::HOST, host);
    for (name, value) in &request.headers {
        if name.eq_ignore_ascii_case("host") || name.eq_ignore_ascii_case("content-length") {
            continue;
        }
        builder = builder.header(name.as_str(), value.as_str());
    }
    let outgoing = builder
        .body(Full::new(Bytes::from(request.body)))
        .map_err(|e| format!("the request is invalid: {e}"))?;
    let answer = sender
        .send_request(outgoing)
        .await
        .map_err(|e| format!("the request failed: {e}"))?;
    let status = answer.status().as_u16();
    let headers = answer
        .headers()
        .iter()
        .filter_map(|(name, value)| Some((name.to_string(), value.to_str().ok()?.to_string())))
        .collect();
    let body = Limited::new(answer.into_body(), MAX_BODY_BYTES)
        .collect()
        .await
        .map_err(|e| {
            if e.is::<http_body_util::LengthLimitError>() {
                format!("the response body is larger than {MAX_BODY_BYTES} bytes")
            } else {
                format!("reading the response failed: {e}")
            }
        })?
        .to_bytes()
        .to_vec();
    Ok(Response {
        status,
        headers,
        body,
    })
}

/// Connects to the first checked address that answers.
async fn connect(addresses: &[SocketAddr]) -> Result<tokio::net::TcpStream, String> {
    let mut last = String::from("no address to connect to");
    for address in addresses {
        match tokio::net::TcpStream::connect(address).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = format!("connecting to {address} failed: {e}"),
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls::tests::{CLIENT, CLIENT_KEY, CLIENT_KEY_ENCRYPTED, serve_tls, test_tls};
    use serde_json::json;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn grant(origins: &[&str]) -> Grant {
        Grant::from_json(&json!(origins)).unwrap()
    }

    fn get(url: &str) -> Request {
        Request {
            method: "GET".into(),
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    /// A one-shot HTTP server on loopback answering `reply` (after `delay`).
    async fn serve(reply: Vec<u8>, delay: Duration) -> u16 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = vec![0; 4096];
            let _ = socket.read(&mut buf).await;
            tokio::time::sleep(delay).await;
            let _ = socket.write_all(&reply).await;
        });
        port
    }

    /// Loopback opened by the operator and the tenant.
    fn open() -> Client {
        client(AddressPolicy {
            allow_local: true,
            operator: crate::Allowlist::from_entries(&["127.0.0.0/8".into(), "::1".into()]),
            ..AddressPolicy::default()
        })
    }

    /// A client trusting the test CA only.
    fn client(policy: AddressPolicy) -> Client {
        Client {
            policy,
            tls: test_tls(None),
        }
    }

    #[test]
    fn grants_parse_origins_only() {
        assert_eq!(
            grant(&["https://auth.example.com"]).origins[0].to_string(),
            "https://auth.example.com:443"
        );
        for bad in [
            json!("x"),
            json!([]),
            json!([1]),
            json!(["ftp://a"]),
            json!(["http://a/path"]),
        ] {
            assert!(Grant::from_json(&bad).is_err(), "{bad}");
        }
        let g = grant(&["http://Auth.example.com:8080"]);
        assert!(g.allows(&url::Url::parse("http://auth.example.com:8080/x?y").unwrap()));
        assert!(!g.allows(&url::Url::parse("http://auth.example.com/x").unwrap()));
        assert!(!g.allows(&url::Url::parse("https://auth.example.com:8080/").unwrap()));
    }

    #[tokio::test]
    async fn ungranted_and_local_targets_are_refused() {
        let closed = client(AddressPolicy::default());
        let error = closed
            .send(
                &grant(&["http://93.184.216.34"]),
                get("http://10.0.0.1/"),
                soon(),
            )
            .await
            .unwrap_err();
        assert!(error.contains("not among the origins granted"), "{error}");
        for (target, expected) in [
            ("http://127.0.0.1:9/", "localhost"),
            ("http://localhost:9/", "localhost"),
            ("http://[::1]:9/", "localhost"),
            ("http://10.1.2.3:9/", "local network"),
            ("http://169.254.169.254:9/", "link local"),
        ] {
            let origin = url::Url::parse(target)
                .unwrap()
                .origin()
                .ascii_serialization();
            let error = closed
                .send(&grant(&[&origin]), get(target), soon())
                .await
                .unwrap_err();
            assert!(error.contains(expected), "{target}: {error}");
        }
    }

    #[tokio::test]
    async fn answers_statuses_without_following_redirects() {
        let reply =
            b"HTTP/1.1 302 Found\r\nLocation: http://10.0.0.1/\r\nContent-Length: 0\r\n\r\n";
        let port = serve(reply.to_vec(), Duration::ZERO).await;
        let url = format!("http://127.0.0.1:{port}/check");
        let origin = format!("http://127.0.0.1:{port}");
        let answer = open()
            .send(&grant(&[&origin]), get(&url), soon())
            .await
            .unwrap();
        assert_eq!(answer.status, 302);
        let reply = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        let port = serve(reply.to_vec(), Duration::ZERO).await;
        let origin = format!("http://127.0.0.1:{port}");
        let answer = open()
            .send(&grant(&[&origin]), get(&format!("{origin}/")), soon())
            .await
            .unwrap();
        assert_eq!((answer.status, answer.body.as_slice()), (200, &b"ok"[..]));
    }

    #[tokio::test]
    async fn deadline_and_body_cap() {
        let reply = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        let port = serve(reply.to_vec(), Duration::from_secs(5)).await;
        let origin = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_millis(200);
        let error = open()
            .send(&grant(&[&origin]), get(&format!("{origin}/")), deadline)
            .await
            .unwrap_err();
        assert_eq!(error, "the request timed out");
        let mut big = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
            MAX_BODY_BYTES + 1
        )
        .into_bytes();
        big.resize(big.len() + MAX_BODY_BYTES + 1, b'x');
        let port = serve(big, Duration::ZERO).await;
        let origin = format!("http://127.0.0.1:{port}");
        let error = open()
            .send(&grant(&[&origin]), get(&format!("{origin}/")), soon())
            .await
            .unwrap_err();
        assert!(error.contains("larger than"), "{error}");
    }

    #[tokio::test]
    async fn https_checks_the_url_host_over_the_pinned_connection() {
        for host in ["localhost", "127.0.0.1"] {
            let port = serve_tls(false).await;
            let origin = format!("https://{host}:{port}");
            let answer = open()
                .send(&grant(&[&origin]), get(&format!("{origin}/")), soon())
                .await
                .unwrap();
            assert_eq!(
                (answer.status, answer.body.as_slice()),
                (200, &b"anonymous"[..])
            );
        }
        // Plain HTTP to a TLS port, and TLS to a certificate the roots do not trust.
        let port = serve_tls(false).await;
        let origin = format!("http://127.0.0.1:{port}");
        assert!(
            open()
                .send(&grant(&[&origin]), get(&format!("{origin}/")), soon())
                .await
                .is_err()
        );
        let port = serve_tls(false).await;
        let origin = format!("https://localhost:{port}");
        let untrusted = Client {
            tls: Tls::system(),
            ..open()
        };
        let error = untrusted
            .send(&grant(&[&origin]), get(&format!("{origin}/")), soon())
            .await
            .unwrap_err();
        assert!(
            error.contains("UnknownIssuer") || error.contains("no trusted root"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn client_certificate_is_presented() {
        let port = serve_tls(true).await;
        let origin = format!("https://localhost:{port}");
        let with_certificate = Client {
            tls: test_tls(Some((CLIENT, CLIENT_KEY_ENCRYPTED, "hunter2"))),
            ..open()
        };
        let answer = with_certificate
            .send(&grant(&[&origin]), get(&format!("{origin}/")), soon())
            .await
            .unwrap();
        assert_eq!(answer.body, b"client");
        let port = serve_tls(true).await;
        let origin = format!("https://localhost:{port}");
        assert!(
            open()
                .send(&grant(&[&origin]), get(&format!("{origin}/")), soon())
                .await
                .is_err()
        );
        let plain_key = Client {
            tls: test_tls(Some((CLIENT, CLIENT_KEY, ""))),
            ..open()
        };
        let port = serve_tls(true).await;
        let origin = format!("https://127.0.0.1:{port}");
        let answer = plain_key
            .send(&grant(&[&origin]), get(&format!("{origin}/")), soon())
            .await
            .unwrap();
        assert_eq!(answer.body, b"client");
    }

    #[tokio::test]
    async fn without_rebinding_protection_the_connection_is_made_by_name() {
        let origin = "http://no-such-host.invalid:9";
        let pinned = open()
            .send(&grant(&[origin]), get(&format!("{origin}/")), soon())
            .await
            .unwrap_err();
        assert!(pinned.contains("cannot be resolved"), "{pinned}");
        let by_name = client(AddressPolicy {
            pin: false,
            ..AddressPolicy::default()
        });
        let error = by_name
            .send(&grant(&[origin]), get(&format!("{origin}/")), soon())
            .await
            .unwrap_err();
        assert!(
            error.contains("connecting to no-such-host.invalid:9"),
            "{error}"
        );
        // Still checked: a name that resolves to a local address is refused.
        let origin = "http://localhost:9";
        let error = by_name
            .send(&grant(&[origin]), get(&format!("{origin}/")), soon())
            .await
            .unwrap_err();
        assert!(error.contains("localhost are not allowed"), "{error}");
    }
}
