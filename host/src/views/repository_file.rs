//! The repository API's answers about files and authorship: a file with its content, a blob,
//! blame ranges, a file write, contributors, and the refs that contain a commit.

use serde::Serialize;
use utoipa::ToSchema;

use super::repository::git_date;
use crate::git::blame::Blame;
use crate::git::commits::Commit;

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
    pub commit: BlameCommitView,
    pub lines: Vec<String>,
}

/// GitLab's `BlameRangeCommit`: fewer keys than the basic commit (no title, short id, links or
/// trailers).
#[derive(Clone, Serialize, ToSchema)]
pub struct BlameCommitView {
    pub id: String,
    pub parent_ids: Vec<String>,
    pub message: String,
    pub authored_date: String,
    pub author_name: String,
    pub author_email: String,
    pub committed_date: String,
    pub committer_name: String,
    pub committer_email: String,
}

fn blame_commit(commit: &Commit) -> BlameCommitView {
    BlameCommitView {
        id: commit.id.clone(),
        parent_ids: commit.parent_ids.clone(),
        message: commit.message.clone(),
        authored_date: git_date(&commit.authored_date),
        author_name: commit.author_name.clone(),
        author_email: commit.author_email.clone(),
        committed_date: git_date(&commit.committed_date),
        committer_name: commit.committer_name.clone(),
        committer_email: commit.committer_email.clone(),
    }
}

/// GitLab's blame ranges: each run of lines last changed by the same commit, in file order.
pub fn blame_ranges(blame: &Blame) -> Vec<BlameRangeView> {
    let commits: Vec<BlameCommitView> = blame.commits.iter().map(blame_commit).collect();
    let mut ranges: Vec<(usize, BlameRangeView)> = Vec::new();
    for line in &blame.lines {
        match ranges.last_mut() {
            Some((commit, range)) if *commit == line.commit => range.lines.push(line.text.clone()),
            _ => ranges.push((
                line.commit,
                BlameRangeView {
                    commit: commits[line.commit].clone(),
                    lines: vec![line.text.clone()],
                },
            )),
        }
    }
    ranges.into_iter().map(|(_, range)| range).collect()
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
