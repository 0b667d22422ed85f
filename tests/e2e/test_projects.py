"""Projects API end to end with python-gitlab: create/list/filter/paginate, get by id and
path, update, delete, stars, archive, members, visibility per caller, sudo, bad inputs."""

from __future__ import annotations

import secrets

import gitlab
import pytest

from conftest import PROJECT_NOT_FOUND, assert_json, make_user, other_tenant



@pytest.fixture(scope="module")
def alice(server):
    return make_user(server, "alice")


@pytest.fixture(scope="module")
def bob(server):
    return make_user(server, "bob")


def test_create_defaults_and_get_by_id_and_path(server, alice):
    user, token = alice
    gl = server.gitlab(token)
    p = gl.projects.create({"name": "My Fancy Project", "description": "hello"})
    assert p.path == "my-fancy-project"
    assert p.path_with_namespace == f"{user.username}/my-fancy-project"
    assert p.name_with_namespace == f"{user.name} / My Fancy Project"
    assert p.visibility == "private"
    assert p.default_branch == "main"
    assert p.namespace["kind"] == "user" and p.namespace["path"] == user.username
    assert p.owner["id"] == user.id
    assert p.permissions["project_access"]["access_level"] == 50
    assert p.issues_access_level == "enabled" and p.issues_enabled is True
    assert p.web_url.endswith(f"/{user.username}/my-fancy-project")
    assert p.http_url_to_repo.endswith(".git")
    assert p._links["self"].endswith(f"/api/v4/projects/{p.id}")
    assert p.star_count == 0 and p.archived is False
    by_path = gl.projects.get(f"{user.username}/my-fancy-project")
    assert by_path.id == p.id
    r = server.request("GET", f"/projects/{user.username}%2FMY-FANCY-PROJECT", token=token)
    assert assert_json(r, 200)["id"] == p.id
    only_path = gl.projects.create({"path": "only-path"})
    assert only_path.name == "only-path"


def test_every_parameter_stored(server, alice):
    _, token = alice
    gl = server.gitlab(token)
    p = gl.projects.create(
        {
            "name": "params",
            "issues_enabled": False,
            "wiki_access_level": "private",
            "merge_method": "ff",
            "build_timeout": 1234,
            "tag_list": ["a", "b"],
            "only_allow_merge_if_pipeline_succeeds": True,
            "container_expiration_policy_attributes": {"cadence": "7d", "enabled": True, "keep_n": 5},
            "default_branch": "main",
            "auto_devops_deploy_strategy": "manual",
            "pages_access_level": "public",
        }
    )
    assert p.issues_access_level == "disabled" and p.issues_enabled is False
    assert p.wiki_access_level == "private" and p.wiki_enabled is True
    assert p.merge_method == "ff"
    assert p.build_timeout == 1234
    assert p.tag_list == ["a", "b"] and p.topics == ["a", "b"]
    assert p.only_allow_merge_if_pipeline_succeeds is True
    assert p.container_expiration_policy["cadence"] == "7d"
    assert p.container_expiration_policy["keep_n"] == 5
    assert p.container_expiration_policy["enabled"] is True
    assert p.default_branch == "main"
    assert p.auto_devops_deploy_strategy == "manual"
    assert p.pages_access_level == "public"
    p.merge_requests_access_level = "disabled"
    p.description = "changed"
    p.save()
    again = gl.projects.get(p.id)
    assert again.merge_requests_enabled is False and again.description == "changed"
    assert again.merge_method == "ff"
    r = server.request("PUT", f"/projects/{p.id}", token=token, json={"jobs_enabled": False})
    assert assert_json(r, 200)["builds_access_level"] == "disabled"
    r = server.request("POST", "/projects", token=token, json={"name": "x1", "merge_method": "bogus"})
    assert_json(r, 400, {"error": "merge_method does not have a valid value"})


def test_default_branch_setting(server):
    gl = server.gitlab()
    server.request("PUT", "/application/settings", token=server.root_token, json={"default_branch_name": "trunk"})
    try:
        p = gl.projects.create({"name": "branchy"})
        assert p.default_branch == "trunk"
    finally:
        server.request("PUT", "/application/settings", token=server.root_token, json={"default_branch_name": ""})


def test_bad_inputs(server, alice, bob):
    user, token = alice
    gl = server.gitlab(token)
    gl.projects.create({"name": "taken"})
    r = server.request("POST", "/projects", token=token, json={"name": "taken"})
    assert_json(r, 400, {"message": {"name": ["has already been taken"], "path": ["has already been taken"]}})
    r = server.request("POST", "/projects", token=token, json={"name": "other", "path": "TAKEN"})
    assert_json(r, 400, {"message": {"path": ["has already been taken"]}})
    r = server.request("POST", "/projects", token=token, json={"name": "bad/name!"})
    body = assert_json(r, 400)
    assert "name" in body["message"]
    r = server.request("POST", "/projects", token=token, json={"name": "ok", "path": "-bad"})
    assert "path" in assert_json(r, 400)["message"]
    r = server.request("POST", "/projects", token=token, json={"name": "ns", "namespace_id": 999999})
    assert_json(r, 400, {"message": {"namespace": ["is not valid"]}})
    # another user's namespace is not valid either
    r = server.request("POST", "/projects", token=token, json={"name": "ns", "namespace_id": "root"})
    assert_json(r, 400, {"message": {"namespace": ["is not valid"]}})
    r = server.request("POST", "/projects", token=token, json={})
    assert r.status_code == 400
    r = server.request("POST", "/projects", token=token, json={"name": "v", "visibility": "secret"})
    assert_json(r, 400, {"error": "visibility does not have a valid value"})
    r = server.request("GET", "/projects/999999", token=token)
    assert_json(r, 404, PROJECT_NOT_FOUND)
    r = server.request("GET", "/projects/nobody%2Fnothing", token=token)
    assert_json(r, 404, PROJECT_NOT_FOUND)
    r = server.request("POST", "/projects", json={"name": "anon"})
    assert r.status_code == 401


def test_restricted_visibility_and_default(server, alice):
    _, token = alice
    root = server.root_token
    r = server.request("PUT", "/application/settings", token=root,
                       json={"restricted_visibility_levels": ["public"], "default_project_visibility": "internal"})
    assert r.status_code == 200, r.text
    try:
        r = server.request("POST", "/projects", token=token, json={"name": "pub", "visibility": "public"})
        assert_json(r, 400, {"message": {"visibility_level": ["public has been restricted by your GitLab administrator"]}})
        r = server.request("POST", "/projects", token=token, json={"name": "defaulted"})
        assert assert_json(r, 201)["visibility"] == "internal"
        # administrators are not restricted
        r = server.request("POST", "/projects", token=root, json={"name": "adminpub", "visibility": "public"})
        assert assert_json(r, 201)["visibility"] == "public"
    finally:
        server.request("PUT", "/application/settings", token=root,
                       json={"restricted_visibility_levels": [], "default_project_visibility": "private"})


def test_projects_limit(server):
    gl = server.gitlab()
    _, token0 = make_user(server, "nolimit", projects_limit=0)
    r = server.request("POST", "/projects", token=token0, json={"name": "nope"})
    assert_json(r, 400, {"message": {"limit_reached": [
        "Personal project creation is not allowed. Please contact your administrator with questions"]}})
    _, token1 = make_user(server, "onelimit", projects_limit=1)
    assert server.request("POST", "/projects", token=token1, json={"name": "first"}).status_code == 201
    r = server.request("POST", "/projects", token=token1, json={"name": "second"})
    assert_json(r, 400, {"message": {"limit_reached": [
        "Your project limit is 1 projects! Please contact your administrator to increase it"]}})
    assert gl  # root is unaffected by others' limits


def test_visibility_by_caller(server, alice, bob):
    user, token = alice
    _, bob_token = bob
    gl = server.gitlab(token)
    private = gl.projects.create({"name": "secret-one", "visibility": "private"})
    internal = gl.projects.create({"name": "inside-one", "visibility": "internal"})
    public = gl.projects.create({"name": "open-one", "visibility": "public"})
    # anonymous: public only, simple form
    r = server.request("GET", f"/projects/{public.id}")
    body = assert_json(r, 200)
    assert "visibility" not in body and "permissions" not in body and body["name"] == "open-one"
    assert_json(server.request("GET", f"/projects/{internal.id}"), 404, PROJECT_NOT_FOUND)
    assert_json(server.request("GET", f"/projects/{private.id}"), 404, PROJECT_NOT_FOUND)
    anon_ids = {p["id"] for p in server.request("GET", "/projects", params={"per_page": 100}).json()}
    assert public.id in anon_ids and internal.id not in anon_ids and private.id not in anon_ids
    # another user: public and internal, never 403 for private
    assert server.request("GET", f"/projects/{internal.id}", token=bob_token).status_code == 200
    assert_json(server.request("GET", f"/projects/{private.id}", token=bob_token), 404, PROJECT_NOT_FOUND)
    assert_json(server.request("PUT", f"/projects/{private.id}", token=bob_token, json={"description": "x"}), 404, PROJECT_NOT_FOUND)
    bob_ids = {p.id for p in server.gitlab(bob_token).projects.list(get_all=True)}
    assert {public.id, internal.id} <= bob_ids and private.id not in bob_ids
    # external users do not see internal projects
    _, ext_token = make_user(server, "ext", external=True)
    assert_json(server.request("GET", f"/projects/{internal.id}", token=ext_token), 404, PROJECT_NOT_FOUND)
    # member: sees private, permissions reflect the membership
    bob_user = server.gitlab().users.list(username=bob[0].username)[0]
    private.members.create({"user_id": bob_user.id, "access_level": 30})
    r = server.request("GET", f"/projects/{private.id}", token=bob_token)
    assert assert_json(r, 200)["permissions"]["project_access"]["access_level"] == 30
    # developers cannot edit settings
    assert server.request("PUT", f"/projects/{private.id}", token=bob_token, json={"description": "x"}).status_code == 403
    # admin sees everything
    assert server.request("GET", f"/projects/{private.id}", token=server.root_token).status_code == 200
    # sudo acts as alice
    r = server.request("GET", f"/projects/{private.id}", token=server.root_token, params={"sudo": user.username})
    assert assert_json(r, 200)["permissions"]["project_access"]["access_level"] == 50
    r = server.request("GET", "/projects", token=server.root_token, params={"sudo": bob[0].username, "owned": "true"})
    assert private.id not in {p["id"] for p in r.json()}


def test_list_filters_and_pagination(server):
    gl = server.gitlab()
    user, token = make_user(server, "lister")
    ugl = server.gitlab(token)
    made = [ugl.projects.create({"name": f"Item {i}", "visibility": "public" if i % 2 else "private"}) for i in range(7)]
    ids = [p.id for p in made]
    owned = ugl.projects.list(owned=True, get_all=True)
    assert {p.id for p in owned} == set(ids)
    assert len(ugl.projects.list(owned=True, get_all=True)) == len(list(ugl.projects.list(owned=True, iterator=True, per_page=2)))
    public = ugl.projects.list(owned=True, visibility="public", get_all=True)
    assert {p.id for p in public} == {p.id for p in made if p.visibility == "public"}
    assert [p.id for p in ugl.projects.list(owned=True, order_by="id", sort="asc", get_all=True)] == sorted(ids)
    assert [p.name for p in ugl.projects.list(owned=True, order_by="name", sort="desc", get_all=True)] == sorted((p.name for p in made), reverse=True)
    found = ugl.projects.list(search="item 3", get_all=True)
    assert [p.id for p in found] == [made[3].id]
    found = ugl.projects.list(search=f"{user.username}/item-4", search_namespaces=True, get_all=True)
    assert [p.id for p in found] == [made[4].id]
    after = ugl.projects.list(owned=True, id_after=made[4].id, get_all=True)
    assert {p.id for p in after} == set(ids[5:])
    before = ugl.projects.list(owned=True, id_before=made[2].id, get_all=True)
    assert {p.id for p in before} == set(ids[:2])
    assert ugl.projects.list(owned=True, with_programming_language="Rust", get_all=True) == []
    assert len(ugl.projects.list(membership=True, min_access_level=50, get_all=True)) == 7
    r = server.request("GET", "/projects", token=token, params={"min_access_level": 15})
    assert r.status_code == 400
    r = server.request("GET", "/projects", token=token, params={"owned": "true", "simple": "true", "per_page": 3})
    body = assert_json(r, 200)
    assert len(body) == 3 and "permissions" not in body[0]
    assert r.headers["X-Total"] == "7" and r.headers["X-Total-Pages"] == "3"
    r = server.request("GET", "/projects", token=token, params={"owned": "true", "statistics": "true"})
    assert assert_json(r, 200)[0]["statistics"]["commit_count"] == 0
    # keyset pagination
    seen = []
    url = f"/projects?owned=true&pagination=keyset&order_by=id&sort=asc&per_page=3"
    r = server.request("GET", url, token=token)
    while True:
        seen += [p["id"] for p in assert_json(r, 200)]
        link = r.headers.get("Link")
        if not link:
            break
        r = server.follow(link.split(";")[0].strip("<>"), token=token)
    assert seen == sorted(ids)
    r = server.request("GET", "/projects", token=token, params={"pagination": "keyset", "order_by": "name"})
    assert r.status_code == 405
    r = server.request("GET", "/projects", token=token, params={"page": 2502, "per_page": 20})
    assert_json(r, 405, {"error": "Offset pagination has a maximum allowed offset of 50000 for requests that return objects of type Project. Remaining records can be retrieved using keyset pagination."})
    # a user's projects
    listed = gl.users.get(user.id).projects.list(get_all=True)
    assert {p.id for p in listed} == set(ids)
    r = server.request("GET", f"/users/{user.username}/projects")
    assert {p["id"] for p in assert_json(r, 200)} == {p.id for p in made if p.visibility == "public"}
    assert server.request("GET", "/users/nosuchuser/projects").status_code == 404
    # archived filter
    made[0].archive()
    assert {p.id for p in ugl.projects.list(owned=True, archived=True, get_all=True)} == {made[0].id}
    assert made[0].id not in {p.id for p in ugl.projects.list(owned=True, archived=False, get_all=True)}
    assert len(ugl.projects.list(owned=True, with_issues_enabled=True, get_all=True)) == 7


def test_update_rename_and_delete(server, alice, bob):
    user, token = alice
    _, bob_token = bob
    gl = server.gitlab(token)
    p = gl.projects.create({"name": "renamer", "visibility": "public"})
    gl.projects.create({"name": "occupied"})
    r = server.request("PUT", f"/projects/{p.id}", token=token, json={"path": "occupied"})
    assert_json(r, 400, {"message": {"path": ["has already been taken"]}})
    r = server.request("PUT", f"/projects/{p.id}", token=token, json={"name": "Renamed", "path": "renamed"})
    body = assert_json(r, 200)
    assert body["path_with_namespace"] == f"{user.username}/renamed" and body["name"] == "Renamed"
    assert gl.projects.get(f"{user.username}/renamed").id == p.id
    r = server.request("DELETE", f"/projects/{p.id}", token=bob_token)
    assert r.status_code == 403
    r = server.request("POST", f"/projects/{p.id}/archive", token=bob_token)
    assert r.status_code == 403
    r = server.request("DELETE", f"/projects/{p.id}", token=token)
    assert_json(r, 202, {"message": "202 Accepted"})
    assert_json(server.request("GET", f"/projects/{p.id}", token=token), 404, PROJECT_NOT_FOUND)


def test_star_unstar_starrers(server, alice, bob):
    _, token = alice
    bob_user, bob_token = bob
    p = server.gitlab(token).projects.create({"name": "starry", "visibility": "public"})
    bgl = server.gitlab(bob_token)
    bp = bgl.projects.get(p.id)
    bp.star()
    assert bp.star_count == 1
    r = server.request("POST", f"/projects/{p.id}/star", token=bob_token)
    assert r.status_code == 304
    starrers = server.request("GET", f"/projects/{p.id}/starrers").json()
    assert [s["user"]["id"] for s in starrers] == [bob_user.id]
    assert "starred_since" in starrers[0]
    assert p.id in {x.id for x in bgl.projects.list(starred=True, get_all=True)}
    r = server.request("GET", f"/users/{bob_user.id}/starred_projects")
    assert [x["id"] for x in assert_json(r, 200)] == [p.id]
    bp.unstar()
    assert bp.star_count == 0
    assert server.request("POST", f"/projects/{p.id}/unstar", token=bob_token).status_code == 304


def test_archive_unarchive(server, alice):
    _, token = alice
    gl = server.gitlab(token)
    p = gl.projects.create({"name": "archivable"})
    p.archive()
    assert gl.projects.get(p.id).archived is True
    r = server.request("POST", f"/projects/{p.id}/archive", token=token)
    assert assert_json(r, 201)["archived"] is True  # idempotent
    p.unarchive()
    assert gl.projects.get(p.id).archived is False


def test_members(server, alice, bob):
    user, token = alice
    bob_user, bob_token = bob
    gl = server.gitlab(token)
    p = gl.projects.create({"name": "team"})
    members = p.members.list(get_all=True)
    assert [(m.id, m.access_level) for m in members] == [(user.id, 50)]
    m = p.members.create({"user_id": bob_user.id, "access_level": 20})
    assert m.username == bob_user.username and m.access_level == 20 and m.expires_at is None
    r = server.request("POST", f"/projects/{p.id}/members", token=token, json={"user_id": bob_user.id, "access_level": 30})
    assert_json(r, 409, {"message": "Member already exists"})
    r = server.request("POST", f"/projects/{p.id}/members", token=token, json={"user_id": 999999, "access_level": 30})
    assert_json(r, 404, {"message": "404 User Not Found"})
    r = server.request("POST", f"/projects/{p.id}/members", token=token, json={"user_id": bob_user.id, "access_level": 25})
    assert_json(r, 400, {"error": "access_level does not have a valid value"})
    m.access_level = 40
    m.expires_at = "2999-01-01"
    m.save()
    got = p.members.get(bob_user.id)
    assert got.access_level == 40 and got.expires_at == "2999-01-01"
    assert {u["id"] for u in server.request("GET", f"/projects/{p.id}/users", token=token).json()} == {user.id, bob_user.id}
    # a reporter-level member cannot manage members; a maintainer cannot make owners
    r = server.request("POST", f"/projects/{p.id}/members", token=bob_token, json={"user_id": 1, "access_level": 50})
    assert r.status_code == 403
    p.members.delete(bob_user.id)
    assert server.request("GET", f"/projects/{p.id}/members/{bob_user.id}", token=token).status_code == 404
    assert_json(server.request("GET", f"/projects/{p.id}", token=bob_token), 404, PROJECT_NOT_FOUND)


def test_group_projects_and_inherited_members(server, alice, bob):
    user, token = alice
    bob_user, bob_token = bob
    gl = server.gitlab(token)
    group = gl.groups.create({"name": "Proj Group", "path": f"pg-{secrets.token_hex(3)}"})
    sub = gl.groups.create({"name": "Inner", "path": "inner", "parent_id": group.id})
    p = gl.projects.create({"name": "Deep", "namespace_id": sub.id})
    assert p.path_with_namespace == f"{group.path}/inner/deep"
    assert p.namespace["kind"] == "group" and p.namespace["full_path"] == f"{group.path}/inner"
    assert gl.projects.get(f"{group.path}/inner/deep").id == p.id
    # group member reaches the private project with the inherited level
    group.members.create({"user_id": bob_user.id, "access_level": 30})
    r = server.request("GET", f"/projects/{p.id}", token=bob_token)
    body = assert_json(r, 200)
    assert body["permissions"]["group_access"]["access_level"] == 30
    assert body["permissions"]["project_access"] is None
    everyone = {m.id: m.access_level for m in p.members_all.list(get_all=True)}
    assert everyone == {user.id: 50, bob_user.id: 30}
    assert p.id in {x.id for x in server.gitlab(bob_token).projects.list(membership=True, get_all=True)}
    # a developer of the group may create projects in it
    r = server.request("POST", "/projects", token=bob_token, json={"name": "by-dev", "namespace_id": sub.id})
    assert r.status_code == 201, r.text
    # a project may not be more visible than its group
    r = server.request("POST", "/projects", token=token, json={"name": "loud", "namespace_id": sub.id, "visibility": "public"})
    assert_json(r, 400, {"message": {"visibility_level": ["public is not allowed in a private group."]}})


def test_group_maintainer_who_is_project_guest_acts_as_maintainer(server, alice):
    """Every level-dependent field of the project view reads one effective level: the best of
    the project membership and the group's, so a project guest who maintains the group sees
    what a project maintainer sees (import_url and runners_token alike)."""
    _, token = alice
    gl = server.gitlab(token)
    group = gl.groups.create({"name": "Levels", "path": f"levels-{secrets.token_hex(3)}"})
    p = gl.projects.create({"name": "Leveled", "namespace_id": group.id})
    url = "https://mirror.example.com/team/leveled.git"
    assert assert_json(server.request("PUT", f"/projects/{p.id}", token=token, json={"import_url": url}), 200)["import_url"] == url
    maintainer, maintainer_token = make_user(server, "maint")
    both, both_token = make_user(server, "both")
    guest, guest_token = make_user(server, "guest")
    p.members.create({"user_id": maintainer.id, "access_level": 40})
    p.members.create({"user_id": both.id, "access_level": 10})
    p.members.create({"user_id": guest.id, "access_level": 10})
    group.members.create({"user_id": both.id, "access_level": 40})
    as_maintainer = assert_json(server.request("GET", f"/projects/{p.id}", token=maintainer_token), 200)
    assert as_maintainer["import_url"] == url
    assert as_maintainer["runners_token"] is not None
    assert as_maintainer["can_create_merge_request_in"] is True
    as_both = assert_json(server.request("GET", f"/projects/{p.id}", token=both_token), 200)
    assert as_both["permissions"]["project_access"]["access_level"] == 10
    assert as_both["permissions"]["group_access"]["access_level"] == 40
    listed = assert_json(server.request("GET", "/projects", token=both_token, params={"membership": True}), 200)
    for view in (as_both, next(x for x in listed if x["id"] == p.id)):
        for field in ("import_url", "runners_token", "can_create_merge_request_in"):
            assert view[field] == as_maintainer[field], field
    # the level still matters: a plain guest sees neither
    as_guest = assert_json(server.request("GET", f"/projects/{p.id}", token=guest_token), 200)
    assert "import_url" not in as_guest and "runners_token" not in as_guest
    assert as_guest["can_create_merge_request_in"] is False


def test_create_for_user(server, alice, bob):
    user, token = alice
    gl = server.gitlab()
    r = server.request("POST", f"/projects/user/{user.id}", token=server.root_token, json={"name": "given"})
    body = assert_json(r, 201)
    assert body["namespace"]["path"] == user.username and body["owner"]["id"] == user.id
    assert body["creator_id"] == user.id
    r = server.request("POST", f"/projects/user/{user.id}", token=token, json={"name": "given2"})
    assert r.status_code == 403
    r = server.request("POST", "/projects/user/999999", token=server.root_token, json={"name": "given3"})
    assert_json(r, 404, {"message": "404 User Not Found"})
    assert gl


def test_username_change_moves_namespace(server):
    user, token = make_user(server, "mover")
    p = server.gitlab(token).projects.create({"name": "carried"})
    new = f"moved{secrets.token_hex(3)}"
    r = server.request("PUT", f"/users/{user.id}", token=server.root_token, json={"username": new})
    assert r.status_code == 200, r.text
    body = assert_json(server.request("GET", f"/projects/{p.id}", token=token), 200)
    assert body["path_with_namespace"] == f"{new}/carried"
    assert server.request("GET", f"/projects/{new}%2Fcarried", token=token).status_code == 200


def test_python_gitlab_errors(server, alice):
    _, token = alice
    gl = server.gitlab(token)
    with pytest.raises(gitlab.exceptions.GitlabGetError) as err:
        gl.projects.get(987654)
    assert err.value.response_code == 404


def test_tenants_do_not_share_projects(server):
    host, token_b = other_tenant(server, "proj")
    a = server.gitlab().projects.create({"name": "tenant-a-only", "visibility": "public"})
    gl_b = server.gitlab(token_b, host=host)
    b = gl_b.projects.create({"name": "tenant-b-only", "visibility": "public"})
    assert b.path_with_namespace == "root/tenant-b-only"
    assert_json(server.request("GET", "/projects/root%2Ftenant-a-only", token=token_b, host=host), 404, PROJECT_NOT_FOUND)
    ids_b = {p["id"] for p in server.request("GET", "/projects", token=token_b, host=host, params={"per_page": 100}).json()}
    assert ids_b == {b.id}
    got = server.request("GET", f"/projects/{a.id}", token=server.root_token).json()
    assert got["name"] == "tenant-a-only"
