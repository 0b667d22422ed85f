//! The spec's Namespace shapes, as `NamespaceViews` (`namespace.rs`) fills them.

use serde::Serialize;
use utoipa::ToSchema;

/// A namespace as projects embed it.
#[derive(Clone, Serialize, ToSchema)]
pub struct NamespaceEmbedded {
    pub id: i64,
    pub name: String,
    pub path: String,
    /// `user` or `group`.
    pub kind: String,
    pub full_path: String,
    pub parent_id: Option<i64>,
    pub avatar_url: Option<String>,
    pub web_url: String,
}
