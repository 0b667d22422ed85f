//! What the plugin benchmarks share: a plugin host as the server makes one (pooling allocator,
//! no compile cache), and a binding of one of its built-in plugins with the default limits.

use std::sync::Arc;

use trellis_plugin_host::runtime::{Runtime, RuntimeOptions};
use trellis_plugin_host::{Binding, FailurePolicy, Hook, Maxima, Plugins, builtin};

/// A plugin host and a binding of the built-in plugin `name` to `hook` with `config`.
pub fn built_in_binding(
    name: &str,
    hook: Hook,
    config: &str,
    failure_policy: FailurePolicy,
) -> (Arc<Plugins>, Arc<Binding>) {
    let runtime = Runtime::new(RuntimeOptions {
        cache_dir: None,
        pool_instances: 16,
        max_memory_bytes: 256 << 20,
    })
    .expect("engine");
    let maxima = Maxima::default();
    let plugins = Plugins::new(runtime, maxima);
    let built_in = builtin::BUILT_INS
        .iter()
        .find(|b| b.name == name)
        .expect("a built-in plugin of that name");
    let compiled = Arc::new(
        plugins
            .runtime
            .compile(built_in.bytes)
            .expect("built-in compiles"),
    );
    let binding = Arc::new(Binding {
        tenant_id: 1,
        hook,
        plugin: Ok(compiled),
        label: Arc::from(name),
        config: Arc::from(config),
        failure_policy,
        limits: maxima.defaults(),
        outbound: None,
    });
    (plugins, binding)
}
