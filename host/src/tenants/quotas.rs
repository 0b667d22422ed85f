//! How quotas are written on the command line and shown to people.

use crate::store::tenants::QuotaUsage;

/// A quota as given to `trellis tenant quota`: a limit, or `none` to clear it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaArg(pub Option<i64>);

/// A count (`10`) or `none`.
pub fn parse_count(text: &str) -> Result<QuotaArg, String> {
    if text.trim().eq_ignore_ascii_case("none") {
        return Ok(QuotaArg(None));
    }
    text.trim()
        .parse::<i64>()
        .ok()
        .filter(|n| *n >= 0)
        .map(|n| QuotaArg(Some(n)))
        .ok_or_else(|| format!("{text:?} is neither a whole number nor `none`"))
}

/// A size (`10GiB`, `500MB`, `1048576`: binary units `KiB`..`TiB`, decimal `KB`..`TB`, or
/// bytes) or `none`.
pub fn parse_size(text: &str) -> Result<QuotaArg, String> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("none") {
        return Ok(QuotaArg(None));
    }
    let invalid = || format!("{text:?} is not a size like 10GiB, 500MB or a number of bytes");
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().map_err(|_| invalid())?;
    let factor: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        "kib" => 1024.0,
        "mib" => 1024f64.powi(2),
        "gib" => 1024f64.powi(3),
        "tib" => 1024f64.powi(4),
        _ => return Err(invalid()),
    };
    let bytes = (number * factor).round();
    if !(0.0..=i64::MAX as f64).contains(&bytes) {
        return Err(invalid());
    }
    Ok(QuotaArg(Some(bytes as i64)))
}

/// Bytes in binary units, one decimal when it is not whole: `512 B`, `1.2 MiB`, `10 GiB`.
pub fn format_size(bytes: i64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    let rounded = (value * 10.0).round() / 10.0;
    if rounded.fract() == 0.0 {
        format!("{rounded:.0} {}", UNITS[unit])
    } else {
        format!("{rounded:.1} {}", UNITS[unit])
    }
}

/// Each quota with what the tenant uses of it, as people read it: `("Projects", "3 of 10")`,
/// `("Storage", "1.2 MiB of 10 GiB")`, `("Users", "4, no limit")`.
pub fn describe(usage: &QuotaUsage) -> Vec<(&'static str, String)> {
    let quotas = &usage.quotas;
    let of = |used: String, limit: Option<String>| match limit {
        Some(limit) => format!("{used} of {limit}"),
        None => format!("{used}, no limit"),
    };
    let rate = |limit: Option<i64>, unit: &str| {
        limit.map_or_else(|| "no limit".to_string(), |n| format!("{n} {unit}"))
    };
    vec![
        (
            "Storage",
            of(
                format_size(usage.storage_bytes),
                quotas.max_storage_bytes.map(format_size),
            ),
        ),
        (
            "Projects",
            of(
                usage.projects.to_string(),
                quotas.max_projects.map(|n| n.to_string()),
            ),
        ),
        (
            "Users",
            of(
                usage.users.to_string(),
                quotas.max_users.map(|n| n.to_string()),
            ),
        ),
        (
            "Requests per second",
            rate(quotas.max_requests_per_second, "per second"),
        ),
        (
            "Plugin instances",
            rate(quotas.max_plugin_instances, "at once"),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_binary_and_decimal_units() {
        assert_eq!(parse_size("10GiB"), Ok(QuotaArg(Some(10 << 30))));
        assert_eq!(parse_size("500MB"), Ok(QuotaArg(Some(500_000_000))));
        assert_eq!(parse_size("1.5 KiB"), Ok(QuotaArg(Some(1536))));
        assert_eq!(parse_size("1048576"), Ok(QuotaArg(Some(1 << 20))));
        assert_eq!(parse_size("none"), Ok(QuotaArg(None)));
        assert!(parse_size("10 parsecs").is_err());
        assert!(parse_size("-1").is_err());
    }

    #[test]
    fn counts_parse() {
        assert_eq!(parse_count("3"), Ok(QuotaArg(Some(3))));
        assert_eq!(parse_count("None"), Ok(QuotaArg(None)));
        assert!(parse_count("-2").is_err());
        assert!(parse_count("many").is_err());
    }

    #[test]
    fn sizes_format_in_binary_units() {
        assert_eq!(format_size(512), "512 B");
        assert_eq!(format_size(1_258_291), "1.2 MiB");
        assert_eq!(format_size(10 << 30), "10 GiB");
    }
}
