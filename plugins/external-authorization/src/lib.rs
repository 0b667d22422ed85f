//! Trellis's built-in external authorization: GitLab's protocol
//! (`Gitlab::ExternalAuthorization::Client`). The plugin POSTs
//! `{"user_identifier", "project_classification_label", "identities", "user_ldap_dn"?}` as JSON
//! to the configured URL; `200` grants access, any other status refuses it with the `reason`
//! of the JSON body. A request that fails (refused address, timeout, connection error) is an
//! error, which the host treats as a refusal.
//!
//! WebAssembly only (see Cargo.toml); its behaviour is tested end to end
//! (tests/e2e/test_external_auth.py).
#![cfg(target_arch = "wasm32")]

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use trellis_sdk::external_authorization::{
    Decision, ExternalAuthorization, Request, outbound_http,
};

/// `{"url": "http://auth.example.com/authorize"}` (the host fills it from
/// `external_authorization_service_url` when it binds the plugin itself).
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub url: String,
}

pub struct GitLabProtocol;

impl ExternalAuthorization for GitLabProtocol {
    type Config = Config;

    fn validate(config: &Config) -> Result<(), String> {
        if config.url.starts_with("http://") || config.url.starts_with("https://") {
            Ok(())
        } else {
            Err("url must be an http or https URL".into())
        }
    }

    fn authorize(config: &Config, request: &Request) -> Result<Decision, String> {
        let answer = outbound_http::send(&outbound_http::Request {
            method: "POST".into(),
            url: config.url.clone(),
            headers: vec![
                ("Content-Type".into(), "application/json".into()),
                ("Accept".into(), "application/json".into()),
            ],
            body: body(request).to_string().into_bytes(),
        })?;
        Ok(decision(answer.status, &answer.body))
    }
}

trellis_sdk::export_external_authorization!(GitLabProtocol);

/// GitLab's request body: the user's e-mail as identifier, the label, the user's identities,
/// and the LDAP DN when the user has an LDAP identity.
pub fn body(request: &Request) -> Value {
    let identities: Vec<Value> = request
        .identities
        .iter()
        .map(|i| json!({"provider": i.provider, "extern_uid": i.extern_uid}))
        .collect();
    let mut body = json!({
        "user_identifier": request.user_email.clone().unwrap_or_default(),
        "project_classification_label": request.classification_label,
        "identities": identities,
    });
    if let Some(ldap) = request
        .identities
        .iter()
        .find(|i| i.provider.starts_with("ldap"))
    {
        body["user_ldap_dn"] = json!(ldap.extern_uid);
    }
    body
}

/// `200` is access; anything else a refusal with the body's `reason` when it has one.
pub fn decision(status: u16, body: &[u8]) -> Decision {
    if status == 200 {
        return Decision::allow();
    }
    let reason = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("reason")?.as_str().map(str::to_string))
        .unwrap_or_default();
    Decision::refuse(reason)
}
