//! The `push-rules` world. Implement the generated `Guest` traits of
//! `bindings::exports::trellis::policy::{configurable, push_rules}` and export them with
//! [`crate::export_push_rules!`]. (Ergonomic wrappers arrive with the hook that calls this world.)

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit/since_v0.1.0",
        world: "push-rules-plugin",
        with: {
            "trellis:policy/types@0.1.0": crate::host_bindings::trellis::policy::types,
            "trellis:policy/host@0.1.0": crate::host_bindings::trellis::policy::host,
        },
        pub_export_macro: true,
        export_macro_name: "__export_push_rules_plugin",
        default_bindings_module: "trellis_sdk::push_rules::bindings",
    });
}

pub use bindings::exports::trellis::policy::push_rules::*;

/// Exports (on WebAssembly only) a type implementing this world's `Guest` traits.
#[macro_export]
macro_rules! export_push_rules {
    ($plugin:ty) => {
        #[cfg(target_arch = "wasm32")]
        $crate::push_rules::bindings::__export_push_rules_plugin!(
            $plugin with_types_in $crate::push_rules::bindings
        );
    };
}
