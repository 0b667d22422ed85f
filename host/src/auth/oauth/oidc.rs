//! OpenID Connect on top of the provider: RS256 ID tokens for grants with the `openid` scope,
//! the tenant's public key set, and the user claims (`/oauth/userinfo`), as GitLab issues them.
//! Each tenant gets one 2048-bit key on first use (`services::oauth::signing_key`), stored
//! encrypted with the server's secret key.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use rsa::pkcs1v15::SigningKey;
use rsa::pkcs8::{DecodePrivateKey, EncodePrivateKey};
use rsa::signature::{SignatureEncoding, Signer};
use rsa::traits::PublicKeyParts;
use rsa::{RsaPrivateKey, RsaPublicKey};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::links::UserLinks;
use crate::model::users::UserRow;
use crate::settings::SecretKey;

/// How long an ID token is valid (Doorkeeper::OpenidConnect's default, as GitLab).
const ID_TOKEN_SECONDS: i64 = 120;

pub struct SigningKeyPair {
    pub kid: String,
    key: RsaPrivateKey,
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The public key as a JWK.
fn jwk(kid: &str, key: &RsaPublicKey) -> Value {
    json!({
        "kty": "RSA",
        "kid": kid,
        "use": "sig",
        "alg": "RS256",
        "e": b64(&key.e().to_bytes_be()),
        "n": b64(&key.n().to_bytes_be()),
    })
}

/// RFC 7638 thumbprint of the public key: the key id.
fn thumbprint(key: &RsaPublicKey) -> String {
    let canonical = format!(
        r#"{{"e":"{}","kty":"RSA","n":"{}"}}"#,
        b64(&key.e().to_bytes_be()),
        b64(&key.n().to_bytes_be())
    );
    b64(&Sha256::digest(canonical.as_bytes()))
}

impl SigningKeyPair {
    /// A key as the store holds it: its id and its PKCS#8 document, encrypted.
    pub fn decrypt(kid: String, stored: &str, secret: &SecretKey) -> anyhow::Result<Self> {
        let der = secret
            .decrypt(stored)
            .and_then(|b64der| STANDARD.decode(b64der).ok())
            .ok_or_else(|| anyhow::anyhow!("the ID token signing key cannot be decrypted"))?;
        let key = RsaPrivateKey::from_pkcs8_der(&der)?;
        Ok(SigningKeyPair { kid, key })
    }

    /// A new key, made off the async threads; its id is its thumbprint.
    pub async fn generate() -> anyhow::Result<Self> {
        let key =
            tokio::task::spawn_blocking(|| RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048))
                .await??;
        let kid = thumbprint(&key.to_public_key());
        Ok(SigningKeyPair { kid, key })
    }

    /// The key as the store holds it (see [`SigningKeyPair::decrypt`]).
    pub fn encrypt(&self, secret: &SecretKey) -> anyhow::Result<String> {
        let der = self.key.to_pkcs8_der()?;
        Ok(secret.encrypt(&STANDARD.encode(der.as_bytes())))
    }
}

/// `{"keys":[...]}` for `/oauth/discovery/keys`.
pub fn key_set(pair: &SigningKeyPair) -> Value {
    json!({ "keys": [jwk(&pair.kid, &pair.key.to_public_key())] })
}

/// The claims GitLab gives about a user (ID token and userinfo alike).
pub fn user_claims(user: &UserRow, links: &UserLinks<'_>) -> Value {
    json!({
        "sub": user.id.to_string(),
        "name": user.name,
        "nickname": user.username,
        "preferred_username": user.username,
        "email": user.email,
        "email_verified": user.confirmed_at.is_some(),
        "website": user.website_url,
        "profile": links.web_url(user),
        "picture": links.avatar_url(user),
    })
}

/// A signed ID token for `user`, issued to client `audience`.
pub struct IdToken<'a> {
    pub issuer: &'a str,
    pub audience: &'a str,
    pub nonce: Option<&'a str>,
    pub user: &'a UserRow,
    pub links: UserLinks<'a>,
}

impl IdToken<'_> {
    pub fn sign(&self, pair: &SigningKeyPair) -> String {
        let now = chrono::Utc::now().timestamp();
        let mut claims = user_claims(self.user, &self.links);
        claims["iss"] = json!(self.issuer);
        claims["aud"] = json!(self.audience);
        claims["iat"] = json!(now);
        claims["exp"] = json!(now + ID_TOKEN_SECONDS);
        claims["auth_time"] = json!(self.user.current_sign_in_at.map_or(now, |at| at / 1000));
        if let Some(nonce) = self.nonce {
            claims["nonce"] = json!(nonce);
        }
        let header = json!({ "typ": "JWT", "alg": "RS256", "kid": pair.kid });
        let signing_input = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let signer = SigningKey::<Sha256>::new(pair.key.clone());
        let signature = signer.sign(signing_input.as_bytes());
        format!("{signing_input}.{}", b64(&signature.to_bytes()))
    }
}
