//! Requests the server makes to other hosts (hooks, repository imports and mirrors, plugins'
//! HTTP): which addresses they may go to. GitLab refuses requests to the local machine and
//! the local network unless `allow_local_requests_from_web_hooks_and_services` is on or the
//! host is in `outbound_local_requests_whitelist`; this crate is that check, separate from
//! any HTTP client so every outbound path (git fetches, hook deliveries) shares it. It
//! depends on nothing of the server: the tenant settings it reads come through
//! [`OutboundSettings`].
//!
//! Above the tenant's settings sits the operator's `--outbound-allow-networks`: a tenant's
//! `allow_local_*` and allowlist open only what is also in that list, so by default nothing
//! loopback, link-local, private or otherwise non-public is reachable, whatever a tenant
//! administrator sets (their settings can narrow the operator's list, never widen it).
//!
//! [`AddressPolicy::check`] resolves the host and classifies every address it resolves to;
//! the checked addresses are returned so a client can connect to exactly those (no second
//! lookup an attacker could answer differently).

mod address;
mod allowlist;
pub mod http;
pub mod tls;

use address::{AddressClass, classify};
use allowlist::Allowlist;
pub use allowlist::operator_entry;

use std::net::{IpAddr, SocketAddr};

use serde_json::Value;

/// The tenant settings the address policy reads (GitLab's names), implemented by the server's
/// settings.
pub trait OutboundSettings {
    fn allow_local_requests_from_web_hooks_and_services(&self) -> bool;
    fn allow_local_requests_from_system_hooks(&self) -> bool;
    /// Hosts, addresses and ranges (an array of strings, or one separated string).
    fn outbound_local_requests_whitelist(&self) -> Value;
    fn dns_rebinding_protection_enabled(&self) -> bool;
}

/// Why an outbound URL is refused, with GitLab's wording (shown after "is blocked: ").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Blocked {
    #[error("URI is invalid")]
    Invalid,
    #[error("Only allowed schemes are {0}")]
    Scheme(String),
    #[error("Requests to localhost are not allowed")]
    Localhost,
    #[error("Requests to the local network are not allowed")]
    LocalNetwork,
    #[error("Requests to the link local network are not allowed")]
    LinkLocal,
    #[error("Requests to the limited broadcast address are not allowed")]
    Broadcast,
    #[error("Host cannot be resolved or invalid")]
    Unresolvable,
}

/// When a host name does not resolve: refuse (before connecting), or let it pass (when only
/// validating a URL that is stored for later, as GitLab does for hook URLs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unresolved {
    Refuse,
    Allow,
}

/// Which destinations outbound requests may reach.
#[derive(Debug, Clone)]
pub struct AddressPolicy {
    /// What the operator opens (`--outbound-allow-networks`): a non-public address is
    /// reachable only when listed here, and then only if the tenant allows it too.
    pub(crate) operator: Allowlist,
    /// Loopback, private, link-local and unique-local addresses are allowed.
    pub(crate) allow_local: bool,
    /// Hosts, addresses and ranges allowed even when local ones are not.
    pub(crate) allowlist: Allowlist,
    /// Connect to the address that was checked (`dns_rebinding_protection_enabled`, GitLab's
    /// default). Off, the URL is still checked but the connection is made by host name, as
    /// GitLab does, so a second DNS answer decides where it goes (the connected address is
    /// still checked, see [`http::Client`]).
    pub(crate) pin: bool,
}

impl Default for AddressPolicy {
    /// Nothing local allowed, addresses pinned.
    fn default() -> AddressPolicy {
        AddressPolicy {
            operator: Allowlist::default(),
            allow_local: false,
            allowlist: Allowlist::default(),
            pin: true,
        }
    }
}

impl AddressPolicy {
    /// The policy for web hooks and integrations (and repository imports and mirrors, and
    /// plugins' outbound HTTP): the tenant's settings within the operator's `networks`.
    pub fn for_hooks_and_services(
        networks: &[String],
        settings: &(impl OutboundSettings + ?Sized),
    ) -> AddressPolicy {
        AddressPolicy {
            operator: Allowlist::from_entries(networks),
            allow_local: settings.allow_local_requests_from_web_hooks_and_services(),
            allowlist: Allowlist::from_setting(&settings.outbound_local_requests_whitelist()),
            pin: settings.dns_rebinding_protection_enabled(),
        }
    }

    /// The policy for system hooks: as [`AddressPolicy::for_hooks_and_services`], with
    /// `allow_local_requests_from_system_hooks` deciding local addresses.
    pub fn for_system_hooks(
        networks: &[String],
        settings: &(impl OutboundSettings + ?Sized),
    ) -> AddressPolicy {
        AddressPolicy {
            allow_local: settings.allow_local_requests_from_system_hooks(),
            ..AddressPolicy::for_hooks_and_services(networks, settings)
        }
    }

    /// Checks `url` (its scheme among `schemes`) and returns the addresses it may be reached
    /// at (empty when it did not resolve and `unresolved` let it pass).
    pub async fn check(
        &self,
        url: &url::Url,
        schemes: &[&str],
        unresolved: Unresolved,
    ) -> Result<Vec<SocketAddr>, Blocked> {
        if !schemes.contains(&url.scheme()) {
            return Err(Blocked::Scheme(schemes.join(", ")));
        }
        let host = match url.host() {
            Some(url::Host::Domain(d)) if !d.is_empty() => Host::Name(d.to_string()),
            Some(url::Host::Ipv4(ip)) => Host::Ip(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => Host::Ip(IpAddr::V6(ip)),
            _ => return Err(Blocked::Invalid),
        };
        let port = url.port_or_known_default().unwrap_or(match url.scheme() {
            "git" => 9418,
            "ssh" => 22,
            _ => 80,
        });
        let addresses = match &host {
            Host::Ip(ip) => vec![SocketAddr::new(*ip, port)],
            Host::Name(name) => match tokio::net::lookup_host((name.as_str(), port)).await {
                Ok(found) => found.collect(),
                Err(_) => Vec::new(),
            },
        };
        if addresses.is_empty() {
            return match unresolved {
                Unresolved::Allow => Ok(Vec::new()),
                Unresolved::Refuse => Err(Blocked::Unresolvable),
            };
        }
        let name = match &host {
            Host::Name(name) => Some(name.as_str()),
            Host::Ip(_) => None,
        };
        for address in &addresses {
            self.check_address(name, *address)?;
        }
        Ok(addresses)
    }

    /// Whether one resolved address of `host` may be reached.
    pub(crate) fn check_address(
        &self,
        host: Option<&str>,
        address: SocketAddr,
    ) -> Result<(), Blocked> {
        let class = classify(address.ip());
        if class == AddressClass::Public {
            return Ok(());
        }
        let tenant_allows = self.allow_local || self.allowlist.allows(host, address);
        if tenant_allows && self.operator.allows(host, address) {
            return Ok(());
        }
        Err(match class {
            AddressClass::Loopback | AddressClass::Unspecified => Blocked::Localhost,
            AddressClass::LinkLocal => Blocked::LinkLocal,
            AddressClass::Broadcast => Blocked::Broadcast,
            AddressClass::Private | AddressClass::Public => Blocked::LocalNetwork,
        })
    }
}

enum Host {
    Name(String),
    Ip(IpAddr),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn url(s: &str) -> url::Url {
        url::Url::parse(s).unwrap()
    }

    const WEB: &[&str] = &["http", "https"];

    #[tokio::test]
    async fn local_addresses_are_refused_by_default() {
        let policy = AddressPolicy::default();
        for (target, blocked) in [
            ("http://127.0.0.1/", Blocked::Localhost),
            ("http://[::1]:8080/", Blocked::Localhost),
            ("http://0.0.0.0/", Blocked::Localhost),
            ("http://localhost/", Blocked::Localhost),
            ("http://10.1.2.3/", Blocked::LocalNetwork),
            ("http://192.168.0.1/", Blocked::LocalNetwork),
            ("http://[fd00::1]/", Blocked::LocalNetwork),
            ("http://169.254.169.254/", Blocked::LinkLocal),
            ("http://[fe80::1]/", Blocked::LinkLocal),
            ("http://[::ffff:127.0.0.1]/", Blocked::Localhost),
            ("http://255.255.255.255/", Blocked::Broadcast),
        ] {
            assert_eq!(
                policy.check(&url(target), WEB, Unresolved::Refuse).await,
                Err(blocked),
                "{target}"
            );
        }
        assert!(
            policy
                .check(&url("https://93.184.216.34/x"), WEB, Unresolved::Refuse)
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn schemes_setting_and_allowlist() {
        let policy = AddressPolicy::default();
        assert_eq!(
            policy
                .check(&url("ftp://93.184.216.34/"), WEB, Unresolved::Refuse)
                .await,
            Err(Blocked::Scheme("http, https".into()))
        );
        let open = AddressPolicy {
            allow_local: true,
            operator: Allowlist::from_entries(&["127.0.0.0/8".into(), "10.0.0.0/8".into()]),
            ..AddressPolicy::default()
        };
        assert!(
            open.check(&url("http://127.0.0.1:9/"), WEB, Unresolved::Refuse)
                .await
                .is_ok()
        );
        let listed = AddressPolicy {
            allowlist: Allowlist::from_setting(&json!(["127.0.0.1:9000", "10.0.0.0/8"])),
            operator: open.operator.clone(),
            ..AddressPolicy::default()
        };
        assert!(
            listed
                .check(&url("http://127.0.0.1:9000/"), WEB, Unresolved::Refuse)
                .await
                .is_ok()
        );
        assert_eq!(
            listed
                .check(&url("http://127.0.0.1:9001/"), WEB, Unresolved::Refuse)
                .await,
            Err(Blocked::Localhost)
        );
        assert!(
            listed
                .check(&url("http://10.9.9.9/"), WEB, Unresolved::Refuse)
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn tenant_settings_open_only_what_the_operator_opens() {
        let tenant_opens_everything = |operator: &[&str]| AddressPolicy {
            allow_local: true,
            allowlist: Allowlist::from_setting(&json!(["169.254.169.254", "10.0.0.0/8"])),
            operator: Allowlist::from_entries(
                &operator.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            ),
            pin: true,
        };
        let closed = tenant_opens_everything(&[]);
        for (target, blocked) in [
            ("http://127.0.0.1:9/", Blocked::Localhost),
            ("http://localhost:9/", Blocked::Localhost),
            ("http://10.1.2.3/", Blocked::LocalNetwork),
            ("http://169.254.169.254/", Blocked::LinkLocal),
            ("http://[64:ff9b::7f00:1]/", Blocked::LocalNetwork),
            ("http://198.18.0.1/", Blocked::LocalNetwork),
        ] {
            assert_eq!(
                closed.check(&url(target), WEB, Unresolved::Refuse).await,
                Err(blocked),
                "{target}"
            );
        }
        let loopback = tenant_opens_everything(&["127.0.0.0/8"]);
        assert!(
            loopback
                .check(&url("http://127.0.0.1:9/"), WEB, Unresolved::Refuse)
                .await
                .is_ok()
        );
        assert_eq!(
            loopback
                .check(&url("http://10.1.2.3/"), WEB, Unresolved::Refuse)
                .await,
            Err(Blocked::LocalNetwork)
        );
        // The operator's list alone opens nothing the tenant keeps closed.
        let tenant_closed = AddressPolicy {
            operator: Allowlist::from_entries(&["127.0.0.0/8".into()]),
            ..AddressPolicy::default()
        };
        assert_eq!(
            tenant_closed
                .check(&url("http://127.0.0.1:9/"), WEB, Unresolved::Refuse)
                .await,
            Err(Blocked::Localhost)
        );
    }

    #[tokio::test]
    async fn unresolvable_hosts() {
        let policy = AddressPolicy::default();
        let unknown = url("http://no-such-host.invalid/");
        assert_eq!(
            policy.check(&unknown, WEB, Unresolved::Refuse).await,
            Err(Blocked::Unresolvable)
        );
        assert_eq!(
            policy.check(&unknown, WEB, Unresolved::Allow).await,
            Ok(Vec::new())
        );
    }
}
