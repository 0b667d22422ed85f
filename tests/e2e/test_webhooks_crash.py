"""Webhook delivery across a crash: the server is killed with SIGKILL while deliveries are
queued and one is in flight; after a restart every event arrives (the one in flight possibly
twice, then with the same Idempotency-Key) and nothing is lost."""

from __future__ import annotations

import time

from conftest import LOOPBACK_RECEIVERS, WebhookReceiver, assert_json

ISSUES = 12


def test_kill_9_with_pending_deliveries_loses_none(make_server):
    server = make_server(LOOPBACK_RECEIVERS)
    root = server.root_token
    assert_json(server.request("PUT", "/application/settings", token=root,
                               json={"allow_local_requests_from_web_hooks_and_services": True}), 200)
    # A slow receiver: one hook's deliveries go out one at a time, so most stay queued.
    rx = WebhookReceiver(delay=0.5)
    try:
        project = assert_json(server.request("POST", "/projects", token=root, json={"name": "crashy"}), 201)
        r = server.request("POST", f"/projects/{project['id']}/hooks", token=root,
                           json={"url": rx.url, "issues_events": True, "push_events": False})
        assert_json(r, 201)
        iids = []
        for n in range(ISSUES):
            r = server.request("POST", f"/projects/{project['id']}/issues", token=root,
                               json={"title": f"issue {n}"})
            iids.append(assert_json(r, 201)["iid"])
        rx.wait(2, timeout=30)
        server.proc.kill()  # SIGKILL: deliveries queued, one in flight
        server.proc.wait(timeout=10)
        delivered_before = len(rx.requests())
        assert delivered_before < ISSUES, "everything went out before the kill; nothing was tested"

        rx.delay = 0
        server.start()
        # the delivery in flight at the kill waits for its lease (30 s) to expire
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            got = {r["json"]["object_attributes"]["iid"] for r in rx.requests()}
            if got >= set(iids):
                break
            time.sleep(0.2)
        requests = rx.requests()
        got = {r["json"]["object_attributes"]["iid"] for r in requests}
        assert got == set(iids), (sorted(got), iids)
        # a repeated delivery is the same delivery: same key, same event
        by_iid: dict[int, set[str]] = {}
        for r in requests:
            by_iid.setdefault(r["json"]["object_attributes"]["iid"], set()).add(r["headers"]["idempotency-key"])
        assert all(len(keys) == 1 for keys in by_iid.values()), by_iid
        # each hook's deliveries went out in order
        order = [r["json"]["object_attributes"]["iid"] for r in requests]
        firsts = [iid for n, iid in enumerate(order) if iid not in order[:n]]
        assert firsts == sorted(firsts)
        assert server.wait_for(
            lambda: server.sql("SELECT COUNT(*) FROM webhook_deliveries")[0][0] in (0, "0"), timeout=10)
    finally:
        rx.close()
