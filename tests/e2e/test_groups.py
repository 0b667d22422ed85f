"""Groups, namespaces and group members end to end."""

from __future__ import annotations

import secrets
import urllib.parse

import pytest

from conftest import assert_json, make_user, other_tenant


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


# ---- GET /groups/:id/projects and /groups/:id/projects/shared -------------------------------


@pytest.fixture(scope="module")
def tree(server, carol, dave):
    """A public group (owner carol) with a public subgroup; projects of each visibility in the
    group, two in the subgroup, a private project of erin's shared with the group; a private
    group of carol's. `alpha` has issues off, `beta` merge requests off and carol's star,
    `gamma` is archived and `alpha` has a custom attribute."""
    _, token = carol
    erin, erin_token = make_user(server, "erin")
    gl = server.gitlab(token)
    tag = secrets.token_hex(3)
    top = gl.groups.create({"name": "Tree", "path": f"tree-{tag}", "visibility": "public"})
    sub = gl.groups.create({"name": "Branch", "path": "branch", "parent_id": top.id, "visibility": "public"})
    hidden = gl.groups.create({"name": "Hidden", "path": f"hidden-{tag}"})
    ids = {}
    for name, namespace, visibility in [("alpha", top, "public"), ("beta", top, "internal"),
                                        ("gamma", top, "private"), ("delta", sub, "public"),
                                        ("epsilon", sub, "private"), ("secret", hidden, "private")]:
        p = gl.projects.create({"name": f"{name}-{tag}", "namespace_id": namespace.id,
                                "visibility": visibility})
        ids[name] = p.id
    shared = server.gitlab(erin_token).projects.create({"name": f"shared-{tag}", "visibility": "private"})
    ids["shared"] = shared.id
    r = server.request("POST", f"/projects/{shared.id}/share", token=erin_token,
                       json={"group_id": top.id, "group_access": 30})
    assert_json(r, 201)
    gl.projects.update(ids["alpha"], {"issues_enabled": False})
    gl.projects.update(ids["beta"], {"merge_requests_enabled": False})
    gl.projects.get(ids["beta"], lazy=True).star()
    gl.projects.get(ids["gamma"], lazy=True).archive()
    server.sql("INSERT INTO project_custom_attributes (tenant_id, project_id, key, value) "
               f"SELECT tenant_id, id, 'tier', 'gold' FROM projects WHERE id = {ids['alpha']} "
               f"AND path_lower = 'alpha-{tag}'")
    return {"top": top, "sub": sub, "hidden": hidden, "ids": ids, "erin": (erin, erin_token)}


def names(tree, rows):
    by_id = {v: k for k, v in tree["ids"].items()}
    return {by_id[r["id"]] for r in rows}


def listed(server, tree, token, params=None, path=None, suffix="projects"):
    group = path or tree["top"].id
    r = server.request("GET", f"/groups/{group}/{suffix}", token=token,
                       params={"per_page": 100, **(params or {})})
    rows = assert_json(r, 200)
    assert int(r.headers["X-Total"]) == len(rows)
    return rows


@pytest.mark.parametrize("params, expected", [
    ({}, {"alpha", "beta", "gamma", "shared"}),
    ({"with_shared": "false"}, {"alpha", "beta", "gamma"}),
    ({"include_subgroups": "true"}, {"alpha", "beta", "gamma", "delta", "epsilon", "shared"}),
    ({"include_subgroups": "true", "with_shared": "false"}, {"alpha", "beta", "gamma", "delta", "epsilon"}),
    ({"visibility": "private"}, {"gamma", "shared"}),
    ({"visibility": "internal"}, {"beta"}),
    ({"archived": "true"}, {"gamma"}),
    ({"archived": "false"}, {"alpha", "beta", "shared"}),
    ({"search": "BET"}, {"beta"}),
    ({"owned": "true"}, {"alpha", "beta", "gamma"}),
    ({"starred": "true"}, {"beta"}),
    ({"with_issues_enabled": "true"}, {"beta", "gamma", "shared"}),
    ({"with_merge_requests_enabled": "true"}, {"alpha", "gamma", "shared"}),
    ({"min_access_level": 50}, {"alpha", "beta", "gamma"}),
    ({"min_access_level": 30}, {"alpha", "beta", "gamma", "shared"}),
    ({"with_security_reports": "true"}, {"alpha", "beta", "gamma", "shared"}),
])
def test_group_projects_filters(server, carol, tree, params, expected):
    _, token = carol
    assert names(tree, listed(server, tree, token, params)) == expected


def test_group_projects_with_python_gitlab(server, carol, tree):
    _, token = carol
    group = server.gitlab(token).groups.get(tree["top"].id)
    got = group.projects.list(include_subgroups=True, order_by="name", sort="asc", get_all=True)
    assert [p.name.split("-")[0] for p in got] == ["alpha", "beta", "delta", "epsilon", "gamma", "shared"]
    got = group.projects.list(order_by="id", sort="desc", get_all=True)
    assert [p.id for p in got] == sorted([tree["ids"][n] for n in ("alpha", "beta", "gamma", "shared")], reverse=True)
    # default: created_at descending
    assert [p.id for p in group.projects.list(with_shared=False, get_all=True)] == [
        tree["ids"][n] for n in ("gamma", "beta", "alpha")]
    # paged: X-Total counts them all
    page = group.projects.list(per_page=2, page=2, order_by="id", sort="asc")
    assert [p.id for p in page] == sorted(tree["ids"][n] for n in ("alpha", "beta", "gamma", "shared"))[2:]
    assert group.projects.list(per_page=2, iterator=True).total == 4
    full = group.projects.list(search="alpha", get_all=True)[0]
    assert full.permissions["group_access"]["access_level"] == 50 and "custom_attributes" not in full.attributes
    simple = group.projects.list(search="alpha", simple=True, get_all=True)[0]
    assert simple.id == tree["ids"]["alpha"] and "permissions" not in simple.attributes
    shared = group.shared_projects.list(get_all=True)
    assert [p.id for p in shared] == [tree["ids"]["shared"]]
    # GET /groups/:id embeds its own projects and, apart, those shared with it
    detail = server.request("GET", f"/groups/{tree['top'].id}", token=token).json()
    assert sorted(p["id"] for p in detail["projects"]) == sorted(
        tree["ids"][n] for n in ("alpha", "beta", "gamma"))
    assert [p["id"] for p in detail["shared_projects"]] == [tree["ids"]["shared"]]
    without = server.request("GET", f"/groups/{tree['top'].id}", token=token,
                             params={"with_projects": "false"}).json()
    assert "projects" not in without and "shared_projects" not in without
    assert_json(server.request("GET", f"/groups/{tree['top'].id}", token=token,
                               params={"with_projects": "maybe"}), 400,
                {"error": "with_projects is invalid"})


def test_group_projects_by_path_and_subgroup(server, carol, tree):
    _, token = carol
    path = urllib.parse.quote(tree["sub"].full_path, safe="")
    assert names(tree, listed(server, tree, token, path=path)) == {"delta", "epsilon"}
    path = urllib.parse.quote(tree["top"].full_path.upper(), safe="")
    assert names(tree, listed(server, tree, token, path=path)) == {"alpha", "beta", "gamma", "shared"}
    assert names(tree, listed(server, tree, token, suffix="projects/shared")) == {"shared"}
    assert listed(server, tree, token, path=tree["sub"].id, suffix="projects/shared") == []


def test_group_projects_as_others(server, dave, tree):
    _, dave_token = dave
    erin_token = tree["erin"][1]
    root = server.root_token
    # a signed-in non-member sees public and internal projects; the shared one is private
    assert names(tree, listed(server, tree, dave_token)) == {"alpha", "beta"}
    assert names(tree, listed(server, tree, dave_token, {"include_subgroups": True})) == {"alpha", "beta", "delta"}
    assert listed(server, tree, dave_token, {"owned": True}) == []
    assert listed(server, tree, dave_token, {"min_access_level": 10}) == []
    assert listed(server, tree, dave_token, suffix="projects/shared") == []
    # erin reaches her own project through its share
    assert names(tree, listed(server, tree, erin_token)) == {"alpha", "beta", "shared"}
    assert names(tree, listed(server, tree, erin_token, {"min_access_level": 40})) == {"shared"}
    # the administrator sees everything and, when asked, custom attributes
    rows = listed(server, tree, root, {"include_subgroups": True, "with_custom_attributes": True})
    assert names(tree, rows) == {"alpha", "beta", "gamma", "delta", "epsilon", "shared"}
    attrs = {r["id"]: r["custom_attributes"] for r in rows}
    assert attrs[tree["ids"]["alpha"]] == [{"key": "tier", "value": "gold"}] and attrs[tree["ids"]["beta"]] == []
    # without a token: public projects only, in the simple form
    rows = listed(server, tree, None, {"include_subgroups": True})
    assert names(tree, rows) == {"alpha", "delta"}
    assert all("permissions" not in r and "visibility" not in r for r in rows)
    assert listed(server, tree, None, suffix="projects/shared") == []


def test_group_projects_errors(server, carol, dave, tree):
    _, token = carol
    _, dave_token = dave
    hidden = tree["hidden"]
    not_found = {"message": "404 Group Not Found"}
    for suffix in ("projects", "projects/shared"):
        assert_json(server.request("GET", f"/groups/424242/{suffix}", token=token), 404, not_found)
        assert_json(server.request("GET", f"/groups/no-such-group/{suffix}", token=token), 404, not_found)
        assert_json(server.request("GET", f"/groups/{hidden.id}/{suffix}", token=dave_token), 404, not_found)
        assert_json(server.request("GET", f"/groups/{hidden.id}/{suffix}"), 404, not_found)
    assert [p["id"] for p in listed(server, tree, token, path=hidden.id)] == [tree["ids"]["secret"]]
    # a personal namespace is not a group
    user = assert_json(server.request("GET", "/user", token=token), 200)
    assert_json(server.request("GET", f"/groups/{user['username']}/projects", token=token), 404, not_found)
    # bad parameters answer as the project list does
    top = tree["top"].id
    for params in ({"visibility": "secret"}, {"order_by": "bogus"}, {"sort": "up"},
                   {"archived": "maybe"}, {"min_access_level": 60}):
        expected = assert_json(server.request("GET", "/projects", token=token, params=params), 400)
        r = server.request("GET", f"/groups/{top}/projects", token=token, params=params)
        assert_json(r, 400, expected)
    for key in ("with_shared", "include_subgroups", "with_security_reports"):
        r = server.request("GET", f"/groups/{top}/projects", token=token, params={key: "x"})
        assert_json(r, 400, {"error": f"{key} is invalid"})
    # storage sizes are not orders of group lists, even for administrators
    r = server.request("GET", f"/groups/{top}/projects", token=server.root_token,
                       params={"order_by": "storage_size"})
    assert_json(r, 400, {"error": "order_by does not have a valid value"})
    # another tenant's group is not there
    host, other_root = other_tenant(server, "gp")
    r = server.request("POST", "/groups", token=other_root, host=host,
                       json={"name": "Far", "path": f"far-{secrets.token_hex(3)}", "visibility": "public"})
    far = assert_json(r, 201)
    assert_json(server.request("GET", f"/groups/{far['full_path']}/projects", token=token), 404, not_found)
    assert_json(server.request("GET", f"/groups/{far['full_path']}/projects", token=other_root, host=host), 200, [])
    for key in (top, tree["top"].full_path):
        r = server.request("GET", f"/groups/{key}/projects", token=other_root, host=host)
        assert_json(r, 404, not_found)
