//! The misbehaviours of the hostile test plugins, shared by both worlds' crates (hostile,
//! hostile-auth): `{"mode": ...}` in the binding's configuration chooses one.

use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Config {
    /// `sleep` (an hour), `loop`, `alloc` (1 GiB), `stack_overflow`, `trap` (unreachable),
    /// `panic`, `big_output` (100 MB), `log_flood`, `reject` (refused by `validate-config`),
    /// or anything else to answer normally.
    pub mode: String,
}

pub fn validate(config: &Config) -> Result<(), String> {
    match config.mode.as_str() {
        "reject" => Err("this plugin rejects mode \"reject\"".into()),
        _ => Ok(()),
    }
}

/// Misbehaves as `config` says, or returns the text to answer with: `None` for a normal
/// answer, `Some(huge)` for `big_output`, after `log_flood`'s logging.
pub fn misbehave(config: &Config, log: impl Fn(&str)) -> Option<String> {
    match config.mode.as_str() {
        "sleep" => {
            std::thread::sleep(std::time::Duration::from_secs(3600));
            None
        }
        "loop" => {
            let mut n = 0u64;
            loop {
                n = std::hint::black_box(n.wrapping_add(1));
            }
        }
        "alloc" => {
            let big = vec![1u8; 1 << 30];
            Some(std::hint::black_box(big).len().to_string())
        }
        "stack_overflow" => Some(recurse(std::hint::black_box(1)).to_string()),
        "trap" => {
            #[cfg(target_arch = "wasm32")]
            core::arch::wasm32::unreachable();
            #[cfg(not(target_arch = "wasm32"))]
            unreachable!()
        }
        "panic" => panic!("hostile plugin panics"),
        "big_output" => Some("x".repeat(100_000_000)),
        "log_flood" => {
            for _ in 0..10_000 {
                log(&"flood ".repeat(100));
            }
            None
        }
        _ => None,
    }
}

/// Recurses without end (each frame keeps a buffer alive, so it is not a loop).
#[allow(unconditional_recursion)]
fn recurse(depth: u64) -> u64 {
    let frame = std::hint::black_box([depth; 64]);
    recurse(depth + 1) + frame[(depth % 64) as usize]
}
