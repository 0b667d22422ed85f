"""The Users API: GET/POST/PUT/DELETE /users, identities, avatars, block/unblock/deactivate/
activate, GET /user with sudo, statuses, /user_counts, /user/activities, memberships, a user's
project lists, and tenant isolation.

Happy paths go through python-gitlab; every bad input is sent with requests and checked for
GitLab's status and body, and for nothing being written (no row, no mail, no change).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import email
import email.policy
import hashlib
import re
import secrets
import struct
import time
import zlib

import gitlab
import pytest

from conftest import assert_json, insufficient_scope, today_utc

# ---- constants -------------------------------------------------------------

PASSWORD = "Sup3r-secret-pw"
UNAUTHORIZED = {"message": "401 Unauthorized"}
FORBIDDEN = {"message": "403 Forbidden"}
USER_NOT_FOUND = {"message": "404 User Not Found"}
IDENTITY_NOT_FOUND = {"message": "404 Identity Not Found"}
USERNAME_RULE = (
    "can contain only letters, digits, '_', '-' and '.'. "
    "Cannot start with '-' or end in '.', '.git' or '.atom'."
)
PASSWORD_OPTIONS_MISSING = {
    "error": "password, reset_password, force_random_password are missing, "
             "at least one parameter must be provided"
}
ISO_MS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")

SUMMARY_FIELDS = {"id", "username", "name", "state", "locked", "avatar_url", "web_url"}
PUBLIC_FIELDS = SUMMARY_FIELDS | {
    "created_at", "bio", "location", "public_email", "skype", "linkedin", "twitter", "discord",
    "website_url", "organization", "job_title", "pronouns", "bot", "work_information",
}
SELF_FIELDS = PUBLIC_FIELDS | {
    "email", "last_sign_in_at", "confirmed_at", "last_activity_on", "theme_id",
    "color_scheme_id", "projects_limit", "current_sign_in_at", "identities", "can_create_group",
    "can_create_project", "two_factor_enabled", "external", "private_profile",
}
ADMIN_FIELDS = SELF_FIELDS | {"is_admin", "note", "current_sign_in_ip", "last_sign_in_ip"}

B = "b.test"
DROP = object()  # a field to leave out of a request body


# ---- helpers ---------------------------------------------------------------


def uname(prefix: str = "u") -> str:
    return f"{prefix}{secrets.token_hex(5)}"


def user_payload(username: str | None = None, **fields) -> dict:
    """A valid POST /users body; `fields` override (DROP removes a field)."""
    username = username or uname()
    body = {
        "username": username,
        "email": f"{username}@example.com",
        "name": f"User {username}",
        "password": PASSWORD,
        "skip_confirmation": True,
    }
    body.update(fields)
    return {k: v for k, v in body.items() if v is not DROP}


def post_user(server, body=None, token=None, host=None, **kw):
    return server.request("POST", "/users", token=token or server.root_token, host=host,
                          json=body, **kw)


def create_user(server, host=None, token=None, **fields) -> dict:
    """Creates a user as admin (root unless `token`) and returns the 201 body."""
    return assert_json(post_user(server, user_payload(**fields), token=token, host=host), 201)


def token_for(server, user_id: int, scopes=("api",), host=None, token=None) -> str:
    """A personal access token for `user_id`, created by an admin through the API."""
    return server.create_token_api(user_id=user_id, scopes=list(scopes), host=host,
                                   token=token)["token"]


def user_with_token(server, **fields) -> tuple[dict, str]:
    user = create_user(server, **fields)
    return user, token_for(server, user["id"])


def admin_get(server, path, host=None, token=None, **params):
    return server.request("GET", path, token=token or server.root_token, host=host,
                          params=params)


def get_user(server, user_id, host=None, token=None) -> dict:
    return assert_json(admin_get(server, f"/users/{user_id}", host=host, token=token), 200)


def users_named(server, username, token=None, host=None) -> list:
    """GET /users?username=... as admin (or `token`)."""
    r = admin_get(server, "/users", token=token, host=host, username=username)
    return assert_json(r, 200)


def list_users(server, token=None, host=None, **params) -> list:
    params.setdefault("per_page", 100)
    r = server.request("GET", "/users", token=token, host=host, params=params)
    return assert_json(r, 200)


def usernames(items) -> list:
    return [u["username"] for u in items]


def put_user(server, user_id, token=None, **kw):
    return server.request("PUT", f"/users/{user_id}", token=token or server.root_token, **kw)


def state_action(server, user_id, action, token=None):
    return server.request("POST", f"/users/{user_id}/{action}",
                          token=token or server.root_token)


def gravatar(address: str) -> str:
    digest = hashlib.sha256(address.strip().lower().encode()).hexdigest()
    return f"https://www.gravatar.com/avatar/{digest}?s=80&d=identicon"


def png(extra: bytes = b"", width: int = 2, height: int = 2) -> bytes:
    """A valid PNG image (optionally padded after IEND to reach a size)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    raw = b"".join(b"\x00" + bytes([secrets.randbelow(256)]) * 3 * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b"")
            + extra)


def png_of_size(size: int) -> bytes:
    base = png()
    return base + b"\x00" * (size - len(base))


def mails_for(server, address: str) -> list:
    """The .eml files under DATA_DIR/mail/ addressed to `address`, parsed."""
    folder = server.data_dir / "mail"
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.glob("*.eml")):
        msg = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        if address.lower() in str(msg.get("To", "")).lower():
            found.append(msg)
    return found


def mail_body(msg) -> str:
    part = msg.get_body(preferencelist=("plain",)) if msg.is_multipart() else msg
    return part.get_content()


def db_write(server, sql: str):
    """Runs one statement straight against the server's database, then waits out the
    server's 1 s token-lookup cache."""
    server.sql(sql)
    time.sleep(1.1)


def db_set_user(server, user: dict, **columns):
    """UPDATE users SET ... for one user (matched by id and username, so only its tenant)."""
    sets = ", ".join(f"{k} = '{v}'" for k, v in columns.items())
    db_write(server, f"UPDATE users SET {sets} WHERE id = {int(user['id'])} "
                     f"AND username = '{user['username']}'")


@pytest.fixture(scope="module", autouse=True)
def no_search_rate_limits(server):
    """This module searches users far more than GitLab's default search limits (30 a minute
    per user, 10 per IP) allow; the limits themselves are tested in test_rate_limits.py."""
    r = server.request("PUT", "/application/settings", token=server.root_token,
                       json={"search_rate_limit": 0, "search_rate_limit_unauthenticated": 0})
    assert_json(r, 200)


def days_ago(n: int) -> str:
    return (today_utc() - dt.timedelta(days=n)).isoformat()


@contextlib.contextmanager
def setting(server, name, value, restore):
    r = server.request("PUT", "/application/settings", token=server.root_token,
                       json={name: value})
    assert_json(r, 200)
    try:
        yield
    finally:
        r = server.request("PUT", "/application/settings", token=server.root_token,
                           json={name: restore})
        assert_json(r, 200)


# ---- fixtures --------------------------------------------------------------


@pytest.fixture(scope="module")
def gl(server):
    return server.gitlab(server.root_token)


@pytest.fixture(scope="module")
def alice(server):
    """A regular (non-admin) user with an api token."""
    user, token = user_with_token(server, username=uname("alice"))
    return {**user, "token": token}


@pytest.fixture(scope="module")
def gl_alice(server, alice):
    gla = server.gitlab(alice["token"])
    gla.auth()
    return gla


@pytest.fixture(scope="module")
def tenant_b(server):
    """Tenant b.test with a root token; returns the token once the server serves it."""
    server.cli("tenant", "create", "--host", B)
    token = server.create_token(user="root", name="t", scopes="api", tenant=B)

    def visible():
        return server.request("GET", "/user", token=token, host=B).status_code == 200

    assert server.wait_for(visible, timeout=10, interval=0.2), "tenant b.test never served"
    return token


# ============================================================================
# POST /users
# ============================================================================


def test_create_with_python_gitlab(server, gl):
    username = uname("gl")
    user = gl.users.create({
        "email": f"{username}@example.com", "username": username, "name": "Gee Ell",
        "password": PASSWORD, "skip_confirmation": True,
    })
    assert isinstance(user.id, int)
    assert user.username == username
    assert user.name == "Gee Ell"
    assert user.email == f"{username}@example.com"
    assert user.state == "active"
    assert user.is_admin is False
    assert user.identities == []
    assert user.web_url == f"{server.url}/{username}"
    assert user.avatar_url == gravatar(f"{username}@example.com")
    fetched = gl.users.get(user.id)
    assert fetched.username == username
    assert fetched.email == user.email


def test_create_response_is_admin_view(server):
    body = create_user(server)
    assert ADMIN_FIELDS <= set(body), ADMIN_FIELDS - set(body)
    assert ISO_MS.match(body["created_at"]), body["created_at"]
    assert body["last_activity_on"] is None
    assert body["last_sign_in_at"] is None
    assert body["current_sign_in_ip"] is None


def test_create_defaults(server):
    body = create_user(server)
    assert body["projects_limit"] == 100000
    assert body["can_create_group"] is True
    assert body["can_create_project"] is True
    assert body["external"] is False
    assert body["private_profile"] is False
    assert body["two_factor_enabled"] is False
    assert body["is_admin"] is False
    assert body["bio"] == ""
    assert body["note"] is None
    assert body["public_email"] is None
    assert body["locked"] is False


def test_create_with_every_optional_field(server):
    username = uname("full")
    address = f"{username}@example.com"
    body = create_user(
        server, username=username, admin=True, bio="Writes tests", can_create_group=False,
        color_scheme_id=2, theme_id=3, extern_uid="uid-" + username, provider="github",
        external=True, linkedin="in-x", location="Lisbon", note="admin note",
        organization="Acme", job_title="Engineer", discord="123456789", pronouns="they/them",
        private_profile=True, projects_limit=7, public_email=address, skype="sk",
        twitter="tw", website_url="https://example.com/me", shared_runners_minutes_limit=100,
        extra_shared_runners_minutes_limit=50,
    )
    assert body["is_admin"] is True
    assert body["bio"] == "Writes tests"
    assert body["can_create_group"] is False
    assert body["color_scheme_id"] == 2
    assert body["theme_id"] == 3
    assert body["identities"] == [
        {"provider": "github", "extern_uid": "uid-" + username, "saml_provider_id": None}
    ]
    assert body["external"] is True
    assert body["can_create_project"] is False  # external users cannot create projects
    assert body["linkedin"] == "in-x"
    assert body["location"] == "Lisbon"
    assert body["note"] == "admin note"
    assert body["organization"] == "Acme"
    assert body["job_title"] == "Engineer"
    assert body["work_information"] == "Engineer at Acme"
    assert body["discord"] == "123456789"
    assert body["pronouns"] == "they/them"
    assert body["private_profile"] is True
    assert body["projects_limit"] == 7
    assert body["public_email"] == address
    assert body["skype"] == "sk"
    assert body["twitter"] == "tw"
    assert body["website_url"] == "https://example.com/me"
    assert body["shared_runners_minutes_limit"] == 100
    assert body["extra_shared_runners_minutes_limit"] == 50
    # and it was stored, not just echoed
    stored = get_user(server, body["id"])
    assert stored == body


def test_create_with_form_encoding(server):
    username = uname("form")
    data = {k: str(v).lower() if isinstance(v, bool) else v
            for k, v in user_payload(username, external=True, projects_limit=3).items()}
    r = server.request("POST", "/users", token=server.root_token, data=data)
    body = assert_json(r, 201)
    assert body["username"] == username
    assert body["external"] is True
    assert body["projects_limit"] == 3
    assert body["confirmed_at"] is not None


def test_create_with_query_string(server):
    username = uname("qs")
    params = {k: str(v).lower() if isinstance(v, bool) else v
              for k, v in user_payload(username).items()}
    r = server.request("POST", "/users", token=server.root_token, params=params)
    assert assert_json(r, 201)["username"] == username


def test_create_private_profile_null_becomes_false(server):
    body = create_user(server, private_profile=None)
    assert body["private_profile"] is False


def test_create_admin_can_administer(server):
    user, token = user_with_token(server, admin=True)
    assert user["is_admin"] is True
    r = server.request("GET", "/users", token=token, params={"username": "root"})
    assert assert_json(r, 200)[0]["email"] == "admin@example.com"


def test_create_projects_limit_follows_default_setting(server):
    with setting(server, "default_projects_limit", 42, 100000):
        assert create_user(server)["projects_limit"] == 42
        assert create_user(server, projects_limit=5)["projects_limit"] == 5
    assert create_user(server)["projects_limit"] == 100000


def test_create_external_follows_user_default_external(server):
    with setting(server, "user_default_external", True, False):
        assert create_user(server)["external"] is True
        assert create_user(server, external=False)["external"] is False
    assert create_user(server)["external"] is False


def test_create_with_skip_confirmation_is_confirmed_and_sends_no_mail(server):
    body = create_user(server, skip_confirmation=True)
    assert ISO_MS.match(body["confirmed_at"] or ""), body["confirmed_at"]
    assert mails_for(server, body["email"]) == []


def test_create_without_skip_confirmation_mails_confirmation(server):
    body = create_user(server, skip_confirmation=DROP)
    assert body["confirmed_at"] is None
    mails = mails_for(server, body["email"])
    assert len(mails) == 1
    text = mail_body(mails[0])
    assert "confirmation_token=" in text


def test_create_with_reset_password_mails_reset_link(server):
    body = create_user(server, password=DROP, reset_password=True)
    mails = mails_for(server, body["email"])
    assert len(mails) == 1
    assert "reset_password_token=" in mail_body(mails[0])


def test_create_with_reset_password_and_no_skip_confirmation_mails_both(server):
    body = create_user(server, password=DROP, reset_password=True, skip_confirmation=DROP)
    texts = [mail_body(m) for m in mails_for(server, body["email"])]
    assert len(texts) == 2
    assert any("reset_password_token=" in t for t in texts)
    assert any("confirmation_token=" in t for t in texts)


def test_create_with_force_random_password(server):
    body = create_user(server, password=DROP, force_random_password=True)
    assert body["state"] == "active"
    assert mails_for(server, body["email"]) == []


def test_create_flags_override_password(server):
    # "the flags override password": a short password is not even looked at
    body = create_user(server, password="short", force_random_password=True)
    assert body["state"] == "active"


def test_create_with_avatar_python_gitlab(server, gl):
    image = png()
    username = uname("av")
    user = gl.users.create({
        "email": f"{username}@example.com", "username": username, "name": "Avatar",
        "password": PASSWORD, "skip_confirmation": True, "avatar": image,
    })
    assert user.avatar_url == f"{server.url}/uploads/-/system/user/avatar/{user.id}/avatar.png"
    r = server.request("GET", user.avatar_url)  # no token: avatars are public
    assert r.status_code == 200
    assert r.content == image
    assert r.headers["Content-Type"] == "image/png"


@pytest.mark.parametrize("filename", ["face.png", "face.JPG", "face.jpeg", "face.gif",
                                      "face.bmp", "face.tiff", "face.ico", "face.webp"])
def test_create_with_avatar_each_image_type(server, filename):
    image = png()  # only the declared type matters here
    data = {k: str(v).lower() if isinstance(v, bool) else v for k, v in user_payload().items()}
    r = server.request("POST", "/users", token=server.root_token, data=data,
                       files={"avatar": (filename, image, "application/octet-stream")})
    body = assert_json(r, 201)
    assert body["avatar_url"].startswith(
        f"{server.url}/uploads/-/system/user/avatar/{body['id']}/")
    assert server.request("GET", body["avatar_url"]).content == image


def test_create_with_avatar_of_exactly_200_kib(server):
    image = png_of_size(200 * 1024)
    data = {k: str(v).lower() if isinstance(v, bool) else v for k, v in user_payload().items()}
    r = server.request("POST", "/users", token=server.root_token, data=data,
                       files={"avatar": ("big.png", image, "image/png")})
    body = assert_json(r, 201)
    assert server.request("GET", body["avatar_url"]).content == image


def test_create_avatar_filename_cannot_escape(server):
    image = png()
    data = {k: str(v).lower() if isinstance(v, bool) else v for k, v in user_payload().items()}
    r = server.request("POST", "/users", token=server.root_token, data=data,
                       files={"avatar": ("../../../escape.png", image, "image/png")})
    body = assert_json(r, 201)
    assert ".." not in body["avatar_url"]
    assert server.request("GET", body["avatar_url"]).content == image
    assert not any(p.name == "escape.png" for p in server.data_dir.parent.glob("*"))
    assert not any(p.name == "escape.png" for p in server.data_dir.glob("*"))


def test_create_avatar_filename_with_spaces_is_servable(server):
    image = png()
    data = {k: str(v).lower() if isinstance(v, bool) else v for k, v in user_payload().items()}
    r = server.request("POST", "/users", token=server.root_token, data=data,
                       files={"avatar": ("my face.png", image, "image/png")})
    body = assert_json(r, 201)
    got = server.request("GET", body["avatar_url"])
    assert got.status_code == 200
    assert got.content == image


def test_create_username_may_use_dots_dashes_underscores(server):
    username = f"a.b-c_{secrets.token_hex(3)}"
    assert create_user(server, username=username)["username"] == username


def test_create_keeps_username_case(server):
    username = "MiXeD" + secrets.token_hex(3)
    body = create_user(server, username=username)
    assert body["username"] == username
    assert body["web_url"].endswith("/" + username)


def test_create_can_reuse_username_after_delete(server):
    body = create_user(server)
    assert server.request("DELETE", f"/users/{body['id']}",
                          token=server.root_token).status_code == 204
    again = create_user(server, username=body["username"], email=body["email"])
    assert again["id"] != body["id"]


# ---- POST /users: bad input ------------------------------------------------


def assert_no_user(server, username: str, address: str | None = None):
    assert users_named(server, username) == []
    if address:
        found = list_users(server, token=server.root_token, search=address)
        assert [u for u in found if u["email"].lower() == address.lower()] == []
        assert mails_for(server, address) == []


@pytest.mark.parametrize("field", ["email", "name", "username"])
def test_create_missing_required_field(server, field):
    body = user_payload(skip_confirmation=DROP)
    del body[field]
    assert_json(post_user(server, body), 400, {"error": f"{field} is missing"})
    if field != "username":
        assert_no_user(server, body["username"])
    if field != "email":
        found = list_users(server, token=server.root_token, search=body["email"])
        assert found == []
        assert mails_for(server, body["email"]) == []


def test_create_without_any_password_option(server):
    body = user_payload(password=DROP, skip_confirmation=DROP)
    assert_json(post_user(server, body), 400, PASSWORD_OPTIONS_MISSING)
    assert_no_user(server, body["username"], body["email"])


def test_create_with_false_flags_and_no_password(server):
    body = user_payload(password=DROP, reset_password=False, force_random_password=False)
    r = post_user(server, body)
    assert r.status_code == 400, r.text
    assert_no_user(server, body["username"], body["email"])


@pytest.mark.parametrize("password", ["short", "1234567", ""])
def test_create_password_too_short(server, password):
    body = user_payload(password=password, skip_confirmation=DROP)
    r = post_user(server, body)
    if password == "":
        assert r.status_code == 400, r.text
    else:
        assert_json(r, 400, {"message": {"password": ["is too short (minimum is 8 characters)"]}})
    assert_no_user(server, body["username"], body["email"])


def test_create_password_of_8_chars_is_enough(server):
    assert create_user(server, password="abcdefgh")["state"] == "active"


def test_create_password_too_long(server):
    body = user_payload(password="x" * 129)
    assert_json(post_user(server, body), 400,
                {"message": {"password": ["is too long (maximum is 128 characters)"]}})
    assert_no_user(server, body["username"])


@pytest.mark.parametrize("username", ["-bad", "x.git", "a b", "ends.", "pic.atom", "X.GIT",
                                      "sl/ash", "ümlaut", "semi;colon"])
def test_create_invalid_username(server, username):
    body = user_payload(username=username, email=f"{uname()}@example.com",
                        skip_confirmation=DROP)
    assert_json(post_user(server, body), 400, {"message": {"username": [USERNAME_RULE]}})
    assert_no_user(server, username, body["email"])


@pytest.mark.parametrize("address", ["nope", "a b@example.com", "@example.com", "x@",
                                     "two@@example.com"])
def test_create_invalid_email(server, address):
    body = user_payload(email=address, skip_confirmation=DROP)
    assert_json(post_user(server, body), 400, {"message": {"email": ["is invalid"]}})
    assert_no_user(server, body["username"])


@pytest.mark.parametrize("local", ["a<b", 'quo"te', "com,ma"])
def test_create_odd_but_devise_valid_email_never_half_creates(server, local):
    """Devise accepts anything@anything without spaces. Whatever the answer, it is not a
    500, and a refused user leaves no row behind."""
    body = user_payload(email=f"{local}{secrets.token_hex(3)}@example.com",
                        skip_confirmation=DROP)
    r = post_user(server, body)
    assert r.status_code in (201, 400), (r.status_code, r.text)
    if r.status_code == 400:
        assert_json(r, 400, {"message": {"email": ["is invalid"]}})
        assert users_named(server, body["username"]) == []
    else:
        assert len(users_named(server, body["username"])) == 1


def test_create_duplicate_username_case_insensitive(server):
    first = create_user(server)
    body = user_payload(username=first["username"].upper(),
                        email=f"{uname('other')}@example.com", skip_confirmation=DROP)
    assert_json(post_user(server, body), 400,
                {"message": {"username": ["has already been taken"]}})
    assert usernames(users_named(server, first["username"])) == [first["username"]]
    assert mails_for(server, body["email"]) == []


def test_create_duplicate_email_case_insensitive(server):
    first = create_user(server)
    body = user_payload(email=first["email"].upper(), skip_confirmation=DROP)
    assert_json(post_user(server, body), 400, {"message": {"email": ["has already been taken"]}})
    assert users_named(server, body["username"]) == []
    assert mails_for(server, first["email"]) == []


def test_create_root_username_and_email_are_taken(server):
    assert_json(post_user(server, user_payload(username="ROOT")), 400,
                {"message": {"username": ["has already been taken"]}})
    assert_json(post_user(server, user_payload(email="Admin@Example.com")), 400,
                {"message": {"email": ["has already been taken"]}})


@pytest.mark.parametrize("name", ["", "   "])
def test_create_blank_name(server, name):
    body = user_payload(name=name, skip_confirmation=DROP)
    assert_json(post_user(server, body), 400, {"message": {"name": ["can't be blank"]}})
    assert_no_user(server, body["username"], body["email"])


@pytest.mark.parametrize("fields", [{"extern_uid": "123"}, {"provider": "github"}])
def test_create_identity_needs_both_parts(server, fields):
    body = user_payload(skip_confirmation=DROP, **fields)
    assert_json(post_user(server, body), 400,
                {"error": "extern_uid, provider provide all or none of parameters"})
    assert_no_user(server, body["username"], body["email"])


def test_create_duplicate_identity(server):
    extern = "dup-" + secrets.token_hex(4)
    create_user(server, extern_uid=extern, provider="github")
    body = user_payload(extern_uid=extern, provider="github", skip_confirmation=DROP)
    r = post_user(server, body)
    assert r.status_code == 400, r.text
    assert "message" in r.json()
    assert_no_user(server, body["username"], body["email"])


def test_create_public_email_must_be_own(server):
    body = user_payload(public_email="someone-else@example.com", skip_confirmation=DROP)
    assert_json(post_user(server, body), 400,
                {"message": {"public_email": ["is not an email you own"]}})
    assert_no_user(server, body["username"], body["email"])


@pytest.mark.parametrize("field,value", [
    ("projects_limit", "lots"), ("admin", "maybe"), ("theme_id", "dark"),
    ("external", "perhaps"), ("skip_confirmation", "sometimes"),
])
def test_create_wrongly_typed_field(server, field, value):
    body = user_payload(**{"skip_confirmation": DROP, field: value})
    assert_json(post_user(server, body), 400, {"error": f"{field} is invalid"})
    assert_no_user(server, body["username"], body["email"])


def test_create_negative_projects_limit(server):
    body = user_payload(projects_limit=-1)
    assert_json(post_user(server, body), 400,
                {"message": {"projects_limit": ["must be greater than or equal to 0"]}})
    assert_no_user(server, body["username"])


@pytest.mark.parametrize("field", ["name", "bio"])
def test_create_text_over_255_chars(server, field):
    body = user_payload(**{field: "x" * 256})
    assert_json(post_user(server, body), 400,
                {"message": {field: ["is too long (maximum is 255 characters)"]}})
    assert_no_user(server, body["username"])


@pytest.mark.parametrize("field", ["name", "bio"])
def test_create_text_of_255_chars(server, field):
    assert create_user(server, **{field: "y" * 255})[field] == "y" * 255


@pytest.mark.parametrize("filename", ["notes.txt", "script.svg", "noextension", "page.html"])
def test_create_avatar_of_unsupported_type(server, filename):
    body = user_payload(skip_confirmation=DROP)
    data = {k: str(v).lower() if isinstance(v, bool) else v for k, v in body.items()}
    r = server.request("POST", "/users", token=server.root_token, data=data,
                       files={"avatar": (filename, png(), "application/octet-stream")})
    err = assert_json(r, 400)
    assert list(err) == ["message"] and list(err["message"]) == ["avatar"], err
    assert err["message"]["avatar"] and all(isinstance(m, str) for m in err["message"]["avatar"])
    assert_no_user(server, body["username"], body["email"])


def test_create_avatar_too_big(server):
    body = user_payload(skip_confirmation=DROP)
    data = {k: str(v).lower() if isinstance(v, bool) else v for k, v in body.items()}
    r = server.request("POST", "/users", token=server.root_token, data=data,
                       files={"avatar": ("big.png", png_of_size(200 * 1024 + 1), "image/png")})
    err = assert_json(r, 400)
    assert list(err["message"]) == ["avatar"], err
    assert_no_user(server, body["username"], body["email"])


def test_create_failed_avatar_leaves_no_file(server):
    before = sorted(p for p in server.data_dir.rglob("*") if p.is_file() and "uploads" in p.parts)
    body = user_payload()
    data = {k: str(v).lower() if isinstance(v, bool) else v for k, v in body.items()}
    r = server.request("POST", "/users", token=server.root_token, data=data,
                       files={"avatar": ("x.exe", b"MZ" + b"\x00" * 100, "image/png")})
    assert r.status_code == 400
    after = sorted(p for p in server.data_dir.rglob("*") if p.is_file() and "uploads" in p.parts)
    assert after == before


def test_create_as_non_admin_is_403(server, alice):
    body = user_payload(skip_confirmation=DROP)
    assert_json(post_user(server, body, token=alice["token"]), 403, FORBIDDEN)
    assert_no_user(server, body["username"], body["email"])


def test_create_as_non_admin_python_gitlab(server, alice):
    gla = server.gitlab(alice["token"])
    with pytest.raises(gitlab.GitlabCreateError) as exc:
        gla.users.create(user_payload())
    assert exc.value.response_code == 403


def test_create_without_token_is_401(server):
    body = user_payload()
    r = server.request("POST", "/users", json=body)
    assert_json(r, 401, UNAUTHORIZED)
    assert_no_user(server, body["username"])


def test_create_with_read_user_token_is_403(server):
    token = server.create_token_api(scopes=["read_user"])["token"]
    body = user_payload()
    r = post_user(server, body, token=token)
    assert r.status_code == 403, r.text
    assert_no_user(server, body["username"])


# ============================================================================
# GET /users/:id
# ============================================================================


def test_get_user_python_gitlab(server, gl, alice):
    user = gl.users.get(alice["id"])
    assert user.username == alice["username"]
    assert user.email == alice["email"]
    assert user.is_admin is False


def test_get_user_admin_view(server, alice):
    body = get_user(server, alice["id"])
    assert ADMIN_FIELDS <= set(body), ADMIN_FIELDS - set(body)
    assert "custom_attributes" not in body


def test_get_user_public_view_for_non_admin(server, alice):
    other = create_user(server, bio="hello", location="Porto", job_title="Dev",
                        organization="Org", pronouns="she/her")
    r = server.request("GET", f"/users/{other['id']}", token=alice["token"])
    body = assert_json(r, 200)
    assert set(body) == PUBLIC_FIELDS
    assert body["bio"] == "hello"
    assert body["location"] == "Porto"
    assert body["work_information"] == "Dev at Org"
    assert body["pronouns"] == "she/her"
    assert body["bot"] is False
    assert body["web_url"] == f"{server.url}/{other['username']}"


def test_get_user_public_view_for_anonymous(server, alice):
    body = assert_json(server.request("GET", f"/users/{alice['id']}"), 200)
    assert set(body) == PUBLIC_FIELDS
    assert "email" not in body


def test_get_user_public_email_is_shown_to_others(server, alice):
    other = create_user(server)
    address = other["email"]
    assert_json(put_user(server, other["id"], json={"public_email": address}), 200)
    body = assert_json(server.request("GET", f"/users/{other['id']}", token=alice["token"]), 200)
    assert body["public_email"] == address
    assert "email" not in body


def test_get_private_profile_hides_details_from_others(server, alice):
    private, token = user_with_token(server, private_profile=True, bio="secret bio")
    body = assert_json(server.request("GET", f"/users/{private['id']}", token=alice["token"]),
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
        {"provider": "saml", "extern_uid": f"ext-{people['tag']}", "saml_provider_id": None}]


def test_list_summary_view_for_non_admin(server, people, alice):
    items = tagged(server, people, token=alice["token"])
    assert len(items) == 5
    for item in items:
        assert set(item) == SUMMARY_FIELDS


def test_list_summary_view_for_anonymous(server, people):
    r = server.request("GET", "/users", params={"search": people["tag"]})
    items = assert_json(r, 200)
    assert len(items) == 5
    for item in items:
        assert set(item) == SUMMARY_FIELDS


def test_list_python_gitlab_as_non_admin(server, people, gl_alice):
    users = gl_alice.users.list(search=people["tag"], get_all=True)
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


def test_list_search_email_for_non_admin_only_exact(server, people, alice):
    address = people["ext"]["email"]
    exact = list_users(server, token=alice["token"], search=address.upper())
    assert usernames(exact) == [people["ext"]["username"]]
    assert list_users(server, token=alice["token"], search=address[2:]) == []
    assert list_users(server, token=alice["token"], search="@example.com") == []
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


def test_list_exclude_external(server, people, alice):
    for token in (server.root_token, alice["token"]):
        names = usernames(tagged(server, people, token=token, exclude_external="true"))
        assert people["ext"]["username"] not in names
        assert len(names) == 4


def test_list_external_only_for_admin(server, people, alice):
    assert usernames(tagged(server, people, external="true")) == [people["ext"]["username"]]
    # ignored for non-admins
    assert len(tagged(server, people, token=alice["token"], external="true")) == 5


def test_list_two_factor(server, people, alice):
    assert tagged(server, people, two_factor="enabled") == []
    assert len(tagged(server, people, two_factor="disabled")) == 5
    assert len(tagged(server, people, token=alice["token"], two_factor="enabled")) == 5


def test_list_two_factor_bad_value(server):
    assert_json(admin_get(server, "/users", two_factor="maybe"), 400,
                {"error": "two_factor does not have a valid value"})


def test_list_created_after_and_before(server, people, alice):
    tomorrow = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)).strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    assert tagged(server, people, created_after=tomorrow) == []
    assert len(tagged(server, people, created_before=tomorrow)) == 5
    assert tagged(server, people, created_before="2001-01-01T00:00:00Z") == []
    assert len(tagged(server, people, created_after="2001-01-01")) == 5
    # ignored for non-admins
    assert len(tagged(server, people, token=alice["token"], created_after=tomorrow)) == 5


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


def test_list_extern_uid_does_not_reveal_identities_to_non_admins(server, people, alice):
    r = server.request("GET", "/users", token=alice["token"],
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
def test_list_order_by_and_sort_ignored_for_non_admin(server, people, alice, params):
    items = list_users(server, token=alice["token"], **params)
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


# ============================================================================
# PUT /users/:id
# ============================================================================


def test_update_python_gitlab(server, gl):
    body = create_user(server)
    user = gl.users.get(body["id"])
    user.name = "Renamed Person"
    user.bio = "New bio"
    user.location = "Berlin"
    user.projects_limit = 9
    user.save()
    assert user.name == "Renamed Person"
    stored = get_user(server, body["id"])
    assert stored["name"] == "Renamed Person"
    assert stored["bio"] == "New bio"
    assert stored["location"] == "Berlin"
    assert stored["projects_limit"] == 9


def test_update_every_optional_field(server):
    body = create_user(server)
    changes = {
        "bio": "b", "can_create_group": False, "color_scheme_id": 4, "theme_id": 5,
        "external": True, "linkedin": "li", "location": "loc", "note": "n",
        "organization": "org", "job_title": "jt", "discord": "42", "pronouns": "he/him",
        "private_profile": True, "projects_limit": 11, "public_email": body["email"],
        "skype": "s", "twitter": "t", "website_url": "https://w.example",
        "shared_runners_minutes_limit": 7, "extra_shared_runners_minutes_limit": 8,
        "admin": True,
    }
    updated = assert_json(put_user(server, body["id"], json=changes), 200)
    for key, value in changes.items():
        field = "is_admin" if key == "admin" else key
        assert updated[field] == value, key
    assert get_user(server, body["id"]) == updated


def test_update_with_nothing_changes_nothing(server):
    body = create_user(server)
    assert assert_json(put_user(server, body["id"], json={}), 200) == body
    assert get_user(server, body["id"]) == body


def test_update_with_form_encoding(server):
    body = create_user(server)
    r = put_user(server, body["id"], data={"bio": "form bio", "external": "true"})
    updated = assert_json(r, 200)
    assert updated["bio"] == "form bio"
    assert updated["external"] is True


def test_update_username(server):
    body = create_user(server)
    new = uname("renamed")
    updated = assert_json(put_user(server, body["id"], json={"username": new}), 200)
    assert updated["username"] == new
    assert updated["web_url"] == f"{server.url}/{new}"
    assert users_named(server, body["username"]) == []
    assert usernames(users_named(server, new)) == [new]


def test_update_own_username_case_only(server):
    body = create_user(server)
    r = put_user(server, body["id"], json={"username": body["username"].upper()})
    assert assert_json(r, 200)["username"] == body["username"].upper()


def test_update_same_email_again(server):
    body = create_user(server)
    r = put_user(server, body["id"], json={"email": body["email"]})
    assert assert_json(r, 200)["email"] == body["email"]


def test_update_email_with_skip_reconfirmation(server):
    body = create_user(server)
    new = f"{uname('new')}@example.com"
    updated = assert_json(
        put_user(server, body["id"], json={"email": new, "skip_reconfirmation": True}), 200)
    assert updated["email"] == new
    assert updated["confirmed_at"] is not None
    assert mails_for(server, new) == []


def test_update_email_without_skip_reconfirmation_mails_confirmation(server):
    body = create_user(server)
    new = f"{uname('new')}@example.com"
    assert_json(put_user(server, body["id"], json={"email": new}), 200)
    mails = mails_for(server, new)
    assert len(mails) == 1
    assert "confirmation_token=" in mail_body(mails[0])


def test_update_password(server):
    body, token = user_with_token(server)
    assert_json(put_user(server, body["id"], json={"password": "An0ther-password"}), 200)
    # an admin-set password does not sign the user out of the API
    assert server.request("GET", "/user", token=token).status_code == 200


def test_update_private_profile_null_becomes_false(server):
    body = create_user(server, private_profile=True)
    r = put_user(server, body["id"], json={"private_profile": None})
    assert assert_json(r, 200)["private_profile"] is False


def test_update_identity_replaces_uid_for_provider(server):
    body = create_user(server, extern_uid="old-uid-" + secrets.token_hex(3), provider="github")
    new_uid = "new-uid-" + secrets.token_hex(3)
    r = put_user(server, body["id"], json={"extern_uid": new_uid, "provider": "github"})
    assert assert_json(r, 200)["identities"] == [
        {"provider": "github", "extern_uid": new_uid, "saml_provider_id": None}]


def test_update_adds_identity_for_second_provider(server):
    body = create_user(server, extern_uid="g-" + secrets.token_hex(3), provider="github")
    r = put_user(server, body["id"], json={"extern_uid": "l-1" + secrets.token_hex(3),
                                           "provider": "ldapmain"})
    providers = sorted(i["provider"] for i in assert_json(r, 200)["identities"])
    assert providers == ["github", "ldapmain"]


def test_update_make_admin(server):
    body, token = user_with_token(server)
    assert server.request("GET", "/users/1", token=token).json().get("email") is None
    assert_json(put_user(server, body["id"], json={"admin": True}), 200)
    assert assert_json(server.request("GET", "/users/1", token=token), 200)["email"] == \
        "admin@example.com"
    assert_json(put_user(server, body["id"], json={"admin": False}), 200)
    assert "email" not in assert_json(server.request("GET", "/users/1", token=token), 200)


def test_update_avatar_python_gitlab(server, gl):
    body = create_user(server)
    user = gl.users.get(body["id"])
    image = png()
    user.avatar = image
    user.save()
    stored = get_user(server, body["id"])
    assert stored["avatar_url"].startswith(
        f"{server.url}/uploads/-/system/user/avatar/{body['id']}/")
    assert server.request("GET", stored["avatar_url"]).content == image


def test_update_avatar_replaces_and_removes(server):
    body = create_user(server)
    first, second = png(), png()
    r = put_user(server, body["id"], files={"avatar": ("one.png", first, "image/png")})
    url_one = assert_json(r, 200)["avatar_url"]
    assert server.request("GET", url_one).content == first
    r = put_user(server, body["id"], files={"avatar": ("two.gif", second, "image/gif")})
    url_two = assert_json(r, 200)["avatar_url"]
    assert url_two.endswith("/two.gif")
    got = server.request("GET", url_two)
    assert got.content == second
    assert got.headers["Content-Type"] == "image/gif"
    assert server.request("GET", url_one).status_code == 404
    # avatar="" removes it: back to the avatar service URL, old file gone
    r = put_user(server, body["id"], json={"avatar": ""})
    assert assert_json(r, 200)["avatar_url"] == gravatar(body["email"])
    assert server.request("GET", url_two).status_code == 404


def test_update_avatar_removal_python_gitlab(server, gl):
    body = create_user(server)
    r = put_user(server, body["id"], files={"avatar": ("a.png", png(), "image/png")})
    url = assert_json(r, 200)["avatar_url"]
    user = gl.users.get(body["id"])
    user.avatar = ""
    user.save()
    assert get_user(server, body["id"])["avatar_url"] == gravatar(body["email"])
    assert server.request("GET", url).status_code == 404


def test_update_email_changes_gravatar(server):
    body = create_user(server)
    new = f"{uname('G')}@Example.com"
    r = put_user(server, body["id"], json={"email": new, "skip_reconfirmation": True})
    assert assert_json(r, 200)["avatar_url"] == gravatar(new)


# ---- PUT /users/:id: bad input ----------------------------------------------


@pytest.mark.parametrize("ident", ["999999", "abc"])
def test_update_unknown_user_is_404(server, ident):
    assert_json(put_user(server, ident, json={"bio": "x"}), 404, USER_NOT_FOUND)


def test_update_unknown_user_python_gitlab(gl):
    with pytest.raises(gitlab.GitlabUpdateError) as exc:
        gl.users.update(999999, {"bio": "x"})
    assert exc.value.response_code == 404


def test_update_as_non_admin_is_403(server, alice):
    body = create_user(server)
    assert_json(put_user(server, body["id"], token=alice["token"], json={"bio": "x"}), 403,
                FORBIDDEN)
    # not even their own record
    assert_json(put_user(server, alice["id"], token=alice["token"], json={"admin": True}), 403,
                FORBIDDEN)
    assert get_user(server, alice["id"])["is_admin"] is False
    assert get_user(server, body["id"])["bio"] == ""


def test_update_without_token_is_401(server, alice):
    r = server.request("PUT", f"/users/{alice['id']}", json={"bio": "x"})
    assert_json(r, 401, UNAUTHORIZED)


BAD_UPDATES = [
    ({"password": "short"}, {"message": {"password": ["is too short (minimum is 8 characters)"]}}),
    ({"username": "-bad"}, {"message": {"username": [USERNAME_RULE]}}),
    ({"username": "x.git"}, {"message": {"username": [USERNAME_RULE]}}),
    ({"email": "nope"}, {"message": {"email": ["is invalid"]}}),
    ({"name": ""}, {"message": {"name": ["can't be blank"]}}),
    ({"public_email": "not-mine@example.com"},
     {"message": {"public_email": ["is not an email you own"]}}),
    ({"extern_uid": "1"}, {"error": "extern_uid, provider provide all or none of parameters"}),
    ({"projects_limit": "x"}, {"error": "projects_limit is invalid"}),
    ({"projects_limit": -5}, {"message": {"projects_limit": ["must be greater than or equal to 0"]}}),
]


@pytest.mark.parametrize("change,error", BAD_UPDATES, ids=[str(c) for c, _ in BAD_UPDATES])
def test_update_bad_input_changes_nothing(server, change, error):
    body = create_user(server)
    # a valid change sent alongside must not be applied either
    r = put_user(server, body["id"], json={"bio": "should not stick", **change})
    assert_json(r, 400, error)
    assert get_user(server, body["id"]) == body


def test_update_duplicate_username_changes_nothing(server):
    first, second = create_user(server), create_user(server)
    r = put_user(server, second["id"], json={"username": first["username"].upper(), "bio": "x"})
    assert_json(r, 400, {"message": {"username": ["has already been taken"]}})
    assert get_user(server, second["id"]) == second


def test_update_duplicate_email_changes_nothing(server):
    first, second = create_user(server), create_user(server)
    r = put_user(server, second["id"], json={"email": first["email"].upper(), "bio": "x"})
    assert_json(r, 400, {"message": {"email": ["has already been taken"]}})
    assert get_user(server, second["id"]) == second
    assert mails_for(server, first["email"]) == []


def test_update_email_taken_by_root(server):
    body = create_user(server)
    assert_json(put_user(server, body["id"], json={"email": "ADMIN@example.com"}), 400,
                {"message": {"email": ["has already been taken"]}})


def test_update_bad_avatar_keeps_old_one(server):
    image = png()
    body = create_user(server)
    r = put_user(server, body["id"], files={"avatar": ("keep.png", image, "image/png")})
    before = assert_json(r, 200)
    r = put_user(server, body["id"], data={"bio": "nope"},
                 files={"avatar": ("evil.svg", b"<svg/>", "image/svg+xml")})
    err = assert_json(r, 400)
    assert list(err["message"]) == ["avatar"], err
    r = put_user(server, body["id"], files={"avatar": ("big.png", png_of_size(300 * 1024),
                                                       "image/png")})
    assert list(assert_json(r, 400)["message"]) == ["avatar"]
    assert get_user(server, body["id"]) == before
    assert server.request("GET", before["avatar_url"]).content == image


# ============================================================================
# Avatars and the avatar service
# ============================================================================


def test_avatar_url_is_gravatar_of_lowercased_email(server):
    username = uname("Case")
    body = create_user(server, username=username, email=f"{username}@EXAMPLE.com")
    expected = gravatar(f"{username}@example.com")
    assert body["avatar_url"] == expected
    summary = list_users(server, username=username)[0]
    assert summary["avatar_url"] == expected


def test_avatar_served_without_auth_on_any_view(server, alice):
    image = png()
    data = {k: str(v).lower() if isinstance(v, bool) else v for k, v in user_payload().items()}
    r = server.request("POST", "/users", token=server.root_token, data=data,
                       files={"avatar": ("pic.png", image, "image/png")})
    body = assert_json(r, 201)
    public = assert_json(server.request("GET", f"/users/{body['id']}"), 200)
    assert public["avatar_url"] == body["avatar_url"]
    listed = list_users(server, token=alice["token"], username=body["username"])[0]
    assert listed["avatar_url"] == body["avatar_url"]
    assert server.request("GET", body["avatar_url"]).content == image


def test_avatar_url_follows_host_header(server):
    data = {k: str(v).lower() if isinstance(v, bool) else v for k, v in user_payload().items()}
    r = server.request("POST", "/users", token=server.root_token, data=data,
                       files={"avatar": ("pic.png", png(), "image/png")})
    body = assert_json(r, 201)
    r = server.request("GET", f"/users/{body['id']}", host=f"alias.test:{server.port}")
    url = assert_json(r, 200)["avatar_url"]
    assert url.startswith(f"http://alias.test:{server.port}/uploads/-/system/user/avatar/")


def test_avatar_wrong_filename_or_user_is_404(server):
    data = {k: str(v).lower() if isinstance(v, bool) else v for k, v in user_payload().items()}
    r = server.request("POST", "/users", token=server.root_token, data=data,
                       files={"avatar": ("pic.png", png(), "image/png")})
    body = assert_json(r, 201)
    base = "/uploads/-/system/user/avatar"
    assert server.request("GET", f"{server.url}{base}/{body['id']}/other.png").status_code == 404
    assert server.request("GET", f"{server.url}{base}/1/pic.png").status_code == 404
    assert server.request("GET", f"{server.url}{base}/999999/pic.png").status_code == 404


def test_avatar_gone_after_user_deleted(server):
    data = {k: str(v).lower() if isinstance(v, bool) else v for k, v in user_payload().items()}
    r = server.request("POST", "/users", token=server.root_token, data=data,
                       files={"avatar": ("pic.png", png(), "image/png")})
    body = assert_json(r, 201)
    assert server.request("DELETE", f"/users/{body['id']}", token=server.root_token
                          ).status_code == 204
    assert server.request("GET", body["avatar_url"]).status_code == 404


def test_avatar_service_disabled_gives_null(server, alice):
    with_upload_data = {k: str(v).lower() if isinstance(v, bool) else v
                        for k, v in user_payload().items()}
    r = server.request("POST", "/users", token=server.root_token, data=with_upload_data,
                       files={"avatar": ("pic.png", png(), "image/png")})
    uploaded = assert_json(r, 201)
    with setting(server, "avatar_service_enabled", False, True):
        assert get_user(server, alice["id"])["avatar_url"] is None
        anon = assert_json(server.request("GET", f"/users/{alice['id']}"), 200)
        assert anon["avatar_url"] is None
        listed = list_users(server, token=alice["token"], username=alice["username"])[0]
        assert listed["avatar_url"] is None
        me = assert_json(server.request("GET", "/user", token=alice["token"]), 200)
        assert me["avatar_url"] is None
        # an uploaded avatar does not depend on the avatar service
        assert get_user(server, uploaded["id"])["avatar_url"] == uploaded["avatar_url"]
    assert get_user(server, alice["id"])["avatar_url"] == gravatar(alice["email"])


# ============================================================================
# DELETE /users/:id and identities
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


def test_delete_as_non_admin_is_403(server, alice):
    body = create_user(server)
    assert_json(server.request("DELETE", f"/users/{body['id']}", token=alice["token"]), 403,
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
    host = "ghost.test"
    server.cli("tenant", "create", "--host", host)
    token = server.create_token(user="root", name="g", scopes="api", tenant=host)
    assert server.wait_for(
        lambda: server.request("GET", "/user", token=token, host=host).status_code == 200,
        timeout=10, interval=0.2)
    human = create_user(server, host=host, token=token, username="ghost")
    victim = create_user(server, host=host, token=token)
    r = server.request("DELETE", f"/users/{victim['id']}", token=token, host=host)
    assert r.status_code == 204, r.text
    assert_json(server.request("GET", f"/users/{victim['id']}", token=token, host=host), 404,
                USER_NOT_FOUND)
    assert get_user(server, human["id"], host=host, token=token) == human
    names = usernames(list_users(server, token=token, host=host))
    assert sorted(names) == sorted(["root", "ghost"])


def test_delete_identity_python_gitlab(server, gl):
    body = create_user(server, extern_uid="e-" + secrets.token_hex(3), provider="github")
    user = gl.users.get(body["id"])
    user.identityproviders.delete("github")
    assert get_user(server, body["id"])["identities"] == []


def test_delete_identity_keeps_other_providers(server):
    body = create_user(server, extern_uid="e-" + secrets.token_hex(3), provider="github")
    assert_json(put_user(server, body["id"], json={"extern_uid": "l-" + secrets.token_hex(3),
                                                   "provider": "ldapmain"}), 200)
    r = server.request("DELETE", f"/users/{body['id']}/identities/ldapmain",
                       token=server.root_token)
    assert r.status_code == 204
    assert r.content == b""
    assert [i["provider"] for i in get_user(server, body["id"])["identities"]] == ["github"]


def test_delete_identity_frees_extern_uid(server):
    extern = "free-" + secrets.token_hex(3)
    body = create_user(server, extern_uid=extern, provider="github")
    server.request("DELETE", f"/users/{body['id']}/identities/github", token=server.root_token)
    other = create_user(server, extern_uid=extern, provider="github")
    assert other["identities"][0]["extern_uid"] == extern


def test_delete_identity_unknown_provider(server):
    body = create_user(server, extern_uid="e-" + secrets.token_hex(3), provider="github")
    r = server.request("DELETE", f"/users/{body['id']}/identities/gitlab",
                       token=server.root_token)
    assert_json(r, 404, IDENTITY_NOT_FOUND)
    assert len(get_user(server, body["id"])["identities"]) == 1


def test_delete_identity_twice(server):
    body = create_user(server, extern_uid="e-" + secrets.token_hex(3), provider="github")
    path = f"/users/{body['id']}/identities/github"
    assert server.request("DELETE", path, token=server.root_token).status_code == 204
    assert_json(server.request("DELETE", path, token=server.root_token), 404,
                IDENTITY_NOT_FOUND)


def test_delete_identity_unknown_user(server):
    assert_json(server.request("DELETE", "/users/999999/identities/github",
                               token=server.root_token), 404, USER_NOT_FOUND)


def test_delete_identity_as_non_admin(server, alice):
    body = create_user(server, extern_uid="e-" + secrets.token_hex(3), provider="github")
    r = server.request("DELETE", f"/users/{body['id']}/identities/github",
                       token=alice["token"])
    assert_json(r, 403, FORBIDDEN)
    assert len(get_user(server, body["id"])["identities"]) == 1


# ============================================================================
# GET /user and sudo
# ============================================================================


def test_current_user_view_for_non_admin(server, alice):
    me = assert_json(server.request("GET", "/user", token=alice["token"]), 200)
    assert me["id"] == alice["id"]
    assert me["email"] == alice["email"]
    assert SELF_FIELDS <= set(me), SELF_FIELDS - set(me)
    for field in ("is_admin", "current_sign_in_ip", "last_sign_in_ip", "note"):
        assert field not in me, field


def test_current_user_python_gitlab(server, gl_alice, alice):
    assert gl_alice.user.username == alice["username"]
    assert gl_alice.user.email == alice["email"]
    assert not hasattr(gl_alice.user, "is_admin")


def test_current_user_records_activity_today(server):
    body, token = user_with_token(server)
    assert body["last_activity_on"] is None
    server.request("GET", "/user", token=token)
    assert get_user(server, body["id"])["last_activity_on"] == today_utc().isoformat()


@pytest.mark.parametrize("by", ["username", "id"])
def test_sudo_as_root(server, alice, by):
    r = server.request("GET", "/user", token=server.root_token, params={"sudo": alice[by]})
    me = assert_json(r, 200)
    assert me["id"] == alice["id"]
    assert me["username"] == alice["username"]
    assert "is_admin" not in me  # the view of the user acted as


def test_sudo_header_as_root(server, alice):
    r = server.request("GET", "/user", token=server.root_token,
                       headers={"Sudo": alice["username"]})
    assert assert_json(r, 200)["id"] == alice["id"]


def test_sudo_python_gitlab(server, gl, alice):
    me = gl.http_get("/user", sudo=alice["username"])
    assert me["username"] == alice["username"]


def test_sudo_as_non_admin_loses_admin_rights(server, alice):
    body = user_payload()
    r = server.request("POST", "/users", token=server.root_token,
                       params={"sudo": alice["username"]}, json=body)
    assert_json(r, 403, FORBIDDEN)
    assert_no_user(server, body["username"])
    r = server.request("GET", "/users", token=server.root_token,
                       params={"sudo": alice["username"], "username": "root"})
    assert "email" not in assert_json(r, 200)[0]


def test_sudo_by_non_admin(server, alice):
    r = server.request("GET", "/user", token=alice["token"], params={"sudo": "root"})
    assert_json(r, 403, {"message": "403 Forbidden - Must be admin to use sudo"})


def test_sudo_unknown_user(server):
    r = server.request("GET", "/user", token=server.root_token, params={"sudo": "nobody-here"})
    assert r.status_code == 404, r.text


def test_current_user_without_token(server):
    assert_json(server.request("GET", "/user"), 401, UNAUTHORIZED)


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


def test_blocked_user_shows_state_everywhere(server, alice):
    body = create_user(server)
    state_action(server, body["id"], "block")
    assert get_user(server, body["id"])["state"] == "blocked"
    listed = list_users(server, token=alice["token"], username=body["username"])
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
def test_state_as_non_admin(server, alice, action):
    body = create_user(server)
    assert_json(state_action(server, body["id"], action, token=alice["token"]), 403, FORBIDDEN)
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
# User status
# ============================================================================


def test_status_python_gitlab(server, gl, gl_alice, alice):
    status = gl_alice.user.status.get()
    status.emoji = "coffee"
    status.message = "Brewing :coffee:"
    status.save()
    again = gl_alice.user.status.get()
    assert again.emoji == "coffee"
    assert again.message == "Brewing :coffee:"
    other = gl.users.get(alice["id"], lazy=True).status.get()
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


def test_status_with_sudo(server, alice):
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


def test_user_counts(server, alice):
    data = assert_json(server.request("GET", "/user_counts", token=alice["token"]), 200)
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


def activities(server, token=None, **params):
    params.setdefault("per_page", 100)
    if "from_" in params:
        params["from"] = params.pop("from_")
    r = server.request("GET", "/user/activities", token=token or server.root_token,
                       params=params)
    return assert_json(r, 200)


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


def test_activities_python_gitlab(server, gl, alice):
    server.request("GET", "/user", token=alice["token"])
    items = gl.user_activities.list(get_all=True)
    assert alice["username"] in [a.username for a in items]


@pytest.mark.parametrize("value", ["yesterday", "2024-13-01", "01/02/2024"])
def test_activities_bad_from(server, value):
    r = server.request("GET", "/user/activities", token=server.root_token,
                       params={"from": value})
    assert_json(r, 400, {"error": "from is invalid"})


def test_activities_non_admin(server, alice):
    assert_json(server.request("GET", "/user/activities", token=alice["token"]), 403, FORBIDDEN)


def test_activities_anonymous(server):
    assert_json(server.request("GET", "/user/activities"), 401, UNAUTHORIZED)


# ============================================================================
# /users/:id/memberships, /projects, /starred_projects
# ============================================================================


@pytest.mark.parametrize("params", [{}, {"type": "Project"}, {"type": "Namespace"}])
def test_memberships_empty(server, alice, params):
    r = admin_get(server, f"/users/{alice['id']}/memberships", **params)
    assert assert_json(r, 200) == []
    assert r.headers["X-Total"] == "0"
    assert r.headers["X-Page"] == "1"


def test_memberships_python_gitlab(gl, alice):
    assert gl.users.get(alice["id"], lazy=True).memberships.list(get_all=True) == []


def test_memberships_bad_type(server, alice):
    assert_json(admin_get(server, f"/users/{alice['id']}/memberships", type="Foo"), 400,
                {"error": "type does not have a valid value"})


def test_memberships_non_admin(server, alice):
    r = server.request("GET", f"/users/{alice['id']}/memberships", token=alice["token"])
    assert_json(r, 403, FORBIDDEN)


def test_memberships_unknown_user(server):
    assert_json(admin_get(server, "/users/999999/memberships"), 404, USER_NOT_FOUND)


@pytest.mark.parametrize("kind", ["projects", "starred_projects"])
@pytest.mark.parametrize("by", ["id", "username"])
def test_user_project_lists_empty(server, alice, kind, by):
    r = server.request("GET", f"/users/{alice[by]}/{kind}", token=alice["token"])
    assert assert_json(r, 200) == []
    assert r.headers["X-Total"] == "0"
    assert r.headers["X-Per-Page"] == "20"
    assert r.headers["X-Page"] == "1"


def test_user_project_lists_python_gitlab(gl, alice):
    user = gl.users.get(alice["id"], lazy=True)
    assert user.projects.list(get_all=True) == []
    assert user.starred_projects.list(get_all=True) == []


@pytest.mark.parametrize("kind", ["projects", "starred_projects"])
def test_user_project_lists_unknown_user(server, kind):
    assert_json(admin_get(server, f"/users/999999/{kind}"), 404, USER_NOT_FOUND)


# ============================================================================
# Tenants
# ============================================================================


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


def test_tenant_default_users_invisible_from_b(server, tenant_b, alice):
    assert users_named(server, alice["username"], host=B, token=tenant_b) == []
    assert_json(server.request("GET", f"/users/{alice['username']}/status", host=B), 404,
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


# --- memberships and deletion of group owners (with projects and groups in place) -----------

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
