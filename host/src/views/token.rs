//! Personal access token and impersonation token representations.

use serde::Serialize;

use super::{timestamp, timestamp_opt};
use crate::model::tokens::TokenRow;

#[derive(Serialize, utoipa::ToSchema)]
pub struct TokenView {
    pub id: i64,
    pub name: String,
    pub revoked: bool,
    pub created_at: String,
    pub scopes: Vec<String>,
    pub user_id: i64,
    pub last_used_at: Option<String>,
    pub active: bool,
    pub expires_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub impersonation: Option<bool>,
    /// The secret, present only in the response that creates the token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

impl TokenView {
    pub fn new(row: &TokenRow, today: &str) -> TokenView {
        let expired = row.expires_at.as_deref().is_some_and(|e| e <= today);
        TokenView {
            id: row.id,
            name: row.name.clone(),
            revoked: row.revoked,
            created_at: timestamp(row.created_at),
            scopes: row.scopes.split_whitespace().map(str::to_string).collect(),
            user_id: row.user_id,
            last_used_at: timestamp_opt(row.last_used_at),
            active: !row.revoked && !expired,
            expires_at: row.expires_at.clone(),
            impersonation: row.impersonation.then_some(true),
            token: None,
        }
    }

    pub fn with_secret(mut self, secret: String) -> TokenView {
        self.token = Some(secret);
        self
    }
}
