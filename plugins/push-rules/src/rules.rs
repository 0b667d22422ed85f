//! GitLab's push rules (EE `Gitlab::Checks::PushRules` and `PushRule`), as plain functions of
//! the configuration and the push, with GitLab's messages.

use regex::{Regex, RegexBuilder};
use serde::Deserialize;
use trellis_sdk::push_rules::{Commit, Decision, Push, Rule, Signature};

/// GitLab's list of secret files (`ee/lib/gitlab/checks/files_denylist.yml`, as its push
/// rules documentation lists it): cloud credentials, SSH private keys, PEM files and keys,
/// shell histories. Matched against the whole path.
pub const SECRET_FILES: &[&str] = &[
    r"(^|/)\.?aws/credentials$",
    r"(^|/)\.?id_(rsa|dsa|ed25519|ecdsa|ecdsa_sk|ed25519_sk)$",
    r"(^|/)\.ssh/personal_(rsa|dsa|ed25519|ecdsa|ecdsa_sk|ed25519_sk)$",
    r"(^|/)config/server_(rsa|dsa|ed25519|ecdsa|ecdsa_sk|ed25519_sk)$",
    r"\.pem$",
    r"\.key$",
    r"\.history$",
    r"_history$",
];

const MIB: u64 = 1024 * 1024;

#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The most memory one compiled pattern may take (the regex crate's size limit).
    pub regex_size_limit: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            regex_size_limit: MIB as usize,
        }
    }
}

impl Config {
    pub fn validate(&self) -> Result<(), String> {
        if !(1024..=16 * MIB as usize).contains(&self.regex_size_limit) {
            return Err("regex_size_limit must be between 1024 and 16777216".into());
        }
        Ok(())
    }
}

/// A pattern of the rule, compiled, with its text for messages.
struct Pattern {
    text: String,
    regex: Regex,
}

/// The rule's patterns, compiled once per call.
struct Patterns {
    message: Option<Pattern>,
    negative_message: Option<Pattern>,
    author_email: Option<Pattern>,
    file_name: Option<Pattern>,
    secrets: Vec<Pattern>,
}

fn compile(
    config: &Config,
    text: &Option<String>,
    multi_line: bool,
) -> Result<Option<Pattern>, String> {
    let Some(text) = text.as_deref().filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    RegexBuilder::new(text)
        .multi_line(multi_line)
        .size_limit(config.regex_size_limit)
        .build()
        .map(|regex| {
            Some(Pattern {
                text: text.to_string(),
                regex,
            })
        })
        .map_err(|e| format!("Regular expression '{text}' is invalid: {e}"))
}

impl Patterns {
    fn of(config: &Config, rule: &Rule) -> Result<Patterns, String> {
        Ok(Patterns {
            // GitLab matches commit messages in multiline mode (`(?-m)` turns it off).
            message: compile(config, &rule.commit_message_regex, true)?,
            negative_message: compile(config, &rule.commit_message_negative_regex, true)?,
            author_email: compile(config, &rule.author_email_regex, false)?,
            file_name: compile(config, &rule.file_name_regex, false)?,
            secrets: if rule.prevent_secrets {
                SECRET_FILES
                    .iter()
                    .map(|p| compile(config, &Some(p.to_string()), false).map(Option::unwrap))
                    .collect::<Result<_, _>>()?
            } else {
                Vec::new()
            },
        })
    }
}

/// Branch names and tag deletions.
pub fn check_refs(config: &Config, push: &Push) -> Decision {
    let Some(rule) = &push.rule else {
        return Decision::Allow;
    };
    for update in &push.updates {
        let deletion = trellis_sdk::push_rules::deletes(update);
        if deletion && rule.deny_delete_tag && update.ref_name.starts_with("refs/tags/") {
            return Decision::refuse("You cannot delete a tag");
        }
        let Some(branch) = update.ref_name.strip_prefix("refs/heads/") else {
            continue;
        };
        // GitLab skips deletions and the default branch.
        if deletion || branch.is_empty() || branch == push.default_branch {
            continue;
        }
        match compile(config, &rule.branch_name_regex, false) {
            Err(invalid) => return Decision::Refuse(invalid),
            Ok(Some(pattern)) if !pattern.regex.is_match(branch) => {
                return Decision::refuse(format!(
                    "Branch name does not follow the pattern '{}'",
                    pattern.text
                ));
            }
            Ok(_) => {}
        }
    }
    Decision::Allow
}

/// The first commit of the batch that breaks the rule, with GitLab's message.
pub fn check_commits(config: &Config, push: &Push, commits: &[Commit]) -> Decision {
    let Some(rule) = &push.rule else {
        return Decision::Allow;
    };
    let patterns = match Patterns::of(config, rule) {
        Ok(patterns) => patterns,
        Err(invalid) => return Decision::Refuse(invalid),
    };
    for commit in commits {
        if let Some(message) = commit_problem(rule, &patterns, push, commit)
            .or_else(|| file_problem(rule, &patterns, commit))
        {
            return Decision::Refuse(message);
        }
    }
    Decision::Allow
}

/// GitLab's `CommitCheck#check_commit`, in its order.
fn commit_problem(
    rule: &Rule,
    patterns: &Patterns,
    push: &Push,
    commit: &Commit,
) -> Option<String> {
    if let Some(p) = &patterns.message
        && !p.regex.is_match(&commit.message)
    {
        return Some(format!(
            "Commit message does not follow the pattern '{}'",
            p.text
        ));
    }
    if let Some(p) = &patterns.negative_message
        && p.regex.is_match(&commit.message)
    {
        return Some(format!(
            "Commit message contains the forbidden pattern '{}'",
            p.text
        ));
    }
    if let Some(p) = &patterns.author_email {
        if !p.regex.is_match(&commit.committer_email) {
            return Some(format!(
                "Committer's email '{}' does not follow the pattern '{}'",
                commit.committer_email, p.text
            ));
        }
        if !p.regex.is_match(&commit.author_email) {
            return Some(format!(
                "Author's email '{}' does not follow the pattern '{}'",
                commit.author_email, p.text
            ));
        }
    }
    if rule.commit_committer_check {
        let email = commit.committer_email.to_lowercase();
        if !push
            .pusher
            .verified_emails
            .iter()
            .any(|e| e.to_lowercase() == email)
        {
            return Some(format!(
                "You cannot push commits for '{}'. You can only push commits if the committer \
                 email is one of your own verified emails.",
                commit.committer_email
            ));
        }
    }
    if rule.reject_unsigned_commits && commit.signature != Signature::Verified {
        return Some("Commit must be signed with a GPG key".into());
    }
    if rule.member_check {
        if !commit.author_is_user {
            return Some(format!(
                "Author '{}' is not a member of team",
                commit.author_email
            ));
        }
        if !commit
            .author_email
            .eq_ignore_ascii_case(&commit.committer_email)
            && !commit.committer_is_user
        {
            return Some(format!(
                "Committer '{}' is not a member of team",
                commit.committer_email
            ));
        }
    }
    None
}

/// File names (new files), secrets (new files) and sizes (new and changed files).
fn file_problem(rule: &Rule, patterns: &Patterns, commit: &Commit) -> Option<String> {
    for file in commit.files.iter().filter(|f| !f.deleted) {
        if file.added {
            let denied = patterns
                .file_name
                .iter()
                .chain(&patterns.secrets)
                .find(|p| p.regex.is_match(&file.path));
            if let Some(p) = denied {
                return Some(format!(
                    "File name {} was prohibited by the pattern {}.",
                    file.path,
                    inspect(&p.text)
                ));
            }
        }
        if rule.max_file_size > 0 && file.size > rule.max_file_size.saturating_mul(MIB) {
            return Some(format!(
                "File \"{}\" is larger than the allowed size of {} MiB. Use Git LFS to manage \
                 this file.",
                file.path, rule.max_file_size
            ));
        }
    }
    None
}

/// A string as Ruby's `String#inspect` shows it (GitLab's message quotes the pattern so).
fn inspect(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use trellis_sdk::push_rules::{Push, Rule, ZERO};

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    fn push(rule: Rule) -> Push {
        Push::new().rule(rule).update("refs/heads/feature", A, B)
    }

    fn refused(decision: Decision) -> String {
        match decision {
            Decision::Refuse(message) => message,
            Decision::Allow => panic!("allowed"),
        }
    }

    fn commits(rule: Rule, commit: Commit) -> Decision {
        check_commits(&Config::default(), &push(rule), &[commit])
    }

    #[test]
    fn no_rule_no_checks() {
        let p = Push::new().update("refs/tags/v1", A, ZERO);
        assert_eq!(check_refs(&Config::default(), &p), Decision::Allow);
        let commit = Commit::new("x").added("id_rsa", u64::MAX);
        assert_eq!(
            check_commits(&Config::default(), &p, &[commit]),
            Decision::Allow
        );
    }

    #[test]
    fn commit_message_regex() {
        let rule = Rule {
            commit_message_regex: Some("^JIRA-\\d+".into()),
            ..Rule::none()
        };
        assert_eq!(
            refused(commits(rule.clone(), Commit::new("Fix it\n"))),
            "Commit message does not follow the pattern '^JIRA-\\d+'"
        );
        // Multiline: a later line may match.
        assert_eq!(
            commits(rule, Commit::new("Fix\n\nJIRA-12\n")),
            Decision::Allow
        );
    }

    #[test]
    fn commit_message_negative_regex() {
        let rule = Rule {
            commit_message_negative_regex: Some("ssh_private_key".into()),
            ..Rule::none()
        };
        assert_eq!(
            refused(commits(rule.clone(), Commit::new("add ssh_private_key\n"))),
            "Commit message contains the forbidden pattern 'ssh_private_key'"
        );
        assert_eq!(commits(rule, Commit::new("add docs\n")), Decision::Allow);
    }

    #[test]
    fn branch_name_regex_skips_default_branch_tags_and_deletions() {
        let rule = Rule {
            branch_name_regex: Some("^(feat|fix)/".into()),
            ..Rule::none()
        };
        let config = Config::default();
        assert_eq!(
            refused(check_refs(&config, &push(rule.clone()))),
            "Branch name does not follow the pattern '^(feat|fix)/'"
        );
        let ok = Push::new()
            .rule(rule)
            .update("refs/heads/feat/x", ZERO, B)
            .update("refs/heads/main", A, B)
            .update("refs/heads/old", A, ZERO)
            .update("refs/tags/v1", ZERO, B);
        assert_eq!(check_refs(&config, &ok), Decision::Allow);
    }

    #[test]
    fn deny_delete_tag() {
        let rule = Rule {
            deny_delete_tag: true,
            ..Rule::none()
        };
        let config = Config::default();
        let delete = Push::new()
            .rule(rule.clone())
            .update("refs/tags/v1", A, ZERO);
        assert_eq!(
            refused(check_refs(&config, &delete)),
            "You cannot delete a tag"
        );
        let branch = Push::new().rule(rule).update("refs/heads/x", A, ZERO);
        assert_eq!(check_refs(&config, &branch), Decision::Allow);
    }

    #[test]
    fn author_email_regex_checks_committer_then_author() {
        let rule = Rule {
            author_email_regex: Some("@example\\.com$".into()),
            ..Rule::none()
        };
        let bad_committer = Commit::new("x").committer("C", "c@evil.org", true);
        assert_eq!(
            refused(commits(rule.clone(), bad_committer)),
            "Committer's email 'c@evil.org' does not follow the pattern '@example\\.com$'"
        );
        let bad_author = Commit::new("x").author("A", "a@evil.org", true);
        assert_eq!(
            refused(commits(rule.clone(), bad_author)),
            "Author's email 'a@evil.org' does not follow the pattern '@example\\.com$'"
        );
        assert_eq!(commits(rule, Commit::new("x")), Decision::Allow);
    }

    #[test]
    fn commit_committer_check() {
        let rule = Rule {
            commit_committer_check: true,
            ..Rule::none()
        };
        let other = Commit::new("x").committer("O", "other@example.com", true);
        assert_eq!(
            refused(commits(rule.clone(), other)),
            "You cannot push commits for 'other@example.com'. You can only push commits if the \
             committer email is one of your own verified emails."
        );
        let own = Commit::new("x").committer("P", "Pusher@Example.com", true);
        assert_eq!(commits(rule, own), Decision::Allow);
    }

    #[test]
    fn reject_unsigned_commits_needs_a_verified_signature() {
        let rule = Rule {
            reject_unsigned_commits: true,
            ..Rule::none()
        };
        for signature in [Signature::Unsigned, Signature::Unverified] {
            let commit = Commit::new("x").signature(signature);
            assert_eq!(
                refused(commits(rule.clone(), commit)),
                "Commit must be signed with a GPG key"
            );
        }
        let signed = Commit::new("x").signature(Signature::Verified);
        assert_eq!(commits(rule, signed), Decision::Allow);
    }

    #[test]
    fn member_check_author_then_distinct_committer() {
        let rule = Rule {
            member_check: true,
            ..Rule::none()
        };
        let stranger = Commit::new("x").author("S", "s@x.org", false);
        assert_eq!(
            refused(commits(rule.clone(), stranger)),
            "Author 's@x.org' is not a member of team"
        );
        let committer = Commit::new("x").committer("S", "s@x.org", false);
        assert_eq!(
            refused(commits(rule.clone(), committer)),
            "Committer 's@x.org' is not a member of team"
        );
        assert_eq!(commits(rule, Commit::new("x")), Decision::Allow);
    }

    #[test]
    fn file_name_regex_applies_to_new_files() {
        let rule = Rule {
            file_name_regex: Some("\\.exe$".into()),
            ..Rule::none()
        };
        assert_eq!(
            refused(commits(
                rule.clone(),
                Commit::new("x").added("bin/tool.exe", 1)
            )),
            "File name bin/tool.exe was prohibited by the pattern \"\\\\.exe$\"."
        );
        let existing = Commit::new("x").modified("tool.exe", 1).deleted("old.exe");
        assert_eq!(commits(rule, existing), Decision::Allow);
    }

    #[test]
    fn prevent_secrets_uses_gitlabs_list() {
        let rule = Rule {
            prevent_secrets: true,
            ..Rule::none()
        };
        for path in [
            "id_rsa",
            "home/.ssh/id_ed25519",
            ".aws/credentials",
            "aws/credentials",
            "config/server_ecdsa",
            "certs/site.pem",
            "tls.key",
            ".bash_history",
            "psql.history",
        ] {
            let message = refused(commits(rule.clone(), Commit::new("x").added(path, 1)));
            assert!(
                message.starts_with(&format!("File name {path} was prohibited")),
                "{message}"
            );
        }
        for path in ["id_rsa.pub", "src/keys.rs", "credentials.md", "README"] {
            let commit = Commit::new("x").added(path, 1);
            assert_eq!(commits(rule.clone(), commit), Decision::Allow, "{path}");
        }
    }

    #[test]
    fn max_file_size_in_mib_for_new_and_changed_files() {
        let rule = Rule {
            max_file_size: 1,
            ..Rule::none()
        };
        assert_eq!(
            refused(commits(
                rule.clone(),
                Commit::new("x").modified("big.bin", MIB + 1)
            )),
            "File \"big.bin\" is larger than the allowed size of 1 MiB. Use Git LFS to manage \
             this file."
        );
        let fits = Commit::new("x").added("ok.bin", MIB).deleted("gone.bin");
        assert_eq!(commits(rule, fits), Decision::Allow);
    }

    #[test]
    fn oversized_patterns_refuse_instead_of_stalling() {
        let rule = Rule {
            commit_message_regex: Some("\\w{1000}\\w{1000}\\w{1000}".into()),
            ..Rule::none()
        };
        let config = Config {
            regex_size_limit: 1024,
        };
        let message = refused(check_commits(&config, &push(rule), &[Commit::new("x")]));
        assert!(message.starts_with("Regular expression '"), "{message}");
    }

    #[test]
    fn config_validation() {
        assert!(Config::default().validate().is_ok());
        let parsed: Result<Config, _> = serde_json::from_str(r#"{"nope": 1}"#);
        assert!(parsed.is_err());
        assert!(
            Config {
                regex_size_limit: 1
            }
            .validate()
            .is_err()
        );
    }
}
