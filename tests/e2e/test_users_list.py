"""The Users API, reading: GET /users/:id (the admin, own, public and private-profile views)
and GET /users (views, search, every filter, order and pagination).

Happy paths go through python-gitlab; every bad input is sent with requests and checked for
GitLab's status and body, and for nothing being written (no row, no mail, no change).
"""

from __future__ import annotations

import datetime as dt
import secrets

import gitlab
import pytest

from conftest import USER_NOT_FOUND, assert_json
from conftest import (ADMIN_FIELDS, PUBLIC_FIELDS, SUMMARY_FIELDS, admin_get, create_user,
                          db_write, get_user, list_users, put_user, state_action, uname,
                          user_with_token, usernames, users_named)

# Searches users far more often than GitLab's default search limits allow.
pytestmark = pytest.mark.usefixtures("no_search_rate_limits")


# ============================================================================
# GET /users/:id
# ============================================================================


def test_get_user_python_gitlab(server, gl, non_admin):
    user = gl.users.get(non_admin["id"])
    assert user.username == non_admin["username"]
    assert user.email == non_admin["email"]
    assert user.is_admin is False


def test_get_user_admin_view(server, non_admin):
    body = get_user(server, non_admin["id"])
    assert ADMIN_FIELDS <= set(body), ADMIN_FIELDS - set(body)
    assert "custom_attributes" not in body


def test_get_user_public_view_for_non_admin(server, non_admin):
    other = create_user(server, bio="hello", location="Porto", job_title="Dev",
                        organization="Org", pronouns="she/her")
    r = server.request("GET", f"/users/{other['id']}", token=non_admin["token"])
    body = assert_json(r, 200)
    assert set(body) == PUBLIC_FIELDS
    assert body["bio"] == "hello"
    assert body["location"] == "Porto"
    assert body["work_information"] == "Dev at Org"
    assert body["pronouns"] == "she/her"
    assert body["bot"] is False
    assert body["web_url"] == f"{server.url}/{other['username']}"


def test_get_user_public_view_for_anonymous(server, non_admin):
    body = assert_json(server.request("GET", f"/users/{non_admin['id']}"), 200)
    assert set(body) == PUBLIC_FIELDS
    assert "email" not in body


def test_get_user_public_email_is_shown_to_others(server, non_admin):
    other = create_user(server)
    address = other["email"]
    assert_json(put_user(server, other["id"], json={"public_email": address}), 200)
    body = assert_json(server.request("GET", f"/users/{other['id']}", token=non_admin["token"]), 200)
    assert body["public_email"] == address
    assert "email" not in body


def test_get_private_profile_hides_details_from_others(server, non_admin):
    private, token = user_with_token(server, private_profile=True, bio="secret bio")
    body = assert_json(server.request("GET", f"/users/{private['id']}", token=non_admin["token"]),
                       200)
    assert set(body) == SUMMARY_FIELDS
    anon = assert_json(server.request("GET", f"/users/{private['id']}"), 200)
    assert set(anon) == SUMMARY_FIELDS
    own = assert_json(server.request("GET", f"/users/{private['id']}", token=token), 200)
    assert own["bio"] == "secret bio"
    admin = get_user(server, private["id"])
    assert admin["bio"] == "secret bio"
    assert admin["private_profile"] is True


@pytest.mark.parametrize("ident", ["999999", "abc", "0", "-1"])
def test_get_unknown_user_is_404(server, ident):
    assert_json(admin_get(server, f"/users/{ident}"), 404, USER_NOT_FOUND)


def test_get_unknown_user_python_gitlab(gl):
    with pytest.raises(gitlab.GitlabGetError) as exc:
        gl.users.get(999999)
    assert exc.value.response_code == 404


def test_get_user_with_custom_attributes(server):
    user = create_user(server)
    db_write(server, "INSERT INTO user_custom_attributes (tenant_id, user_id, key, value) "
                     f"SELECT tenant_id, id, 'team', 'blue' FROM users WHERE id = {user['id']} "
                     f"AND username = '{user['username']}'")
    body = assert_json(admin_get(server, f"/users/{user['id']}", with_custom_attributes="true"),
                       200)
    assert body["custom_attributes"] == [{"key": "team", "value": "blue"}]
    assert "custom_attributes" not in get_user(server, user["id"])


# ============================================================================
# GET /users
# ============================================================================


@pytest.fixture(scope="module")
def people(server):
    """A tagged population: two active, one external, one blocked, one with an identity and a
    custom attribute. Everyone's username and name contain the tag."""
    tag = "pp" + secrets.token_hex(3)
    made = {
        "zed": create_user(server, username=f"{tag}_zed", name=f"Zed {tag.upper()} Person"),
        "amy": create_user(server, username=f"{tag}_amy", name=f"Amy {tag} Person"),
        "ext": create_user(server, username=f"{tag}_ext", name=f"Mo {tag}", external=True),
        "blk": create_user(server, username=f"{tag}_blk", name=f"Bo {tag}"),
        "idp": create_user(server, username=f"{tag}_idp", name=f"Id {tag}",
                           extern_uid=f"ext-{tag}", provider="saml"),
    }
    assert assert_json(state_action(server, made["blk"]["id"], "block"), 201) is True
    db_write(server, "INSERT INTO user_custom_attributes (tenant_id, user_id, key, value) "
                     f"SELECT tenant_id, id, 'role', 'qa-{tag}' FROM users "
                     f"WHERE id = {made['idp']['id']} AND username = '{made['idp']['username']}'")
    return {"tag": tag, **made}


def tagged(server, people, token=None, **params) -> list:
    return list_users(server, token=token or server.root_token, search=people["tag"], **params)


def test_list_python_gitlab(server, gl, people):
    users = gl.users.list(search=people["tag"], get_all=True)
    assert sorted(u.username for u in users) == sorted(
        people[k]["username"] for k in ("zed", "amy", "ext", "blk", "idp"))
    assert all(hasattr(u, "email") for u in users)


def test_list_admin_view(server, people):
    items = tagged(server, people)
    for item in items:
        assert ADMIN_FIELDS <= set(item), ADMIN_FIELDS - set(item)
    idp = next(i for i in items if i["id"] == people["idp"]["id"])
    assert idp["identities"] == [
        {"provider": "saml", "extern_uid": f"ext-{people['tag']}"}]


def test_list_summary_view_for_non_admin(server, people, non_admin):
    items = tagged(server, people, token=non_admin["token"])
    assert len(items) == 5
    for item in items:
        assert set(item) == SUMMARY_FIELDS


def test_list_summary_view_for_anonymous(server, people):
    r = server.request("GET", "/users", params={"search": people["tag"]})
    items = assert_json(r, 200)
    assert len(items) == 5
    for item in items:
        assert set(item) == SUMMARY_FIELDS


def test_list_python_gitlab_as_non_admin(server, people, gl_non_admin):
    users = gl_non_admin.users.list(search=people["tag"], get_all=True)
    assert len(users) == 5
    assert not any(hasattr(u, "email") for u in users)


def test_list_default_order_is_id_desc(server, people):
    # without `search` (which orders by relevance on GitLab)
    ids = [u["id"] for u in list_users(server, token=server.root_token)]
    assert len(ids) > 5
    assert ids == sorted(ids, reverse=True)
    ids = [u["id"] for u in list_users(server, token=server.root_token, active="true")]
    assert ids == sorted(ids, reverse=True)


def test_list_username_exact_and_case_insensitive(server, people):
    zed = people["zed"]["username"]
    assert usernames(users_named(server, zed.upper())) == [zed]
    assert users_named(server, zed[:-1]) == []


def test_list_username_for_anonymous(server, people):
    items = assert_json(server.request("GET", "/users",
                                       params={"username": people["amy"]["username"]}), 200)
    assert usernames(items) == [people["amy"]["username"]]


def test_list_search_name_case_insensitive(server, people):
    items = list_users(server, token=server.root_token, search=f"zed {people['tag']}".upper())
    assert usernames(items) == [people["zed"]["username"]]


def test_list_search_username_substring(server, people):
    items = list_users(server, token=server.root_token, search=f"{people['tag']}_AM")
    assert usernames(items) == [people["amy"]["username"]]


def test_list_search_email_substring_for_admin(server, people):
    local = people["ext"]["email"].split("@")[0]
    items = list_users(server, token=server.root_token, search=local.upper()[2:] + "@EXAMPLE")
    assert usernames(items) == [people["ext"]["username"]]


def test_list_search_email_for_non_admin_only_exact(server, people, non_admin):
    address = people["ext"]["email"]
    exact = list_users(server, token=non_admin["token"], search=address.upper())
    assert usernames(exact) == [people["ext"]["username"]]
    assert list_users(server, token=non_admin["token"], search=address[2:]) == []
    assert list_users(server, token=non_admin["token"], search="@example.com") == []
    assert len(list_users(server, token=server.root_token, search="@example.com")) > 5


def test_list_search_like_wildcards_are_literal(server, people):
    assert list_users(server, token=server.root_token, search="%") == []
    assert list_users(server, token=server.root_token, search=f"{people['tag']}%zed") == []


def test_list_active_excludes_blocked(server, people):
    names = usernames(tagged(server, people, active="true"))
    assert people["blk"]["username"] not in names
    assert people["zed"]["username"] in names


def test_list_blocked_only_blocked(server, people):
    assert usernames(tagged(server, people, blocked="true")) == [people["blk"]["username"]]


def test_list_exclude_external(server, people, non_admin):
    for token in (server.root_token, non_admin["token"]):
        names = usernames(tagged(server, people, token=token, exclude_external="true"))
        assert people["ext"]["username"] not in names
        assert len(names) == 4


def test_list_external_only_for_admin(server, people, non_admin):
    assert usernames(tagged(server, people, external="true")) == [people["ext"]["username"]]
    # ignored for non-admins
    assert len(tagged(server, people, token=non_admin["token"], external="true")) == 5


def test_list_two_factor(server, people, non_admin):
    assert tagged(server, people, two_factor="enabled") == []
    assert len(tagged(server, people, two_factor="disabled")) == 5
    assert len(tagged(server, people, token=non_admin["token"], two_factor="enabled")) == 5


def test_list_two_factor_bad_value(server):
    assert_json(admin_get(server, "/users", two_factor="maybe"), 400,
                {"error": "two_factor does not have a valid value"})


def test_list_created_after_and_before(server, people, non_admin):
    tomorrow = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)).strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    assert tagged(server, people, created_after=tomorrow) == []
    assert len(tagged(server, people, created_before=tomorrow)) == 5
    assert tagged(server, people, created_before="2001-01-01T00:00:00Z") == []
    assert len(tagged(server, people, created_after="2001-01-01")) == 5
    # ignored for non-admins
    assert len(tagged(server, people, token=non_admin["token"], created_after=tomorrow)) == 5


@pytest.mark.parametrize("param", ["created_after", "created_before"])
def test_list_created_bad_value(server, param):
    assert_json(admin_get(server, "/users", **{param: "yesterday"}), 400,
                {"error": f"{param} is invalid"})


def test_list_extern_uid_and_provider(server, gl, people):
    items = list_users(server, token=server.root_token, extern_uid=f"ext-{people['tag']}",
                       provider="saml")
    assert usernames(items) == [people["idp"]["username"]]
    users = gl.users.list(extern_uid=f"ext-{people['tag']}", provider="saml", get_all=True)
    assert [u.id for u in users] == [people["idp"]["id"]]
    assert list_users(server, token=server.root_token, extern_uid=f"ext-{people['tag']}",
                      provider="github") == []


def test_list_extern_uid_does_not_reveal_identities_to_non_admins(server, people, non_admin):
    r = server.request("GET", "/users", token=non_admin["token"],
                       params={"extern_uid": f"ext-{people['tag']}", "provider": "saml",
                               "search": people["tag"]})
    if r.status_code == 403:  # GitLab's own answer
        return
    items = assert_json(r, 200)
    assert len(items) == 5  # the filter is ignored, nothing narrowed down


def test_list_extern_uid_without_provider(server):
    assert_json(admin_get(server, "/users", extern_uid="x"), 400,
                {"error": "extern_uid, provider provide all or none of parameters"})


def test_list_custom_attributes_filter(server, gl, people):
    users = gl.users.list(custom_attributes={"role": f"qa-{people['tag']}"}, get_all=True)
    assert [u.id for u in users] == [people["idp"]["id"]]
    assert gl.users.list(custom_attributes={"role": "nobody"}, get_all=True) == []


def test_list_with_custom_attributes(server, people):
    items = tagged(server, people, with_custom_attributes="true")
    for item in items:
        expected = ([{"key": "role", "value": f"qa-{people['tag']}"}]
                    if item["id"] == people["idp"]["id"] else [])
        assert item["custom_attributes"] == expected
    assert all("custom_attributes" not in i for i in tagged(server, people))


@pytest.mark.parametrize("order_by,key", [
    ("id", lambda u: u["id"]),
    ("name", lambda u: u["name"].lower()),
    ("username", lambda u: u["username"].lower()),
    ("created_at", lambda u: (u["created_at"], u["id"])),
])
@pytest.mark.parametrize("sort", ["asc", "desc"])
def test_list_order_by(server, people, order_by, key, sort):
    items = tagged(server, people, order_by=order_by, sort=sort)
    assert len(items) == 5
    assert items == sorted(items, key=key, reverse=(sort == "desc"))


def test_list_order_by_updated_at(server, people):
    amy = people["amy"]
    assert_json(put_user(server, amy["id"], json={"bio": "touched"}), 200)
    items = tagged(server, people, order_by="updated_at", sort="desc")
    assert items[0]["id"] == amy["id"]


def test_list_sort_defaults_to_desc(server, people):
    items = tagged(server, people, order_by="username")
    assert usernames(items) == sorted(usernames(items), key=str.lower, reverse=True)


@pytest.mark.parametrize("params", [{"order_by": "username"}, {"sort": "asc"},
                                    {"order_by": "name", "sort": "asc"}])
def test_list_order_by_and_sort_ignored_for_non_admin(server, people, non_admin, params):
    items = list_users(server, token=non_admin["token"], **params)
    ids = [u["id"] for u in items]
    assert len(ids) > 5
    assert ids == sorted(ids, reverse=True)


@pytest.mark.parametrize("param,value", [("order_by", "email"), ("sort", "sideways")])
def test_list_bad_order(server, param, value):
    assert_json(admin_get(server, "/users", **{param: value}), 400,
                {"error": f"{param} does not have a valid value"})


def test_list_pagination_headers(server, people):
    r = admin_get(server, "/users", search=people["tag"], per_page=2, page=2)
    items = assert_json(r, 200)
    assert len(items) == 2
    assert r.headers["X-Page"] == "2"
    assert r.headers["X-Per-Page"] == "2"
    assert r.headers["X-Total"] == "5"
    assert r.headers["X-Total-Pages"] == "3"
    assert r.headers["X-Next-Page"] == "3"
    assert r.headers["X-Prev-Page"] == "1"
    assert 'rel="next"' in r.headers["Link"]
    assert "search=" + people["tag"] in r.headers["Link"]


def test_list_per_page_clamps_to_100(server):
    r = admin_get(server, "/users", per_page=500)
    assert_json(r, 200)
    assert r.headers["X-Per-Page"] == "100"


def test_list_python_gitlab_iterates_all_pages(server, gl, people):
    users = list(gl.users.list(search=people["tag"], per_page=2, iterator=True))
    assert len(users) == 5
    assert len({u.id for u in users}) == 5


def test_list_bad_pagination_values(server):
    assert_json(admin_get(server, "/users", per_page="many"), 400,
                {"error": "per_page is invalid"})
def test_without_projects_keeps_users_who_are_members_of_no_project(server):
    member, token = user_with_token(server)
    loner = create_user(server)
    assert_json(server.request("POST", "/projects", token=token, json={"name": uname("p")}), 201)
    names = usernames(list_users(server, token=server.root_token, without_projects="true", per_page=100))
    assert loner["username"] in names
    assert member["username"] not in names
    # Admin-only: ignored for others.
    names = usernames(list_users(server, token=token, without_projects="true", per_page=100))
    assert member["username"] in names
