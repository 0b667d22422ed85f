//! The `external-authorization` world: may this user see a project with this classification
//! label? Plugins of this world may also send HTTP requests through the host
//! ([`outbound_http`]), to the origins the administrator granted the binding.

use serde::de::DeserializeOwned;

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

pub use bindings::exports::trellis::policy::external_authorization::{
    AuthorizationRequest as Request, Decision, Identity,
};
/// HTTP requests through the host: `outbound_http::send(&Request { .. })`.
pub use bindings::trellis::policy::outbound_http;

impl Decision {
    pub fn allow() -> Self {
        Decision {
            allowed: true,
            reason: String::new(),
        }
    }
    pub fn refuse(reason: impl Into<String>) -> Self {
        Decision {
            allowed: false,
            reason: reason.into(),
        }
    }
}

/// An external-authorization plugin.
pub trait ExternalAuthorization {
    /// The binding's configuration (`{}` or no configuration gives `Default`).
    type Config: DeserializeOwned + Default;

    /// Checks a configuration beyond what deserialisation checks.
    fn validate(_config: &Self::Config) -> Result<(), String> {
        Ok(())
    }

    /// The decision for one user and label; an `Err` counts as a failure (access refused).
    fn authorize(config: &Self::Config, request: &Request) -> Result<Decision, String>;
}

#[doc(hidden)]
pub fn __validate<T: ExternalAuthorization>(json: &str) -> Result<(), String> {
    T::validate(&crate::config::parse(json)?)
}

#[doc(hidden)]
pub fn __authorize<T: ExternalAuthorization>(request: Request) -> Result<Decision, String> {
    T::authorize(&crate::config::current()?, &request)
}

/// Exports an [`ExternalAuthorization`] implementation (on WebAssembly only).
#[macro_export]
macro_rules! export_external_authorization {
    ($plugin:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            struct __TrellisPlugin;
            impl $crate::external_authorization::bindings::exports::trellis::policy::external_authorization::Guest
                for __TrellisPlugin
            {
                fn authorize(
                    request: $crate::external_authorization::Request,
                ) -> ::core::result::Result<
                    $crate::external_authorization::Decision,
                    ::std::string::String,
                > {
                    $crate::external_authorization::__authorize::<$plugin>(request)
                }
            }
            impl $crate::external_authorization::bindings::exports::trellis::policy::configurable::Guest
                for __TrellisPlugin
            {
                fn validate_config(
                    config: ::std::string::String,
                ) -> ::core::result::Result<(), ::std::string::String> {
                    $crate::external_authorization::__validate::<$plugin>(&config)
                }
            }
            $crate::external_authorization::bindings::__export_external_authorization_plugin!(
                __TrellisPlugin with_types_in $crate::external_authorization::bindings
            );
        };
    };
}
