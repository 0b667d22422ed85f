//! The heuristics, as plain functions of the configuration and the input.

use serde::Deserialize;
use trellis_sdk::spam_check::{Input, Verdict, VerdictKind};

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Words (case-insensitive, whole words) that make a text spam: `disallow`.
    pub blocked_words: Vec<String>,
    /// Link domains (and their subdomains) that make a text spam: `block_user`.
    pub blocked_link_domains: Vec<String>,
    /// More links than this per 100 words: `conditional_allow`.
    pub max_links_per_100_words: f64,
    /// Texts with fewer words are not judged by link density.
    pub min_words_for_density: usize,
    /// A character repeated more than this many times in a row: `conditional_allow`.
    pub max_repeated_chars: usize,
    /// Accounts younger than this many days...
    pub new_account_days: u32,
    /// ...posting more links than this: `conditional_allow`.
    pub new_account_max_links: usize,
    /// Administrators are not checked.
    pub trust_admins: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            blocked_words: Vec::new(),
            blocked_link_domains: Vec::new(),
            max_links_per_100_words: 20.0,
            min_words_for_density: 10,
            max_repeated_chars: 30,
            new_account_days: 1,
            new_account_max_links: 3,
            trust_admins: true,
        }
    }
}

impl Config {
    pub fn validate(&self) -> Result<(), String> {
        if self.max_links_per_100_words.is_nan() || self.max_links_per_100_words <= 0.0 {
            return Err("max_links_per_100_words must be greater than 0".into());
        }
        if self.max_repeated_chars < 2 {
            return Err("max_repeated_chars must be at least 2".into());
        }
        if let Some(w) = self.blocked_words.iter().find(|w| w.trim().is_empty()) {
            return Err(format!("blocked_words contains an empty word: {w:?}"));
        }
        if let Some(d) = self.blocked_link_domains.iter().find(|d| !is_domain(d)) {
            return Err(format!("blocked_link_domains: {d:?} is not a domain name"));
        }
        Ok(())
    }
}

fn is_domain(d: &str) -> bool {
    !d.is_empty()
        && d.split('.').all(|label| {
            !label.is_empty() && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}

pub fn verdict(config: &Config, input: &Input, now_ms: i64) -> Verdict {
    if config.trust_admins && input.author.is_admin {
        return Verdict::noop("administrators are not checked");
    }
    let text = format!("{}\n{}", input.title, input.description);
    let lower = text.to_lowercase();
    let links = links(&lower);
    let findings = [
        blocked_domain(config, &links),
        blocked_word(config, &lower),
        link_density(config, &lower, links.len()),
        repeated_chars(config, &text),
        new_account_links(config, input, links.len(), now_ms),
    ];
    findings
        .into_iter()
        .flatten()
        .max_by_key(|v| strength(&v.kind))
        .unwrap_or_else(|| Verdict::allow("no spam heuristic matched"))
}

fn strength(kind: &VerdictKind) -> u8 {
    match kind {
        VerdictKind::Noop => 0,
        VerdictKind::Allow => 1,
        VerdictKind::ConditionalAllow => 2,
        VerdictKind::Disallow => 3,
        VerdictKind::BlockUser => 4,
    }
}

/// Hosts of http(s) links in the (lower-cased) text.
fn links(lower: &str) -> Vec<&str> {
    let mut hosts = Vec::new();
    for scheme in ["http://", "https://"] {
        for (at, _) in lower.match_indices(scheme) {
            let rest = &lower[at + scheme.len()..];
            let end = rest
                .find(|c: char| {
                    c == '/'
                        || c == ':'
                        || c == '?'
                        || c == '#'
                        || c.is_whitespace()
                        || c == ')'
                        || c == ']'
                })
                .unwrap_or(rest.len());
            let host = rest[..end].rsplit('@').next().unwrap_or("");
            if !host.is_empty() {
                hosts.push(host);
            }
        }
    }
    hosts
}

fn blocked_domain(config: &Config, hosts: &[&str]) -> Option<Verdict> {
    hosts.iter().find_map(|host| {
        config
            .blocked_link_domains
            .iter()
            .map(|d| d.to_lowercase())
            .find(|d| *host == d || host.ends_with(&format!(".{d}")))
            .map(|d| Verdict::block_user(format!("links to the blocked domain {d}")))
    })
}

fn blocked_word(config: &Config, lower: &str) -> Option<Verdict> {
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    config.blocked_words.iter().find_map(|blocked| {
        let blocked = blocked.to_lowercase();
        let parts: Vec<&str> = blocked
            .split(|c: char| !c.is_alphanumeric())
            .filter(|p| !p.is_empty())
            .collect();
        let found = !parts.is_empty() && words.windows(parts.len()).any(|w| w == parts.as_slice());
        found.then(|| Verdict::disallow(format!("contains the blocked word {blocked:?}")))
    })
}

fn link_density(config: &Config, lower: &str, links: usize) -> Option<Verdict> {
    let words = lower.split_whitespace().count();
    if words < config.min_words_for_density || links == 0 {
        return None;
    }
    let per_100 = links as f64 * 100.0 / words as f64;
    (per_100 > config.max_links_per_100_words)
        .then(|| Verdict::conditional_allow(format!("{links} links in {words} words")))
}

fn repeated_chars(config: &Config, text: &str) -> Option<Verdict> {
    let mut run = 0usize;
    let mut previous = None;
    for c in text.chars() {
        run = if Some(c) == previous && !c.is_whitespace() {
            run + 1
        } else {
            1
        };
        previous = Some(c);
        if run > config.max_repeated_chars {
            return Some(Verdict::conditional_allow(format!(
                "{c:?} repeated more than {} times",
                config.max_repeated_chars
            )));
        }
    }
    None
}

fn new_account_links(config: &Config, input: &Input, links: usize, now_ms: i64) -> Option<Verdict> {
    let age_ms = now_ms - input.author.created_at;
    let young = age_ms < i64::from(config.new_account_days) * DAY_MS;
    (young && links > config.new_account_max_links).then(|| {
        Verdict::conditional_allow(format!(
            "an account younger than {} days posting {links} links",
            config.new_account_days
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use trellis_sdk::User;
    use trellis_sdk::spam_check::SpammableKind;

    const NOW: i64 = 1_800_000_000_000;

    fn input(title: &str, description: &str) -> Input {
        Input {
            kind: SpammableKind::Issue,
            title: title.into(),
            description: description.into(),
            is_update: false,
            confidential: false,
            author: User {
                id: 2,
                username: "alice".into(),
                created_at: NOW - 365 * DAY_MS,
                is_admin: false,
                external: false,
            },
            ip: None,
            user_agent: None,
            project: None,
        }
    }

    fn config(json: &str) -> Config {
        let c: Config = serde_json::from_str(json).unwrap();
        c.validate().unwrap();
        c
    }

    #[test]
    fn clean_text_is_allowed() {
        let v = verdict(
            &Config::default(),
            &input("Crash on start", "Steps: run it."),
            NOW,
        );
        assert_eq!(v.kind, VerdictKind::Allow);
    }

    #[test]
    fn blocked_words_disallow_whole_words_only() {
        let c = config(r#"{"blocked_words": ["Casino", "free money"]}"#);
        assert_eq!(
            verdict(&c, &input("Best CASINO here", ""), NOW).kind,
            VerdictKind::Disallow
        );
        assert_eq!(
            verdict(&c, &input("get free  money", ""), NOW).kind,
            VerdictKind::Disallow
        );
        assert_eq!(
            verdict(&c, &input("casinos", "occasional"), NOW).kind,
            VerdictKind::Allow
        );
    }

    #[test]
    fn blocked_domains_block_the_user_including_subdomains() {
        let c = config(r#"{"blocked_link_domains": ["spam.example"]}"#);
        let v = verdict(&c, &input("x", "see https://www.spam.example/deal"), NOW);
        assert_eq!(v.kind, VerdictKind::BlockUser);
        let v = verdict(&c, &input("x", "see https://notspam.example/"), NOW);
        assert_eq!(v.kind, VerdictKind::Allow);
    }

    #[test]
    fn dense_links_and_repeats_need_a_captcha() {
        let links = "http://a.example http://b.example http://c.example ".repeat(4);
        let v = verdict(&Config::default(), &input("links", &links), NOW);
        assert_eq!(v.kind, VerdictKind::ConditionalAllow);
        let v = verdict(&Config::default(), &input("aaaa", &"!".repeat(40)), NOW);
        assert_eq!(v.kind, VerdictKind::ConditionalAllow);
    }

    #[test]
    fn new_accounts_posting_links_need_a_captcha() {
        let mut i = input(
            "hello",
            "one two three four five six seven eight nine ten eleven twelve thirteen fourteen \
             fifteen sixteen seventeen eighteen nineteen twenty http://a.example http://b.example \
             http://c.example http://d.example and more words to keep the density low here too ok",
        );
        assert_eq!(
            verdict(&Config::default(), &i, NOW).kind,
            VerdictKind::Allow
        );
        i.author.created_at = NOW - 1000;
        assert_eq!(
            verdict(&Config::default(), &i, NOW).kind,
            VerdictKind::ConditionalAllow
        );
    }

    #[test]
    fn admins_are_trusted_unless_configured() {
        let mut i = input("casino", "");
        i.author.is_admin = true;
        let c = config(r#"{"blocked_words": ["casino"]}"#);
        assert_eq!(verdict(&c, &i, NOW).kind, VerdictKind::Noop);
        let c = config(r#"{"blocked_words": ["casino"], "trust_admins": false}"#);
        assert_eq!(verdict(&c, &i, NOW).kind, VerdictKind::Disallow);
    }

    #[test]
    fn bad_configurations_are_refused() {
        for json in [
            r#"{"max_repeated_chars": 1}"#,
            r#"{"blocked_words": [" "]}"#,
            r#"{"blocked_link_domains": ["http://x"]}"#,
            r#"{"max_links_per_100_words": 0}"#,
        ] {
            let c: Config = serde_json::from_str(json).unwrap();
            assert!(c.validate().is_err(), "{json}");
        }
        assert!(serde_json::from_str::<Config>(r#"{"unknown": 1}"#).is_err());
    }
}
