"""Each tenant's fair share of the process (`--fair-share-requests`).

While more than one tenant is busy, a tenant may have at most its share of requests in flight
and its others wait in its own line; a tenant alone is never held back. What waited is counted
by tenant in `/-/metrics` (`trellis_fair_share_waits_total`), which is what these tests read:
they check who waits, never how long anything took.

Long plugin calls also give way to other tenants' requests (`plugins/give_way.rs`): the ticks
they paused are counted by tenant (`trellis_plugin_paused_ticks_total`), and the tests read who
paused, never for how long.

Tenant A (the default tenant) makes its requests slow with the hostile plugin's busy loop bound
to its spam check (each issue create runs until the binding's 1 s deadline); tenant B sends
quick requests one after another.
"""

from __future__ import annotations

import concurrent.futures
import re
import secrets
import socket
import threading

import pytest

from conftest import assert_json, bind, other_tenant, upload

SLOW_CALLS = 3


def by_tenant(server, metric: str) -> dict[str, float]:
    """A counter of `/-/metrics` labelled only by tenant, by tenant id."""
    text = server.request("GET", "/-/metrics").text
    return {m[1]: float(m[2]) for m in
            re.finditer(rf'^{metric}\{{tenant="(\d+)"\}} (\S+)$', text, re.M)}


def waits(server) -> dict[str, float]:
    return by_tenant(server, "trellis_fair_share_waits_total")


def paused(server) -> dict[str, float]:
    return by_tenant(server, "trellis_plugin_paused_ticks_total")


def slow_tenant_a(server, hostile_wasm) -> int:
    """Binds the busy loop to A's spam check; returns a project of A's to create issues in."""
    uploaded = upload(server, hostile_wasm, name="hostile.wasm")
    plugin = assert_json(uploaded, 201 if uploaded.status_code == 201 else 200)  # again: 200
    assert_json(bind(server, plugin_id=plugin["id"], config={"mode": "loop"},
                     failure_policy="fail_open", timeout_ms=1000), 200)
    r = server.request("POST", "/projects", token=server.root_token, json={"name": f"slow-{secrets.token_hex(3)}"})
    return assert_json(r, 201)["id"]


def slow_creates(server, project: int) -> list[int]:
    """SLOW_CALLS of A's issue creates at once; their statuses."""
    url = f"/projects/{project}/issues"
    with concurrent.futures.ThreadPoolExecutor(max_workers=SLOW_CALLS) as pool:
        calls = [pool.submit(server.request, "POST", url, token=server.root_token,
                             json={"title": f"slow {n}"}, timeout=60) for n in range(SLOW_CALLS)]
        return [f.result(timeout=90).status_code for f in calls]


def while_b_is_busy(server, b_host, b_token, work):
    """Runs `work()` while tenant B sends requests one after another; B's statuses and
    `work`'s result."""
    stop = threading.Event()
    statuses: list[int] = []

    def b_loop():
        while not stop.is_set():
            statuses.append(server.request("GET", "/user", token=b_token, host=b_host).status_code)

    loop = threading.Thread(target=b_loop)
    loop.start()
    try:
        server.wait_for(lambda: len(statuses) >= 3, timeout=10)
        result = work()
    finally:
        stop.set()
        loop.join(timeout=30)
    return statuses, result


@pytest.fixture(scope="module")
def shared(make_server):
    """Two slots shared out: one each while both tenants are busy."""
    return make_server({"TRELLIS_FAIR_SHARE_REQUESTS": "2"})


def test_a_tenant_alone_never_waits_and_its_plugin_never_pauses(shared, hostile_wasm):
    project = slow_tenant_a(shared, hostile_wasm)
    assert all(s in (201, 400) for s in slow_creates(shared, project))
    assert waits(shared).get("1", 0) == 0, waits(shared)
    assert paused(shared).get("1", 0) == 0, paused(shared)


def test_a_busy_tenant_waits_in_its_own_line_and_its_long_calls_give_way(shared, hostile_wasm):
    """While B is busy, A's creates beyond its one slot wait in A's line, and A's looping spam
    check pauses at its ticks yet still ends by its deadline."""
    b_host, b_token = other_tenant(shared, "b")
    project = slow_tenant_a(shared, hostile_wasm)
    before_waits, before_paused = waits(shared), paused(shared)
    b_statuses, a_statuses = while_b_is_busy(
        shared, b_host, b_token, lambda: slow_creates(shared, project))
    after_waits, after_paused = waits(shared), paused(shared)
    # A waited and paused, and every create of A's was answered.
    assert after_waits.get("1", 0) - before_waits.get("1", 0) >= 1, (before_waits, after_waits)
    assert after_paused.get("1", 0) - before_paused.get("1", 0) >= 1, (before_paused, after_paused)
    assert all(s in (201, 400) for s in a_statuses), a_statuses
    # B, one request at a time, never waited nor paused, and every request of B's was answered.
    assert all(count == 0 for tenant, count in after_waits.items() if tenant != "1"), after_waits
    assert set(after_paused) == {"1"}, after_paused
    assert b_statuses and set(b_statuses) == {200}, b_statuses


def test_a_request_that_takes_long_never_stalls_its_tenant(shared):
    """A body that trickles in (here: never comes) holds one of A's requests open. While B is
    busy, A's next request still runs, after waiting for A's share a moment at the most."""
    b_host, b_token = other_tenant(shared, "b")
    held = socket.create_connection(("127.0.0.1", shared.port), timeout=30)
    held.sendall((f"POST /api/v4/projects HTTP/1.1\r\nHost: {shared.host}\r\n"
                  "Content-Type: application/x-www-form-urlencoded\r\n"
                  "Content-Length: 100000\r\n\r\n").encode())
    try:
        _, status = while_b_is_busy(shared, b_host, b_token, lambda: shared.request(
            "GET", "/user", token=shared.root_token, timeout=20).status_code)
        assert status == 200
    finally:
        held.close()


def test_sharing_off(make_server, hostile_wasm):
    server = make_server({"TRELLIS_FAIR_SHARE_REQUESTS": "0"})
    b_host, b_token = other_tenant(server, "b")
    project = slow_tenant_a(server, hostile_wasm)
    _, a_statuses = while_b_is_busy(server, b_host, b_token, lambda: slow_creates(server, project))
    assert all(s in (201, 400) for s in a_statuses), a_statuses
    assert waits(server) == {}, waits(server)
