//! Encryption at rest for write-only settings: AES-256-GCM with a random 96-bit nonce per
//! value, stored as `enc:v1:<base64(nonce || ciphertext+tag)>`. The key comes from
//! `TRELLIS_SECRET_KEY` (hex or base64 of 32 bytes) or from `DATA_DIR/secret_key`, created
//! with mode 0600 on first use. Processes sharing one database must share the key.

use std::io::Write;
use std::path::Path;

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use anyhow::{Context, anyhow, bail};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rand::RngCore;

/// The key's file in the data directory, when `TRELLIS_SECRET_KEY` does not give it.
pub const SECRET_KEY_FILE: &str = "secret_key";

const PREFIX: &str = "enc:v1:";

#[derive(Clone)]
pub struct SecretKey {
    cipher: Aes256Gcm,
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey(..)")
    }
}

impl SecretKey {
    pub fn from_bytes(bytes: &[u8]) -> anyhow::Result<SecretKey> {
        if bytes.len() != 32 {
            bail!("the secret key must be 32 bytes, got {}", bytes.len());
        }
        let cipher = Aes256Gcm::new_from_slice(bytes).map_err(|_| anyhow!("invalid key length"))?;
        Ok(SecretKey { cipher })
    }

    /// 64 hex digits or the base64 of 32 bytes.
    pub fn parse(text: &str) -> anyhow::Result<SecretKey> {
        let text = text.trim();
        let bytes = if text.len() == 64 && text.bytes().all(|c| c.is_ascii_hexdigit()) {
            hex::decode(text)?
        } else {
            STANDARD
                .decode(text)
                .context("the secret key is neither hex nor base64")?
        };
        SecretKey::from_bytes(&bytes)
    }

    /// The key from the environment value if given, else from `data_dir/secret_key`
    /// (generated, mode 0600, when absent).
    pub fn load(env_value: Option<&str>, data_dir: &Path) -> anyhow::Result<SecretKey> {
        if let Some(text) = env_value.filter(|t| !t.trim().is_empty()) {
            return SecretKey::parse(text).context("TRELLIS_SECRET_KEY");
        }
        let path = data_dir.join(SECRET_KEY_FILE);
        std::fs::create_dir_all(data_dir)
            .with_context(|| format!("creating {}", data_dir.display()))?;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        match options.open(&path) {
            Ok(mut file) => {
                let mut bytes = [0u8; 32];
                rand::rng().fill_bytes(&mut bytes);
                file.write_all(hex::encode(bytes).as_bytes())?;
                file.sync_all()?;
                SecretKey::from_bytes(&bytes)
            }
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                // Another process may be writing it right now: wait for a full key.
                for _ in 0..50 {
                    let text = std::fs::read_to_string(&path)?;
                    if text.trim().len() >= 64 {
                        return SecretKey::parse(&text)
                            .with_context(|| format!("reading {}", path.display()));
                    }
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                bail!("{} is incomplete", path.display())
            }
            Err(error) => Err(error).with_context(|| format!("creating {}", path.display())),
        }
    }

    pub fn encrypt(&self, plaintext: &str) -> String {
        let mut nonce_bytes = [0u8; 12];
        rand::rng().fill_bytes(&mut nonce_bytes);
        let nonce = Nonce::try_from(&nonce_bytes[..]).expect("12-byte nonce");
        let ciphertext = self
            .cipher
            .encrypt(&nonce, plaintext.as_bytes())
            .expect("AES-GCM encryption of a small value cannot fail");
        let mut out = nonce_bytes.to_vec();
        out.extend_from_slice(&ciphertext);
        format!("{PREFIX}{}", STANDARD.encode(out))
    }

    /// The plaintext of a stored value; `None` if it is not ours or the key is wrong.
    pub fn decrypt(&self, stored: &str) -> Option<String> {
        let bytes = STANDARD.decode(stored.strip_prefix(PREFIX)?).ok()?;
        if bytes.len() < 12 + 16 {
            return None;
        }
        let (nonce, ciphertext) = bytes.split_at(12);
        let nonce = Nonce::try_from(nonce).ok()?;
        let plaintext = self.cipher.decrypt(&nonce, ciphertext).ok()?;
        String::from_utf8(plaintext).ok()
    }
}

#[cfg(test)]
fn is_encrypted(stored: &str) -> bool {
    stored.starts_with(PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_wrong_key() {
        let key = SecretKey::from_bytes(&[7u8; 32]).unwrap();
        let stored = key.encrypt("hunter2");
        assert!(is_encrypted(&stored) && !stored.contains("hunter2"));
        assert_ne!(stored, key.encrypt("hunter2"), "nonces differ");
        assert_eq!(key.decrypt(&stored).as_deref(), Some("hunter2"));
        let other = SecretKey::from_bytes(&[8u8; 32]).unwrap();
        assert_eq!(other.decrypt(&stored), None);
    }

    #[test]
    fn parses_hex_and_base64_and_generates_a_file() {
        assert!(SecretKey::parse(&"ab".repeat(32)).is_ok());
        assert!(SecretKey::parse(&STANDARD.encode([1u8; 32])).is_ok());
        assert!(SecretKey::parse("short").is_err());
        let dir = tempfile::tempdir().unwrap();
        let a = SecretKey::load(None, dir.path()).unwrap();
        let b = SecretKey::load(None, dir.path()).unwrap();
        assert_eq!(b.decrypt(&a.encrypt("x")).as_deref(), Some("x"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("secret_key"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
