"""Authentication (token transports, unknown/revoked/expired tokens), scopes and sudo."""

import datetime as dt

import gitlab
import pytest

from conftest import UNAUTHORIZED, assert_json, insufficient_scope, random_token, today_utc

REVOKED = {"error": "invalid_token", "error_description": "Token has been revoked."}
EXPIRED = {"error": "invalid_token", "error_description": "Token has expired."}


# ---- token transports ----------------------------------------------------


def test_private_token_header(server):
    r = server.request("GET", "/user", headers={"PRIVATE-TOKEN": server.root_token})
    assert assert_json(r, 200)["username"] == "root"


def test_bearer_header(server):
    r = server.request("GET", "/user", headers={"Authorization": f"Bearer {server.root_token}"})
    assert assert_json(r, 200)["username"] == "root"


def test_access_token_query(server):
    r = server.request("GET", "/user", params={"access_token": server.root_token})
    assert assert_json(r, 200)["username"] == "root"


def test_private_token_query(server):
    r = server.request("GET", "/user", params={"private_token": server.root_token})
    assert assert_json(r, 200)["username"] == "root"


def test_python_gitlab_private_token(server):
    gl = server.gitlab(server.root_token)
    gl.auth()
    assert gl.user.username == "root"
    assert gl.user.id == 1


def test_python_gitlab_oauth_token(server):
    gl = gitlab.Gitlab(server.url, oauth_token=server.root_token)
    gl.auth()
    assert gl.user.username == "root"


# ---- missing / unknown tokens -------------------------------------------


def test_no_token_is_401(server):
    assert_json(server.request("GET", "/user"), 401, UNAUTHORIZED)


@pytest.mark.parametrize("transport", ["private-token", "bearer", "access_token", "private_token"])
def test_unknown_token_is_401(server, transport):
    bogus = random_token()
    kw = {}
    if transport == "private-token":
        kw["headers"] = {"PRIVATE-TOKEN": bogus}
    elif transport == "bearer":
        kw["headers"] = {"Authorization": f"Bearer {bogus}"}
    else:
        kw["params"] = {transport: bogus}
    assert_json(server.request("GET", "/user", **kw), 401, UNAUTHORIZED)


def test_unknown_token_without_prefix_is_401(server):
    assert_json(server.request("GET", "/user", token="not-a-token"), 401, UNAUTHORIZED)


def test_python_gitlab_bad_token_raises_auth_error(server):
    gl = server.gitlab(random_token())
    with pytest.raises(gitlab.exceptions.GitlabAuthenticationError) as exc:
        gl.auth()
    assert exc.value.response_code == 401


# ---- revoked / expired tokens --------------------------------------------


def test_revoked_token_is_401_with_www_authenticate(server):
    created = server.create_token_api(scopes=["api"])
    token = created["token"]
    assert_json(server.request("GET", "/user", token=token), 200)
    r = server.request("DELETE", f"/personal_access_tokens/{created['id']}", token=server.root_token)
    assert r.status_code == 204, r.text
    r = server.request("GET", "/user", token=token)
    assert_json(r, 401, REVOKED)
    assert r.headers.get("WWW-Authenticate", "").startswith("Bearer"), r.headers


def test_revoked_token_is_401_via_bearer_and_query(server):
    created = server.create_token_api(scopes=["api"])
    token = created["token"]
    r = server.request("DELETE", f"/personal_access_tokens/{created['id']}", token=server.root_token)
    assert r.status_code == 204
    r = server.request("GET", "/user", headers={"Authorization": f"Bearer {token}"})
    assert_json(r, 401, REVOKED)
    r = server.request("GET", "/user", params={"access_token": token})
    assert_json(r, 401, REVOKED)


def test_expired_token_is_401(server):
    token = server.create_token(name="expired", scopes="api", expires_at="2020-01-01")
    assert_json(server.request("GET", "/user", token=token), 401, EXPIRED)


def test_token_expiring_today_is_expired(server):
    token = server.create_token(name="today", scopes="api", expires_at=today_utc().isoformat())
    assert_json(server.request("GET", "/user", token=token), 401, EXPIRED)


def test_token_expiring_tomorrow_works(server):
    tomorrow = (today_utc() + dt.timedelta(days=1)).isoformat()
    token = server.create_token(name="tomorrow", scopes="api", expires_at=tomorrow)
    assert assert_json(server.request("GET", "/user", token=token), 200)["username"] == "root"


def test_cli_token_works(server):
    token = server.create_token(name="cli", scopes="api")
    assert token.startswith("glpat-")
    assert assert_json(server.request("GET", "/user", token=token), 200)["id"] == 1


# ---- scopes --------------------------------------------------------------


@pytest.fixture(scope="module")
def scoped_tokens(server):
    """One token per single scope, created through the API."""
    return {
        scope: server.create_token_api(name=f"only-{scope}", scopes=[scope])["token"]
        for scope in ["api", "read_api", "read_user", "read_repository", "sudo"]
    }


@pytest.mark.parametrize("path", ["/user", "/version", "/metadata", "/personal_access_tokens",
                                  "/personal_access_tokens/self", "/personal_access_tokens/1"])
@pytest.mark.parametrize("scope", ["api", "read_api"])
def test_get_routes_accept_api_and_read_api(server, scoped_tokens, scope, path):
    assert_json(server.request("GET", path, token=scoped_tokens[scope]), 200)


@pytest.mark.parametrize("path", ["/user", "/version", "/metadata", "/personal_access_tokens/self"])
def test_read_user_scope_allowed_routes(server, scoped_tokens, path):
    assert_json(server.request("GET", path, token=scoped_tokens["read_user"]), 200)


@pytest.mark.parametrize("path", ["/personal_access_tokens", "/personal_access_tokens/1"])
def test_read_user_scope_rejected_elsewhere(server, scoped_tokens, path):
    r = server.request("GET", path, token=scoped_tokens["read_user"])
    assert_json(r, 403, insufficient_scope("api"))


@pytest.mark.parametrize("path", ["/users", "/users/1", "/users/1/keys", "/users/1/memberships"])
def test_read_user_scope_reads_users_endpoints(server, scoped_tokens, path):
    """GitLab: read_user opens the read-only endpoints of the Users API."""
    assert_json(server.request("GET", path, token=scoped_tokens["read_user"]), 200)


@pytest.mark.parametrize("path", ["/users/1/projects", "/users/1/starred_projects"])
def test_read_user_scope_cannot_list_a_users_projects(server, scoped_tokens, path):
    """Project lists under /users belong to GitLab's Projects API: read_api or api."""
    r = server.request("GET", path, token=scoped_tokens["read_user"])
    assert_json(r, 403, insufficient_scope("api"))
    for scope in ["api", "read_api"]:
        assert_json(server.request("GET", path, token=scoped_tokens[scope]), 200)


@pytest.mark.parametrize("scope", ["read_api", "read_user", "read_repository"])
def test_post_needs_api_scope(server, scoped_tokens, scope):
    r = server.request("POST", "/users/1/personal_access_tokens", token=scoped_tokens[scope],
                       json={"name": "x", "scopes": ["api"]})
    assert_json(r, 403, insufficient_scope("api"))


@pytest.mark.parametrize("scope", ["read_api", "read_user"])
def test_delete_needs_api_scope(server, scoped_tokens, scope):
    r = server.request("DELETE", "/personal_access_tokens/self", token=scoped_tokens[scope])
    assert_json(r, 403, insufficient_scope("api"))
    # the token is still usable afterwards
    assert_json(server.request("GET", "/user", token=scoped_tokens[scope]), 200)


def test_read_repository_only_token_cannot_get_user(server, scoped_tokens):
    r = server.request("GET", "/user", token=scoped_tokens["read_repository"])
    assert_json(r, 403, insufficient_scope("api"))


def test_sudo_only_token_cannot_get_user(server, scoped_tokens):
    r = server.request("GET", "/user", token=scoped_tokens["sudo"])
    assert_json(r, 403, insufficient_scope("api"))


def test_python_gitlab_insufficient_scope(server, scoped_tokens):
    gl = server.gitlab(scoped_tokens["read_repository"])
    with pytest.raises(gitlab.exceptions.GitlabGetError) as exc:
        gl.auth()
    assert exc.value.response_code == 403


# ---- sudo ----------------------------------------------------------------


@pytest.mark.parametrize("target", ["root", "1"])
def test_sudo_query_param(server, target):
    r = server.request("GET", "/user", token=server.root_token, params={"sudo": target})
    data = assert_json(r, 200)
    assert data["id"] == 1 and data["username"] == "root"


@pytest.mark.parametrize("target", ["root", "1"])
def test_sudo_header(server, target):
    r = server.request("GET", "/user", token=server.root_token, headers={"Sudo": target})
    assert assert_json(r, 200)["username"] == "root"


def test_sudo_in_form_body(server):
    r = server.request("POST", "/users/1/personal_access_tokens", token=server.root_token,
                       data={"name": "via-sudo-form", "scopes[]": ["api"], "sudo": "root"})
    data = assert_json(r, 201)
    assert data["name"] == "via-sudo-form"


def test_sudo_in_json_body(server):
    r = server.request("POST", "/users/1/personal_access_tokens", token=server.root_token,
                       json={"name": "via-sudo-json", "scopes": ["api"], "sudo": "root"})
    assert assert_json(r, 201)["name"] == "via-sudo-json"


def test_sudo_python_gitlab(server):
    gl = server.gitlab(server.root_token)
    user = gl.http_get("/user", sudo="root")
    assert user["username"] == "root"


@pytest.mark.parametrize("target", ["xyz", "999"])
def test_sudo_unknown_user_is_404(server, target):
    r = server.request("GET", "/user", token=server.root_token, params={"sudo": target})
    assert_json(r, 404, {"message": f"404 User with ID or username '{target}' Not Found"})


def test_sudo_unknown_user_header_is_404(server):
    r = server.request("GET", "/user", token=server.root_token, headers={"Sudo": "xyz"})
    assert_json(r, 404, {"message": "404 User with ID or username 'xyz' Not Found"})


def test_sudo_without_sudo_scope_is_403(server, scoped_tokens):
    r = server.request("GET", "/user", token=scoped_tokens["api"], params={"sudo": "root"})
    assert_json(r, 403, insufficient_scope("sudo"))


def test_sudo_header_without_sudo_scope_is_403(server, scoped_tokens):
    r = server.request("GET", "/user", token=scoped_tokens["api"], headers={"Sudo": "root"})
    assert_json(r, 403, insufficient_scope("sudo"))


def test_sudo_without_token_is_401(server):
    r = server.request("GET", "/user", params={"sudo": "root"})
    assert_json(r, 401, UNAUTHORIZED)


def test_sudo_with_unknown_token_is_401(server):
    r = server.request("GET", "/user", token=random_token(), params={"sudo": "root"})
    assert_json(r, 401, UNAUTHORIZED)
