"""The cross-tenant matrix: every route the server has, visited with another tenant's
credentials, ids and paths, reaches nothing of this tenant's.

The routes come from the binary itself (`trellis routes`), so a new route is visited the day it
is added; a route whose path names a kind of object this file does not know fails the test until
the kind is added to `OBJECT_IDS`.

Tenant A is the server's default tenant, filled with one object of every kind; tenant B is a
second tenant with only its root user. For every route and every method:
- B's token on A's host is not a credential there: API routes answer 401;
- on B's host, with B's administrator token, A's ids and A's project path answer 404 (ids are
  allocated per tenant, and A's are ones B never allocated);
- no answer carries any of A's names, and A's rows are byte for byte what they were.
"""

from __future__ import annotations

import secrets
import subprocess
import time
import urllib.parse

import pytest
import requests

from conftest import TRELLIS_BIN, Server, make_user, other_tenant

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
# Tables whose rows change without anyone writing to the tenant: rate-limit counters, and the
# webhook dispatcher's cursor, queue and log (it reads tenant A's outbox in the background).
UNSNAPSHOTTED = {"rate_limit_counters", "webhook_cursors", "webhook_deliveries", "webhook_logs"}


def route_table() -> list[str]:
    out = subprocess.run([TRELLIS_BIN, "routes"], capture_output=True, text=True, check=True)
    routes = out.stdout.split()
    assert len(routes) > 100, routes
    return routes


@pytest.fixture(scope="module")
def tenant_a(server: Server) -> dict:
    """One object of each kind in the default tenant, named with a marker no answer to tenant
    B may contain."""
    marker = "zq" + secrets.token_hex(6)
    root = server.root_token
    gl = server.gitlab()
    user, user_token = make_user(server, marker)
    group = gl.groups.create({"name": f"{marker}g", "path": f"{marker}g"})
    project = gl.projects.create({"name": f"{marker}p", "namespace_id": group.id,
                                  "initialize_with_readme": True})
    issue = project.issues.create({"title": f"{marker} issue"})
    note = issue.notes.create({"body": f"{marker} note"})
    award = issue.awardemojis.create({"name": "thumbsup"})
    label = project.labels.create({"name": f"{marker}l", "color": "#FF0000"})
    milestone = project.milestones.create({"title": f"{marker}m"})
    project.commits.create({"branch": f"{marker}mr", "start_branch": "main",
                            "commit_message": f"{marker} change",
                            "actions": [{"action": "create", "file_path": f"{marker}.txt",
                                         "content": marker}]})
    merge_request = project.mergerequests.create({"source_branch": f"{marker}mr",
                                                  "target_branch": "main",
                                                  "title": f"{marker} mr"})
    thread = merge_request.discussions.create({"body": f"{marker} thread"})
    # Before the hook, so no delivery to it changes its row; checked, so no job changes the MR.
    for _ in range(100):
        if project.mergerequests.get(merge_request.iid).merge_status == "can_be_merged":
            break
        time.sleep(0.1)
    hook = project.hooks.create({"url": "https://hooks.example/x"})
    protected = project.protectedbranches.create({"name": f"{marker}pb"})
    protected_tag = project.protectedtags.create({"name": "v*"})
    system_hook = server.request("POST", "/hooks", token=root, data={"url": "https://hooks.example/s"})
    assert system_hook.status_code == 201, system_hook.text
    project.members.create({"user_id": user.id, "access_level": 30})
    key = server.request("POST", f"/users/{user.id}/keys", token=root, data={
        "title": f"{marker}k",
        "key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
    })
    assert key.status_code == 201, key.text
    email = server.request("POST", f"/users/{user.id}/emails", token=root,
                           data={"email": f"{marker}@example.org", "skip_confirmation": True})
    assert email.status_code == 201, email.text
    impersonation = server.request("POST", f"/users/{user.id}/impersonation_tokens", token=root,
                                   data={"name": marker, "scopes[]": "api"})
    assert impersonation.status_code == 201, impersonation.text
    application = server.request("POST", "/applications", token=root, data={
        "name": f"{marker}app", "redirect_uri": "https://app.example/cb", "scopes": "api"})
    assert application.status_code == 201, application.text
    # The OpenID signing key is made on the first request for it, from anyone: make it now, so
    # that the snapshot holds it.
    assert requests.get(server.url + "/oauth/discovery/keys", timeout=10).status_code == 200
    plugins = server.request("GET", "/application/plugins", token=root)
    assert plugins.status_code == 200 and plugins.json(), plugins.text
    return {
        "marker": marker,
        "user": user.id,
        "user_token": user_token,
        "group": group.id,
        "project": project.id,
        "project_path": urllib.parse.quote(project.path_with_namespace, safe=""),
        "issue": issue.iid,
        "issue_id": issue.id,
        "merge_request": merge_request.iid,
        "discussion": thread.id,
        "note": note.id,
        "award": award.id,
        "label": label.id,
        "milestone": milestone.id,
        "hook": hook.id,
        "protected_branch": protected.name,
        "protected_tag": protected_tag.name,
        "key": key.json()["id"],
        "email": email.json()["id"],
        "impersonation": impersonation.json()["id"],
        "application": application.json()["id"],
        "plugin": plugins.json()[0]["id"],
        "namespace": group.id,
    }


def object_ids(a: dict) -> dict:
    """What each path parameter is, by the segment before it: A's id for it."""
    return {
        ("projects", "{id}"): a["project"],
        ("fork", "{forked_from_id}"): a["project"],
        ("groups", "{id}"): a["group"],
        ("share", "{group_id}"): a["group"],
        ("namespaces", "{id}"): a["namespace"],
        ("users", "{id}"): a["user"],
        ("users", "{user_id}"): a["user"],
        ("user", "{user_id}"): a["user"],
        ("all", "{user_id}"): a["user"],
        ("members", "{user_id}"): a["user"],
        ("avatar", "{id}"): a["user"],
        ("issues", "{issue_iid}"): a["issue"],
        ("issues", "{id}"): a["issue_id"],
        ("merge_requests", "{merge_request_iid}"): a["merge_request"],
        ("discussions", "{discussion_id}"): a["discussion"],
        ("notes", "{note_id}"): a["note"],
        ("award_emoji", "{award_id}"): a["award"],
        ("labels", "{label_id}"): a["label"],
        ("milestones", "{milestone_id}"): a["milestone"],
        ("hooks", "{hook_id}"): a["hook"],
        ("protected_branches", "{name}"): a["protected_branch"],
        ("protected_tags", "{name}"): a["protected_tag"],
        ("events", "{hook_log_id}"): a["hook"],
        ("keys", "{key_id}"): a["key"],
        ("gpg_keys", "{key_id}"): a["key"],
        ("emails", "{email_id}"): a["email"],
        ("impersonation_tokens", "{impersonation_token_id}"): a["impersonation"],
        ("personal_access_tokens", "{id}"): a["impersonation"],
        ("applications", "{id}"): a["application"],
        ("authorized_applications", "{id}"): a["application"],
        ("plugins", "{id}"): a["plugin"],
    }


# Parameters that name no tenant object: they are filled in, and a route with only these
# has no id of A's to try on B's host.
NAMES = {"{provider}": "ldapmain", "{hook}": "spam_check", "{filename}": "avatar.png",
         # names inside a project's repository: the project id is what A owns
         "{branch}": "main", "{tag_name}": "v1.0", "{file_path}": "README.md", "{sha}": "main", "{trigger}": "issues_events",
         "{section}": "general", "{action}": "block"}


def fill(route: str, ids: dict) -> tuple[str, bool]:
    """The route with A's ids in it, and whether it names any object of A's."""
    segments = route.split("/")
    names_object = False
    for i, segment in enumerate(segments):
        if not segment.startswith("{"):
            continue
        if segment in NAMES:
            segments[i] = NAMES[segment]
            continue
        key = (segments[i - 1], segment)
        assert key in ids, f"{route}: add what {segment} after /{key[0]}/ names to OBJECT_IDS"
        segments[i] = str(ids[key])
        names_object = True
    return "/".join(segments), names_object


def snapshot(server: Server, tenant_id: str) -> dict:
    if server.engine == "postgres":
        tables = [r[0] for r in server.sql(
            "SELECT table_name FROM information_schema.columns "
            "WHERE column_name = 'tenant_id' AND table_schema = 'public'")]
    else:
        tables = [r[0] for r in server.sql(
            "SELECT m.name FROM sqlite_master m, pragma_table_info(m.name) p "
            "WHERE m.type = 'table' AND p.name = 'tenant_id'")]
    # The dispatcher also numbers A's deliveries and log entries in the background.
    only_requests = {"id_sequences": " AND name NOT LIKE 'webhook%'"}
    return {
        table: sorted(map(repr, server.sql(
            f"SELECT * FROM {table} WHERE tenant_id = {tenant_id}{only_requests.get(table, '')}")))
        for table in sorted(set(tables) - UNSNAPSHOTTED)
    }


def send(server: Server, method: str, path: str, host: str, token: str | None):
    headers = {"Host": host}
    if token:
        headers["PRIVATE-TOKEN"] = token
    return requests.request(method, server.url + path, headers=headers, allow_redirects=False,
                            data={"name": "x", "title": "x"} if method != "GET" else None,
                            timeout=30)


def test_no_route_reaches_another_tenant(server: Server, tenant_a):
    b_host, b_token = other_tenant(server, "b")
    a_id = server.sql("SELECT id FROM tenants WHERE host = ''")[0][0]
    before = snapshot(server, a_id)
    ids = object_ids(tenant_a)
    marker = tenant_a["marker"]
    wrong = []
    for route in route_table():
        path, names_object = fill(route, ids)
        api = route.startswith("/api/v4/")
        for method in METHODS:
            # B's token is no credential on A's host.
            resp = send(server, method, path, server.host, b_token)
            if api and resp.status_code not in (401, 405):
                wrong.append(f"A-host {method} {route}: {resp.status_code} {resp.text[:120]}")
            if marker in resp.text:
                wrong.append(f"A-host {method} {route} leaked A's data")
            if not names_object:
                continue
            # A's ids mean nothing on B's host, even to B's administrator.
            resp = send(server, method, path, b_host, b_token)
            if api and resp.status_code not in (400, 404, 405):
                wrong.append(f"B-host {method} {route}: {resp.status_code} {resp.text[:120]}")
            if marker in resp.text:
                wrong.append(f"B-host {method} {route} leaked A's data")
            # And A's project path, where the route takes a project.
            if route.startswith("/api/v4/projects/{id}"):
                by_path = path.replace(f"/projects/{ids[('projects', '{id}')]}",
                                       f"/projects/{tenant_a['project_path']}", 1)
                resp = send(server, method, by_path, b_host, b_token)
                if resp.status_code not in (400, 404, 405) or marker in resp.text:
                    wrong.append(f"B-host {method} {route} by path: {resp.status_code}")
    assert not wrong, "\n".join(wrong)
    assert snapshot(server, a_id) == before, "a request from tenant B changed tenant A's rows"
