//! Bindings for `trellis:policy@0.1.x` (wit/since_v0.1.0).

use wasmtime::component::Linker;

use super::Data;
use crate::call::CallState;

/// Generated from the spam-check world; it also carries the `host` and `types` interfaces
/// every 0.1 world shares.
pub(crate) mod spam_check {
    wasmtime::component::bindgen!({
        path: "../../wit/since_v0.1.0",
        world: "spam-check-plugin",
    });
}

/// Generated from the external-authorization world, reusing the shared interfaces above.
pub(crate) mod external_authorization {
    wasmtime::component::bindgen!({
        path: "../../wit/since_v0.1.0",
        world: "external-authorization-plugin",
        with: {
            "trellis:policy/types": crate::wit::since_v0_1::spam_check::trellis::policy::types,
            "trellis:policy/host": crate::wit::since_v0_1::spam_check::trellis::policy::host,
        },
    });
}

/// Generated from the webhook-formatter world, reusing the shared interfaces above.
pub(crate) mod webhook_formatter {
    wasmtime::component::bindgen!({
        path: "../../wit/since_v0.1.0",
        world: "webhook-formatter-plugin",
        with: {
            "trellis:policy/types": crate::wit::since_v0_1::spam_check::trellis::policy::types,
            "trellis:policy/host": crate::wit::since_v0_1::spam_check::trellis::policy::host,
        },
    });
}

pub(crate) use external_authorization::exports::trellis::policy::external_authorization::{
    AuthorizationRequest, Decision, Identity,
};
pub use spam_check::exports::trellis::policy::spam_check::{SpamInput, SpammableKind};
pub(crate) use spam_check::exports::trellis::policy::spam_check::{Verdict, VerdictKind};
pub use spam_check::trellis::policy::types::User;
pub(crate) use spam_check::trellis::policy::types::{LogLevel, Project, Visibility};
pub use webhook_formatter::exports::trellis::policy::webhook_formatter::WebhookEvent;
pub(crate) use webhook_formatter::exports::trellis::policy::webhook_formatter::WebhookRequest;

use external_authorization::trellis::policy::outbound_http;
use spam_check::trellis::policy::{host, types};

impl types::Host for CallState {}

impl host::Host for CallState {
    fn log(&mut self, level: LogLevel, message: String) {
        self.log(level, &message);
    }

    fn config(&mut self) -> String {
        self.config.to_string()
    }
}

impl outbound_http::Host for CallState {
    fn send(&mut self, request: outbound_http::Request) -> Result<outbound_http::Response, String> {
        let answer = self.send_http(trellis_outbound::http::Request {
            method: request.method,
            url: request.url,
            headers: request.headers,
            body: request.body,
        })?;
        Ok(outbound_http::Response {
            status: answer.status,
            headers: answer.headers,
            body: answer.body,
        })
    }
}

/// Adds the 0.1 host interfaces to a linker.
pub(crate) fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    types::add_to_linker::<CallState, Data>(linker, |s| s)?;
    host::add_to_linker::<CallState, Data>(linker, |s| s)?;
    // Always linked so any plugin compiles; a call without a grant gets an error, and a
    // binding of a plugin importing it without a grant is refused (the server's plugin service).
    outbound_http::add_to_linker::<CallState, Data>(linker, |s| s)
}
