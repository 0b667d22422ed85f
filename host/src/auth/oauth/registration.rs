//! Registering an application (web page and admin API alike): validation as Doorkeeper's
//! model validations word it. The writes are `services::oauth`'s.

use serde_json::{Map, Value, json};

use super::{redirect, scopes};
use crate::store::oauth::ApplicationFields;

/// Field errors by attribute (`name`, `redirect_uri`, `scopes`), each a list of messages.
pub type FieldErrors = Map<String, Value>;

fn add(errors: &mut FieldErrors, field: &str, message: &str) {
    let entry = errors.entry(field.to_string()).or_insert_with(|| json!([]));
    if let Value::Array(list) = entry {
        list.push(json!(message));
    }
}

/// Checks an application's fields; `scopes` are space-separated.
pub fn validate(fields: &ApplicationFields<'_>) -> Result<(), FieldErrors> {
    let mut errors = FieldErrors::new();
    if fields.name.trim().is_empty() {
        add(&mut errors, "name", "can't be blank");
    } else if fields.name.chars().count() > 255 {
        add(
            &mut errors,
            "name",
            "is too long (maximum is 255 characters)",
        );
    }
    let uris: Vec<&str> = fields
        .redirect_uri
        .split_whitespace()
        .filter(|l| !l.is_empty())
        .collect();
    if uris.is_empty() {
        add(&mut errors, "redirect_uri", "can't be blank");
    }
    for uri in uris {
        if let Some(problem) = redirect::registration_error(uri) {
            add(&mut errors, "redirect_uri", problem);
            break;
        }
    }
    let asked = scopes::parse(fields.scopes);
    if asked.is_empty() {
        add(&mut errors, "scopes", "can't be blank");
    } else if !asked.iter().all(|s| scopes::is_known(s)) {
        add(
            &mut errors,
            "scopes",
            "doesn't match configured on the server.",
        );
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Redirect URIs as stored: one per line, whitespace-separated on input.
pub fn normalize_uris(input: &str) -> String {
    input.split_whitespace().collect::<Vec<_>>().join("\n")
}
