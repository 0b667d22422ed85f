//! Who an SSH client is: the owner of a public key added through `/user/keys`, once the
//! client has proved it holds the private key (the SSH layer checks the signature). As
//! GitLab's `authorized_keys` lookup, a key signs nobody in when it is only for signing, has
//! expired, or is of a type or size the instance's `*_key_restriction` settings no longer
//! allow. A user who is blocked, deactivated or otherwise not active still signs in, as in
//! GitLab, whose git commands then refuse them (`git_access::inactive_account`).

use super::Caller;
use super::git::tokenless_caller;
use crate::keys::parse_ssh_key;
use crate::settings::Settings;
use crate::settings::keys::IntSetting;
use crate::store::TenantDb;

/// A client signed in with a key: the caller, and the key's id (for `last_used_at`).
pub struct KeyCaller {
    pub caller: Caller,
    pub key_id: i64,
}

/// The caller the key with this `SHA256:` fingerprint signs in, if any, at `now_ms`.
pub async fn find_for_ssh_key(
    db: &TenantDb,
    settings: &Settings,
    fingerprint_sha256: &str,
    now_ms: i64,
) -> crate::store::Result<Option<KeyCaller>> {
    let Some(key) = db.ssh_key_by_fingerprint(fingerprint_sha256).await? else {
        return Ok(None);
    };
    if key.usage_type == "signing" || key.expires_at.is_some_and(|at| at <= now_ms) {
        return Ok(None);
    }
    // An unset restriction (null) is no restriction, as when the key was added.
    let restriction = |setting: IntSetting| settings.get(setting).unwrap_or(0);
    let allowed = parse_ssh_key(&key.public_key)
        .is_some_and(|parsed| parsed.check_restrictions(restriction).is_ok());
    if !allowed {
        return Ok(None);
    }
    let Some(user) = db.user_by_id(key.user_id).await? else {
        return Ok(None);
    };
    Ok(Some(KeyCaller {
        caller: tokenless_caller(user, settings),
        key_id: key.id,
    }))
}
