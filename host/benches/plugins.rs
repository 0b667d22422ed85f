//! Instantiate + call of the built-in spam filter, as a hook call does it on its blocking
//! thread: a fresh `Store` from the plugin's `InstancePre` (pooling allocator, copy-on-write
//! memory image), the limits set, `check` called, the store dropped.
//!
//! `cargo bench -p trellis --bench plugins` prints p50/p99 over 20,000 calls, then runs the
//! criterion benchmark.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use trellis_plugin_host::registry::invoke_blocking;
use trellis_plugin_host::spam::{self, SpamAuthor, SpamProject, SpamSubject, SpammableKind};
use trellis_plugin_host::{Binding, FailurePolicy, Hook, Plugins};

mod common;

fn setup() -> (Arc<Plugins>, Arc<Binding>, spam::SpamInput) {
    let (plugins, binding) = common::built_in_binding(
        "spam-filter",
        Hook::SpamCheck,
        r#"{"blocked_words": ["casino", "free money"], "blocked_link_domains": ["spam.example"]}"#,
        FailurePolicy::FailOpen,
    );
    let input = spam::wit_input(&SpamSubject {
        kind: SpammableKind::Issue,
        title: "Crash when saving a file with a long name".into(),
        description: "Steps to reproduce: open the editor, type a name of 300 characters, \
                      press save. See https://docs.example/limits for the documented limit."
            .into(),
        is_update: false,
        confidential: false,
        author: SpamAuthor {
            id: 42,
            username: "alice".into(),
            created_at_ms: 1_600_000_000_000,
            is_admin: false,
            external: false,
        },
        ip: Some("192.0.2.1".into()),
        user_agent: Some("python-gitlab/4".into()),
        project: Some(SpamProject {
            id: 7,
            path: "group/project".into(),
            visibility: "public".into(),
        }),
    });
    (plugins, binding, input)
}

fn call_once(plugins: &Plugins, binding: &Binding, input: &spam::SpamInput) {
    let (verdict, _) = invoke_blocking(
        &plugins.runtime,
        binding,
        &binding.limits,
        None,
        None,
        |store, compiled| spam::call(store, compiled, input),
    );
    assert!(verdict.is_ok());
}

fn percentiles(plugins: &Plugins, binding: &Binding, input: &spam::SpamInput) {
    for _ in 0..1000 {
        call_once(plugins, binding, input);
    }
    let mut samples: Vec<Duration> = (0..20_000)
        .map(|_| {
            let start = Instant::now();
            call_once(plugins, binding, input);
            start.elapsed()
        })
        .collect();
    samples.sort();
    let at = |p: f64| samples[((samples.len() as f64 * p) as usize).min(samples.len() - 1)];
    println!(
        "spam-filter instantiate + call over {} calls: p50 {:.1} µs, p90 {:.1} µs, p99 {:.1} µs, max {:.1} µs",
        samples.len(),
        at(0.50).as_secs_f64() * 1e6,
        at(0.90).as_secs_f64() * 1e6,
        at(0.99).as_secs_f64() * 1e6,
        samples[samples.len() - 1].as_secs_f64() * 1e6,
    );
}

fn main() {
    let (plugins, binding, input) = setup();
    percentiles(&plugins, &binding, &input);
    let mut c = Criterion::default().configure_from_args();
    c.bench_function("spam_filter_instantiate_and_call", |b| {
        b.iter(|| call_once(&plugins, &binding, &input))
    });
    c.final_summary();
}
