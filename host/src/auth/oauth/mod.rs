//! The OAuth 2.0 provider (Doorkeeper's behaviour, as GitLab configures it): applications,
//! authorization codes with PKCE, access and refresh tokens, redirect URI rules, and the
//! `/oauth/*` endpoints that speak JSON. The consent page itself is a web page (`web`).

pub mod client;
pub mod endpoints;
pub mod error;
pub mod issue;
pub mod oidc;
pub mod pkce;
pub mod redirect;
pub mod registration;
pub mod scopes;

/// Access tokens live two hours (GitLab's `access_token_expires_in`).
pub const ACCESS_TOKEN_SECONDS: i64 = 7200;
/// Authorization codes live ten minutes (Doorkeeper's default, as GitLab).
pub const CODE_MS: i64 = 10 * 60 * 1000;
/// Client secrets carry GitLab's `gloas-` prefix.
pub const SECRET_PREFIX: &str = "gloas-";

/// A new random value of 64 hex characters (Doorkeeper's `:hex` generator, as GitLab uses for
/// application ids, codes and tokens).
pub fn random_hex() -> String {
    let mut bytes = [0u8; 32];
    rand::Rng::fill(&mut rand::rng(), &mut bytes);
    hex::encode(bytes)
}
