//! The OAuth provider's writes: a user's consent issues a code (or, in the implicit flow, a
//! token); a code, a refresh token or a password is exchanged for tokens; a client revokes its
//! tokens and a user their authorization; applications are registered, changed, given a new
//! secret and deleted; each tenant gets its ID-token signing key on first use.
//!
//! The token endpoint refuses every code, refresh token or password that does not hold with
//! the same `invalid_grant`, whatever the reason (RFC 6749 5.2): `Refusal::Invalid("grant")`
//! here, `Refusal::Invalid("scope")` for `invalid_scope`, which `auth/oauth/error.rs` renders.

use super::Refusal;
use super::sessions;
use crate::auth::oauth::issue::TokenSecrets;
use crate::auth::oauth::oidc::SigningKeyPair;
use crate::auth::oauth::{CODE_MS, SECRET_PREFIX, pkce, random_hex, scopes};
use crate::auth::secrets;
use crate::model::now_ms;
use crate::model::oauth::ApplicationRow;
use crate::model::users::UserRow;
use crate::settings::SecretKey;
use crate::store::TenantDb;
use crate::store::oauth::{AccessTokenRow, ApplicationFields, Exchange, GrantRow, NewGrant};

fn invalid_grant() -> Refusal {
    Refusal::invalid("grant", "is invalid")
}

fn invalid_scope() -> Refusal {
    Refusal::invalid("scope", "is invalid")
}

/// A token just issued: its secrets in clear (given to the client once) and its row.
pub struct IssuedToken {
    pub secrets: TokenSecrets,
    pub row: AccessTokenRow,
}

/// A token issued for a code or a refresh token, with its owner (whom an ID token describes).
pub struct Redeemed {
    pub token: IssuedToken,
    pub owner: UserRow,
}

/// What the signed-in user approved on the consent page.
pub struct Consent<'a> {
    pub application_id: i64,
    pub user_id: i64,
    pub redirect_uri: &'a str,
    /// Space-separated.
    pub scopes: &'a str,
    pub code_challenge: Option<&'a str>,
    pub code_challenge_method: Option<&'a str>,
    /// OpenID Connect: echoed in the ID token.
    pub nonce: Option<&'a str>,
}

/// Issues an authorization code for the consent; returns the code in clear (only its digest
/// is stored).
pub async fn issue_code(db: &TenantDb, consent: &Consent<'_>) -> Result<String, Refusal> {
    let code = random_hex();
    db.insert_grant(NewGrant {
        application_id: consent.application_id,
        user_id: consent.user_id,
        code_digest: &secrets::digest(&code),
        redirect_uri: consent.redirect_uri,
        scopes: consent.scopes,
        code_challenge: consent.code_challenge,
        code_challenge_method: consent.code_challenge_method,
        nonce: consent.nonce,
        expires_at: now_ms() + CODE_MS,
    })
    .await?;
    Ok(code)
}

/// Issues an access token without a refresh token (the implicit flow and the password grant).
pub async fn issue_token(
    db: &TenantDb,
    application_id: i64,
    user_id: i64,
    scopes: &str,
) -> Result<IssuedToken, Refusal> {
    let secrets = TokenSecrets::new(false);
    let row = db
        .insert_access_token(secrets.row(application_id, user_id, scopes, None))
        .await?;
    Ok(IssuedToken { secrets, row })
}

/// The grant `code` names for client `application_id`, while it may still be redeemed.
pub async fn grant_for_code(
    db: &TenantDb,
    application_id: i64,
    code: &str,
) -> Result<GrantRow, Refusal> {
    let grant = db
        .grant_by_code(&secrets::digest(code))
        .await?
        .filter(|grant| grant.application_id == application_id)
        .ok_or_else(invalid_grant)?;
    if grant.used_at.is_some() {
        // A replayed code: whoever holds it may be an attacker, so everything issued from it
        // stops working (RFC 6749 4.1.2).
        db.revoke_tokens_of_grant(grant.id).await?;
        return Err(invalid_grant());
    }
    if grant.expires_at <= now_ms() {
        return Err(invalid_grant());
    }
    Ok(grant)
}

/// Whether the PKCE verifier the client sent answers the grant's challenge.
fn verifier_answers(grant: &GrantRow, verifier: Option<&str>) -> bool {
    match (&grant.code_challenge, verifier) {
        (None, None) => true,
        // A verifier for a code issued without a challenge is a downgrade attempt.
        (None, Some(_)) => false,
        (Some(challenge), Some(verifier)) => pkce::verify(
            grant.code_challenge_method.as_deref().unwrap_or("plain"),
            challenge,
            verifier,
        ),
        (Some(_), None) => false,
    }
}

/// Redeems a grant from [`grant_for_code`] for an access and a refresh token, if the request
/// names the grant's redirect URI and answers its PKCE challenge and its owner may still use
/// the API.
pub async fn redeem_grant(
    db: &TenantDb,
    grant: &GrantRow,
    redirect_uri: &str,
    verifier: Option<&str>,
) -> Result<Redeemed, Refusal> {
    if redirect_uri != grant.redirect_uri || !verifier_answers(grant, verifier) {
        return Err(invalid_grant());
    }
    let owner = active_user(db, grant.user_id).await?;
    let secrets = TokenSecrets::new(true);
    let row = secrets.row(
        grant.application_id,
        grant.user_id,
        &grant.scopes,
        Some(grant.id),
    );
    match db.exchange_grant(grant.id, row).await? {
        Exchange::Issued(row) => Ok(Redeemed {
            token: IssuedToken { secrets, row },
            owner,
        }),
        // Another request redeemed the code first: a replay as well.
        Exchange::AlreadyUsed => {
            db.revoke_tokens_of_grant(grant.id).await?;
            Err(invalid_grant())
        }
    }
}

/// The resource owner password grant: the user `login` names, if `password` is theirs (with
/// the sign-in lockout), gets an access token with `scopes`. Users with two-factor
/// authentication use personal access tokens instead; blocked, deactivated and pending users
/// get nothing.
pub async fn password_grant(
    db: &TenantDb,
    application_id: i64,
    login: &str,
    password: &str,
    scopes: &str,
) -> Result<IssuedToken, Refusal> {
    let user = sessions::check_password(db, login, password)
        .await?
        .ok_or_else(invalid_grant)?;
    if user.two_factor_enabled || !user.can_use_api() {
        return Err(invalid_grant());
    }
    issue_token(db, application_id, user.id, scopes).await
}

/// The token `refresh_token` belongs to, for client `application_id`, while it may still be
/// refreshed.
pub async fn token_for_refresh(
    db: &TenantDb,
    application_id: i64,
    refresh_token: &str,
) -> Result<AccessTokenRow, Refusal> {
    let old = db
        .access_token_by_refresh(&secrets::digest(refresh_token))
        .await?
        .filter(|old| old.application_id == application_id)
        .ok_or_else(invalid_grant)?;
    if old.revoked_at.is_some() {
        return Err(refresh_token_reused(db, &old).await?);
    }
    Ok(old)
}

/// Rotates a token from [`token_for_refresh`]: a new access and refresh token with the scopes
/// `asked` (space-separated; all of the old ones when `None`), which may narrow the old
/// scopes but never widen them (RFC 6749 6).
pub async fn refresh(
    db: &TenantDb,
    old: &AccessTokenRow,
    asked: Option<&str>,
) -> Result<Redeemed, Refusal> {
    let granted = scopes::parse(&old.scopes);
    let scopes = match asked {
        None => granted,
        Some(asked) => {
            let asked = scopes::parse(asked);
            if asked.is_empty() || !asked.iter().all(|s| granted.contains(s)) {
                return Err(invalid_scope());
            }
            asked
        }
    };
    let owner = active_user(db, old.user_id).await?;
    let scopes = scopes.join(" ");
    let secrets = TokenSecrets::new(true);
    let row = secrets.row(old.application_id, old.user_id, &scopes, old.grant_id);
    match db.rotate_access_token(old.id, row).await? {
        Exchange::Issued(row) => Ok(Redeemed {
            token: IssuedToken { secrets, row },
            owner,
        }),
        // Another request spent this refresh token first: a replay as well.
        Exchange::AlreadyUsed => Err(refresh_token_reused(db, old).await?),
    }
}

/// A spent (rotated or revoked) refresh token came back: someone holds a copy of it, and the
/// server cannot tell the client from the thief. As Hydra does, every token of its chain
/// (all issued from the same authorization code) is revoked, the newest one included.
async fn refresh_token_reused(db: &TenantDb, old: &AccessTokenRow) -> Result<Refusal, Refusal> {
    if let Some(grant_id) = old.grant_id {
        db.revoke_tokens_of_grant(grant_id).await?;
    }
    Ok(invalid_grant())
}

/// The owner of a grant or token, if they may still use the API.
async fn active_user(db: &TenantDb, user_id: i64) -> Result<UserRow, Refusal> {
    db.user_by_id(user_id)
        .await?
        .filter(UserRow::can_use_api)
        .ok_or_else(invalid_grant)
}

/// RFC 7009: client `application_id` revokes one of its own tokens (access and refresh token
/// together); another client's token is not its to revoke.
pub async fn revoke_token(
    db: &TenantDb,
    application_id: i64,
    token: &AccessTokenRow,
) -> Result<(), Refusal> {
    if token.application_id != application_id {
        return Err(Refusal::forbidden_because(
            "You are not authorized to revoke this token",
        ));
    }
    db.revoke_access_token(token.id).await?;
    Ok(())
}

/// Revokes every token a user gave an application, so the consent page asks again next time;
/// whether there was any.
pub async fn revoke_authorization(
    db: &TenantDb,
    application_id: i64,
    user_id: i64,
) -> Result<bool, Refusal> {
    Ok(db.revoke_authorization(application_id, user_id).await?)
}

/// A new client secret and its digest.
fn new_secret() -> (String, String) {
    let secret = format!("{SECRET_PREFIX}{}", random_hex());
    let digest = secrets::digest(&secret);
    (secret, digest)
}

/// Registers an application whose fields `registration::validate` accepted; returns it with
/// its secret in clear (shown once).
pub async fn create_application(
    db: &TenantDb,
    owner_id: Option<i64>,
    fields: &ApplicationFields<'_>,
) -> Result<(ApplicationRow, String), Refusal> {
    let (secret, digest) = new_secret();
    let row = db
        .insert_application(owner_id, &random_hex(), &digest, fields)
        .await?;
    Ok((row, secret))
}

/// Changes an application's validated fields (its id and secret stay).
pub async fn update_application(
    db: &TenantDb,
    app: &ApplicationRow,
    fields: &ApplicationFields<'_>,
) -> Result<(), Refusal> {
    db.update_application(app.id, fields).await?;
    Ok(())
}

/// Gives an application a new secret (the old one stops working); returns it in clear.
pub async fn renew_application_secret(
    db: &TenantDb,
    app: &ApplicationRow,
) -> Result<String, Refusal> {
    let (secret, digest) = new_secret();
    db.renew_application_secret(app.id, &digest).await?;
    Ok(secret)
}

/// Deletes an application, and with it the grants and tokens issued to it.
pub async fn delete_application(db: &TenantDb, app: &ApplicationRow) -> Result<(), Refusal> {
    db.delete_application(app.id).await?;
    Ok(())
}

/// The tenant's ID-token signing key, made and stored on first use.
pub async fn signing_key(db: &TenantDb, secret: &SecretKey) -> Result<SigningKeyPair, Refusal> {
    if let Some((kid, stored)) = db.signing_key().await? {
        return Ok(SigningKeyPair::decrypt(kid, &stored, secret)?);
    }
    let pair = SigningKeyPair::generate().await?;
    db.insert_signing_key(&pair.kid, &pair.encrypt(secret)?)
        .await?;
    // Another request may have stored its key first: use whichever is stored.
    Box::pin(signing_key(db, secret)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(challenge: Option<&str>, method: Option<&str>) -> GrantRow {
        GrantRow {
            id: 1,
            application_id: 1,
            user_id: 1,
            redirect_uri: "https://client.example/cb".into(),
            scopes: "api".into(),
            code_challenge: challenge.map(Into::into),
            code_challenge_method: method.map(Into::into),
            nonce: None,
            expires_at: 0,
            used_at: None,
        }
    }

    #[test]
    fn a_verifier_must_answer_the_challenge_and_come_only_with_one() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let s256 = grant(
            Some("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"),
            Some("S256"),
        );
        assert!(verifier_answers(&s256, Some(verifier)));
        assert!(!verifier_answers(&s256, None));
        assert!(verifier_answers(
            &grant(Some(verifier), None),
            Some(verifier)
        ));
        assert!(verifier_answers(&grant(None, None), None));
        assert!(!verifier_answers(&grant(None, None), Some(verifier)));
    }
}
