//! `trellis plugin check|run`: the local runner plugin authors iterate with. `run` uses the
//! production engine and limits (the operator maxima flags apply here too).

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use serde::Deserialize;

use super::call::CallStats;
use super::hooks::{FailurePolicy, Hook};
use super::registry::{Binding, Plugins};
use super::runtime::{Compiled, Runtime, RuntimeOptions};
use super::spam::{self, SpamAuthor, SpamOutcome, SpamProject, SpamSubject, SpammableKind};
use super::{Limits, Maxima};

fn engine(maxima: &Maxima) -> anyhow::Result<Arc<Runtime>> {
    Runtime::new(RuntimeOptions {
        cache_dir: None,
        pool_instances: 4,
        max_memory_bytes: maxima.memory_bytes,
    })
}

async fn compile(plugins: &Plugins, file: &Path) -> anyhow::Result<Arc<Compiled>> {
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    match plugins.compile(bytes.into()).await {
        Ok(compiled) => Ok(compiled),
        Err(reason) => bail!("{}: {reason}", file.display()),
    }
}

/// Prints the world, imports, size and sha256 of a component.
pub async fn check(file: &Path, maxima: Maxima) -> anyhow::Result<()> {
    let plugins = Plugins::new(engine(&maxima)?, maxima);
    let compiled = compile(&plugins, file).await?;
    let ty = compiled.pre.component().component_type();
    println!("file:    {}", file.display());
    println!(
        "world:   trellis:policy/{}@{}",
        compiled.target.world.world_name(),
        compiled.target.package_version
    );
    println!(
        "hook:    {}",
        Hook::ALL
            .into_iter()
            .find(|h| h.world() == compiled.target.world)
            .map_or("-", |h| h.name())
    );
    println!("size:    {} bytes", compiled.size);
    println!("sha256:  {}", compiled.sha256);
    println!("imports:");
    for (name, _) in ty.imports(&plugins.runtime.engine) {
        println!("  {name}");
    }
    println!("exports:");
    for (name, _) in ty.exports(&plugins.runtime.engine) {
        println!("  {name}");
    }
    Ok(())
}

/// The input file of `--hook spam-check`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpamInputFile {
    #[serde(default = "issue")]
    kind: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    is_update: bool,
    #[serde(default)]
    confidential: bool,
    author: AuthorFile,
    ip: Option<String>,
    user_agent: Option<String>,
    project: Option<ProjectFile>,
}

fn issue() -> String {
    "issue".into()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AuthorFile {
    id: i64,
    username: String,
    /// RFC 3339, e.g. `2024-01-31T12:00:00Z`.
    created_at: chrono::DateTime<chrono::Utc>,
    #[serde(default)]
    is_admin: bool,
    #[serde(default)]
    external: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProjectFile {
    id: i64,
    path: String,
    visibility: String,
}

fn spam_subject(file: SpamInputFile) -> anyhow::Result<SpamSubject> {
    let kind = match file.kind.as_str() {
        "issue" => SpammableKind::Issue,
        "merge_request" | "merge-request" => SpammableKind::MergeRequest,
        "note" => SpammableKind::Note,
        "snippet" => SpammableKind::Snippet,
        other => bail!("unknown kind {other:?} (issue, merge_request, note or snippet)"),
    };
    Ok(SpamSubject {
        kind,
        title: file.title,
        description: file.description,
        is_update: file.is_update,
        confidential: file.confidential,
        author: SpamAuthor {
            id: file.author.id,
            username: file.author.username,
            created_at_ms: file.author.created_at.timestamp_millis(),
            is_admin: file.author.is_admin,
            external: file.author.external,
        },
        ip: file.ip,
        user_agent: file.user_agent,
        project: file.project.map(|p| SpamProject {
            id: p.id,
            path: p.path,
            visibility: p.visibility,
        }),
    })
}

/// A spam-check input as `--input` gives it (the admin console's "Try it" reads the same).
pub fn spam_input(text: &str) -> anyhow::Result<SpamSubject> {
    spam_subject(serde_json::from_str(text)?)
}

/// Validates the configuration, calls the hook once and prints the answer and its cost.
pub async fn run(
    file: &Path,
    hook: &str,
    input: &Path,
    config: Option<&str>,
    maxima: Maxima,
) -> anyhow::Result<()> {
    let hook = Hook::parse(hook).with_context(|| format!("unknown hook {hook:?}"))?;
    if hook != Hook::SpamCheck {
        bail!("the local runner calls spam-check plugins only so far");
    }
    let config = match config {
        None => "{}".to_string(),
        Some(text) if Path::new(text).is_file() => std::fs::read_to_string(text)?,
        Some(text) => text.to_string(),
    };
    serde_json::from_str::<serde_json::Value>(&config).context("the configuration is not JSON")?;
    let subject = spam_input(
        &std::fs::read_to_string(input).with_context(|| format!("reading {}", input.display()))?,
    )
    .with_context(|| format!("reading {}", input.display()))?;
    let plugins = Plugins::new(engine(&maxima)?, maxima);
    let compiled = compile(&plugins, file).await?;
    if compiled.target.world != hook.world() {
        bail!(
            "the plugin implements {}, not {}",
            compiled.target.world.world_name(),
            hook.world().world_name()
        );
    }
    let limits = maxima.defaults();
    let label = file
        .file_name()
        .map_or("plugin".into(), |n| n.to_string_lossy().into_owned());
    if let Err(reason) = plugins
        .validate_config(0, hook, compiled.clone(), &label, &config, limits)
        .await
    {
        bail!("configuration rejected: {reason}");
    }
    let binding = Arc::new(Binding {
        tenant_id: 0,
        hook,
        plugin: Ok(compiled),
        label: Arc::from(label),
        config: Arc::from(config),
        failure_policy: FailurePolicy::FailClosed,
        limits,
        outbound: None,
    });
    let (outcome, stats) = spam::check_with(&plugins, &binding, &subject, false).await;
    print!("{}", report(&outcome, &stats, &limits));
    if outcome.error.is_some() {
        std::process::exit(1);
    }
    Ok(())
}

/// What one spam check answered and cost, as `trellis plugin run` prints it (the admin
/// console's "Try it" shows the same text).
pub fn report(outcome: &SpamOutcome, stats: &CallStats, limits: &Limits) -> String {
    let mut out = match (&outcome.verdict, &outcome.error) {
        (Some(verdict), _) => format!("verdict: {}\nreason:  {}\n", verdict.name(), outcome.reason),
        (None, Some(error)) => format!("error:   {} ({})\n", error, error.outcome()),
        (None, None) => format!("error:   {}\n", outcome.reason),
    };
    out += &format!("time:    {:.3} ms\n", stats.elapsed.as_secs_f64() * 1000.0);
    out += &format!("fuel:    {}\n", stats.fuel);
    out += &format!("memory:  {} bytes peak\n", stats.peak_memory);
    out += &format!(
        "limits:  {} ms, {} fuel, {} bytes\n",
        limits.timeout_ms,
        limits.fuel.map_or("unlimited".into(), |f| f.to_string()),
        limits.memory_bytes
    );
    if !stats.log.is_empty() {
        out += "log:\n";
        for line in &stats.log {
            out += &format!("  {line}\n");
        }
    }
    out
}
