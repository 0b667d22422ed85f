//! The repository API's answers about files and authorship: a file with its content, a blob,
//! blame ranges, a file write, contributors, and the refs that contain a commit.

use serde::Serialize;
use utoipa::ToSchema;

use super::repository::CommitView;

/// A file at a ref (`GET .../files/:file_path`), its content in base64. GitLab repeats these
/// fields in `X-Gitlab-*` headers, which is what `HEAD` is for.
#[derive(Serialize, ToSchema)]
pub struct FileView {
    pub file_name: String,
    pub file_path: String,
    pub size: u64,
    /// Always `base64`.
    pub encoding: &'static str,
    pub content: String,
    pub content_sha256: String,
    #[serde(rename = "ref")]
    pub reference: String,
    pub blob_id: String,
    pub commit_id: String,
    pub last_commit_id: String,
    pub execute_filemode: bool,
}

/// The answer to a file's creation or update: where, and on which branch.
#[derive(Serialize, ToSchema)]
pub struct FileWriteView {
    pub file_path: String,
    pub branch: String,
}

/// A blob by id (`GET .../blobs/:sha`), its content in base64.
#[derive(Serialize, ToSchema)]
pub struct BlobView {
    pub size: u64,
    /// Always `base64`.
    pub encoding: &'static str,
    pub content: String,
    pub sha: String,
}

/// A run of a file's lines last changed by the same commit.
#[derive(Serialize, ToSchema)]
pub struct BlameRangeView {
    pub commit: CommitView,
    pub lines: Vec<String>,
}

/// An author of a ref's history, by email, with their number of commits.
#[derive(Clone, Serialize, ToSchema)]
pub struct ContributorView {
    /// The name on their newest commit.
    pub name: String,
    pub email: String,
    pub commits: u64,
    /// Always 0: GitLab stopped counting lines, and reports 0.
    pub additions: i64,
    /// Always 0, as `additions`.
    pub deletions: i64,
}

/// A branch or tag that contains a commit.
#[derive(Clone, Serialize, ToSchema)]
pub struct CommitRefView {
    /// `branch` or `tag`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub name: String,
}
