//! Compiles the built-in plugins (`plugins/*`) to wasm32-wasip2 components and puts them in
//! OUT_DIR, where `plugins::builtin` embeds them. They are built by a nested cargo with its own
//! target directory (`<target>/wasm-guests`), so the host's build is not disturbed, one package
//! per invocation (each plugin enables exactly one world feature of trellis-sdk).

use std::path::{Path, PathBuf};
use std::process::Command;

/// (package, artifact) of each built-in plugin.
const BUILT_INS: &[(&str, &str)] = &[
    ("trellis-spam-filter", "trellis_spam_filter.wasm"),
    (
        "trellis-external-authorization",
        "trellis_external_authorization.wasm",
    ),
];

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest_dir.parent().unwrap().to_path_buf();
    for watched in ["plugins", "sdk", "wit", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let target_dir = guest_target_dir(&out_dir);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    for (package, artifact) in BUILT_INS {
        let status = Command::new(&cargo)
            .args([
                "build",
                "--release",
                "--target",
                "wasm32-wasip2",
                "--package",
                package,
            ])
            .arg("--manifest-path")
            .arg(root.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(&target_dir)
            .current_dir(&root)
            // The outer build's settings are for the host; the guests get their own.
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("CARGO_BUILD_TARGET")
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("RUSTC_WORKSPACE_WRAPPER")
            .env_remove("CARGO_PRIMARY_PACKAGE")
            .status()
            .expect("running cargo for the built-in plugins");
        assert!(
            status.success(),
            "building the built-in plugin {package} for wasm32-wasip2 failed \
             (is the target installed? `rustup target add wasm32-wasip2`)"
        );
        let built = target_dir.join("wasm32-wasip2/release").join(artifact);
        std::fs::copy(&built, out_dir.join(artifact))
            .unwrap_or_else(|e| panic!("copying {}: {e}", built.display()));
    }
}

/// `<target>/wasm-guests`, beside the host's own profiles (the target directory is the
/// nearest ancestor of OUT_DIR holding cargo's CACHEDIR.TAG).
fn guest_target_dir(out_dir: &Path) -> PathBuf {
    out_dir
        .ancestors()
        .find(|dir| dir.join("CACHEDIR.TAG").exists())
        .map(|target| target.join("wasm-guests"))
        .unwrap_or_else(|| out_dir.join("wasm-guests"))
}
