//! Plugins compiled from `plugins/` by host/build.rs and embedded in the binary. They are in
//! every tenant's catalog.

pub struct BuiltIn {
    pub name: &'static str,
    pub version: &'static str,
    pub bytes: &'static [u8],
}

pub const BUILT_INS: &[BuiltIn] = &[BuiltIn {
    name: "spam-filter",
    version: env!("CARGO_PKG_VERSION"),
    bytes: include_bytes!(concat!(env!("OUT_DIR"), "/trellis_spam_filter.wasm")),
}];

pub fn by_sha256(sha256: &str) -> Option<&'static BuiltIn> {
    BUILT_INS.iter().find(|b| b.sha256() == sha256)
}

impl BuiltIn {
    pub fn sha256(&self) -> String {
        use sha2::{Digest, Sha256};
        hex::encode(Sha256::digest(self.bytes))
    }
}
