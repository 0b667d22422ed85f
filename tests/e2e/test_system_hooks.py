"""System hooks end to end: python-gitlab's `gl.hooks` against the real binary, GitLab's system
events (projects, users, keys, groups, memberships) compared field by field with GitLab's
"System hooks" examples at a real receiver, the test endpoint, and bad inputs."""

from __future__ import annotations

import re
import secrets
import time

import gitlab
import pytest

from conftest import (
    FORBIDDEN,
    LOOPBACK_RECEIVERS,
    UNAUTHORIZED,
    WebhookReceiver,
    assert_json,
    make_user,
    other_tenant,
)

ISO_SECONDS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"

# GitLab's documented keys of each system event.
PROJECT_EVENT = {"created_at", "updated_at", "event_name", "name", "owner_email", "owner_name", "owners",
                 "path", "path_with_namespace", "project_id", "project_namespace_id", "project_visibility"}
TEAM_EVENT = {"created_at", "updated_at", "event_name", "access_level", "project_id", "project_name",
              "project_path", "project_path_with_namespace", "user_email", "user_name", "user_username",
              "user_id", "project_visibility"}
USER_EVENT = {"created_at", "updated_at", "email", "event_name", "name", "username", "user_id"}
KEY_EVENT = {"event_name", "created_at", "updated_at", "username", "key", "id"}
GROUP_EVENT = {"created_at", "updated_at", "event_name", "name", "path", "group_id"}
GROUP_MEMBER_EVENT = {"created_at", "updated_at", "event_name", "group_access", "group_id", "group_name",
                      "group_path", "user_email", "user_name", "user_username", "user_id"}
HOOK_KEYS = {"id", "url", "created_at", "push_events", "tag_push_events", "merge_requests_events",
             "repository_update_events", "enable_ssl_verification", "alert_status",
             "disabled_until", "formatter", "url_variables", "custom_headers"}


@pytest.fixture(scope="module")
def server(make_server):
    srv = make_server(LOOPBACK_RECEIVERS)
    assert_json(srv.request("PUT", "/application/settings", token=srv.root_token,
                            json={"allow_local_requests_from_system_hooks": True}), 200)
    return srv


@pytest.fixture(scope="module")
def system_receiver(server):
    rx = WebhookReceiver()
    hook = server.gitlab().hooks.create({"url": rx.url, "token": "sys-secret"})
    yield rx, hook
    rx.close()


def event(rx, name, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for r in rx.requests("System Hook"):
            if r["json"] and r["json"].get("event_name") == name:
                return r
        time.sleep(0.05)
    raise AssertionError(f"no {name}: {[r['json'] for r in rx.requests()]}")


def test_python_gitlab_manages_system_hooks(server, gl):
    hook = gl.hooks.create({"url": "https://hooks.example/system", "token": "t",
                            "push_events": True, "repository_update_events": False})
    data = hook.asdict()
    assert set(data) == HOOK_KEYS
    assert data["push_events"] is True and data["repository_update_events"] is False
    assert data["tag_push_events"] is False and data["enable_ssl_verification"] is True
    assert "token" not in data and data["formatter"] == "gitlab"
    assert hook.id in [h.id for h in gl.hooks.list()]
    assert gl.hooks.get(hook.id).url == "https://hooks.example/system"
    r = server.request("PUT", f"/hooks/{hook.id}", token=server.root_token,
                       json={"url": "https://hooks.example/other", "formatter": "chat"})
    assert assert_json(r, 200)["formatter"] == "chat"
    gl.hooks.delete(hook.id)
    with pytest.raises(gitlab.GitlabGetError):
        gl.hooks.get(hook.id)


def test_project_user_key_group_and_member_events(server, gl, system_receiver):
    rx, _ = system_receiver
    root = server.root_token
    project = assert_json(server.request("POST", "/projects", token=root,
                                         json={"name": "sys-" + secrets.token_hex(3)}), 201)
    created = event(rx, "project_create")
    assert created["headers"]["x-gitlab-token"] == "sys-secret"
    body = created["json"]
    assert set(body) == PROJECT_EVENT
    assert body["project_id"] == project["id"] and body["path"] == project["path"]
    assert body["path_with_namespace"] == project["path_with_namespace"]
    assert body["owner_name"] == "Administrator" or body["owner_name"]
    assert body["owners"] == [{"name": body["owner_name"], "email": body["owner_email"]}]
    assert body["project_visibility"] == "private" and ISO_SECONDS.match(body["created_at"])

    assert_json(server.request("PUT", f"/projects/{project['id']}", token=root,
                               json={"description": "changed"}), 200)
    assert set(event(rx, "project_update")["json"]) == PROJECT_EVENT
    assert_json(server.request("PUT", f"/projects/{project['id']}", token=root,
                               json={"path": project["path"] + "-renamed"}), 200)
    renamed = event(rx, "project_rename")["json"]
    assert set(renamed) == PROJECT_EVENT | {"old_path_with_namespace"}
    assert renamed["old_path_with_namespace"] == project["path_with_namespace"]

    user, token = make_user(server, "sysu")
    body = event(rx, "user_create")["json"]
    assert set(body) == USER_EVENT and body["username"] == user.username and body["user_id"] == user.id

    r = server.request("POST", f"/projects/{project['id']}/members", token=root,
                       json={"user_id": user.id, "access_level": 40})
    assert_json(r, 201)
    body = event(rx, "user_add_to_team")["json"]
    assert set(body) == TEAM_EVENT and body["access_level"] == "Maintainer"
    assert body["user_username"] == user.username and body["project_id"] == project["id"]
    assert_json(server.request("PUT", f"/projects/{project['id']}/members/{user.id}", token=root,
                               json={"access_level": 30}), 200)
    assert event(rx, "user_update_for_team")["json"]["access_level"] == "Developer"
    assert server.request("DELETE", f"/projects/{project['id']}/members/{user.id}", token=root).status_code == 204
    assert set(event(rx, "user_remove_from_team")["json"]) == TEAM_EVENT

    key = assert_json(server.request("POST", "/user/keys", token=token, json={"title": "k", "key": KEY}), 201)
    body = event(rx, "key_create")["json"]
    assert set(body) == KEY_EVENT and body["username"] == user.username and body["key"] == KEY
    assert body["id"] == key["id"]
    assert server.request("DELETE", f"/user/keys/{key['id']}", token=token).status_code == 204
    assert event(rx, "key_destroy")["json"]["id"] == key["id"]

    group = assert_json(server.request("POST", "/groups", token=root,
                                       json={"name": "G sys", "path": "g-" + secrets.token_hex(3)}), 201)
    body = event(rx, "group_create")["json"]
    assert set(body) == GROUP_EVENT and body["group_id"] == group["id"] and body["path"] == group["path"]
    r = server.request("POST", f"/groups/{group['id']}/members", token=root,
                       json={"user_id": user.id, "access_level": 20})
    assert_json(r, 201)
    body = event(rx, "user_add_to_group")["json"]
    assert set(body) == GROUP_MEMBER_EVENT and body["group_access"] == "Reporter"
    assert_json(server.request("PUT", f"/groups/{group['id']}", token=root,
                               json={"path": group["path"] + "-x"}), 200)
    body = event(rx, "group_rename")["json"]
    assert body["old_path"] == group["path"] and body["full_path"] == group["path"] + "-x"

    r = server.request("PUT", f"/users/{user.id}", token=root, json={"username": user.username + "x"})
    assert_json(r, 200)
    assert event(rx, "user_rename")["json"]["old_username"] == user.username
    assert server.request("DELETE", f"/projects/{project['id']}", token=root).status_code in (202, 204)


def test_system_hook_test_endpoint(server, gl):
    rx = WebhookReceiver()
    try:
        hook = gl.hooks.create({"url": rx.url})
        r = server.request("POST", f"/hooks/{hook.id}", token=server.root_token)
        sample = {"project_id": 1, "owner_email": "example@gitlabhq.com", "owner_name": "Someone",
                  "name": "Ruby", "path": "ruby", "event_name": "project_create"}
        assert_json(r, 201, sample)
        sent = rx.wait(1)[0]
        assert sent["json"] == sample and sent["headers"]["x-gitlab-event"] == "System Hook"
        gl.hooks.delete(hook.id)
    finally:
        rx.close()


def test_bad_inputs(server, gl_non_admin, non_admin):
    root = server.root_token
    assert_json(server.request("GET", "/hooks"), 401, UNAUTHORIZED)
    assert_json(server.request("GET", "/hooks", token=non_admin["token"]), 403, FORBIDDEN)
    assert_json(server.request("POST", "/hooks", token=non_admin["token"],
                               json={"url": "https://hooks.example/x"}), 403, FORBIDDEN)
    with pytest.raises(gitlab.GitlabListError):
        gl_non_admin.hooks.list()
    assert_json(server.request("POST", "/hooks", token=root, json={}), 400, {"error": "url is missing"})
    assert_json(server.request("POST", "/hooks", token=root, json={"url": "nope"}), 422,
                {"message": "Invalid url given"})
    assert_json(server.request("POST", "/hooks", token=root,
                               json={"url": "https://hooks.example/x", "push_events": "perhaps"}),
                400, {"error": "push_events is invalid"})
    assert_json(server.request("GET", "/hooks/999999", token=root), 404, {"message": "404 Hook Not Found"})
    assert_json(server.request("DELETE", "/hooks/999999", token=root), 404, {"message": "404 Hook Not Found"})
    assert_json(server.request("GET", "/hooks/abc", token=root), 400, {"error": "hook_id is invalid"})
    assert_json(server.request("PUT", "/application/settings", token=root,
                               json={"allow_local_requests_from_system_hooks": False}), 200)
    try:
        assert_json(server.request("POST", "/hooks", token=root, json={"url": "http://127.0.0.1:9/x"}),
                    422, {"message": "Invalid url given"})
    finally:
        assert_json(server.request("PUT", "/application/settings", token=root,
                                   json={"allow_local_requests_from_system_hooks": True}), 200)
    # another tenant's hooks are its own
    hook = assert_json(server.request("POST", "/hooks", token=root, json={"url": "https://hooks.example/y"}), 201)
    host, other_root = other_tenant(server, "sh")
    assert_json(server.request("GET", f"/hooks/{hook['id']}", token=other_root, host=host), 404,
                {"message": "404 Hook Not Found"})
    assert assert_json(server.request("GET", "/hooks", token=other_root, host=host), 200) == []
