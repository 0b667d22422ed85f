//! GitLab's formats of a project's name and path, and the path GitLab makes from a name.

pub const NAME_MESSAGE: &str = "can contain only letters, digits, emojis, '_', '.', '+', dashes, or spaces. It must start with a letter, digit, emoji, or '_'.";
pub const PATH_MESSAGE: &str = "can contain only letters, digits, '_', '-' and '.'. Cannot start with '-', end in '.git' or end in '.atom'";

fn emoji_or_alnum(c: char) -> bool {
    c.is_alphanumeric() || ('\u{00A9}'..='\u{1f9ff}').contains(&c)
}

/// GitLab's project name format.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if emoji_or_alnum(c) || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| emoji_or_alnum(c) || c == '_' || c == '.' || c == '+' || c == ' ' || is_dash(c))
}

fn is_dash(c: char) -> bool {
    matches!(
        c,
        '-' | '\u{2010}'
            ..='\u{2015}' | '\u{2E3A}' | '\u{2E3B}' | '\u{FE58}' | '\u{FE63}' | '\u{FF0D}'
    )
}

/// GitLab's project (and namespace) path format.
pub fn valid_path(path: &str) -> bool {
    !path.is_empty()
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && !path.starts_with('-')
        && !path.starts_with('.')
        && !path.ends_with('.')
        && !path.ends_with(".git")
        && !path.ends_with(".atom")
}

/// A path made from a name: lower-case, runs of other characters as one dash.
pub fn path_from_name(name: &str) -> String {
    let mut path = String::new();
    for c in name.trim().chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
            path.push(c);
        } else if !path.ends_with('-') {
            path.push('-');
        }
    }
    path.trim_matches(|c| c == '-' || c == '.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_come_from_names() {
        assert_eq!(path_from_name("My Fancy Project"), "my-fancy-project");
        assert_eq!(path_from_name("  a  +  b "), "a-b");
        assert_eq!(path_from_name("Hello_World.rs"), "hello_world.rs");
        assert_eq!(path_from_name("-x-"), "x");
    }

    #[test]
    fn name_and_path_formats() {
        assert!(valid_name("Project 1"));
        assert!(valid_name("_under"));
        assert!(valid_name("c++ tools – v2"));
        assert!(!valid_name("-dash"));
        assert!(!valid_name("bad/name"));
        assert!(valid_path("ok.path_1-x"));
        assert!(!valid_path("-x"));
        assert!(!valid_path("x.git"));
        assert!(!valid_path("x.atom"));
        assert!(!valid_path("has space"));
    }
}
