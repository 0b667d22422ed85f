//! The scopes an OAuth application and its tokens may carry: GitLab's API scopes plus the
//! OpenID Connect ones.

use crate::auth::token_scopes::TOKEN_SCOPES;

pub const OPENID_SCOPES: &[&str] = &["openid", "profile", "email"];

/// The scope a token gets when none is asked for (GitLab's `default_scopes`).
pub const DEFAULT_SCOPE: &str = "api";

pub fn is_known(scope: &str) -> bool {
    TOKEN_SCOPES.contains(&scope) || OPENID_SCOPES.contains(&scope)
}

pub fn all() -> impl Iterator<Item = &'static str> {
    TOKEN_SCOPES.iter().chain(OPENID_SCOPES).copied()
}

/// Space-separated scopes, split, without duplicates, in the order given.
pub fn parse(scopes: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for scope in scopes.split_whitespace() {
        if !out.iter().any(|s| s == scope) {
            out.push(scope.to_string());
        }
    }
    out
}

/// The scopes a request asks for (the default when blank), if every one is known and allowed
/// to the application.
pub fn requested(asked: Option<&str>, allowed: &[&str]) -> Option<Vec<String>> {
    let asked = asked.map(str::trim).filter(|s| !s.is_empty());
    let scopes = parse(asked.unwrap_or(DEFAULT_SCOPE));
    scopes
        .iter()
        .all(|s| is_known(s) && allowed.contains(&s.as_str()))
        .then_some(scopes)
}
