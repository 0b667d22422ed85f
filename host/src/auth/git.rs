//! Who a git client over HTTP is (GitLab's `Gitlab::Auth.find_for_git_client`): HTTP Basic
//! credentials whose password is a personal, impersonation or OAuth access token (any
//! username; git clients send `oauth2` with OAuth tokens), or the account's password when the
//! tenant allows passwords for git. A token says what it may do through its scopes; a password
//! may do everything the account may.

use std::sync::{Arc, OnceLock};

use super::cache::{KnownToken, TokenCache};
use super::{Caller, secrets};
use crate::http::error::ApiResult;
use crate::model::users::UserRow;
use crate::services::sessions;
use crate::settings::{Settings, keys};
use crate::store::TenantDb;

/// A git client's caller and what its credential allows (GitLab's authentication abilities
/// `download_code` and `push_code`).
pub struct GitCaller {
    pub caller: Caller,
    pub download: bool,
    pub push: bool,
}

/// Scopes that let a token fetch: `api` and `read_api` (GitLab's full and read-only
/// abilities), `read_repository`, `write_repository`.
const DOWNLOAD_SCOPES: &[&str] = &["api", "read_api", "read_repository", "write_repository"];
/// Scopes that let a token push.
const PUSH_SCOPES: &[&str] = &["api", "write_repository"];

/// The caller `login` and `password` name, or `None` when they name nobody (GitLab answers
/// 401 "HTTP Basic: Access denied"). Tokens are tried first, so a token is never counted as
/// a failed password.
pub async fn find_for_git_client(
    db: &TenantDb,
    tokens: &TokenCache,
    settings: &Settings,
    login: &str,
    password: &str,
) -> ApiResult<Option<GitCaller>> {
    if password.is_empty() {
        return Ok(None);
    }
    if let Some(found) = tokens.lookup(db, &secrets::digest(password)).await? {
        if found.revoked || found.is_expired() || !found.user.can_use_api() {
            return Ok(None);
        }
        let has = |allowed: &[&str]| found.scope_list().any(|s| allowed.contains(&s));
        let (download, push) = (has(DOWNLOAD_SCOPES), has(PUSH_SCOPES));
        let caller = Caller::for_token(found, settings);
        return Ok(Some(GitCaller {
            caller,
            download,
            push,
        }));
    }
    if !settings.get(keys::PASSWORD_AUTHENTICATION_ENABLED_FOR_GIT) || login.is_empty() {
        return Ok(None);
    }
    let Some(user) = sessions::check_password(db, login, password).await? else {
        return Ok(None);
    };
    // As for the OAuth password grant: two-factor users must use a token; blocked, deactivated
    // and pending users get nothing.
    if user.two_factor_enabled || !user.can_use_api() {
        return Ok(None);
    }
    Ok(Some(GitCaller {
        caller: tokenless_caller(user, settings),
        download: true,
        push: true,
    }))
}

/// A caller signed in without a token (a password, or an SSH key): no scopes, so admin mode,
/// when on, withholds administrator rights, as it does for a token without `admin_mode`.
pub fn tokenless_caller(user: UserRow, settings: &Settings) -> Caller {
    let token = Arc::new(KnownToken {
        id: 0,
        scopes: String::new(),
        revoked: false,
        expires_at: None,
        expires_at_ms: None,
        oauth: false,
        last_used_at: None,
        user: Arc::new(user),
        owner_identities: OnceLock::new(),
    });
    Caller::for_token(token, settings)
}
