//! `GET /version` and `GET /metadata`: GitLab's shapes, carrying Trellis' own version.

use serde::Serialize;
use utoipa::ToSchema;

#[derive(Serialize, ToSchema)]
pub struct VersionView {
    pub version: &'static str,
    /// The commit the binary was built from, `unknown` when the build did not know it.
    pub revision: &'static str,
}

#[derive(Serialize, ToSchema)]
pub struct MetadataView {
    #[serde(flatten)]
    pub version: VersionView,
    pub kas: KasView,
    pub enterprise: bool,
}

/// GitLab's agent server for Kubernetes, which Trellis does not have: disabled, all null.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KasView {
    pub enabled: bool,
    pub external_url: Option<String>,
    pub external_k8s_proxy_url: Option<String>,
    pub version: Option<String>,
}
