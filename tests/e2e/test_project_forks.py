"""Forks, group shares and transfers end to end with python-gitlab: asynchronous fork with
`import_status` scheduled → finished and the repository copied (cloned with git), fork
relations, `GET /forks`, visibility of forks, shares granting access to a group's members,
transfer to another namespace, and the bad inputs of each."""

from __future__ import annotations

import secrets
import subprocess
from pathlib import Path

import pytest

from conftest import PROJECT_NOT_FOUND, assert_json, make_user, other_tenant



@pytest.fixture(scope="module")
def alice(server):
    return make_user(server, "alice")


@pytest.fixture(scope="module")
def bob(server):
    return make_user(server, "bob")


def repo_dir(server, project_id: int) -> Path:
    return server.data_dir / "repositories" / "1" / f"{project_id}.git"


def git_log(path: Path) -> list[str]:
    out = subprocess.run(["git", "--git-dir", str(path), "log", "--format=%s", "--all"],
                         capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def wait_finished(server, gl, project_id):
    assert server.wait_for(lambda: gl.projects.get(project_id).import_status in ("finished", "failed"),
                           timeout=20)
    return gl.projects.get(project_id)


def test_fork_copies_repository_in_background(server, alice, bob, tmp_path):
    _, a_token = alice
    b_user, b_token = bob
    source = server.gitlab(a_token).projects.create(
        {"name": "Forkable", "visibility": "public", "initialize_with_readme": True, "description": "src"})
    gl_b = server.gitlab(b_token)
    fork = gl_b.projects.get(source.id, lazy=True).forks.create({})
    assert fork.import_status == "scheduled"
    assert fork.forked_from_project["id"] == source.id
    assert fork.path_with_namespace == f"{b_user.username}/forkable"
    assert fork.description == "src" and fork.visibility == "public"
    assert fork.permissions["project_access"]["access_level"] == 50
    done = wait_finished(server, gl_b, fork.id)
    assert done.import_status == "finished" and done.import_error is None
    assert done.empty_repo is False
    clone = tmp_path / "fork-clone"
    subprocess.run(["git", "clone", "-q", str(repo_dir(server, fork.id)), str(clone)], check=True)
    assert (clone / "README.md").read_text().startswith("# Forkable")
    assert gl_b.projects.get(source.id).forks_count == 1
    forks = gl_b.projects.get(source.id, lazy=True).forks.list(get_all=True)
    assert [f.id for f in forks] == [fork.id]
    # anonymous callers see the list too (public fork)
    anon = assert_json(server.request("GET", f"/projects/{source.id}/forks"), 200)
    assert [f["id"] for f in anon] == [fork.id] and "forked_from_project" not in anon[0]


def test_fork_options_and_visibility(server, alice, bob):
    a_user, a_token = alice
    gl_a = server.gitlab(a_token)
    source = gl_a.projects.create({"name": "Internal Src", "visibility": "internal", "initialize_with_readme": True})
    r = server.request("POST", f"/projects/{source.id}/fork", token=a_token,
                       json={"name": "Renamed Fork", "path": "renamed", "visibility": "public",
                             "description": "mine", "mr_default_target_self": True})
    fork = assert_json(r, 201)
    # never more visible than the source
    assert fork["visibility"] == "internal"
    assert fork["path"] == "renamed" and fork["name"] == "Renamed Fork" and fork["description"] == "mine"
    r = server.request("POST", f"/projects/{source.id}/fork", token=a_token,
                       json={"name": "Private Fork", "visibility": "private", "branches": "main"})
    private = assert_json(r, 201)
    assert private["visibility"] == "private" and private["path"] == "private-fork"
    done = wait_finished(server, gl_a, private["id"])
    assert done.import_status == "finished" and git_log(repo_dir(server, private["id"])) == ["Initial", "commit"]
    # the list filters apply
    got = assert_json(server.request("GET", f"/projects/{source.id}/forks", token=a_token,
                                     params={"visibility": "private"}), 200)
    assert [f["id"] for f in got] == [private["id"]]
    # bob (not a member) sees the internal fork but not the private one
    got = assert_json(server.request("GET", f"/projects/{source.id}/forks", token=bob[1]), 200)
    assert [f["id"] for f in got] == [fork["id"]]


def test_fork_into_group_and_bad_inputs(server, alice, bob):
    _, a_token = alice
    b_user, b_token = bob
    gl_a = server.gitlab(a_token)
    source = gl_a.projects.create({"name": "Fork Bad", "visibility": "public"})
    group = gl_a.groups.create({"name": "Fork Target", "path": f"ft-{secrets.token_hex(3)}", "visibility": "private"})
    path = f"/projects/{source.id}/fork"
    r = server.request("POST", path, token=a_token, json={"namespace_path": group.full_path})
    fork = assert_json(r, 201)
    assert fork["namespace"]["id"] == group.id and fork["visibility"] == "private"
    # same name/path again in the same namespace: 409 with the field map
    r = server.request("POST", path, token=a_token, json={"namespace_id": group.id})
    assert_json(r, 409, {"message": {"name": ["has already been taken"], "path": ["has already been taken"]}})
    # forking into the source's own namespace without a new path is taken as well
    assert server.request("POST", path, token=a_token).status_code == 409
    assert_json(server.request("POST", path, token=a_token, json={"namespace_id": 999999}), 404,
                {"message": "404 Namespace Not Found"})
    assert_json(server.request("POST", path, token=b_token, json={"namespace_id": group.id}), 404,
                {"message": "404 Target Namespace Not Found"})
    assert_json(server.request("POST", path, token=a_token, json={"visibility": "secret", "path": "x1"}), 400,
                {"error": "visibility does not have a valid value"})
    assert_json(server.request("POST", path, json={}), 401)
    assert_json(server.request("POST", "/projects/999999/fork", token=a_token), 404, PROJECT_NOT_FOUND)
    hidden = gl_a.projects.create({"name": "Hidden Src"})
    assert_json(server.request("POST", f"/projects/{hidden.id}/fork", token=b_token), 404, PROJECT_NOT_FOUND)
    assert_json(server.request("GET", f"/projects/{hidden.id}/forks", token=b_token), 404, PROJECT_NOT_FOUND)
    # forking disabled
    gl_a.projects.update(source.id, {"forking_access_level": "disabled"})
    assert_json(server.request("POST", path, token=b_token), 404, {"message": "404 Not Found"})


def test_fork_whose_repository_cannot_be_made_leaves_nothing(server, alice, bob):
    """The fork's repository is made before its row is inserted: when git fails, 500 and no
    fork row, no fork count on the source, no repository; the next attempt works."""
    _, a_token = alice
    b_user, b_token = bob
    source = server.gitlab(a_token).projects.create({"name": "Fork Blocked Src", "visibility": "public",
                                                     "initialize_with_readme": True})
    blocker = repo_dir(server, source.id + 1)
    blocker.write_text("in the way")
    try:
        r = server.request("POST", f"/projects/{source.id}/fork", token=b_token)
        assert_json(r, 500, {"message": "500 Internal Server Error"})
        assert_json(server.request("GET", f"/projects/{b_user.username}%2F{source.path}", token=b_token),
                    404, PROJECT_NOT_FOUND)
        assert assert_json(server.request("GET", f"/projects/{source.id}/forks", token=b_token), 200) == []
        assert assert_json(server.request("GET", f"/projects/{source.id}", token=a_token), 200)["forks_count"] == 0
        assert blocker.read_text() == "in the way"
    finally:
        blocker.unlink()
    fork = assert_json(server.request("POST", f"/projects/{source.id}/fork", token=b_token), 201)
    assert fork["id"] > source.id + 1, "the failed attempt's id stays unused"
    assert assert_json(server.request("GET", f"/projects/{source.id}", token=a_token), 200)["forks_count"] == 1
    done = wait_finished(server, server.gitlab(b_token), fork["id"])
    assert done.import_status == "finished" and git_log(repo_dir(server, fork["id"])) == ["Initial", "commit"]


def test_fork_relation_link_and_unlink(server, alice, bob):
    _, a_token = alice
    gl_a = server.gitlab(a_token)
    one = gl_a.projects.create({"name": "Rel One", "visibility": "public"})
    two = gl_a.projects.create({"name": "Rel Two"})
    r = server.request("POST", f"/projects/{two.id}/fork/{one.id}", token=a_token)
    linked = assert_json(r, 201)
    assert linked["forked_from_project"]["id"] == one.id
    assert gl_a.projects.get(one.id).forks_count == 1
    assert_json(server.request("POST", f"/projects/{two.id}/fork/{one.id}", token=a_token), 409,
                {"message": "Project already forked"})
    assert_json(server.request("POST", f"/projects/{two.id}/fork/999999", token=a_token), 404, PROJECT_NOT_FOUND)
    assert_json(server.request("POST", f"/projects/{one.id}/fork/{two.id}", token=bob[1]), 403)
    assert_json(server.request("DELETE", f"/projects/{two.id}/fork", token=bob[1]), 404, PROJECT_NOT_FOUND)
    assert_json(server.request("DELETE", f"/projects/{one.id}/fork", token=bob[1]), 403)
    assert_json(server.request("DELETE", f"/projects/{two.id}/fork"), 401)
    r = server.request("DELETE", f"/projects/{two.id}/fork", token=a_token)
    assert r.status_code == 204
    assert server.request("DELETE", f"/projects/{two.id}/fork", token=a_token).status_code == 304
    assert gl_a.projects.get(one.id).forks_count == 0
    assert "forked_from_project" not in gl_a.projects.get(two.id).attributes
    # deleting a source clears its forks' relation
    fork = gl_a.projects.get(one.id, lazy=True).forks.create({"path": "rel-fork", "name": "Rel Fork"})
    gl_a.projects.delete(one.id)
    assert "forked_from_project" not in gl_a.projects.get(fork.id).attributes


def test_share_with_group_grants_access(server, alice, bob):
    _, a_token = alice
    b_user, b_token = bob
    gl_a = server.gitlab(a_token)
    project = gl_a.projects.create({"name": "Shared Proj"})
    group = gl_a.groups.create({"name": "Sharers", "path": f"sh-{secrets.token_hex(3)}"})
    group.members.create({"user_id": b_user.id, "access_level": 40})
    assert_json(server.request("GET", f"/projects/{project.id}", token=b_token), 404, PROJECT_NOT_FOUND)
    r = server.request("POST", f"/projects/{project.id}/share", token=a_token,
                       json={"group_id": group.id, "group_access": 30, "expires_at": "2999-01-01"})
    link = assert_json(r, 201)
    assert link["group_id"] == group.id and link["project_id"] == project.id
    assert link["group_access"] == 30 and link["expires_at"] == "2999-01-01" and isinstance(link["id"], int)
    seen = assert_json(server.request("GET", f"/projects/{project.id}", token=b_token), 200)
    # the share caps the member's level
    assert seen["permissions"]["group_access"]["access_level"] == 30
    assert seen["shared_with_groups"] == [{"group_id": group.id, "group_name": "Sharers",
                                           "group_full_path": group.full_path, "group_access_level": 30,
                                           "expires_at": "2999-01-01"}]
    listed = assert_json(server.request("GET", "/projects", token=b_token, params={"membership": True}), 200)
    assert project.id in [x["id"] for x in listed]
    listed = assert_json(server.request("GET", "/projects", token=b_token, params={"min_access_level": 40}), 200)
    assert project.id not in [x["id"] for x in listed]
    # bob counts among the project's users and (invited) members, at the capped level
    users = assert_json(server.request("GET", f"/projects/{project.id}/users", token=a_token), 200)
    assert b_user.id in [u["id"] for u in users]
    everyone = assert_json(server.request("GET", f"/projects/{project.id}/members/all", token=a_token), 200)
    assert {m["id"]: m["access_level"] for m in everyone}[b_user.id] == 30
    direct = assert_json(server.request("GET", f"/projects/{project.id}/members", token=a_token), 200)
    assert b_user.id not in [m["id"] for m in direct]
    # developers may upload now; maintainers' routes stay closed
    assert server.request("POST", f"/projects/{project.id}/uploads", token=b_token,
                          files={"file": ("x.txt", b"x")}).status_code == 201
    assert_json(server.request("POST", f"/projects/{project.id}/share", token=b_token,
                               json={"group_id": group.id, "group_access": 10}), 403)
    # bad inputs
    share = f"/projects/{project.id}/share"
    assert_json(server.request("POST", share, token=a_token, json={"group_id": group.id, "group_access": 30}), 409,
                {"message": "Group already shared with this group"})
    assert_json(server.request("POST", share, token=a_token, json={"group_access": 30}), 400,
                {"error": "group_id is missing"})
    assert_json(server.request("POST", share, token=a_token, json={"group_id": group.id}), 400,
                {"error": "group_access is missing"})
    assert_json(server.request("POST", share, token=a_token, json={"group_id": group.id, "group_access": 35}), 400,
                {"error": "group_access does not have a valid value"})
    assert_json(server.request("POST", share, token=a_token, json={"group_id": "x", "group_access": 30}), 400,
                {"error": "group_id is invalid"})
    assert_json(server.request("POST", share, token=a_token, json={"group_id": 999999, "group_access": 30}), 404,
                {"message": "Not Found"})
    assert_json(server.request("POST", share, json={"group_id": group.id, "group_access": 30}), 401)
    assert_json(server.request("POST", "/projects/999999/share", token=a_token,
                               json={"group_id": group.id, "group_access": 30}), 404, PROJECT_NOT_FOUND)
    # unshare: the access goes with it
    assert_json(server.request("DELETE", f"{share}/{group.id}", token=b_token), 403)
    assert server.request("DELETE", f"{share}/{group.id}", token=a_token).status_code == 204
    assert_json(server.request("DELETE", f"{share}/{group.id}", token=a_token), 404,
                {"message": "404 Group Link Not Found"})
    assert_json(server.request("GET", f"/projects/{project.id}", token=b_token), 404, PROJECT_NOT_FOUND)
    # python-gitlab's share/unshare
    gl_a.projects.get(project.id, lazy=True).share(group.id, 20)
    assert gl_a.projects.get(project.id).shared_with_groups[0]["group_access_level"] == 20
    gl_a.projects.get(project.id, lazy=True).unshare(group.id)
    assert gl_a.projects.get(project.id).shared_with_groups == []


def test_transfer(server, alice, bob, tmp_path):
    a_user, a_token = alice
    b_user, b_token = bob
    gl_a = server.gitlab(a_token)
    project = gl_a.projects.create({"name": "Mover", "visibility": "public", "initialize_with_readme": True})
    group = gl_a.groups.create({"name": "Dest", "path": f"dest-{secrets.token_hex(3)}", "visibility": "internal"})
    gl_a.projects.get(project.id, lazy=True).transfer(group.id)
    got = gl_a.projects.get(project.id)
    assert got.namespace["id"] == group.id
    assert got.path_with_namespace == f"{group.full_path}/mover"
    assert got.http_url_to_repo == f"{server.url}/{group.full_path}/mover.git"
    assert got.visibility == "internal"  # lowered to the group's
    # the repository moved with it (same content, new URL)
    clone = tmp_path / "moved"
    subprocess.run(["git", "clone", "-q", str(repo_dir(server, project.id)), str(clone)], check=True)
    assert (clone / "README.md").exists()
    # the old path redirects reads to the project, as GitLab's redirect routes
    r = server.request("GET", f"/projects/{a_user.username}%2Fmover", token=a_token)
    assert r.status_code == 302 and r.headers["Location"] == f"{server.api_url}/projects/{project.id}"
    # back by path, through the raw API
    r = server.request("PUT", f"/projects/{project.id}/transfer", token=a_token,
                       json={"namespace": a_user.username})
    assert assert_json(r, 200)["path_with_namespace"] == f"{a_user.username}/mover"
    # bad inputs
    path = f"/projects/{project.id}/transfer"
    assert_json(server.request("PUT", path, token=a_token, json={"namespace": a_user.username}), 400,
                {"message": 'Failed to transfer project {:new_namespace=>["Project is already in this namespace."]}'})
    gl_a.projects.create({"name": "Mover", "namespace_id": group.id})
    assert_json(server.request("PUT", path, token=a_token, json={"namespace": group.id}), 400,
                {"message": 'Failed to transfer project {:new_namespace=>["Project with same name or path '
                            'in target namespace already exists"]}'})
    assert_json(server.request("PUT", path, token=a_token, json={"namespace": b_user.username}), 400,
                {"message": 'Failed to transfer project {:new_namespace=>["Transfer failed, please contact an admin."]}'})
    assert_json(server.request("PUT", path, token=a_token, json={"namespace": "no/such/ns"}), 404,
                {"message": "404 Namespace Not Found"})
    assert_json(server.request("PUT", path, token=a_token, json={}), 400, {"error": "namespace is missing"})
    assert_json(server.request("PUT", path, token=b_token, json={"namespace": b_user.username}), 403)
    assert_json(server.request("PUT", path, json={"namespace": group.id}), 401)
    assert_json(server.request("PUT", "/projects/999999/transfer", token=a_token, json={"namespace": group.id}),
                404, PROJECT_NOT_FOUND)
    # administrators may move any project
    r = server.request("PUT", path, token=server.root_token, json={"namespace": b_user.username})
    assert assert_json(r, 200)["namespace"]["path"] == b_user.username
    # the old path leads to it where it is now (python-gitlab follows the redirect)
    moved = gl_a.projects.get(f"{a_user.username}/mover")
    assert moved.path_with_namespace == f"{b_user.username}/mover"


def test_other_tenant_ids_are_unknown(server, alice):
    host, token_b = other_tenant(server, "fork")
    p = server.gitlab(alice[1]).projects.create({"name": "Tenant Fork", "visibility": "public"})
    for method, suffix, body in [("POST", "/fork", {}), ("GET", "/forks", None), ("DELETE", "/fork", None),
                                 ("POST", "/fork/1", {}), ("POST", "/share", {"group_id": 1, "group_access": 30}),
                                 ("DELETE", "/share/1", None), ("PUT", "/transfer", {"namespace": 1})]:
        r = server.request(method, f"/projects/{p.id}{suffix}", token=token_b, host=host, json=body)
        assert_json(r, 404, PROJECT_NOT_FOUND)


def test_member_and_user_lists_page(server, alice):
    a_user, a_token = alice
    gl_a = server.gitlab(a_token)
    project = gl_a.projects.create({"name": "Crowd"})
    extra = [make_user(server, f"crowd{i}")[0] for i in range(4)]
    for u in extra:
        project.members.create({"user_id": u.id, "access_level": 20})
    r = server.request("GET", f"/projects/{project.id}/members", token=a_token, params={"per_page": 2, "page": 2})
    page = assert_json(r, 200)
    assert r.headers["X-Total"] == "5" and r.headers["X-Total-Pages"] == "3"
    assert [m["id"] for m in page] == [extra[1].id, extra[2].id]
    assert len(project.members.list(get_all=True)) == 5
    assert [m.id for m in project.members.list(query=extra[3].username)] == [extra[3].id]
    got = assert_json(server.request("GET", f"/projects/{project.id}/members", token=a_token,
                                     params={"user_ids[]": [extra[0].id, a_user.id]}), 200)
    assert sorted(m["id"] for m in got) == sorted([extra[0].id, a_user.id])
    r = server.request("GET", f"/projects/{project.id}/users", token=a_token, params={"per_page": 2})
    assert assert_json(r, 200) and r.headers["X-Total"] == "5" and len(r.json()) == 2
    names = [u["name"] for u in gl_a.http_list(f"/projects/{project.id}/users", get_all=True)]
    assert names == sorted(names, key=str.lower) and len(names) == 5
    got = assert_json(server.request("GET", f"/projects/{project.id}/users", token=a_token,
                                     params={"search": extra[2].username, "skip_users[]": [a_user.id]}), 200)
    assert [u["id"] for u in got] == [extra[2].id]
    got = assert_json(server.request("GET", f"/projects/{project.id}/users", token=a_token,
                                     params={"skip_users[]": [u.id for u in extra]}), 200)
    assert [u["id"] for u in got] == [a_user.id]


def test_fork_of_a_project_without_repository(server, alice):
    """Projects made before repositories existed get an empty one when first needed."""
    _, a_token = alice
    gl_a = server.gitlab(a_token)
    old = gl_a.projects.create({"name": "Pre Repo"})
    __import__("shutil").rmtree(repo_dir(server, old.id))
    fork = gl_a.projects.get(old.id, lazy=True).forks.create({"path": "pre-repo-fork", "name": "Pre Repo Fork"})
    done = wait_finished(server, gl_a, fork.id)
    assert done.import_status == "finished" and done.empty_repo is True
    assert repo_dir(server, old.id).is_dir()
