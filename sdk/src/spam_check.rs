//! The `spam-check` world: GitLab's spam verdicts for issues, merge requests, notes, snippets.

use serde::de::DeserializeOwned;

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit/since_v0.1.0",
        world: "spam-check-plugin",
        with: {
            "trellis:policy/types@0.1.0": crate::host_bindings::trellis::policy::types,
            "trellis:policy/host@0.1.0": crate::host_bindings::trellis::policy::host,
        },
        pub_export_macro: true,
        export_macro_name: "__export_spam_check_plugin",
        default_bindings_module: "trellis_sdk::spam_check::bindings",
    });
}

pub use bindings::exports::trellis::policy::spam_check::{
    SpamInput as Input, SpammableKind, Verdict, VerdictKind,
};

impl Verdict {
    fn new(kind: VerdictKind, reason: impl Into<String>) -> Self {
        Verdict {
            kind,
            reason: reason.into(),
        }
    }
    pub fn allow(reason: impl Into<String>) -> Self {
        Self::new(VerdictKind::Allow, reason)
    }
    pub fn conditional_allow(reason: impl Into<String>) -> Self {
        Self::new(VerdictKind::ConditionalAllow, reason)
    }
    pub fn disallow(reason: impl Into<String>) -> Self {
        Self::new(VerdictKind::Disallow, reason)
    }
    pub fn block_user(reason: impl Into<String>) -> Self {
        Self::new(VerdictKind::BlockUser, reason)
    }
    pub fn noop(reason: impl Into<String>) -> Self {
        Self::new(VerdictKind::Noop, reason)
    }
}

/// A spam-check plugin.
pub trait SpamCheck {
    /// The binding's configuration (`{}` or no configuration gives `Default`).
    type Config: DeserializeOwned + Default;

    /// Checks a configuration beyond what deserialisation checks (ranges, patterns...).
    fn validate(_config: &Self::Config) -> Result<(), String> {
        Ok(())
    }

    /// The verdict on one object; an `Err` counts as a plugin failure (the binding's failure
    /// policy decides).
    fn check(config: &Self::Config, input: &Input) -> Result<Verdict, String>;
}

#[doc(hidden)]
pub fn __validate<T: SpamCheck>(json: &str) -> Result<(), String> {
    T::validate(&crate::config::parse(json)?)
}

#[doc(hidden)]
pub fn __check<T: SpamCheck>(input: Input) -> Result<Verdict, String> {
    T::check(&crate::config::current()?, &input)
}

/// Exports a [`SpamCheck`] implementation as the plugin's `spam-check` world. Only on
/// WebAssembly: built natively (for unit tests) the crate exports nothing.
#[macro_export]
macro_rules! export_spam_check {
    ($plugin:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            struct __TrellisPlugin;
            impl $crate::spam_check::bindings::exports::trellis::policy::spam_check::Guest
                for __TrellisPlugin
            {
                fn check(
                    input: $crate::spam_check::Input,
                ) -> ::core::result::Result<$crate::spam_check::Verdict, ::std::string::String>
                {
                    $crate::spam_check::__check::<$plugin>(input)
                }
            }
            impl $crate::spam_check::bindings::exports::trellis::policy::configurable::Guest
                for __TrellisPlugin
            {
                fn validate_config(
                    config: ::std::string::String,
                ) -> ::core::result::Result<(), ::std::string::String> {
                    $crate::spam_check::__validate::<$plugin>(&config)
                }
            }
            $crate::spam_check::bindings::__export_spam_check_plugin!(
                __TrellisPlugin with_types_in $crate::spam_check::bindings
            );
        };
    };
}
