//! One `check-commits` call of the built-in push-rules plugin on a batch of commits, as a push
//! makes it (`trellis_plugin_host::push_rules::commits_answer`: the tenant's slot, a blocking
//! thread, a fresh instance), with the rule of `tests/bench/push-rules` (four regular
//! expressions and the file rules). What a 10,000-commit push spends in the plugin is this times the batches.
//!
//! `cargo bench -p trellis --bench push_rules` prints the median call for a few batch sizes
//! (the per-call cost is the intercept), then runs the criterion benchmark on a full batch.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use trellis_git::push_scan::BATCH_COMMITS;
use trellis_plugin_host::push_rules::{
    ChangedFile, Commit, Decision, Project, Push, Pusher, RefUpdate, Rule, Signature, User,
    Visibility, commits_answer,
};
use trellis_plugin_host::{Binding, BlobSource, FailurePolicy, Hook, Plugins};

mod common;

/// The benchmark reads no blob.
struct NoBlobs;

impl BlobSource for NoBlobs {
    fn read_blob(&self, id: &str, _max: usize) -> Result<Vec<u8>, String> {
        Err(format!("{id} is not read in this benchmark"))
    }
}

fn setup() -> (Arc<Plugins>, Arc<Binding>, Push) {
    let (plugins, binding) = common::built_in_binding(
        "push-rules",
        Hook::PushRules,
        "{}",
        FailurePolicy::FailClosed,
    );
    let push = Push {
        project: Project {
            id: 1,
            path: "root/bench".into(),
            visibility: Visibility::Private,
        },
        default_branch: "main".into(),
        rule: Some(Rule {
            commit_message_regex: Some("^(feat|fix): ".into()),
            commit_message_negative_regex: Some("(?i)wip".into()),
            branch_name_regex: Some("^(main|feat/.+)$".into()),
            author_email_regex: Some(r"@example\.com$".into()),
            file_name_regex: Some(r"\.(exe|dll)$".into()),
            deny_delete_tag: true,
            member_check: false,
            prevent_secrets: false,
            commit_committer_check: false,
            reject_unsigned_commits: false,
            max_file_size: 10,
        }),
        pusher: Pusher {
            user: User {
                id: 1,
                username: "root".into(),
                created_at: 1_700_000_000_000,
                is_admin: true,
                external: false,
            },
            name: "Administrator".into(),
            verified_emails: vec!["admin@example.com".into()],
        },
        updates: vec![RefUpdate {
            ref_name: "refs/heads/main".into(),
            old_sha: "0".repeat(40),
            new_sha: "1".repeat(40),
        }],
    };
    (plugins, binding, push)
}

/// `count` commits shaped like the benchmark push's: one changed file each.
fn commits(count: usize) -> Vec<Commit> {
    (0..count)
        .map(|n| Commit {
            sha: format!("{n:040x}"),
            message: format!("feat: change {n}\n"),
            author_name: "Bench".into(),
            author_email: "bench@example.com".into(),
            committer_name: "Bench".into(),
            committer_email: "bench@example.com".into(),
            author_is_user: false,
            committer_is_user: false,
            signature: Signature::Unsigned,
            files: vec![ChangedFile {
                path: format!("src/file{}.txt", n % 100),
                size: 72,
                added: false,
                deleted: false,
                blob_id: format!("{:040x}", n + 1),
            }],
        })
        .collect()
}

fn call_once(
    runtime: &tokio::runtime::Runtime,
    plugins: &Plugins,
    binding: &Arc<Binding>,
    push: &Push,
    batch: &[Commit],
) {
    let (answer, _) = runtime.block_on(commits_answer(
        plugins,
        binding,
        push,
        0,
        batch.to_vec(),
        Arc::new(NoBlobs),
    ));
    assert!(matches!(answer, Ok(Decision::Allow)), "{answer:?}");
}

fn main() {
    let tokio = tokio::runtime::Runtime::new().expect("tokio");
    let (plugins, binding, push) = setup();
    for size in [1, 50, BATCH_COMMITS, 1000] {
        let batch = commits(size);
        let mut samples: Vec<Duration> = (0..200)
            .map(|_| {
                let start = Instant::now();
                call_once(&tokio, &plugins, &binding, &push, &batch);
                start.elapsed()
            })
            .collect();
        samples.sort();
        println!(
            "push-rules check-commits, {size} commits: median {:.0} µs per call",
            samples[samples.len() / 2].as_secs_f64() * 1e6
        );
    }
    let batch = commits(BATCH_COMMITS);
    let mut c = Criterion::default().configure_from_args();
    c.bench_function("push_rules_check_commits_batch", |b| {
        b.iter(|| call_once(&tokio, &plugins, &binding, &push, &batch))
    });
    c.final_summary();
}
