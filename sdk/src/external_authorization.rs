//! The `external-authorization` world. Implement the generated `Guest` traits of
//! `bindings::exports::trellis::policy::{configurable, external_authorization}` and export them with
//! [`crate::export_external_authorization!`]. (Ergonomic wrappers arrive with the hook that calls this world.)

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit/since_v0.1.0",
        world: "external-authorization-plugin",
        with: {
            "trellis:policy/types@0.1.0": crate::host_bindings::trellis::policy::types,
            "trellis:policy/host@0.1.0": crate::host_bindings::trellis::policy::host,
        },
        pub_export_macro: true,
        export_macro_name: "__export_external_authorization_plugin",
        default_bindings_module: "trellis_sdk::external_authorization::bindings",
    });
}

pub use bindings::exports::trellis::policy::external_authorization::*;

/// Exports (on WebAssembly only) a type implementing this world's `Guest` traits.
#[macro_export]
macro_rules! export_external_authorization {
    ($plugin:ty) => {
        #[cfg(target_arch = "wasm32")]
        $crate::external_authorization::bindings::__export_external_authorization_plugin!(
            $plugin with_types_in $crate::external_authorization::bindings
        );
    };
}
