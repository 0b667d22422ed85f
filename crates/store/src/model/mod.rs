//! The rows the store hands out, as stored: one file per resource, named as its `store`
//! module, with the stored forms they share (timestamps in milliseconds since the epoch,
//! booleans through [`Flag`]).
//!
//! Both `store` (which reads and writes them) and `views` (which renders them) import these
//! types, so views depend on the shape of the data and not on the SQL: `views` imports
//! nothing from `store`. Only the rows that leave the store to be rendered live here; rows
//! the store uses on its own (counters, join helpers) stay beside their queries, as do the
//! column lists and the `FromRow` impls written by hand. The project settings catalog
//! ([`project_settings`]) is here too: it is the schema of a stored column; so are the pure
//! readings of stored issue text and durations ([`issue_text`]) that views and services share.

pub mod colors;
pub mod feature_access;
pub mod hooks;
pub mod issue_notes;
pub mod issue_text;
pub mod issues;
pub mod jobs;
pub mod keys;
pub mod labels;
pub mod members;
pub mod merge_requests;
pub mod milestones;
pub mod namespaces;
pub mod noteables;
pub mod oauth;
pub mod plugins;
pub mod project_names;
pub mod project_settings;
pub mod project_shares;
pub mod projects;
pub mod protected_branches;
pub mod protected_tags;
pub mod states;
pub mod tokens;
pub mod user_admin;
pub mod users;
pub mod visibility;
pub mod webhooks;

/// Milliseconds since the epoch, the stored form of every timestamp.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Today's date (UTC) as stored dates are written, `YYYY-MM-DD`: what expiry dates compare
/// with.
pub fn today() -> String {
    date_text(chrono::Utc::now().date_naive())
}

/// `date` as `YYYY-MM-DD`, as chrono's `Display` writes it.
pub fn date_text(date: chrono::NaiveDate) -> String {
    use chrono::Datelike;
    let year = date.year();
    if !(0..=9999).contains(&year) {
        return date.to_string();
    }
    // Written digit by digit: every authenticated request asks, every view has dates or
    // timestamps, and chrono's formatter machinery cost about 1% of `GET /user`'s CPU in a
    // profile.
    let mut text = String::with_capacity(24);
    push_digits(&mut text, year as u32, 4);
    text.push('-');
    push_digits(&mut text, date.month(), 2);
    text.push('-');
    push_digits(&mut text, date.day(), 2);
    text
}

/// Appends `value`'s last `width` decimal digits, zero-padded.
pub fn push_digits(text: &mut String, value: u32, width: u32) {
    for place in (0..width).rev() {
        text.push(char::from(b'0' + (value / 10u32.pow(place) % 10) as u8));
    }
}

/// A stored boolean (BIGINT 0/1). Row fields read it with `#[sqlx(try_from = "Flag")]` into
/// a plain `bool`; sqlx's Any driver cannot decode SQLite booleans itself.
#[derive(Debug, Clone, Copy)]
pub struct Flag(bool);

impl From<Flag> for bool {
    fn from(flag: Flag) -> bool {
        flag.0
    }
}

impl sqlx::Type<sqlx::Any> for Flag {
    fn type_info() -> sqlx::any::AnyTypeInfo {
        <i64 as sqlx::Type<sqlx::Any>>::type_info()
    }

    fn compatible(ty: &sqlx::any::AnyTypeInfo) -> bool {
        <i64 as sqlx::Type<sqlx::Any>>::compatible(ty)
            || <i32 as sqlx::Type<sqlx::Any>>::compatible(ty)
            || <bool as sqlx::Type<sqlx::Any>>::compatible(ty)
    }
}

impl<'r> sqlx::Decode<'r, sqlx::Any> for Flag {
    fn decode(value: sqlx::any::AnyValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
        Ok(Flag(<i64 as sqlx::Decode<sqlx::Any>>::decode(value)? != 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_written_as_chrono_writes_them() {
        for (y, m, d) in [
            (2026, 11, 29),
            (1999, 1, 1),
            (2000, 12, 31),
            (33, 2, 3),
            (12345, 6, 7),
        ] {
            let date = chrono::NaiveDate::from_ymd_opt(y, m, d).unwrap();
            assert_eq!(date_text(date), date.to_string());
        }
    }
}
