//! Caps on the connections a listener holds open, in all and from one client address, so that
//! no caller can take the process's file descriptors: without them, 260 SSH connections that
//! sent only a banner exhausted them and the HTTP API stopped answering. A connection over a
//! cap is closed as soon as it is accepted, as OpenSSH's `MaxStartups` does.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// Counts the open connections of one kind; each admitted connection holds an [`Admitted`].
#[derive(Clone)]
pub struct ConnectionCaps {
    inner: Arc<Caps>,
}

struct Caps {
    total: usize,
    per_address: usize,
    /// Addresses no per-address cap applies to (trusted proxies, whose connections carry many
    /// clients).
    exempt: Vec<ipnet::IpNet>,
    open: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    total: usize,
    by_address: HashMap<IpAddr, usize>,
}

impl ConnectionCaps {
    pub fn new(total: usize, per_address: usize, exempt: Vec<ipnet::IpNet>) -> ConnectionCaps {
        ConnectionCaps {
            inner: Arc::new(Caps {
                total: total.max(1),
                per_address: per_address.max(1),
                exempt,
                open: Mutex::default(),
            }),
        }
    }

    /// A place for a connection from `address`, held until the guard is dropped; `None` when
    /// either cap is reached.
    pub fn admit(&self, address: IpAddr) -> Option<Admitted> {
        let caps = &self.inner;
        let address = canonical(address);
        let capped = !caps.exempt.iter().any(|net| net.contains(&address));
        let mut open = caps.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.total >= caps.total {
            return None;
        }
        if capped {
            let from_address = open.by_address.entry(address).or_default();
            if *from_address >= caps.per_address {
                return None;
            }
            *from_address += 1;
        }
        open.total += 1;
        Some(Admitted {
            caps: self.inner.clone(),
            address: capped.then_some(address),
        })
    }

    /// Connections open now.
    #[cfg(test)]
    fn open(&self) -> usize {
        self.inner
            .open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .total
    }
}

/// IPv4 clients reaching a dual-stack listener count as their IPv4 address.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        v4 => v4,
    }
}

/// One admitted connection's place; dropping it frees the place.
pub struct Admitted {
    caps: Arc<Caps>,
    address: Option<IpAddr>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.caps.open.lock().unwrap_or_else(|e| e.into_inner());
        open.total -= 1;
        if let Some(address) = self.address
            && let Some(count) = open.by_address.get_mut(&address)
        {
            *count -= 1;
            if *count == 0 {
                open.by_address.remove(&address);
            }
        }
    }
}

/// The process's limit on open files, from which the listeners' default caps are taken.
pub fn open_file_limit() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only into the struct it is given.
    let read = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    if read == 0 {
        usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX)
    } else {
        1024
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_hold_in_all_and_per_address_and_free_on_drop() {
        let caps = ConnectionCaps::new(3, 2, vec!["10.0.0.0/8".parse().unwrap()]);
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        let proxy: IpAddr = "10.1.1.1".parse().unwrap();
        let first = caps.admit(a).expect("room");
        let _second = caps.admit(a).expect("room");
        assert!(caps.admit(a).is_none(), "the address's cap holds");
        let _third = caps.admit(b).expect("another address has room");
        assert!(caps.admit(proxy).is_none(), "the total cap holds");
        drop(first);
        assert_eq!(caps.open(), 2);
        let _proxied = caps.admit(proxy).expect("a freed place is taken");
        let mapped: IpAddr = "::ffff:192.0.2.1".parse().unwrap();
        assert!(caps.admit(mapped).is_none(), "everything is taken");
    }

    #[test]
    fn exempt_addresses_have_no_address_cap() {
        let caps = ConnectionCaps::new(10, 1, vec!["10.0.0.0/8".parse().unwrap()]);
        let proxy: IpAddr = "10.1.1.1".parse().unwrap();
        let held: Vec<_> = (0..5).map(|_| caps.admit(proxy).expect("room")).collect();
        assert_eq!(held.len(), 5);
    }
}
