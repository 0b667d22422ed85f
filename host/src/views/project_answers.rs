//! What project routes answer besides the project itself: a share with a group, the
//! languages, the starrers, and the empty answer of work started in the background.

use std::collections::BTreeMap;

use serde::Serialize;
use utoipa::ToSchema;

use super::user::UserSummary;
use crate::access_level::AccessLevel;

/// A project's share with a group (`POST /projects/:id/share`).
#[derive(Serialize, ToSchema)]
pub struct ProjectGroupLinkView {
    pub id: i64,
    pub project_id: i64,
    pub group_id: i64,
    #[schema(value_type = i64)]
    pub group_access: AccessLevel,
    /// `YYYY-MM-DD`.
    pub expires_at: Option<String>,
}

/// The languages of the default branch, each with its share in percent; `{}` when none.
/// By name, as Trellis has always sent them.
#[derive(Serialize, ToSchema)]
#[serde(transparent)]
pub struct LanguagesView(pub BTreeMap<String, f64>);

/// A user who starred a project, and since when.
#[derive(Serialize, ToSchema)]
pub struct StarrerView {
    pub starred_since: String,
    pub user: UserSummary,
}

/// GitLab's answer to work it starts in the background (housekeeping, a mirror's pull): `{}`.
#[derive(Serialize, ToSchema)]
pub struct StartedView {}
