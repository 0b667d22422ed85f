//! Password verification for sign-in (the web page, admin mode, the OAuth password grant and
//! git over HTTP, through `services::sessions::check_password`): bcrypt off the async threads,
//! with the same work for a login that names nobody.

use std::sync::LazyLock;

use crate::auth::secrets;

/// A hash to verify against when the login is unknown, so that unknown and known logins take
/// the same time.
static DUMMY_DIGEST: LazyLock<String> =
    LazyLock::new(|| secrets::hash_password("not a password").unwrap_or_default());

/// Whether `password` matches the stored `digest` (`None`: the login named nobody, which never
/// matches but costs the same).
pub async fn verify(password: &str, digest: Option<String>) -> bool {
    let password = password.to_string();
    let known = digest.is_some();
    let ok = tokio::task::spawn_blocking(move || {
        let digest = digest.unwrap_or_else(|| DUMMY_DIGEST.clone());
        secrets::verify_password(&password, &digest)
    })
    .await
    .unwrap_or(false);
    ok && known
}
