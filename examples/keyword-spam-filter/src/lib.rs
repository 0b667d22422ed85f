//! An example spam-check plugin: texts containing one of the configured keywords
//! (case-insensitive substrings) get the configured verdict; everything else is allowed.
//!
//! Build: `cargo build --target wasm32-wasip2 --release -p keyword-spam-filter`
//! Try:   `trellis plugin run target/wasm32-wasip2/release/keyword_spam_filter.wasm \
//!           --hook spam-check --input input.json --config '{"keywords": ["casino"]}'`

use serde::Deserialize;
use trellis_sdk::spam_check::{Input, SpamCheck, Verdict};

#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub keywords: Vec<String>,
    /// `disallow` (default), `conditional_allow` or `block_user`.
    pub verdict: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            keywords: Vec::new(),
            verdict: "disallow".into(),
        }
    }
}

pub struct KeywordFilter;

impl SpamCheck for KeywordFilter {
    type Config = Config;

    fn validate(config: &Config) -> Result<(), String> {
        if config.keywords.is_empty() {
            return Err("keywords must list at least one keyword".into());
        }
        if config.keywords.iter().any(|k| k.trim().is_empty()) {
            return Err("keywords must not be blank".into());
        }
        spam_verdict(&config.verdict, String::new()).map(|_| ())
    }

    fn check(config: &Config, input: &Input) -> Result<Verdict, String> {
        let text = format!("{} {}", input.title, input.description).to_lowercase();
        match config
            .keywords
            .iter()
            .find(|k| text.contains(&k.to_lowercase()))
        {
            Some(keyword) => {
                trellis_sdk::log::info(&format!("keyword {keyword:?} found"));
                spam_verdict(&config.verdict, format!("contains the keyword {keyword:?}"))
            }
            None => Ok(Verdict::allow("no keyword found")),
        }
    }
}

fn spam_verdict(name: &str, reason: String) -> Result<Verdict, String> {
    match name {
        "disallow" => Ok(Verdict::disallow(reason)),
        "conditional_allow" => Ok(Verdict::conditional_allow(reason)),
        "block_user" => Ok(Verdict::block_user(reason)),
        other => Err(format!(
            "verdict must be disallow, conditional_allow or block_user, not {other:?}"
        )),
    }
}

trellis_sdk::export_spam_check!(KeywordFilter);

#[cfg(test)]
mod tests {
    use super::*;
    use trellis_sdk::User;
    use trellis_sdk::spam_check::{SpammableKind, VerdictKind};

    fn input(title: &str) -> Input {
        Input {
            kind: SpammableKind::Issue,
            title: title.into(),
            description: String::new(),
            is_update: false,
            confidential: false,
            author: User {
                id: 1,
                username: "u".into(),
                created_at: 0,
                is_admin: false,
                external: false,
            },
            ip: None,
            user_agent: None,
            project: None,
        }
    }

    fn config(json: &str) -> Config {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn keywords_get_the_configured_verdict() {
        let c = config(r#"{"keywords": ["Casino"], "verdict": "block_user"}"#);
        let v = KeywordFilter::check(&c, &input("best casino deals")).unwrap();
        assert_eq!(v.kind, VerdictKind::BlockUser);
        let v = KeywordFilter::check(&c, &input("a real bug")).unwrap();
        assert_eq!(v.kind, VerdictKind::Allow);
    }

    #[test]
    fn configuration_is_validated() {
        assert!(KeywordFilter::validate(&config(r#"{"keywords": ["x"]}"#)).is_ok());
        assert!(KeywordFilter::validate(&config(r#"{}"#)).is_err());
        assert!(
            KeywordFilter::validate(&config(r#"{"keywords": ["x"], "verdict": "maybe"}"#)).is_err()
        );
    }
}
