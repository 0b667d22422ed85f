//! Public keys users register: OpenSSH keys (`/user/keys`) and OpenPGP keys
//! (`/user/gpg_keys`), parsed with real parsers, plus GitLab's key-type restrictions and the
//! email format check used by `/user/emails`.

/// The server's SSH host key in the data directory (`ssh/host_key.rs`); here, outside `ssh`,
/// because backups copy it too.
pub const SSH_HOST_KEY_FILE: &str = "ssh_host_ed25519_key";

use md5::{Digest, Md5};
use pgp::composed::{Deserializable, SignedPublicKey};
use pgp::types::KeyDetails;
use ssh_key::public::KeyData;
use ssh_key::{EcdsaCurve, HashAlg, PublicKey};

use crate::settings::keys::{self as setting, IntSetting};

/// GitLab's maximum length of an SSH key text.
pub const SSH_KEY_MAX_LEN: usize = 5000;

/// The key types GitLab knows, in the order its "type is forbidden" message lists them,
/// with the application setting that restricts each.
pub const SSH_KEY_TYPES: &[(SshKeyType, IntSetting)] = &[
    (SshKeyType::Rsa, setting::RSA_KEY_RESTRICTION),
    (SshKeyType::Dsa, setting::DSA_KEY_RESTRICTION),
    (SshKeyType::Ecdsa, setting::ECDSA_KEY_RESTRICTION),
    (SshKeyType::Ed25519, setting::ED25519_KEY_RESTRICTION),
    (SshKeyType::EcdsaSk, setting::ECDSA_SK_KEY_RESTRICTION),
    (SshKeyType::Ed25519Sk, setting::ED25519_SK_KEY_RESTRICTION),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SshKeyType {
    Rsa,
    Dsa,
    Ecdsa,
    Ed25519,
    EcdsaSk,
    Ed25519Sk,
}

impl SshKeyType {
    /// GitLab's name for the type, upper-cased as in its messages.
    pub fn label(self) -> &'static str {
        match self {
            SshKeyType::Rsa => "RSA",
            SshKeyType::Dsa => "DSA",
            SshKeyType::Ecdsa => "ECDSA",
            SshKeyType::Ed25519 => "ED25519",
            SshKeyType::EcdsaSk => "ECDSA_SK",
            SshKeyType::Ed25519Sk => "ED25519_SK",
        }
    }

    fn setting(self) -> IntSetting {
        SSH_KEY_TYPES
            .iter()
            .find(|(t, _)| *t == self)
            .map(|(_, s)| *s)
            .unwrap_or(setting::RSA_KEY_RESTRICTION)
    }
}

/// A parsed OpenSSH public key.
#[derive(Debug, Clone)]
pub struct SshKey {
    /// The key as stored: `algorithm base64 [comment]`, whitespace normalised.
    pub text: String,
    pub key_type: SshKeyType,
    pub bits: i64,
    /// `SHA256:` followed by unpadded base64, as `ssh-keygen -l` prints it.
    pub fingerprint_sha256: String,
    /// Colon-separated MD5 hex, GitLab's legacy fingerprint.
    pub fingerprint_md5: String,
}

fn bit_length(bytes: &[u8]) -> i64 {
    let bytes = match bytes.iter().position(|b| *b != 0) {
        Some(start) => &bytes[start..],
        None => return 0,
    };
    (bytes.len() as i64 - 1) * 8 + i64::from(8 - bytes[0].leading_zeros())
}

/// Parses one OpenSSH public key line (`ssh-ed25519 AAAA... comment`); `None` when it is not one.
pub fn parse_ssh_key(text: &str) -> Option<SshKey> {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let key = PublicKey::from_openssh(&text).ok()?;
    let (key_type, bits) = match key.key_data() {
        KeyData::Rsa(rsa) => (SshKeyType::Rsa, bit_length(rsa.n.as_bytes())),
        KeyData::Dsa(dsa) => (SshKeyType::Dsa, bit_length(dsa.p.as_bytes())),
        KeyData::Ecdsa(ecdsa) => (
            SshKeyType::Ecdsa,
            match ecdsa.curve() {
                EcdsaCurve::NistP256 => 256,
                EcdsaCurve::NistP384 => 384,
                EcdsaCurve::NistP521 => 521,
            },
        ),
        KeyData::Ed25519(_) => (SshKeyType::Ed25519, 256),
        KeyData::SkEcdsaSha2NistP256(_) => (SshKeyType::EcdsaSk, 256),
        KeyData::SkEd25519(_) => (SshKeyType::Ed25519Sk, 256),
        _ => return None,
    };
    let blob = key.to_bytes().ok()?;
    let md5 = Md5::digest(&blob);
    let fingerprint_md5 = md5
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":");
    Some(SshKey {
        text,
        key_type,
        bits,
        fingerprint_sha256: key.fingerprint(HashAlg::Sha256).to_string(),
        fingerprint_md5,
    })
}

impl SshKey {
    /// GitLab's restriction check: `restriction(setting)` is the setting's value (0 = any
    /// size, -1 = type forbidden, N = at least N bits). The error is the message for `key`.
    pub fn check_restrictions(
        &self,
        restriction: impl Fn(IntSetting) -> i64,
    ) -> Result<(), String> {
        let own = restriction(self.key_type.setting());
        if own == -1 {
            let allowed: Vec<&str> = SSH_KEY_TYPES
                .iter()
                .filter(|(_, setting)| restriction(*setting) != -1)
                .map(|(t, _)| t.label())
                .collect();
            return Err(if allowed.is_empty() {
                "type is forbidden".to_string()
            } else {
                format!("type is forbidden. Must be {}", exact_sentence(&allowed))
            });
        }
        if own > 0 && self.bits < own {
            return Err(format!("must be at least {own} bits"));
        }
        Ok(())
    }
}

/// "A", "A or B", "A, B, or C" (GitLab's `to_exact_sentence`).
fn exact_sentence(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [one] => one.to_string(),
        [a, b] => format!("{a} or {b}"),
        [rest @ .., last] => format!("{}, or {last}", rest.join(", ")),
    }
}

pub const GPG_KEY_PREFIX: &str = "-----BEGIN PGP PUBLIC KEY BLOCK-----";
pub const GPG_KEY_SUFFIX: &str = "-----END PGP PUBLIC KEY BLOCK-----";

/// A parsed armored OpenPGP public key.
#[derive(Debug, Clone)]
pub struct GpgKey {
    /// The armored block, trimmed.
    pub text: String,
    /// Upper-case hex of the primary key's fingerprint.
    pub fingerprint: String,
    /// Upper-case hex of the primary key's 64-bit key id.
    pub primary_keyid: String,
    /// The email addresses of the key's user ids, lower-cased, in order, without repeats.
    pub emails: Vec<String>,
}

/// The message GitLab gives for a GPG key that is not an armored public key block.
pub fn gpg_key_invalid_message() -> String {
    format!(
        "is invalid. A valid public GPG key begins with '{GPG_KEY_PREFIX}' and ends with '{GPG_KEY_SUFFIX}'"
    )
}

/// Parses an armored public key block; `None` for anything else.
pub fn parse_gpg_key(text: &str) -> Option<GpgKey> {
    let text = text.trim().replace("\r\n", "\n");
    if !text.starts_with(GPG_KEY_PREFIX) || !text.ends_with(GPG_KEY_SUFFIX) {
        return None;
    }
    let (key, _headers) = SignedPublicKey::from_string(&text).ok()?;
    let fingerprint = format!("{:X}", key.primary_key.fingerprint());
    let primary_keyid: String = key
        .primary_key
        .legacy_key_id()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect();
    let mut emails: Vec<String> = Vec::new();
    for user in &key.details.users {
        let id = String::from_utf8_lossy(user.id.id()).to_string();
        if let Some(email) = user_id_email(&id)
            && !emails.contains(&email)
        {
            emails.push(email);
        }
    }
    Some(GpgKey {
        text,
        fingerprint,
        primary_keyid,
        emails,
    })
}

/// The address in a user id such as `Name (comment) <name@example.com>` or `name@example.com`.
fn user_id_email(id: &str) -> Option<String> {
    let candidate = match (id.rfind('<'), id.rfind('>')) {
        (Some(start), Some(end)) if start < end => &id[start + 1..end],
        _ => id.trim(),
    };
    is_valid_email(candidate).then(|| candidate.to_lowercase())
}

/// Devise's email format, which GitLab uses: something, `@`, something, no whitespace.
pub fn is_valid_email(email: &str) -> bool {
    match email.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && !domain.is_empty()
                && !domain.contains('@')
                && !email.chars().any(char::is_whitespace)
        }
        None => false,
    }
}

/// A user's GPG public keys, parsed once to check many signatures.
pub struct GpgVerifier {
    keys: Vec<SignedPublicKey>,
}

impl GpgVerifier {
    /// The keys among `armored_keys` that parse (stored keys were checked when added).
    pub fn new(armored_keys: &[String]) -> GpgVerifier {
        GpgVerifier {
            keys: armored_keys
                .iter()
                .filter_map(|armored| SignedPublicKey::from_string(armored).ok())
                .map(|(key, _)| key)
                .collect(),
        }
    }

    /// Whether `armored_signature` (a commit's `gpgsig`) is a valid signature of `data` by
    /// the primary key or a subkey of one of the keys.
    pub fn verifies(&self, armored_signature: &str, data: &[u8]) -> bool {
        use pgp::composed::DetachedSignature;
        let Ok((signature, _)) = DetachedSignature::from_string(armored_signature) else {
            return false;
        };
        self.keys.iter().any(|key| {
            signature.verify(&key.primary_key, data).is_ok()
                || key
                    .public_subkeys
                    .iter()
                    .any(|sub| signature.verify(&sub.key, data).is_ok())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ED25519: &str = include_str!("../tests/fixtures/ed25519.pub");
    const RSA_1024: &str = include_str!("../tests/fixtures/rsa1024.pub");
    const RSA_2048: &str = include_str!("../tests/fixtures/rsa2048.pub");
    const ECDSA_384: &str = include_str!("../tests/fixtures/ecdsa384.pub");
    const ED25519_FPR: &str = include_str!("../tests/fixtures/ed25519.fpr");
    const ED25519_MD5: &str = include_str!("../tests/fixtures/ed25519.md5");
    const GPG: &str = include_str!("../tests/fixtures/gpg.asc");
    const GPG_FPR: &str = include_str!("../tests/fixtures/gpg.fpr");

    #[test]
    fn ed25519_key_parses_with_ssh_keygen_fingerprint() {
        let key = parse_ssh_key(ED25519).expect("parses");
        assert_eq!(key.key_type, SshKeyType::Ed25519);
        assert_eq!(key.bits, 256);
        assert_eq!(key.fingerprint_sha256, ED25519_FPR.trim());
        assert_eq!(key.text, ED25519.trim());
        assert_eq!(key.fingerprint_md5, ED25519_MD5.trim());
    }

    #[test]
    fn rsa_and_ecdsa_sizes() {
        assert_eq!(parse_ssh_key(RSA_1024).unwrap().bits, 1024);
        let rsa = parse_ssh_key(RSA_2048).unwrap();
        assert_eq!((rsa.key_type, rsa.bits), (SshKeyType::Rsa, 2048));
        let ecdsa = parse_ssh_key(ECDSA_384).unwrap();
        assert_eq!((ecdsa.key_type, ecdsa.bits), (SshKeyType::Ecdsa, 384));
    }

    #[test]
    fn whitespace_is_normalised_and_comment_kept() {
        let messy = format!("  {}  \n", ED25519.trim().replacen(' ', "   ", 1));
        assert_eq!(parse_ssh_key(&messy).unwrap().text, ED25519.trim());
    }

    #[test]
    fn garbage_is_not_a_key() {
        assert!(parse_ssh_key("").is_none());
        assert!(parse_ssh_key("not a key").is_none());
        assert!(parse_ssh_key("ssh-rsa AAAAB3NzaC1yc2E= x").is_none());
        let broken = ED25519.trim().replacen("AAAA", "BBBB", 1);
        assert!(parse_ssh_key(&broken).is_none());
        // The algorithm name must match the blob.
        let mislabelled = ED25519.trim().replacen("ssh-ed25519", "ssh-rsa", 1);
        assert!(parse_ssh_key(&mislabelled).is_none());
    }

    #[test]
    fn restrictions() {
        let rsa = parse_ssh_key(RSA_1024).unwrap();
        assert_eq!(rsa.check_restrictions(|_| 0), Ok(()));
        assert_eq!(
            rsa.check_restrictions(|s| if s == setting::RSA_KEY_RESTRICTION {
                2048
            } else {
                0
            }),
            Err("must be at least 2048 bits".into())
        );
        assert_eq!(
            rsa.check_restrictions(|s| if s == setting::RSA_KEY_RESTRICTION {
                1024
            } else {
                0
            }),
            Ok(())
        );
        assert_eq!(
            rsa.check_restrictions(|s| {
                if s == setting::RSA_KEY_RESTRICTION || s == setting::DSA_KEY_RESTRICTION {
                    -1
                } else {
                    0
                }
            }),
            Err("type is forbidden. Must be ECDSA, ED25519, ECDSA_SK, or ED25519_SK".into())
        );
        let ed = parse_ssh_key(ED25519).unwrap();
        assert_eq!(
            ed.check_restrictions(|s| if s == setting::ED25519_KEY_RESTRICTION {
                -1
            } else {
                0
            }),
            Err("type is forbidden. Must be RSA, DSA, ECDSA, ECDSA_SK, or ED25519_SK".into())
        );
        assert_eq!(exact_sentence(&["RSA", "DSA"]), "RSA or DSA");
    }

    #[test]
    fn gpg_key_parses_fingerprint_keyid_and_emails() {
        let key = parse_gpg_key(GPG).expect("parses");
        let fpr = GPG_FPR.trim();
        assert_eq!(key.fingerprint, fpr);
        assert_eq!(key.primary_keyid, &fpr[fpr.len() - 16..]);
        assert_eq!(
            key.emails,
            vec!["trellis-test@example.com", "second@example.org"]
        );
        assert_eq!(key.text, GPG.trim());
    }

    #[test]
    fn gpg_garbage_is_rejected() {
        assert!(parse_gpg_key("").is_none());
        assert!(parse_gpg_key("hello").is_none());
        assert!(
            parse_gpg_key(&format!("{GPG_KEY_PREFIX}\n\nbm9wZQ==\n{GPG_KEY_SUFFIX}")).is_none()
        );
        // A corrupted body inside valid armor lines.
        let corrupted: String = GPG
            .lines()
            .map(|l| {
                if l.len() == 64 {
                    "A".repeat(64)
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        assert!(parse_gpg_key(&corrupted).is_none());
    }

    #[test]
    fn email_format() {
        assert!(is_valid_email("a@b"));
        assert!(is_valid_email("first.last+tag@example.com"));
        for bad in [
            "",
            "plain",
            "@example.com",
            "a@",
            "a b@example.com",
            "a@b@c",
        ] {
            assert!(!is_valid_email(bad), "{bad}");
        }
        assert_eq!(
            user_id_email("Trellis Test (x) <Trellis-Test@Example.com>"),
            Some("trellis-test@example.com".into())
        );
        assert_eq!(user_id_email("no email here"), None);
    }
}
