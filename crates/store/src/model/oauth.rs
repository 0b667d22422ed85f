//! OAuth applications.

use super::Flag;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ApplicationRow {
    pub id: i64,
    pub owner_id: Option<i64>,
    pub name: String,
    pub uid: String,
    pub secret_digest: String,
    pub redirect_uri: String,
    pub scopes: String,
    #[sqlx(try_from = "Flag")]
    pub confidential: bool,
}

impl ApplicationRow {
    pub fn redirect_uris(&self) -> impl Iterator<Item = &str> {
        self.redirect_uri
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
    }

    pub fn scope_list(&self) -> Vec<&str> {
        self.scopes.split_whitespace().collect()
    }
}
