"""Processes sharing one PostgreSQL database tell each other what they changed, through
PostgreSQL's NOTIFY or, when they are given one, through Redis: a revoked token, a blocked user,
a changed setting, a new tenant and a plugin binding take effect on the other process at once,
although its caches would keep the old answer for ten minutes. When the connection that
listens for the announcements drops, the process drops its caches once it has connected again,
so nothing announced meanwhile stays stale."""

from __future__ import annotations

import secrets
import time

import pytest

from conftest import (
    _skip_unless_engine,
    assert_json,
    bind,
    built_in,
    psql,
    redis_command,
    redis_url,
    require_redis,
    user_with_token,
)

# A window within which "at once" must hold: the announcement crosses the bus and the other
# process's listener, no polling.
AT_ONCE = 0.1
LONG_CACHES = {
    "TRELLIS_AUTH_CACHE_MS": "600000",
    "TRELLIS_SETTINGS_CACHE_SECONDS": "600",
}
# This module's Redis database (test_rate_limits.py uses another).
REDIS_URL = redis_url(15)


@pytest.fixture(scope="module")
def engine() -> str:
    _skip_unless_engine("postgres")
    return "postgres"


@pytest.fixture(scope="module", params=["postgres", "redis"])
def bus(request) -> dict:
    """The environment that picks the channel the processes announce changes on."""
    if request.param == "redis":
        require_redis()
        return {"TRELLIS_REDIS_URL": REDIS_URL}
    return {}


@pytest.fixture(scope="module")
def server(make_server, bus):
    return make_server({**LONG_CACHES, **bus})


@pytest.fixture(scope="module")
def other(server, make_server, bus):
    """A second process on the same database, with the same long caches and bus."""
    key = (server.data_dir / "secret_key").read_text().strip()
    return make_server({**LONG_CACHES, **bus, "TRELLIS_DATABASE_URL": server.database_url,
                        "TRELLIS_SECRET_KEY": key})


def cut_listeners(server, bus) -> int:
    """Drops every process's listening connection; how many were dropped."""
    if bus:
        answer = redis_command("CLIENT", "KILL", "TYPE", "pubsub")
        return int(answer.strip().lstrip(b":"))
    cut = psql(server.database_url,
               "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
               "WHERE datname = current_database() AND query ILIKE 'LISTEN%'")
    return int(cut.strip())


def seen_within(predicate, seconds: float) -> float | None:
    """How long `predicate` took to hold (polled every 5 ms), or None if it did not within
    `seconds`."""
    started = time.monotonic()
    while True:
        if predicate():
            return time.monotonic() - started
        if time.monotonic() - started > seconds:
            return None
        time.sleep(0.005)


def status_on(srv, token, path="/user", host=None) -> int:
    return srv.request("GET", path, token=token, host=host).status_code


def test_a_revoked_token_is_refused_by_the_other_process_at_once(server, other):
    user, token = user_with_token(server)
    assert status_on(other, token) == 200
    assert status_on(other, token) == 200  # cached now, for ten minutes
    tokens = assert_json(server.request("GET", "/personal_access_tokens", token=token), 200)
    r = server.request("DELETE", f"/personal_access_tokens/{tokens[0]['id']}",
                       token=server.root_token)
    assert r.status_code == 204, r.text
    took = seen_within(lambda: status_on(other, token) == 401, AT_ONCE)
    assert took is not None, "the other process still accepts the revoked token"


def test_a_blocked_user_is_refused_by_the_other_process_at_once(server, other):
    user, token = user_with_token(server)
    assert status_on(other, token) == 200
    r = server.request("POST", f"/users/{user['id']}/block", token=server.root_token)
    assert r.status_code == 201, r.text
    took = seen_within(lambda: status_on(other, token) != 200, AT_ONCE)
    assert took is not None, "the other process still serves the blocked user"
    assert status_on(other, token) == status_on(server, token)


def put_setting(srv, token, **values):
    return assert_json(srv.request("PUT", "/application/settings", token=token, json=values), 200)


def new_token_prefix(srv, token) -> str:
    """The prefix the process gives new tokens now: read through a token it creates."""
    return srv.create_token_api(token=token)["token"]


def test_a_changed_setting_applies_on_the_other_process_at_once(server, other):
    root = server.root_token
    assert new_token_prefix(other, root).startswith("glpat-")  # the setting is cached now
    put_setting(server, root, personal_access_token_prefix="quick-")
    try:
        took = seen_within(lambda: new_token_prefix(other, root).startswith("quick-"), AT_ONCE)
        assert took is not None, "the other process kept its cached settings"
    finally:
        put_setting(server, root, personal_access_token_prefix="glpat-")


def test_a_new_tenant_is_served_by_the_other_process_at_once(server, other):
    host = f"fresh-{secrets.token_hex(3)}.example"
    server.cli("tenant", "create", "--host", host)
    token = server.create_token(user="root", name="t", scopes="api", tenant=host)
    took = seen_within(lambda: status_on(other, token, host=host) == 200, AT_ONCE)
    assert took is not None, "the other process does not serve the new tenant yet"


def binding_on(srv, root):
    """The plugin `srv` runs for the spam check (None when nothing is bound)."""
    r = srv.request("POST", "/application/plugin_hooks/spam_check/test",
                    token=root, json={"title": "cheap casino", "user_id": 1})
    return r.json()["plugin"] if r.status_code == 200 else None


def test_a_plugin_binding_applies_on_the_other_process_at_once(server, other):
    root = server.root_token
    plugin = built_in(server)
    assert binding_on(other, root) is None
    assert_json(bind(server, plugin_id=plugin["id"], config={"blocked_words": ["casino"]}), 200)
    try:
        took = seen_within(lambda: binding_on(other, root) == plugin["name"] + "@" +
                           plugin["version"], AT_ONCE)
        assert took is not None, ("the other process did not take the binding",
                                  binding_on(other, root))
    finally:
        r = server.request("DELETE", "/application/plugin_hooks/spam_check", token=root)
        assert r.status_code == 204
    took = seen_within(lambda: binding_on(other, root) is None, AT_ONCE)
    assert took is not None, "the other process kept the removed binding"


def test_a_process_cut_off_from_the_announcements_drops_its_caches_when_back(server, other, bus):
    """Changes written behind every process's back (straight into the database, so nothing
    announces them) stay unseen while the caches hold; once the other process's listening
    connection is cut and made again, it drops its caches, since it cannot know what it
    missed, and reads them fresh: long before they would expire."""
    root = server.root_token
    user, token = user_with_token(server)
    assert new_token_prefix(other, root).startswith("glpat-")
    server.sql("UPDATE application_settings SET data = jsonb_set(data::jsonb, "
               "'{personal_access_token_prefix}', '\"unheard-\"')::text "
               "WHERE tenant_id = (SELECT id FROM tenants WHERE host = '')")
    try:
        assert new_token_prefix(other, root).startswith("glpat-"), "the settings are cached"
        # twice: the first use of the day records the user's activity, which is announced
        assert status_on(other, token) == status_on(other, token) == 200
        server.sql(f"UPDATE users SET state = 'blocked' WHERE username = '{user['username']}'")
        assert status_on(other, token) == 200, "the token is cached"
        assert cut_listeners(server, bus) >= 2  # both processes listen
        took = seen_within(lambda: status_on(other, token) == 401, 10)
        assert took is not None, "the other process kept its cached token after connecting again"
        assert new_token_prefix(other, root).startswith("unheard-")
        print(f"caught up {took:.2f}s after its listener was cut off")
    finally:
        server.sql("UPDATE application_settings SET data = jsonb_set(data::jsonb, "
                   "'{personal_access_token_prefix}', '\"glpat-\"')::text")
