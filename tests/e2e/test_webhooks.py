"""Webhook delivery end to end: project hooks' Issue and Note Hooks reach a real HTTP receiver
in GitLab's format with GitLab's headers, retries keep their idempotency key, failing hooks are
disabled as GitLab does, the delivery log, resend and test endpoints, formatters chosen per hook
(GitLab, chat, CloudEvents, a hostile plugin) and the bad inputs of every endpoint.
System hooks are in test_system_hooks.py; crash safety in test_webhooks_crash.py."""

from __future__ import annotations

import re
import secrets
import time

import pytest

from conftest import (
    FORBIDDEN,
    ISO_MS,
    LOOPBACK_RECEIVERS,
    PROJECT_NOT_FOUND,
    UNAUTHORIZED,
    WebhookReceiver,
    assert_json,
    bind,
    make_user,
    other_tenant,
    upload,
)

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
ISO_SECONDS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
UTC_TEXT = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$")

# The keys of GitLab's documented examples ("Webhook events"), for the parts Trellis has
# (escalation_* belong to incidents only).
ISSUE_TOP = {"object_kind", "event_type", "user", "project", "object_attributes", "repository",
             "labels", "changes", "assignees", "assignee"}
ISSUE_ATTRS = {
    "id", "title", "assignee_ids", "assignee_id", "author_id", "project_id", "created_at",
    "updated_at", "updated_by_id", "last_edited_at", "last_edited_by_id", "relative_position",
    "description", "milestone_id", "state_id", "confidential", "discussion_locked", "due_date",
    "moved_to_id", "duplicated_to_id", "time_estimate", "total_time_spent", "time_change",
    "human_total_time_spent", "human_time_estimate", "human_time_change", "weight",
    "health_status", "type", "iid", "url", "state", "action", "severity", "labels",
}
PROJECT_KEYS = {"id", "name", "description", "web_url", "avatar_url", "git_ssh_url", "git_http_url",
                "namespace", "visibility_level", "path_with_namespace", "default_branch",
                "ci_config_path", "homepage", "url", "ssh_url", "http_url"}
USER_KEYS = {"id", "name", "username", "avatar_url", "email"}
LABEL_KEYS = {"id", "title", "color", "project_id", "created_at", "updated_at", "template",
              "description", "type", "group_id"}
NOTE_TOP = {"object_kind", "event_type", "user", "project_id", "project", "repository",
            "object_attributes", "issue"}
NOTE_ATTRS = {"id", "note", "noteable_type", "author_id", "created_at", "updated_at", "project_id",
              "attachment", "line_code", "commit_id", "noteable_id", "system", "st_diff", "action",
              "url"}


@pytest.fixture(scope="module")
def server(make_server):
    """The operator opens loopback (where the receivers listen) and the tenant allows local
    requests from hooks."""
    srv = make_server(LOOPBACK_RECEIVERS)
    assert_json(srv.request("PUT", "/application/settings", token=srv.root_token,
                            json={"allow_local_requests_from_web_hooks_and_services": True,
                                  "allow_local_requests_from_system_hooks": True}), 200)
    return srv


def new_project(server, token=None, **extra):
    body = {"name": "hooked-" + secrets.token_hex(3), **extra}
    return assert_json(server.request("POST", "/projects", token=token or server.root_token, json=body), 201)


def add_hook(server, project, url, **settings):
    """A hook made by root; `settings` may include the hook's secret `token`."""
    r = server.request("POST", f"/projects/{project['id']}/hooks", token=server.root_token,
                       json={"url": url, **settings})
    return assert_json(r, 201)


def new_issue(server, project, **fields):
    body = {"title": "Crash on save " + secrets.token_hex(2), **fields}
    r = server.request("POST", f"/projects/{project['id']}/issues", token=server.root_token, json=body)
    return assert_json(r, 201)


def hook_state(server, project, hook):
    r = server.request("GET", f"/projects/{project['id']}/hooks/{hook['id']}", token=server.root_token)
    return assert_json(r, 200)


def events(server, project, hook, **params):
    r = server.request("GET", f"/projects/{project['id']}/hooks/{hook['id']}/events",
                       token=server.root_token, params=params)
    return assert_json(r, 200)


def check_headers(request, hook, event, token=None, server=None):
    h = request["headers"]
    assert h["content-type"] == "application/json"
    assert h["x-gitlab-event"] == event
    assert re.match(r"^GitLab/\d+\.\d+\.\d+", h["user-agent"])
    assert UUID.match(h["x-gitlab-webhook-uuid"]) and UUID.match(h["x-gitlab-event-uuid"])
    assert UUID.match(h["idempotency-key"])
    assert h["x-gitlab-instance"] == server.url
    if token is None:
        assert "x-gitlab-token" not in h
    else:
        assert h["x-gitlab-token"] == token


# ---- bodies and headers ----------------------------------------------------------


def test_issue_hook_open_update_close_in_gitlabs_format(server, receiver):
    project = new_project(server)
    label = assert_json(server.request("POST", f"/projects/{project['id']}/labels", token=server.root_token,
                                       json={"name": "API", "color": "#ffffff", "description": "API related"}), 201)
    hook = add_hook(server, project, receiver.url, token="s3cret", issues_events=True, push_events=False)
    assert hook["alert_status"] == "executable" and hook["disabled_until"] is None
    assert hook["formatter"] == "gitlab" and "token" not in hook
    issue = new_issue(server, project, labels="API", assignee_ids=[1], description="Create new API")

    (opened,) = receiver.wait(1, "Issue Hook")
    check_headers(opened, hook, "Issue Hook", token="s3cret", server=server)
    body = opened["json"]
    assert set(body) == ISSUE_TOP
    assert body["object_kind"] == "issue" and body["event_type"] == "issue"
    assert set(body["user"]) == USER_KEYS and body["user"]["username"] == "root"
    assert set(body["project"]) == PROJECT_KEYS
    assert body["project"]["id"] == project["id"]
    assert body["project"]["path_with_namespace"] == project["path_with_namespace"]
    assert body["project"]["web_url"] == project["web_url"]
    assert body["project"]["git_http_url"] == project["http_url_to_repo"]
    assert body["project"]["git_ssh_url"] == project["ssh_url_to_repo"]
    assert body["project"]["visibility_level"] == 0
    assert body["repository"] == {"name": project["name"], "url": project["http_url_to_repo"],
                                  "description": "", "homepage": project["web_url"]}
    attrs = body["object_attributes"]
    assert set(attrs) >= ISSUE_ATTRS, ISSUE_ATTRS - set(attrs)
    assert attrs["action"] == "open" and attrs["state"] == "opened" and attrs["state_id"] == 1
    assert attrs["id"] == issue["id"] and attrs["iid"] == issue["iid"]
    assert attrs["title"] == issue["title"] and attrs["description"] == "Create new API"
    assert attrs["url"] == issue["web_url"] and attrs["type"] == "Issue"
    assert attrs["assignee_ids"] == [1] and attrs["assignee_id"] == 1 and attrs["author_id"] == 1
    assert ISO_SECONDS.match(attrs["created_at"]) and ISO_SECONDS.match(attrs["updated_at"])
    assert [l["title"] for l in attrs["labels"]] == ["API"]
    assert set(body["labels"][0]) == LABEL_KEYS and body["labels"][0]["id"] == label["id"]
    assert body["assignees"][0]["username"] == "root" and body["assignee"] == body["assignees"][0]
    assert body["changes"] == {}

    r = server.request("PUT", f"/projects/{project['id']}/issues/{issue['iid']}", token=server.root_token,
                       json={"title": "Renamed", "labels": ""})
    assert_json(r, 200)
    updated = receiver.wait(2, "Issue Hook")[1]["json"]
    assert updated["object_attributes"]["action"] == "update"
    assert updated["changes"]["title"] == {"previous": issue["title"], "current": "Renamed"}
    assert [l["title"] for l in updated["changes"]["labels"]["previous"]] == ["API"]
    assert updated["changes"]["labels"]["current"] == []
    assert UTC_TEXT.match(updated["changes"]["updated_at"]["current"])

    server.request("PUT", f"/projects/{project['id']}/issues/{issue['iid']}", token=server.root_token,
                   json={"state_event": "close"})
    closed = receiver.wait(3, "Issue Hook")[2]["json"]
    assert closed["object_attributes"]["action"] == "close"
    assert closed["object_attributes"]["state"] == "closed"
    assert closed["changes"]["state_id"] == {"previous": 1, "current": 2}
    server.request("PUT", f"/projects/{project['id']}/issues/{issue['iid']}", token=server.root_token,
                   json={"state_event": "reopen"})
    assert receiver.wait(4, "Issue Hook")[3]["json"]["object_attributes"]["action"] == "reopen"

    # every request is one event: distinct event UUIDs and idempotency keys, one webhook UUID
    sent = receiver.requests()
    assert len({r["headers"]["x-gitlab-event-uuid"] for r in sent}) == 4
    assert len({r["headers"]["idempotency-key"] for r in sent}) == 4
    assert len({r["headers"]["x-gitlab-webhook-uuid"] for r in sent}) == 1


def test_note_hook_and_confidential_routing(server):
    public, confidential = WebhookReceiver(), WebhookReceiver()
    try:
        project = new_project(server)
        add_hook(server, project, public.url, note_events=True, issues_events=True, push_events=False)
        add_hook(server, project, confidential.url, confidential_note_events=True,
                 confidential_issues_events=True, push_events=False)
        issue = new_issue(server, project)
        secret = new_issue(server, project, confidential=True)
        r = server.request("POST", f"/projects/{project['id']}/issues/{issue['iid']}/notes",
                           token=server.root_token, json={"body": "Hello world"})
        note = assert_json(r, 201)
        r = server.request("POST", f"/projects/{project['id']}/issues/{secret['iid']}/notes",
                           token=server.root_token, json={"body": "psst"})
        assert_json(r, 201)

        (hook_note,) = public.wait(1, "Note Hook")
        body = hook_note["json"]
        assert set(body) == NOTE_TOP
        assert body["object_kind"] == "note" and body["event_type"] == "note"
        attrs = body["object_attributes"]
        assert set(attrs) >= NOTE_ATTRS
        assert attrs["note"] == "Hello world" and attrs["noteable_type"] == "Issue"
        assert attrs["noteable_id"] == issue["id"] and attrs["action"] == "create"
        assert attrs["url"] == f"{issue['web_url']}#note_{note['id']}"
        assert UTC_TEXT.match(attrs["created_at"]) and attrs["system"] is False
        assert body["issue"]["iid"] == issue["iid"] and body["issue"]["title"] == issue["title"]
        assert body["project_id"] == project["id"]

        (secret_note,) = confidential.wait(1, "Confidential Note Hook")
        assert secret_note["json"]["event_type"] == "confidential_note"
        (secret_issue,) = confidential.wait(1, "Confidential Issue Hook")
        assert secret_issue["json"]["event_type"] == "confidential_issue"
        time.sleep(1)
        # nothing confidential reached the public hook, nothing public the confidential one
        assert {r["headers"]["x-gitlab-event"] for r in public.requests()} == {"Issue Hook", "Note Hook"}
        assert len(public.requests("Issue Hook")) == 1
        assert {r["headers"]["x-gitlab-event"] for r in confidential.requests()} == {
            "Confidential Issue Hook", "Confidential Note Hook"}
    finally:
        public.close()
        confidential.close()


def test_toggles_off_and_hooks_created_later_get_nothing_earlier(server, receiver):
    project = new_project(server)
    new_issue(server, project)
    hook = add_hook(server, project, receiver.url)  # push events only (GitLab's default)
    new_issue(server, project)
    time.sleep(1.5)
    assert receiver.requests() == []
    r = server.request("PUT", f"/projects/{project['id']}/hooks/{hook['id']}", token=server.root_token,
                       json={"url": receiver.url, "issues_events": True})
    assert_json(r, 200)
    issue = new_issue(server, project)
    (only,) = receiver.wait(1)
    assert only["json"]["object_attributes"]["iid"] == issue["iid"]


# ---- retries, auto-disabling, the log ----------------------------------------------


def test_retries_keep_the_idempotency_key_and_the_log_shows_each_attempt(server, receiver):
    receiver.script = [500, 502, 503]
    project = new_project(server)
    hook = add_hook(server, project, receiver.url, issues_events=True, push_events=False)
    new_issue(server, project)
    attempts = receiver.wait(4, timeout=30)
    assert len({a["headers"]["idempotency-key"] for a in attempts}) == 1
    assert len({a["headers"]["x-gitlab-event-uuid"] for a in attempts}) == 1
    assert len({a["body"] for a in attempts}) == 1
    time.sleep(0.5)
    assert hook_state(server, project, hook)["alert_status"] == "executable"
    log = events(server, project, hook)
    assert [e["response_status"] for e in log] == ["200", "503", "502", "500"]
    newest = log[0]
    assert newest["trigger"] == "issue_hooks" and newest["url"] == receiver.url
    assert newest["request_headers"]["X-Gitlab-Event"] == "Issue Hook"
    assert newest["request_data"]["object_kind"] == "issue"
    assert newest["response_body"] == '{"ok":true}' and newest["execution_duration"] > 0
    assert [e["response_status"] for e in events(server, project, hook, status="server_failure")] == \
        ["503", "502", "500"]
    assert [e["response_status"] for e in events(server, project, hook, **{"status[]": ["200"]})] == ["200"]

    # resend: the same payload and idempotency key, answered with the receiver's status
    r = server.request("POST", f"/projects/{project['id']}/hooks/{hook['id']}/events/{log[-1]['id']}/resend",
                       token=server.root_token)
    assert_json(r, 201, {"response_status": 200})
    resent = receiver.wait(5)[4]
    assert resent["headers"]["idempotency-key"] == attempts[0]["headers"]["idempotency-key"]
    assert resent["body"] == attempts[0]["body"]


def test_four_failures_disable_the_hook_and_a_good_test_enables_it(server):
    failing = WebhookReceiver(status=500)
    try:
        project = new_project(server)
        hook = add_hook(server, project, failing.url, token="tok", issues_events=True, push_events=False)
        new_issue(server, project)
        failing.wait(4, timeout=30)
        assert server.wait_for(
            lambda: hook_state(server, project, hook)["alert_status"] == "temporarily_disabled", timeout=5)
        state = hook_state(server, project, hook)
        assert ISO_MS.match(state["disabled_until"])
        time.sleep(2)
        assert len(failing.requests()) == 4  # disabled: the retries wait, new events are dropped
        new_issue(server, project)
        time.sleep(1)
        assert len(failing.requests()) == 4

        failing.status = 200
        r = server.request("POST", f"/projects/{project['id']}/hooks/{hook['id']}/test/issues_events",
                           token=server.root_token)
        assert_json(r, 201, {"message": "201 Created"})
        test_request = failing.requests()[-1]
        assert test_request["headers"]["x-gitlab-token"] == "tok"
        assert test_request["json"]["object_kind"] == "issue"
        state = hook_state(server, project, hook)
        assert state["alert_status"] == "executable" and state["disabled_until"] is None
    finally:
        failing.close()


def test_test_endpoint_triggers(server, receiver):
    project = new_project(server)
    hook = add_hook(server, project, receiver.url)
    base = f"/projects/{project['id']}/hooks/{hook['id']}/test"
    r = server.request("POST", f"{base}/issues_events", token=server.root_token)
    assert_json(r, 422, {"message": "Ensure the project has issues."})
    r = server.request("POST", f"{base}/merge_requests_events", token=server.root_token)
    assert_json(r, 422, {"message": "Ensure the project has merge requests."})
    r = server.request("POST", f"{base}/push_events", token=server.root_token)
    assert_json(r, 422, {"message": "Ensure the project has at least one commit."})
    r = server.request("POST", f"{base}/bogus", token=server.root_token)
    assert_json(r, 400, {"error": "trigger does not have a valid value"})
    issue = new_issue(server, project)
    r = server.request("POST", f"{base}/issues_events", token=server.root_token)
    assert_json(r, 201)
    sent = receiver.requests("Issue Hook")[-1]["json"]
    assert sent["object_attributes"]["iid"] == issue["iid"]
    receiver.status = 404
    r = server.request("POST", f"{base}/issues_events", token=server.root_token)
    assert_json(r, 422, {"message": "404 Not Found"})


# ---- formatters -----------------------------------------------------------------


def test_formatter_is_chosen_per_hook(server):
    gitlab_rx, chat_rx, cloud_rx = WebhookReceiver(), WebhookReceiver(), WebhookReceiver()
    try:
        project = new_project(server)
        add_hook(server, project, gitlab_rx.url, issues_events=True, push_events=False)
        add_hook(server, project, chat_rx.url, issues_events=True, push_events=False, formatter="chat")
        cloud = add_hook(server, project, cloud_rx.url, issues_events=True, push_events=False,
                         formatter="cloudevents")
        assert cloud["formatter"] == "cloudevents"
        issue = new_issue(server, project, title="Crash on save")
        gitlab_body = gitlab_rx.wait(1)[0]["json"]
        assert gitlab_body["object_kind"] == "issue"
        (chat,) = chat_rx.wait(1)
        assert chat["json"] == {
            "text": f"root opened issue #{issue['iid']} *Crash on save* in {project['path_with_namespace']}"}
        assert chat["headers"]["x-gitlab-event"] == "Issue Hook"
        (event,) = cloud_rx.wait(1)
        assert event["headers"]["content-type"] == "application/cloudevents+json"
        body = event["json"]
        assert body["specversion"] == "1.0" and body["type"] == "com.gitlab.issue"
        assert body["id"] == event["headers"]["x-gitlab-event-uuid"]
        assert body["source"] == project["web_url"] and body["subject"] == f"issues/{issue['iid']}"
        assert body["datacontenttype"] == "application/json"
        assert body["data"] == gitlab_body
    finally:
        for rx in (gitlab_rx, chat_rx, cloud_rx):
            rx.close()


@pytest.mark.parametrize("mode,policy,delivered", [
    ("trap", "fail_open", "gitlab"),
    ("loop", "fail_open", "gitlab"),
    ("alloc", "fail_closed", None),
    ("panic", "fail_closed", None),
    ("skip", "fail_open", None),
    ("fine", "fail_closed", "hostile"),
])
def test_hostile_formatter_follows_its_failure_policy(server, hostile_formatter_wasm, mode, policy, delivered):
    rx, bystander = WebhookReceiver(), WebhookReceiver()
    try:
        r = upload(server, hostile_formatter_wasm)
        assert r.status_code in (200, 201), r.text
        plugin = r.json()
        assert_json(bind(server, "webhook_formatter", plugin_id=plugin["id"], config={"mode": mode},
                         failure_policy=policy), 200)
        project = new_project(server)
        hook = add_hook(server, project, rx.url, issues_events=True, push_events=False, formatter="plugin")
        add_hook(server, project, bystander.url, issues_events=True, push_events=False)
        new_issue(server, project)
        # the other hook of the project is not affected
        assert bystander.wait(1)[0]["json"]["object_kind"] == "issue"
        if delivered == "gitlab":
            assert rx.wait(1)[0]["json"]["object_kind"] == "issue"
        elif delivered == "hostile":
            sent = rx.wait(1)[0]
            assert sent["json"] == {"hostile": "Issue Hook"} and sent["headers"]["x-hostile"] == "yes"
        assert server.wait_for(lambda: events(server, project, hook), timeout=15)
        log = events(server, project, hook)[0]
        if delivered is None:
            time.sleep(0.5)
            assert rx.requests() == []
            assert log["internal_error_message"], log
            if mode == "skip":
                assert log["response_status"] == "skipped"
        elif delivered == "gitlab":
            assert "formatter" in log["internal_error_message"] and log["response_status"] == "200"
    finally:
        server.request("DELETE", "/application/plugin_hooks/webhook_formatter", token=server.root_token)
        rx.close()
        bystander.close()


# ---- bad inputs -------------------------------------------------------------------


def test_bad_inputs(server, receiver):
    project = new_project(server)
    path = f"/projects/{project['id']}/hooks"
    root = server.root_token
    for url in ("not a url", "ftp://example.com/x", "http://", ""):
        r = server.request("POST", path, token=root, json={"url": url})
        assert r.status_code in (400, 422), (url, r.text)
    r = server.request("POST", path, token=root, json={})
    assert_json(r, 400, {"error": "url is missing"})
    r = server.request("POST", path, token=root, json={"url": receiver.url, "formatter": "xml"})
    assert_json(r, 400, {"error": "formatter does not have a valid value"})
    r = server.request("POST", path, token=root, json={"url": receiver.url, "branch_filter_strategy": "glob"})
    assert_json(r, 400, {"error": "branch_filter_strategy does not have a valid value"})
    r = server.request("POST", path, token=root, json={"url": receiver.url, "branch_filter_strategy": "regex",
                                                       "push_events_branch_filter": "("})
    assert_json(r, 400, {"message": {"push_events_branch_filter": ["not valid RE2 syntax"]}})
    r = server.request("POST", path, token=root, json={"url": receiver.url, "issues_events": "maybe"})
    assert_json(r, 400, {"error": "issues_events is invalid"})
    hook = add_hook(server, project, receiver.url, branch_filter_strategy="regex",
                    push_events_branch_filter="^release-")
    assert hook["branch_filter_strategy"] == "regex"

    # local addresses only when the instance allows them
    assert_json(server.request("PUT", "/application/settings", token=root,
                               json={"allow_local_requests_from_web_hooks_and_services": False}), 200)
    try:
        r = server.request("POST", path, token=root, json={"url": receiver.url})
        assert_json(r, 422, {"message": "Invalid url given"})
    finally:
        assert_json(server.request("PUT", "/application/settings", token=root,
                                   json={"allow_local_requests_from_web_hooks_and_services": True}), 200)

    base = f"{path}/{hook['id']}"
    assert_json(server.request("GET", f"{path}/999999/events", token=root), 404, {"message": "404 Hook Not Found"})
    assert_json(server.request("GET", f"{base}/events", token=root, params={"status": "teapot"}), 400,
                {"error": "status is invalid"})
    assert_json(server.request("POST", f"{base}/events/999999/resend", token=root), 404,
                {"message": "404 Hook log Not Found"})
    assert_json(server.request("POST", f"{base}/events/x/resend", token=root), 400,
                {"error": "hook_log_id is invalid"})
    assert_json(server.request("GET", f"{base}/events"), 401, UNAUTHORIZED)
    assert_json(server.request("POST", f"{base}/test/issues_events"), 401, UNAUTHORIZED)
    _, developer = make_user(server, "dev")
    r = server.request("POST", f"/projects/{project['id']}/members", token=root,
                       json={"user_id": server.request("GET", "/user", token=developer).json()["id"],
                             "access_level": 30})
    assert_json(r, 201)
    assert_json(server.request("GET", f"{base}/events", token=developer), 403, FORBIDDEN)
    assert_json(server.request("POST", f"{base}/test/issues_events", token=developer), 403, FORBIDDEN)

    # another tenant's project and hook are not found
    host, other_root = other_tenant(server, "wh")
    assert_json(server.request("POST", path, token=other_root, host=host, json={"url": receiver.url}),
                404, PROJECT_NOT_FOUND)
    assert_json(server.request("GET", f"{base}/events", token=other_root, host=host), 404, PROJECT_NOT_FOUND)



# ---- the hook's secret token stays with its URL ---------------------------------------------


def test_a_new_url_without_a_token_drops_the_old_token(server, receiver):
    """GitLab's `WebHook#reset_token`: a Maintainer who may edit a hook but does not know its
    token cannot point it at their own receiver and read `X-Gitlab-Token`."""
    owner, owner_token = make_user(server, "own")
    maintainer, maintainer_token = make_user(server, "mnt")
    project = new_project(server, token=owner_token)
    assert_json(server.request("POST", f"/projects/{project['id']}/members", token=owner_token,
                               json={"user_id": maintainer.id, "access_level": 40}), 201)
    elsewhere = WebhookReceiver()
    try:
        hook = assert_json(server.request(
            "POST", f"/projects/{project['id']}/hooks", token=owner_token,
            json={"url": elsewhere.url, "token": "owners-secret", "issues_events": True,
                  "push_events": False}), 201)
        base = f"/projects/{project['id']}/hooks/{hook['id']}"
        # The same URL kept (another field changed): the token stays.
        assert_json(server.request("PUT", base, token=maintainer_token,
                                   json={"url": elsewhere.url, "note_events": True}), 200)
        new_issue(server, project)
        assert elsewhere.wait(1)[0]["headers"]["x-gitlab-token"] == "owners-secret"
        # A new URL without a token: the token is gone, the receiver sees none.
        assert_json(server.request("PUT", base, token=maintainer_token,
                                   json={"url": receiver.url}), 200)
        assert_json(server.request("POST", f"{base}/test/issues_events", token=maintainer_token),
                    201, {"message": "201 Created"})
        (sample,) = receiver.wait(1)
        assert "x-gitlab-token" not in sample["headers"]
        # A new URL with a new token: that token.
        assert_json(server.request("PUT", base, token=owner_token,
                                   json={"url": elsewhere.url, "token": "fresh"}), 200)
        new_issue(server, project)
        assert elsewhere.wait(2)[1]["headers"]["x-gitlab-token"] == "fresh"
    finally:
        elsewhere.close()


def test_a_logged_request_is_resent_only_to_the_url_it_was_made_for(server, receiver):
    project = new_project(server)
    first = WebhookReceiver()
    try:
        hook = add_hook(server, project, first.url, token="tok", issues_events=True,
                        push_events=False)
        new_issue(server, project)
        first.wait(1)
        # The delivery is logged once the receiver has answered: the log can trail the request.
        (logged,) = server.wait_for(lambda: events(server, project, hook))
        base = f"/projects/{project['id']}/hooks/{hook['id']}"
        assert_json(server.request("PUT", base, token=server.root_token,
                                   json={"url": receiver.url, "token": "tok"}), 200)
        r = server.request("POST", f"{base}/events/{logged['id']}/resend", token=server.root_token)
        assert_json(r, 422, {"message": "The hook URL has changed, and this log entry cannot be retried"})
        time.sleep(0.5)
        assert receiver.requests() == [] and len(first.requests()) == 1
    finally:
        first.close()


def test_system_hook_url_change_drops_the_token(server, receiver):
    elsewhere = WebhookReceiver()
    try:
        hook = assert_json(server.request("POST", "/hooks", token=server.root_token,
                                          json={"url": elsewhere.url, "token": "sys"}), 201)
        assert_json(server.request("PUT", f"/hooks/{hook['id']}", token=server.root_token,
                                   json={"url": receiver.url}), 200)
        assert_json(server.request("POST", f"/hooks/{hook['id']}", token=server.root_token), 201)
        assert "x-gitlab-token" not in receiver.wait(1)[0]["headers"]
    finally:
        server.request("DELETE", f"/hooks/{hook['id']}", token=server.root_token)
        elsewhere.close()


def test_a_push_test_samples_the_repository_when_no_push_was_recorded(server, receiver):
    """GitLab's `Gitlab::DataBuilder::Push.build_sample`: a README-only project has commits
    but no push event; the test sends its default branch's newest commits."""
    project = new_project(server, initialize_with_readme=True)
    hook = add_hook(server, project, receiver.url, token="t")
    r = server.request("POST", f"/projects/{project['id']}/hooks/{hook['id']}/test/push_events",
                       token=server.root_token)
    assert_json(r, 201, {"message": "201 Created"})
    (sample,) = receiver.wait(1)
    body = sample["json"]
    assert sample["headers"]["x-gitlab-event"] == "Push Hook"
    assert body["object_kind"] == "push" and body["ref"] == "refs/heads/main"
    assert body["user_username"] == "root" and body["total_commits_count"] == 1
    (commit,) = body["commits"]
    assert commit["message"].startswith("Initial commit") and "README.md" in commit["added"]
    assert body["checkout_sha"] == body["after"] == commit["id"]
    assert body["project"]["id"] == project["id"]
    # An empty repository has nothing to sample.
    empty = new_project(server)
    empty_hook = add_hook(server, empty, receiver.url)
    r = server.request("POST", f"/projects/{empty['id']}/hooks/{empty_hook['id']}/test/push_events",
                       token=server.root_token)
    assert_json(r, 422, {"message": "Ensure the project has at least one commit."})
