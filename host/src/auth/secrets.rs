//! Generating and digesting secrets. Tokens are looked up by their SHA-256 digest, so the
//! plaintext exists only in the response that creates it; a timing difference in the indexed
//! lookup can reveal at most a prefix of a digest, never of a token.

use rand::Rng;
use rand::distr::Alphanumeric;
use sha2::{Digest, Sha256};

/// A new secret: `prefix` followed by `len` random alphanumerics (about 5.95 bits each).
pub fn generate(prefix: &str, len: usize) -> String {
    let random: String = rand::rng()
        .sample_iter(&Alphanumeric)
        .take(len)
        .map(char::from)
        .collect();
    format!("{prefix}{random}")
}

/// The hex SHA-256 of `secret`, as tokens are stored and looked up (once per request:
/// `hex::encode` builds its string a char at a time, which showed in profiles).
pub fn digest(secret: &str) -> String {
    let mut hex = [0u8; 64];
    hex::encode_to_slice(Sha256::digest(secret.as_bytes()), &mut hex)
        .expect("a SHA-256 is 64 hex digits");
    std::str::from_utf8(&hex)
        .expect("hex digits are ASCII")
        .to_owned()
}

pub fn hash_password(password: &str) -> anyhow::Result<String> {
    Ok(bcrypt::hash(password, bcrypt::DEFAULT_COST)?)
}

pub fn verify_password(password: &str, digest: &str) -> bool {
    bcrypt::verify(password, digest).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_carry_prefix_and_differ() {
        let a = generate("glpat-", 20);
        let b = generate("glpat-", 20);
        assert!(a.starts_with("glpat-") && a.len() == 26);
        assert_ne!(a, b);
        assert_eq!(digest("x").len(), 64);
    }

    #[test]
    fn digests_are_lower_case_hex_sha256() {
        assert_eq!(
            digest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
