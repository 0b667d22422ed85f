"""Small differences from GitLab that stop whole client tools (issue 37), each through
python-gitlab or the raw answer a client reads: `/version` carries `/metadata`'s keys, member
objects leave out EE's `member_role`, protected branches leave out EE's
`unprotect_access_levels`, a tag under a protected tag rule is `protected`, label colours given
by name are stored as hex, `"description": null` clears a project's description, the search
rate limit throttles searches, not lists filtered by `search`, a moved project's old path
redirects reads and refuses writes, and a group's `default_branch` names its new projects'.
"""

from __future__ import annotations

import secrets

from conftest import assert_json, git_url, make_user, run_git


def test_version_answers_what_metadata_does(server, gl):
    version = assert_json(server.request("GET", "/version", token=server.root_token), 200)
    assert set(version) == {"version", "revision", "kas", "enterprise"}
    assert version["enterprise"] is False
    assert gl.version()[0] == version["version"]


def test_members_leave_out_ee_keys(server, gl):
    user, _ = make_user(server, "mem")
    project = gl.projects.create({"name": "m" + secrets.token_hex(3)})
    project.members.create({"user_id": user.id, "access_level": 30})
    for path in (f"/projects/{project.id}/members", f"/projects/{project.id}/members/all"):
        for member in assert_json(server.request("GET", path, token=server.root_token), 200):
            assert "member_role" not in member, member
    member = project.members.get(user.id)
    assert member.access_level == 30 and "member_role" not in member.attributes
    group = gl.groups.create({"name": "g" + secrets.token_hex(3), "path": "g" + secrets.token_hex(3)})
    group.members.create({"user_id": user.id, "access_level": 20})
    assert all("member_role" not in m.attributes for m in group.members.list(get_all=True))


def test_a_tag_under_a_protected_rule_is_protected(server, gl):
    project = gl.projects.create({"name": "t" + secrets.token_hex(3),
                                  "initialize_with_readme": True})
    project.protectedtags.create({"name": "v*", "create_access_level": 40})
    project.tags.create({"tag_name": "v1.0", "ref": "main"})
    project.tags.create({"tag_name": "nightly", "ref": "main"})
    assert project.tags.get("v1.0").protected is True
    assert project.tags.get("nightly").protected is False
    listed = {t.name: t.protected for t in project.tags.list(get_all=True)}
    assert listed == {"v1.0": True, "nightly": False}
    created = assert_json(server.request(
        "POST", f"/projects/{project.id}/repository/tags", token=server.root_token,
        json={"tag_name": "v2.0", "ref": "main"}), 201)
    assert created["protected"] is True


def test_label_colours_given_by_name_are_stored_as_hex(server, gl):
    project = gl.projects.create({"name": "l" + secrets.token_hex(3)})
    label = project.labels.create({"name": "bug", "color": "red"})
    assert label.color == "#FF0000"
    assert project.labels.get(label.id).color == "#FF0000"
    label.color = "DarkOrange"
    label.save()
    assert project.labels.get(label.id).color == "#FF8C00"
    assert project.labels.create({"name": "hex", "color": "#abc"}).color == "#abc"
    r = server.request("POST", f"/projects/{project.id}/labels", token=server.root_token,
                       json={"name": "bad", "color": "reddish"})
    assert_json(r, 400, {"message": {"color": ["must be a valid color code"]}})


def test_a_null_description_clears_it(server, gl):
    project = gl.projects.create({"name": "d" + secrets.token_hex(3), "description": "old text"})
    r = server.request("PUT", f"/projects/{project.id}", token=server.root_token,
                       json={"description": None})
    assert assert_json(r, 200)["description"] is None
    assert gl.projects.get(project.id).description is None
    r = server.request("PUT", f"/projects/{project.id}", token=server.root_token,
                       json={"name": "kept " + secrets.token_hex(2)})
    assert assert_json(r, 200)["description"] is None


def test_the_search_rate_limit_throttles_searches_not_filtered_lists(server):
    user, token = make_user(server, "srch")
    assert_json(server.request("PUT", "/application/settings", token=server.root_token,
                               json={"search_rate_limit": 1}), 200)
    try:
        for _ in range(3):
            assert server.request("GET", "/groups?search=g", token=token).status_code == 200
            assert server.request("GET", "/projects?search=p", token=token).status_code == 200
        assert server.request("GET", "/users?search=root", token=token).status_code == 200
        assert server.request("GET", "/users?search=root", token=token).status_code == 429
    finally:
        assert_json(server.request("PUT", "/application/settings", token=server.root_token,
                                   json={"search_rate_limit": 30}), 200)


def test_descendant_groups_lists_every_depth(server, gl):
    top = gl.groups.create({"name": "top" + secrets.token_hex(3), "path": "top" + secrets.token_hex(3)})
    child = gl.groups.create({"name": "a-child", "path": "child" + secrets.token_hex(3),
                              "parent_id": top.id})
    grandchild = gl.groups.create({"name": "b-grandchild", "path": "gc" + secrets.token_hex(3),
                                   "parent_id": child.id})
    listed = top.descendant_groups.list(get_all=True)
    assert [g.id for g in listed] == [child.id, grandchild.id]
    assert [g.id for g in child.descendant_groups.list(get_all=True)] == [grandchild.id]
    assert grandchild.descendant_groups.list(get_all=True) == []
    assert [g.id for g in top.descendant_groups.list(search="grand", get_all=True)] == [grandchild.id]
    assert_json(server.request("GET", "/groups/999999/descendant_groups", token=server.root_token),
                404, {"message": "404 Group Not Found"})


def test_an_issue_by_its_global_id_is_for_administrators(server, gl):
    user, token = make_user(server, "iss")
    project = gl.projects.create({"name": "i" + secrets.token_hex(3)})
    issue = project.issues.create({"title": "found by id"})
    got = assert_json(server.request("GET", f"/issues/{issue.id}", token=server.root_token), 200)
    assert (got["id"], got["iid"], got["title"]) == (issue.id, issue.iid, "found by id")
    assert_json(server.request("GET", f"/issues/{issue.id}", token=token), 403,
                {"message": "403 Forbidden"})
    assert_json(server.request("GET", f"/issues/{issue.id}"), 401, {"message": "401 Unauthorized"})
    assert_json(server.request("GET", "/issues/999999", token=server.root_token), 404,
                {"message": "404 Issue Not Found"})
    assert server.request("GET", "/issues/abc", token=server.root_token).status_code == 400


def test_a_creator_with_access_through_the_group_is_no_direct_member(server, gl):
    maintainer, maintainer_token = make_user(server, "gm")
    developer, developer_token = make_user(server, "gd")
    group = gl.groups.create({"name": "c" + secrets.token_hex(3), "path": "c" + secrets.token_hex(3),
                              "project_creation_level": "developer"})
    sub = gl.groups.create({"name": "s" + secrets.token_hex(3), "path": "s" + secrets.token_hex(3),
                            "parent_id": group.id})
    group.members.create({"user_id": maintainer.id, "access_level": 40})
    group.members.create({"user_id": developer.id, "access_level": 30})

    def create(token, namespace):
        r = server.request("POST", "/projects", token=token,
                           json={"name": "p" + secrets.token_hex(3), "namespace_id": namespace.id})
        return assert_json(r, 201)

    def direct_members(project):
        r = server.request("GET", f"/projects/{project['id']}/members", token=server.root_token)
        return {m["id"]: m["access_level"] for m in assert_json(r, 200)}

    # A Maintainer of the group (or of an ancestor) has access through it: no direct membership.
    assert direct_members(create(maintainer_token, group)) == {}
    assert direct_members(create(maintainer_token, sub)) == {}
    # A Developer allowed to create projects manages what they made.
    assert direct_members(create(developer_token, group)) == {developer.id: 40}
    # The group's creator is its Owner; an administrator who is no member of the group, and
    # anyone in their own namespace, own what they create.
    assert direct_members(create(server.root_token, group)) == {}
    admin, admin_token = make_user(server, "ga", admin=True)
    assert direct_members(create(admin_token, group)) == {admin.id: 50}
    assert direct_members(create(maintainer_token, gl.namespaces.get(maintainer.username))) == \
        {maintainer.id: 50}


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")


def test_group_avatars_are_stored_served_and_removed(server, gl):
    path = "av" + secrets.token_hex(3)
    r = server.request("POST", "/groups", token=server.root_token,
                       data={"name": path, "path": path, "visibility": "public"},
                       files={"avatar": ("logo.png", PNG, "image/png")})
    group = assert_json(r, 201)
    assert group["avatar_url"].endswith(f"/uploads/-/system/group/avatar/{group['id']}/logo.png")
    served = server.follow(group["avatar_url"])
    assert served.status_code == 200 and served.content == PNG
    r = server.request("PUT", f"/groups/{group['id']}", token=server.root_token,
                       files={"avatar": ("new.png", PNG, "image/png")})
    updated = assert_json(r, 200)
    assert updated["avatar_url"].endswith("/new.png")
    assert server.follow(group["avatar_url"]).status_code == 404
    assert server.follow(updated["avatar_url"]).content == PNG
    r = server.request("PUT", f"/groups/{group['id']}", token=server.root_token, json={"avatar": ""})
    assert assert_json(r, 200)["avatar_url"] is None
    assert server.follow(updated["avatar_url"]).status_code == 404
    r = server.request("PUT", f"/groups/{group['id']}", token=server.root_token,
                       files={"avatar": ("x.txt", b"not an image", "text/plain")})
    assert r.status_code == 400


def test_a_moved_project_redirects_reads_and_refuses_writes(server, gl, tmp_path):
    """GitLab's `find_project!`: at a renamed or transferred project's old path a read is
    redirected to the same request at the project's id, a write is 405; git keeps serving
    the old path, and a push there is told the new remote."""
    user, token = make_user(server, "mover")
    project = gl.projects.create({"name": "old" + secrets.token_hex(3),
                                  "initialize_with_readme": True})
    project.members.create({"user_id": user.id, "access_level": 40})
    old_path = project.path_with_namespace
    old_key = old_path.replace("/", "%2F")
    project.path = "renamed-" + secrets.token_hex(3)
    project.save()
    new_path = gl.projects.get(project.id).path_with_namespace

    r = server.request("GET", f"/projects/{old_key}/repository/branches?per_page=5",
                       token=token)
    assert r.status_code == 302, r.text
    assert r.headers["Location"] == f"{server.api_url}/projects/{project.id}/repository/branches?per_page=5"
    followed = server.request("GET", f"/projects/{old_key}", token=token, allow_redirects=True)
    assert assert_json(followed, 200)["path_with_namespace"] == new_path
    # python-gitlab follows the redirect for reads and reports GitLab's refusal for writes.
    assert gl.projects.get(old_path).id == project.id
    for method, path, body in (("PUT", f"/projects/{old_key}", {"description": "x"}),
                               ("POST", f"/projects/{old_key}/issues", {"title": "x"}),
                               ("DELETE", f"/projects/{old_key}", None)):
        r = server.request(method, path, token=token, json=body)
        assert_json(r, 405, {"message": "Non GET methods are not allowed for moved projects"})
    assert gl.projects.get(project.id).description in ("", None)

    # A project the caller may not see stays 404 at its old path too.
    stranger, stranger_token = make_user(server, "nosee")
    private = gl.projects.create({"name": "priv" + secrets.token_hex(3), "visibility": "private"})
    private_old = private.path_with_namespace.replace("/", "%2F")
    private.path = "priv-moved-" + secrets.token_hex(3)
    private.save()
    assert_json(server.request("GET", f"/projects/{private_old}", token=stranger_token), 404,
                {"message": "404 Project Not Found"})

    # Git over HTTP serves the old path, and a push there names the new remote.
    home = tmp_path / "home"
    home.mkdir()
    old_url = git_url(server, f"{old_path}.git", user.username, token)
    run_git(home, "clone", old_url, str(tmp_path / "clone"))
    clone = tmp_path / "clone"
    (clone / "new.txt").write_text("moved\n")
    run_git(home, "add", "new.txt", cwd=clone)
    run_git(home, "commit", "-m", "after the move", cwd=clone)
    pushed = run_git(home, "push", "origin", "HEAD:main", cwd=clone)
    assert f"Project '{old_path}' was moved to '{new_path}'." in pushed.stderr
    assert f"git remote set-url origin {server.url}/{new_path}.git" in pushed.stderr
    assert project.commits.list(ref_name="main", get_all=False)[0].title == "after the move"

    # A new project that takes the old path takes it from the redirect.
    again = gl.projects.create({"name": "again", "path": old_path.rsplit("/", 1)[1]})
    assert again.path_with_namespace == old_path
    assert assert_json(server.request("GET", f"/projects/{old_key}", token=server.root_token),
                       200)["id"] == again.id
    # ... and keeps it when it moves on itself.
    again.path = "again-" + secrets.token_hex(3)
    again.save()
    r = server.request("GET", f"/projects/{old_key}", token=server.root_token)
    assert r.headers["Location"].endswith(f"/projects/{again.id}")


def test_a_renamed_group_or_user_moves_its_projects(server, gl):
    """Renaming a group (or a username) leaves a redirect for every project below it; the
    group's own old path is not followed by the API, as GitLab's `find_group`."""
    group_path = "grp" + secrets.token_hex(3)
    group = gl.groups.create({"name": group_path, "path": group_path})
    sub = gl.groups.create({"name": "sub", "path": "sub", "parent_id": group.id})
    top = gl.projects.create({"name": "top", "namespace_id": group.id})
    deep = gl.projects.create({"name": "deep", "namespace_id": sub.id})
    group.path = group_path + "-new"
    group.save()
    for project, old in ((top, f"{group_path}/top"), (deep, f"{group_path}/sub/deep")):
        r = server.request("GET", f"/projects/{old.replace('/', '%2F')}", token=server.root_token)
        assert r.status_code == 302, r.text
        assert r.headers["Location"].endswith(f"/projects/{project.id}")
    assert_json(server.request("GET", f"/groups/{group_path}", token=server.root_token), 404)

    user, token = make_user(server, "ren")
    personal = assert_json(server.request("POST", "/projects", token=token,
                                          json={"name": "mine"}), 201)
    renamed = user.username + "x"
    assert_json(server.request("PUT", f"/users/{user.id}", token=server.root_token,
                               json={"username": renamed}), 200)
    r = server.request("GET", f"/projects/{user.username}%2Fmine", token=token,
                       allow_redirects=True)
    assert assert_json(r, 200)["path_with_namespace"] == f"{renamed}/mine"
    assert r.json()["id"] == personal["id"]


def test_a_group_default_branch_names_new_projects_below_it(server, gl):
    """GitLab's `Gitlab::DefaultBranch`: the nearest group's `default_branch`, else the
    instance's `default_branch_name`, else `main`; a name in the request wins."""
    top = gl.groups.create({"name": "db" + secrets.token_hex(3), "path": "db" + secrets.token_hex(3),
                            "default_branch": "trunk"})
    assert gl.groups.get(top.id).default_branch == "trunk"
    sub = gl.groups.create({"name": "sub", "path": "sub", "parent_id": top.id})
    assert gl.groups.get(sub.id).default_branch is None
    in_top = gl.projects.create({"name": "a", "namespace_id": top.id,
                                 "initialize_with_readme": True})
    assert in_top.default_branch == "trunk"
    assert [b.name for b in in_top.branches.list(get_all=True)] == ["trunk"]
    assert gl.projects.create({"name": "b", "namespace_id": sub.id}).default_branch == "trunk"
    named = gl.projects.create({"name": "c", "namespace_id": sub.id, "default_branch": "dev"})
    assert named.default_branch == "dev"

    # The setting's own name is taken too, and the nearer group wins.
    r = server.request("PUT", f"/groups/{sub.id}", token=server.root_token,
                       json={"default_branch_name": "develop"})
    assert assert_json(r, 200)["default_branch"] == "develop"
    assert gl.projects.create({"name": "d", "namespace_id": sub.id}).default_branch == "develop"

    r = server.request("PUT", f"/groups/{sub.id}", token=server.root_token,
                       json={"default_branch": ["develop"]})
    assert_json(r, 400, {"error": "default_branch is invalid"})
    # Blank clears it; then the instance's setting, then `main`, apply.
    top.default_branch = ""
    top.save()
    assert gl.groups.get(top.id).default_branch is None
    assert gl.projects.create({"name": "e", "namespace_id": top.id}).default_branch == "main"
    assert_json(server.request("PUT", "/application/settings", token=server.root_token,
                               json={"default_branch_name": "stable"}), 200)
    try:
        assert gl.projects.create({"name": "f", "namespace_id": top.id}).default_branch == "stable"
        assert gl.projects.create({"name": "g", "namespace_id": sub.id}).default_branch == "develop"
    finally:
        assert_json(server.request("PUT", "/application/settings", token=server.root_token,
                                   json={"default_branch_name": None}), 200)
