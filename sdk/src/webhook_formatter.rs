//! The `webhook-formatter` world. Implement the generated `Guest` traits of
//! `bindings::exports::trellis::policy::{configurable, webhook_formatter}` and export them with
//! [`crate::export_webhook_formatter!`]. (Ergonomic wrappers arrive with the hook that calls this world.)

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit/since_v0.1.0",
        world: "webhook-formatter-plugin",
        with: {
            "trellis:policy/types@0.1.0": crate::host_bindings::trellis::policy::types,
            "trellis:policy/host@0.1.0": crate::host_bindings::trellis::policy::host,
        },
        pub_export_macro: true,
        export_macro_name: "__export_webhook_formatter_plugin",
        default_bindings_module: "trellis_sdk::webhook_formatter::bindings",
    });
}

pub use bindings::exports::trellis::policy::webhook_formatter::*;

/// Exports (on WebAssembly only) a type implementing this world's `Guest` traits.
#[macro_export]
macro_rules! export_webhook_formatter {
    ($plugin:ty) => {
        #[cfg(target_arch = "wasm32")]
        $crate::webhook_formatter::bindings::__export_webhook_formatter_plugin!(
            $plugin with_types_in $crate::webhook_formatter::bindings
        );
    };
}
