//! Runs the end-to-end suite in `tests/e2e` (pytest driving python-gitlab, requests, authlib,
//! git and Chromium) against the `trellis` binary of this very build, so `cargo test
//! --workspace` covers it. `tests/setup` first makes the test venv and installs the browser
//! test's packages when they are missing or stale; only a machine without python3 skips the
//! suite, and says so loudly.

use std::io::Write;
use std::path::Path;
use std::process::Command;

/// Writes past the test harness's capture (which takes `eprintln!`), so a passing run shows it.
fn notice(text: &str) {
    let _ = writeln!(std::io::stderr(), "{text}");
}

#[test]
fn python_end_to_end_suite() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root");
    if Command::new("python3").arg("--version").output().is_err() {
        let banner = "!".repeat(78);
        notice(&format!(
            "\n{banner}\nSKIPPED: the end-to-end suite did NOT run: python3 is missing.\n\
             Only the unit tests ran. Install python3 (with venv and pip) and run \
             `cargo test --workspace` again.\n{banner}\n"
        ));
        return;
    }
    let setup = Command::new("bash")
        .arg(root.join("tests/setup"))
        .status()
        .expect("running tests/setup");
    assert!(
        setup.success(),
        "tests/setup could not prepare the end-to-end suite (its output is above)"
    );
    if std::env::var_os("TRELLIS_TEST_DATABASE_URL").is_none() {
        notice(
            "NOTICE: TRELLIS_TEST_DATABASE_URL is unset: the end-to-end suite runs on SQLite only.",
        );
    }
    let status = Command::new(root.join("tests/.venv/bin/python"))
        .args([
            "-m",
            "pytest",
            "tests/e2e",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
        ])
        .current_dir(root)
        .env("TRELLIS_BIN", env!("CARGO_BIN_EXE_trellis"))
        .status()
        .expect("running pytest");
    assert!(
        status.success(),
        "the end-to-end suite failed (its output is above)"
    );
}
