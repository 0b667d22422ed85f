"""Helpers for the Users API modules (test_users*.py): request bodies, requests as an admin,
PNG images, the mails the server wrote, and direct database writes."""

from __future__ import annotations

import contextlib
import datetime as dt
import email
import email.policy
import hashlib
import secrets
import struct
import time
import zlib

from conftest import PASSWORD, assert_json, today_utc

USERNAME_RULE = (
    "can contain only letters, digits, '_', '-' and '.'. "
    "Cannot start with '-' or end in '.', '.git' or '.atom'."
)
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

DROP = object()  # a field to leave out of a request body


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


def as_form(body: dict) -> dict:
    """A request body as form fields (booleans as true/false)."""
    return {k: str(v).lower() if isinstance(v, bool) else v for k, v in body.items()}


def post_user_with_avatar(server, filename, image: bytes, content_type="image/png", body=None):
    """POST /users as root, multipart with an avatar file; a valid user unless `body`."""
    return server.request("POST", "/users", token=server.root_token,
                          data=as_form(body or user_payload()),
                          files={"avatar": (filename, image, content_type)})


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


def assert_no_user(server, username: str, address: str | None = None):
    """No user of that name (nor, given `address`, of that email, nor a mail to it) exists."""
    assert users_named(server, username) == []
    if address:
        found = list_users(server, token=server.root_token, search=address)
        assert [u for u in found if u["email"].lower() == address.lower()] == []
        assert mails_for(server, address) == []


def activities(server, token=None, **params) -> list:
    """GET /user/activities as admin (or `token`); `from_` stands for `from`."""
    params.setdefault("per_page", 100)
    if "from_" in params:
        params["from"] = params.pop("from_")
    r = server.request("GET", "/user/activities", token=token or server.root_token,
                       params=params)
    return assert_json(r, 200)
