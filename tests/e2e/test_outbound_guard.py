"""The operator's outbound policy (--outbound-allow-networks): tenant settings can narrow it,
never widen it. Without the flag nothing loopback, link-local, private or reserved is
reachable, whatever a tenant administrator sets; with it, the tenant's allow_local_* settings
and allowlist open only addresses inside the operator's list."""

from __future__ import annotations

import subprocess

import pytest

from conftest import LOOPBACK_RECEIVERS, TRELLIS_BIN, assert_json

OPEN_EVERYTHING = {
    "allow_local_requests_from_web_hooks_and_services": True,
    "outbound_local_requests_whitelist": ["127.0.0.1", "169.254.169.254", "10.0.0.0/8"],
}


def settings(server, **values):
    assert_json(server.request("PUT", "/application/settings", token=server.root_token, json=values), 200)


def import_blocked(reason):
    return {"message": {"import_url": [f"is blocked: {reason}"]}}


@pytest.fixture(scope="module")
def tenant_opens_everything(server):
    settings(server, **OPEN_EVERYTHING)
    yield
    settings(server, allow_local_requests_from_web_hooks_and_services=False,
             outbound_local_requests_whitelist=[], external_authorization_service_enabled=False)


@pytest.mark.parametrize("url,reason", [
    ("http://127.0.0.1:9/x.git", "Requests to localhost are not allowed"),
    ("http://localhost:9/x.git", "Requests to localhost are not allowed"),
    ("http://[::1]:9/x.git", "Requests to localhost are not allowed"),
    ("http://169.254.169.254/latest/meta-data", "Requests to the link local network are not allowed"),
    ("http://10.1.2.3/x.git", "Requests to the local network are not allowed"),
    ("http://[64:ff9b::7f00:1]/x.git", "Requests to the local network are not allowed"),
    ("http://198.18.0.1/x.git", "Requests to the local network are not allowed"),
    ("http://240.0.0.1/x.git", "Requests to the local network are not allowed"),
    ("http://[2002:7f00:1::]/x.git", "Requests to the local network are not allowed"),
])
def test_tenant_settings_cannot_open_local_addresses(server, tenant_opens_everything, url, reason):
    r = server.request("POST", "/projects", token=server.root_token,
                       json={"name": "guarded", "import_url": url})
    assert_json(r, 400, import_blocked(reason))


def test_hook_urls_stay_local_only_refused(server, tenant_opens_everything):
    r = server.request("POST", "/projects", token=server.root_token, json={"name": "hooked"})
    project = assert_json(r, 201)["id"]
    for url in ("http://127.0.0.1:9/hook", "http://169.254.169.254/latest"):
        r = server.request("POST", f"/projects/{project}/hooks", token=server.root_token, json={"url": url})
        assert_json(r, 422, {"message": "Invalid url given"})


def test_plugin_http_cannot_reach_loopback(server, tenant_opens_everything):
    """The external authorization plugin's granted HTTP, to a service on loopback (the
    server's own /-/metrics would be there too), is refused before connecting."""
    r = server.request("POST", "/projects", token=server.root_token,
                       json={"name": "labelled", "visibility": "public"})
    project = assert_json(r, 201)["id"]
    settings(server, external_authorization_service_enabled=True,
             external_authorization_service_url=f"{server.url}/-/metrics",
             external_authorization_service_default_label="guarded")
    r = server.request("GET", f"/projects/{project}", token=server.root_token)
    assert_json(r, 403)
    assert "Requests to localhost are not allowed" in r.json()["message"]
    settings(server, external_authorization_service_enabled=False)


def test_operator_list_lets_tenant_settings_open_loopback_only(make_server):
    srv = make_server(LOOPBACK_RECEIVERS)
    url = "http://127.0.0.1:9/x.git"
    r = srv.request("POST", "/projects", token=srv.root_token, json={"name": "closed", "import_url": url})
    assert_json(r, 400, import_blocked("Requests to localhost are not allowed"))
    settings(srv, **OPEN_EVERYTHING)
    r = srv.request("POST", "/projects", token=srv.root_token, json={"name": "opened", "import_url": url})
    assert assert_json(r, 201)["import_url"] == url
    for url, reason in [
        ("http://10.1.2.3/x.git", "Requests to the local network are not allowed"),
        ("http://169.254.169.254/", "Requests to the link local network are not allowed"),
    ]:
        r = srv.request("POST", "/projects", token=srv.root_token, json={"name": "still", "import_url": url})
        assert_json(r, 400, import_blocked(reason))


@pytest.mark.parametrize("value", ["not a host", "10.0.0.0/33", "http://x"])
def test_bad_operator_entries_stop_the_start(value):
    proc = subprocess.run([TRELLIS_BIN, "serve", "--outbound-allow-networks", value],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0
    assert "--outbound-allow-networks" in proc.stderr
