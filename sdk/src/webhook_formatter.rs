//! The `webhook-formatter` world: turns an event's standard (GitLab) payload into the HTTP
//! request a hook receives, or skips the delivery. Implement [`WebhookFormatter`] and export it
//! with [`crate::export_webhook_formatter!`].

use serde::de::DeserializeOwned;

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

pub use bindings::exports::trellis::policy::webhook_formatter::{
    WebhookEvent as Event, WebhookRequest as Request,
};

/// A webhook-formatter plugin.
pub trait WebhookFormatter {
    /// The binding's configuration (`{}` or no configuration gives `Default`).
    type Config: DeserializeOwned + Default;

    /// Checks a configuration beyond what deserialisation checks.
    fn validate(_config: &Self::Config) -> Result<(), String> {
        Ok(())
    }

    /// The request to send (its headers are added to the host's, its body replaces the
    /// payload), or `None` to skip this delivery. An `Err` is a failure: the binding's failure
    /// policy decides (fail open sends the standard payload).
    fn format(config: &Self::Config, event: &Event) -> Result<Option<Request>, String>;
}

#[doc(hidden)]
pub fn __validate<T: WebhookFormatter>(json: &str) -> Result<(), String> {
    T::validate(&crate::config::parse(json)?)
}

#[doc(hidden)]
pub fn __format<T: WebhookFormatter>(event: Event) -> Result<Option<Request>, String> {
    T::format(&crate::config::current()?, &event)
}

/// Exports a [`WebhookFormatter`] implementation (on WebAssembly only).
#[macro_export]
macro_rules! export_webhook_formatter {
    ($plugin:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            struct __TrellisPlugin;
            impl $crate::webhook_formatter::bindings::exports::trellis::policy::webhook_formatter::Guest
                for __TrellisPlugin
            {
                fn format(
                    event: $crate::webhook_formatter::Event,
                ) -> ::core::result::Result<
                    ::core::option::Option<$crate::webhook_formatter::Request>,
                    ::std::string::String,
                > {
                    $crate::webhook_formatter::__format::<$plugin>(event)
                }
            }
            impl $crate::webhook_formatter::bindings::exports::trellis::policy::configurable::Guest
                for __TrellisPlugin
            {
                fn validate_config(
                    config: ::std::string::String,
                ) -> ::core::result::Result<(), ::std::string::String> {
                    $crate::webhook_formatter::__validate::<$plugin>(&config)
                }
            }
            $crate::webhook_formatter::bindings::__export_webhook_formatter_plugin!(
                __TrellisPlugin with_types_in $crate::webhook_formatter::bindings
            );
        };
    };
}
