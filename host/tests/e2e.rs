//! Runs the end-to-end suite in `tests/e2e` (pytest driving python-gitlab, requests, authlib,
//! git and Chromium) against the `trellis` binary of this very build, so `cargo test
//! --workspace` covers it. `tests/setup` first makes the test venv and installs the browser
//! test's packages when they are missing or stale; only a machine without python3 skips the
//! suite, and says so loudly.
//!
//! The files run in parallel, one pytest process per file, from a queue that starts with the
//! largest: the suite spends much of its time waiting on servers starting, git and bcrypt, so
//! it runs more processes than cores (docs/performance.md has its time). Every test gets its own
//! server, data directory and PostgreSQL database, so files cannot see each other.
//! `TRELLIS_E2E_JOBS` sets the number of processes.
//!
//! A test that fails under that parallel load is run once more on its own at the end. If it
//! passes then, the run passes but names it loudly as flaky; if it fails again, the run fails.

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Instant;

/// Writes past the test harness's capture (which takes `eprintln!`), so a passing run shows it.
fn notice(text: &str) {
    let _ = writeln!(std::io::stderr(), "{text}");
}

/// What one pytest run said about itself.
#[derive(Default)]
struct Outcome {
    /// "N passed", "N failed", ... as pytest counts them, summed over files.
    counts: Vec<(String, u64)>,
    /// Node ids (or file paths, for a collection error) that failed or errored.
    failed: Vec<String>,
}

impl Outcome {
    fn add(&mut self, other: Outcome) {
        for (kind, n) in other.counts {
            match self.counts.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, total)) => *total += n,
                None => self.counts.push((kind, n)),
            }
        }
        self.failed.extend(other.failed);
    }

    fn summary(&self) -> String {
        let parts: Vec<String> = self
            .counts
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        parts.join(", ")
    }
}

/// Reads pytest's `-rfEs` short summary (`FAILED id - reason`, `ERROR id - reason`) and its last
/// line (`3 failed, 40 passed, 2 skipped in 35.21s`).
fn parse_pytest(output: &str) -> Outcome {
    let mut outcome = Outcome::default();
    for line in output.lines() {
        if let Some(rest) = line
            .strip_prefix("FAILED ")
            .or_else(|| line.strip_prefix("ERROR "))
        {
            let id = rest.split(" - ").next().unwrap_or(rest).trim();
            outcome.failed.push(id.to_string());
        }
    }
    let last = output
        .lines()
        .rev()
        .find(|l| l.contains(" in "))
        .unwrap_or("");
    let counted = last.split(" in ").next().unwrap_or("").trim_matches('=');
    for part in counted.split(',') {
        let mut words = part.split_whitespace();
        if let (Some(n), Some(kind)) = (words.next(), words.next())
            && let Ok(n) = n.parse()
        {
            outcome
                .counts
                .push((kind.trim_end_matches('s').to_string(), n));
        }
    }
    outcome
}

fn pytest(root: &Path, targets: &[String]) -> (bool, String) {
    let output = Command::new(root.join("tests/.venv/bin/python"))
        .args(["-m", "pytest", "-q", "-rfEs", "-p", "no:cacheprovider"])
        .args(targets)
        .current_dir(root)
        .env("TRELLIS_BIN", env!("CARGO_BIN_EXE_trellis"))
        .output()
        .expect("running pytest");
    // stderr first: pytest's summary is the last line of stdout, and parse_pytest reads it there.
    let mut text = String::from_utf8_lossy(&output.stderr).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stdout));
    (output.status.success(), text)
}

/// The suite's files, largest first, so the long ones start early and the queue ends on short
/// ones.
fn test_files(root: &Path) -> VecDeque<String> {
    let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(root.join("tests/e2e"))
        .expect("reading tests/e2e")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "py")
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("test_"))
        })
        .map(|p| (std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0), p))
        .collect();
    files.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    files
        .into_iter()
        .map(|(_, p)| {
            p.strip_prefix(root)
                .unwrap_or(&p)
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

fn jobs() -> usize {
    if let Some(jobs) = std::env::var("TRELLIS_E2E_JOBS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        return jobs.max(1);
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores + 1).clamp(2, 6)
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

    let started = Instant::now();
    let queue = Mutex::new(test_files(root));
    let total = Mutex::new(Outcome::default());
    let jobs = jobs();
    notice(&format!(
        "end-to-end suite: {} files on {jobs} parallel pytest processes",
        queue.lock().unwrap().len()
    ));
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                loop {
                    let Some(file) = queue.lock().unwrap().pop_front() else {
                        break;
                    };
                    let began = Instant::now();
                    let (ok, text) = pytest(root, std::slice::from_ref(&file));
                    let outcome = parse_pytest(&text);
                    // One file's whole output at once, so parallel files never interleave.
                    notice(&format!(
                        "== {file}: {} ({:.0} s){}\n{text}",
                        outcome.summary(),
                        began.elapsed().as_secs_f64(),
                        if ok { "" } else { " FAILED" },
                    ));
                    let mut outcome = outcome;
                    if !ok && outcome.failed.is_empty() {
                        // pytest failed without naming a test (it could not start): rerun the file.
                        outcome.failed.push(file.clone());
                    }
                    total.lock().unwrap().add(outcome);
                }
            });
        }
    });
    let total = total.into_inner().unwrap();
    notice(&format!(
        "end-to-end suite: {} in {:.0} s",
        total.summary(),
        started.elapsed().as_secs_f64()
    ));
    if total.failed.is_empty() {
        return;
    }

    notice(&format!(
        "re-running {} failed test(s) alone, one after another:",
        total.failed.len()
    ));
    let (ok, text) = pytest(root, &total.failed);
    notice(&text);
    assert!(
        ok,
        "the end-to-end suite failed, also when re-run alone (the output is above)"
    );
    let banner = "!".repeat(78);
    notice(&format!(
        "\n{banner}\nFLAKY: these failed under parallel load and passed alone:\n  {}\n{banner}\n",
        total.failed.join("\n  ")
    ));
}

#[test]
fn pytest_summaries_are_read() {
    let output = "..F.E\nFAILED tests/e2e/test_a.py::test_x[sqlite] - assert 1 in []\n\
                  ERROR tests/e2e/test_b.py::test_y - fixture failed\n\
                  1 failed, 3 passed, 2 skipped, 1 error in 12.30s\n";
    let outcome = parse_pytest(output);
    assert_eq!(
        outcome.failed,
        [
            "tests/e2e/test_a.py::test_x[sqlite]",
            "tests/e2e/test_b.py::test_y"
        ]
    );
    assert_eq!(outcome.summary(), "1 failed, 3 passed, 2 skipped, 1 error");
}
