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

pub fn digest(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
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
}
