"""Groups, namespaces and group members end to end."""

from __future__ import annotations

import secrets

import pytest

from conftest import assert_json
from test_projects import make_user


@pytest.fixture(scope="module")
def carol(server):
    return make_user(server, "carol")


@pytest.fixture(scope="module")
def dave(server):
    return make_user(server, "dave")


def test_group_crud_and_nesting(server, carol):
    user, token = carol
    gl = server.gitlab(token)
    top = gl.groups.create({"name": "Top Group", "path": f"top-{secrets.token_hex(3)}", "description": "d"})
    assert top.full_path == top.path and top.parent_id is None and top.visibility == "private"
    assert top.full_name == "Top Group" and top.web_url.endswith(f"/groups/{top.path}")
    sub = gl.groups.create({"name": "Sub", "path": "sub", "parent_id": top.id})
    subsub = gl.groups.create({"name": "Leaf", "path": "leaf", "parent_id": sub.id})
    assert subsub.full_path == f"{top.path}/sub/leaf" and subsub.full_name == "Top Group / Sub / Leaf"
    got = gl.groups.get(f"{top.path}/sub/leaf")
    assert got.id == subsub.id
    assert {g.id for g in top.subgroups.list(get_all=True)} == {sub.id}
    r = server.request("POST", "/groups", token=token, json={"name": "Dup", "path": top.path})
    assert_json(r, 400, {"message": {"path": ["has already been taken"]}})
    r = server.request("POST", "/groups", token=token, json={"name": "Bad!", "path": "okpath"})
    assert "name" in assert_json(r, 400)["message"]
    r = server.request("POST", "/groups", token=token, json={"name": "x"})
    assert_json(r, 400, {"error": "path is missing"})
    # renaming the top group moves everything below it
    r = server.request("PUT", f"/groups/{top.id}", token=token, json={"path": top.path + "-r", "name": "Top R"})
    assert assert_json(r, 200)["full_path"] == top.path + "-r"
    leaf = assert_json(server.request("GET", f"/groups/{subsub.id}", token=token), 200)
    assert leaf["full_path"] == f"{top.path}-r/sub/leaf" and leaf["full_name"] == "Top R / Sub / Leaf"
    p = gl.projects.create({"name": "in-leaf", "namespace_id": subsub.id})
    assert gl.projects.get(p.id).path_with_namespace == f"{top.path}-r/sub/leaf/in-leaf"
    r = server.request("GET", f"/groups/{subsub.id}", token=token)
    assert [x["id"] for x in assert_json(r, 200)["projects"]] == [p.id]
    # a subgroup may not be more visible than its parent
    r = server.request("POST", "/groups", token=token, json={"name": "Loud", "path": "loud", "parent_id": top.id, "visibility": "public"})
    assert_json(r, 400)
    r = server.request("DELETE", f"/groups/{top.id}", token=token)
    assert_json(r, 202, {"message": "202 Accepted"})
    assert server.request("GET", f"/groups/{subsub.id}", token=token).status_code == 404
    assert server.request("GET", f"/projects/{p.id}", token=token).status_code == 404


def test_group_visibility(server, carol, dave):
    _, token = carol
    dave_user, dave_token = dave
    gl = server.gitlab(token)
    private = gl.groups.create({"name": "Priv", "path": f"priv-{secrets.token_hex(3)}"})
    public = gl.groups.create({"name": "Pub", "path": f"pub-{secrets.token_hex(3)}", "visibility": "public"})
    internal = gl.groups.create({"name": "Int", "path": f"int-{secrets.token_hex(3)}", "visibility": "internal"})
    assert_json(server.request("GET", f"/groups/{private.id}"), 404, {"message": "404 Group Not Found"})
    assert server.request("GET", f"/groups/{public.id}").status_code == 200
    assert server.request("GET", f"/groups/{internal.id}").status_code == 404
    assert server.request("GET", f"/groups/{internal.id}", token=dave_token).status_code == 200
    assert server.request("GET", f"/groups/{private.id}", token=dave_token).status_code == 404
    anon = {g["id"] for g in server.request("GET", "/groups", params={"per_page": 100}).json()}
    assert public.id in anon and private.id not in anon and internal.id not in anon
    avail = {g["id"] for g in server.request("GET", "/groups", token=dave_token, params={"all_available": "true", "per_page": 100}).json()}
    assert {public.id, internal.id} <= avail and private.id not in avail
    # non-owner cannot change or delete
    private.members.create({"user_id": dave_user.id, "access_level": 40})
    assert server.request("GET", f"/groups/{private.id}", token=dave_token).status_code == 200
    assert private.id in {g["id"] for g in server.request("GET", "/groups", token=dave_token).json()}
    assert server.request("PUT", f"/groups/{private.id}", token=dave_token, json={"description": "x"}).status_code == 403
    assert server.request("DELETE", f"/groups/{private.id}", token=dave_token).status_code == 403
    # the admin sees every group
    assert server.request("GET", f"/groups/{private.id}", token=server.root_token).status_code == 200


def test_default_group_visibility(server, carol):
    _, token = carol
    root = server.root_token
    server.request("PUT", "/application/settings", token=root, json={"default_group_visibility": "internal"})
    try:
        r = server.request("POST", "/groups", token=token, json={"name": "Dflt", "path": f"dflt-{secrets.token_hex(3)}"})
        assert assert_json(r, 201)["visibility"] == "internal"
    finally:
        server.request("PUT", "/application/settings", token=root, json={"default_group_visibility": "private"})


def test_group_members_and_inheritance(server, carol, dave):
    user, token = carol
    dave_user, dave_token = dave
    gl = server.gitlab(token)
    top = gl.groups.create({"name": "Fam", "path": f"fam-{secrets.token_hex(3)}"})
    child = gl.groups.create({"name": "Kid", "path": "kid", "parent_id": top.id})
    assert [(m.id, m.access_level) for m in top.members.list(get_all=True)] == [(user.id, 50)]
    top.members.create({"user_id": dave_user.id, "access_level": 20})
    r = server.request("POST", f"/groups/{top.id}/members", token=token, json={"user_id": dave_user.id, "access_level": 20})
    assert_json(r, 409, {"message": "Member already exists"})
    r = server.request("POST", f"/groups/{top.id}/members", token=token, json={"user_id": 424242, "access_level": 20})
    assert_json(r, 404, {"message": "404 User Not Found"})
    r = server.request("POST", f"/groups/{top.id}/members", token=token, json={"user_id": dave_user.id, "access_level": 60})
    assert r.status_code == 400
    assert child.members.list(get_all=True)[0].id == user.id
    inherited = {m.id: m.access_level for m in child.members_all.list(get_all=True)}
    assert inherited == {user.id: 50, dave_user.id: 20}
    r = server.request("GET", f"/groups/{child.id}/members/all/{dave_user.id}", token=token)
    assert assert_json(r, 200)["access_level"] == 20
    # dave reaches the child group through the parent
    assert server.request("GET", f"/groups/{child.id}", token=dave_token).status_code == 200
    # the last owner cannot leave
    r = server.request("DELETE", f"/groups/{top.id}/members/{user.id}", token=token)
    assert r.status_code == 403
    # a member may leave
    r = server.request("DELETE", f"/groups/{top.id}/members/{dave_user.id}", token=dave_token)
    assert r.status_code == 204
    assert server.request("GET", f"/groups/{child.id}", token=dave_token).status_code == 404


def test_namespaces(server, carol):
    user, token = carol
    gl = server.gitlab(token)
    group = gl.groups.create({"name": "NsGroup", "path": f"nsg-{secrets.token_hex(3)}"})
    mine = server.request("GET", "/namespaces", token=token).json()
    kinds = {(n["kind"], n["full_path"]) for n in mine}
    assert ("user", user.username) in kinds and ("group", group.path) in kinds
    r = server.request("GET", f"/namespaces/{user.username}", token=token)
    assert assert_json(r, 200)["kind"] == "user"
    r = server.request("GET", "/namespaces/root", token=token)
    assert_json(r, 404, {"message": "404 Namespace Not Found"})
    # a group cannot take a username's path at the top level
    r = server.request("POST", "/groups", token=token, json={"name": "Clash", "path": "root"})
    assert_json(r, 400, {"message": {"path": ["has already been taken"]}})
