//! A custom push rule: every new commit's subject is a Conventional Commit
//! (`type(scope)!: description`, <https://www.conventionalcommits.org>), with the types the
//! binding's configuration allows.

use serde::Deserialize;
use trellis_sdk::push_rules::{Commit, Decision, Push, PushRules, RefUpdate};

#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub types: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        let types = [
            "feat", "fix", "docs", "style", "refactor", "perf", "test", "build", "ci", "chore",
            "revert",
        ];
        Config {
            types: types.map(String::from).to_vec(),
        }
    }
}

pub struct ConventionalCommits;

impl PushRules for ConventionalCommits {
    type Config = Config;

    fn validate(config: &Config) -> Result<(), String> {
        match config
            .types
            .iter()
            .find(|t| t.is_empty() || !t.chars().all(|c| c.is_ascii_lowercase()))
        {
            _ if config.types.is_empty() => Err("types must not be empty".into()),
            Some(bad) => Err(format!("types: {bad:?} is not a lowercase word")),
            None => Ok(()),
        }
    }

    fn check_commit(
        config: &Config,
        _: &Push,
        _: &RefUpdate,
        commit: &Commit,
    ) -> Result<Decision, String> {
        let subject = commit.message.lines().next().unwrap_or_default();
        Ok(if follows(config, subject) {
            Decision::Allow
        } else {
            let short = commit.sha.get(..8).unwrap_or(&commit.sha);
            Decision::refuse(format!(
                "Commit {short} is not a Conventional Commit: {subject:?} (expected `type(scope): description`, type one of {})",
                config.types.join(", ")
            ))
        })
    }
}

/// `type`, an optional `(scope)`, an optional `!`, then `: ` and a description.
fn follows(config: &Config, subject: &str) -> bool {
    let Some((head, description)) = subject.split_once(": ") else {
        return false;
    };
    let head = head.strip_suffix('!').unwrap_or(head);
    let kind = match head.split_once('(') {
        Some((kind, scope)) if scope.len() > 1 && scope.ends_with(')') => kind,
        Some(_) => return false,
        None => head,
    };
    !description.trim().is_empty() && config.types.iter().any(|t| t == kind)
}

trellis_sdk::export_push_rules!(ConventionalCommits);

#[cfg(test)]
mod tests {
    use super::*;
    use trellis_sdk::push_rules::ZERO;

    fn check(message: &str) -> Decision {
        let push = Push::new().update(
            "refs/heads/main",
            ZERO,
            "1111111111111111111111111111111111111111",
        );
        let commit = Commit::new(message);
        ConventionalCommits::check_commits(&Config::default(), &push, &push.updates[0], &[commit])
            .unwrap()
    }

    #[test]
    fn conventional_subjects_pass() {
        for message in [
            "feat: add login",
            "fix(api)!: stop crashing\n\nbody",
            "docs(readme): typo",
        ] {
            assert_eq!(check(message), Decision::Allow, "{message}");
        }
    }

    #[test]
    fn others_are_refused_with_the_subject() {
        for message in [
            "Add login",
            "feature: x",
            "fix(: x",
            "fix: ",
            "fix:no space",
        ] {
            let Decision::Refuse(why) = check(message) else {
                panic!("{message} allowed")
            };
            assert!(
                why.starts_with("Commit 11111111 is not a Conventional Commit"),
                "{why}"
            );
        }
    }

    #[test]
    fn configuration_is_validated() {
        assert!(ConventionalCommits::validate(&Config::default()).is_ok());
        assert!(ConventionalCommits::validate(&Config { types: vec![] }).is_err());
        assert!(
            ConventionalCommits::validate(&Config {
                types: vec!["Feat".into()]
            })
            .is_err()
        );
        assert!(serde_json::from_str::<Config>(r#"{"kinds": []}"#).is_err());
    }
}
