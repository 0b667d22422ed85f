"""The Users API around the signed-in user: GET /user with sudo, statuses, /user_counts,
/user/activities, a user's memberships and project lists, and tenant isolation (last: it
counts on the default tenant having more users than tenant b.test).

Happy paths go through python-gitlab; every bad input is sent with requests and checked for
GitLab's status and body, and for nothing being written (no row, no mail, no change).
"""

from __future__ import annotations

import datetime as dt
import re

import pytest

from conftest import (FORBIDDEN, UNAUTHORIZED, USER_NOT_FOUND, assert_json, insufficient_scope,
                      other_tenant, today_utc)
from conftest import (SELF_FIELDS, activities, admin_get, assert_no_user, create_user,
                          days_ago, db_set_user, get_user, list_users, token_for, uname,
                          user_payload, user_with_token, usernames, users_named)

# Searches users far more often than GitLab's default search limits allow.
pytestmark = pytest.mark.usefixtures("no_search_rate_limits")


# ============================================================================
# GET /user and sudo
# ============================================================================


def test_current_user_view_for_non_admin(server, non_admin):
    me = assert_json(server.request("GET", "/user", token=non_admin["token"]), 200)
    assert me["id"] == non_admin["id"]
    assert me["email"] == non_admin["email"]
    assert SELF_FIELDS <= set(me), SELF_FIELDS - set(me)
    for field in ("is_admin", "current_sign_in_ip", "last_sign_in_ip", "note"):
        assert field not in me, field


def test_current_user_python_gitlab(server, gl_non_admin, non_admin):
    assert gl_non_admin.user.username == non_admin["username"]
    assert gl_non_admin.user.email == non_admin["email"]
    assert not hasattr(gl_non_admin.user, "is_admin")


def test_current_user_records_activity_today(server):
    body, token = user_with_token(server)
    assert body["last_activity_on"] is None
    server.request("GET", "/user", token=token)
    assert get_user(server, body["id"])["last_activity_on"] == today_utc().isoformat()


@pytest.mark.parametrize("by", ["username", "id"])
def test_sudo_as_root(server, non_admin, by):
    r = server.request("GET", "/user", token=server.root_token, params={"sudo": non_admin[by]})
    me = assert_json(r, 200)
    assert me["id"] == non_admin["id"]
    assert me["username"] == non_admin["username"]
    assert "is_admin" not in me  # the view of the user acted as


def test_sudo_header_as_root(server, non_admin):
    r = server.request("GET", "/user", token=server.root_token,
                       headers={"Sudo": non_admin["username"]})
    assert assert_json(r, 200)["id"] == non_admin["id"]


def test_sudo_python_gitlab(server, gl, non_admin):
    me = gl.http_get("/user", sudo=non_admin["username"])
    assert me["username"] == non_admin["username"]


def test_sudo_as_non_admin_loses_admin_rights(server, non_admin):
    body = user_payload()
    r = server.request("POST", "/users", token=server.root_token,
                       params={"sudo": non_admin["username"]}, json=body)
    assert_json(r, 403, FORBIDDEN)
    assert_no_user(server, body["username"])
    r = server.request("GET", "/users", token=server.root_token,
                       params={"sudo": non_admin["username"], "username": "root"})
    assert "email" not in assert_json(r, 200)[0]


def test_sudo_by_non_admin(server, non_admin):
    r = server.request("GET", "/user", token=non_admin["token"], params={"sudo": "root"})
    assert_json(r, 403, {"message": "403 Forbidden - Must be admin to use sudo"})


def test_sudo_unknown_user(server):
    r = server.request("GET", "/user", token=server.root_token, params={"sudo": "nobody-here"})
    assert r.status_code == 404, r.text


def test_current_user_without_token(server):
    assert_json(server.request("GET", "/user"), 401, UNAUTHORIZED)
# ============================================================================
# User status
# ============================================================================


def test_status_python_gitlab(server, gl, gl_non_admin, non_admin):
    status = gl_non_admin.user.status.get()
    status.emoji = "coffee"
    status.message = "Brewing :coffee:"
    status.save()
    again = gl_non_admin.user.status.get()
    assert again.emoji == "coffee"
    assert again.message == "Brewing :coffee:"
    other = gl.users.get(non_admin["id"], lazy=True).status.get()
    assert other.emoji == "coffee"
    assert other.message == "Brewing :coffee:"


def put_status(server, token, **body):
    return server.request("PUT", "/user/status", token=token, json=body)


def test_status_set_and_get(server):
    body, token = user_with_token(server)
    r = put_status(server, token, emoji="rocket", message="Shipping", availability="busy")
    data = assert_json(r, 200)
    assert set(data) >= {"emoji", "message", "availability", "message_html", "clear_status_at"}
    assert data["emoji"] == "rocket"
    assert data["message"] == "Shipping"
    assert data["availability"] == "busy"
    assert data["message_html"] == "Shipping"
    assert data["clear_status_at"] is None
    assert assert_json(server.request("GET", "/user/status", token=token), 200) == data


def test_status_default_emoji(server):
    body, token = user_with_token(server)
    data = assert_json(put_status(server, token, message="Hello"), 200)
    assert data["emoji"] == "speech_balloon"


def test_status_message_html_escapes_and_wraps_emoji(server):
    body, token = user_with_token(server)
    data = assert_json(put_status(server, token, message="<b>hi</b> & :coffee: at 10:30"), 200)
    html = data["message_html"]
    assert "&lt;b&gt;hi&lt;/b&gt;" in html
    assert "<b>" not in html
    assert "&amp;" in html
    assert re.search(r'<gl-emoji[^>]*data-name="coffee"[^>]*>', html), html
    assert "10:30" in html


def test_status_message_of_100_chars(server):
    body, token = user_with_token(server)
    assert assert_json(put_status(server, token, message="x" * 100), 200)["message"] == "x" * 100


def test_status_message_too_long(server):
    body, token = user_with_token(server)
    put_status(server, token, message="keep me")
    assert_json(put_status(server, token, message="x" * 101), 400,
                {"message": {"message": ["is too long (maximum is 100 characters)"]}})
    assert assert_json(server.request("GET", "/user/status", token=token), 200)["message"] == \
        "keep me"


def test_status_clear(server):
    body, token = user_with_token(server)
    put_status(server, token, emoji="coffee", message="busy")
    assert_json(put_status(server, token, emoji="", message=""), 200)
    data = assert_json(server.request("GET", "/user/status", token=token), 200)
    assert data["emoji"] is None
    assert data["message"] is None
    assert data["message_html"] is None
    public = assert_json(server.request("GET", f"/users/{body['id']}/status"), 200)
    assert public["emoji"] is None
    assert public["message"] is None


def test_status_empty_before_any_set(server):
    body, token = user_with_token(server)
    data = assert_json(server.request("GET", "/user/status", token=token), 200)
    assert data["emoji"] is None
    assert data["message"] is None


def test_status_clear_status_after(server):
    body, token = user_with_token(server)
    before = dt.datetime.now(dt.timezone.utc)
    data = assert_json(put_status(server, token, message="brb", clear_status_after="30_minutes"),
                       200)
    at = dt.datetime.fromisoformat(data["clear_status_at"].replace("Z", "+00:00"))
    expected = before + dt.timedelta(minutes=30)
    assert abs((at - expected).total_seconds()) < 60, data["clear_status_at"]


@pytest.mark.parametrize("field,value", [("availability", "away"),
                                         ("clear_status_after", "2_weeks")])
def test_status_bad_enum(server, field, value):
    body, token = user_with_token(server)
    put_status(server, token, message="keep")
    assert_json(put_status(server, token, message="changed", **{field: value}), 400,
                {"error": f"{field} does not have a valid value"})
    assert assert_json(server.request("GET", "/user/status", token=token), 200)["message"] == \
        "keep"


@pytest.mark.parametrize("emoji", ["definitely_not_an_emoji", "not an emoji!", "<b>"])
def test_status_unknown_emoji(server, emoji):
    """GitLab: the emoji must be a name from its emoji index."""
    body, token = user_with_token(server)
    put_status(server, token, emoji="coffee", message="keep")
    r = put_status(server, token, emoji=emoji, message="changed")
    err = assert_json(r, 400)
    assert list(err) == ["message"] and list(err["message"]) == ["emoji"], err
    data = assert_json(server.request("GET", "/user/status", token=token), 200)
    assert (data["emoji"], data["message"]) == ("coffee", "keep")


def test_status_update_needs_api_scope(server):
    body = create_user(server)
    token = token_for(server, body["id"], scopes=("read_user",))
    assert_json(server.request("GET", "/user/status", token=token), 200)
    assert_json(put_status(server, token, message="x"), 403, insufficient_scope("api"))


@pytest.mark.parametrize("by", ["id", "username"])
def test_status_of_user_anonymous(server, by):
    body, token = user_with_token(server)
    put_status(server, token, emoji="tada", message="Launched")
    data = assert_json(server.request("GET", f"/users/{body[by]}/status"), 200)
    assert data["emoji"] == "tada"
    assert data["message"] == "Launched"


def test_status_of_unknown_user(server):
    assert_json(server.request("GET", "/users/999999/status"), 404, USER_NOT_FOUND)
    assert_json(server.request("GET", "/users/no-such-user-x/status"), 404, USER_NOT_FOUND)


def test_status_requires_auth(server):
    assert_json(server.request("GET", "/user/status"), 401, UNAUTHORIZED)
    assert_json(server.request("PUT", "/user/status", json={"message": "x"}), 401, UNAUTHORIZED)


def test_status_with_sudo(server, non_admin):
    body, token = user_with_token(server)
    r = server.request("PUT", "/user/status", token=server.root_token,
                       params={"sudo": body["username"]}, json={"message": "set by sudo"})
    assert assert_json(r, 200)["message"] == "set by sudo"
    assert assert_json(server.request("GET", "/user/status", token=token), 200)["message"] == \
        "set by sudo"
    root_status = assert_json(server.request("GET", "/users/1/status"), 200)
    assert root_status["message"] != "set by sudo"
# ============================================================================
# /user_counts
# ============================================================================


def test_user_counts(server, non_admin):
    data = assert_json(server.request("GET", "/user_counts", token=non_admin["token"]), 200)
    assert data["merge_requests"] == 0
    assert data["assigned_issues"] == 0
    assert all(isinstance(v, int) and v == 0 for v in data.values()), data


def test_user_counts_python_gitlab(gl):
    assert gl.http_get("/user_counts")["merge_requests"] == 0


def test_user_counts_requires_auth(server):
    assert_json(server.request("GET", "/user_counts"), 401, UNAUTHORIZED)
# ============================================================================
# /user/activities
# ============================================================================


def test_activities(server):
    active, token = user_with_token(server)
    server.request("GET", "/user", token=token)
    old = create_user(server)
    db_set_user(server, old, last_activity_on=days_ago(30))
    ancient = create_user(server)
    db_set_user(server, ancient, last_activity_on=days_ago(400))
    never = create_user(server)

    items = activities(server)
    names = [a["username"] for a in items]
    assert active["username"] in names
    assert old["username"] in names
    assert ancient["username"] not in names  # older than 6 months
    assert never["username"] not in names
    assert names.index(old["username"]) < names.index(active["username"])  # oldest first
    days = [a["last_activity_on"] for a in items]
    assert days == sorted(days)
    entry = next(a for a in items if a["username"] == active["username"])
    assert entry == {"username": active["username"],
                     "last_activity_on": today_utc().isoformat(),
                     "last_activity_at": today_utc().isoformat()}

    with_from = [a["username"] for a in activities(server, from_=days_ago(401))]
    assert ancient["username"] in with_from
    assert with_from.index(ancient["username"]) < with_from.index(old["username"])
    recent = [a["username"] for a in activities(server, from_=days_ago(10))]
    assert old["username"] not in recent
    assert active["username"] in recent


def test_activities_python_gitlab(server, gl, non_admin):
    server.request("GET", "/user", token=non_admin["token"])
    items = gl.user_activities.list(get_all=True)
    assert non_admin["username"] in [a.username for a in items]


@pytest.mark.parametrize("value", ["yesterday", "2024-13-01", "01/02/2024"])
def test_activities_bad_from(server, value):
    r = server.request("GET", "/user/activities", token=server.root_token,
                       params={"from": value})
    assert_json(r, 400, {"error": "from is invalid"})


def test_activities_non_admin(server, non_admin):
    assert_json(server.request("GET", "/user/activities", token=non_admin["token"]), 403, FORBIDDEN)


def test_activities_anonymous(server):
    assert_json(server.request("GET", "/user/activities"), 401, UNAUTHORIZED)
# ============================================================================
# /users/:id/memberships, /projects, /starred_projects
# ============================================================================


@pytest.mark.parametrize("params", [{}, {"type": "Project"}, {"type": "Namespace"}])
def test_memberships_empty(server, non_admin, params):
    r = admin_get(server, f"/users/{non_admin['id']}/memberships", **params)
    assert assert_json(r, 200) == []
    assert r.headers["X-Total"] == "0"
    assert r.headers["X-Page"] == "1"


def test_memberships_python_gitlab(gl, non_admin):
    assert gl.users.get(non_admin["id"], lazy=True).memberships.list(get_all=True) == []


def test_memberships_bad_type(server, non_admin):
    assert_json(admin_get(server, f"/users/{non_admin['id']}/memberships", type="Foo"), 400,
                {"error": "type does not have a valid value"})


def test_memberships_non_admin(server, non_admin):
    r = server.request("GET", f"/users/{non_admin['id']}/memberships", token=non_admin["token"])
    assert_json(r, 403, FORBIDDEN)


def test_memberships_unknown_user(server):
    assert_json(admin_get(server, "/users/999999/memberships"), 404, USER_NOT_FOUND)


@pytest.mark.parametrize("kind", ["projects", "starred_projects"])
@pytest.mark.parametrize("by", ["id", "username"])
def test_user_project_lists_empty(server, non_admin, kind, by):
    r = server.request("GET", f"/users/{non_admin[by]}/{kind}", token=non_admin["token"])
    assert assert_json(r, 200) == []
    assert r.headers["X-Total"] == "0"
    assert r.headers["X-Per-Page"] == "20"
    assert r.headers["X-Page"] == "1"


def test_user_project_lists_python_gitlab(gl, non_admin):
    user = gl.users.get(non_admin["id"], lazy=True)
    assert user.projects.list(get_all=True) == []
    assert user.starred_projects.list(get_all=True) == []


@pytest.mark.parametrize("kind", ["projects", "starred_projects"])
def test_user_project_lists_unknown_user(server, kind):
    assert_json(admin_get(server, f"/users/999999/{kind}"), 404, USER_NOT_FOUND)


def test_memberships_list_direct_projects_and_groups(server):
    user, token = user_with_token(server)
    group = assert_json(server.request("POST", "/groups", token=token,
                                       json={"name": uname("grp"), "path": uname("grp")}), 201)
    project = assert_json(server.request("POST", "/projects", token=token,
                                         json={"name": uname("prj")}), 201)
    every = assert_json(admin_get(server, f"/users/{user['id']}/memberships"), 200)
    assert {(m["source_type"], m["source_id"], m["source_name"], m["access_level"]) for m in every} == {
        ("Namespace", group["id"], group["name"], 50),
        ("Project", project["id"], project["name"], 50),
    }
    projects = assert_json(admin_get(server, f"/users/{user['id']}/memberships", type="Project"), 200)
    assert [m["source_id"] for m in projects] == [project["id"]]
    groups = assert_json(admin_get(server, f"/users/{user['id']}/memberships", type="Namespace"), 200)
    assert [m["source_id"] for m in groups] == [group["id"]]
    r = server.request("GET", f"/users/{user['id']}/memberships", token=token)
    assert_json(r, 403)


# ============================================================================
# Tenants
# ============================================================================


B = "b.test"


@pytest.fixture(scope="module")
def tenant_b(server):
    """Tenant b.test; returns a root token of it once the server serves it."""
    return other_tenant(server, host=B)[1]


def test_tenant_ids_restart_at_2(server, tenant_b):
    first = create_user(server, host=B, token=tenant_b, username=uname("bfirst"))
    assert first["id"] == 2
    assert first["web_url"] == f"http://{B}:{server.port}/{first['username']}"


def test_tenant_user_invisible_from_default(server, tenant_b):
    b_user = create_user(server, host=B, token=tenant_b, username=uname("bonly"))
    assert users_named(server, b_user["username"]) == []
    assert list_users(server, token=server.root_token, search=b_user["username"]) == []
    r = admin_get(server, f"/users/{b_user['id']}")
    if r.status_code == 200:  # the default tenant has its own user with that id
        assert r.json()["username"] != b_user["username"]
    else:
        assert_json(r, 404, USER_NOT_FOUND)
    assert_json(server.request("GET", f"/users/{b_user['username']}/status"), 404,
                USER_NOT_FOUND)
    # and the default tenant's users are invisible from B
    assert users_named(server, "admin", host=B, token=tenant_b) == []
    assert users_named(server, uname("nobody"), host=B, token=tenant_b) == []


def test_tenant_default_users_invisible_from_b(server, tenant_b, non_admin):
    assert users_named(server, non_admin["username"], host=B, token=tenant_b) == []
    assert_json(server.request("GET", f"/users/{non_admin['username']}/status", host=B), 404,
                USER_NOT_FOUND)


def test_tenant_same_username_in_both(server, tenant_b):
    username = uname("both")
    a = create_user(server, username=username)
    b = create_user(server, host=B, token=tenant_b, username=username)
    assert a["username"] == b["username"]
    assert usernames(users_named(server, username)) == [username]
    assert users_named(server, username)[0]["id"] == a["id"]
    assert users_named(server, username, host=B, token=tenant_b)[0]["id"] == b["id"]


def test_tenant_state_changes_stay_in_tenant(server, tenant_b):
    b_user = create_user(server, host=B, token=tenant_b)
    a_before = admin_get(server, f"/users/{b_user['id']}")
    r = server.request("POST", f"/users/{b_user['id']}/block", token=tenant_b, host=B)
    assert assert_json(r, 201) is True
    a_after = admin_get(server, f"/users/{b_user['id']}")
    assert a_after.status_code == a_before.status_code
    if a_after.status_code == 200:
        assert a_after.json()["state"] == a_before.json()["state"]


def test_tenant_b_token_unknown_on_default(server, tenant_b):
    assert_json(server.request("GET", "/users", token=tenant_b), 401, UNAUTHORIZED)


def test_tenant_delete_from_wrong_tenant(server, tenant_b):
    a_user = create_user(server)
    # B has only a handful of users, so this id is unknown there
    b_view = server.request("GET", f"/users/{a_user['id']}", token=tenant_b, host=B)
    assert_json(b_view, 404, USER_NOT_FOUND)
    r = server.request("DELETE", f"/users/{a_user['id']}", token=tenant_b, host=B)
    assert_json(r, 404, USER_NOT_FOUND)
    r = server.request("PUT", f"/users/{a_user['id']}", token=tenant_b, host=B,
                       json={"bio": "from b"})
    assert_json(r, 404, USER_NOT_FOUND)
    r = server.request("POST", f"/users/{a_user['id']}/block", token=tenant_b, host=B)
    assert_json(r, 404, USER_NOT_FOUND)
    assert get_user(server, a_user["id"])["username"] == a_user["username"]


def test_tenant_python_gitlab(server, tenant_b):
    glb = server.gitlab(tenant_b, host=B)
    username = uname("glb")
    user = glb.users.create(user_payload(username))
    assert [u.username for u in glb.users.list(username=username)] == [username]
    assert users_named(server, username) == []
    user.delete()
