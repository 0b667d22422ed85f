import hashlib
"""GET /user, /version and /metadata."""


import gitlab
import pytest

from conftest import ISO_MS, assert_json


ADMIN_FIELDS = [
    "id", "username", "name", "state", "avatar_url", "web_url", "created_at", "bio", "location",
    "public_email", "skype", "linkedin", "twitter", "website_url", "organization", "job_title",
    "last_sign_in_at", "confirmed_at", "email", "theme_id", "color_scheme_id", "projects_limit",
    "current_sign_in_at", "identities", "can_create_group", "can_create_project",
    "two_factor_enabled", "external", "private_profile", "is_admin", "note",
    "current_sign_in_ip", "last_sign_in_ip",
]


@pytest.fixture(scope="module")
def me(server):
    return assert_json(server.request("GET", "/user", token=server.root_token), 200)


def test_user_identity(me):
    assert me["id"] == 1
    assert me["username"] == "root"
    assert me["name"] == "Administrator"
    assert me["state"] == "active"
    assert me["email"] == "admin@example.com"
    assert me["is_admin"] is True
    # No uploaded avatar and avatar_service_enabled (GitLab's default): a Gravatar URL.
    digest = hashlib.sha256(b"admin@example.com").hexdigest()
    assert me["avatar_url"] == f"https://www.gravatar.com/avatar/{digest}?s=80&d=identicon"


@pytest.mark.parametrize("field", ADMIN_FIELDS)
def test_user_admin_view_has_field(me, field):
    assert field in me


def test_user_identities_empty(me):
    assert me["identities"] == []


def test_user_created_at_format(me):
    assert isinstance(me["created_at"], str)
    assert ISO_MS.match(me["created_at"]), me["created_at"]


def test_user_web_url_uses_request_host(server, me):
    assert me["web_url"] == f"http://127.0.0.1:{server.port}/root"


def test_user_web_url_follows_host_header(server):
    r = server.request("GET", "/user", token=server.root_token, host=f"example.test:{server.port}")
    assert assert_json(r, 200)["web_url"] == f"http://example.test:{server.port}/root"


def test_user_boolean_and_numeric_types(me):
    for key in ["can_create_group", "can_create_project", "two_factor_enabled", "external",
                "private_profile"]:
        assert isinstance(me[key], bool), key
    for key in ["theme_id", "color_scheme_id", "projects_limit"]:
        assert isinstance(me[key], int), key


def test_python_gitlab_auth(server):
    gl = server.gitlab(server.root_token)
    gl.auth()
    assert gl.user.username == "root"
    assert gl.user.is_admin is True
    assert gl.user.email == "admin@example.com"


def test_head_user(server):
    r = server.request("HEAD", "/user", token=server.root_token)
    assert r.status_code == 200
    assert r.content == b""


# ---- version / metadata --------------------------------------------------


def test_version(server):
    data = assert_json(server.request("GET", "/version", token=server.root_token), 200)
    assert data["version"] == "0.1.0"
    assert isinstance(data["revision"], str) and data["revision"]
    # Since GitLab 15.5 /version answers what /metadata does: configuration-as-code tools read
    # `enterprise` from it at connect.
    assert data["enterprise"] is False and data["kas"]["enabled"] is False
    assert data == server.request("GET", "/metadata", token=server.root_token).json()
    assert server.gitlab().version() == ("0.1.0", data["revision"])


def test_version_requires_auth(server):
    assert_json(server.request("GET", "/version"), 401, {"message": "401 Unauthorized"})


def test_metadata(server):
    data = assert_json(server.request("GET", "/metadata", token=server.root_token), 200)
    assert data["version"] == "0.1.0"
    assert isinstance(data["revision"], str)
    assert data["kas"]["enabled"] is False
    assert data["enterprise"] is False


def test_metadata_requires_auth(server):
    assert_json(server.request("GET", "/metadata"), 401, {"message": "401 Unauthorized"})


def test_python_gitlab_version(server):
    gl = server.gitlab(server.root_token)
    version, revision = gl.version()
    assert version == "0.1.0"
    revision_api = server.request("GET", "/version", token=server.root_token).json()["revision"]
    assert revision == revision_api


def test_python_gitlab_version_with_bad_token(server):
    gl = server.gitlab("glpat-doesnotexist00000000")
    # python-gitlab swallows the error and reports unknown
    assert gl.version() == ("unknown", "unknown")


def test_python_gitlab_metadata(server):
    gl = server.gitlab(server.root_token)
    assert gl.http_get("/metadata")["kas"]["enabled"] is False


@pytest.mark.parametrize("proto,scheme", [("https", "https"), ("http", "http"),
                                          ("ftp", "http"), ("HTTPS ", "http")])
def test_links_take_the_scheme_a_proxy_forwarded(server, proto, scheme):
    me = assert_json(server.request("GET", "/user", token=server.root_token,
                                    headers={"X-Forwarded-Proto": proto}), 200)
    assert me["web_url"] == f"{scheme}://127.0.0.1:{server.port}/root"
