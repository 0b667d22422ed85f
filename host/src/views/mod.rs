//! The JSON representations of resources: the spec's field tables, built in one place.
//!
//! One file per view holds its shapes, how they are filled from the rows of `model`, and the
//! loading they need besides those rows (`ProjectViews::load_page`, `IssueBatch::load`,
//! `NamespaceViews::load_page`...): done for a whole page at once, one statement per kind of
//! related row, never one per row. Handlers parse, call the loader, and respond.

pub mod application;
pub mod catalog_schema;
pub mod hook;
pub mod hook_test;
pub mod issue;
pub mod keys;
pub mod merge_request;
pub mod meta;
pub mod namespace;
pub mod plugin;
pub mod project;
pub mod project_answers;
pub mod project_settings;
pub mod protected_branch;
pub mod repository;
pub mod repository_file;
pub mod settings;
pub mod system_hook_payload;
pub mod token;
pub mod user;
pub mod user_admin;
pub mod user_status;
pub mod webhook_payload;

use chrono::{DateTime, Datelike, SecondsFormat, Timelike, Utc};

use crate::model::{date_text, push_digits};

/// GitLab's timestamp format: `2026-11-22T10:04:05.123Z`.
pub fn timestamp(ms: i64) -> String {
    let at = DateTime::<Utc>::from_timestamp_millis(ms).unwrap_or_default();
    if !(0..=9999).contains(&at.year()) {
        return at.to_rfc3339_opts(SecondsFormat::Millis, true);
    }
    let mut text = date_text(at.date_naive());
    for (before, value, width) in [
        ('T', at.hour(), 2),
        (':', at.minute(), 2),
        (':', at.second(), 2),
        ('.', at.timestamp_subsec_millis(), 3),
    ] {
        text.push(before);
        push_digits(&mut text, value, width);
    }
    text.push('Z');
    text
}

pub fn timestamp_opt(ms: Option<i64>) -> Option<String> {
    ms.map(timestamp)
}

/// Each id once, in ascending order: the keys of one of a page's lookups.
pub(crate) fn unique(ids: impl Iterator<Item = i64>) -> Vec<i64> {
    let mut ids: Vec<i64> = ids.collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_written_as_chrono_writes_them() {
        let samples = [
            0,
            1,
            -1,
            999,
            1_000,
            1_764_378_245_123,
            -62_135_596_800_000,
            253_402_300_799_999,
            253_402_300_800_000,
            -62_135_596_800_001,
            951_782_400_000,
        ];
        let stepped = (0..2_000_i64).map(|i| {
            i.wrapping_mul(7_919_876_543_211)
                .rem_euclid(253_402_300_799_999)
        });
        for ms in samples.into_iter().chain(stepped) {
            let expected = DateTime::<Utc>::from_timestamp_millis(ms)
                .unwrap_or_default()
                .to_rfc3339_opts(SecondsFormat::Millis, true);
            assert_eq!(timestamp(ms), expected, "{ms}");
        }
    }
}
