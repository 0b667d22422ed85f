//! The URLs at which a tenant's users and projects are found: the views render them, and the
//! domain records or tells them too (a push event's avatar, the OpenID claims, the new remote
//! of a moved project), so they live below both.

use crate::auth::secrets;
use crate::model::users::UserRow;

const GRAVATAR: &str = "https://www.gravatar.com/avatar/";

/// A tenant's user URLs: its base URL and whether avatars fall back to Gravatar.
#[derive(Clone, Copy)]
pub struct UserLinks<'a> {
    pub base_url: &'a str,
    pub avatar_service: bool,
}

impl UserLinks<'_> {
    /// The uploaded avatar, else Gravatar's identicon for the e-mail when the tenant uses
    /// the avatar service, else none.
    pub fn avatar_url(&self, user: &UserRow) -> Option<String> {
        match &user.avatar_path {
            Some(file) => Some(format!(
                "{}/uploads/-/system/user/avatar/{}/{file}",
                self.base_url, user.id
            )),
            None if self.avatar_service => {
                let email = user.email.trim();
                // Gravatar keys avatars by the address's hex SHA-256, the digest tokens are
                // stored by. Most addresses are lower-case ASCII already: no copy for them.
                let digest = if email
                    .bytes()
                    .all(|b| b.is_ascii() && !b.is_ascii_uppercase())
                {
                    secrets::digest(email)
                } else {
                    secrets::digest(&email.to_lowercase())
                };
                Some([GRAVATAR, &digest, "?s=80&d=identicon"].concat())
            }
            None => None,
        }
    }

    /// The user's profile page.
    pub fn web_url(&self, user: &UserRow) -> String {
        [self.base_url, "/", &user.username].concat()
    }
}

/// GitLab's SSH clone URL for the project at `full_path` on `web_host` (the base URL's
/// authority): scp-like on port 22 (or when SSH is not served), else an `ssh://` URL with the
/// port, as GitLab writes it for a non-standard `ssh_port`.
pub fn ssh_clone_url(web_host: &str, ssh_port: Option<u16>, full_path: &str) -> String {
    let host = ssh_host(web_host);
    match ssh_port {
        Some(port) if port != 22 => format!("ssh://git@{host}:{port}/{full_path}.git"),
        _ => format!("git@{host}:{full_path}.git"),
    }
}

/// The authority of a base URL (`https://gitlab.example:8443` → `gitlab.example:8443`).
pub fn web_host(base_url: &str) -> &str {
    base_url
        .split_once("://")
        .map_or(base_url, |(_, rest)| rest)
}

/// The host part of an SSH clone URL: the web host without its port.
fn ssh_host(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split_inclusive(']').next().unwrap_or(host);
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}
