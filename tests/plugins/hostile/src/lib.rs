//! Test fixture for the plugin host's limits: `{"mode": ...}` chooses the misbehaviour of
//! `check`; `{"mode": "reject"}` is refused by `validate-config`.

use serde::Deserialize;
use trellis_sdk::spam_check::{Input, SpamCheck, Verdict};

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Config {
    /// `loop`, `alloc` (1 GiB), `trap`, `big_output` (100 MB), `log_flood`, `reject`, or
    /// anything else for a plain `disallow`.
    pub mode: String,
}

pub struct Hostile;

impl SpamCheck for Hostile {
    type Config = Config;

    fn validate(config: &Config) -> Result<(), String> {
        match config.mode.as_str() {
            "reject" => Err("this plugin rejects mode \"reject\"".into()),
            _ => Ok(()),
        }
    }

    fn check(config: &Config, input: &Input) -> Result<Verdict, String> {
        match config.mode.as_str() {
            "loop" => {
                let mut n = 0u64;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            "alloc" => {
                let big = vec![1u8; 1 << 30];
                Ok(Verdict::allow(format!(
                    "{}",
                    std::hint::black_box(big).len()
                )))
            }
            "trap" => panic!("hostile plugin traps"),
            "big_output" => Ok(Verdict::allow("x".repeat(100_000_000))),
            "log_flood" => {
                for _ in 0..10_000 {
                    trellis_sdk::log::warn(&"flood ".repeat(100));
                }
                Ok(Verdict::allow("logged a lot"))
            }
            _ => Ok(Verdict::disallow(format!(
                "hostile says no to {:?}",
                input.title
            ))),
        }
    }
}

trellis_sdk::export_spam_check!(Hostile);
