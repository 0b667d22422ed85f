//! Test fixture for the plugin host's limits, external-authorization world: the misbehaviours
//! of tests/plugins/hostile (the same `{"mode": ...}`); otherwise it allows access.
#![cfg(target_arch = "wasm32")]

#[path = "../../hostile/src/misbehave.rs"]
mod misbehave;

use misbehave::Config;
use trellis_sdk::external_authorization::{Decision, ExternalAuthorization, Request};

pub struct HostileAuth;

impl ExternalAuthorization for HostileAuth {
    type Config = Config;

    fn validate(config: &Config) -> Result<(), String> {
        misbehave::validate(config)
    }

    fn authorize(config: &Config, _request: &Request) -> Result<Decision, String> {
        match misbehave::misbehave(config, trellis_sdk::log::warn) {
            Some(text) => Ok(Decision::refuse(text)),
            None => Ok(Decision::allow()),
        }
    }
}

trellis_sdk::export_external_authorization!(HostileAuth);
