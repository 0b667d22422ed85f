"""The Users API, a user's state: block, unblock, deactivate and activate (GitLab's rules
between them, ldap_blocked included), and DELETE /users/:id (soft, with its ghost user, and
hard, sole group owners included).

Happy paths go through python-gitlab; every bad input is sent with requests and checked for
GitLab's status and body, and for nothing being written (no row, no mail, no change).
"""

from __future__ import annotations

import gitlab
import pytest

from conftest import FORBIDDEN, UNAUTHORIZED, USER_NOT_FOUND, assert_json, other_tenant
from conftest import (activities, admin_get, create_user, days_ago, db_set_user, get_user,
                          list_users, post_user, state_action, uname, user_payload,
                          user_with_token, usernames, users_named)

# Searches users far more often than GitLab's default search limits allow.
pytestmark = pytest.mark.usefixtures("no_search_rate_limits")


# ============================================================================
# block / unblock / deactivate / activate
# ============================================================================


def test_block_unblock_python_gitlab(server, gl):
    body, token = user_with_token(server)
    user = gl.users.get(body["id"])
    assert user.block() is True
    assert user.state == "blocked"
    assert gl.users.get(body["id"]).state == "blocked"
    assert_json(server.request("GET", "/user", token=token), 401, UNAUTHORIZED)
    assert user.block() is None
    assert user.unblock() is True
    assert user.state == "active"
    assert gl.users.get(body["id"]).state == "active"
    assert server.request("GET", "/user", token=token).status_code == 200
    assert user.unblock() is False


def test_block_returns_201_and_body(server):
    body = create_user(server)
    r = state_action(server, body["id"], "block")
    assert assert_json(r, 201) is True
    r = state_action(server, body["id"], "block")
    assert r.status_code == 201
    assert r.json() is None
    assert assert_json(state_action(server, body["id"], "unblock"), 201) is True
    assert assert_json(state_action(server, body["id"], "unblock"), 201) is False


def test_blocked_user_shows_state_everywhere(server, non_admin):
    body = create_user(server)
    state_action(server, body["id"], "block")
    assert get_user(server, body["id"])["state"] == "blocked"
    listed = list_users(server, token=non_admin["token"], username=body["username"])
    assert listed[0]["state"] == "blocked"


def test_blocked_user_token_refused_for_every_route(server):
    body, token = user_with_token(server)
    state_action(server, body["id"], "block")
    for method, path in [("GET", "/user"), ("GET", "/users"), ("GET", "/user/status"),
                         ("PUT", "/user/status"), ("GET", "/user_counts")]:
        assert_json(server.request(method, path, token=token), 401, UNAUTHORIZED)


def test_deactivate_activate_python_gitlab(server, gl):
    body, token = user_with_token(server)  # the token is never used before deactivation
    user = gl.users.get(body["id"])
    assert user.deactivate() is True
    assert user.state == "deactivated"
    assert gl.users.get(body["id"]).state == "deactivated"
    assert_json(server.request("GET", "/user", token=token), 401, UNAUTHORIZED)
    assert user.activate() is True
    assert user.state == "active"
    assert server.request("GET", "/user", token=token).status_code == 200


def test_deactivate_returns_201(server):
    body = create_user(server)
    assert assert_json(state_action(server, body["id"], "deactivate"), 201) is True
    assert get_user(server, body["id"])["state"] == "deactivated"
    assert list_users(server, username=body["username"], active="true") == []
    assert list_users(server, username=body["username"], blocked="true") == []
    assert assert_json(state_action(server, body["id"], "activate"), 201) is True
    assert get_user(server, body["id"])["state"] == "active"


def test_deactivate_already_deactivated(server):
    body = create_user(server)
    state_action(server, body["id"], "deactivate")
    r = state_action(server, body["id"], "deactivate")
    assert r.status_code == 201, r.text
    assert get_user(server, body["id"])["state"] == "deactivated"


def test_activate_active_user(server):
    body = create_user(server)
    assert assert_json(state_action(server, body["id"], "activate"), 201) is True
    assert get_user(server, body["id"])["state"] == "active"


def test_deactivate_blocked_user(server):
    body = create_user(server)
    state_action(server, body["id"], "block")
    assert_json(state_action(server, body["id"], "deactivate"), 403,
                {"message": "403 Forbidden - A blocked user cannot be deactivated by the API"})
    assert get_user(server, body["id"])["state"] == "blocked"


def test_deactivate_recently_active_user(server):
    body, token = user_with_token(server)
    assert server.request("GET", "/user", token=token).status_code == 200
    assert_json(state_action(server, body["id"], "deactivate"), 403, {
        "message": "403 Forbidden - The user you are trying to deactivate has been active "
                   "in the past 180 days and cannot be deactivated"})
    assert get_user(server, body["id"])["state"] == "active"
    assert server.request("GET", "/user", token=token).status_code == 200


def test_deactivate_python_gitlab_error(server, gl):
    body, token = user_with_token(server)
    server.request("GET", "/user", token=token)
    with pytest.raises(gitlab.GitlabDeactivateError) as exc:
        gl.users.get(body["id"]).deactivate()
    assert exc.value.response_code == 403


@pytest.mark.parametrize("age,allowed", [(179, False), (181, True), (400, True)])
def test_deactivate_180_day_rule(server, age, allowed):
    body = create_user(server)
    db_set_user(server, body, last_activity_on=days_ago(age))
    r = state_action(server, body["id"], "deactivate")
    if allowed:
        assert assert_json(r, 201) is True
    else:
        assert r.status_code == 403, r.text
    expected = "deactivated" if allowed else "active"
    assert get_user(server, body["id"])["state"] == expected


def test_activate_blocked_user(server):
    body = create_user(server)
    state_action(server, body["id"], "block")
    assert_json(state_action(server, body["id"], "activate"), 403,
                {"message": "403 Forbidden - A blocked user must be unblocked to be activated"})
    assert get_user(server, body["id"])["state"] == "blocked"


def test_activate_python_gitlab_error(server, gl):
    body = create_user(server)
    user = gl.users.get(body["id"])
    user.block()
    with pytest.raises(gitlab.GitlabActivateError) as exc:
        user.activate()
    assert exc.value.response_code == 403


def test_unblock_deactivated_user(server, gl):
    body = create_user(server)
    state_action(server, body["id"], "deactivate")
    assert_json(state_action(server, body["id"], "unblock"), 403,
                {"message": "403 Forbidden - Deactivated users cannot be unblocked by the API"})
    assert get_user(server, body["id"])["state"] == "deactivated"
    with pytest.raises(gitlab.GitlabUnblockError) as exc:
        gl.users.get(body["id"]).unblock()
    assert exc.value.response_code == 403


def test_block_deactivated_user(server):
    body, token = user_with_token(server)
    state_action(server, body["id"], "deactivate")
    assert assert_json(state_action(server, body["id"], "block"), 201) is True
    assert get_user(server, body["id"])["state"] == "blocked"
    assert_json(server.request("GET", "/user", token=token), 401, UNAUTHORIZED)


def test_admin_cannot_block_themselves(server):
    """GitLab: 403 "The API initiating user cannot be blocked by the API"."""
    admin, token = user_with_token(server, admin=True)
    r = server.request("POST", f"/users/{admin['id']}/block", token=token)
    assert_json(r, 403,
                {"message": "403 Forbidden - The API initiating user cannot be blocked by the API"})
    assert get_user(server, admin["id"])["state"] == "active"


@pytest.mark.parametrize("action", ["block", "unblock", "deactivate", "activate"])
def test_state_unknown_user(server, action):
    assert_json(state_action(server, 999999, action), 404, USER_NOT_FOUND)
    assert_json(state_action(server, "abc", action), 404, USER_NOT_FOUND)


@pytest.mark.parametrize("action", ["block", "unblock", "deactivate", "activate"])
def test_state_as_non_admin(server, non_admin, action):
    body = create_user(server)
    assert_json(state_action(server, body["id"], action, token=non_admin["token"]), 403, FORBIDDEN)
    assert get_user(server, body["id"])["state"] == "active"


@pytest.mark.parametrize("action", ["block", "unblock", "deactivate", "activate"])
def test_state_without_token(server, action):
    body = create_user(server)
    assert_json(server.request("POST", f"/users/{body['id']}/{action}"), 401, UNAUTHORIZED)


# ---- ldap_blocked (set straight in the database: no API puts a user there) ----


@pytest.fixture()
def ldap_user(server):
    body, token = user_with_token(server, extern_uid="cn=" + uname(), provider="ldapmain")
    db_set_user(server, body, state="ldap_blocked")
    return {**body, "token": token}


def test_ldap_blocked_state_shown(server, ldap_user):
    assert get_user(server, ldap_user["id"])["state"] == "ldap_blocked"
    assert ldap_user["username"] in usernames(list_users(server, token=server.root_token,
                                                         blocked="true"))
    assert ldap_user["username"] not in usernames(list_users(
        server, token=server.root_token, active="true", search=ldap_user["username"]))


def test_ldap_blocked_cannot_be_blocked(server, ldap_user):
    assert_json(state_action(server, ldap_user["id"], "block"), 403,
                {"message": "403 Forbidden - LDAP blocked users cannot be modified by the API"})
    assert get_user(server, ldap_user["id"])["state"] == "ldap_blocked"


def test_ldap_blocked_cannot_be_unblocked(server, ldap_user):
    assert_json(state_action(server, ldap_user["id"], "unblock"), 403,
                {"message": "403 Forbidden - LDAP blocked users cannot be unblocked by the API"})
    assert get_user(server, ldap_user["id"])["state"] == "ldap_blocked"


def test_ldap_blocked_cannot_be_activated(server, ldap_user):
    assert_json(state_action(server, ldap_user["id"], "activate"), 403,
                {"message": "403 Forbidden - A blocked user must be unblocked to be activated"})
    assert get_user(server, ldap_user["id"])["state"] == "ldap_blocked"


def test_ldap_blocked_cannot_be_deactivated(server, ldap_user):
    assert_json(state_action(server, ldap_user["id"], "deactivate"), 403,
                {"message": "403 Forbidden - A blocked user cannot be deactivated by the API"})
    assert get_user(server, ldap_user["id"])["state"] == "ldap_blocked"


def test_ldap_blocked_token_refused(server, ldap_user):
    assert_json(server.request("GET", "/user", token=ldap_user["token"]), 401, UNAUTHORIZED)


def test_ldap_blocked_python_gitlab(server, gl, ldap_user):
    user = gl.users.get(ldap_user["id"])
    with pytest.raises(gitlab.GitlabBlockError) as exc:
        user.block()
    assert exc.value.response_code == 403
    with pytest.raises(gitlab.GitlabUnblockError) as exc:
        user.unblock()
    assert exc.value.response_code == 403

# ============================================================================
# DELETE /users/:id
# ============================================================================


def test_delete_python_gitlab(server, gl):
    body, token = user_with_token(server)
    gl.users.delete(body["id"])
    with pytest.raises(gitlab.GitlabGetError) as exc:
        gl.users.get(body["id"])
    assert exc.value.response_code == 404
    assert_json(server.request("GET", "/user", token=token), 401, UNAUTHORIZED)
    assert users_named(server, body["username"]) == []


def test_delete_object_python_gitlab(server, gl):
    body = create_user(server)
    gl.users.get(body["id"]).delete()
    assert_json(admin_get(server, f"/users/{body['id']}"), 404, USER_NOT_FOUND)


def test_delete_is_204_with_empty_body(server):
    body = create_user(server)
    r = server.request("DELETE", f"/users/{body['id']}", token=server.root_token)
    assert r.status_code == 204
    assert r.content == b""


def test_hard_delete(server):
    body, token = user_with_token(server)
    r = server.request("DELETE", f"/users/{body['id']}", token=server.root_token,
                       params={"hard_delete": "true"})
    assert r.status_code == 204
    assert_json(admin_get(server, f"/users/{body['id']}"), 404, USER_NOT_FOUND)
    assert_json(server.request("GET", "/user", token=token), 401, UNAUTHORIZED)


def test_delete_twice_is_404(server):
    body = create_user(server)
    assert server.request("DELETE", f"/users/{body['id']}", token=server.root_token
                          ).status_code == 204
    assert_json(server.request("DELETE", f"/users/{body['id']}", token=server.root_token),
                404, USER_NOT_FOUND)


@pytest.mark.parametrize("ident", ["999999", "abc"])
def test_delete_unknown_is_404(server, ident):
    assert_json(server.request("DELETE", f"/users/{ident}", token=server.root_token), 404,
                USER_NOT_FOUND)


def test_delete_as_non_admin_is_403(server, non_admin):
    body = create_user(server)
    assert_json(server.request("DELETE", f"/users/{body['id']}", token=non_admin["token"]), 403,
                FORBIDDEN)
    assert get_user(server, body["id"])["username"] == body["username"]


def test_delete_without_token_is_401(server):
    body = create_user(server)
    assert_json(server.request("DELETE", f"/users/{body['id']}"), 401, UNAUTHORIZED)
    assert get_user(server, body["id"])["id"] == body["id"]


def test_soft_delete_ghost_never_listed(server):
    body = create_user(server)
    assert server.request("DELETE", f"/users/{body['id']}", token=server.root_token
                          ).status_code == 204
    everyone = []
    page = 1
    while True:
        r = admin_get(server, "/users", per_page=100, page=page)
        everyone += assert_json(r, 200)
        if not r.headers.get("X-Next-Page"):
            break
        page += 1
    assert "ghost" not in usernames(everyone)
    assert users_named(server, "ghost") == []
    assert list_users(server, search="ghost") == []
    assert "ghost" not in [a["username"] for a in activities(server, from_="2000-01-01")]


def test_soft_delete_ghost_username_is_taken(server):
    body = create_user(server)
    server.request("DELETE", f"/users/{body['id']}", token=server.root_token)
    r = post_user(server, user_payload(username="ghost"))
    assert_json(r, 400, {"message": {"username": ["has already been taken"]}})


def test_soft_delete_when_a_human_is_named_ghost(server):
    """GitLab names its placeholder ghost1, ghost2... when `ghost` is taken."""
    host, token = other_tenant(server, "ghost")
    human = create_user(server, host=host, token=token, username="ghost")
    victim = create_user(server, host=host, token=token)
    r = server.request("DELETE", f"/users/{victim['id']}", token=token, host=host)
    assert r.status_code == 204, r.text
    assert_json(server.request("GET", f"/users/{victim['id']}", token=token, host=host), 404,
                USER_NOT_FOUND)
    assert get_user(server, human["id"], host=host, token=token) == human
    names = usernames(list_users(server, token=token, host=host))
    assert sorted(names) == sorted(["root", "ghost"])


def test_delete_sole_group_owner_is_409_unless_hard_delete(server):
    user, token = user_with_token(server)
    group = assert_json(server.request("POST", "/groups", token=token,
                                       json={"name": uname("solo"), "path": uname("solo")}), 201)
    r = server.request("DELETE", f"/users/{user['id']}", token=server.root_token)
    assert assert_json(r, 409) == {"message": "User cannot be removed while is the sole-owner of a group"}
    assert_json(admin_get(server, f"/users/{user['id']}"), 200)
    r = server.request("DELETE", f"/users/{user['id']}", token=server.root_token,
                       params={"hard_delete": "true"})
    assert r.status_code == 204
    assert_json(admin_get(server, f"/groups/{group['id']}"), 404)
    assert_json(admin_get(server, f"/users/{user['id']}"), 404)


def _refuse_user_deletes(server, refuse: bool):
    """Makes every delete of a users row fail in the database (or stops doing so)."""
    if server.engine == "postgres":
        server.sql(
            "CREATE FUNCTION trellis_test_refuse() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$; "
            "CREATE TRIGGER trellis_test_refuse BEFORE DELETE ON users FOR EACH ROW "
            "EXECUTE FUNCTION trellis_test_refuse()"
            if refuse else
            "DROP TRIGGER trellis_test_refuse ON users; DROP FUNCTION trellis_test_refuse()")
    else:
        server.sql(
            "CREATE TRIGGER trellis_test_refuse BEFORE DELETE ON users "
            "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
            if refuse else "DROP TRIGGER trellis_test_refuse")


def test_failed_delete_leaves_everything_in_place(server):
    """A user's delete is one transaction: when its last step (the users row) fails, the
    groups it would take, the issues it would delete and its events are all still there."""
    user, token = user_with_token(server)
    group = assert_json(server.request("POST", "/groups", token=token,
                                       json={"name": uname("kept"), "path": uname("kept")}), 201)
    project = assert_json(server.request("POST", "/projects", token=token,
                                         json={"name": uname("kept")}), 201)
    issue = assert_json(server.request("POST", f"/projects/{project['id']}/issues", token=token,
                                       json={"title": "stays"}), 201)
    events = server.sql("SELECT COUNT(*) FROM domain_events")
    _refuse_user_deletes(server, True)
    try:
        r = server.request("DELETE", f"/users/{user['id']}", token=server.root_token,
                           params={"hard_delete": "true"})
        assert r.status_code == 500, r.text
    finally:
        _refuse_user_deletes(server, False)
    assert server.sql("SELECT COUNT(*) FROM domain_events") == events
    assert_json(admin_get(server, f"/users/{user['id']}"), 200)
    assert_json(admin_get(server, f"/groups/{group['id']}"), 200)
    assert_json(admin_get(server, f"/projects/{project['id']}/issues/{issue['iid']}"), 200)
    assert server.request("GET", "/user", token=token).status_code == 200
    r = server.request("DELETE", f"/users/{user['id']}", token=server.root_token,
                       params={"hard_delete": "true"})
    assert r.status_code == 204
    assert_json(admin_get(server, f"/groups/{group['id']}"), 404)
    assert_json(admin_get(server, f"/projects/{project['id']}"), 404)
