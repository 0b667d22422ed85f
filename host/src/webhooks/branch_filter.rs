//! `push_events_branch_filter` with GitLab's `branch_filter_strategy`: `wildcard` (the
//! default; `*` matches any characters, `/` included, and a filter without `*` names one
//! branch), `regex` (RE2 syntax, unanchored, as GitLab's untrusted regexps; the `regex` crate
//! runs in linear time) and `all_branches`. An empty filter lets every branch through.

pub fn matches(strategy: &str, filter: Option<&str>, branch: &str) -> bool {
    let Some(filter) = filter.filter(|f| !f.is_empty()) else {
        return true;
    };
    match strategy {
        "all_branches" => true,
        "regex" => regex::Regex::new(filter).is_ok_and(|re| re.is_match(branch)),
        _ => wildcard(filter, branch),
    }
}

/// Checks a filter when a hook is saved: the error text for the field, if any.
pub fn check(strategy: &str, filter: &str) -> Result<(), String> {
    if strategy != "regex" || filter.is_empty() {
        return Ok(());
    }
    regex::Regex::new(filter)
        .map(|_| ())
        .map_err(|_| "not valid RE2 syntax".to_string())
}

fn wildcard(pattern: &str, branch: &str) -> bool {
    if !pattern.contains('*') {
        return pattern == branch;
    }
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = branch.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return true;
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcard_filters() {
        assert!(matches("wildcard", None, "main"));
        assert!(matches("wildcard", Some(""), "main"));
        assert!(matches("wildcard", Some("main"), "main"));
        assert!(!matches("wildcard", Some("main"), "main2"));
        assert!(matches("wildcard", Some("feature/*"), "feature/a/b"));
        assert!(!matches("wildcard", Some("feature/*"), "fix/a"));
        assert!(matches("wildcard", Some("*-stable"), "16-0-stable"));
        assert!(matches("wildcard", Some("a*b*c"), "a-b-c"));
        assert!(!matches("wildcard", Some("a*b*c"), "a-c"));
        assert!(!matches("wildcard", Some("ab*ba"), "aba"));
    }

    #[test]
    fn regex_and_all_branches() {
        assert!(matches("regex", Some("^release-\\d+$"), "release-12"));
        assert!(!matches("regex", Some("^release-\\d+$"), "release-x"));
        assert!(matches("regex", Some("feat"), "my-feature"));
        assert!(matches("all_branches", Some("nothing"), "main"));
        assert!(check("regex", "(").is_err());
        assert!(check("wildcard", "(").is_ok());
    }
}
