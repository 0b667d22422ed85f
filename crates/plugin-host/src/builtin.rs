//! Plugins compiled from `plugins/` by this crate's build.rs and embedded in the binary. They
//! are in every tenant's catalog.

use std::sync::LazyLock;

use sha2::{Digest, Sha256};

pub struct BuiltIn {
    pub name: &'static str,
    pub version: &'static str,
    pub bytes: &'static [u8],
}

pub const BUILT_INS: &[BuiltIn] = &[
    BuiltIn {
        name: "spam-filter",
        version: env!("CARGO_PKG_VERSION"),
        bytes: include_bytes!(concat!(env!("OUT_DIR"), "/trellis_spam_filter.wasm")),
    },
    EXTERNAL_AUTHORIZATION,
    BuiltIn {
        name: "push-rules",
        version: env!("CARGO_PKG_VERSION"),
        bytes: include_bytes!(concat!(env!("OUT_DIR"), "/trellis_push_rules.wasm")),
    },
    WEBHOOK_FORMATTER,
];

/// Speaks GitLab's external authorization protocol; the host binds it itself when
/// `external_authorization_service_enabled` is on (external_auth).
pub(crate) const EXTERNAL_AUTHORIZATION: BuiltIn = BuiltIn {
    name: "external-authorization",
    version: env!("CARGO_PKG_VERSION"),
    bytes: include_bytes!(concat!(
        env!("OUT_DIR"),
        "/trellis_external_authorization.wasm"
    )),
};

/// GitLab's format, chat messages and CloudEvents; every webhook delivery goes through it
/// unless its hook names the tenant's own `webhook_formatter` binding (the server's
/// webhooks::format).
pub const WEBHOOK_FORMATTER: BuiltIn = BuiltIn {
    name: "webhook-formatter",
    version: env!("CARGO_PKG_VERSION"),
    bytes: include_bytes!(concat!(env!("OUT_DIR"), "/trellis_webhook_formatter.wasm")),
};

/// The built-ins with their sha256, computed once.
pub fn with_digests() -> &'static [(&'static BuiltIn, String)] {
    static DIGESTS: LazyLock<Vec<(&'static BuiltIn, String)>> = LazyLock::new(|| {
        BUILT_INS
            .iter()
            .map(|b| (b, hex::encode(Sha256::digest(b.bytes))))
            .collect()
    });
    &DIGESTS
}

pub fn by_sha256(sha256: &str) -> Option<&'static BuiltIn> {
    with_digests()
        .iter()
        .find(|(_, digest)| digest == sha256)
        .map(|(b, _)| *b)
}
