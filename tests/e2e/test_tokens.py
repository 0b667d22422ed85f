"""Personal access tokens: create, list, show, revoke."""

import datetime as dt

import gitlab
import pytest

from conftest import ISO_MS, assert_json, today_utc

TOKEN_FIELDS = {"id", "name", "revoked", "created_at", "scopes", "user_id", "last_used_at",
                "active", "expires_at"}
NOT_FOUND = {"message": "404 Personal Access Token Not Found"}


def future(days=30) -> str:
    return (today_utc() + dt.timedelta(days=days)).isoformat()


def post(server, token=None, **kw):
    return server.request("POST", "/users/1/personal_access_tokens",
                          token=token or server.root_token, **kw)


# ---- create --------------------------------------------------------------


def test_create_returns_201_with_all_fields(server):
    data = assert_json(post(server, json={"name": "full", "scopes": ["api", "read_user"]}), 201)
    assert set(data) >= TOKEN_FIELDS | {"token"}
    assert data["name"] == "full"
    assert data["scopes"] == ["api", "read_user"]
    assert data["user_id"] == 1
    assert data["revoked"] is False
    assert data["active"] is True
    assert data["expires_at"] is None
    assert data["last_used_at"] is None
    assert isinstance(data["id"], int)
    assert ISO_MS.match(data["created_at"]), data["created_at"]
    assert data["token"].startswith("glpat-")
    assert len(data["token"]) > len("glpat-") + 10


def test_created_token_authenticates(server):
    data = assert_json(post(server, json={"name": "works", "scopes": ["api"]}), 201)
    me = assert_json(server.request("GET", "/user", token=data["token"]), 200)
    assert me["username"] == "root"
    this = assert_json(server.request("GET", "/personal_access_tokens/self", token=data["token"]), 200)
    assert this["id"] == data["id"]


def test_created_tokens_are_unique(server):
    tokens = {assert_json(post(server, json={"name": "u", "scopes": ["api"]}), 201)["token"]
              for _ in range(5)}
    assert len(tokens) == 5


def test_create_with_expires_at(server):
    exp = future()
    data = assert_json(post(server, json={"name": "exp", "scopes": ["api"], "expires_at": exp}), 201)
    assert data["expires_at"] == exp
    assert data["active"] is True
    assert_json(server.request("GET", "/user", token=data["token"]), 200)


def test_create_form_with_array_brackets(server):
    r = post(server, data={"name": "form", "scopes[]": ["api", "read_api"]})
    data = assert_json(r, 201)
    assert data["name"] == "form"
    assert data["scopes"] == ["api", "read_api"]


def test_create_form_comma_separated_scopes(server):
    data = assert_json(post(server, data={"name": "form-comma", "scopes": "api,read_user"}), 201)
    assert data["scopes"] == ["api", "read_user"]


def test_create_json_comma_separated_scopes(server):
    data = assert_json(post(server, json={"name": "json-comma", "scopes": "read_api,read_user"}), 201)
    assert data["scopes"] == ["read_api", "read_user"]


def test_create_query_params(server):
    r = post(server, params=[("name", "query"), ("scopes[]", "api"), ("scopes[]", "sudo")])
    data = assert_json(r, 201)
    assert data["name"] == "query"
    assert data["scopes"] == ["api", "sudo"]


@pytest.mark.parametrize("scope", ["api", "read_api", "read_user", "read_repository",
                                   "write_repository", "sudo", "admin_mode"])
def test_create_each_documented_scope(server, scope):
    data = assert_json(post(server, json={"name": f"s-{scope}", "scopes": [scope]}), 201)
    assert data["scopes"] == [scope]


def test_create_missing_name(server):
    assert_json(post(server, json={"scopes": ["api"]}), 400, {"error": "name is missing"})


def test_create_missing_scopes(server):
    assert_json(post(server, json={"name": "x"}), 400, {"error": "scopes is missing"})


def test_create_unknown_scope(server):
    assert_json(post(server, json={"name": "x", "scopes": ["api", "bogus"]}), 400,
                {"error": "scopes does not have a valid value"})


def test_create_unknown_user(server):
    r = server.request("POST", "/users/999/personal_access_tokens", token=server.root_token,
                       json={"name": "x", "scopes": ["api"]})
    assert_json(r, 404, {"message": "404 User Not Found"})


def test_create_invalid_expires_at(server):
    assert_json(post(server, json={"name": "x", "scopes": ["api"], "expires_at": "notadate"}), 400,
                {"error": "expires_at is invalid"})


def test_create_expires_at_in_past(server):
    assert_json(post(server, json={"name": "x", "scopes": ["api"], "expires_at": "2020-01-01"}), 400,
                {"message": {"expires_at": ["must be in the future"]}})


def test_create_without_token_is_401(server):
    r = server.request("POST", "/users/1/personal_access_tokens", json={"name": "x", "scopes": ["api"]})
    assert_json(r, 401, {"message": "401 Unauthorized"})


def test_create_python_gitlab(server):
    gl = server.gitlab()
    user = gl.users.get(1, lazy=True)
    tok = user.personal_access_tokens.create({"name": "pg", "scopes": ["api", "read_user"]})
    assert tok.name == "pg"
    assert tok.scopes == ["api", "read_user"]
    assert tok.token.startswith("glpat-")
    gl2 = server.gitlab(tok.token)
    gl2.auth()
    assert gl2.user.username == "root"


def test_create_python_gitlab_with_expiry(server):
    gl = server.gitlab()
    exp = future(10)
    tok = gl.users.get(1, lazy=True).personal_access_tokens.create(
        {"name": "pg-exp", "scopes": ["read_api"], "expires_at": exp})
    assert tok.expires_at == exp


def test_create_python_gitlab_error(server):
    gl = server.gitlab()
    with pytest.raises(gitlab.exceptions.GitlabCreateError) as exc:
        gl.users.get(1, lazy=True).personal_access_tokens.create({"name": "bad", "scopes": ["nope"]})
    assert exc.value.response_code == 400


# ---- show / list ---------------------------------------------------------


def test_show_by_id_has_no_secret(server):
    created = assert_json(post(server, json={"name": "show", "scopes": ["api"]}), 201)
    data = assert_json(server.request("GET", f"/personal_access_tokens/{created['id']}",
                                      token=server.root_token), 200)
    assert "token" not in data
    assert set(data) >= TOKEN_FIELDS
    for key in TOKEN_FIELDS:
        assert data[key] == created[key], key


def test_show_self(server):
    data = assert_json(server.request("GET", "/personal_access_tokens/self",
                                      token=server.root_token), 200)
    assert data["id"] == 1
    assert data["name"] == "initial root token"
    assert data["user_id"] == 1
    assert "token" not in data
    assert "api" in data["scopes"] and "sudo" in data["scopes"]


def test_last_used_at_set_after_use(server):
    created = assert_json(post(server, json={"name": "used", "scopes": ["api"]}), 201)
    assert_json(server.request("GET", "/user", token=created["token"]), 200)
    data = server.wait_for(lambda: (lambda d: d if d["last_used_at"] else None)(
        server.request("GET", f"/personal_access_tokens/{created['id']}",
                       token=server.root_token).json()), timeout=5)
    assert data and ISO_MS.match(data["last_used_at"])


def test_show_unknown_is_404(server):
    r = server.request("GET", "/personal_access_tokens/999999", token=server.root_token)
    assert_json(r, 404, NOT_FOUND)


def test_list_admin_sees_all(server):
    created = assert_json(post(server, json={"name": "listed", "scopes": ["api"]}), 201)
    r = server.request("GET", "/personal_access_tokens", token=server.root_token,
                       params={"per_page": 100})
    data = assert_json(r, 200)
    ids = [t["id"] for t in data]
    assert 1 in ids and created["id"] in ids
    assert all("token" not in t for t in data)
    assert int(r.headers["X-Total"]) >= len(data)


def test_list_python_gitlab(server):
    gl = server.gitlab()
    tokens = gl.personal_access_tokens.list(get_all=True)
    total = int(server.request("GET", "/personal_access_tokens", token=server.root_token)
                .headers["X-Total"])
    assert len(tokens) == total
    assert any(t.name == "initial root token" for t in tokens)


def test_list_filter_user_id(server):
    r = server.request("GET", "/personal_access_tokens", token=server.root_token,
                       params={"user_id": 1, "per_page": 100})
    data = assert_json(r, 200)
    assert data and all(t["user_id"] == 1 for t in data)


def test_list_python_gitlab_user_id_filter(server):
    gl = server.gitlab()
    tokens = gl.personal_access_tokens.list(user_id=1, get_all=True)
    assert tokens and all(t.user_id == 1 for t in tokens)


def test_list_state_filters(server):
    active = assert_json(post(server, json={"name": "stays", "scopes": ["api"]}), 201)
    gone = assert_json(post(server, json={"name": "goes", "scopes": ["api"]}), 201)
    r = server.request("DELETE", f"/personal_access_tokens/{gone['id']}", token=server.root_token)
    assert r.status_code == 204

    def ids(state):
        r = server.request("GET", "/personal_access_tokens", token=server.root_token,
                           params={"state": state, "per_page": 100})
        data = assert_json(r, 200)
        return data, {t["id"] for t in data}

    act, act_ids = ids("active")
    inact, inact_ids = ids("inactive")
    assert active["id"] in act_ids and gone["id"] not in act_ids
    assert gone["id"] in inact_ids and active["id"] not in inact_ids
    assert all(t["active"] for t in act)
    assert all(not t["active"] for t in inact)


def test_list_state_includes_expired_as_inactive(server):
    token = server.create_token(name="expired-in-list", scopes="api", expires_at="2020-01-01")
    assert token
    r = server.request("GET", "/personal_access_tokens", token=server.root_token,
                       params={"state": "inactive", "per_page": 100})
    names = [t["name"] for t in assert_json(r, 200)]
    assert "expired-in-list" in names
    r = server.request("GET", "/personal_access_tokens", token=server.root_token,
                       params={"state": "active", "per_page": 100})
    assert "expired-in-list" not in [t["name"] for t in assert_json(r, 200)]


def test_list_state_bogus(server):
    r = server.request("GET", "/personal_access_tokens", token=server.root_token,
                       params={"state": "bogus"})
    assert_json(r, 400, {"error": "state does not have a valid value"})


# ---- revoke --------------------------------------------------------------


def test_revoke_by_id(server):
    created = assert_json(post(server, json={"name": "revoke-me", "scopes": ["api"]}), 201)
    r = server.request("DELETE", f"/personal_access_tokens/{created['id']}", token=server.root_token)
    assert r.status_code == 204
    assert r.content == b""
    r = server.request("GET", "/user", token=created["token"])
    assert_json(r, 401, {"error": "invalid_token", "error_description": "Token has been revoked."})
    data = assert_json(server.request("GET", f"/personal_access_tokens/{created['id']}",
                                      token=server.root_token), 200)
    assert data["revoked"] is True
    assert data["active"] is False


def test_revoke_self(server):
    created = assert_json(post(server, json={"name": "revoke-self", "scopes": ["api"]}), 201)
    r = server.request("DELETE", "/personal_access_tokens/self", token=created["token"])
    assert r.status_code == 204
    r = server.request("GET", "/user", token=created["token"])
    assert_json(r, 401, {"error": "invalid_token", "error_description": "Token has been revoked."})
    # root's own token is untouched
    assert_json(server.request("GET", "/user", token=server.root_token), 200)


def test_revoke_unknown_is_404(server):
    r = server.request("DELETE", "/personal_access_tokens/999999", token=server.root_token)
    assert_json(r, 404, NOT_FOUND)


def test_revoke_python_gitlab(server):
    gl = server.gitlab()
    tok = gl.users.get(1, lazy=True).personal_access_tokens.create({"name": "pg-del", "scopes": ["api"]})
    gl.personal_access_tokens.delete(tok.id)
    fetched = gl.personal_access_tokens.get(tok.id)
    assert fetched.revoked is True
    with pytest.raises(gitlab.exceptions.GitlabAuthenticationError):
        server.gitlab(tok.token).auth()


def test_python_gitlab_get_self(server):
    gl = server.gitlab()
    me = gl.personal_access_tokens.get("self")
    assert me.id == 1


def test_revoke_without_token_is_401(server):
    r = server.request("DELETE", "/personal_access_tokens/1")
    assert_json(r, 401, {"message": "401 Unauthorized"})
    assert_json(server.request("GET", "/user", token=server.root_token), 200)


def test_list_without_token_is_401(server):
    assert_json(server.request("GET", "/personal_access_tokens"), 401, {"message": "401 Unauthorized"})
