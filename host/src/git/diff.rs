//! Diffs between two commits, file by file, as GitLab shows them: paths, modes, whether the
//! file was added, renamed or deleted, and the patch text from the first hunk on. The file
//! list comes from `diff-tree --raw -z` (exact paths), the patches from `diff-tree -p` in the
//! same order; each file has exactly one `diff --git` section there.

use super::process::git;
use super::{Repository, Result};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    pub old_path: String,
    pub new_path: String,
    pub a_mode: String,
    pub b_mode: String,
    pub new_file: bool,
    pub renamed_file: bool,
    pub deleted_file: bool,
    /// The hunks (`@@ ...` and the lines), empty for binary files and mode changes.
    pub diff: String,
}

impl Repository {
    /// The changes from `from` to `to`; `from: None` diffs `to` against its first parent
    /// (everything, for a root commit).
    pub async fn diff(&self, from: Option<&str>, to: &str) -> Result<Vec<FileDiff>> {
        let mut base = vec!["diff-tree", "-r", "-M", "--no-commit-id", "--root"];
        match from {
            Some(from) => base.extend([from, to]),
            None => base.extend(["-m", "--first-parent", to]),
        }
        let mut raw_args = base.clone();
        raw_args.extend(["--raw", "-z"]);
        let mut patch_args = base;
        patch_args.extend(["-p", "--no-color", "--no-ext-diff", "--full-index"]);
        let (raw, patch) = tokio::try_join!(
            git(Some(&self.path), &raw_args),
            git(Some(&self.path), &patch_args)
        )?;
        let mut files = parse_raw(&raw);
        for (file, hunks) in files.iter_mut().zip(sections(&patch)) {
            file.diff = hunks;
        }
        Ok(files)
    }
}

/// `:<a mode> <b mode> <a id> <b id> <status>\0<path>\0[<new path>\0]` records.
fn parse_raw(raw: &[u8]) -> Vec<FileDiff> {
    let mut fields = raw.split(|b| *b == 0).map(String::from_utf8_lossy);
    let mut files = Vec::new();
    while let Some(meta) = fields.next() {
        let Some(meta) = meta.strip_prefix(':') else {
            continue;
        };
        let parts: Vec<&str> = meta.split(' ').collect();
        let [a_mode, b_mode, _, _, status] = parts.as_slice() else {
            continue;
        };
        let Some(path) = fields.next() else { break };
        let status = status.chars().next().unwrap_or('M');
        let new_path = if matches!(status, 'R' | 'C') {
            fields.next().map(|p| p.to_string()).unwrap_or_default()
        } else {
            path.to_string()
        };
        files.push(FileDiff {
            old_path: path.to_string(),
            new_path,
            a_mode: a_mode.to_string(),
            b_mode: b_mode.to_string(),
            new_file: status == 'A',
            renamed_file: status == 'R',
            deleted_file: status == 'D',
            diff: String::new(),
        });
    }
    files
}

/// Each file's hunks from `diff-tree -p`: the text of a `diff --git` section from its first
/// `@@` line on.
fn sections(patch: &[u8]) -> Vec<String> {
    let patch = String::from_utf8_lossy(patch);
    let mut sections: Vec<String> = Vec::new();
    let mut in_hunks = false;
    for line in patch.split_inclusive('\n') {
        if line.starts_with("diff --git ") {
            sections.push(String::new());
            in_hunks = false;
        } else if line.starts_with("@@") {
            in_hunks = true;
        }
        if in_hunks && let Some(current) = sections.last_mut() {
            current.push_str(line);
        }
    }
    sections
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_records_and_sections_pair_up() {
        let raw = b":000000 100644 0000 1111 A\0new.txt\0:100644 100644 2222 3333 R100\0old name\0new name\0:100644 000000 4444 0000 D\0gone\0";
        let files = parse_raw(raw);
        assert_eq!(files.len(), 3);
        assert!(files[0].new_file && files[0].new_path == "new.txt");
        assert!(files[1].renamed_file);
        assert_eq!(
            (files[1].old_path.as_str(), files[1].new_path.as_str()),
            ("old name", "new name")
        );
        assert!(files[2].deleted_file);
        let patch = b"diff --git a/new.txt b/new.txt\nnew file mode 100644\nindex 0..1\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\ndiff --git a/old name b/new name\nsimilarity index 100%\ndiff --git a/gone b/gone\n@@ -1 +0,0 @@\n-bye\n";
        assert_eq!(
            sections(patch),
            ["@@ -0,0 +1 @@\n+hello\n", "", "@@ -1 +0,0 @@\n-bye\n"]
        );
    }
}
