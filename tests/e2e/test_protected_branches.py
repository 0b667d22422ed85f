"""The protected branches API (`/projects/:id/protected_branches`), with python-gitlab and raw
requests: GitLab's shapes, wildcard names, PATCH of the flags and access levels, its errors,
Maintainer required, other tenants kept out; and `default_branch_protection` protecting the
default branch of a new project."""

from __future__ import annotations

import secrets
import urllib.parse

import gitlab
import pytest

from conftest import FORBIDDEN, PROJECT_NOT_FOUND, assert_json, make_user, other_tenant

NOT_FOUND = {"message": "404 Not Found"}


def make_project(gl, **attrs):
    return gl.projects.create({"name": "pb" + secrets.token_hex(3), **attrs})


def path(project_id: int, name: str | None = None) -> str:
    base = f"/projects/{project_id}/protected_branches"
    return base if name is None else f"{base}/{urllib.parse.quote(name, safe='')}"


@pytest.fixture(scope="module")
def project(gl):
    return make_project(gl, visibility="private")


def test_create_list_get_patch_delete_with_python_gitlab(project):
    created = project.protectedbranches.create({
        "name": "release/*", "push_access_level": 30, "merge_access_level": 40,
        "allow_force_push": True})
    assert created.name == "release/*"
    assert created.allow_force_push is True
    (push,) = created.push_access_levels
    assert push["access_level"] == 30
    assert push["access_level_description"] == "Developers + Maintainers"
    assert set(push) == {"id", "access_level", "access_level_description", "deploy_key_id"}
    (merge,) = created.merge_access_levels
    assert merge["access_level"] == 40 and merge["access_level_description"] == "Maintainers"
    # GitLab EE's keys are not in a CE answer.
    assert not {"unprotect_access_levels", "code_owner_approval_required",
                "inherited"} & set(created.attributes)

    names = [b.name for b in project.protectedbranches.list(get_all=True)]
    assert "release/*" in names
    shown = project.protectedbranches.get("release/*")
    assert shown.id == created.id and shown.push_access_levels == created.push_access_levels

    shown.allow_force_push = False
    shown.save()
    assert project.protectedbranches.get("release/*").allow_force_push is False

    project.protectedbranches.delete("release/*")
    with pytest.raises(gitlab.exceptions.GitlabGetError) as error:
        project.protectedbranches.get("release/*")
    assert error.value.response_code == 404


def test_raw_requests_defaults_patch_levels_and_errors(server, project):
    token = server.root_token
    r = server.request("POST", path(project.id), token=token, json={"name": "stable"})
    body = assert_json(r, 201)
    assert [l["access_level"] for l in body["push_access_levels"]] == [40]
    assert [l["access_level"] for l in body["merge_access_levels"]] == [40]
    assert body["allow_force_push"] is False
    # the same name again
    r = server.request("POST", path(project.id), token=token, json={"name": "stable"})
    assert_json(r, 409, {"message": "Protected branch 'stable' already exists"})
    # PATCH: a level changed, one added and one removed through allowed_to_push
    level_id = body["push_access_levels"][0]["id"]
    r = server.request("PATCH", path(project.id, "stable"), token=token, json={
        "allow_force_push": True,
        "allowed_to_push": [{"id": level_id, "access_level": 30}, {"access_level": 60}]})
    patched = assert_json(r, 200)
    assert patched["allow_force_push"] is True
    assert [l["access_level"] for l in patched["push_access_levels"]] == [30, 60]
    admins = patched["push_access_levels"][1]
    assert admins["access_level_description"] == "Admins"
    r = server.request("PATCH", path(project.id, "stable"), token=token,
                       json={"allowed_to_push": [{"id": admins["id"], "_destroy": True}]})
    assert [l["access_level"] for l in assert_json(r, 200)["push_access_levels"]] == [30]
    # a level id of another branch names nothing here
    other = assert_json(server.request("POST", path(project.id), token=token,
                                       json={"name": "other"}), 201)
    r = server.request("PATCH", path(project.id, "stable"), token=token, json={
        "allowed_to_push": [{"id": other["push_access_levels"][0]["id"], "_destroy": True}]})
    assert_json(r, 404, NOT_FOUND)
    # bad inputs
    for body, error in [
        ({}, "name is missing"),
        ({"name": "x", "push_access_level": 20}, "push_access_level does not have a valid value"),
        ({"name": "x", "merge_access_level": "abc"}, "merge_access_level is invalid"),
        ({"name": "x", "unprotect_access_level": 0},
         "unprotect_access_level does not have a valid value"),
        ({"name": "x", "allow_force_push": "maybe"}, "allow_force_push is invalid"),
        ({"name": "x", "allowed_to_push": "40"}, "allowed_to_push is invalid"),
    ]:
        r = server.request("POST", path(project.id), token=token, json=body)
        assert_json(r, 400, {"error": error})
    r = server.request("POST", path(project.id), token=token, json={"name": " "})
    assert_json(r, 422, {"message": ["Name can't be blank"]})
    # unknown names and projects
    for method in ("GET", "PATCH", "DELETE"):
        r = server.request(method, path(project.id, "nope"), token=token)
        assert_json(r, 404, NOT_FOUND)
    r = server.request("GET", path(999999), token=token)
    assert_json(r, 404, PROJECT_NOT_FOUND)
    r = server.request("DELETE", path(project.id, "stable"), token=token)
    assert r.status_code == 204
    # pagination
    r = server.request("GET", path(project.id) + "?per_page=1", token=token)
    assert len(assert_json(r, 200)) == 1 and r.headers["X-Total"] == "1"


def test_maintainer_required_and_tenants_apart(server, gl, project):
    developer, dev_token = make_user(server, "pbdev")
    maintainer, maintainer_token = make_user(server, "pbmaint")
    project.members.create({"user_id": developer.id, "access_level": 30})
    project.members.create({"user_id": maintainer.id, "access_level": 40})
    for method, target, body in [("GET", path(project.id), None),
                                 ("POST", path(project.id), {"name": "dev"}),
                                 ("GET", path(project.id, "main"), None),
                                 ("DELETE", path(project.id, "main"), None)]:
        r = server.request(method, target, token=dev_token, json=body)
        assert_json(r, 403, FORBIDDEN)
    r = server.request("POST", path(project.id), token=maintainer_token, json={"name": "m"})
    assert_json(r, 201)
    _, stranger = make_user(server, "pbnone")
    r = server.request("GET", path(project.id), token=stranger)
    assert_json(r, 404, PROJECT_NOT_FOUND)
    assert server.request("GET", path(project.id)).status_code == 401
    read_only = server.create_token(scopes="read_user")
    assert server.request("GET", path(project.id), token=read_only).status_code == 403
    host, other_root = other_tenant(server, "pb")
    r = server.request("GET", path(project.id), token=other_root, host=host)
    assert_json(r, 404, PROJECT_NOT_FOUND)


@pytest.mark.parametrize("protection, push, merge", [
    (None, 40, 40), (0, None, None), (1, 30, 40), (3, 40, 30)])
def test_default_branch_protection_protects_new_projects(server, gl, protection, push, merge):
    if protection is not None:
        r = server.request("PUT", "/application/settings", token=server.root_token,
                           json={"default_branch_protection": protection})
        assert_json(r, 200)
    try:
        project = make_project(gl, initialize_with_readme=True, default_branch="main")
        branches = project.protectedbranches.list(get_all=True)
        if push is None:
            assert branches == []
            return
        (branch,) = branches
        assert branch.name == "main"
        assert [l["access_level"] for l in branch.push_access_levels] == [push]
        assert [l["access_level"] for l in branch.merge_access_levels] == [merge]
        # an empty project has nothing to protect until its first push
        assert make_project(gl).protectedbranches.list(get_all=True) == []
    finally:
        server.request("PUT", "/application/settings", token=server.root_token,
                       json={"default_branch_protection": 2})


def test_a_groups_setting_wins(server, gl):
    group = gl.groups.create({"name": "g" + secrets.token_hex(3),
                              "path": "g" + secrets.token_hex(3),
                              "default_branch_protection": 0})
    project = make_project(gl, namespace_id=group.id, initialize_with_readme=True)
    assert project.protectedbranches.list(get_all=True) == []
