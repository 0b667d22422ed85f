"""Application settings: GET/PUT /application/settings with python-gitlab and raw requests.

Covers defaults, every "if enabled requires" rule, ranges, enums, types, deprecated aliases,
write-only secrets (never returned, encrypted at rest), admin-only access, and that a PUT
with one bad value changes nothing.
"""

import sqlite3

import gitlab
import pytest

from conftest import ISO_MS, assert_json, psql

PATH = "/application/settings"

# (flag, value that enables it, {required setting: a valid value})
REQUIRES = [
    ("spam_filter_enabled", True, {"spam_filter_api_key": "spam-key-1"}),
    ("housekeeping_enabled", True, {"housekeeping_full_repack_period": 50,
                                    "housekeeping_gc_period": 200,
                                    "housekeeping_incremental_repack_period": 10}),
    *[
        (f"throttle_{group}_enabled", True, {f"throttle_{group}_period_in_seconds": 60,
                                             f"throttle_{group}_requests_per_period": 1000})
        for group in ["authenticated_api", "authenticated_web", "authenticated_packages_api",
                      "unauthenticated_api", "unauthenticated_web", "unauthenticated_packages_api"]
    ],
    ("require_two_factor_authentication", True, {"two_factor_grace_period": 24}),
    ("external_authorization_service_enabled", True, {
        "external_authorization_service_url": "https://authz.example.com",
        "external_authorization_service_default_label": "default",
        "external_authorization_service_timeout": 1.5}),
    ("captcha_enabled", True, {"captcha_private_key": "priv", "captcha_site_key": "site"}),
    ("asset_proxy_enabled", True, {"asset_proxy_url": "https://proxy.example.com"}),
    ("domain_denylist_enabled", True, {"domain_denylist": ["spam.example"]}),
    ("enforce_terms", True, {"terms": "Be excellent"}),
    ("diagram_renderer_enabled", True, {"diagram_renderer_url": "https://diagrams.example.com"}),
    ("code_intel_enabled", True, {"code_intel_url": "https://ci.example.com"}),
    ("analytics_tracking_enabled", True, {"analytics_tracking_collector_hostname": "collector.example"}),
    ("chat_app_enabled", True, {"chat_app_id": "app", "chat_app_secret": "s3",
                                "chat_app_verification_token": "vt"}),
    ("unique_ips_limit_enabled", True, {"unique_ips_limit_per_user": 5,
                                        "unique_ips_limit_time_window": 600}),
    ("shared_runners_enabled", True, {"shared_runners_text": "Shared runners", "shared_runners_minutes": 400}),
    ("external_auth_client_cert", "-----BEGIN CERTIFICATE-----", {"external_auth_client_key": "PRIVATE"}),
]
SECRETS = {"spam_filter_api_key", "captcha_private_key", "chat_app_secret",
           "chat_app_verification_token", "external_auth_client_key"}


def get(server, token=None):
    return assert_json(server.request("GET", PATH, token=token or server.root_token), 200)


def put(server, token=None, **kw):
    return server.request("PUT", PATH, token=token or server.root_token, **kw)


def blank(value):
    if isinstance(value, list):
        return []
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return None
    return ""


def stored_data(server) -> str:
    """The raw settings row as stored in the database."""
    query = "SELECT data FROM application_settings"
    if server.engine == "postgres":
        return psql(server.database_url, query)
    with sqlite3.connect(server.data_dir / "trellis.db") as db:
        return "\n".join(row[0] for row in db.execute(query))


# ---- read ------------------------------------------------------------------


def test_get_has_ids_timestamps_defaults_and_aliases(server):
    data = get(server)
    assert data["id"] == 1
    assert ISO_MS.match(data["created_at"]) and ISO_MS.match(data["updated_at"])
    expected = {
        "default_projects_limit": 100000,
        "default_branch_protection": 2,
        "default_project_visibility": "private",
        "delayed_group_deletion": True,
        "delayed_project_deletion": False,
        "deletion_adjourned_period": 7,
        "password_authentication_enabled_for_web": True,
        "signin_enabled": True,
        "signup_enabled": True,
        "raw_blob_request_limit": 300,
        "search_rate_limit": 30,
        "user_email_lookup_limit": 30,
        "search_rate_limit_unauthenticated": 10,
        "wiki_page_max_content_bytes": 52428800,
        "snippet_size_limit": 52428800,
        "background_job_limiter_mode": "compress",
        "first_day_of_week": 0,
        "domain_allowlist": None,
        "restricted_visibility_levels": None,
        "external_authorization_service_timeout": 0.5,
        "allow_group_owners_to_manage_ldap": True,  # a [T] setting
        "spam_filter_api_key": None,
    }
    for name, value in expected.items():
        assert data[name] == value, name
    for alias in ["admin_notification_email", "asset_proxy_whitelist",
                  "allow_local_requests_from_hooks_and_services", "performance_bar_allowed_group_id",
                  "throttle_unauthenticated_enabled", "throttle_unauthenticated_period_in_seconds",
                  "throttle_unauthenticated_requests_per_period"]:
        assert alias in data


def test_python_gitlab_get_and_save(server):
    gl = server.gitlab()
    settings = gl.settings.get()
    assert settings.default_projects_limit == 100000
    before = settings.updated_at
    settings.default_projects_limit = 42
    settings.after_sign_up_text = "Welcome!"
    settings.save()
    again = gl.settings.get()
    assert again.default_projects_limit == 42
    assert again.after_sign_up_text == "Welcome!"
    assert again.updated_at > before


def test_get_and_put_need_a_token(server):
    assert_json(server.request("GET", PATH), 401, {"message": "401 Unauthorized"})
    assert_json(server.request("PUT", PATH, json={"signup_enabled": False}), 401)


def test_non_admin_gets_403(server):
    server.sql("INSERT INTO users (tenant_id, id, username, username_lower, email, email_lower, name, "
                "state, is_admin, projects_limit, created_at, updated_at) "
                "SELECT tenant_id, 9001, 'alice', 'alice', 'alice@example.com', 'alice@example.com', "
                "'Alice', 'active', 0, 100000, 0, 0 FROM users WHERE username = 'root'")
    token = server.create_token(user="alice", scopes="api")
    assert_json(server.request("GET", "/user", token=token), 200)
    assert_json(server.request("GET", PATH, token=token), 403, {"message": "403 Forbidden"})
    assert_json(put(server, token=token, json={"signup_enabled": False}), 403, {"message": "403 Forbidden"})
    with pytest.raises(gitlab.GitlabGetError) as err:
        server.gitlab(token).settings.get()
    assert err.value.response_code == 403


# ---- requires rules ----------------------------------------------------------


@pytest.mark.parametrize("flag,on,required", REQUIRES, ids=[r[0] for r in REQUIRES])
def test_requires_rule(server, flag, on, required):
    before = get(server)
    body = {flag: on, **{name: blank(value) for name, value in required.items()}}
    data = assert_json(put(server, json=body), 400)
    assert set(data["message"]) == set(required), data
    for messages in data["message"].values():
        assert messages == ["can't be blank"]
    assert get(server) == before, "a rejected PUT must change nothing"

    data = assert_json(put(server, json={flag: on, **required}), 200)
    assert data[flag] == on
    for name, value in required.items():
        assert data[name] == (None if name in SECRETS else value), name

    # Once stored, the requirement need not be repeated; blanking it while enabled fails.
    assert_json(put(server, json={flag: on}), 200)
    name, value = next(iter(required.items()))
    assert_json(put(server, json={name: blank(value)}), 400)


# ---- ranges, enums, types ------------------------------------------------------


def test_deletion_adjourned_period_range_and_zero(server):
    for bad in (91, -1):
        data = assert_json(put(server, json={"deletion_adjourned_period": bad}), 400)
        assert list(data["message"]) == ["deletion_adjourned_period"]
    data = assert_json(put(server, json={"deletion_adjourned_period": 90}), 200)
    assert data["deletion_adjourned_period"] == 90
    data = assert_json(put(server, json={"delayed_group_deletion": True, "delayed_project_deletion": True}), 200)
    assert data["delayed_project_deletion"] is True
    data = assert_json(put(server, json={"deletion_adjourned_period": 0}), 200)
    assert data["delayed_project_deletion"] is False and data["delayed_group_deletion"] is False
    data = assert_json(put(server, json={"delayed_project_deletion": True}), 400)
    assert list(data["message"]) == ["delayed_project_deletion"]


@pytest.mark.parametrize("body,field", [
    ({"external_authorization_service_timeout": 0}, "external_authorization_service_timeout"),
    ({"external_authorization_service_timeout": 10.5}, "external_authorization_service_timeout"),
    ({"wiki_page_max_content_bytes": 1023}, "wiki_page_max_content_bytes"),
    ({"archive_builds_in_human_readable": "12 hours"}, "archive_builds_in_human_readable"),
    ({"archive_builds_in_human_readable": "whenever"}, "archive_builds_in_human_readable"),
    ({"rsa_key_restriction": 1000}, "rsa_key_restriction"),
    ({"ed25519_key_restriction": 384}, "ed25519_key_restriction"),
    ({"restricted_visibility_levels": ["secret"]}, "restricted_visibility_levels"),
    ({"spam_check_endpoint_url": "https://spam.example"}, "spam_check_endpoint_url"),
])
def test_model_ranges(server, body, field):
    data = assert_json(put(server, json=body), 400)
    assert list(data["message"]) == [field]


def test_valid_edges_accepted(server):
    data = assert_json(put(server, json={
        "external_authorization_service_timeout": 0.001,
        "wiki_page_max_content_bytes": 1024,
        "archive_builds_in_human_readable": "1 day",
        "rsa_key_restriction": 2048,
        "dsa_key_restriction": -1,
        "first_day_of_week": 6,
        "enabled_git_access_protocol": "ssh",
        "restricted_visibility_levels": ["public", "10"],
        "spam_check_endpoint_url": "grpc://spam.example:9000",
    }), 200)
    assert data["restricted_visibility_levels"] == ["public", "internal"]
    assert data["first_day_of_week"] == 6
    data = assert_json(put(server, json={"enabled_git_access_protocol": "",
                                         "archive_builds_in_human_readable": ""}), 200)
    assert data["enabled_git_access_protocol"] is None


@pytest.mark.parametrize("name,value", [
    ("first_day_of_week", 2),
    ("whats_new_variant", "sometimes"),
    ("default_project_visibility", "secret"),
    ("default_group_visibility", "hidden"),
    ("default_snippet_visibility", "nobody"),
    ("enabled_git_access_protocol", "ftp"),
    ("background_job_limiter_mode", "drop"),
])
def test_enums(server, name, value):
    assert_json(put(server, json={name: value}), 400, {"error": f"{name} does not have a valid value"})


def test_types(server):
    assert_json(put(server, json={"default_projects_limit": "many"}), 400,
                {"error": "default_projects_limit is invalid"})
    assert_json(put(server, json={"signup_enabled": "perhaps"}), 400, {"error": "signup_enabled is invalid"})
    assert_json(put(server, json={"domain_allowlist": {"a": 1}}), 400, {"error": "domain_allowlist is invalid"})
    # Form bodies coerce as Grape does.
    data = assert_json(put(server, data={"default_projects_limit": "17", "signup_enabled": "false",
                                         "domain_allowlist": "a.example, b.example"}), 200)
    assert data["default_projects_limit"] == 17
    assert data["signup_enabled"] is False
    assert data["domain_allowlist"] == ["a.example", "b.example"]


def test_one_bad_value_changes_nothing(server):
    before = get(server)
    assert_json(put(server, json={"default_projects_limit": 5, "after_sign_up_text": "changed",
                                  "wiki_page_max_content_bytes": 10}), 400)
    assert_json(put(server, json={"default_projects_limit": 5, "first_day_of_week": 3}), 400)
    assert_json(put(server, json={"default_projects_limit": 5, "signup_enabled": "x"}), 400)
    assert get(server) == before


def test_unknown_keys_ignored(server):
    data = assert_json(put(server, json={"no_such_setting": 1, "help_page_text": "Help!"}), 200)
    assert "no_such_setting" not in data
    assert data["help_page_text"] == "Help!"


# ---- aliases -----------------------------------------------------------------


@pytest.mark.parametrize("alias,name,value", [
    ("signin_enabled", "password_authentication_enabled_for_web", False),
    ("admin_notification_email", "abuse_notification_email", "abuse@example.com"),
    ("asset_proxy_whitelist", "asset_proxy_allowlist", ["*.example.com"]),
    ("allow_local_requests_from_hooks_and_services",
     "allow_local_requests_from_web_hooks_and_services", True),
    ("performance_bar_allowed_group_id", "performance_bar_allowed_group_path", "perf/group"),
    ("throttle_unauthenticated_period_in_seconds", "throttle_unauthenticated_web_period_in_seconds", 120),
    ("user_email_lookup_limit", "search_rate_limit", 45),
])
def test_alias_both_ways(server, alias, name, value):
    data = assert_json(put(server, json={alias: value}), 200)
    assert data[alias] == value and data[name] == value
    other = (not value) if isinstance(value, bool) else (
        [*value, "x.example"] if isinstance(value, list) else
        value + 1 if isinstance(value, int) else value + ".2")
    data = assert_json(put(server, json={name: other}), 200)
    assert data[alias] == other and data[name] == other
    assert get(server)[alias] == other


def test_alias_and_replacement_together_replacement_wins(server):
    data = assert_json(put(server, json={"signin_enabled": False,
                                         "password_authentication_enabled_for_web": True}), 200)
    assert data["signin_enabled"] is True


# ---- secrets -----------------------------------------------------------------


def test_secret_is_write_only_and_encrypted_at_rest(server):
    secret = "very-secret-api-key-4711"
    data = assert_json(put(server, json={"spam_check_api_key": secret, "mail_provider_signing_key": secret}), 200)
    assert data["spam_check_api_key"] is None
    assert secret not in put(server, json={}).text
    assert secret not in server.request("GET", PATH, token=server.root_token).text
    raw = stored_data(server)
    assert "spam_check_api_key" in raw and "enc:v1:" in raw
    assert secret not in raw
    assert secret not in stored_data(server)
    # A GET → PUT round trip (secrets null) keeps them; "" clears one.
    assert_json(put(server, json={"spam_check_api_key": None}), 200)
    assert "spam_check_api_key" in stored_data(server)
    assert_json(put(server, json={"spam_check_api_key": ""}), 200)
    assert "spam_check_api_key" not in stored_data(server)


def test_secret_key_file_is_private(server):
    if server.env.get("TRELLIS_SECRET_KEY"):
        pytest.skip("key from the environment")
    key_file = server.data_dir / "secret_key"
    assert key_file.exists()
    assert key_file.stat().st_mode & 0o777 == 0o600


# ---- caching -----------------------------------------------------------------


def new_token(server, token) -> str:
    return server.create_token_api(token=token)["token"]


def test_writer_sees_its_change_at_once(server):
    assert_json(put(server, json={"personal_access_token_prefix": "now-"}), 200)
    assert new_token(server, server.root_token).startswith("now-")
    assert_json(put(server, json={"personal_access_token_prefix": "glpat-"}), 200)
    assert new_token(server, server.root_token).startswith("glpat-")


def test_other_process_sees_change_within_cache_window(server, make_server):
    if server.engine != "postgres":
        pytest.skip("two processes share one database only on PostgreSQL")
    import time

    key = (server.data_dir / "secret_key").read_text().strip()
    other = make_server({
        "TRELLIS_DATABASE_URL": server.database_url,
        "TRELLIS_SETTINGS_CACHE_SECONDS": "2",
        "TRELLIS_SECRET_KEY": key,
    })
    assert new_token(other, server.root_token).startswith("glpat-")  # warms its cache
    assert_json(put(server, json={"personal_access_token_prefix": "win-"}), 200)
    changed = time.monotonic()
    seen = other.wait_for(lambda: new_token(other, server.root_token).startswith("win-"),
                          timeout=10, interval=0.2)
    assert seen
    assert time.monotonic() - changed <= 2 + 1.5, "stale longer than the cache window"
    # Both processes read the secret-bearing row the same way.
    assert_json(put(other, token=server.root_token, json={"personal_access_token_prefix": "glpat-"}), 200)
    assert get(server)["personal_access_token_prefix"] == "glpat-"
