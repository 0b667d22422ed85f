//! The tenant settings the plugin host reads, implemented by the server's settings: the
//! address policy's (through [`OutboundSettings`]) and external authorization's.

use trellis_outbound::OutboundSettings;

/// A tenant's settings as the plugin host reads them (GitLab's names).
pub trait PluginSettings: OutboundSettings {
    /// What decrypts the write-only settings (the client key and its passphrase).
    type SecretKey: ?Sized;

    /// When the settings last changed: cached decisions and client certificates are kept
    /// only while it stays the same.
    fn updated_at(&self) -> i64;
    fn external_authorization_service_enabled(&self) -> bool;
    fn external_authorization_service_default_label(&self) -> Option<String>;
    fn external_authorization_service_url(&self) -> Option<String>;
    /// Seconds.
    fn external_authorization_service_timeout(&self) -> Option<f64>;
    /// PEM.
    fn external_auth_client_cert(&self) -> Option<String>;
    /// PEM, decrypted with `key`; `None` when unset or `key` does not decrypt it.
    fn external_auth_client_key(&self, key: &Self::SecretKey) -> Option<String>;
    fn external_auth_client_key_pass(&self, key: &Self::SecretKey) -> Option<String>;
}
