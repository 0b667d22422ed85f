"""External authorization (issue 9): GitLab's external authorization service asked through the
built-in `external-authorization` plugin and its granted outbound HTTP, against a small
authorization service written here (a real HTTP server on loopback, in a thread).

The service answers by classification label: `allowed` 200, `refused` 401 with a reason,
`slow` after 5 s; the path `/redirect` answers 302 to 10.0.0.1.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import assert_json, make_user

REASON = "you lack the clearance"
TIMEOUT = 1.0


class AuthService(BaseHTTPRequestHandler):
    requests: list[dict] = []

    def do_POST(self):  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        AuthService.requests.append(body)
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "http://10.0.0.1/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        label = body["project_classification_label"]
        if label == "slow":
            time.sleep(5)
        status, answer = (200, {}) if label in ("allowed", "slow") else (401, {"reason": REASON})
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def service():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), AuthService)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def settings(server, **values):
    r = server.request("PUT", "/application/settings", token=server.root_token, json=values)
    assert_json(r, 200)


def enable(server, url, allow_local=True):
    settings(server, external_authorization_service_enabled=True,
             external_authorization_service_url=url,
             external_authorization_service_default_label="allowed",
             external_authorization_service_timeout=TIMEOUT,
             allow_local_requests_from_web_hooks_and_services=allow_local)


@pytest.fixture(scope="module")
def world(server, service):
    """A user, and public projects labelled allowed / refused / slow / none (default label)."""
    user = make_user(server, "ea")
    projects = {}
    for label in ("allowed", "refused", "slow", ""):
        r = server.request("POST", "/projects", token=server.root_token, json={
            "name": f"ea-{label or 'default'}", "visibility": "public",
            "external_authorization_classification_label": label})
        projects[label] = assert_json(r, 201)["id"]
    yield user, projects
    settings(server, external_authorization_service_enabled=False,
             allow_local_requests_from_web_hooks_and_services=False)


def get_project(server, project_id, token):
    return server.request("GET", f"/projects/{project_id}", token=token)


def test_allowed_and_refused_labels(server, service, world):
    (_, token), projects = world
    # Off: no one is asked.
    AuthService.requests.clear()
    assert get_project(server, projects["refused"], token).status_code == 200
    assert AuthService.requests == []
    enable(server, service)
    assert_json(get_project(server, projects["allowed"], token), 200)
    assert_json(get_project(server, projects[""], token), 200)
    for who in (token, server.root_token):  # administrators too
        r = get_project(server, projects["refused"], who)
        assert_json(r, 403, {"message": f"403 Forbidden - {REASON}"})
        r = server.request("GET", f"/projects/{projects['refused']}/issues", token=who)
        assert_json(r, 403, {"message": f"403 Forbidden - {REASON}"})
    sent = [b for b in AuthService.requests if b["project_classification_label"] == "refused"]
    assert sent and set(sent[0]) >= {"user_identifier", "project_classification_label",
                                     "identities"}
    assert "@" in sent[0]["user_identifier"]
    # Decisions are cached: asking again does not reach the service.
    before = len(AuthService.requests)
    assert get_project(server, projects["allowed"], token).status_code == 200
    assert len(AuthService.requests) == before
    # Anonymous callers are refused for labelled projects.
    assert server.request("GET", f"/projects/{projects['allowed']}").status_code == 403


def test_slow_service_is_a_refusal_within_the_timeout(server, service, world):
    _, projects = world
    enable(server, service)
    started = time.monotonic()
    r = get_project(server, projects["slow"], server.root_token)
    elapsed = time.monotonic() - started
    assert r.status_code == 403
    assert "time" in r.json()["message"]
    assert elapsed < TIMEOUT + 3  # loosely: well before the service's 5 s


def test_service_down_is_a_refusal(server, service, world):
    _, projects = world
    enable(server, "http://127.0.0.1:9/authorize")  # changing settings drops cached decisions
    r = get_project(server, projects["allowed"], server.root_token)
    assert r.status_code == 403
    assert r.json()["message"].startswith("403 Forbidden - ")


@pytest.mark.parametrize("url,refusal", [
    ("http://127.0.0.1:{port}/", "Requests to localhost are not allowed"),
    ("http://localhost:{port}/", "Requests to localhost are not allowed"),
    ("http://[::1]:{port}/", "Requests to localhost are not allowed"),
    ("http://10.0.0.1:{port}/", "Requests to the local network are not allowed"),
    ("http://169.254.169.254:{port}/", "Requests to the link local network are not allowed"),
])
def test_local_addresses_need_the_setting(server, service, world, url, refusal):
    _, projects = world
    port = service.rsplit(":", 1)[1]
    enable(server, url.format(port=port), allow_local=False)
    r = get_project(server, projects["allowed"], server.root_token)
    assert_json(r, 403)
    assert refusal in r.json()["message"]


def test_redirect_is_not_followed(server, service, world):
    _, projects = world
    AuthService.requests.clear()
    enable(server, service + "/redirect")
    r = get_project(server, projects["allowed"], server.root_token)
    assert r.status_code == 403
    assert len(AuthService.requests) == 1  # asked once; 10.0.0.1 never reached


def built_in_id(server):
    rows = assert_json(server.request("GET", "/application/plugins", token=server.root_token), 200)
    return next(p["id"] for p in rows if p["name"] == "external-authorization" and p["built_in"])


def test_outbound_http_must_be_granted_at_bind_time(server, service, world):
    _, projects = world
    plugin = built_in_id(server)
    config = {"url": service + "/"}
    r = server.request("PUT", "/application/plugin_hooks/external_authorization",
                       token=server.root_token, json={"plugin_id": plugin, "config": config})
    assert r.status_code == 400
    assert "outbound_http" in r.json()["message"]
    for bad in (["ftp://x"], ["http://a/path"], "not a url"):
        r = server.request("PUT", "/application/plugin_hooks/external_authorization",
                           token=server.root_token,
                           json={"plugin_id": plugin, "config": config, "outbound_http": bad})
        assert r.status_code == 400, bad
    # Granted another origin than the one it calls: the request is refused at call time.
    r = server.request("PUT", "/application/plugin_hooks/external_authorization",
                       token=server.root_token,
                       json={"plugin_id": plugin, "config": config,
                             "outbound_http": ["http://127.0.0.2:1"]})
    assert_json(r, 200)
    enable(server, service)
    r = get_project(server, projects["allowed"], server.root_token)
    assert r.status_code == 403
    assert "not among the origins granted" in r.json()["message"]
    # Granted the right origin: it works.
    r = server.request("PUT", "/application/plugin_hooks/external_authorization",
                       token=server.root_token,
                       json={"plugin_id": plugin, "config": config, "outbound_http": [service]})
    assert_json(r, 200)
    settings(server, external_authorization_service_timeout=TIMEOUT + 0.5)  # drop the cache
    assert_json(get_project(server, projects["allowed"], server.root_token), 200)
    r = server.request("DELETE", "/application/plugin_hooks/external_authorization",
                       token=server.root_token)
    assert r.status_code == 204


def test_lists_leave_refused_projects_out(server, service, world):
    (_, token), projects = world
    enable(server, service)
    for label, pid in projects.items():
        r = server.request("POST", f"/projects/{pid}/issues", token=server.root_token,
                           json={"title": f"issue in {label or 'default'}"})
        assert r.status_code == (403 if label in ("refused", "slow") else 201), label
    for who in (token, server.root_token):
        r = server.request("GET", "/projects", token=who, params={"per_page": 100})
        ids = {p["id"] for p in assert_json(r, 200)}
        assert projects["allowed"] in ids and projects[""] in ids
        assert projects["refused"] not in ids and projects["slow"] not in ids
        assert int(r.headers["X-Total"]) == len(ids)
        r = server.request("GET", "/issues", token=who, params={"scope": "all", "per_page": 100})
        issues = assert_json(r, 200)
        assert {i["project_id"] for i in issues} <= {projects["allowed"], projects[""]}
        assert int(r.headers["X-Total"]) == len(issues)
