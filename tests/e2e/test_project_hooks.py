"""Project hooks, push rules and uploads end to end: python-gitlab's managers, defaults,
the token never shown, access per role (401/403/404), bad inputs, and uploads served back."""

from __future__ import annotations

import secrets

import gitlab
import pytest

from conftest import PROJECT_NOT_FOUND, assert_json, make_user

HOOK_FLAGS = {
    "push_events": True,
    "issues_events": False,
    "confidential_issues_events": False,
    "merge_requests_events": False,
    "tag_push_events": False,
    "note_events": False,
    "confidential_note_events": False,
    "job_events": False,
    "pipeline_events": False,
    "wiki_page_events": False,
    "deployment_events": False,
    "releases_events": False,
    "enable_ssl_verification": True,
}


@pytest.fixture(scope="module")
def owner(server):
    return make_user(server, "owner")


@pytest.fixture(scope="module")
def dev(server):
    return make_user(server, "dev")


@pytest.fixture(scope="module")
def outsider(server):
    return make_user(server, "out")


@pytest.fixture(scope="module")
def projects(server, owner, dev):
    """A private and a public project of `owner`, with `dev` a developer of both."""
    gl = server.gitlab(owner[1])
    private = gl.projects.create({"name": "Hooked " + secrets.token_hex(2)})
    public = gl.projects.create({"name": "Open " + secrets.token_hex(2), "visibility": "public"})
    for p in (private, public):
        p.members.create({"user_id": dev[0].id, "access_level": 30})
    return private, public


# ---- hooks -------------------------------------------------------------------


def test_hook_create_defaults_list_get_update_delete(server, owner, projects):
    private, _ = projects
    project = server.gitlab(owner[1]).projects.get(private.id)
    hook = project.hooks.create({"url": "https://example.com/hook", "token": "s3cret"})
    data = hook.asdict()
    assert data["url"] == "https://example.com/hook"
    assert data["project_id"] == private.id
    assert data["push_events_branch_filter"] is None
    for name, default in HOOK_FLAGS.items():
        assert data[name] is default, name
    assert "token" not in data and data["created_at"].endswith("Z")
    assert set(data) == {"id", "url", "project_id", "push_events_branch_filter", "created_at",
                         "branch_filter_strategy", "alert_status", "disabled_until", "formatter",
                         "url_variables", "custom_headers", "repository_update_events",
                         *HOOK_FLAGS}
    assert data["alert_status"] == "executable" and data["disabled_until"] is None
    assert data["branch_filter_strategy"] == "wildcard" and data["formatter"] == "gitlab"

    assert [h.id for h in project.hooks.list()] == [hook.id]
    got = project.hooks.get(hook.id)
    assert got.asdict() == data

    got.issues_events = True
    got.push_events = False
    got.push_events_branch_filter = "main"
    got.url = "http://example.com/other"
    got.save()
    again = project.hooks.get(hook.id)
    assert again.issues_events is True and again.push_events is False
    assert again.push_events_branch_filter == "main"
    assert again.url == "http://example.com/other"
    assert again.enable_ssl_verification is True

    # wiki_events is accepted on update as wiki_page_events
    r = server.request("PUT", f"/projects/{private.id}/hooks/{hook.id}", token=owner[1],
                       json={"url": "http://example.com/other", "wiki_events": True, "releases_events": True})
    body = assert_json(r, 200)
    assert body["wiki_page_events"] is True and body["releases_events"] is True
    assert "token" not in body

    project.hooks.delete(hook.id)
    assert project.hooks.list() == []
    # idempotent
    r = server.request("DELETE", f"/projects/{private.id}/hooks/{hook.id}", token=owner[1])
    assert r.status_code == 204


def test_hook_all_toggles_on_create(server, owner, projects):
    private, _ = projects
    body = {name: not default for name, default in HOOK_FLAGS.items()}
    r = server.request("POST", f"/projects/{private.id}/hooks", token=owner[1],
                       json={"url": "https://example.com/all", **body})
    data = assert_json(r, 201)
    for name, value in body.items():
        assert data[name] is value, name


def test_hook_bad_inputs(server, owner, projects):
    private, _ = projects
    path = f"/projects/{private.id}/hooks"
    assert_json(server.request("POST", path, token=owner[1], json={}), 400, {"error": "url is missing"})
    # GitLab answers any URL problem with 422 "Invalid url given"
    invalid = {"message": "Invalid url given"}
    for bad in ["ftp://example.com/x", "not a url", "", "http://127.0.0.1:9/x", "http://10.0.0.1/",
                "http://169.254.169.254/latest", "http://[::1]/", "http://localhost/hook"]:
        r = server.request("POST", path, token=owner[1], json={"url": bad})
        assert_json(r, 422, invalid)
    r = server.request("POST", path, token=owner[1], json={"url": "https://e.com", "push_events": "maybe"})
    assert_json(r, 400, {"error": "push_events is invalid"})
    assert_json(server.request("GET", f"{path}/999999", token=owner[1]), 404, {"message": "404 Hook Not Found"})
    assert_json(server.request("PUT", f"{path}/999999", token=owner[1], json={"url": "https://e.com"}),
                404, {"message": "404 Hook Not Found"})
    assert_json(server.request("GET", f"{path}/abc", token=owner[1]), 400, {"error": "hook_id is invalid"})
    hook = assert_json(server.request("POST", path, token=owner[1], json={"url": "https://e.com"}), 201)
    assert_json(server.request("PUT", f"{path}/{hook['id']}", token=owner[1], json={}), 400,
                {"error": "url is missing"})


def test_hook_access(server, owner, dev, outsider, projects):
    private, public = projects
    for p in (private, public):
        path = f"/projects/{p.id}/hooks"
        assert_json(server.request("GET", path), 401, {"message": "401 Unauthorized"})
        assert_json(server.request("POST", path, json={"url": "https://e.com"}), 401)
        assert_json(server.request("GET", path, token=dev[1]), 403, {"message": "403 Forbidden"})
        assert_json(server.request("POST", path, token=dev[1], json={"url": "https://e.com"}), 403)
    # an outsider sees the public project (403) but not the private one (404)
    assert_json(server.request("GET", f"/projects/{public.id}/hooks", token=outsider[1]), 403)
    assert_json(server.request("GET", f"/projects/{private.id}/hooks", token=outsider[1]), 404, PROJECT_NOT_FOUND)
    assert_json(server.request("DELETE", f"/projects/{private.id}/hooks/1", token=outsider[1]), 404, PROJECT_NOT_FOUND)
    # a maintainer and an administrator may manage hooks
    maint, maint_token = make_user(server, "maint")
    server.gitlab(owner[1]).projects.get(private.id).members.create({"user_id": maint.id, "access_level": 40})
    r = server.request("POST", f"/projects/{private.id}/hooks", token=maint_token, json={"url": "https://m.example"})
    hook = assert_json(r, 201)
    assert server.gitlab().projects.get(private.id).hooks.get(hook["id"]).url == "https://m.example"
    with pytest.raises(gitlab.exceptions.GitlabGetError) as err:
        server.gitlab(dev[1]).projects.get(private.id, lazy=True).hooks.get(hook["id"])
    assert err.value.response_code == 403


# ---- push rules ----------------------------------------------------------------


def test_push_rule_lifecycle(server, owner, projects):
    private, _ = projects
    path = f"/projects/{private.id}/push_rule"
    r = server.request("GET", path, token=owner[1])
    assert r.status_code == 200 and r.json() is None
    assert_json(server.request("PUT", path, token=owner[1], json={"deny_delete_tag": True}), 404,
                {"message": "404 Push Rule Not Found"})

    project = server.gitlab(owner[1]).projects.get(private.id)
    rule = project.pushrules.create({"commit_message_regex": "Fixes \\d+", "deny_delete_tag": True,
                                     "max_file_size": 5})
    data = rule.asdict()
    assert data["project_id"] == private.id
    assert data["commit_message_regex"] == "Fixes \\d+"
    assert data["deny_delete_tag"] is True and data["member_check"] is False
    assert data["max_file_size"] == 5 and data["branch_name_regex"] is None
    assert set(data) == {
        "id", "project_id", "commit_message_regex", "commit_message_negative_regex", "branch_name_regex",
        "deny_delete_tag", "created_at", "member_check", "prevent_secrets", "author_email_regex",
        "file_name_regex", "max_file_size", "commit_committer_check", "reject_unsigned_commits",
    }
    assert_json(server.request("POST", path, token=owner[1], json={"member_check": True}), 422,
                {"error": "Project push rule exists"})

    got = project.pushrules.get()
    assert got.id == rule.id
    got.branch_name_regex = "^(feature|fix)/"
    got.prevent_secrets = True
    got.save()
    again = project.pushrules.get()
    assert again.branch_name_regex == "^(feature|fix)/" and again.prevent_secrets is True
    assert again.commit_message_regex == "Fixes \\d+" and again.max_file_size == 5

    project.pushrules.delete()
    r = server.request("GET", path, token=owner[1])
    assert r.status_code == 200 and r.json() is None
    assert server.request("DELETE", path, token=owner[1]).status_code == 204


def test_push_rule_bad_inputs_and_access(server, owner, dev, outsider, projects):
    private, public = projects
    path = f"/projects/{public.id}/push_rule"
    r = server.request("POST", path, token=owner[1], json={"branch_name_regex": "(unclosed"})
    body = assert_json(r, 400)
    assert list(body["message"]) == ["branch_name_regex"]
    assert body["message"]["branch_name_regex"][0].startswith("not valid RE2 syntax")
    assert_json(server.request("POST", path, token=owner[1], json={"max_file_size": -1}), 400,
                {"message": {"max_file_size": ["must be greater than or equal to 0"]}})
    assert_json(server.request("POST", path, token=owner[1], json={"max_file_size": "big"}), 400,
                {"error": "max_file_size is invalid"})
    r = server.request("POST", path, token=owner[1], json={})
    assert r.status_code == 400 and "at least one parameter must be provided" in r.json()["error"]
    # nothing was created by the failures
    assert server.request("GET", path, token=owner[1]).json() is None

    assert_json(server.request("GET", path), 401)
    assert_json(server.request("GET", path, token=dev[1]), 403)
    assert_json(server.request("POST", path, token=outsider[1], json={"member_check": True}), 403)
    assert_json(server.request("GET", f"/projects/{private.id}/push_rule", token=outsider[1]), 404, PROJECT_NOT_FOUND)
    r = server.request("POST", path, token=server.root_token, json={"member_check": True})
    assert assert_json(r, 201)["member_check"] is True
    server.request("DELETE", path, token=server.root_token)


# ---- uploads -------------------------------------------------------------------

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


def test_upload_image_and_serve_back(server, owner, dev, outsider, projects):
    private, _ = projects
    project = server.gitlab(dev[1]).projects.get(private.id)
    result = project.upload("my_logo.png", filedata=PNG)
    assert result["alt"] == "my logo"
    url = result["url"]
    secret = url.split("/")[2]
    assert len(secret) == 32 and all(c in "0123456789abcdef" for c in secret)
    assert url == f"/uploads/{secret}/my_logo.png"
    assert result["markdown"] == f"![my logo]({url})"

    r = server.request("POST", f"/projects/{private.id}/uploads", token=owner[1],
                       files={"file": ("notes v1.txt", b"hello\nworld\n", "text/plain")})
    body = assert_json(r, 201)
    assert body["alt"] == "notes_v1.txt".replace("_", " ")
    assert body["url"].endswith("/notes_v1.txt")
    assert body["markdown"] == f"[{body['alt']}]({body['url']})"
    assert body["full_path"] == f"/{private.path_with_namespace}{body['url']}"

    full = server.url + f"/{private.path_with_namespace}{url}"
    r = server.request("GET", full, token=dev[1])
    assert r.status_code == 200 and r.content == PNG
    assert r.headers["Content-Type"] == "image/png"
    r = server.request("GET", server.url + body["full_path"], token=owner[1])
    assert r.status_code == 200 and r.content == b"hello\nworld\n"
    # the project is private: 404 for a non-member and for anonymous callers
    assert server.request("GET", full, token=outsider[1]).status_code == 404
    assert server.request("GET", full).status_code == 404
    # unknown secret or file name
    assert server.request("GET", full.replace(secret, "0" * 32), token=dev[1]).status_code == 404
    assert server.request("GET", full.replace("my_logo", "other"), token=dev[1]).status_code == 404


def test_upload_public_project_is_served_to_anyone(server, owner, projects):
    _, public = projects
    r = server.request("POST", f"/projects/{public.id}/uploads", token=owner[1],
                       files={"file": ("../../etc/passwd", b"not really")})
    body = assert_json(r, 201)
    assert body["url"].endswith("/passwd") and ".." not in body["url"]
    r = server.request("GET", server.url + body["full_path"])
    assert r.status_code == 200 and r.content == b"not really"


def test_upload_bad_inputs_and_access(server, owner, dev, outsider, projects):
    private, public = projects
    path = f"/projects/{private.id}/uploads"
    files = {"file": ("a.txt", b"x")}
    assert_json(server.request("POST", path, files=files), 401)
    assert_json(server.request("POST", path, token=outsider[1], files=files), 404, PROJECT_NOT_FOUND)
    assert_json(server.request("POST", f"/projects/{public.id}/uploads", token=outsider[1], files=files), 403)
    reporter, reporter_token = make_user(server, "rep")
    server.gitlab(owner[1]).projects.get(private.id).members.create({"user_id": reporter.id, "access_level": 20})
    assert_json(server.request("POST", path, token=reporter_token, files=files), 403)
    assert_json(server.request("POST", path, token=dev[1], files={"other": ("a.txt", b"x")}), 400,
                {"error": "file is missing"})
    assert_json(server.request("POST", path, token=dev[1], data={}), 400, {"error": "file is missing"})


def test_upload_over_max_attachment_size(server, owner, projects):
    private, _ = projects
    root = server.root_token
    assert_json(server.request("PUT", "/application/settings", token=root, json={"max_attachment_size": 1}), 200)
    try:
        path = f"/projects/{private.id}/uploads"
        big = b"x" * (1024 * 1024 + 1)
        assert_json(server.request("POST", path, token=owner[1], files={"file": ("big.bin", big)}), 413,
                    {"message": "413 Request Entity Too Large"})
        r = server.request("POST", path, token=owner[1], files={"file": ("ok.bin", big[:1024 * 1024])})
        assert_json(r, 201)
    finally:
        server.request("PUT", "/application/settings", token=root, json={"max_attachment_size": 100})
