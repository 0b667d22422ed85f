//! SSH and GPG keys: GitLab's validations of a new key (title, size, parse, the instance's
//! type and size restrictions, expiry) before it is stored with its event.

use chrono::{DateTime, Utc};

use super::{Refusal, TakenOn};
use crate::keys::{self, SSH_KEY_MAX_LEN, SshKey};
use crate::model::keys::{GpgKeyRow, SshKeyRow};
use crate::settings::keys::IntSetting;
use crate::store::TenantDb;
use crate::store::keys::{NewGpgKey, NewSshKey};

/// A new SSH key as the request gives it.
pub struct SshKeyRequest<'a> {
    pub title: &'a str,
    pub key: &'a str,
    pub usage_type: &'a str,
    pub expires_at: Option<DateTime<Utc>>,
}

/// GitLab's model validations of a new SSH key, in its order; `restriction(setting)` is the
/// instance's restriction for a key type (0 any size, -1 forbidden, N at least N bits).
/// Returns the parsed key.
pub fn check_ssh_key(
    request: &SshKeyRequest<'_>,
    restriction: impl Fn(IntSetting) -> i64,
    now: DateTime<Utc>,
) -> Result<SshKey, Refusal> {
    let title = request.title.trim();
    if title.is_empty() {
        return Err(Refusal::invalid("title", "can't be blank"));
    }
    if title.chars().count() > 255 {
        return Err(Refusal::invalid(
            "title",
            "is too long (maximum is 255 characters)",
        ));
    }
    if request.key.trim().is_empty() {
        return Err(Refusal::invalid("key", "can't be blank"));
    }
    if request.key.len() > SSH_KEY_MAX_LEN {
        return Err(Refusal::invalid(
            "key",
            format!("is too long (maximum is {SSH_KEY_MAX_LEN} characters)"),
        ));
    }
    let key =
        keys::parse_ssh_key(request.key).ok_or_else(|| Refusal::invalid("key", "is invalid"))?;
    key.check_restrictions(restriction)
        .map_err(|message| Refusal::invalid("key", message))?;
    if request.expires_at.is_some_and(|at| at <= now) {
        return Err(Refusal::invalid("key", "has expired"));
    }
    Ok(key)
}

/// Adds an SSH key to `owner_id`'s account as `actor`; a fingerprint is unique in the tenant.
pub async fn add_ssh_key(
    db: &TenantDb,
    owner_id: i64,
    request: &SshKeyRequest<'_>,
    restriction: impl Fn(IntSetting) -> i64,
    actor: i64,
) -> Result<SshKeyRow, Refusal> {
    let key = check_ssh_key(request, restriction, Utc::now())?;
    let key_type = key.key_type.label().to_ascii_lowercase();
    let new = NewSshKey {
        user_id: owner_id,
        title: request.title.trim(),
        public_key: &key.text,
        key_type: &key_type,
        bits: key.bits,
        fingerprint: &key.fingerprint_md5,
        fingerprint_sha256: &key.fingerprint_sha256,
        usage_type: request.usage_type,
        expires_at: request.expires_at.map(|at| at.timestamp_millis()),
    };
    db.insert_ssh_key(new, actor).await.taken_on(&[(
        "ssh_keys",
        "fingerprint_sha256",
        "fingerprint",
    )])
}

/// Adds a GPG key (an armored public key block) to `owner_id`'s account as `actor`.
pub async fn add_gpg_key(
    db: &TenantDb,
    owner_id: i64,
    text: &str,
    actor: i64,
) -> Result<GpgKeyRow, Refusal> {
    let key = keys::parse_gpg_key(text)
        .ok_or_else(|| Refusal::invalid("key", keys::gpg_key_invalid_message()))?;
    let new = NewGpgKey {
        user_id: owner_id,
        public_key: &key.text,
        fingerprint: &key.fingerprint,
        primary_keyid: &key.primary_keyid,
        emails: &key.emails,
    };
    db.insert_gpg_key(new, actor)
        .await
        .taken_on(&[("gpg_keys", "fingerprint", "fingerprint")])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request<'a>(title: &'a str, key: &'a str) -> SshKeyRequest<'a> {
        SshKeyRequest {
            title,
            key,
            usage_type: "auth_and_signing",
            expires_at: None,
        }
    }

    fn refusal(request: &SshKeyRequest<'_>) -> (&'static str, String) {
        match check_ssh_key(request, |_| 0, Utc::now()) {
            Err(Refusal::Invalid(field, message)) => (field, message),
            other => panic!("expected a validation failure, got {:?}", other.map(|_| ())),
        }
    }

    #[test]
    fn title_and_key_are_checked_before_parsing() {
        assert_eq!(
            refusal(&request("  ", "x")),
            ("title", "can't be blank".into())
        );
        let long = "t".repeat(256);
        assert_eq!(refusal(&request(&long, "x")).0, "title");
        assert_eq!(
            refusal(&request("t", " ")),
            ("key", "can't be blank".into())
        );
        let huge = "k".repeat(SSH_KEY_MAX_LEN + 1);
        assert!(refusal(&request("t", &huge)).1.starts_with("is too long"));
        assert_eq!(
            refusal(&request("t", "ssh-rsa nope")),
            ("key", "is invalid".into())
        );
    }
}
