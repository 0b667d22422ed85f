//! What kind of network an address belongs to.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AddressClass {
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// 0.0.0.0, :: (reach the local machine).
    Unspecified,
    /// 10/8, 172.16/12, 192.168/16, 100.64/10 (shared), fc00::/7 (unique local), and the
    /// ranges that are not public although not local either: 198.18/15 (benchmarking),
    /// 240/4 (reserved), 64:ff9b::/96 and 64:ff9b:1::/48 (NAT64), 2002::/16 (6to4) and
    /// 2001::/32 (Teredo), whose embedded IPv4 address a gateway would reach for us.
    Private,
    /// 169.254/16, fe80::/10.
    LinkLocal,
    /// 255.255.255.255.
    Broadcast,
    Public,
}

/// Classifies an address; IPv4-mapped and IPv4-compatible IPv6 addresses count as their
/// IPv4 address.
pub(crate) fn classify(ip: IpAddr) -> AddressClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => classify_v4(v4),
            None => classify_v6(v6),
        },
    }
}

fn classify_v4(ip: Ipv4Addr) -> AddressClass {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        AddressClass::Loopback
    } else if ip.is_unspecified() || a == 0 {
        AddressClass::Unspecified
    } else if ip.is_broadcast() {
        AddressClass::Broadcast
    } else if ip.is_link_local() {
        AddressClass::LinkLocal
    } else if ip.is_private()
        || (a == 100 && (64..128).contains(&b))
        || (a == 198 && (b & 0xfe) == 18)
        || a >= 240
    {
        AddressClass::Private
    } else {
        AddressClass::Public
    }
}

fn classify_v6(ip: Ipv6Addr) -> AddressClass {
    let s = ip.segments();
    let first = s[0];
    let nat64 = first == 0x64 && s[1] == 0xff9b && (s[2..6].iter().all(|x| *x == 0) || s[2] == 1);
    let tunnel = first == 0x2002 || (first == 0x2001 && s[1] == 0);
    if ip.is_loopback() {
        AddressClass::Loopback
    } else if ip.is_unspecified() {
        AddressClass::Unspecified
    } else if first & 0xffc0 == 0xfe80 {
        AddressClass::LinkLocal
    } else if first & 0xfe00 == 0xfc00 || nat64 || tunnel {
        AddressClass::Private
    } else {
        AddressClass::Public
    }
}

/// The IPv4 address inside `::ffff:a.b.c.d` (mapped) or `::a.b.c.d` (compatible, not `::1`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    let compatible = s[..6].iter().all(|x| *x == 0) && !ip.is_loopback() && !ip.is_unspecified();
    compatible.then(|| Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(s: &str) -> AddressClass {
        classify(s.parse().unwrap())
    }

    #[test]
    fn classes() {
        assert_eq!(class("127.1.2.3"), AddressClass::Loopback);
        assert_eq!(class("::1"), AddressClass::Loopback);
        assert_eq!(class("0.0.0.0"), AddressClass::Unspecified);
        assert_eq!(class("::"), AddressClass::Unspecified);
        assert_eq!(class("172.20.0.1"), AddressClass::Private);
        assert_eq!(class("100.100.0.1"), AddressClass::Private);
        assert_eq!(class("fc00::5"), AddressClass::Private);
        assert_eq!(class("169.254.1.1"), AddressClass::LinkLocal);
        assert_eq!(class("fe80::1"), AddressClass::LinkLocal);
        assert_eq!(class("::ffff:10.0.0.1"), AddressClass::Private);
        assert_eq!(class("::127.0.0.1"), AddressClass::Loopback);
        assert_eq!(class("8.8.8.8"), AddressClass::Public);
        assert_eq!(class("2001:4860::8888"), AddressClass::Public);
        assert_eq!(class("172.32.0.1"), AddressClass::Public);
        for not_public in [
            "198.18.0.1",
            "198.19.255.255",
            "240.0.0.1",
            "254.1.2.3",
            "64:ff9b::7f00:1",
            "64:ff9b:1::a00:1",
            "2002:7f00:1::",
            "2001:0:4136:e378::1",
        ] {
            assert_eq!(class(not_public), AddressClass::Private, "{not_public}");
        }
        assert_eq!(class("198.20.0.1"), AddressClass::Public);
        assert_eq!(class("2001:db9::1"), AddressClass::Public);
    }
}
