//! PKCE (RFC 7636): `S256` and `plain` challenges, and the verifier's shape (43 to 128
//! characters of `A-Z a-z 0-9 - . _ ~`).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub const METHODS: &[&str] = &["plain", "S256"];

pub fn is_valid_verifier(verifier: &str) -> bool {
    (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// Whether `verifier` answers the stored challenge, compared in constant time.
pub fn verify(method: &str, challenge: &str, verifier: &str) -> bool {
    if !is_valid_verifier(verifier) {
        return false;
    }
    let computed = match method {
        "S256" => URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())),
        "plain" => verifier.to_string(),
        _ => return false,
    };
    computed.as_bytes().ct_eq(challenge.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7636_example() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(verify("S256", challenge, verifier));
        assert!(!verify("S256", challenge, &verifier.replace('d', "e")));
        assert!(!verify("plain", challenge, verifier));
        assert!(verify("plain", verifier, verifier));
        assert!(!verify("S256", challenge, "short"));
        assert!(!is_valid_verifier(&"a".repeat(129)));
        assert!(!is_valid_verifier(&format!("{}!", "a".repeat(43))));
    }
}
