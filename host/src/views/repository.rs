//! The repository API's representations: commits, branches, tags, tree entries, diffs and
//! files, in GitLab's shapes. Dates keep the offset git recorded, with milliseconds, as GitLab
//! shows them (`2026-11-23T17:08:43.000+01:00`).

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::git::commits::{Commit, Stats};
use crate::git::diff::{Diffs, FileDiff};
use crate::git::refs::{Branch, Tag};
use crate::git::tree::Entry;

/// Links into one project's pages.
pub struct RepoViews<'a> {
    /// The project's `web_url`.
    pub web_url: &'a str,
    pub project_id: i64,
}

/// A git ISO 8601 date as GitLab writes it; unparsable text is passed through.
pub fn git_date(date: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(date)
        .map(|d| d.format("%Y-%m-%dT%H:%M:%S%.3f%:z").to_string())
        .unwrap_or_else(|_| date.to_string())
}

/// What a branch view needs besides the branch.
pub struct BranchFacts {
    pub merged: bool,
    pub protected: bool,
    pub developers_can_push: bool,
    pub developers_can_merge: bool,
    pub can_push: bool,
    pub default: bool,
}

/// GitLab's basic commit (lists, branches, tags), with its line counts where asked for.
#[derive(Clone, Serialize, ToSchema)]
pub struct CommitView {
    pub id: String,
    pub short_id: String,
    pub created_at: String,
    pub parent_ids: Vec<String>,
    pub title: String,
    pub message: String,
    pub author_name: String,
    pub author_email: String,
    pub authored_date: String,
    pub committer_name: String,
    pub committer_email: String,
    pub committed_date: String,
    /// Always empty: Trellis does not parse trailers.
    #[schema(value_type = Object)]
    pub trailers: Map<String, Value>,
    #[schema(value_type = Object)]
    pub extended_trailers: Map<String, Value>,
    pub web_url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats: Option<StatsView>,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct StatsView {
    pub additions: i64,
    pub deletions: i64,
    pub total: i64,
}

impl From<Stats> for StatsView {
    fn from(stats: Stats) -> Self {
        StatsView {
            additions: stats.additions,
            deletions: stats.deletions,
            total: stats.additions + stats.deletions,
        }
    }
}

/// A single commit (`GET .../commits/:sha`, and a created commit): the basic view with
/// status, pipeline and project.
#[derive(Clone, Serialize, ToSchema)]
pub struct CommitDetail {
    #[serde(flatten)]
    pub commit: CommitView,
    /// No pipelines: always null.
    pub status: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub last_pipeline: Option<Value>,
    pub project_id: i64,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct BranchView {
    pub name: String,
    pub commit: CommitView,
    pub merged: bool,
    pub protected: bool,
    pub developers_can_push: bool,
    pub developers_can_merge: bool,
    pub can_push: bool,
    pub default: bool,
    pub web_url: String,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct TagView {
    pub name: String,
    pub message: String,
    pub target: String,
    pub commit: CommitView,
    /// No releases: always null.
    #[schema(value_type = Option<Object>)]
    pub release: Option<Value>,
    pub protected: bool,
    pub created_at: Option<String>,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct CompareView {
    pub commit: Option<CommitView>,
    pub commits: Vec<CommitView>,
    pub diffs: Vec<DiffView>,
    /// Files were left out past the `diff_max_*` limits (GitLab's `overflow?`).
    pub compare_timeout: bool,
    pub compare_same_ref: bool,
    pub web_url: String,
}

/// A tree entry.
#[derive(Clone, Serialize, ToSchema)]
pub struct TreeEntryView {
    pub id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub path: String,
    pub mode: String,
}

/// One file's diff.
#[derive(Clone, Serialize, ToSchema)]
pub struct DiffView {
    /// Empty when the patch is collapsed or too large.
    pub diff: String,
    /// Past the safe limits of a compare, the patch is left out.
    pub collapsed: bool,
    /// The patch reached `diff_max_patch_bytes` and is left out.
    pub too_large: bool,
    pub new_path: String,
    pub old_path: String,
    pub a_mode: String,
    pub b_mode: String,
    pub new_file: bool,
    pub renamed_file: bool,
    pub deleted_file: bool,
    pub generated_file: bool,
}

impl RepoViews<'_> {
    pub fn commit(&self, commit: &Commit) -> CommitView {
        let id = &commit.id;
        CommitView {
            id: id.clone(),
            short_id: id.get(..8).unwrap_or(id).to_string(),
            created_at: git_date(&commit.committed_date),
            parent_ids: commit.parent_ids.clone(),
            title: commit.title().to_string(),
            message: commit.message.clone(),
            author_name: commit.author_name.clone(),
            author_email: commit.author_email.clone(),
            authored_date: git_date(&commit.authored_date),
            committer_name: commit.committer_name.clone(),
            committer_email: commit.committer_email.clone(),
            committed_date: git_date(&commit.committed_date),
            trailers: Map::new(),
            extended_trailers: Map::new(),
            web_url: format!("{}/-/commit/{id}", self.web_url),
            stats: None,
        }
    }

    /// A commit with its line counts (`with_stats`).
    pub fn commit_with_stats(&self, commit: &Commit, stats: Stats) -> CommitView {
        CommitView {
            stats: Some(stats.into()),
            ..self.commit(commit)
        }
    }

    pub fn commit_detail(&self, commit: &Commit, stats: Option<Stats>) -> CommitDetail {
        CommitDetail {
            commit: CommitView {
                stats: stats.map(StatsView::from),
                ..self.commit(commit)
            },
            status: None,
            last_pipeline: None,
            project_id: self.project_id,
        }
    }

    pub fn branch(&self, branch: &Branch, facts: &BranchFacts) -> BranchView {
        BranchView {
            name: branch.name.clone(),
            commit: self.commit(&branch.commit),
            merged: facts.merged,
            protected: facts.protected,
            developers_can_push: facts.developers_can_push,
            developers_can_merge: facts.developers_can_merge,
            can_push: facts.can_push,
            default: facts.default,
            web_url: format!("{}/-/tree/{}", self.web_url, branch.name),
        }
    }

    /// A tag; `protected` when a protected tag rule matches its name.
    pub fn tag(&self, tag: &Tag, protected: bool) -> TagView {
        TagView {
            name: tag.name.clone(),
            message: tag.message.clone(),
            target: tag.target.clone(),
            commit: self.commit(&tag.commit),
            release: None,
            protected,
            created_at: tag.created_at.as_deref().map(git_date),
        }
    }

    pub fn compare(
        &self,
        from: &str,
        to: &str,
        commits: &[Commit],
        diffs: &Diffs,
        straight: bool,
    ) -> CompareView {
        let dots = if straight { ".." } else { "..." };
        CompareView {
            commit: commits.last().map(|c| self.commit(c)),
            commits: commits.iter().map(|c| self.commit(c)).collect(),
            diffs: diffs.files.iter().map(diff).collect(),
            compare_timeout: diffs.overflow,
            compare_same_ref: from == to,
            web_url: format!("{}/-/compare/{from}{dots}{to}", self.web_url),
        }
    }
}

pub fn tree_entry(entry: &Entry) -> TreeEntryView {
    TreeEntryView {
        id: entry.id.clone(),
        name: entry.name().to_string(),
        kind: entry.kind.clone(),
        path: entry.path.clone(),
        mode: entry.mode.clone(),
    }
}

pub fn diff(file: &FileDiff) -> DiffView {
    DiffView {
        diff: file.diff.clone(),
        collapsed: file.collapsed,
        too_large: file.too_large,
        new_path: file.new_path.clone(),
        old_path: file.old_path.clone(),
        a_mode: file.a_mode.clone(),
        b_mode: file.b_mode.clone(),
        new_file: file.new_file,
        renamed_file: file.renamed_file,
        deleted_file: file.deleted_file,
        generated_file: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_keep_their_offset_with_milliseconds() {
        assert_eq!(
            git_date("2026-11-23T17:08:43+01:00"),
            "2026-11-23T17:08:43.000+01:00"
        );
        assert_eq!(git_date("garbage"), "garbage");
    }
}
