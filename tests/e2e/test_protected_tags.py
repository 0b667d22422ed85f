"""Protected tags (`/projects/:id/protected_tags`) with python-gitlab and raw requests: GitLab's
shapes, wildcard names, defaults and errors, Maintainer required, other tenants kept out; and
their enforcement on a real `git push` over smart HTTP and in the tags API: who may create a
protected tag, no moving it, no deleting it over git, and `ref_protected` in the outbox."""

from __future__ import annotations

import secrets
import tempfile
import urllib.parse
from pathlib import Path

import gitlab
import pytest

from conftest import (FORBIDDEN, PROJECT_NOT_FOUND, assert_json, domain_events, git_url,
                      last_event_id, make_user, other_tenant, require_program, run_git)

NOT_FOUND = {"message": "404 Not Found"}
CREATE = "You are not allowed to create this tag as it is protected."
UPDATE = "Protected tags cannot be updated."
DELETE_WEB = "You can only delete protected tags using the web interface."
DELETE_NOT_MAINTAINER = ("You are not allowed to delete protected tags from this project. "
                         "Only a project maintainer or owner can delete a protected tag.")


def path(project_id: int, name: str | None = None) -> str:
    base = f"/projects/{project_id}/protected_tags"
    return base if name is None else f"{base}/{urllib.parse.quote(name, safe='')}"


@pytest.fixture(scope="module")
def project(gl):
    return gl.projects.create({"name": "pt" + secrets.token_hex(3), "visibility": "private",
                               "initialize_with_readme": True})


@pytest.fixture(scope="module")
def developer(server, gl, project):
    user, token = make_user(server, "ptdev")
    project.members.create({"user_id": user.id, "access_level": 30})
    return user, token


def test_create_list_get_delete_with_python_gitlab(project):
    created = project.protectedtags.create({"name": "v*", "create_access_level": 30})
    assert created.name == "v*"
    (level,) = created.create_access_levels
    assert level["access_level"] == 30
    assert level["access_level_description"] == "Developers + Maintainers"
    assert set(level) == {"id", "access_level", "access_level_description", "deploy_key_id"}
    assert "v*" in [t.name for t in project.protectedtags.list(get_all=True)]
    shown = project.protectedtags.get("v*")
    assert shown.create_access_levels == created.create_access_levels
    project.protectedtags.delete("v*")
    with pytest.raises(gitlab.exceptions.GitlabGetError) as error:
        project.protectedtags.get("v*")
    assert error.value.response_code == 404


def test_defaults_and_bad_inputs(server, project):
    token = server.root_token
    body = assert_json(server.request("POST", path(project.id), token=token,
                                      json={"name": "stable-*"}), 201)
    assert body == {"name": "stable-*", "create_access_levels": [{
        "id": body["create_access_levels"][0]["id"], "access_level": 40,
        "access_level_description": "Maintainers", "deploy_key_id": None}]}
    r = server.request("POST", path(project.id), token=token, json={"name": "stable-*"})
    assert_json(r, 422, {"message": ["Name has already been taken"]})
    r = server.request("POST", path(project.id), token=token,
                       data={"name": "rc", "allowed_to_create[][access_level]": "0"})
    assert assert_json(r, 201)["create_access_levels"][0]["access_level"] == 0
    assert_json(server.request("POST", path(project.id), token=token, json={}), 400,
                {"error": "name is missing"})
    r = server.request("POST", path(project.id), token=token,
                       json={"name": "x", "create_access_level": 20})
    assert_json(r, 400, {"error": "create_access_level does not have a valid value"})
    r = server.request("POST", path(project.id), token=token,
                       json={"name": "x", "create_access_level": "many"})
    assert r.status_code == 400, r.text
    r = server.request("POST", path(project.id), token=token,
                       json={"name": "x", "allowed_to_create": [{"user_id": 1}]})
    assert_json(r, 400, {"error": "allowed_to_create does not have a valid value"})
    assert_json(server.request("GET", path(project.id, "nope"), token=token), 404, NOT_FOUND)
    assert_json(server.request("DELETE", path(project.id, "nope"), token=token), 404, NOT_FOUND)
    assert_json(server.request("GET", path(999999), token=token), 404, PROJECT_NOT_FOUND)
    names = [t["name"] for t in assert_json(server.request("GET", path(project.id), token=token), 200)]
    assert "x" not in names  # nothing half-written
    for name in ("stable-*", "rc"):
        assert server.request("DELETE", path(project.id, name), token=token).status_code == 204


def test_maintainer_required_and_tenants_apart(server, project, developer):
    _, token = developer
    assert_json(server.request("GET", path(project.id), token=token), 403, FORBIDDEN)
    assert_json(server.request("POST", path(project.id), token=token, json={"name": "d"}), 403,
                FORBIDDEN)
    assert server.request("GET", path(project.id)).status_code == 401
    host, other = other_tenant(server, "pt")
    assert_json(server.request("GET", path(project.id), token=other, host=host), 404,
                PROJECT_NOT_FOUND)
    assert_json(server.request("GET", path(project.id), token=server.root_token), 200, [])


@pytest.fixture(scope="module")
def home():
    require_program("git", "git")
    with tempfile.TemporaryDirectory(prefix="trellis-protected-tags-") as path:
        yield Path(path)


def clone(server, home: Path, project, login: str, token: str) -> Path:
    work = home / secrets.token_hex(4)
    run_git(home, "clone", "-q", git_url(server, f"{project.path_with_namespace}.git", login, token),
            str(work))
    return work


def refused(done, message: str):
    assert done.returncode != 0, done.stderr
    assert f"remote: GitLab: {message}" in done.stderr, done.stderr


def test_pushes_of_protected_tags(server, project, developer, home):
    dev, dev_token = developer
    assert_json(server.request("POST", path(project.id), token=server.root_token,
                               json={"name": "release-*"}), 201)
    mine = clone(server, home, project, dev.username, dev_token)
    theirs = clone(server, home, project, "root", server.root_token)

    # A Developer may not create a tag only Maintainers may create; an unprotected one is fine.
    run_git(home, "tag", "release-1", cwd=mine)
    refused(run_git(home, "push", "origin", "release-1", cwd=mine, check=False), CREATE)
    run_git(home, "tag", "scratch", cwd=mine)
    run_git(home, "push", "-q", "origin", "scratch", cwd=mine)

    # A Maintainer creates it; the Tag Push event says it is protected.
    since = last_event_id(server)
    run_git(home, "tag", "release-1", cwd=theirs)
    run_git(home, "push", "-q", "origin", "release-1", cwd=theirs)
    (event,) = [e for e in domain_events(server, since) if e["kind"] == "tag_push"]
    assert event["after"]["ref"] == "refs/tags/release-1"
    assert event["after"]["ref_protected"] is True

    # Nobody moves it, and nobody deletes it over git.
    (theirs / "more.txt").write_text("more")
    run_git(home, "add", "more.txt", cwd=theirs)
    run_git(home, "commit", "-q", "-m", "more", cwd=theirs)
    run_git(home, "tag", "-f", "release-1", cwd=theirs)
    refused(run_git(home, "push", "-f", "origin", "release-1", cwd=theirs, check=False), UPDATE)
    refused(run_git(home, "push", "origin", ":release-1", cwd=mine, check=False),
            DELETE_NOT_MAINTAINER)
    refused(run_git(home, "push", "origin", ":release-1", cwd=theirs, check=False), DELETE_WEB)
    tags = run_git(home, "ls-remote", "--tags", "origin", cwd=theirs).stdout
    assert "refs/tags/release-1" in tags

    # The tags API: a Developer's protected tag is refused; a Maintainer deletes one.
    r = server.request("POST", f"/projects/{project.id}/repository/tags", token=dev_token,
                       json={"tag_name": "release-2", "ref": project.default_branch})
    assert_json(r, 403, {"message": f"403 Forbidden - {CREATE}"})
    r = server.request("DELETE", f"/projects/{project.id}/repository/tags/release-1",
                       token=dev_token)
    assert_json(r, 403, {"message": f"403 Forbidden - {DELETE_NOT_MAINTAINER}"})
    r = server.request("DELETE", f"/projects/{project.id}/repository/tags/release-1",
                       token=server.root_token)
    assert r.status_code == 204, r.text

    # Allowing Developers lets the Developer create it.
    server.request("DELETE", path(project.id, "release-*"), token=server.root_token)
    assert_json(server.request("POST", path(project.id), token=server.root_token,
                               json={"name": "release-*", "create_access_level": 30}), 201)
    run_git(home, "push", "-q", "origin", "release-1", cwd=mine)
