//! Diffs as GitLab limits them: the `diff_max_files`, `diff_max_lines` and
//! `diff_max_patch_bytes` settings turned into `git::diff::DiffLimits`, and the diff read
//! under them within the `git_backend_timeout_medium` time. Every diff the API shows goes
//! through [`read`] (a commit's diff, compare, and merge request diffs to come), so none is
//! ever read whole into memory.

use crate::git::diff::{DiffLimits, Diffs};
use crate::git::{self, Repository};
use crate::services::push::Timeouts;
use crate::settings::{Settings, keys};

/// GitLab refuses larger values (`ApplicationSetting` validations: 500 KiB, 3,000 files,
/// 100,000 lines); Trellis stores what it is given but reads at most these, so the settings
/// always bound what a diff holds in memory (3,000 files at 5 KiB: 15 MB).
const MAX_PATCH_BYTES_UPPER_BOUND: i64 = 500 * 1024;
const MAX_FILES_UPPER_BOUND: i64 = 3_000;
const MAX_LINES_UPPER_BOUND: i64 = 100_000;

/// How GitLab presents a diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presentation {
    /// Every patch shown up to the limits (a commit's diff, a merge request's diffs).
    Expanded,
    /// Patches past the safe limits (a tenth of the maximums) collapsed (compare).
    Collapsible,
}

/// GitLab's limits from the tenant's settings (GitLab's defaults where one is null).
pub fn limits(settings: &Settings, presentation: Presentation) -> DiffLimits {
    let read = |key: keys::IntSetting, default: i64, upper: i64| {
        settings.get(key).unwrap_or(default).clamp(0, upper) as usize
    };
    DiffLimits::gitlab(
        read(keys::DIFF_MAX_FILES, 1_000, MAX_FILES_UPPER_BOUND),
        read(keys::DIFF_MAX_LINES, 50_000, MAX_LINES_UPPER_BOUND),
        read(
            keys::DIFF_MAX_PATCH_BYTES,
            200 * 1024,
            MAX_PATCH_BYTES_UPPER_BOUND,
        ),
        presentation == Presentation::Collapsible,
    )
}

/// The diff from `from` to `to` (`None`: `to` against its first parent) as the tenant's
/// settings let it be shown.
pub async fn read(
    repo: &Repository,
    settings: &Settings,
    from: Option<&str>,
    to: &str,
    presentation: Presentation,
) -> git::Result<Diffs> {
    let timeout = Timeouts::from_settings(settings).medium;
    repo.diff(from, to, &limits(settings, presentation), timeout)
        .await
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn settings(values: serde_json::Value) -> Settings {
        Settings::from_stored(1, 0, 0, &values.to_string())
    }

    #[test]
    fn defaults_are_gitlabs_and_values_past_its_bounds_are_its_bounds() {
        let defaults = limits(&settings(json!({})), Presentation::Expanded);
        assert_eq!(defaults, DiffLimits::gitlab(1000, 50_000, 204_800, false));
        let huge = settings(json!({
            "diff_max_files": 1_000_000,
            "diff_max_lines": 1_000_000_000,
            "diff_max_patch_bytes": 1_i64 << 40,
        }));
        let bounded = limits(&huge, Presentation::Collapsible);
        assert_eq!(bounded, DiffLimits::gitlab(3000, 100_000, 512_000, true));
        let low = settings(json!({"diff_max_files": 3, "diff_max_patch_bytes": 100}));
        let low = limits(&low, Presentation::Expanded);
        assert_eq!((low.max_files, low.max_patch_bytes), (3, 100));
    }
}
