//! The repository API's representations: commits, branches, tags, tree entries, diffs and
//! files, in GitLab's shapes. Dates keep the offset git recorded, with milliseconds, as GitLab
//! shows them (`2026-11-23T17:08:43.000+01:00`).

use serde_json::{Value, json};

use crate::git::commits::{Commit, Stats};
use crate::git::diff::FileDiff;
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

impl RepoViews<'_> {
    /// GitLab's basic commit (lists, branches, tags).
    pub fn commit(&self, commit: &Commit) -> Value {
        let id = &commit.id;
        json!({
            "id": id,
            "short_id": id.get(..8).unwrap_or(id),
            "created_at": git_date(&commit.committed_date),
            "parent_ids": commit.parent_ids,
            "title": commit.title(),
            "message": commit.message,
            "author_name": commit.author_name,
            "author_email": commit.author_email,
            "authored_date": git_date(&commit.authored_date),
            "committer_name": commit.committer_name,
            "committer_email": commit.committer_email,
            "committed_date": git_date(&commit.committed_date),
            "trailers": {},
            "extended_trailers": {},
            "web_url": format!("{}/-/commit/{id}", self.web_url),
        })
    }

    /// A commit with its line counts (`with_stats`).
    pub fn commit_with_stats(&self, commit: &Commit, stats: Stats) -> Value {
        let mut value = self.commit(commit);
        value["stats"] = stats_json(stats);
        value
    }

    /// A single commit (`GET .../commits/:sha`, and a created commit): the basic view with
    /// stats, status, pipeline and project.
    pub fn commit_detail(&self, commit: &Commit, stats: Option<Stats>) -> Value {
        let mut value = self.commit(commit);
        if let Some(stats) = stats {
            value["stats"] = stats_json(stats);
        }
        value["status"] = Value::Null;
        value["last_pipeline"] = Value::Null;
        value["project_id"] = json!(self.project_id);
        value
    }

    pub fn branch(&self, branch: &Branch, facts: &BranchFacts) -> Value {
        json!({
            "name": branch.name,
            "commit": self.commit(&branch.commit),
            "merged": facts.merged,
            "protected": facts.protected,
            "developers_can_push": facts.developers_can_push,
            "developers_can_merge": facts.developers_can_merge,
            "can_push": facts.can_push,
            "default": facts.default,
            "web_url": format!("{}/-/tree/{}", self.web_url, branch.name),
        })
    }

    pub fn tag(&self, tag: &Tag) -> Value {
        json!({
            "name": tag.name,
            "message": tag.message,
            "target": tag.target,
            "commit": self.commit(&tag.commit),
            "release": null,
            "protected": false,
            "created_at": tag.created_at.as_deref().map(git_date),
        })
    }

    /// `{"compare_same_ref", "compare_timeout", "commit", "commits", "diffs", "web_url"}`.
    pub fn compare(
        &self,
        from: &str,
        to: &str,
        commits: &[Commit],
        diffs: &[FileDiff],
        straight: bool,
    ) -> Value {
        let dots = if straight { ".." } else { "..." };
        json!({
            "commit": commits.last().map(|c| self.commit(c)),
            "commits": commits.iter().map(|c| self.commit(c)).collect::<Vec<_>>(),
            "diffs": diffs.iter().map(diff).collect::<Vec<_>>(),
            "compare_timeout": false,
            "compare_same_ref": from == to,
            "web_url": format!("{}/-/compare/{from}{dots}{to}", self.web_url),
        })
    }
}

fn stats_json(stats: Stats) -> Value {
    json!({
        "additions": stats.additions,
        "deletions": stats.deletions,
        "total": stats.additions + stats.deletions,
    })
}

/// A tree entry: `{"id", "name", "type", "path", "mode"}`.
pub fn tree_entry(entry: &Entry) -> Value {
    json!({
        "id": entry.id,
        "name": entry.name(),
        "type": entry.kind,
        "path": entry.path,
        "mode": entry.mode,
    })
}

/// One file's diff.
pub fn diff(file: &FileDiff) -> Value {
    json!({
        "diff": file.diff,
        "new_path": file.new_path,
        "old_path": file.old_path,
        "a_mode": file.a_mode,
        "b_mode": file.b_mode,
        "new_file": file.new_file,
        "renamed_file": file.renamed_file,
        "deleted_file": file.deleted_file,
        "generated_file": false,
    })
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
