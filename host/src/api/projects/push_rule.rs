//! A project's push rule (`/projects/:id/push_rule`), GitLab's API: for maintainers, owners
//! and administrators. The rule is enforced on every push by the tenant's `push_rules` plugin
//! binding (`services::push_rules`; the built-in `push-rules` plugin implements every field).

use crate::http::json::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::json;

use super::hooks::{created, managed_project};
use crate::http::error::{ApiError, ApiResult};
use crate::http::params::Params;
use crate::http::request::Api;
pub(super) use crate::model::hooks::PushRuleRow;
use crate::model::hooks::{PUSH_RULE_FLAGS, PUSH_RULE_REGEXES};
use crate::services::push_rules;
use crate::views;
use crate::views::hook::PushRuleView;

/// GitLab's `at_least_one_of` list for push rules.
fn push_rule_params() -> Vec<&'static str> {
    let mut names: Vec<&str> = PUSH_RULE_REGEXES
        .iter()
        .chain(PUSH_RULE_FLAGS)
        .copied()
        .chain(["max_file_size"])
        .collect();
    names.sort_unstable();
    names
}

/// GitLab's limit on a push rule pattern's length (characters).
const MAX_PATTERN_CHARS: usize = 511;

/// The compiled size a pattern may reach: what the built-in push-rules plugin allows by
/// default (its `regex_size_limit`), so a pattern accepted here also compiles there.
const PATTERN_SIZE_LIMIT: usize = 1024 * 1024;

/// GitLab's validations of a push rule pattern: at most 511 characters, and RE2 syntax
/// (`UntrustedRegexpValidator`). Patterns compile with the linear-time `regex` crate within
/// [`PATTERN_SIZE_LIMIT`]; one over it gets RE2's own "pattern too large" message.
fn check_pattern(pattern: &str) -> Result<(), String> {
    if pattern.chars().count() > MAX_PATTERN_CHARS {
        return Err(format!(
            "is too long (maximum is {MAX_PATTERN_CHARS} characters)"
        ));
    }
    match regex::RegexBuilder::new(pattern)
        .size_limit(PATTERN_SIZE_LIMIT)
        .build()
    {
        Ok(_) => Ok(()),
        Err(regex::Error::CompiledTooBig(_)) => {
            Err("not valid RE2 syntax: pattern too large - compile failed".into())
        }
        Err(error) => {
            let reason = error.to_string();
            let reason = reason
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid")
                .trim()
                .trim_start_matches("error: ");
            Err(format!("not valid RE2 syntax: {reason}"))
        }
    }
}

/// Applies the given settings to `rule`. Regexes must pass [`check_pattern`]; blank clears
/// one. `max_file_size` (MB) is an integer of at least 0.
pub(super) fn apply_push_rule_params(params: &Params, rule: &mut PushRuleRow) -> ApiResult<()> {
    let names = push_rule_params();
    if !names.iter().any(|n| params.has(n)) {
        return Err(ApiError::InvalidParam(format!(
            "{} are missing, at least one parameter must be provided",
            names.join(", ")
        )));
    }
    for (name, on) in rule.flags.iter_mut() {
        if let Some(value) = params.bool(name)? {
            *on = value;
        }
    }
    if let Some(size) = params.int("max_file_size")? {
        if size < 0 {
            return Err(ApiError::field(
                "max_file_size",
                "must be greater than or equal to 0",
            ));
        }
        rule.max_file_size = size;
    }
    let mut problems = serde_json::Map::new();
    for (name, regex) in rule.regexes.iter_mut() {
        let Some(given) = params.string(name)? else {
            continue;
        };
        if given.is_empty() {
            *regex = None;
            continue;
        }
        if let Err(problem) = check_pattern(&given) {
            problems.insert((*name).to_string(), json!([problem]));
        }
        *regex = Some(given);
    }
    if !problems.is_empty() {
        return Err(ApiError::Validation(problems));
    }
    Ok(())
}

/// `GET /projects/:id/push_rule`: the rule, or `null` when there is none.
pub async fn show_push_rule(
    Path(id): Path<String>,
    api: Api,
) -> ApiResult<Json<Option<PushRuleView>>> {
    let ctx = managed_project(&api, &id).await?;
    let rule = api.db().push_rule(ctx.project.id).await?;
    Ok(Json(rule.as_ref().map(views::hook::push_rule)))
}

pub async fn create_push_rule(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    let ctx = managed_project(&api, &id).await?;
    let mut rule = PushRuleRow::defaults(ctx.project.id);
    apply_push_rule_params(&api.params, &mut rule)?;
    let row = push_rules::create_rule(api.db(), &rule).await?;
    Ok(created(views::hook::push_rule(&row)))
}

pub async fn update_push_rule(Path(id): Path<String>, api: Api) -> ApiResult<Json<PushRuleView>> {
    let ctx = managed_project(&api, &id).await?;
    let mut rule = api
        .db()
        .push_rule(ctx.project.id)
        .await?
        .ok_or(ApiError::NotFound("Push Rule"))?;
    apply_push_rule_params(&api.params, &mut rule)?;
    let row = push_rules::update_rule(api.db(), &rule).await?;
    Ok(Json(views::hook::push_rule(&row)))
}

/// Idempotent, as the spec says: 204 whether or not a rule existed.
pub async fn delete_push_rule(Path(id): Path<String>, api: Api) -> ApiResult<StatusCode> {
    let ctx = managed_project(&api, &id).await?;
    push_rules::delete_rule(api.db(), ctx.project.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_are_checked_like_gitlab() {
        assert_eq!(check_pattern("^JIRA-\\d+"), Ok(()));
        let invalid = check_pattern("(unclosed").unwrap_err();
        assert!(invalid.starts_with("not valid RE2 syntax: "), "{invalid}");
        assert!(!invalid.ends_with(": "), "{invalid}");
        assert_eq!(
            check_pattern(&"a".repeat(512)),
            Err("is too long (maximum is 511 characters)".into())
        );
        assert_eq!(
            check_pattern("\\w{500}\\w{500}"),
            Err("not valid RE2 syntax: pattern too large - compile failed".into())
        );
        // Lookaround is not RE2.
        assert!(check_pattern("(?=x)").is_err());
    }
}
