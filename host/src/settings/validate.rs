//! Turning a PUT's parameters into a settings update: type coercion (400 `{"error": "x is
//! invalid"}`), enumerations (400 `{"error": "x does not have a valid value"}`), and the
//! model rules checked on the merged result of stored values and the update (400
//! `{"message": {"field": ["problem"]}}`). Nothing is written unless everything passes.

use serde_json::{Map, Value, json};

use super::catalog::{CATALOG, CHOICES, Entry, Kind, canonical, default_of, entry as entry_of};
use crate::model::visibility::Visibility;
use crate::services::Refusal;

/// A validated update: canonical name → new value. Secrets hold their plaintext (the
/// caller encrypts them); `Value::Null` on a secret means "clear it".
pub type Update = Map<String, Value>;

/// "If enabled requires X": the flag and the settings that must not be blank when it is on.
pub const REQUIRES: &[(&str, &[&str])] = &[
    ("spam_filter_enabled", &["spam_filter_api_key"]),
    (
        "housekeeping_enabled",
        &[
            "housekeeping_full_repack_period",
            "housekeeping_gc_period",
            "housekeeping_incremental_repack_period",
        ],
    ),
    (
        "throttle_authenticated_api_enabled",
        &[
            "throttle_authenticated_api_period_in_seconds",
            "throttle_authenticated_api_requests_per_period",
        ],
    ),
    (
        "throttle_authenticated_web_enabled",
        &[
            "throttle_authenticated_web_period_in_seconds",
            "throttle_authenticated_web_requests_per_period",
        ],
    ),
    (
        "throttle_authenticated_packages_api_enabled",
        &[
            "throttle_authenticated_packages_api_period_in_seconds",
            "throttle_authenticated_packages_api_requests_per_period",
        ],
    ),
    (
        "throttle_unauthenticated_api_enabled",
        &[
            "throttle_unauthenticated_api_period_in_seconds",
            "throttle_unauthenticated_api_requests_per_period",
        ],
    ),
    (
        "throttle_unauthenticated_web_enabled",
        &[
            "throttle_unauthenticated_web_period_in_seconds",
            "throttle_unauthenticated_web_requests_per_period",
        ],
    ),
    (
        "throttle_protected_paths_enabled",
        &[
            "throttle_protected_paths_period_in_seconds",
            "throttle_protected_paths_requests_per_period",
        ],
    ),
    (
        "throttle_unauthenticated_packages_api_enabled",
        &[
            "throttle_unauthenticated_packages_api_period_in_seconds",
            "throttle_unauthenticated_packages_api_requests_per_period",
        ],
    ),
    (
        "require_two_factor_authentication",
        &["two_factor_grace_period"],
    ),
    (
        "external_authorization_service_enabled",
        &[
            "external_authorization_service_url",
            "external_authorization_service_default_label",
            "external_authorization_service_timeout",
        ],
    ),
    (
        "captcha_enabled",
        &["captcha_private_key", "captcha_site_key"],
    ),
    ("asset_proxy_enabled", &["asset_proxy_url"]),
    ("domain_denylist_enabled", &["domain_denylist"]),
    ("enforce_terms", &["terms"]),
    ("diagram_renderer_enabled", &["diagram_renderer_url"]),
    ("code_intel_enabled", &["code_intel_url"]),
    (
        "analytics_tracking_enabled",
        &["analytics_tracking_collector_hostname"],
    ),
    (
        "chat_app_enabled",
        &[
            "chat_app_id",
            "chat_app_secret",
            "chat_app_verification_token",
        ],
    ),
    (
        "unique_ips_limit_enabled",
        &["unique_ips_limit_per_user", "unique_ips_limit_time_window"],
    ),
    (
        "shared_runners_enabled",
        &["shared_runners_text", "shared_runners_minutes"],
    ),
    ("external_auth_client_cert", &["external_auth_client_key"]),
];

/// Allowed values of each SSH key restriction besides 0 (no restriction) and -1 (forbidden).
const KEY_SIZES: &[(&str, &[i64])] = &[
    ("dsa_key_restriction", &[1024, 2048, 3072]),
    ("rsa_key_restriction", &[1024, 2048, 3072, 4096]),
    ("ecdsa_key_restriction", &[256, 384, 521]),
    ("ecdsa_sk_key_restriction", &[256]),
    ("ed25519_key_restriction", &[256]),
    ("ed25519_sk_key_restriction", &[256]),
];

/// The input of `PUT /application/settings` (and the admin console's settings forms): every
/// setting of the catalog the parameters give, coerced to its kind and checked against its
/// enumeration, keyed by canonical name. The model rules need the stored values, so they run
/// later, on the merged result (`validate`).
#[derive(Debug, Clone)]
pub struct SettingsUpdate(Update);

impl SettingsUpdate {
    pub fn parse(params: &impl SettingParams) -> Result<SettingsUpdate, Refusal> {
        let mut update = coerce(params)?;
        check_enums(&mut update)?;
        Ok(SettingsUpdate(update))
    }
}

/// The request parameters as the settings read them. The HTTP layer's parameters implement
/// it with Grape's coercions.
pub trait SettingParams {
    fn has(&self, name: &str) -> bool;
    fn raw(&self, name: &str) -> Option<&Value>;
    fn bool(&self, name: &str) -> Result<Option<bool>, NotThatKind>;
    fn int(&self, name: &str) -> Result<Option<i64>, NotThatKind>;
    fn float(&self, name: &str) -> Result<Option<f64>, NotThatKind>;
    fn string(&self, name: &str) -> Result<Option<String>, NotThatKind>;
    fn string_list(&self, name: &str) -> Result<Option<Vec<String>>, NotThatKind>;
    fn int_list(&self, name: &str) -> Result<Option<Vec<i64>>, NotThatKind>;
    fn object(&self, name: &str) -> Result<Option<&Map<String, Value>>, NotThatKind>;
}

/// A parameter that cannot be read as the kind asked for.
pub struct NotThatKind;

/// Checks `update` against `stored` (canonical name → stored value; secrets as stored, only
/// their presence matters): the changes to apply.
pub fn validate(update: &SettingsUpdate, stored: &Map<String, Value>) -> Result<Update, Refusal> {
    let mut update = update.0.clone();
    check_rules(&mut update, stored)?;
    Ok(update)
}

/// Types: every known setting in the parameters, in its kind. Deprecated aliases first, so
/// that the replacement wins when both are given; unknown keys are ignored.
fn coerce(params: &impl SettingParams) -> Result<Update, Refusal> {
    let mut update = Update::new();
    let mut invalid = Vec::new();
    let aliases = CATALOG.iter().filter(|e| e.alias_of.is_some());
    let others = CATALOG.iter().filter(|e| e.alias_of.is_none());
    for entry in aliases.chain(others) {
        if !params.has(entry.name) {
            continue;
        }
        let target = entry_of(canonical(entry.name)).unwrap_or(entry);
        match coerce_one(params, entry, target) {
            Ok(Some(value)) => {
                update.insert(target.name.to_string(), value);
            }
            Ok(None) => {}
            Err(()) => invalid.push(format!("{} is invalid", entry.name)),
        }
    }
    if invalid.is_empty() {
        Ok(update)
    } else {
        Err(Refusal::InvalidParam(invalid.join(", ")))
    }
}

/// `Ok(None)`: nothing to change (a `null` secret, so that a GET → PUT round trip keeps it).
fn coerce_one(
    params: &impl SettingParams,
    entry: &Entry,
    target: &Entry,
) -> Result<Option<Value>, ()> {
    let name = entry.name;
    let raw = params.raw(name);
    let blank = match raw {
        None => true,
        Some(Value::String(s)) => s.trim().is_empty() && !matches!(target.kind, Kind::Str),
        _ => false,
    };
    if target.secret {
        return Ok(match raw {
            None => None,
            Some(Value::String(s)) if s.is_empty() => Some(Value::Null),
            Some(_) => Some(Value::String(
                params.string(name).map_err(|_| ())?.unwrap_or_default(),
            )),
        });
    }
    if blank {
        return match target.kind {
            Kind::Bool => Err(()),
            Kind::StrList | Kind::IntList if raw.is_some() => Ok(Some(json!([]))),
            Kind::IntMap => Err(()),
            _ => Ok(Some(Value::Null)),
        };
    }
    let value = match target.kind {
        Kind::Bool => json!(params.bool(name).map_err(|_| ())?),
        Kind::Int => json!(params.int(name).map_err(|_| ())?),
        Kind::Float => json!(params.float(name).map_err(|_| ())?),
        Kind::Str => match raw {
            Some(Value::String(_) | Value::Number(_) | Value::Bool(_)) => {
                json!(params.string(name).map_err(|_| ())?)
            }
            _ => return Err(()),
        },
        Kind::StrList => json!(params.string_list(name).map_err(|_| ())?),
        Kind::IntList => json!(params.int_list(name).map_err(|_| ())?),
        Kind::IntMap => {
            let map = params.object(name).map_err(|_| ())?.ok_or(())?;
            let mut out = Map::new();
            for (key, value) in map {
                let n = match value {
                    Value::Number(n) => n.as_i64(),
                    Value::String(s) => s.trim().parse().ok(),
                    _ => None,
                }
                .ok_or(())?;
                out.insert(key.clone(), json!(n));
            }
            Value::Object(out)
        }
    };
    Ok(Some(value))
}

fn not_valid(name: &str) -> Refusal {
    Refusal::InvalidParam(format!("{name} does not have a valid value"))
}

/// Enumerations ([`CHOICES`]), answered as Grape answers `values:` violations.
fn check_enums(update: &mut Update) -> Result<(), Refusal> {
    // Git access takes `nil` (or nothing) for both protocols.
    if let Some(value) = update.get("enabled_git_access_protocol")
        && matches!(value.as_str().map(str::trim), None | Some("" | "nil"))
    {
        update.insert("enabled_git_access_protocol".into(), Value::Null);
    }
    for (name, choices) in CHOICES {
        let allowed = |text: &str| choices.iter().any(|(value, _)| *value == text);
        let valid = match update.get(*name) {
            None => true,
            Some(Value::Null) => allowed(""),
            Some(Value::String(s)) => allowed(s),
            Some(Value::Number(n)) => allowed(&n.to_string()),
            Some(_) => false,
        };
        if !valid {
            return Err(not_valid(name));
        }
    }
    Ok(())
}

fn is_blank(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        _ => false,
    }
}

/// The merged value of a setting (canonical name): the update, else the stored value, else the default.
/// Numeric settings with a range: name, minimum, maximum, GitLab's message.
const RANGES: &[(&str, f64, f64, &str)] = &[
    (
        "deletion_adjourned_period",
        1.0,
        90.0,
        "must be between 1 and 90 (0 turns delayed deletion off)",
    ),
    (
        "external_authorization_service_timeout",
        0.001,
        10.0,
        "must be between 0.001 and 10",
    ),
    (
        "wiki_page_max_content_bytes",
        1024.0,
        f64::MAX,
        "must be greater than or equal to 1024",
    ),
];

fn merged(update: &Update, stored: &Map<String, Value>, name: &str) -> Value {
    update
        .get(name)
        .or_else(|| stored.get(name))
        .cloned()
        .unwrap_or_else(|| default_of(name))
}

/// Parses a job expiry such as `15 days`, `1 month`, `2 years`, `3h 5m` into seconds.
pub fn parse_duration(text: &str) -> Option<f64> {
    let lower = text
        .trim()
        .to_ascii_lowercase()
        .replace(',', " ")
        .replace(" and ", " ");
    let mut total = 0.0;
    let mut rest = lower.trim();
    let mut any = false;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if number_len == 0 {
            return None;
        }
        let number: f64 = rest[..number_len].parse().ok()?;
        rest = rest[number_len..].trim_start();
        let unit_len = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = rest[unit_len..].trim_start();
        let seconds = match unit {
            "" | "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
            "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3600.0,
            "d" | "day" | "days" => 86400.0,
            "w" | "wk" | "wks" | "week" | "weeks" => 7.0 * 86400.0,
            "mo" | "mon" | "mos" | "mons" | "month" | "months" => 30.0 * 86400.0,
            "y" | "yr" | "yrs" | "year" | "years" => 365.25 * 86400.0,
            _ => return None,
        };
        total += number * seconds;
        any = true;
    }
    any.then_some(total)
}

/// Model rules on the merged result, collected into one field map.
fn check_rules(update: &mut Update, stored: &Map<String, Value>) -> Result<(), Refusal> {
    let mut errors: Vec<(&'static str, String)> = Vec::new();
    let mut fail = |field: &'static str, message: String| {
        if !errors.iter().any(|(f, m)| *f == field && *m == message) {
            errors.push((field, message));
        }
    };

    // deletion_adjourned_period: 0 turns both delayed deletion flags off (the period is kept).
    if update
        .get("deletion_adjourned_period")
        .and_then(Value::as_i64)
        == Some(0)
    {
        update.remove("deletion_adjourned_period");
        update.insert("delayed_project_deletion".into(), json!(false));
        update.insert("delayed_group_deletion".into(), json!(false));
    }

    // Non-null integers and numbers: GitLab's columns are NOT NULL where a default exists.
    for (name, value) in update.iter() {
        let Some(entry) = entry_of(name) else {
            continue;
        };
        if entry.secret {
            continue;
        }
        if matches!(entry.kind, Kind::Int | Kind::Float)
            && value.is_null()
            && !default_of(name).is_null()
        {
            fail(entry.name, "can't be blank".into());
        }
        let is_key_restriction = KEY_SIZES.iter().any(|(key, _)| key == name);
        if matches!(entry.kind, Kind::Int | Kind::Float)
            && !is_key_restriction
            && value.as_f64().is_some_and(|n| n < 0.0)
        {
            fail(entry.name, "must be greater than or equal to 0".into());
        }
    }

    for (name, min, max, message) in RANGES {
        if let Some(value) = update.get(*name).and_then(Value::as_f64)
            && !(*min..=*max).contains(&value)
        {
            fail(name, (*message).into());
        }
    }
    if merged(update, stored, "delayed_project_deletion") == json!(true)
        && merged(update, stored, "delayed_group_deletion") != json!(true)
    {
        fail(
            "delayed_project_deletion",
            "can only be enabled when delayed_group_deletion is true".into(),
        );
    }
    if let Some(Value::String(text)) = update.get("archive_builds_in_human_readable")
        && !text.trim().is_empty()
    {
        match parse_duration(text) {
            None => fail(
                "archive_builds_in_human_readable",
                "is not a correctly formatted duration".into(),
            ),
            Some(seconds) if seconds < 86400.0 => fail(
                "archive_builds_in_human_readable",
                "must be at least 1 day".into(),
            ),
            Some(_) => {}
        }
    }
    for (name, sizes) in KEY_SIZES {
        if let Some(value) = update.get(*name).and_then(Value::as_i64)
            && !(value == 0 || value == -1 || sizes.contains(&value))
        {
            let sizes: Vec<String> = sizes.iter().map(i64::to_string).collect();
            fail(
                name,
                format!(
                    "must be 0 (no restriction), -1 (forbidden) or one of {}",
                    sizes.join(", ")
                ),
            );
        }
    }
    if let Some(Value::Array(levels)) = update.get("restricted_visibility_levels").cloned() {
        let mut names = Vec::new();
        for level in &levels {
            let name = match level
                .as_str()
                .and_then(|text| Visibility::named_or_numbered(text.trim()))
            {
                Some(visibility) => visibility.as_str(),
                None => {
                    fail(
                        "restricted_visibility_levels",
                        format!(
                            "'{}' is not a valid visibility level",
                            level.as_str().unwrap_or("?")
                        ),
                    );
                    continue;
                }
            };
            if !names.contains(&name) {
                names.push(name);
            }
        }
        update.insert("restricted_visibility_levels".into(), json!(names));
    }
    if let Some(Value::String(url)) = update.get("spam_check_endpoint_url")
        && !url.trim().is_empty()
        && !(url.starts_with("grpc://") || url.starts_with("tls://"))
    {
        fail(
            "spam_check_endpoint_url",
            "is blocked: Only allowed schemes are grpc, tls".into(),
        );
    }

    // "If enabled requires X", when the flag or one of its requirements is being changed.
    for (flag, required) in REQUIRES {
        let touched =
            update.contains_key(*flag) || required.iter().any(|r| update.contains_key(*r));
        if !touched {
            continue;
        }
        let on = match merged(update, stored, flag) {
            Value::Bool(b) => b,
            Value::String(s) => !s.trim().is_empty(),
            _ => false,
        };
        if !on {
            continue;
        }
        for name in *required {
            if is_blank(&merged(update, stored, name)) {
                fail(name, "can't be blank".into());
            }
        }
    }

    if errors.is_empty() {
        Ok(())
    } else {
        Err(Refusal::Fields(errors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::params::Params;

    fn params(body: Value) -> Params {
        match body {
            Value::Object(map) => Params::from_json_object(map),
            _ => unreachable!(),
        }
    }

    fn run(body: Value) -> Result<Update, Refusal> {
        validate(&SettingsUpdate::parse(&params(body))?, &Map::new())
    }

    fn fields(result: Result<Update, Refusal>) -> Vec<String> {
        match result {
            Err(Refusal::Fields(fields)) => {
                let mut names: Vec<String> = fields.iter().map(|(f, _)| f.to_string()).collect();
                names.sort();
                names.dedup();
                names
            }
            other => panic!("expected a field map, got {other:?}"),
        }
    }

    #[test]
    fn types_are_checked() {
        match run(json!({"default_projects_limit": "lots"})) {
            Err(Refusal::InvalidParam(m)) => assert_eq!(m, "default_projects_limit is invalid"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            run(json!({"signup_enabled": "maybe"})),
            Err(Refusal::InvalidParam(_))
        ));
        let ok =
            run(json!({"default_projects_limit": "12", "signup_enabled": "false", "domain_allowlist": "a.com, b.com"}))
                .unwrap();
        assert_eq!(ok["default_projects_limit"], json!(12));
        assert_eq!(ok["signup_enabled"], json!(false));
        assert_eq!(ok["domain_allowlist"], json!(["a.com", "b.com"]));
        assert!(run(json!({"no_such_setting": 1})).unwrap().is_empty());
    }

    #[test]
    fn every_requires_rule_fires_on_blank() {
        for (flag, required) in REQUIRES {
            let mut body = Map::new();
            let flag_value = if *flag == "external_auth_client_cert" {
                json!("CERT")
            } else {
                json!(true)
            };
            body.insert(flag.to_string(), flag_value);
            for name in *required {
                body.insert(name.to_string(), Value::Null);
                // Secrets ignore null: clear them with "".
                if entry_of(name).unwrap().secret {
                    body.insert(name.to_string(), json!(""));
                }
            }
            let mut got = fields(run(Value::Object(body)));
            got.sort();
            let mut want: Vec<String> = required.iter().map(|s| s.to_string()).collect();
            want.sort();
            assert_eq!(got, want, "{flag}");
        }
    }

    #[test]
    fn requirement_may_come_from_storage() {
        let mut stored = Map::new();
        stored.insert("terms".into(), json!("Be nice"));
        let update = SettingsUpdate::parse(&params(json!({"enforce_terms": true}))).unwrap();
        assert!(validate(&update, &stored).is_ok());
        assert_eq!(fields(run(json!({"enforce_terms": true}))), vec!["terms"]);
    }

    #[test]
    fn ranges_and_enums() {
        assert_eq!(
            fields(run(json!({"deletion_adjourned_period": 91}))),
            vec!["deletion_adjourned_period"]
        );
        let zero = run(json!({"deletion_adjourned_period": 0})).unwrap();
        assert_eq!(zero["delayed_group_deletion"], json!(false));
        assert_eq!(zero["delayed_project_deletion"], json!(false));
        assert!(!zero.contains_key("deletion_adjourned_period"));
        assert_eq!(
            fields(run(
                json!({"delayed_project_deletion": true, "delayed_group_deletion": false})
            )),
            vec!["delayed_project_deletion"]
        );
        assert!(run(json!({"delayed_project_deletion": true})).is_ok());
        assert_eq!(
            fields(run(json!({"external_authorization_service_timeout": 11}))),
            vec!["external_authorization_service_timeout"]
        );
        assert!(run(json!({"external_authorization_service_timeout": 0.001})).is_ok());
        assert_eq!(
            fields(run(json!({"wiki_page_max_content_bytes": 1023}))),
            vec!["wiki_page_max_content_bytes"]
        );
        assert_eq!(
            fields(run(json!({"archive_builds_in_human_readable": "3 hours"}))),
            vec!["archive_builds_in_human_readable"]
        );
        assert!(run(json!({"archive_builds_in_human_readable": "2 years"})).is_ok());
        assert!(run(json!({"archive_builds_in_human_readable": ""})).is_ok());
        assert_eq!(
            fields(run(json!({"rsa_key_restriction": 1000}))),
            vec!["rsa_key_restriction"]
        );
        assert!(run(json!({"rsa_key_restriction": -1, "ed25519_key_restriction": 256})).is_ok());
        assert!(matches!(
            run(json!({"first_day_of_week": 2})),
            Err(Refusal::InvalidParam(_))
        ));
        assert!(matches!(
            run(json!({"whats_new_variant": "x"})),
            Err(Refusal::InvalidParam(_))
        ));
        assert!(matches!(
            run(json!({"default_project_visibility": "secret"})),
            Err(Refusal::InvalidParam(_))
        ));
        assert!(matches!(
            run(json!({"enabled_git_access_protocol": "ftp"})),
            Err(Refusal::InvalidParam(_))
        ));
        assert_eq!(
            run(json!({"enabled_git_access_protocol": ""})).unwrap()["enabled_git_access_protocol"],
            Value::Null
        );
        assert_eq!(
            run(json!({"restricted_visibility_levels": ["public", "10"]})).unwrap()["restricted_visibility_levels"],
            json!(["public", "internal"])
        );
        assert_eq!(
            fields(run(json!({"spam_check_endpoint_url": "http://x"}))),
            vec!["spam_check_endpoint_url"]
        );
        assert_eq!(
            fields(run(json!({"default_projects_limit": -1}))),
            vec!["default_projects_limit"]
        );
    }

    #[test]
    fn aliases_write_their_replacement_and_the_replacement_wins() {
        let update = run(json!({"signin_enabled": false, "user_email_lookup_limit": 5})).unwrap();
        assert_eq!(
            update["password_authentication_enabled_for_web"],
            json!(false)
        );
        assert_eq!(update["search_rate_limit"], json!(5));
        assert!(!update.contains_key("signin_enabled"));
        let both =
            run(json!({"admin_notification_email": "a@x", "abuse_notification_email": "b@x"}))
                .unwrap();
        assert_eq!(both["abuse_notification_email"], json!("b@x"));
        let list = run(json!({"asset_proxy_whitelist": "a.com,*.b.com"})).unwrap();
        assert_eq!(list["asset_proxy_allowlist"], json!(["a.com", "*.b.com"]));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1 day"), Some(86400.0));
        assert_eq!(parse_duration("2d 1h"), Some(2.0 * 86400.0 + 3600.0));
        assert_eq!(parse_duration("soon"), None);
    }
}
