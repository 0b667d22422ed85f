"""Rate limits: the throttle_* groups, search_rate_limit(_unauthenticated),
raw_blob_request_limit, the 429 answer GitLab's Rack::Attack gives (plain text and
RateLimit-* headers), python-gitlab's automatic retry, exact counting under concurrency, and
one counter shared by several processes (on PostgreSQL, or in Redis on either engine). Every
test runs with the engine's own counters and again with them in Redis (`--redis-url`).

Counters use fixed windows aligned to the Unix epoch (as Rack::Attack's), so every test that
counts up to a limit first waits for a fresh window when the current one is about to end.
Administrative requests (settings, user creation) carry the throttle bypass header the
module's server is started with, so that they never count or get throttled.
"""

from __future__ import annotations

import calendar
import email.utils
import secrets
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from conftest import assert_json, redis_command, redis_url, require_redis

BYPASS = "X-Trellis-Throttle-Bypass"
ADMIN = {BYPASS: "1"}
GROUPS = [
    "authenticated_api",
    "unauthenticated_api",
    "authenticated_web",
    "unauthenticated_web",
    "authenticated_packages_api",
    "unauthenticated_packages_api",
]
DEFAULTS = {
    **{f"throttle_{g}_enabled": False for g in GROUPS},
    "search_rate_limit": 30,
    "search_rate_limit_unauthenticated": 10,
    "raw_blob_request_limit": 300,
    "issues_create_limit": 0,
    "rate_limiting_response_text": "",
    # conftest turns the protected paths throttle off for the suite; this module restores it
    "throttle_protected_paths_enabled": False,
}


# This module's Redis database (test_invalidation.py uses another).
REDIS_DB = 14


@pytest.fixture(scope="module", params=["own", "redis"])
def counters(request) -> dict:
    """The environment that says where the counters live: the engine's own place (memory on
    SQLite, a table on PostgreSQL), or Redis."""
    if request.param == "redis":
        require_redis()
        return {"TRELLIS_REDIS_URL": redis_url(REDIS_DB)}
    return {}


@pytest.fixture(scope="module")
def server(make_server, counters):
    if counters:
        # Redis's counters outlive the servers of the module's other runs, whose tenants and
        # users have the same ids.
        redis_command("FLUSHDB", db=REDIS_DB)
    return make_server({"TRELLIS_THROTTLE_BYPASS_HEADER": BYPASS, **counters})


def put_settings(server, target=None, **values):
    r = (target or server).request(
        "PUT", "/application/settings", token=server.root_token, headers=ADMIN, json=values
    )
    return assert_json(r, 200)


def throttle(group: str, limit: int, period: int) -> dict:
    return {
        f"throttle_{group}_enabled": True,
        f"throttle_{group}_requests_per_period": limit,
        f"throttle_{group}_period_in_seconds": period,
    }


@pytest.fixture(autouse=True)
def reset_settings(server):
    yield
    put_settings(server, **DEFAULTS)


def new_user(server) -> dict:
    """A fresh user (so that per-user counters start at zero) and an api token of theirs."""
    name = "rl" + secrets.token_hex(4)
    r = server.request(
        "POST", "/users", token=server.root_token, headers=ADMIN,
        json={"username": name, "email": f"{name}@example.com", "name": name,
              "password": "Secret-" + secrets.token_hex(8)},
    )
    user = assert_json(r, 201)
    r = server.request(
        "POST", f"/users/{user['id']}/personal_access_tokens", token=server.root_token,
        headers=ADMIN, json={"name": "rl", "scopes": ["api"]},
    )
    return {"id": user["id"], "token": assert_json(r, 201)["token"]}


def fresh_window(period: int, needed: float = 5.0):
    """Waits for the next window when fewer than `needed` seconds are left in this one."""
    left = period - (time.time() % period)
    if left < min(needed, period * 0.9):
        time.sleep(left + 0.05)


def statuses(server, n, path, token=None, **kw):
    return [server.request("GET", path, token=token, **kw).status_code for _ in range(n)]


def assert_throttled(resp: requests.Response, name: str, limit: int, period: int,
                     observed: int, text: str = "Retry later"):
    now = time.time()
    assert resp.status_code == 429, (resp.status_code, resp.text)
    assert resp.headers["Content-Type"] == "text/plain"
    assert resp.text == text + "\n"
    h = resp.headers
    assert h["RateLimit-Name"] == name
    assert int(h["RateLimit-Limit"]) == -(-limit * 60 // period)  # per minute, rounded up
    assert int(h["RateLimit-Observed"]) == observed
    assert int(h["RateLimit-Remaining"]) == 0
    reset = int(h["RateLimit-Reset"])
    assert reset % period == 0
    assert 0 < reset - now <= period + 1
    parsed = email.utils.parsedate_tz(h["RateLimit-ResetTime"])
    assert calendar.timegm(parsed[:9]) == reset
    assert h["RateLimit-ResetTime"].endswith(" GMT")
    retry_after = int(h["Retry-After"])
    assert 1 <= retry_after <= period
    assert abs((reset - now) - retry_after) <= 1.5


# ---- defaults ------------------------------------------------------------------


def test_nothing_is_throttled_by_default(server):
    user = new_user(server)
    assert statuses(server, 40, "/user", token=user["token"]) == [200] * 40
    r = server.request("GET", "/user", token=user["token"])
    assert "RateLimit-Name" not in r.headers
    assert statuses(server, 40, "/version") == [401] * 40
    assert statuses(server, 30, server.url + "/uploads/nothing") == [404] * 30


def test_health_checks_are_never_throttled(server):
    put_settings(server, **throttle("unauthenticated_web", 1, 60),
                 **throttle("unauthenticated_api", 1, 60))
    for path in ["/-/health", "/-/liveness", "/-/readiness"]:
        assert statuses(server, 5, path) == [200] * 5


# ---- throttle groups ---------------------------------------------------------------


def test_authenticated_api_per_user(server):
    put_settings(server, **throttle("authenticated_api", 3, 60))
    fresh_window(60)
    alice, bob = new_user(server), new_user(server)
    assert statuses(server, 3, "/user", token=alice["token"]) == [200] * 3
    r = server.request("GET", "/user", token=alice["token"])
    assert_throttled(r, "throttle_authenticated_api", 3, 60, observed=4)
    # every request counts, 404s and other routes too; the count keeps rising
    r = server.request("GET", "/no/such/route", token=alice["token"])
    assert_throttled(r, "throttle_authenticated_api", 3, 60, observed=5)
    # another user has their own counter; unauthenticated requests are not in this group
    assert statuses(server, 3, "/user", token=bob["token"]) == [200] * 3
    assert statuses(server, 5, "/users/1") == [200] * 5
    # an invalid token is an unauthenticated request (401, not throttled)
    assert statuses(server, 5, "/user", token="glpat-not-a-token") == [401] * 5
    # admins are not exempt (only the bypass header is)
    root = server.request("GET", "/user", token=server.root_token)
    assert root.status_code == 200
    assert statuses(server, 3, "/user", token=server.root_token)[-1] == 429
    assert statuses(server, 3, "/user", token=server.root_token, headers=ADMIN) == [200] * 3


def test_custom_response_text(server):
    put_settings(server, **throttle("authenticated_api", 1, 60),
                 rate_limiting_response_text="Too fast, try again soon")
    fresh_window(60)
    user = new_user(server)
    assert server.request("GET", "/user", token=user["token"]).status_code == 200
    r = server.request("GET", "/user", token=user["token"])
    assert_throttled(r, "throttle_authenticated_api", 1, 60, observed=2,
                     text="Too fast, try again soon")
    put_settings(server, rate_limiting_response_text="")
    r = server.request("GET", "/user", token=user["token"])
    assert_throttled(r, "throttle_authenticated_api", 1, 60, observed=3)


def test_unauthenticated_api_per_ip(server):
    put_settings(server, **throttle("unauthenticated_api", 3, 57))
    fresh_window(57)
    assert statuses(server, 3, "/users/1") == [200] * 3
    r = server.request("GET", "/users/1")
    assert_throttled(r, "throttle_unauthenticated_api", 3, 57, observed=4)
    r = server.request("GET", server.url + "/oauth/token")  # /oauth/ paths are API paths, as in GitLab
    assert_throttled(r, "throttle_unauthenticated_api", 3, 57, observed=5)
    user = new_user(server)
    assert statuses(server, 3, "/user", token=user["token"]) == [200] * 3
    # web paths are another group
    assert server.request("GET", server.url + "/uploads/x").status_code == 404


def test_unauthenticated_web_per_ip(server):
    put_settings(server, **throttle("unauthenticated_web", 2, 53))
    fresh_window(53)
    assert statuses(server, 2, server.url + "/uploads/x") == [404] * 2
    r = server.request("GET", server.url + "/some/page")
    assert_throttled(r, "throttle_unauthenticated_web", 2, 53, observed=3)
    assert server.request("GET", "/users/1").status_code == 200
    assert server.request("GET", "/-/health").status_code == 200


def test_deprecated_unauthenticated_group_drives_the_web_throttle(server):
    put_settings(server, throttle_unauthenticated_enabled=True,
                 throttle_unauthenticated_requests_per_period=1,
                 throttle_unauthenticated_period_in_seconds=51)
    fresh_window(51)
    assert server.request("GET", server.url + "/x").status_code == 404
    r = server.request("GET", server.url + "/x")
    assert_throttled(r, "throttle_unauthenticated_web", 1, 51, observed=2)


def test_authenticated_web_per_user(server):
    put_settings(server, **throttle("authenticated_web", 2, 60))
    fresh_window(60)
    user = new_user(server)
    assert statuses(server, 2, server.url + "/uploads/x", token=user["token"]) == [404] * 2
    r = server.request("GET", server.url + "/uploads/x", token=user["token"])
    assert_throttled(r, "throttle_authenticated_web", 2, 60, observed=3)
    assert server.request("GET", "/user", token=user["token"]).status_code == 200
    assert server.request("GET", server.url + "/uploads/x").status_code == 404


def test_packages_api_groups(server):
    put_settings(server, **throttle("authenticated_packages_api", 2, 15),
                 **throttle("unauthenticated_packages_api", 1, 15),
                 **throttle("authenticated_api", 100, 60))
    fresh_window(15)
    user = new_user(server)
    path = "/api/v4/projects/1/packages/npm/left-pad"
    assert statuses(server, 2, path, token=user["token"]) == [404] * 2
    r = server.request("GET", path, token=user["token"])
    assert_throttled(r, "throttle_authenticated_packages_api", 2, 15, observed=3)
    assert server.request("GET", "/api/v4/packages/npm/x").status_code == 404
    r = server.request("GET", "/api/v4/groups/1/-/packages/npm/x")
    assert_throttled(r, "throttle_unauthenticated_packages_api", 1, 15, observed=2)
    # package requests did not count against the API group
    assert statuses(server, 3, "/user", token=user["token"]) == [200] * 3


# ---- application limits -------------------------------------------------------------


def test_search_rate_limits(server):
    put_settings(server, search_rate_limit=3, search_rate_limit_unauthenticated=2)
    fresh_window(60)
    user = new_user(server)
    assert statuses(server, 3, "/users?search=root", token=user["token"]) == [200] * 3
    r = server.request("GET", "/users?search=root", token=user["token"])
    assert_throttled(r, "search_rate_limit", 3, 60, observed=4)
    # without a search term nothing counts
    assert statuses(server, 5, "/users?search=", token=user["token"]) == [200] * 5
    assert statuses(server, 5, "/users", token=user["token"]) == [200] * 5
    assert statuses(server, 2, "/users?search=root") == [200] * 2
    r = server.request("GET", "/users?search=root")
    assert_throttled(r, "search_rate_limit_unauthenticated", 2, 60, observed=3)
    # 0 disables
    put_settings(server, search_rate_limit=0, search_rate_limit_unauthenticated=0)
    assert statuses(server, 5, "/users?search=root", token=user["token"]) == [200] * 5
    assert statuses(server, 5, "/users?search=root") == [200] * 5


def test_user_email_lookup_limit_alias(server):
    put_settings(server, user_email_lookup_limit=1)
    fresh_window(60)
    user = new_user(server)
    assert server.request("GET", "/users?search=x", token=user["token"]).status_code == 200
    r = server.request("GET", "/users?search=x", token=user["token"])
    assert_throttled(r, "search_rate_limit", 1, 60, observed=2)


def test_raw_blob_limit_per_path(server):
    put_settings(server, raw_blob_request_limit=2)
    fresh_window(60)
    path = server.url + f"/group/project-{secrets.token_hex(3)}/-/raw/main/README.md"
    assert statuses(server, 2, path) == [404] * 2
    r = server.request("GET", path)
    assert_throttled(r, "raw_blob", 2, 60, observed=3)
    # per path, for every caller
    user = new_user(server)
    assert server.request("GET", path, token=user["token"]).status_code == 429
    assert server.request("GET", path.replace("README", "LICENSE")).status_code == 404


# ---- settings changes, retry, concurrency ---------------------------------------------------------


def project_of(server, user) -> int:
    r = server.request("POST", "/projects", token=user["token"], json={"name": "rl" + secrets.token_hex(3)})
    return assert_json(r, 201)["id"]


@pytest.mark.parametrize("where", ["header", "form", "json", "multipart"])
def test_issues_create_limit_sees_the_token_wherever_it_is(server, where):
    """GitLab takes private_token from the body too; a limiter that reads only the head
    would count such a caller per IP under no per-user rule at all."""
    user = new_user(server)
    project = project_of(server, user)
    put_settings(server, issues_create_limit=1)
    fresh_window(60)
    path = f"{server.api_url}/projects/{project}/issues"

    def create(i):
        title = f"issue {i}"
        if where == "header":
            return requests.post(path, headers={"PRIVATE-TOKEN": user["token"]}, data={"title": title})
        if where == "form":
            return requests.post(path, data={"title": title, "private_token": user["token"]})
        if where == "json":
            return requests.post(path, json={"title": title, "access_token": user["token"]})
        return requests.post(path, files={"title": (None, title), "private_token": (None, user["token"])})

    got = [create(i) for i in range(3)]
    assert [r.status_code for r in got] == [201, 429, 429], [r.text for r in got]
    assert got[1].headers["RateLimit-Name"] == "issues_create"
    # the body the limiter read still reaches the handler whole
    assert got[0].json()["title"] == "issue 0"


def test_unparsable_body_without_a_token_is_the_handlers_400(server):
    put_settings(server, issues_create_limit=1)
    r = requests.post(f"{server.api_url}/projects/1/issues", data=b"{not json",
                      headers={"Content-Type": "application/json"})
    assert r.status_code == 400, r.text


# GitLab's ApplicationSetting::DEFAULT_PROTECTED_PATHS.
GITLAB_PROTECTED_PATHS = [
    "/users/password", "/users/sign_in", "/api/v3/session.json", "/api/v3/session",
    "/api/v4/session.json", "/api/v4/session", "/users", "/users/confirmation", "/unsubscribes/",
    "/import/github/personal_access_token", "/admin/session",
]


def test_protected_paths_are_throttled_by_default(server, make_server):
    """GitLab's default: 10 POSTs a minute per IP to its sign-in, password and session paths."""
    fresh = make_server()
    r = fresh.request("GET", "/application/settings", token=fresh.root_token)
    settings = assert_json(r, 200)
    assert settings["throttle_protected_paths_enabled"] is False  # as conftest left it
    r = fresh.request("PUT", "/application/settings", token=fresh.root_token,
                      json={"throttle_protected_paths_enabled": True})
    settings = assert_json(r, 200)
    assert settings["throttle_protected_paths_period_in_seconds"] == 60
    assert settings["throttle_protected_paths_requests_per_period"] == 10
    assert settings["protected_paths"] == GITLAB_PROTECTED_PATHS
    fresh_window(60, needed=10)
    sign_in = {"user[login]": "root", "user[password]": "wrong"}
    codes = [requests.post(fresh.url + "/users/sign_in", data=sign_in).status_code
             for _ in range(10)]
    assert 429 not in codes, codes
    r = requests.post(fresh.url + "/users/sign_in", data=sign_in)
    assert r.status_code == 429
    assert r.headers["RateLimit-Name"] == "throttle_unauthenticated_protected_paths"
    # reads of the same paths, the OAuth token endpoint (not in GitLab's list: OAuth clients
    # exchange codes and refresh often; password guesses there meet the account lockout) and
    # the rest of the API are not protected paths
    assert requests.get(fresh.url + "/users/sign_in").status_code == 200
    grant = {"grant_type": "password", "username": "nobody", "password": "wrong"}
    codes = [requests.post(fresh.url + "/oauth/token", data=grant).status_code for _ in range(12)]
    assert 429 not in codes, codes
    assert fresh.request("GET", "/version", token=fresh.root_token).status_code == 200


def test_writer_sees_setting_changes_at_once(server):
    user = new_user(server)
    put_settings(server, **throttle("authenticated_api", 1, 47))
    fresh_window(47)
    assert statuses(server, 2, "/user", token=user["token"]) == [200, 429]
    put_settings(server, throttle_authenticated_api_enabled=False)
    assert statuses(server, 3, "/user", token=user["token"]) == [200] * 3
    put_settings(server, throttle_authenticated_api_enabled=True)
    assert server.request("GET", "/user", token=user["token"]).status_code == 429


def test_python_gitlab_retries_after_the_window(server):
    put_settings(server, **throttle("authenticated_api", 2, 1))
    user = new_user(server)
    gl = server.gitlab(user["token"], retry_transient_errors=True)
    seen = []
    gl.session.hooks["response"].append(lambda r, *a, **k: seen.append(r.status_code))
    started = time.monotonic()
    for _ in range(7):
        assert gl.http_get("/user")["id"] == user["id"]
    assert 429 in seen, seen
    assert seen.count(200) == 7
    assert time.monotonic() - started < 15


def test_200_parallel_requests_against_a_limit_of_100(server):
    put_settings(server, **throttle("authenticated_api", 100, 3600))
    fresh_window(3600, needed=30)
    user = new_user(server)

    def call(_):
        return requests.get(server.api_url + "/user", headers={"PRIVATE-TOKEN": user["token"]},
                            timeout=60).status_code

    with ThreadPoolExecutor(max_workers=50) as pool:
        codes = list(pool.map(call, range(200)))
    assert codes.count(200) == 100, codes
    assert codes.count(429) == 100


def test_two_processes_share_one_counter(server, make_server, counters):
    if server.engine != "postgres" and not counters:
        pytest.skip("SQLite's processes count in their own memory unless they share Redis")
    key = (server.data_dir / "secret_key").read_text().strip()
    put_settings(server, **throttle("authenticated_api", 60, 3600))
    shared = ({"TRELLIS_DATABASE_URL": server.database_url} if server.database_url
              else {"TRELLIS_DATA_DIR": str(server.data_dir)})
    other = make_server({
        **shared,
        **counters,
        "TRELLIS_SECRET_KEY": key,
        "TRELLIS_SETTINGS_CACHE_SECONDS": "1",
        "TRELLIS_THROTTLE_BYPASS_HEADER": BYPASS,
    })
    fresh_window(3600, needed=30)
    user = new_user(server)
    # alternating, then in parallel on both: 60 successes in all
    first = [
        (server if i % 2 else other).request("GET", "/user", token=user["token"]).status_code
        for i in range(20)
    ]
    assert first == [200] * 20

    def call(i):
        target = server if i % 2 else other
        return requests.get(target.api_url + "/user", headers={"PRIVATE-TOKEN": user["token"]},
                            timeout=60).status_code

    with ThreadPoolExecutor(max_workers=40) as pool:
        codes = list(pool.map(call, range(80)))
    assert codes.count(200) == 40, codes
    r = other.request("GET", "/user", token=user["token"])
    assert_throttled(r, "throttle_authenticated_api", 60, 3600, observed=101)
    # the other process sees a settings change within its cache time
    put_settings(server, throttle_authenticated_api_enabled=False)
    assert server.request("GET", "/user", token=user["token"]).status_code == 200
    assert other.wait_for(
        lambda: other.request("GET", "/user", token=user["token"]).status_code == 200,
        timeout=5, interval=0.2)
