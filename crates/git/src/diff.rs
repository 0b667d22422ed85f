//! Diffs between two commits, file by file, as GitLab shows them: paths, modes, whether the
//! file was added, renamed or deleted, and the patch text from the first hunk on, under
//! GitLab's limits (`Gitlab::Git::DiffCollection`, done by Gitaly's diff parser).
//!
//! One `git diff-tree --raw -p -z` is read as a stream: first every file's raw record (exact
//! paths), then a NUL, then the patches in the same order, one `diff --git` section a file.
//! Memory stays bounded by the limits whatever the diff's size: a file's text is dropped as
//! soon as it reaches the per-file limit (the rest of it is read and counted, not kept), and
//! the read stops, and git is killed, once the list is cut.

use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

use super::process::git_stream;
use super::{Repository, Result};

/// GitLab's average patch size a file, from which it derives the byte limits (5 KiB).
const BYTES_PER_FILE: usize = 5 * 1024;
/// GitLab's safe limits are a tenth of the maximums (`Commit::DIFF_SAFE_LIMIT_FACTOR`).
const SAFE_LIMIT_FACTOR: usize = 10;
/// What is kept of a line that is not part of any shown patch: enough to recognize a
/// `diff --git ` line.
const LINE_HEAD: usize = 16;
/// What is kept of a path in a raw record (longer ones are cut; no file system has them).
const MAX_PATH_BYTES: usize = 16 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    pub old_path: String,
    pub new_path: String,
    pub a_mode: String,
    pub b_mode: String,
    pub new_file: bool,
    pub renamed_file: bool,
    pub deleted_file: bool,
    /// The hunks (`@@ ...` and the lines), empty for binary files and mode changes, and when
    /// the patch was too large or collapsed.
    pub diff: String,
    /// The patch reached `max_patch_bytes`, so it is not shown (GitLab's `too_large`).
    pub too_large: bool,
    /// The patch came past the safe limits of a collapsing diff, so it is not shown
    /// (GitLab's `collapsed`).
    pub collapsed: bool,
}

/// How much of a diff is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiffLimits {
    /// Files listed at most; a further file cuts the list.
    pub max_files: usize,
    /// Patch lines of the listed files together; the file that reaches it cuts the list.
    pub max_lines: usize,
    /// Patch bytes of the listed files together; the file that reaches it cuts the list.
    pub max_bytes: usize,
    /// A file whose patch reaches this many bytes is listed without it (`too_large`).
    pub max_patch_bytes: usize,
    /// Totals past which files are listed without their patch (`collapsed`); `None` for an
    /// expanded diff, whose patches show up to the limits above.
    pub collapse_past: Option<SafeLimits>,
}

/// The totals past which a collapsing diff drops patches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SafeLimits {
    pub files: usize,
    pub lines: usize,
    pub bytes: usize,
}

impl DiffLimits {
    /// GitLab's limits from its three settings (`Gitlab::Git::DiffCollection.limits`): bytes
    /// at 5 KiB a file on average, safe limits a tenth of the maximums. `collapse` for diffs
    /// GitLab shows collapsed past the safe limits (compare), not for expanded ones (a
    /// commit's diff).
    pub fn gitlab(
        max_files: usize,
        max_lines: usize,
        max_patch_bytes: usize,
        collapse: bool,
    ) -> DiffLimits {
        let safe_files = max_files / SAFE_LIMIT_FACTOR;
        DiffLimits {
            max_files,
            max_lines,
            max_bytes: max_files.saturating_mul(BYTES_PER_FILE),
            max_patch_bytes,
            collapse_past: collapse.then_some(SafeLimits {
                files: safe_files,
                lines: max_lines / SAFE_LIMIT_FACTOR,
                bytes: safe_files.saturating_mul(BYTES_PER_FILE),
            }),
        }
    }
}

/// The files of a diff that the limits let through.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diffs {
    pub files: Vec<FileDiff>,
    /// Files were left out past the limits (GitLab's `overflow?`).
    pub overflow: bool,
}

impl Repository {
    /// The changes from `from` to `to` under `limits`, read within `timeout`; `from: None`
    /// diffs `to` against its first parent (everything, for a root commit).
    pub async fn diff(
        &self,
        from: Option<&str>,
        to: &str,
        limits: &DiffLimits,
        timeout: Duration,
    ) -> Result<Diffs> {
        let mut args = vec![
            "diff-tree",
            "-r",
            "-M",
            "--no-commit-id",
            "--root",
            "--raw",
            "-p",
            "-z",
            "--no-color",
            "--no-ext-diff",
            "--full-index",
        ];
        match from {
            Some(from) => args.extend([from, to]),
            None => args.extend(["-m", "--first-parent", to]),
        }
        let limits = *limits;
        git_stream(&self.path, &args, timeout, |mut out| async move {
            read_diff(&mut out, &limits).await
        })
        .await
    }
}

/// Reads `diff-tree --raw -p -z` output under `limits`: the diffs, and whether the output was
/// read to its end (else the caller stops git).
async fn read_diff(
    out: &mut (impl AsyncBufRead + Unpin),
    limits: &DiffLimits,
) -> std::io::Result<(Diffs, bool)> {
    let Some(records) = read_records(out, limits.max_files).await? else {
        return Ok((Diffs::default(), true));
    };
    let mut files = records.files;
    let mut totals = Totals::default();
    let mut current: Option<Section> = None;
    let mut line = Vec::new();
    let mut shown = 0;
    let mut overflow = false;
    let read_to_end = loop {
        line.clear();
        let keep = current.as_ref().map_or(LINE_HEAD, |s| s.keep(limits));
        let Some(length) = read_bounded(out, b'\n', keep, &mut line).await? else {
            break true;
        };
        if line.starts_with(b"diff --git ") {
            if let Some(section) = current.take() {
                if !totals.finish(section, &mut files[shown], limits) {
                    overflow = true;
                    break false;
                }
                shown += 1;
            }
            if shown == files.len() {
                // A section for a file past `max_files`.
                break false;
            }
            current = Some(Section::default());
        } else if let Some(section) = current.as_mut() {
            section.add(&line, length, limits);
        }
    };
    // The output ended in the last section.
    if let Some(section) = current.take() {
        match totals.finish(section, &mut files[shown], limits) {
            true => shown += 1,
            false => overflow = true,
        }
    }
    if read_to_end && shown < files.len() && !overflow {
        // Files without a section (none are expected) keep an empty patch.
        shown = files.len();
    }
    files.truncate(shown);
    Ok((
        Diffs {
            files,
            overflow: overflow || records.more,
        },
        read_to_end,
    ))
}

/// The raw records of at most `max_files` files, and whether more followed.
struct Records {
    files: Vec<FileDiff>,
    more: bool,
}

/// Reads the raw records up to the NUL that ends them; `None` when git printed nothing (no
/// changes).
async fn read_records(
    out: &mut (impl AsyncBufRead + Unpin),
    max_files: usize,
) -> std::io::Result<Option<Records>> {
    let mut records = Records {
        files: Vec::new(),
        more: false,
    };
    let mut field = Vec::new();
    let mut any = false;
    while let Some(meta) = read_field(out, &mut field).await? {
        any = true;
        // An empty field is the NUL between the records and the patches.
        let Some(meta) = meta.strip_prefix(':') else {
            break;
        };
        let parts: Vec<&str> = meta.split(' ').collect();
        let [a_mode, b_mode, _, _, status] = parts.as_slice() else {
            continue;
        };
        let status = status.chars().next().unwrap_or('M');
        let Some(path) = read_field(out, &mut field).await? else {
            break;
        };
        let new_path = match status {
            'R' | 'C' => read_field(out, &mut field).await?.unwrap_or_default(),
            _ => path.clone(),
        };
        if records.files.len() == max_files {
            records.more = true;
            continue;
        }
        records.files.push(FileDiff {
            old_path: path,
            new_path,
            a_mode: gitlab_mode(a_mode),
            b_mode: gitlab_mode(b_mode),
            new_file: status == 'A',
            renamed_file: status == 'R',
            deleted_file: status == 'D',
            diff: String::new(),
            too_large: false,
            collapsed: false,
        });
    }
    Ok(any.then_some(records))
}

/// The next NUL-terminated field of the raw records, if any.
async fn read_field(
    out: &mut (impl AsyncBufRead + Unpin),
    field: &mut Vec<u8>,
) -> std::io::Result<Option<String>> {
    field.clear();
    if read_bounded(out, b'\0', MAX_PATH_BYTES, field)
        .await?
        .is_none()
    {
        return Ok(None);
    }
    let text = field.strip_suffix(b"\0").unwrap_or(field);
    Ok(Some(String::from_utf8_lossy(text).into_owned()))
}

/// One file's `diff --git` section as it is read: its patch (the lines from the first `@@`
/// on), counted whole and kept while under `max_patch_bytes`.
#[derive(Default)]
struct Section {
    in_hunks: bool,
    lines: usize,
    bytes: usize,
    text: Vec<u8>,
    /// The patch reached `max_patch_bytes`: its text is gone, the rest is only counted.
    too_large: bool,
}

impl Section {
    /// How much of the next line to keep: the room left under `max_patch_bytes` while the
    /// patch is kept (at least enough to recognize the next section).
    fn keep(&self, limits: &DiffLimits) -> usize {
        if self.too_large {
            LINE_HEAD
        } else {
            limits
                .max_patch_bytes
                .saturating_sub(self.text.len())
                .max(LINE_HEAD)
        }
    }

    /// Adds a line of `length` bytes, of which `kept` were kept.
    fn add(&mut self, kept: &[u8], length: usize, limits: &DiffLimits) {
        if !self.in_hunks && kept.starts_with(b"@@") {
            self.in_hunks = true;
        }
        if !self.in_hunks {
            return;
        }
        self.lines += 1;
        self.bytes += length;
        if self.too_large {
            return;
        }
        if self.bytes >= limits.max_patch_bytes {
            self.too_large = true;
            self.text = Vec::new();
        } else {
            self.text.extend_from_slice(kept);
        }
    }
}

/// What the files listed so far add up to, as Gitaly's diff parser counts: every file, and
/// the lines and bytes of the patches shown.
#[derive(Default)]
struct Totals {
    files: usize,
    lines: usize,
    bytes: usize,
}

impl Totals {
    /// Ends `file`'s section: its patch is shown, collapsed or too large. `false` when the
    /// file reaches the limits, which cuts the list before it.
    fn finish(&mut self, section: Section, file: &mut FileDiff, limits: &DiffLimits) -> bool {
        self.files += 1;
        self.lines += section.lines;
        self.bytes += section.bytes;
        // Checked with this file counted, as Gitaly checks.
        file.collapsed = limits.collapse_past.is_some_and(|safe| {
            (self.files > safe.files || self.lines > safe.lines || self.bytes > safe.bytes)
                && section.lines > 0
        });
        let shown_bytes = if file.collapsed { 0 } else { section.bytes };
        file.too_large = shown_bytes >= limits.max_patch_bytes;
        let shown = (!file.collapsed && !file.too_large).then_some(section.text);
        match shown {
            Some(text) => {
                file.diff = String::from_utf8(text)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
            }
            None => {
                self.lines -= section.lines;
                self.bytes -= section.bytes;
            }
        }
        self.files <= limits.max_files
            && self.lines < limits.max_lines
            && self.bytes < limits.max_bytes
    }
}

/// Reads up to and including the next `delimiter` (or to the end), appending at most `keep`
/// bytes of it to `kept`: its whole length, or `None` at the end of the output. A line of any
/// length costs no more memory than `keep`.
async fn read_bounded(
    out: &mut (impl AsyncBufRead + Unpin),
    delimiter: u8,
    keep: usize,
    kept: &mut Vec<u8>,
) -> std::io::Result<Option<usize>> {
    let mut length = 0;
    loop {
        let available = out.fill_buf().await?;
        if available.is_empty() {
            return Ok((length > 0).then_some(length));
        }
        let (taken, done) = match memchr::memchr(delimiter, available) {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        let room = keep.saturating_sub(length);
        kept.extend_from_slice(&available[..taken.min(room)]);
        out.consume(taken);
        length += taken;
        if done {
            return Ok(Some(length));
        }
    }
}

/// A mode as GitLab shows it (Gitaly's mode in octal): a missing side is `0`, not git's
/// `000000`.
fn gitlab_mode(mode: &str) -> String {
    match mode.trim_start_matches('0') {
        "" => "0".into(),
        mode => mode.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Limits that let everything through.
    fn unlimited() -> DiffLimits {
        DiffLimits {
            max_files: usize::MAX,
            max_lines: usize::MAX,
            max_bytes: usize::MAX,
            max_patch_bytes: usize::MAX,
            collapse_past: None,
        }
    }

    async fn read(output: &[u8], limits: &DiffLimits) -> (Diffs, bool) {
        read_diff(&mut &output[..], limits).await.unwrap()
    }

    /// A raw record and a section for each `(path, patch lines)`: new files.
    fn output(files: &[(&str, &[&str])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (path, _) in files {
            out.extend_from_slice(format!(":000000 100644 0000 1111 A\0{path}\0").as_bytes());
        }
        out.push(0);
        for (path, lines) in files {
            out.extend_from_slice(
                format!(
                    "diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0..1\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n",
                    lines.len()
                )
                .as_bytes(),
            );
            for line in *lines {
                out.extend_from_slice(format!("+{line}\n").as_bytes());
            }
        }
        out
    }

    #[tokio::test]
    async fn raw_records_and_sections_pair_up() {
        let mut out = b":000000 100644 0000 1111 A\0new.txt\0:100644 100644 2222 3333 R100\0old name\0new name\0:100644 000000 4444 0000 D\0gone\0\0".to_vec();
        out.extend_from_slice(b"diff --git a/new.txt b/new.txt\nnew file mode 100644\nindex 0..1\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\ndiff --git a/old name b/new name\nsimilarity index 100%\ndiff --git a/gone b/gone\n@@ -1 +0,0 @@\n-bye\n");
        let (diffs, read_to_end) = read(&out, &unlimited()).await;
        assert!(read_to_end && !diffs.overflow);
        let files = diffs.files;
        assert_eq!(files.len(), 3);
        assert!(files[0].new_file && files[0].new_path == "new.txt");
        assert!(files[1].renamed_file);
        assert_eq!(
            (files[1].old_path.as_str(), files[1].new_path.as_str()),
            ("old name", "new name")
        );
        assert!(files[2].deleted_file);
        let patches: Vec<&str> = files.iter().map(|f| f.diff.as_str()).collect();
        assert_eq!(
            patches,
            ["@@ -0,0 +1 @@\n+hello\n", "", "@@ -1 +0,0 @@\n-bye\n"]
        );
        assert!(files.iter().all(|f| !f.too_large && !f.collapsed));
    }

    #[tokio::test]
    async fn no_changes_is_an_empty_list() {
        assert_eq!(read(b"", &unlimited()).await, (Diffs::default(), true));
    }

    #[tokio::test]
    async fn a_patch_reaching_the_file_limit_is_too_large_and_the_others_stay() {
        let big = ["x".repeat(100)];
        let big: Vec<&str> = big.iter().map(String::as_str).collect();
        let out = output(&[("small", &["a"]), ("big", &big), ("after", &["b"])]);
        let limits = DiffLimits {
            max_patch_bytes: 60,
            ..unlimited()
        };
        let (diffs, _) = read(&out, &limits).await;
        let files = &diffs.files;
        assert_eq!(files.len(), 3);
        assert_eq!(files[0].diff, "@@ -0,0 +1,1 @@\n+a\n");
        assert!(files[1].too_large && files[1].diff.is_empty() && !files[1].collapsed);
        assert_eq!(files[2].diff, "@@ -0,0 +1,1 @@\n+b\n");
        assert!(!diffs.overflow);
        // exactly at the limit is too large, as GitLab's `>=`
        let limits = DiffLimits {
            max_patch_bytes: "@@ -0,0 +1,1 @@\n+a\n".len(),
            ..unlimited()
        };
        assert!(read(&output(&[("a", &["a"])]), &limits).await.0.files[0].too_large);
    }

    #[tokio::test]
    async fn a_huge_line_keeps_no_more_than_the_limit() {
        let huge = [b"+".as_slice(), &vec![b'x'; 10 * 1024 * 1024], b"\n"].concat();
        let mut kept = Vec::new();
        let length = read_bounded(&mut &huge[..], b'\n', 8, &mut kept)
            .await
            .unwrap();
        assert_eq!((length, kept.len()), (Some(huge.len()), 8));
        let mut out = output(&[("big", &[])]);
        out.extend_from_slice(&huge);
        let limits = DiffLimits {
            max_patch_bytes: 1000,
            ..unlimited()
        };
        let (diffs, read_to_end) = read(&out, &limits).await;
        assert!(read_to_end && diffs.files[0].too_large && diffs.files[0].diff.is_empty());
    }

    #[tokio::test]
    async fn more_files_than_the_limit_cut_the_list() {
        let out = output(&[("a", &["1"]), ("b", &["2"]), ("c", &["3"])]);
        let limits = DiffLimits {
            max_files: 2,
            ..unlimited()
        };
        let (diffs, read_to_end) = read(&out, &limits).await;
        let paths: Vec<&str> = diffs.files.iter().map(|f| f.new_path.as_str()).collect();
        assert_eq!(paths, ["a", "b"]);
        assert!(
            diffs.overflow && !read_to_end,
            "stops before the third patch"
        );
        assert_eq!(diffs.files[1].diff, "@@ -0,0 +1,1 @@\n+2\n");
    }

    #[tokio::test]
    async fn the_file_reaching_the_line_or_byte_limit_is_left_out() {
        let out = output(&[("a", &["1", "2"]), ("b", &["3", "4"]), ("c", &["5"])]);
        // 3 patch lines a file (the `@@` line counts): a has 3, b brings 6 >= 5
        let limits = DiffLimits {
            max_lines: 5,
            ..unlimited()
        };
        let (diffs, read_to_end) = read(&out, &limits).await;
        assert_eq!(diffs.files.len(), 1);
        assert!(diffs.overflow && !read_to_end);
        let first = "@@ -0,0 +1,2 @@\n+1\n+2\n".len();
        let limits = DiffLimits {
            max_bytes: first + 1,
            ..unlimited()
        };
        let (diffs, _) = read(&out, &limits).await;
        assert_eq!((diffs.files.len(), diffs.overflow), (1, true));
        // too large patches do not count towards the totals
        let limits = DiffLimits {
            max_lines: 5,
            max_patch_bytes: first,
            ..unlimited()
        };
        let (diffs, _) = read(&out, &limits).await;
        assert_eq!(diffs.files.len(), 3);
        assert!(diffs.files[..2].iter().all(|f| f.too_large) && !diffs.overflow);
    }

    #[tokio::test]
    async fn past_the_safe_limits_patches_collapse() {
        let out = output(&[("a", &["1"]), ("b", &["2"]), ("c", &["3"])]);
        let limits = DiffLimits {
            collapse_past: Some(SafeLimits {
                files: 1,
                lines: usize::MAX,
                bytes: usize::MAX,
            }),
            ..unlimited()
        };
        let (diffs, _) = read(&out, &limits).await;
        let collapsed: Vec<bool> = diffs.files.iter().map(|f| f.collapsed).collect();
        assert_eq!(collapsed, [false, true, true]);
        assert!(diffs.files[1].diff.is_empty() && !diffs.files[1].too_large);
        assert!(!diffs.overflow);
    }

    #[tokio::test]
    async fn an_endless_output_is_not_read_past_the_limits() {
        // Sections keep coming: the read stops once the list is cut.
        let mut out = output(&[("a", &["1"]), ("b", &["2"])]);
        let section = b"diff --git a/b b/b\n@@ -0,0 +1 @@\n+2\n".repeat(100_000);
        out.extend_from_slice(&section);
        let limits = DiffLimits {
            max_files: 1,
            ..unlimited()
        };
        let mut reader = &out[..];
        let (diffs, read_to_end) = read_diff(&mut reader, &limits).await.unwrap();
        assert!(diffs.overflow && !read_to_end && diffs.files.len() == 1);
        assert!(
            reader.len() > section.len() - 1000,
            "the rest is left unread"
        );
    }

    #[test]
    fn gitlab_limits_from_the_settings() {
        let limits = DiffLimits::gitlab(1000, 50_000, 204_800, true);
        assert_eq!(limits.max_bytes, 1000 * 5 * 1024);
        assert_eq!(
            limits.collapse_past,
            Some(SafeLimits {
                files: 100,
                lines: 5000,
                bytes: 100 * 5 * 1024
            })
        );
        assert_eq!(
            DiffLimits::gitlab(1000, 50_000, 204_800, false).collapse_past,
            None
        );
    }
}
