//! Redirect URIs: what may be registered, and whether a requested URI matches a registered one
//! (Doorkeeper's `URIChecker`, as GitLab uses it): scheme, host, port and path must be equal;
//! a query on the request is ignored only when the registered URI has none, otherwise the two
//! queries must hold the same parameters; loopback IP literals match on any port (RFC 8252 7.3).

use std::net::IpAddr;

use url::Url;

/// Schemes GitLab refuses at registration.
const FORBIDDEN_SCHEMES: &[&str] = &["javascript", "data", "vbscript"];

/// Why a URI cannot be registered, as Doorkeeper's validation messages word it.
pub fn registration_error(uri: &str) -> Option<&'static str> {
    let Ok(parsed) = Url::parse(uri) else {
        return Some(if uri.contains(':') {
            "must be a valid URI."
        } else {
            "must be an absolute URI."
        });
    };
    if FORBIDDEN_SCHEMES.contains(&parsed.scheme()) {
        return Some("is forbidden by the server.");
    }
    if parsed.fragment().is_some() {
        return Some("cannot contain a fragment.");
    }
    if !has_clean_path(uri) {
        return Some("must be a valid URI.");
    }
    None
}

/// The path as written has no dot segments, backslashes or encoded dots: what `url` would
/// silently normalise must not make two different strings match.
fn has_clean_path(raw: &str) -> bool {
    let lowered = raw.to_ascii_lowercase();
    let before_query = lowered.split(['?', '#']).next().unwrap_or("");
    !before_query.contains('\\')
        && !before_query.contains("%2e")
        && !before_query.contains("%2f")
        && !before_query
            .split('/')
            .skip(3)
            .any(|segment| segment == "." || segment == "..")
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        _ => false,
    }
}

fn sorted_pairs(url: &Url) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    pairs.sort();
    pairs
}

/// Whether `requested` is allowed by the registered URI `registered`.
pub fn matches(requested: &str, registered: &str) -> bool {
    let (Ok(asked), Ok(known)) = (Url::parse(requested), Url::parse(registered)) else {
        return false;
    };
    if asked.fragment().is_some() || !has_clean_path(requested) {
        return false;
    }
    if known.query().is_some() && sorted_pairs(&asked) != sorted_pairs(&known) {
        return false;
    }
    let same_port = asked.port_or_known_default() == known.port_or_known_default()
        || (is_loopback(&asked) && is_loopback(&known));
    asked.scheme() == known.scheme()
        && asked.username() == known.username()
        && asked.password() == known.password()
        && asked.host() == known.host()
        && same_port
        && asked.path() == known.path()
}

/// Whether `requested` matches any of the registered URIs.
pub fn any_matches<'a>(requested: &str, registered: impl IntoIterator<Item = &'a str>) -> bool {
    registered
        .into_iter()
        .any(|known| matches(requested, known))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_matching() {
        let reg = "https://app.example/cb";
        assert!(matches("https://app.example/cb", reg));
        assert!(matches("https://app.example/cb?extra=1", reg));
        assert!(!matches("https://app.example/cb/evil", reg));
        assert!(!matches("https://app.example/cbx", reg));
        assert!(!matches("https://app.example.evil.com/cb", reg));
        assert!(!matches("https://app.example@evil.com/cb", reg));
        assert!(!matches("https://evil.com/cb", reg));
        assert!(!matches("http://app.example/cb", reg));
        assert!(!matches("https://app.example:8443/cb", reg));
        assert!(!matches("https://app.example/x/../cb", reg));
        assert!(!matches("https://app.example/cb#frag", reg));
        assert!(!matches("https://APP.example/cb/", reg));
    }

    #[test]
    fn registered_query_must_match() {
        let reg = "https://app.example/cb?a=1&b=2";
        assert!(matches("https://app.example/cb?b=2&a=1", reg));
        assert!(!matches("https://app.example/cb?a=1", reg));
        assert!(!matches("https://app.example/cb?a=1&b=2&c=3", reg));
    }

    #[test]
    fn loopback_any_port() {
        assert!(matches("http://127.0.0.1:5555/cb", "http://127.0.0.1/cb"));
        assert!(matches("http://[::1]:5555/cb", "http://[::1]:80/cb"));
        assert!(!matches("http://localhost:5555/cb", "http://localhost/cb"));
    }

    #[test]
    fn registration() {
        assert_eq!(
            registration_error("javascript:alert(1)"),
            Some("is forbidden by the server.")
        );
        assert_eq!(
            registration_error("data:text/html,x"),
            Some("is forbidden by the server.")
        );
        assert_eq!(
            registration_error("VBScript:x"),
            Some("is forbidden by the server.")
        );
        assert_eq!(
            registration_error("https://a/cb#x"),
            Some("cannot contain a fragment.")
        );
        assert_eq!(
            registration_error("/relative"),
            Some("must be an absolute URI.")
        );
        assert_eq!(registration_error("https://a/cb"), None);
        assert_eq!(registration_error("com.example.app:/cb"), None);
    }
}
