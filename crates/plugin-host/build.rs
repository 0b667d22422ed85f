//! Compiles the built-in plugins (`plugins/*`) to wasm32-wasip2 components and puts them in
//! OUT_DIR, where `builtin` embeds them. They are built by a nested cargo with its own target
//! directory (`<target>/wasm-guests`), so the outer build is not disturbed, one package
//! per invocation (each plugin enables exactly one world feature of trellis-sdk).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The target the plugins are compiled for: it emits WebAssembly components directly.
const GUEST_TARGET: &str = "wasm32-wasip2";

/// (package, artifact) of each built-in plugin.
const BUILT_INS: &[(&str, &str)] = &[
    ("trellis-spam-filter", "trellis_spam_filter.wasm"),
    (
        "trellis-external-authorization",
        "trellis_external_authorization.wasm",
    ),
    ("trellis-push-rules", "trellis_push_rules.wasm"),
    (
        "trellis-webhook-formatter",
        "trellis_webhook_formatter.wasm",
    ),
];

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    // crates/plugin-host → the workspace root.
    let root = manifest_dir.ancestors().nth(2).unwrap().to_path_buf();
    for watched in ["plugins", "sdk", "wit", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    ensure_guest_target();
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let target_dir = guest_target_dir(&out_dir);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    for (package, artifact) in BUILT_INS {
        let status = Command::new(&cargo)
            .args([
                "build",
                "--release",
                "--target",
                GUEST_TARGET,
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
            "building the built-in plugin {package} for wasm32-wasip2 failed (its errors are above)"
        );
        let built = target_dir.join(GUEST_TARGET).join("release").join(artifact);
        std::fs::copy(&built, out_dir.join(artifact))
            .unwrap_or_else(|e| panic!("copying {}: {e}", built.display()));
    }
}

/// Makes sure the toolchain has the standard library for `GUEST_TARGET`. rustup installs the
/// targets `rust-toolchain.toml` lists only when it installs the toolchain itself, never into a
/// toolchain that is already there, so a machine that had Rust 1.95 before its first build of
/// Trellis lacks it. Then this adds it through rustup, saying so in one line; without rustup it
/// stops with the command to run.
fn ensure_guest_target() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        .unwrap_or_else(|| panic!("`{rustc} --print sysroot` failed"));
    let installed = || {
        sysroot
            .join("lib/rustlib")
            .join(GUEST_TARGET)
            .join("lib")
            .is_dir()
    };
    if installed() {
        return;
    }
    // RUSTUP_TOOLCHAIN is set by rustup's proxies to the toolchain this build runs on.
    let toolchain = std::env::var("RUSTUP_TOOLCHAIN").ok();
    let mut rustup = Command::new("rustup");
    rustup.args(["target", "add", GUEST_TARGET]);
    if let Some(toolchain) = &toolchain {
        rustup.args(["--toolchain", toolchain]);
    }
    let added = rustup.output().is_ok_and(|out| out.status.success());
    if added && installed() {
        // Cargo shows a build script's warnings again each time it recompiles the crate
        // without running the script again, so say when this happened.
        println!(
            "cargo:warning=the {GUEST_TARGET} target was missing from the Rust toolchain when \
             this build script last ran, and it installed it with `rustup target add \
             {GUEST_TARGET}` (the built-in plugins need it)"
        );
        return;
    }
    let command = match &toolchain {
        Some(toolchain) => format!("rustup target add {GUEST_TARGET} --toolchain {toolchain}"),
        None => format!("rustup target add {GUEST_TARGET}"),
    };
    panic!(
        "the Rust standard library for {GUEST_TARGET} is not installed in {} and could not be \
         added automatically; the built-in plugins are compiled for it. Run `{command}` \
         (or install your distribution's {GUEST_TARGET} standard library), then build again.",
        sysroot.display()
    );
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
