//! `outbound_local_requests_whitelist`: entries that may be reached although local. GitLab
//! accepts host names (`example.com`, `*.example.com`), IP addresses and CIDR ranges, each
//! optionally with a port (`host:8080`, `127.0.0.1:9000`, `[::1]:80`). The operator's
//! `--outbound-allow-networks` takes the same entries, checked strictly ([`operator_entry`]).

use std::net::{IpAddr, SocketAddr};

use ipnet::IpNet;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    Ip(IpAddr, Option<u16>),
    Net(IpNet),
    Domain(String, Option<u16>),
    /// `*.example.com`: subdomains of the name.
    Wildcard(String, Option<u16>),
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Allowlist(Vec<Entry>);

/// `text` split into a host part and an optional port.
fn split_port(text: &str) -> (&str, Option<u16>) {
    if let Some(rest) = text.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((host, tail)) => (host, tail.strip_prefix(':').and_then(|p| p.parse().ok())),
            None => (text, None),
        };
    }
    match text.rsplit_once(':') {
        // more than one colon and no brackets: a bare IPv6 address
        Some((host, port)) if !host.contains(':') => match port.parse() {
            Ok(port) => (host, Some(port)),
            Err(_) => (text, None),
        },
        _ => (text, None),
    }
}

fn parse(entry: &str) -> Option<Entry> {
    let entry = entry.trim();
    if entry.is_empty() {
        return None;
    }
    if let Ok(net) = entry.parse::<IpNet>() {
        return Some(Entry::Net(net));
    }
    let (host, port) = split_port(entry);
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Some(Entry::Ip(ip, port));
    }
    let host = host.to_ascii_lowercase();
    match host.strip_prefix("*.") {
        Some(domain) => Some(Entry::Wildcard(domain.to_string(), port)),
        None => Some(Entry::Domain(host, port)),
    }
}

fn port_matches(wanted: Option<u16>, port: u16) -> bool {
    wanted.is_none_or(|p| p == port)
}

/// Validates one entry of `--outbound-allow-networks` (clap's value parser): a CIDR range, an
/// address or a host name (`*.` for subdomains), optionally with a port. A typo must fail the
/// start rather than open or close something else.
pub fn operator_entry(text: &str) -> Result<String, String> {
    let host_name = |name: &str| {
        !name.is_empty()
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            })
    };
    match parse(text) {
        None => Err("an empty entry".into()),
        Some(Entry::Domain(name, _) | Entry::Wildcard(name, _)) if !host_name(&name) => Err(
            format!("{text:?} is not a CIDR range, an address or a host name"),
        ),
        Some(_) => Ok(text.trim().to_string()),
    }
}

impl Allowlist {
    /// From entries already validated by [`operator_entry`].
    pub(crate) fn from_entries(entries: &[String]) -> Allowlist {
        Allowlist(entries.iter().filter_map(|t| parse(t)).collect())
    }

    /// From the setting's value: an array of strings (or one string of entries separated by
    /// commas, semicolons or whitespace, as GitLab's form takes them).
    pub(crate) fn from_setting(value: &Value) -> Allowlist {
        let texts: Vec<String> = match value {
            Value::Array(items) => items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            Value::String(s) => s
                .split(|c: char| c == ',' || c == ';' || c.is_whitespace())
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        };
        Allowlist(texts.iter().filter_map(|t| parse(t)).collect())
    }

    /// Whether `address` (resolved from `host`, when a name) is listed.
    pub(crate) fn allows(&self, host: Option<&str>, address: SocketAddr) -> bool {
        let host = host.map(str::to_ascii_lowercase);
        self.0.iter().any(|entry| match entry {
            Entry::Ip(ip, port) => *ip == address.ip() && port_matches(*port, address.port()),
            Entry::Net(net) => net.contains(&address.ip()),
            Entry::Domain(name, port) => {
                host.as_deref() == Some(name.as_str()) && port_matches(*port, address.port())
            }
            Entry::Wildcard(domain, port) => {
                host.as_deref()
                    .is_some_and(|h| h.ends_with(&format!(".{domain}")))
                    && port_matches(*port, address.port())
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn entries() {
        let list = Allowlist::from_setting(&json!([
            "gitlab.local",
            "*.corp.example:8443",
            "192.168.1.0/24",
            "[::1]:80",
            "10.0.0.7"
        ]));
        assert!(list.allows(Some("GitLab.local"), addr("10.1.1.1:443")));
        assert!(list.allows(Some("a.corp.example"), addr("10.1.1.1:8443")));
        assert!(!list.allows(Some("a.corp.example"), addr("10.1.1.1:443")));
        assert!(list.allows(None, addr("192.168.1.9:22")));
        assert!(list.allows(None, addr("[::1]:80")));
        assert!(!list.allows(None, addr("[::1]:81")));
        assert!(list.allows(None, addr("10.0.0.7:1")));
        assert!(!list.allows(None, addr("10.0.0.8:1")));
        let text = Allowlist::from_setting(&json!("a.example, 127.0.0.1;b.example"));
        assert!(text.allows(None, addr("127.0.0.1:5")));
        assert!(text.allows(Some("b.example"), addr("127.0.0.1:5")));
    }

    #[test]
    fn operator_entries_are_checked() {
        for good in [
            "127.0.0.0/8",
            "::1/128",
            "10.0.0.7:9000",
            "git.internal",
            "*.corp.example:443",
        ] {
            assert_eq!(operator_entry(good).as_deref(), Ok(good));
        }
        for bad in ["", " ", "10.0.0.0/33", "not a host", "http://x", "a..b"] {
            assert!(operator_entry(bad).is_err(), "{bad:?}");
        }
    }
}
