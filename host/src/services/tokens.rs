//! Personal access and impersonation tokens: who may hold which scopes, the expiry rule,
//! issuing a token (its secret is shown once) and revoking one; and what a request records
//! about the token it carries.

use chrono::NaiveDate;

use super::Refusal;
use crate::auth::cache::KnownToken;
use crate::auth::secrets;
use crate::auth::token_scopes::ADMIN_ONLY_SCOPES;
use crate::model::tokens::TokenRow;
use crate::store::TenantDb;
use crate::store::tokens::NewToken;

/// How often a token's `last_used_at` is written at most (GitLab uses the same interval).
const LAST_USED_INTERVAL_MS: i64 = 10 * 60 * 1000;

/// A new token as the request gives it (its scopes already among the route's).
#[derive(Debug, Clone)]
pub struct TokenRequest {
    pub name: String,
    pub scopes: Vec<String>,
    pub expires_at: Option<NaiveDate>,
}

/// GitLab's model validations of a new token for a user who is (or is not) an administrator:
/// administrators' scopes only for administrators, a name that is not blank, an expiry in
/// the future.
pub fn check(
    request: &TokenRequest,
    owner_is_admin: bool,
    today: NaiveDate,
) -> Result<(), Refusal> {
    if !owner_is_admin
        && request
            .scopes
            .iter()
            .any(|s| ADMIN_ONLY_SCOPES.contains(&s.as_str()))
    {
        return Err(Refusal::invalid(
            "scopes",
            "can only contain available scopes",
        ));
    }
    if request.name.trim().is_empty() {
        return Err(Refusal::invalid("name", "can't be blank"));
    }
    if request.expires_at.is_some_and(|d| d <= today) {
        return Err(Refusal::invalid("expires_at", "must be in the future"));
    }
    Ok(())
}

/// A token for `owner`, issued by `actor`: its row and its one-time secret, which starts with
/// the instance's `prefix`.
pub struct Issue<'a> {
    pub owner_id: i64,
    pub owner_is_admin: bool,
    pub impersonation: bool,
    pub prefix: &'a str,
    pub actor: i64,
}

/// Issues a token after `check`; returns the row and the secret (only its digest is stored).
pub async fn issue(
    db: &TenantDb,
    request: &TokenRequest,
    issue: Issue<'_>,
    today: NaiveDate,
) -> Result<(TokenRow, String), Refusal> {
    check(request, issue.owner_is_admin, today)?;
    let secret = secrets::generate(issue.prefix, 20);
    let digest = secrets::digest(&secret);
    let row = db
        .insert_token(
            NewToken {
                user_id: issue.owner_id,
                name: &request.name,
                digest: &digest,
                scopes: &request.scopes,
                impersonation: issue.impersonation,
                expires_at: request.expires_at.map(|d| d.format("%Y-%m-%d").to_string()),
            },
            Some(issue.actor),
        )
        .await?;
    Ok((row, secret))
}

/// Revokes a token as `actor` (the owner, or an administrator).
pub async fn revoke(db: &TenantDb, token_id: i64, actor: i64) -> Result<(), Refusal> {
    db.revoke_token(token_id, actor).await?;
    Ok(())
}

/// What an authenticated request records about its token: a personal token's `last_used_at`
/// (at most every [`LAST_USED_INTERVAL_MS`]) and its owner's `last_activity_on` (at most once
/// a day), so that busy tokens cost no write per request.
pub async fn record_use(db: &TenantDb, token: &KnownToken) -> Result<(), Refusal> {
    if !token.oauth
        && token
            .last_used_at
            .is_none_or(|at| crate::model::now_ms() - at > LAST_USED_INTERVAL_MS)
    {
        db.touch_token(token.id).await?;
    }
    let today = crate::model::today();
    let today = today.as_str();
    if token.user.last_activity_on.as_deref() != Some(today) {
        db.record_activity(token.user.id, today).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 6, 30).unwrap()
    }

    fn request(scopes: &[&str], expires_at: Option<NaiveDate>) -> TokenRequest {
        TokenRequest {
            name: "ci".into(),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            expires_at,
        }
    }

    fn field(result: Result<(), Refusal>) -> &'static str {
        match result {
            Err(Refusal::Invalid(field, _)) => field,
            other => panic!("expected a validation failure, got {other:?}"),
        }
    }

    #[test]
    fn admin_scopes_only_for_administrators() {
        let admin_scope = ADMIN_ONLY_SCOPES[0];
        let asks = request(&["api", admin_scope], None);
        assert_eq!(field(check(&asks, false, today())), "scopes");
        assert!(check(&asks, true, today()).is_ok());
        assert!(check(&request(&["api"], None), false, today()).is_ok());
    }

    #[test]
    fn names_are_not_blank() {
        let blank = TokenRequest {
            name: "  ".into(),
            ..request(&["api"], None)
        };
        assert_eq!(field(check(&blank, false, today())), "name");
    }

    #[test]
    fn expiry_is_in_the_future() {
        let t = today();
        assert_eq!(
            field(check(&request(&["api"], Some(t)), false, t)),
            "expires_at"
        );
        let tomorrow = t.succ_opt();
        assert!(check(&request(&["api"], tomorrow), false, t).is_ok());
    }
}
