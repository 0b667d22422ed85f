//! The scopes a personal access token may carry (GitLab's `Gitlab::Auth` API scopes). They
//! belong to authentication: the token API offers them, the OAuth provider adds the OpenID
//! Connect ones to them, and the CLI checks the scopes of the tokens it creates against them.

/// Scopes a personal access token may carry; `sudo` and `admin_mode` only for administrators.
pub const TOKEN_SCOPES: &[&str] = &[
    "api",
    "read_api",
    "read_user",
    "create_runner",
    "manage_runner",
    "k8s_proxy",
    "read_repository",
    "write_repository",
    "read_registry",
    "write_registry",
    "read_virtual_registry",
    "write_virtual_registry",
    "ai_features",
    "read_service_ping",
    "self_rotate",
    "sudo",
    "admin_mode",
];

/// The scopes only an administrator may give a token.
pub const ADMIN_ONLY_SCOPES: &[&str] = &["sudo", "admin_mode"];
