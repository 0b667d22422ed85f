//! Which limits a request falls under, as GitLab decides it (Rack::Attack's request matchers
//! in `lib/gitlab/rack_attack/request.rb` for the `throttle_*` groups, and the application
//! rate limits its endpoints check): a pure function of the request and the settings, so it is
//! unit-tested without a server.

use axum::http::Method;

use crate::settings::Settings;
use crate::settings::keys::{self, IntSetting, Throttle};

/// The route template of issue creation. Trellis has no issues yet; the rule matches the
/// template axum reports as `MatchedPath`, so it applies as soon as the route exists.
pub const ISSUES_CREATE_ROUTE: &str = "/api/v4/projects/{id}/issues";

/// Blame requests a user may make a minute (per user with a token, per IP without). GitLab
/// has no setting for blame; these are its search defaults (`search_rate_limit` 30,
/// `search_rate_limit_unauthenticated` 10), its limits for the other per-caller expensive read.
const BLAME_LIMIT: i64 = 30;
const BLAME_LIMIT_UNAUTHENTICATED: i64 = 10;

/// What GitLab's Rack::Attack tells apart by path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathClass {
    /// `/-/health`, `/-/liveness`, `/-/readiness`, `/-/metrics`: never limited.
    Health,
    /// `/api/...`, and `/oauth/` anywhere in the path (GitLab's `API_PATH_REGEX`).
    Api,
    /// Everything else (uploads, OAuth pages of other forms, raw files, the web UI).
    Web,
}

pub fn classify(path: &str) -> PathClass {
    if is_health(path) {
        PathClass::Health
    } else if path.starts_with("/api/") || path.contains("/oauth/") {
        PathClass::Api
    } else {
        PathClass::Web
    }
}

fn is_health(path: &str) -> bool {
    ["/-/health", "/-/liveness", "/-/readiness", "/-/metrics"]
        .iter()
        .any(|prefix| path.starts_with(prefix))
}

/// `/api/vN/internal/...`: GitLab skips it for unauthenticated throttles (Trellis has none).
fn is_internal_api(path: &str) -> bool {
    path.strip_prefix("/api/v")
        .and_then(|rest| rest.split_once('/'))
        .is_some_and(|(version, rest)| {
            !version.is_empty()
                && version.bytes().all(|b| b.is_ascii_digit())
                && rest.starts_with("internal/")
        })
}

/// The package registry API: `/api/v4/packages/...`, `/api/v4/projects/:id/packages/...`,
/// `/api/v4/groups/:id/-/packages/...` (GitLab's `Gitlab::Regex::Packages::API_PATH_REGEX`).
pub fn is_packages_api(path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/api/v4/") else {
        return false;
    };
    if rest.starts_with("packages/") {
        return true;
    }
    let segment_then = |rest: &str, prefix: &str, tail: &str| {
        rest.strip_prefix(prefix)
            .and_then(|r| r.split_once('/'))
            .is_some_and(|(id, after)| !id.is_empty() && after.starts_with(tail))
    };
    segment_then(rest, "projects/", "packages/")
        || segment_then(rest, "groups/", "-/packages/")
        || segment_then(rest, "group/", "-/packages/")
}

/// A raw file of a repository: on the web, `/:namespace/:project/-/raw/:ref/:path`
/// (namespaces may nest), and through the API, `/api/v4/projects/:id/repository/blobs/:sha/raw`
/// and `.../repository/files/:file_path/raw`. GitLab counts these per path, for all callers
/// together.
pub fn is_raw_blob(method: &Method, path: &str) -> bool {
    if !matches!(*method, Method::GET | Method::HEAD) {
        return false;
    }
    match classify(path) {
        PathClass::Web => is_web_raw_blob(path),
        PathClass::Api => is_api_raw_blob(path),
        PathClass::Health => false,
    }
}

fn is_web_raw_blob(path: &str) -> bool {
    match path.split_once("/-/raw/") {
        Some((project, file)) => {
            project
                .trim_start_matches('/')
                .split('/')
                .filter(|s| !s.is_empty())
                .count()
                >= 2
                && !file.is_empty()
        }
        None => false,
    }
}

fn is_api_raw_blob(path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/api/v4/projects/") else {
        return false;
    };
    let segments: Vec<&str> = rest.split('/').collect();
    matches!(
        segments.as_slice(),
        [id, "repository", "blobs" | "files", name, "raw"] if !id.is_empty() && !name.is_empty()
    )
}

/// A file's blame through the API: `GET`/`HEAD /api/v4/projects/:id/repository/files/:file_path/blame`.
pub fn is_blame(method: &Method, path: &str) -> bool {
    if !matches!(*method, Method::GET | Method::HEAD) {
        return false;
    }
    let Some(rest) = path.strip_prefix("/api/v4/projects/") else {
        return false;
    };
    let segments: Vec<&str> = rest.split('/').collect();
    matches!(
        segments.as_slice(),
        [id, "repository", "files", name, "blame"] if !id.is_empty() && !name.is_empty()
    )
}

/// Whether `path` starts with one of the `protected_paths` (sign-in, password resets, token
/// requests...), as GitLab's `protected_path_regex` matches them.
fn is_protected(settings: &Settings, path: &str) -> bool {
    match settings.get(keys::PROTECTED_PATHS) {
        serde_json::Value::Array(prefixes) => prefixes
            .iter()
            .filter_map(serde_json::Value::as_str)
            .any(|prefix| !prefix.is_empty() && path.starts_with(prefix)),
        _ => false,
    }
}

/// The endpoints GitLab applies `search_rate_limit` to: the search API (`/search`,
/// `/groups/:id/search`, `/projects/:id/search`) and the user search. Lists that merely take a
/// `search` filter (`/groups?search=`, `/projects?search=`) are not throttled by it.
fn is_search_endpoint(path: &str) -> bool {
    let Some(api) = path.strip_prefix("/api/v4/") else {
        return false;
    };
    let api = api.trim_end_matches('/');
    matches!(
        api.split('/').collect::<Vec<_>>().as_slice(),
        ["search"] | ["users"] | ["groups" | "projects", _, "search"]
    )
}

/// Whether the query string carries a non-empty `search` parameter.
pub fn has_search(query: Option<&str>) -> bool {
    query.is_some_and(|q| {
        form_urlencoded::parse(q.as_bytes())
            .any(|(key, value)| key == "search" && !value.is_empty())
    })
}

/// Whom a rule counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    /// Requests with a valid token, per user.
    Authenticated,
    /// Requests without one, per client IP.
    Unauthenticated,
    /// Every request, per request path.
    PerPath,
    /// Every request to the tenant, from anyone (the operator's quota).
    Tenant,
}

/// A limit that applies to a request if its caller is of the right kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// Sent as `RateLimit-Name`.
    pub name: &'static str,
    pub who: Who,
    /// Requests allowed per period.
    pub limit: i64,
    /// Seconds.
    pub period: i64,
}

/// What the limiter knows about a request before it is handled.
#[derive(Debug, Clone, Copy)]
pub struct RequestFacts<'a> {
    pub method: &'a Method,
    pub path: &'a str,
    /// The matched route template, when a route matched.
    pub route: Option<&'a str>,
    pub query: Option<&'a str>,
}

/// A `throttle_<group>_*` setting group, when enabled with a usable period.
fn throttle(settings: &Settings, group: Throttle) -> Option<(i64, i64)> {
    if !settings.get(group.enabled) {
        return None;
    }
    let period = settings.get(group.period)?;
    let limit = settings.get(group.limit)?;
    (period > 0 && limit >= 0).then_some((limit, period))
}

/// A per-minute application limit; 0 (or unset) disables it.
fn per_minute(settings: &Settings, key: IntSetting) -> Option<i64> {
    settings.get(key).filter(|limit| *limit > 0)
}

/// Every rule this request may fall under, in the order they are checked: the Rack::Attack
/// throttles first (as GitLab checks them before routing), then the application limits.
/// Which of the `Authenticated`/`Unauthenticated` ones apply is decided once the caller is
/// known; callers skip the token lookup when this is empty.
pub fn candidates(settings: &Settings, facts: &RequestFacts<'_>) -> Vec<Rule> {
    let mut rules = Vec::new();
    let mut push = |name, who, (limit, period): (i64, i64)| {
        rules.push(Rule {
            name,
            who,
            limit,
            period,
        })
    };
    let path = facts.path;
    match classify(path) {
        PathClass::Health => return Vec::new(),
        PathClass::Api => {
            let packages = is_packages_api(path);
            let (packages_auth, packages_unauth) = if packages {
                (
                    throttle(settings, keys::THROTTLE_AUTHENTICATED_PACKAGES_API),
                    throttle(settings, keys::THROTTLE_UNAUTHENTICATED_PACKAGES_API),
                )
            } else {
                (None, None)
            };
            // A package request falls under the API throttle only while its own is off.
            if let Some(t) = throttle(settings, keys::THROTTLE_UNAUTHENTICATED_API)
                && !is_internal_api(path)
                && !(packages && packages_unauth.is_some())
            {
                push("throttle_unauthenticated_api", Who::Unauthenticated, t);
            }
            if let Some(t) = throttle(settings, keys::THROTTLE_AUTHENTICATED_API)
                && !(packages && packages_auth.is_some())
            {
                push("throttle_authenticated_api", Who::Authenticated, t);
            }
            if packages {
                if let Some(t) = packages_unauth {
                    push(
                        "throttle_unauthenticated_packages_api",
                        Who::Unauthenticated,
                        t,
                    );
                }
                if let Some(t) = packages_auth {
                    push("throttle_authenticated_packages_api", Who::Authenticated, t);
                }
            }
        }
        PathClass::Web => {
            if let Some(t) = throttle(settings, keys::THROTTLE_UNAUTHENTICATED_WEB) {
                push("throttle_unauthenticated_web", Who::Unauthenticated, t);
            }
            if let Some(t) = throttle(settings, keys::THROTTLE_AUTHENTICATED_WEB) {
                push("throttle_authenticated_web", Who::Authenticated, t);
            }
        }
    }
    if *facts.method == Method::POST
        && let Some(t) = throttle(settings, keys::THROTTLE_PROTECTED_PATHS)
        && is_protected(settings, path)
    {
        push(
            "throttle_unauthenticated_protected_paths",
            Who::Unauthenticated,
            t,
        );
        let authenticated = if classify(path) == PathClass::Api {
            "throttle_authenticated_protected_paths_api"
        } else {
            "throttle_authenticated_protected_paths_web"
        };
        push(authenticated, Who::Authenticated, t);
    }
    if *facts.method == Method::POST
        && facts.route == Some(ISSUES_CREATE_ROUTE)
        && let Some(limit) = per_minute(settings, keys::ISSUES_CREATE_LIMIT)
    {
        push("issues_create", Who::Authenticated, (limit, 60));
    }
    if has_search(facts.query) && is_search_endpoint(path) {
        if let Some(limit) = per_minute(settings, keys::SEARCH_RATE_LIMIT) {
            push("search_rate_limit", Who::Authenticated, (limit, 60));
        }
        if let Some(limit) = per_minute(settings, keys::SEARCH_RATE_LIMIT_UNAUTHENTICATED) {
            push(
                "search_rate_limit_unauthenticated",
                Who::Unauthenticated,
                (limit, 60),
            );
        }
    }
    if is_raw_blob(facts.method, path)
        && let Some(limit) = per_minute(settings, keys::RAW_BLOB_REQUEST_LIMIT)
    {
        push("raw_blob", Who::PerPath, (limit, 60));
    }
    if is_blame(facts.method, path) {
        push("blame", Who::Authenticated, (BLAME_LIMIT, 60));
        push(
            "blame_unauthenticated",
            Who::Unauthenticated,
            (BLAME_LIMIT_UNAUTHENTICATED, 60),
        );
    }
    rules
}

/// Whether `rule` applies to a caller who is (`true`) or is not authenticated.
pub fn applies(rule: &Rule, authenticated: bool) -> bool {
    match rule.who {
        Who::Authenticated => authenticated,
        Who::Unauthenticated => !authenticated,
        Who::PerPath | Who::Tenant => true,
    }
}

/// The tenant's requests-per-second quota as a rule (`trellis tenant quota
/// --requests-per-second`), counted over every client of the tenant.
pub fn tenant_quota(requests_per_second: i64) -> Rule {
    Rule {
        name: "tenant_requests_per_second",
        who: Who::Tenant,
        limit: requests_per_second,
        period: 1,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::*;
    use crate::settings::catalog;

    fn settings(values: Value) -> Settings {
        let map: Map<String, Value> = serde_json::from_value(values).unwrap();
        Settings::from_stored(1, 0, 0, &Value::Object(map).to_string())
    }

    /// The rules a request meets.
    fn rules(
        settings: &Settings,
        method: Method,
        path: &str,
        route: Option<&str>,
        query: Option<&str>,
    ) -> Vec<Rule> {
        let facts = RequestFacts {
            method: &method,
            path,
            route,
            query,
        };
        candidates(settings, &facts)
    }

    fn names(
        settings: &Settings,
        method: Method,
        path: &str,
        route: Option<&str>,
        query: Option<&str>,
    ) -> Vec<&'static str> {
        rules(settings, method, path, route, query)
            .into_iter()
            .map(|r| r.name)
            .collect()
    }

    fn all_groups() -> Settings {
        let mut values = Map::new();
        for group in [
            "authenticated_api",
            "unauthenticated_api",
            "authenticated_web",
            "unauthenticated_web",
            "authenticated_packages_api",
            "unauthenticated_packages_api",
        ] {
            values.insert(format!("throttle_{group}_enabled"), json!(true));
            values.insert(format!("throttle_{group}_period_in_seconds"), json!(10));
            values.insert(format!("throttle_{group}_requests_per_period"), json!(5));
        }
        settings(Value::Object(values))
    }

    #[test]
    fn search_rate_limit_applies_to_the_search_endpoints_only() {
        for path in [
            "/api/v4/search",
            "/api/v4/users",
            "/api/v4/groups/7/search",
            "/api/v4/projects/a%2Fb/search",
        ] {
            assert!(is_search_endpoint(path), "{path}");
        }
        for path in [
            "/api/v4/groups",
            "/api/v4/projects",
            "/api/v4/projects/1/issues",
            "/search",
        ] {
            assert!(!is_search_endpoint(path), "{path}");
        }
    }

    #[test]
    fn paths_are_classified_as_gitlab_does() {
        assert_eq!(classify("/-/health"), PathClass::Health);
        assert_eq!(classify("/-/readiness?all=1"), PathClass::Health);
        assert_eq!(classify("/-/metrics"), PathClass::Health);
        assert_eq!(classify("/api/v4/users"), PathClass::Api);
        assert_eq!(classify("/oauth/token"), PathClass::Api);
        assert_eq!(
            classify("/uploads/-/system/user/avatar/1/a.png"),
            PathClass::Web
        );
        assert_eq!(classify("/-/profile"), PathClass::Web);
        assert_eq!(classify("/"), PathClass::Web);
        assert!(is_internal_api("/api/v4/internal/allowed"));
        assert!(!is_internal_api("/api/v4/internals"));
        assert!(!is_internal_api("/api/v4/users"));
    }

    #[test]
    fn package_paths() {
        assert!(is_packages_api("/api/v4/packages/npm/foo"));
        assert!(is_packages_api("/api/v4/projects/12/packages/maven/a/b"));
        assert!(is_packages_api(
            "/api/v4/projects/group%2Fproj/packages/pypi/simple"
        ));
        assert!(is_packages_api("/api/v4/groups/7/-/packages/npm/x"));
        assert!(is_packages_api(
            "/api/v4/group/7/-/packages/composer/packages"
        ));
        assert!(!is_packages_api("/api/v4/projects/12/issues"));
        assert!(!is_packages_api("/api/v4/projects//packages/x"));
        assert!(!is_packages_api("/api/v4/groups/7/packages/x"));
        assert!(!is_packages_api("/packages/x"));
    }

    #[test]
    fn raw_blob_paths() {
        assert!(is_raw_blob(
            &Method::GET,
            "/group/project/-/raw/main/README.md"
        ));
        assert!(is_raw_blob(&Method::GET, "/a/b/c/-/raw/v1.0/dir/file.txt"));
        assert!(is_raw_blob(&Method::HEAD, "/a/b/-/raw/main/x"));
        assert!(!is_raw_blob(&Method::POST, "/a/b/-/raw/main/x"));
        assert!(!is_raw_blob(&Method::GET, "/project/-/raw/main/x"));
        assert!(!is_raw_blob(&Method::GET, "/a/b/-/raw/"));
        assert!(!is_raw_blob(&Method::GET, "/api/v4/a/b/-/raw/main/x"));
        assert!(!is_raw_blob(&Method::GET, "/a/b/-/blob/main/x"));
        assert!(is_raw_blob(
            &Method::GET,
            "/api/v4/projects/7/repository/blobs/abc123/raw"
        ));
        assert!(is_raw_blob(
            &Method::GET,
            "/api/v4/projects/g%2Fp/repository/files/dir%2Fa.txt/raw"
        ));
        assert!(!is_raw_blob(
            &Method::GET,
            "/api/v4/projects/7/repository/blobs/abc123"
        ));
        assert!(!is_raw_blob(
            &Method::GET,
            "/api/v4/projects/7/repository/files/a/b/raw"
        ));
    }

    #[test]
    fn blame_paths() {
        assert!(is_blame(
            &Method::GET,
            "/api/v4/projects/7/repository/files/dir%2Fa.txt/blame"
        ));
        assert!(is_blame(
            &Method::HEAD,
            "/api/v4/projects/g%2Fp/repository/files/a/blame"
        ));
        assert!(!is_blame(
            &Method::POST,
            "/api/v4/projects/7/repository/files/a/blame"
        ));
        assert!(!is_blame(
            &Method::GET,
            "/api/v4/projects/7/repository/files/a/raw"
        ));
        assert!(!is_blame(
            &Method::GET,
            "/api/v4/projects/7/repository/files/blame"
        ));
        assert!(!is_blame(&Method::GET, "/g/p/-/blame/main/a"));
    }

    #[test]
    fn blame_is_limited_per_user_and_per_ip_whatever_the_settings() {
        let path = "/api/v4/projects/7/repository/files/a.txt/blame";
        let off = settings(json!({"raw_blob_request_limit": 0, "search_rate_limit": 0}));
        let found = rules(&off, Method::GET, path, None, None);
        let found: Vec<(&str, Who, i64, i64)> = found
            .iter()
            .map(|r| (r.name, r.who, r.limit, r.period))
            .collect();
        assert_eq!(
            found,
            [
                ("blame", Who::Authenticated, 30, 60),
                ("blame_unauthenticated", Who::Unauthenticated, 10, 60)
            ]
        );
    }

    #[test]
    fn search_parameter() {
        assert!(has_search(Some("search=foo")));
        assert!(has_search(Some("page=2&search=a%20b")));
        assert!(!has_search(Some("search=")));
        assert!(!has_search(Some("searches=x&search_in=y")));
        assert!(!has_search(None));
    }

    #[test]
    fn defaults_limit_only_search_and_raw_blobs() {
        let s = settings(json!({}));
        assert!(names(&s, Method::GET, "/api/v4/users", None, None).is_empty());
        assert_eq!(
            names(&s, Method::GET, "/api/v4/users", None, Some("search=x")),
            ["search_rate_limit", "search_rate_limit_unauthenticated"]
        );
        let rules = rules(&s, Method::GET, "/api/v4/users", None, Some("search=x"));
        assert_eq!((rules[0].limit, rules[0].period), (30, 60));
        assert_eq!((rules[1].limit, rules[1].period), (10, 60));
        assert_eq!(
            names(&s, Method::GET, "/g/p/-/raw/main/f", None, None),
            ["raw_blob"]
        );
        // issues_create_limit is 0 (off) by default
        assert!(
            names(
                &s,
                Method::POST,
                "/api/v4/projects/1/issues",
                Some(ISSUES_CREATE_ROUTE),
                None
            )
            .is_empty()
        );
        assert!(names(&s, Method::GET, "/-/health", None, Some("search=x")).is_empty());
    }

    #[test]
    fn protected_paths_are_throttled_by_default_on_post() {
        let s = settings(json!({}));
        for path in ["/users/sign_in", "/api/v4/session", "/users/password/new"] {
            let rules = rules(&s, Method::POST, path, None, None);
            assert_eq!(rules.len(), 2, "{path}");
            assert_eq!(
                (rules[0].who, rules[0].limit, rules[0].period),
                (Who::Unauthenticated, 10, 60)
            );
            assert_eq!(rules[1].who, Who::Authenticated);
        }
        assert_eq!(
            names(&s, Method::POST, "/api/v4/session", None, None),
            [
                "throttle_unauthenticated_protected_paths",
                "throttle_authenticated_protected_paths_api"
            ]
        );
        // GitLab's default list leaves the OAuth token endpoint out.
        assert!(names(&s, Method::POST, "/oauth/token", None, None).is_empty());
        assert_eq!(
            names(&s, Method::POST, "/users/sign_in", None, None)[1],
            "throttle_authenticated_protected_paths_web"
        );
        assert!(names(&s, Method::GET, "/users/sign_in", None, None).is_empty());
        assert!(names(&s, Method::POST, "/api/v4/users", None, None).is_empty());
        let off = settings(json!({"throttle_protected_paths_enabled": false}));
        assert!(names(&off, Method::POST, "/users/sign_in", None, None).is_empty());
        let custom = settings(json!({"protected_paths": ["/api/v4/projects"]}));
        assert_eq!(
            names(&custom, Method::POST, "/api/v4/projects", None, None).len(),
            2
        );
        assert!(names(&custom, Method::POST, "/users/sign_in", None, None).is_empty());
    }

    #[test]
    fn zero_disables_application_limits() {
        let s = settings(json!({
            "search_rate_limit": 0,
            "search_rate_limit_unauthenticated": 0,
            "raw_blob_request_limit": 0,
        }));
        assert!(names(&s, Method::GET, "/api/v4/users", None, Some("search=x")).is_empty());
        assert!(names(&s, Method::GET, "/g/p/-/raw/main/f", None, None).is_empty());
    }

    #[test]
    fn issue_creation_matches_the_route_template_and_method() {
        let s = settings(json!({"issues_create_limit": 3}));
        let rules = rules(
            &s,
            Method::POST,
            "/api/v4/projects/42/issues",
            Some(ISSUES_CREATE_ROUTE),
            None,
        );
        assert_eq!(
            rules,
            [Rule {
                name: "issues_create",
                who: Who::Authenticated,
                limit: 3,
                period: 60
            }]
        );
        assert!(
            names(
                &s,
                Method::GET,
                "/api/v4/projects/42/issues",
                Some(ISSUES_CREATE_ROUTE),
                None
            )
            .is_empty()
        );
        assert!(
            names(
                &s,
                Method::POST,
                "/api/v4/projects/42/issues/1/notes",
                Some("/api/v4/projects/{id}/issues/{issue_iid}/notes"),
                None
            )
            .is_empty()
        );
        assert!(names(&s, Method::POST, "/api/v4/projects/42/issues", None, None).is_empty());
    }

    #[test]
    fn throttle_groups_by_path() {
        let s = all_groups();
        assert_eq!(
            names(&s, Method::GET, "/api/v4/users", None, None),
            ["throttle_unauthenticated_api", "throttle_authenticated_api"]
        );
        assert_eq!(
            names(&s, Method::GET, "/oauth/token", None, None),
            ["throttle_unauthenticated_api", "throttle_authenticated_api"]
        );
        assert_eq!(
            names(&s, Method::GET, "/uploads/x", None, None),
            ["throttle_unauthenticated_web", "throttle_authenticated_web"]
        );
        // package requests count against the packages groups instead of the API groups
        assert_eq!(
            names(
                &s,
                Method::GET,
                "/api/v4/projects/1/packages/npm/x",
                None,
                None
            ),
            [
                "throttle_unauthenticated_packages_api",
                "throttle_authenticated_packages_api"
            ]
        );
        // internal API: no unauthenticated throttle
        assert_eq!(
            names(&s, Method::POST, "/api/v4/internal/allowed", None, None),
            ["throttle_authenticated_api"]
        );
        assert!(names(&s, Method::GET, "/-/liveness", None, None).is_empty());
        let rule = rules(&s, Method::GET, "/api/v4/users", None, None)[1];
        assert_eq!(
            (rule.who, rule.limit, rule.period),
            (Who::Authenticated, 5, 10)
        );
    }

    #[test]
    fn packages_fall_back_to_api_groups_while_their_own_are_off() {
        let s = settings(json!({
            "throttle_authenticated_api_enabled": true,
            "throttle_unauthenticated_api_enabled": true,
        }));
        assert_eq!(
            names(&s, Method::GET, "/api/v4/packages/npm/x", None, None),
            ["throttle_unauthenticated_api", "throttle_authenticated_api"]
        );
        let rules = rules(&s, Method::GET, "/api/v4/users", None, None);
        // catalog defaults: 3600 per 3600 s unauthenticated, 7200 per 3600 s authenticated
        assert_eq!((rules[0].limit, rules[0].period), (3600, 3600));
        assert_eq!((rules[1].limit, rules[1].period), (7200, 3600));
    }

    #[test]
    fn deprecated_unauthenticated_group_is_the_web_group() {
        let s = settings(json!({
            "throttle_unauthenticated_web_enabled": true,
            "throttle_unauthenticated_web_period_in_seconds": 5,
            "throttle_unauthenticated_web_requests_per_period": 2,
        }));
        let alias = catalog::entry("throttle_unauthenticated_enabled").unwrap();
        assert_eq!(s.catalog_value(alias), json!(true));
        assert_eq!(
            names(&s, Method::GET, "/x", None, None),
            ["throttle_unauthenticated_web"]
        );
    }

    #[test]
    fn who_applies() {
        let rule = |who| Rule {
            name: "x",
            who,
            limit: 1,
            period: 1,
        };
        assert!(applies(&rule(Who::Authenticated), true));
        assert!(!applies(&rule(Who::Authenticated), false));
        assert!(applies(&rule(Who::Unauthenticated), false));
        assert!(!applies(&rule(Who::Unauthenticated), true));
        assert!(applies(&rule(Who::PerPath), true));
        assert!(applies(&rule(Who::PerPath), false));
    }
}
