"""Crash safety: `kill -9` in the middle of a write load loses no acknowledged write.

A client counts a write as made once it has the 201. The server is killed without warning
while writers are mid-flight, restarted on the same data directory (or database), and every
acknowledged issue, with its event in the domain outbox, must be there. Writes that were in
flight may or may not have landed, but none is half-written: an issue row without its event,
or the reverse, would show here as a count mismatch.
"""

from __future__ import annotations

import random
import threading
import time

import requests

from conftest import Server

WRITERS = 4
# The kill comes once this many writes are acknowledged (the others are then in flight), or
# after LOAD_LIMIT_SECONDS on a very slow machine.
KILL_AFTER_WRITES = 40
LOAD_LIMIT_SECONDS = 30.0


def _write_load(server: Server, token: str, project_id: int, stop: threading.Event,
                acknowledged: list, lock: threading.Lock):
    session = requests.Session()
    session.headers["PRIVATE-TOKEN"] = token
    n = 0
    while not stop.is_set():
        n += 1
        title = f"w{threading.get_ident()}-{n}"
        try:
            resp = session.post(f"{server.api_url}/projects/{project_id}/issues",
                                data={"title": title, "description": "x" * random.randint(0, 2000)},
                                timeout=10)
        except requests.RequestException:
            return  # the server is gone: this write was never acknowledged
        if resp.status_code == 201:
            with lock:
                acknowledged.append((resp.json()["iid"], title))


def test_kill_9_under_write_load_loses_no_acknowledged_write(make_server):
    server = make_server()
    token = server.root_token
    project = server.request("POST", "/projects", token=token, data={"name": "crash"}).json()
    stop = threading.Event()
    acknowledged: list[tuple[int, str]] = []
    lock = threading.Lock()
    writers = [
        threading.Thread(target=_write_load,
                         args=(server, token, project["id"], stop, acknowledged, lock))
        for _ in range(WRITERS)
    ]
    for w in writers:
        w.start()
    deadline = time.monotonic() + LOAD_LIMIT_SECONDS
    while len(acknowledged) < KILL_AFTER_WRITES and time.monotonic() < deadline:
        time.sleep(random.uniform(0.001, 0.02))
    with lock:
        before_kill = len(acknowledged)
    server.proc.kill()  # SIGKILL: no shutdown, no flush, no checkpoint
    server.proc.wait(timeout=10)
    stop.set()
    for w in writers:
        w.join(timeout=15)
    assert before_kill >= KILL_AFTER_WRITES, f"only {before_kill} writes before the kill"

    server.start()
    session = requests.Session()
    session.headers["PRIVATE-TOKEN"] = token
    for iid, title in acknowledged:
        resp = session.get(f"{server.api_url}/projects/{project['id']}/issues/{iid}", timeout=10)
        assert resp.status_code == 200, (iid, resp.status_code, resp.text)
        assert resp.json()["title"] == title

    # Nothing is half-written: each issue that exists has its `issue.opened` event, and the
    # numbering goes on after the highest iid that survived.
    issues = server.sql(f"SELECT COUNT(*) FROM issues WHERE project_id = {project['id']}")
    events = server.sql(
        "SELECT COUNT(*) FROM domain_events WHERE kind = 'issue.opened' "
        f"AND project_id = {project['id']}")
    assert int(issues[0][0]) == int(events[0][0]) >= len(acknowledged)
    after = server.request("POST", f"/projects/{project['id']}/issues", token=token,
                           data={"title": "after the crash"})
    assert after.status_code == 201, after.text
    assert after.json()["iid"] == int(issues[0][0]) + 1
    if server.engine == "sqlite":
        assert server.sql("PRAGMA integrity_check") == [("ok",)]
