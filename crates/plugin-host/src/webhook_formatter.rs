//! The webhook-formatter hook: one call turns an event's standard payload into the request a
//! hook receives (the server's `webhooks::format` decides which binding and what its failure
//! means).

use std::sync::Arc;

use wasmtime::Store;

use crate::call::CallState;
use crate::registry::{Binding, Plugins};
use crate::runtime::Compiled;
use crate::wit::since_v0_1::WebhookRequest;

pub use crate::wit::since_v0_1::WebhookEvent;
use crate::{CallStats, PluginError};

/// The largest body a formatter may produce.
pub(crate) const MAX_BODY_BYTES: usize = 4 << 20;

/// What the plugin answered: the request's extra headers and body, or `None` to skip.
pub type Formatted = Option<(Vec<(String, String)>, String)>;

/// One call through `binding`.
pub async fn format_with(
    plugins: &Plugins,
    binding: &Arc<Binding>,
    event: WebhookEvent,
) -> (Result<Formatted, PluginError>, CallStats) {
    let (answer, stats) = plugins
        .call(binding, None, move |store, compiled| {
            call(store, compiled, &event)
        })
        .await;
    let answer = answer.and_then(|request| match request {
        Some(r) if r.body.len() > MAX_BODY_BYTES => Err(PluginError::Oversize(format!(
            "the formatted body is larger than {MAX_BODY_BYTES} bytes"
        ))),
        Some(r) => Ok(Some((r.headers, r.body))),
        None => Ok(None),
    });
    (answer, stats)
}

/// Instantiates a webhook-formatter plugin in `store` and calls its `format`.
pub(crate) fn call(
    store: &mut Store<CallState>,
    compiled: &Compiled,
    event: &WebhookEvent,
) -> wasmtime::Result<Result<Option<WebhookRequest>, String>> {
    let pre = compiled
        .webhook_formatter
        .as_ref()
        .ok_or_else(|| wasmtime::Error::msg("not a webhook-formatter plugin"))?;
    let plugin = pre.instantiate(&mut *store)?;
    plugin
        .trellis_policy_webhook_formatter()
        .call_format(&mut *store, event)
}
