//! `trellis plugin check|sample|run`: the local runner plugin authors iterate with. `run` uses the
//! production engine and limits (the operator maxima flags apply here too).

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};

use crate::Maxima;
use crate::hooks::{FailurePolicy, Hook};
use crate::registry::{Binding, Plugins};
use crate::runtime::{Compiled, Runtime, RuntimeOptions};
use crate::trial::{self, SampleUser};

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

/// Prints `hook`'s sample input (what `run` calls without `--input`).
pub fn sample(hook: &str) -> anyhow::Result<()> {
    let hook = Hook::parse(hook).with_context(|| format!("unknown hook {hook:?}"))?;
    println!("{}", trial::sample(hook, &SampleUser::default()));
    Ok(())
}

/// Validates the configuration, calls the hook once on `input` (the hook's sample without
/// one) and prints the answer and its cost.
pub async fn run(
    file: &Path,
    hook: &str,
    input: Option<&Path>,
    config: Option<&str>,
    maxima: Maxima,
) -> anyhow::Result<()> {
    let hook = Hook::parse(hook).with_context(|| format!("unknown hook {hook:?}"))?;
    let config = match config {
        None => "{}".to_string(),
        Some(text) if Path::new(text).is_file() => std::fs::read_to_string(text)?,
        Some(text) => text.to_string(),
    };
    serde_json::from_str::<serde_json::Value>(&config).context("the configuration is not JSON")?;
    let input = match input {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            trial::input(hook, &text).with_context(|| format!("reading {}", path.display()))?
        }
        None => trial::input(hook, &trial::sample(hook, &SampleUser::default()))?,
    };
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
    let report = trial::run(&plugins, &binding, input).await;
    print!("{}", report.text());
    if report.answer.error.is_some() {
        std::process::exit(1);
    }
    Ok(())
}
