//! The settings the outbound and plugin-host crates read, through their traits: they depend on
//! nothing of the server, so they cannot name its keys.

use serde_json::Value;

use super::keys;
use super::{SecretKey, Settings};
use crate::outbound::OutboundSettings;
use crate::plugins::PluginSettings;

impl OutboundSettings for Settings {
    fn allow_local_requests_from_web_hooks_and_services(&self) -> bool {
        self.get(keys::ALLOW_LOCAL_REQUESTS_FROM_WEB_HOOKS_AND_SERVICES)
    }

    fn allow_local_requests_from_system_hooks(&self) -> bool {
        self.get(keys::ALLOW_LOCAL_REQUESTS_FROM_SYSTEM_HOOKS)
    }

    fn outbound_local_requests_whitelist(&self) -> Value {
        self.get(keys::OUTBOUND_LOCAL_REQUESTS_WHITELIST)
    }

    fn dns_rebinding_protection_enabled(&self) -> bool {
        self.get(keys::DNS_REBINDING_PROTECTION_ENABLED)
    }
}

impl PluginSettings for Settings {
    type SecretKey = SecretKey;

    fn updated_at(&self) -> i64 {
        self.updated_at
    }

    fn external_authorization_service_enabled(&self) -> bool {
        self.get(keys::EXTERNAL_AUTHORIZATION_SERVICE_ENABLED)
    }

    fn external_authorization_service_default_label(&self) -> Option<String> {
        self.get(keys::EXTERNAL_AUTHORIZATION_SERVICE_DEFAULT_LABEL)
    }

    fn external_authorization_service_url(&self) -> Option<String> {
        self.get(keys::EXTERNAL_AUTHORIZATION_SERVICE_URL)
    }

    fn external_authorization_service_timeout(&self) -> Option<f64> {
        self.get(keys::EXTERNAL_AUTHORIZATION_SERVICE_TIMEOUT)
    }

    fn external_auth_client_cert(&self) -> Option<String> {
        self.get(keys::EXTERNAL_AUTH_CLIENT_CERT)
    }

    fn external_auth_client_key(&self, key: &SecretKey) -> Option<String> {
        self.secret(keys::EXTERNAL_AUTH_CLIENT_KEY, key)
    }

    fn external_auth_client_key_pass(&self, key: &SecretKey) -> Option<String> {
        self.secret(keys::EXTERNAL_AUTH_CLIENT_KEY_PASS, key)
    }
}
