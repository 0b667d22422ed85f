//! The read side of a push-rules check alone: `git::push_scan` reading every new commit of
//! the 10,000-commit history of `tests/bench/push-rules` (one changed file each) with their
//! changed files and sizes, batch after batch, without a plugin. The history is received into
//! a bare repository with `clone --bare --no-local`, so its pack is shaped the way a push
//! leaves it.
//!
//! On two cores a bound push's extra time is this scan's CPU competing with git's own
//! connectivity walk (`docs/performance.md`), so the figure to watch is the CPU a scan costs,
//! not its wall time. `cargo bench -p trellis --bench push_scan` prints, over `SCANS` scans
//! (20 unless set), the median wall time, the mean CPU of the whole machine (the scan's git
//! processes included), and the mean CPU of this process's own threads. Run it on a quiet
//! machine: the machine's CPU counts everything that runs.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use trellis_git::push_scan::PushObjects;

const COMMITS: usize = 10_000;

/// The benchmark's history: commit `n` rewrites `src/file{n % 100}.txt`, with fixed names,
/// emails and dates (the same object ids every run).
fn fast_import_stream() -> Vec<u8> {
    let mut out = Vec::new();
    for n in 1..=COMMITS {
        let message = format!("feat: change {n}\n");
        let content = format!("line {n}\n").repeat(8);
        let when = 1_700_000_000 + n;
        let parent = if n > 1 {
            format!("from :{}\n", n - 1)
        } else {
            String::new()
        };
        write!(
            out,
            "commit refs/heads/main\nmark :{n}\n\
             author Bench <bench@example.com> {when} +0000\n\
             committer Bench <bench@example.com> {when} +0000\n\
             data {}\n{message}{parent}M 100644 inline src/file{}.txt\ndata {}\n{content}\n",
            message.len(),
            n % 100,
            content.len()
        )
        .expect("in memory");
    }
    out
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_string()
}

/// A bare repository holding the history as a push would leave it, and its tip.
fn received(dir: &Path) -> (std::path::PathBuf, String) {
    let source = dir.join("source.git");
    git(
        dir,
        &["init", "-q", "--bare", source.to_str().expect("utf-8")],
    );
    let mut import = Command::new("git")
        .arg("-C")
        .arg(&source)
        .args(["fast-import", "--quiet"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("git fast-import");
    import
        .stdin
        .take()
        .expect("stdin")
        .write_all(&fast_import_stream())
        .expect("history written");
    assert!(import.wait().expect("fast-import ends").success());
    let target = dir.join("received.git");
    git(
        dir,
        &[
            "clone",
            "-q",
            "--bare",
            "--no-local",
            source.to_str().expect("utf-8"),
            target.to_str().expect("utf-8"),
        ],
    );
    let tip = git(&target, &["rev-parse", "main"]);
    // The scan is of commits no reference reaches yet, as in a push.
    git(&target, &["update-ref", "-d", "refs/heads/main"]);
    (target, tip)
}

/// The machine's CPU time so far (user, nice, system, irq, softirq), in milliseconds.
fn machine_cpu_ms() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").expect("/proc/stat");
    let fields: Vec<u64> = stat
        .lines()
        .next()
        .expect("the cpu line")
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().expect("a number"))
        .collect();
    (fields[0] + fields[1] + fields[2] + fields[5] + fields[6]) * 10
}

/// This process's own CPU time so far (utime + stime), in milliseconds.
fn own_cpu_ms() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    let after_name = &stat[stat.rfind(')').expect("a name") + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    (fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime")) * 10
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let scans: usize = std::env::var("SCANS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let dir = tempfile::tempdir().expect("temporary directory");
    let (repository, tip) = received(dir.path());
    let objects = PushObjects {
        repository,
        env: Vec::new(),
    };
    let tokio = tokio::runtime::Runtime::new().expect("tokio");
    let (mut walls, mut machine, mut own) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..scans {
        let (machine_before, own_before, started) =
            (machine_cpu_ms(), own_cpu_ms(), Instant::now());
        let (commits, files) = tokio.block_on(async {
            let mut scan = objects.new_commits(&tip, &[]).expect("scan starts");
            let (mut commits, mut files) = (0, 0);
            while let Some(batch) = scan.next_batch().await.expect("a batch") {
                commits += batch.len();
                files += batch.iter().map(|c| c.files.len()).sum::<usize>();
            }
            (commits, files)
        });
        walls.push(started.elapsed().as_secs_f64() * 1e3);
        machine.push((machine_cpu_ms() - machine_before) as f64);
        own.push((own_cpu_ms() - own_before) as f64);
        assert_eq!(
            (commits, files),
            (COMMITS, COMMITS),
            "every commit and file read"
        );
    }
    // CPU is counted in ticks of 10 ms: the mean over all scans resolves what one cannot.
    let mean = |values: Vec<f64>| values.iter().sum::<f64>() / values.len() as f64;
    println!(
        "push scan of {COMMITS} commits, {scans} scans: wall median {:.0} ms; CPU mean: \
         machine {:.0} ms, this process {:.0} ms",
        median(walls),
        mean(machine),
        mean(own)
    );
}
