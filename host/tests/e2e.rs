//! Runs the end-to-end suite in `tests/e2e` (pytest driving python-gitlab and requests)
//! against the `trellis` binary of this very build, so `cargo test --workspace` covers it.
//! Without the test virtualenv (`.ci/run` creates it) the suite is skipped with a notice.

use std::path::Path;
use std::process::Command;

#[test]
fn python_end_to_end_suite() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root");
    let python = root.join("tests/.venv/bin/python");
    if !python.exists() {
        eprintln!(
            "NOTICE: skipping the end-to-end suite: tests/.venv is missing. Create it with \
             `python3 -m venv tests/.venv && tests/.venv/bin/pip install -r tests/requirements.txt` \
             (.ci/run does this)."
        );
        return;
    }
    if std::env::var_os("TRELLIS_TEST_DATABASE_URL").is_none() {
        eprintln!(
            "NOTICE: TRELLIS_TEST_DATABASE_URL is unset: the end-to-end suite runs on SQLite only."
        );
    }
    let status = Command::new(python)
        .args(["-m", "pytest", "tests/e2e", "-q", "-p", "no:cacheprovider"])
        .current_dir(root)
        .env("TRELLIS_BIN", env!("CARGO_BIN_EXE_trellis"))
        .status()
        .expect("running pytest");
    assert!(
        status.success(),
        "the end-to-end suite failed (its output is above)"
    );
}
