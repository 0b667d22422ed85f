"""Hostile plugins: a corpus of misbehaving plugins (tests/plugins/hostile for spam checks,
tests/plugins/hostile-auth for external authorization, tests/plugins/hostile-push for push
rules), each bound to each hook it can implement. Every call through them ends within its
limit (the host never hangs, nor does a git client pushing through them), and another
tenant's calls and pushes go on meanwhile. Uploads that import what plugins may not use, or that are too
large, are refused; a busy spam check refuses the write rather than skipping the check.
"""

from __future__ import annotations

import concurrent.futures
import secrets
import tempfile
import time
from pathlib import Path

import pytest

from conftest import (assert_json, bind, built_in, git_url, other_tenant, require_program,
                      run_git, spam_test, upload)

# Each misbehaviour, and the outcome of a spam check through it.
MODES = {
    "sleep": "trap",  # waiting is denied: it would hold the thread past any deadline
    "loop": "timeout",
    "alloc": "oom",
    "stack_overflow": "trap",
    "trap": "trap",
    "panic": "trap",
    "big_output": "oom",
    "log_flood": "ok",
}
# The corpus is bound with 1 s limits (log_flood's 10,000 log calls need more than the default
# 100 ms on a loaded debug build); a call ends well within DEADLINE even so.
TIMEOUT_MS = 1000
DEADLINE = 5.0
FLOODS = 5
CALLS = 6  # more than a tenant's instance slots (4 at the most on CI's machines)
SPAM = {"message": {"base": ["Your issue has been recognized as spam. Please, change the content to proceed."]}}


def timed(call, *args, **kw):
    started = time.monotonic()
    r = call(*args, **kw)
    return r.status_code, time.monotonic() - started


def project(server, name, token=None, host=None, **extra):
    r = server.request("POST", "/projects", token=token or server.root_token, host=host,
                       json={"name": name, "visibility": "public", **extra})
    return assert_json(r, 201)["id"]


@pytest.fixture(scope="module")
def calm(server):
    """Tenant B: the built-in spam filter bound, a project to write issues in."""
    host, token = other_tenant(server, "calm")
    b = built_in(server, token=token, host=host)
    assert_json(bind(server, token=token, host=host, plugin_id=b["id"],
                     config={"blocked_words": ["casino"], "trust_admins": False}), 200)
    return {"host": host, "token": token, "project": project(server, "calm", token, host)}


def tenant_b_works(server, calm):
    """B's issue creates, judged by B's own filter, each answered in time."""
    url = f"/projects/{calm['project']}/issues"
    results = [timed(server.request, "POST", url, token=calm["token"], host=calm["host"],
                     json={"title": title}) for title in ("calm 1", "calm 2", "casino night")]
    assert [status for status, _ in results] == [201, 201, 400], results
    assert all(elapsed < DEADLINE for _, elapsed in results), results
    return results


# ---- spam-check ------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile(server, hostile_wasm):
    return assert_json(upload(server, hostile_wasm, name="hostile.wasm"), 201)


@pytest.fixture(scope="module")
def project_a(server):
    return project(server, "hostile-a")


@pytest.mark.parametrize("mode", MODES)
def test_spam_check_corpus(server, hostile, project_a, calm, mode):
    assert_json(bind(server, plugin_id=hostile["id"], config={"mode": mode},
                     failure_policy="fail_closed", timeout_ms=TIMEOUT_MS), 200)
    url = f"/projects/{project_a}/issues"
    with concurrent.futures.ThreadPoolExecutor(max_workers=CALLS) as pool:
        creates = [pool.submit(timed, server.request, "POST", url, token=server.root_token,
                               json={"title": f"{mode} {n}"}) for n in range(CALLS)]
        tenant_b_works(server, calm)
        results = [f.result(timeout=60) for f in creates]
    assert all(elapsed < DEADLINE for _, elapsed in results), results
    # fail_closed (and busy, for calls beyond the slots) refuse; log_flood answers allow.
    expected = 201 if mode == "log_flood" else 400
    assert all(status == expected for status, _ in results), results
    v = spam_test(server, "hello")
    assert v["outcome"] == MODES[mode], v
    assert_json(server.request("GET", "/user", token=server.root_token), 200)


def test_sleeping_plugin_is_stopped_at_once(server, hostile):
    assert_json(bind(server, plugin_id=hostile["id"], config={"mode": "sleep"},
                     failure_policy="fail_open", timeout_ms=1000), 200)
    started = time.monotonic()
    v = spam_test(server, "hello")
    assert time.monotonic() - started < DEADLINE
    assert v["outcome"] == "trap" and "may not wait" in v["reason"], v
    assert v["action"] == "proceed", v


def test_busy_spam_check_refuses_the_write(make_server, hostile_wasm):
    """With one instance slot, calls beyond it that find no slot by their deadline are busy:
    the write is refused, even with fail_open (a flood must not switch the filter off)."""
    srv = make_server({"TRELLIS_PLUGIN_MAX_TENANT_INSTANCES": "1"})
    plugin = assert_json(upload(srv, hostile_wasm, name="hostile.wasm"), 201)
    assert_json(bind(srv, plugin_id=plugin["id"], config={"mode": "loop"},
                     failure_policy="fail_open", timeout_ms=300), 200)
    url = f"/projects/{project(srv, 'busy')}/issues"
    # A waiting call is busy only when the slot is still held at its own deadline, which comes
    # a few milliseconds after the holder's when they start together; on a loaded machine a
    # flood may start too spread out, so it is tried a few times.
    for _ in range(FLOODS):
        with concurrent.futures.ThreadPoolExecutor(max_workers=CALLS) as pool:
            creates = [pool.submit(srv.request, "POST", url, token=srv.root_token,
                                   json={"title": f"flood {n}"}) for n in range(CALLS)]
            responses = [f.result(timeout=60) for f in creates]
        statuses = sorted(r.status_code for r in responses)
        assert 201 in statuses, statuses  # a call that ran and timed out: fail_open
        if 400 in statuses:
            break
    assert 400 in statuses, statuses  # a busy one
    for r in responses:
        if r.status_code == 400:
            assert r.json() == SPAM


# ---- external authorization --------------------------------------------------------


@pytest.fixture(scope="module")
def auth_plugin(server, hostile_auth_wasm):
    """The plugin, and a project created before external authorization is on (creating one
    asks the service too); it has no label of its own, so the default label applies."""
    plugin = assert_json(upload(server, hostile_auth_wasm, name="hostile-auth.wasm"), 201)
    yield plugin, project(server, "labelled")
    server.request("PUT", "/application/settings", token=server.root_token,
                   json={"external_authorization_service_enabled": False})
    server.request("DELETE", "/application/plugin_hooks/external_authorization",
                   token=server.root_token)


@pytest.mark.parametrize("mode", MODES)
def test_external_authorization_corpus(server, auth_plugin, calm, mode):
    plugin, labelled = auth_plugin
    assert_json(bind(server, hook="external_authorization", plugin_id=plugin["id"],
                     config={"mode": mode}, outbound_http=["http://192.0.2.1"],
                     timeout_ms=TIMEOUT_MS), 200)
    # A label of its own per mode: decisions are cached per label.
    r = server.request("PUT", "/application/settings", token=server.root_token, json={
        "external_authorization_service_enabled": True,
        "external_authorization_service_url": "http://192.0.2.1/",
        "external_authorization_service_default_label": f"hostile-{mode}"})
    assert_json(r, 200)
    with concurrent.futures.ThreadPoolExecutor(max_workers=CALLS) as pool:
        reads = [pool.submit(timed, server.request, "GET", f"/projects/{labelled}",
                             token=server.root_token) for _ in range(CALLS)]
        tenant_b_works(server, calm)
        results = [f.result(timeout=60) for f in reads]
    assert all(elapsed < DEADLINE for _, elapsed in results), results
    expected = 200 if mode == "log_flood" else 403  # external authorization fails closed
    assert all(status == expected for status, _ in results), results


# ---- push rules -------------------------------------------------------------------

UNAVAILABLE = "remote: GitLab: push rules unavailable, try again"


@pytest.fixture(scope="module")
def git_home():
    require_program("git", "git")
    with tempfile.TemporaryDirectory(prefix="trellis-hostile-push-") as path:
        yield Path(path)


class Pusher:
    """A clone of a project that commits on its default branch and pushes it; `resolve`
    points git at this server for a tenant's host name (`http.curloptResolve`)."""

    def __init__(self, home: Path, url: str, resolve: str | None = None):
        self.home, self.dir = home, home / secrets.token_hex(4)
        self.options = ["-c", f"http.curloptResolve={resolve}"] if resolve else []
        self.git("clone", "-q", url, str(self.dir), cwd=home)

    def git(self, *args, cwd=None, check=True):
        # The subprocess timeout (run_git's) is a safety net: a push ends within its limit.
        return run_git(self.home, *self.options, *args, cwd=cwd or self.dir, check=check)

    def refs(self) -> str:
        return self.git("ls-remote", "origin").stdout

    def push(self, message: str):
        self.git("fetch", "-q", "origin")
        self.git("reset", "-q", "--hard", "origin/HEAD")
        (self.dir / "change.txt").write_text(secrets.token_hex(8))
        self.git("add", "change.txt")
        self.git("commit", "-q", "-m", message)
        return self.git("push", "origin", "HEAD", check=False)


@pytest.fixture(scope="module")
def pusher_a(server, git_home, hostile_push_wasm):
    """The default tenant: the hostile push-rules plugin uploaded, a project to push to."""
    plugin = assert_json(upload(server, hostile_push_wasm, name="hostile-push.wasm",
                                timeout=300), 201)
    assert plugin["world"] == "push-rules-plugin", plugin
    r = server.request("POST", "/projects", token=server.root_token,
                       json={"name": "hostile-push", "initialize_with_readme": True})
    path = assert_json(r, 201)["path_with_namespace"]
    yield plugin, Pusher(git_home, git_url(server, f"{path}.git", "root", server.root_token))
    server.request("DELETE", "/application/plugin_hooks/push_rules", token=server.root_token)


@pytest.fixture(scope="module")
def pusher_b(server, calm, git_home):
    """Tenant B pushes through its own built-in push-rules plugin and push rule."""
    host, token = calm["host"], calm["token"]
    b = built_in(server, token=token, host=host, name="push-rules")
    assert_json(bind(server, "push_rules", token=token, host=host, plugin_id=b["id"],
                     config={}, timeout_ms=TIMEOUT_MS), 200)
    r = server.request("POST", "/projects", token=token, host=host,
                       json={"name": "calm-push", "initialize_with_readme": True})
    made = assert_json(r, 201)
    assert_json(server.request("POST", f"/projects/{made['id']}/push_rule", token=token,
                               host=host, json={"commit_message_regex": "^calm"}), 201)
    url = f"http://root:{token}@{host}:{server.port}/{made['path_with_namespace']}.git"
    return Pusher(git_home, url, resolve=f"{host}:{server.port}:127.0.0.1")


def tenant_b_pushes(server, calm, pusher_b):
    """B's pushes are judged by B's rule (one accepted, one refused), and its API answers."""
    accepted = pusher_b.push("calm: a change")
    assert accepted.returncode == 0, accepted.stderr
    refused = pusher_b.push("noisy change")
    assert refused.returncode != 0
    assert "remote: GitLab: Commit message does not follow the pattern '^calm'" in refused.stderr
    tenant_b_works(server, calm)


# Misbehaving later in a push: in `check-commits`, and in or after the host's `read-blob`.
LATER_STAGES = [("commits", mode) for mode in MODES if mode != "log_flood"] + [
    ("read_blob", "loop"), ("read_blob", "trap"), ("read_blob", "alloc")]


@pytest.mark.parametrize("mode", MODES)
def test_push_rules_corpus(server, pusher_a, pusher_b, calm, mode):
    hostile_push_is_refused(server, pusher_a, pusher_b, calm, mode, "refs")


@pytest.mark.parametrize("stage,mode", LATER_STAGES)
def test_push_rules_corpus_later_in_the_push(server, pusher_a, pusher_b, calm, stage, mode):
    reached = "hostile-push reached check-commits"
    before = server.stderr_text().count(reached)
    hostile_push_is_refused(server, pusher_a, pusher_b, calm, mode, stage)
    assert server.stderr_text().count(reached) > before  # check-refs let it through


def hostile_push_is_refused(server, pusher_a, pusher_b, calm, mode, stage):
    """A's push through the misbehaving plugin is refused, with no reference moved, while B
    pushes (one accepted, one refused) and calls its API."""
    plugin, pusher = pusher_a
    assert_json(bind(server, "push_rules", plugin_id=plugin["id"],
                     config={"mode": mode, "stage": stage},
                     failure_policy="fail_closed", timeout_ms=TIMEOUT_MS), 200)
    before = pusher.refs()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        pushing = pool.submit(pusher.push, f"{mode} push")
        tenant_b_pushes(server, calm, pusher_b)
        push = pushing.result(timeout=150)
    if mode == "log_flood":  # the log is capped; the plugin's answer (allow) stands
        assert push.returncode == 0, push.stderr
        return
    assert push.returncode != 0, push.stderr
    assert UNAVAILABLE in push.stderr, push.stderr
    assert "pre-receive hook declined" in push.stderr, push.stderr
    assert pusher.refs() == before  # no reference moved
    assert_json(server.request("GET", "/user", token=server.root_token), 200)


# ---- uploads ------------------------------------------------------------------------


def test_forbidden_imports_are_refused_at_upload(server, forbidden_import_wasm):
    r = upload(server, forbidden_import_wasm, name="forbidden.wasm")
    body = assert_json(r, 400)
    assert "imports wasi:sockets/" in body["message"], body
    assert "outbound-http" in body["message"], body


def test_uploads_are_capped(make_server, hostile_wasm):
    srv = make_server({"TRELLIS_PLUGIN_MAX_UPLOAD_BYTES": str(len(hostile_wasm) - 1)})
    assert_json(upload(srv, hostile_wasm), 413, {"message": "413 Request Entity Too Large"})
    rows = assert_json(srv.request("GET", "/application/plugins", token=srv.root_token), 200)
    assert all(p["built_in"] for p in rows), rows
    srv_ok = make_server({"TRELLIS_PLUGIN_MAX_UPLOAD_BYTES": str(len(hostile_wasm))})
    assert_json(upload(srv_ok, hostile_wasm), 201)
