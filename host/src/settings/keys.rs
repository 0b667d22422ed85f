//! The settings the server reads, as typed keys: `settings.get(keys::ADMIN_MODE)` is a `bool`,
//! and a misspelt name does not compile (reading by name silently gave `false`). Keys are
//! made only here, and a test checks each against the catalog (name, kind, secrecy), so a
//! constant cannot drift from the setting it reads. The catalog-driven view and validation
//! still go through every setting by name; nothing else does.

use serde_json::Value;

use crate::model::visibility::Visibility;

#[cfg(test)]
use super::catalog::Kind;

/// A setting of one catalog kind, read as a Rust value.
pub trait Key: Copy {
    type Value;
    /// The catalog kind the key reads (checked against the catalog by a test).
    #[cfg(test)]
    const KIND: Kind;
    fn name(self) -> &'static str;
    /// The value from the setting's JSON (the stored override, else GitLab's default).
    fn read(value: Value) -> Self::Value;
}

/// Declares a key type of one catalog kind: the struct, and how it reads the setting's JSON.
macro_rules! key_kind {
    ($(#[$doc:meta])* $name:ident: $kind:ident => $value:ty, |$json:ident| $read:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name(&'static str);

        impl Key for $name {
            type Value = $value;
            #[cfg(test)]
            const KIND: Kind = Kind::$kind;
            fn name(self) -> &'static str {
                self.0
            }
            fn read($json: Value) -> $value {
                $read
            }
        }
    };
}

key_kind!(
    /// A boolean setting (`false` if ever not a boolean).
    BoolSetting: Bool => bool, |value| value.as_bool().unwrap_or(false)
);
key_kind!(
    /// An integer setting (`None` when null).
    IntSetting: Int => Option<i64>, |value| value.as_i64()
);
key_kind!(
    /// A number setting (`None` when null).
    FloatSetting: Float => Option<f64>, |value| value.as_f64()
);
key_kind!(
    /// A string setting (`None` when null).
    StrSetting: Str => Option<String>, |value| match value {
        Value::String(s) => Some(s),
        _ => None,
    }
);
key_kind!(
    /// A list of strings, as its JSON (an array, or null): the parsers that read lists take
    /// the JSON form.
    StrListSetting: StrList => Value, |value| value
);
key_kind!(
    /// A visibility, by name (`None` when the setting names none).
    VisibilitySetting: Str => Option<Visibility>, |value| value.as_str().and_then(Visibility::parse)
);
key_kind!(
    /// A list of visibilities, each by name or by GitLab's level (as text or a number); what
    /// names none is left out.
    VisibilityListSetting: StrList => Vec<Visibility>, |value| value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|level| match level {
            Value::String(text) => Visibility::named_or_numbered(text),
            _ => level.as_i64().and_then(Visibility::from_level),
        })
        .collect()
);

/// A write-only secret (a string setting stored encrypted): read with
/// [`Settings::secret`](super::Settings::secret), never with `get`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecretSetting(&'static str);

impl SecretSetting {
    pub fn name(self) -> &'static str {
        self.0
    }
}

/// The three settings of one `throttle_<group>_*` rate limit group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Throttle {
    pub enabled: BoolSetting,
    pub period: IntSetting,
    pub limit: IntSetting,
}

/// Declares the keys, and for the test the catalog entry each expects: `(name, kind, secret)`.
macro_rules! keys {
    (
        values { $($name:ident: $ty:ident = $key:literal;)* }
        secrets { $($secret:ident = $secret_key:literal;)* }
        throttles { $($throttle:ident = $group:literal;)* }
    ) => {
        $(pub const $name: $ty = $ty($key);)*
        $(pub const $secret: SecretSetting = SecretSetting($secret_key);)*
        $(pub const $throttle: Throttle = Throttle {
            enabled: BoolSetting(concat!("throttle_", $group, "_enabled")),
            period: IntSetting(concat!("throttle_", $group, "_period_in_seconds")),
            limit: IntSetting(concat!("throttle_", $group, "_requests_per_period")),
        };)*

        #[cfg(test)]
        const EXPECTED: &[(&str, Kind, bool)] = &[
            $(($name.0, <$ty as Key>::KIND, false),)*
            $(($secret.0, Kind::Str, true),)*
            $(
                ($throttle.enabled.0, Kind::Bool, false),
                ($throttle.period.0, Kind::Int, false),
                ($throttle.limit.0, Kind::Int, false),
            )*
        ];
    };
}

keys! {
    values {
    ADMIN_MODE: BoolSetting = "admin_mode";
    ALLOW_LOCAL_REQUESTS_FROM_WEB_HOOKS_AND_SERVICES: BoolSetting =
        "allow_local_requests_from_web_hooks_and_services";
    ALLOW_LOCAL_REQUESTS_FROM_SYSTEM_HOOKS: BoolSetting = "allow_local_requests_from_system_hooks";
    AVATAR_SERVICE_ENABLED: BoolSetting = "avatar_service_enabled";
    CAPTCHA_ENABLED: BoolSetting = "captcha_enabled";
    DELAYED_PROJECT_DELETION: BoolSetting = "delayed_project_deletion";
    DNS_REBINDING_PROTECTION_ENABLED: BoolSetting = "dns_rebinding_protection_enabled";
    EXTERNAL_AUTHORIZATION_SERVICE_ENABLED: BoolSetting = "external_authorization_service_enabled";
    OAUTH_IMPLICIT_GRANT_ENABLED: BoolSetting = "oauth_implicit_grant_enabled";
    PASSWORD_AUTHENTICATION_ENABLED_FOR_GIT: BoolSetting =
        "password_authentication_enabled_for_git";
    PASSWORD_AUTHENTICATION_ENABLED_FOR_WEB: BoolSetting =
        "password_authentication_enabled_for_web";
    PASSWORD_LOWERCASE_REQUIRED: BoolSetting = "password_lowercase_required";
    PASSWORD_NUMBER_REQUIRED: BoolSetting = "password_number_required";
    PASSWORD_SYMBOL_REQUIRED: BoolSetting = "password_symbol_required";
    PASSWORD_UPPERCASE_REQUIRED: BoolSetting = "password_uppercase_required";
    TIME_TRACKING_LIMIT_TO_HOURS: BoolSetting = "time_tracking_limit_to_hours";
    USER_DEFAULT_EXTERNAL: BoolSetting = "user_default_external";
    USER_OAUTH_APPLICATIONS: BoolSetting = "user_oauth_applications";

    DEFAULT_BRANCH_PROTECTION: IntSetting = "default_branch_protection";
    DEFAULT_PROJECTS_LIMIT: IntSetting = "default_projects_limit";
    DELETION_ADJOURNED_PERIOD: IntSetting = "deletion_adjourned_period";
    DIFF_MAX_FILES: IntSetting = "diff_max_files";
    DIFF_MAX_LINES: IntSetting = "diff_max_lines";
    DIFF_MAX_PATCH_BYTES: IntSetting = "diff_max_patch_bytes";
    DSA_KEY_RESTRICTION: IntSetting = "dsa_key_restriction";
    ECDSA_KEY_RESTRICTION: IntSetting = "ecdsa_key_restriction";
    ECDSA_SK_KEY_RESTRICTION: IntSetting = "ecdsa_sk_key_restriction";
    ED25519_KEY_RESTRICTION: IntSetting = "ed25519_key_restriction";
    ED25519_SK_KEY_RESTRICTION: IntSetting = "ed25519_sk_key_restriction";
    GIT_BACKEND_TIMEOUT_DEFAULT: IntSetting = "git_backend_timeout_default";
    GIT_BACKEND_TIMEOUT_FAST: IntSetting = "git_backend_timeout_fast";
    GIT_BACKEND_TIMEOUT_MEDIUM: IntSetting = "git_backend_timeout_medium";
    ISSUES_CREATE_LIMIT: IntSetting = "issues_create_limit";
    MAX_ATTACHMENT_SIZE: IntSetting = "max_attachment_size";
    PUSH_EVENT_HOOKS_LIMIT: IntSetting = "push_event_hooks_limit";
    RAW_BLOB_REQUEST_LIMIT: IntSetting = "raw_blob_request_limit";
    RECEIVE_MAX_INPUT_SIZE: IntSetting = "receive_max_input_size";
    RSA_KEY_RESTRICTION: IntSetting = "rsa_key_restriction";
    SEARCH_RATE_LIMIT: IntSetting = "search_rate_limit";
    SEARCH_RATE_LIMIT_UNAUTHENTICATED: IntSetting = "search_rate_limit_unauthenticated";
    SESSION_EXPIRE_DELAY: IntSetting = "session_expire_delay";

    EXTERNAL_AUTHORIZATION_SERVICE_TIMEOUT: FloatSetting = "external_authorization_service_timeout";

    CAPTCHA_SITE_KEY: StrSetting = "captcha_site_key";
    DEFAULT_BRANCH_NAME: StrSetting = "default_branch_name";
    DEFAULT_GROUP_VISIBILITY: VisibilitySetting = "default_group_visibility";
    DEFAULT_PROJECT_VISIBILITY: VisibilitySetting = "default_project_visibility";
    ENABLED_GIT_ACCESS_PROTOCOL: StrSetting = "enabled_git_access_protocol";
    EXTERNAL_AUTH_CLIENT_CERT: StrSetting = "external_auth_client_cert";
    EXTERNAL_AUTHORIZATION_SERVICE_DEFAULT_LABEL: StrSetting =
        "external_authorization_service_default_label";
    EXTERNAL_AUTHORIZATION_SERVICE_URL: StrSetting = "external_authorization_service_url";
    PERSONAL_ACCESS_TOKEN_PREFIX: StrSetting = "personal_access_token_prefix";
    RATE_LIMITING_RESPONSE_TEXT: StrSetting = "rate_limiting_response_text";

    OUTBOUND_LOCAL_REQUESTS_WHITELIST: StrListSetting = "outbound_local_requests_whitelist";
    RESTRICTED_VISIBILITY_LEVELS: VisibilityListSetting = "restricted_visibility_levels";
    PROTECTED_PATHS: StrListSetting = "protected_paths";
    }

    secrets {
        EXTERNAL_AUTH_CLIENT_KEY = "external_auth_client_key";
        EXTERNAL_AUTH_CLIENT_KEY_PASS = "external_auth_client_key_pass";
    }

    throttles {
        THROTTLE_AUTHENTICATED_API = "authenticated_api";
        THROTTLE_AUTHENTICATED_PACKAGES_API = "authenticated_packages_api";
        THROTTLE_AUTHENTICATED_WEB = "authenticated_web";
        THROTTLE_UNAUTHENTICATED_API = "unauthenticated_api";
        THROTTLE_UNAUTHENTICATED_PACKAGES_API = "unauthenticated_packages_api";
        THROTTLE_UNAUTHENTICATED_WEB = "unauthenticated_web";
        THROTTLE_PROTECTED_PATHS = "protected_paths";
    }
}

#[cfg(test)]
mod tests {
    use super::super::catalog;
    use super::*;

    #[test]
    fn every_key_is_a_catalog_setting_of_its_kind() {
        for (name, kind, secret) in EXPECTED {
            let entry = catalog::entry(name).unwrap_or_else(|| panic!("{name} is not a setting"));
            assert_eq!(entry.kind, *kind, "{name}: kind");
            assert_eq!(entry.secret, *secret, "{name}: secret");
            // Keys name the setting itself: a deprecated alias would read its replacement.
            assert!(entry.alias_of.is_none(), "{name} is a deprecated alias");
        }
    }

    #[test]
    fn reads_convert_the_json() {
        assert!(BoolSetting::read(Value::Bool(true)));
        assert!(!BoolSetting::read(Value::Null));
        assert_eq!(IntSetting::read(serde_json::json!(7)), Some(7));
        assert_eq!(IntSetting::read(Value::Null), None);
        assert_eq!(FloatSetting::read(serde_json::json!(0.5)), Some(0.5));
        assert_eq!(
            StrSetting::read(serde_json::json!("x")).as_deref(),
            Some("x")
        );
        assert_eq!(StrSetting::read(Value::Null), None);
    }
}
