"""Behind a reverse proxy: `--trusted-proxies` decides whose `X-Forwarded-For` is believed, for
the monitoring allowlist and the per-IP throttles. Without it, the connection's peer is the
client whatever the header says.
"""

from __future__ import annotations

import requests

from conftest import assert_json

CLIENT = "198.51.100.7"
OUTSIDER = "203.0.113.1"
# The suite's own health checks come from 127.0.0.1, so it stays allowed.
MONITORING = {"TRELLIS_MONITORING_ALLOWLIST": f"127.0.0.1/32,{CLIENT}/32"}


def health(server, forwarded_for: str | None = None) -> int:
    headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
    return requests.get(server.url + "/-/health", headers=headers, timeout=10).status_code


def test_forwarded_addresses_are_ignored_without_trusted_proxies(make_server):
    server = make_server(MONITORING)
    assert health(server) == 200
    assert health(server, OUTSIDER) == 200  # anyone could send the header: the peer counts


def test_the_client_behind_a_trusted_proxy_is_the_forwarded_one(make_server):
    server = make_server({**MONITORING, "TRELLIS_TRUSTED_PROXIES": "127.0.0.0/8"})
    assert health(server) == 200  # the proxy's own request
    assert health(server, CLIENT) == 200
    assert health(server, OUTSIDER) == 404  # a client outside the allowlist, through the proxy
    # The nearest untrusted hop is the client; what it claims to its left is not believed.
    assert health(server, f"{CLIENT}, {OUTSIDER}") == 404
    assert health(server, f"{OUTSIDER}, {CLIENT}") == 200


def test_per_ip_throttles_count_each_forwarded_client(make_server):
    server = make_server({"TRELLIS_TRUSTED_PROXIES": "127.0.0.0/8"})
    r = server.request("PUT", "/application/settings", token=server.root_token, json={
        "throttle_unauthenticated_api_enabled": True,
        "throttle_unauthenticated_api_requests_per_period": 2,
        "throttle_unauthenticated_api_period_in_seconds": 3600,
    })
    assert_json(r, 200)

    def status(client: str) -> int:
        return server.request("GET", "/users/1", headers={"X-Forwarded-For": client}).status_code

    assert [status("203.0.113.1") for _ in range(3)] == [200, 200, 429]
    # Another client behind the same proxy has its own count.
    assert [status("203.0.113.2") for _ in range(2)] == [200, 200]
