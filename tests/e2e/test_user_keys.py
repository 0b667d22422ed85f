"""Users: SSH keys, GPG keys, secondary emails and impersonation tokens.

The users-create API is not on this branch yet, so a second, non-admin user ("alice") is
inserted into the database directly, the way test_settings.py does.
"""

import datetime as dt
import os
import subprocess
import tempfile
from pathlib import Path

import gitlab
import pytest

from conftest import (FORBIDDEN, ISO_MS, UNAUTHORIZED, USER_NOT_FOUND, assert_json,
                      require_program, today_utc)

FIXTURES = Path(__file__).resolve().parents[2] / "host" / "tests" / "fixtures"
KEY_NOT_FOUND = {"message": "404 Key Not Found"}
GPG_NOT_FOUND = {"message": "404 GPG Key Not Found"}
EMAIL_NOT_FOUND = {"message": "404 Email Not Found"}
TOKEN_NOT_FOUND = {"message": "404 Impersonation Token Not Found"}
TAKEN = ["has already been taken"]
GPG_INVALID = ("is invalid. A valid public GPG key begins with '-----BEGIN PGP PUBLIC KEY BLOCK-----' "
               "and ends with '-----END PGP PUBLIC KEY BLOCK-----'")


# ---- helpers -----------------------------------------------------------------


def ssh_key(kind: str = "ed25519", bits: int | None = None, comment: str = "me@laptop") -> tuple[str, str]:
    """A fresh public key line and its SHA256 fingerprint, from ssh-keygen."""
    require_program("ssh-keygen", "openssh-client")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k")
        args = ["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", comment, "-f", path]
        if bits:
            args[4:4] = ["-b", str(bits)]
        subprocess.run(args, check=True, capture_output=True)
        public = Path(path + ".pub").read_text().strip()
        fpr = subprocess.run(["ssh-keygen", "-lf", path + ".pub"], check=True,
                             capture_output=True, text=True).stdout.split()[1]
        return public, fpr


def gpg_key(uid: str) -> str:
    """A fresh armored public key block made by gpg."""
    require_program("gpg", "gnupg")
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "GNUPGHOME": home}
        subprocess.run(["gpg", "--batch", "--quiet", "--passphrase", "", "--quick-gen-key", uid,
                        "ed25519", "sign", "never"], check=True, capture_output=True, env=env)
        return subprocess.run(["gpg", "--armor", "--export"], check=True, capture_output=True,
                              text=True, env=env).stdout.strip()


def publishable(key: str, name: str, server) -> str:
    return " ".join(key.split()[:2]) + f" {name} (127.0.0.1)"


@pytest.fixture(scope="module")
def alice(server):
    """A second, non-admin user (id 9001) and a token of theirs."""
    server.sql("INSERT INTO users (tenant_id, id, username, username_lower, email, email_lower, name, "
                "state, is_admin, projects_limit, created_at, updated_at) "
                "SELECT tenant_id, 9001, 'alice', 'alice', 'alice@example.com', 'alice@example.com', "
                "'Alice', 'active', 0, 100000, 0, 0 FROM users WHERE username = 'root'")
    return {"id": 9001, "token": server.create_token(user="alice", scopes="api")}


def post(server, path, token=None, **body):
    return server.request("POST", path, token=token or server.root_token, json=body)


# ---- SSH keys: python-gitlab ---------------------------------------------------


def test_current_user_keys_with_python_gitlab(server, gl):
    key, fpr = ssh_key()
    created = gl.user.keys.create({"title": "laptop", "key": key})
    assert created.title == "laptop"
    assert created.key == publishable(key, "Administrator", server)
    assert "me@laptop" not in created.key  # the comment may be an email address: not shown
    assert created.usage_type == "auth_and_signing"
    assert created.expires_at is None
    assert ISO_MS.match(created.created_at)
    assert created.id in [k.id for k in gl.user.keys.list(get_all=True)]
    assert gl.user.keys.get(created.id).title == "laptop"
    created.delete()
    assert created.id not in [k.id for k in gl.user.keys.list(get_all=True)]
    with pytest.raises(gitlab.GitlabGetError) as err:
        gl.user.keys.get(created.id)
    assert err.value.response_code == 404


def test_create_returns_201_and_delete_204(server):
    key, _ = ssh_key("ecdsa", 384)
    data = assert_json(post(server, "/user/keys", title="ecdsa", key=key), 201)
    assert set(data) >= {"id", "title", "key", "created_at", "expires_at", "usage_type"}
    r = server.request("DELETE", f"/user/keys/{data['id']}", token=server.root_token)
    assert r.status_code == 204 and r.content == b""
    assert_json(server.request("DELETE", f"/user/keys/{data['id']}", token=server.root_token),
                404, KEY_NOT_FOUND)


def test_rsa_key_and_expires_at(server):
    key, _ = ssh_key("rsa", 2048)
    expires = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=10)).replace(microsecond=0)
    data = assert_json(post(server, "/user/keys", title="rsa", key=key,
                            expires_at=expires.isoformat(), usage_type="auth"), 201)
    assert data["expires_at"] == expires.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    assert data["usage_type"] == "auth"


def test_key_listed_publicly_by_id_and_username(server):
    key, _ = ssh_key()
    data = assert_json(post(server, "/user/keys", title="public", key=key), 201)
    for who in ("1", "root", "ROOT"):
        listed = assert_json(server.request("GET", f"/users/{who}/keys"), 200)
        assert data["id"] in [k["id"] for k in listed]
    one = assert_json(server.request("GET", f"/users/1/keys/{data['id']}"), 200)
    assert one == data


def test_expired_key_is_still_listed(server):
    key, _ = ssh_key()
    data = assert_json(post(server, "/user/keys", title="old", key=key), 201)
    server.sql(f"UPDATE ssh_keys SET expires_at = 1000 WHERE id = {data['id']}")
    listed = assert_json(server.request("GET", "/user/keys", token=server.root_token), 200)
    assert {"id": data["id"], "expires_at": "1970-01-01T00:00:01.000Z"} in [
        {"id": k["id"], "expires_at": k["expires_at"]} for k in listed]


def test_admin_manages_another_users_keys(server, gl, alice):
    key, _ = ssh_key()
    user = gl.users.get(alice["id"], lazy=True)
    created = user.keys.create({"title": "for alice", "key": key})
    assert created.key == publishable(key, "Alice", server)
    assert created.id in [k.id for k in user.keys.list(get_all=True)]
    # alice sees it as her own; root does not
    mine = assert_json(server.request("GET", "/user/keys", token=alice["token"]), 200)
    assert [k["id"] for k in mine] == [created.id]
    assert_json(server.request("GET", f"/user/keys/{created.id}", token=server.root_token),
                404, KEY_NOT_FOUND)
    r = server.request("DELETE", f"/users/{alice['id']}/keys/{created.id}", token=server.root_token)
    assert r.status_code == 204
    assert_json(server.request("GET", "/user/keys", token=alice["token"]), 200, [])


def test_user_cannot_touch_another_users_key(server, alice):
    key, _ = ssh_key()
    root_key = assert_json(post(server, "/user/keys", title="root's", key=key), 201)
    for method in ("GET", "DELETE"):
        assert_json(server.request(method, f"/user/keys/{root_key['id']}", token=alice["token"]),
                    404, KEY_NOT_FOUND)
    # a non-admin cannot use the per-user routes
    key2, _ = ssh_key()
    assert_json(post(server, "/users/1/keys", token=alice["token"], title="x", key=key2), 403, FORBIDDEN)
    assert_json(server.request("DELETE", f"/users/1/keys/{root_key['id']}", token=alice["token"]),
                403, FORBIDDEN)
    assert_json(server.request("GET", f"/users/1/keys/{root_key['id']}"), 200)


# ---- SSH keys: bad input ---------------------------------------------------------


def test_invalid_key(server):
    for bad in ("garbage", "ssh-rsa AAAAB3NzaC1yc2E= x", "ssh-ed25519 bm90IGEga2V5"):
        assert_json(post(server, "/user/keys", title="bad", key=bad), 400,
                    {"message": {"key": ["is invalid"]}})
    key, _ = ssh_key()
    assert_json(post(server, "/user/keys", title="bad", key=key.replace("ssh-ed25519", "ssh-rsa")),
                400, {"message": {"key": ["is invalid"]}})


def test_duplicate_fingerprint_anywhere_in_tenant(server, alice):
    key, _ = ssh_key()
    assert_json(post(server, "/user/keys", title="first", key=key), 201)
    assert_json(post(server, "/user/keys", title="again", key=key), 400,
                {"message": {"fingerprint": TAKEN}})
    # another comment, same key material: same fingerprint; another user: still taken
    other_comment = " ".join(key.split()[:2]) + " someone@else"
    assert_json(post(server, "/user/keys", token=alice["token"], title="alice", key=other_comment),
                400, {"message": {"fingerprint": TAKEN}})


def test_missing_title_and_key(server):
    key, _ = ssh_key()
    assert_json(post(server, "/user/keys", key=key), 400, {"error": "title is missing"})
    assert_json(post(server, "/user/keys", title="t"), 400, {"error": "key is missing"})
    assert_json(post(server, "/user/keys", title="   ", key=key), 400,
                {"message": {"title": ["can't be blank"]}})
    assert_json(post(server, "/user/keys", title="t", key=key, expires_at="not a date"), 400,
                {"error": "expires_at is invalid"})
    assert_json(post(server, "/user/keys", title="t", key=key, usage_type="other"), 400)
    assert_json(post(server, "/user/keys", title="t", key=key, expires_at="2001-01-01T00:00:00Z"),
                400, {"message": {"key": ["has expired"]}})
    # nothing was written by any of these
    assert_json(post(server, "/user/keys", title="t", key=key), 201)


def test_key_restrictions(server):
    def settings(**kw):
        assert_json(server.request("PUT", "/application/settings", token=server.root_token, json=kw), 200)

    rsa, _ = ssh_key("rsa", 1024)
    ed, _ = ssh_key()
    try:
        settings(rsa_key_restriction=2048)
        assert_json(post(server, "/user/keys", title="small", key=rsa), 400,
                    {"message": {"key": ["must be at least 2048 bits"]}})
        settings(ed25519_key_restriction=-1, dsa_key_restriction=-1)
        assert_json(post(server, "/user/keys", title="ed", key=ed), 400,
                    {"message": {"key": ["type is forbidden. Must be RSA, ECDSA, ECDSA_SK, or ED25519_SK"]}})
        settings(rsa_key_restriction=1024)
        assert_json(post(server, "/user/keys", title="ok now", key=rsa), 201)
    finally:
        settings(rsa_key_restriction=0, ed25519_key_restriction=0, dsa_key_restriction=0)
    assert_json(post(server, "/user/keys", title="ed", key=ed), 201)


def test_unknown_ids_and_users(server):
    key, _ = ssh_key()
    assert_json(server.request("GET", "/user/keys/999999", token=server.root_token), 404, KEY_NOT_FOUND)
    assert_json(server.request("GET", "/user/keys/abc", token=server.root_token), 400,
                {"error": "key_id is invalid"})
    assert_json(server.request("GET", "/users/424242/keys"), 404, USER_NOT_FOUND)
    assert_json(server.request("GET", "/users/nobody/keys"), 404, USER_NOT_FOUND)
    assert_json(post(server, "/users/424242/keys", title="t", key=key), 404, USER_NOT_FOUND)
    assert_json(server.request("DELETE", "/users/424242/keys/1", token=server.root_token),
                404, USER_NOT_FOUND)
    assert_json(server.request("DELETE", "/users/1/keys/999999", token=server.root_token),
                404, KEY_NOT_FOUND)


def test_no_token_is_401(server):
    key, _ = ssh_key()
    assert_json(server.request("GET", "/user/keys"), 401, UNAUTHORIZED)
    assert_json(server.request("POST", "/user/keys", json={"title": "t", "key": key}), 401, UNAUTHORIZED)
    assert_json(server.request("GET", "/user/keys/1"), 401, UNAUTHORIZED)
    assert_json(server.request("DELETE", "/user/keys/1"), 401, UNAUTHORIZED)
    assert_json(server.request("POST", "/users/1/keys", json={"title": "t", "key": key}), 401, UNAUTHORIZED)
    for path in ("/user/gpg_keys", "/user/emails", "/users/1/gpg_keys", "/users/1/emails",
                 "/users/1/impersonation_tokens"):
        assert_json(server.request("GET", path), 401, UNAUTHORIZED)


def test_keys_are_paginated(server):
    listed = server.request("GET", "/user/keys", token=server.root_token, params={"per_page": 1})
    assert len(assert_json(listed, 200)) == 1
    assert int(listed.headers["X-Total"]) >= 2
    assert listed.headers["X-Per-Page"] == "1"


# ---- GPG keys ---------------------------------------------------------------------


def test_gpg_keys_with_python_gitlab(server, gl):
    armored = (FIXTURES / "gpg.asc").read_text().strip()
    created = gl.user.gpgkeys.create({"key": armored})
    assert created.key == armored
    assert ISO_MS.match(created.created_at)
    assert set(created.attributes) == {"id", "key", "created_at"}
    assert created.id in [k.id for k in gl.user.gpgkeys.list(get_all=True)]
    assert gl.user.gpgkeys.get(created.id).key == armored
    # duplicate fingerprint
    assert_json(post(server, "/user/gpg_keys", key=armored), 400, {"message": {"fingerprint": TAKEN}})
    created.delete()
    with pytest.raises(gitlab.GitlabGetError) as err:
        gl.user.gpgkeys.get(created.id)
    assert err.value.response_code == 404


def test_gpg_create_201_delete_204_and_bad_input(server):
    armored = gpg_key("Fresh Key <fresh@example.com>")
    data = assert_json(post(server, "/user/gpg_keys", key=armored), 201)
    r = server.request("DELETE", f"/user/gpg_keys/{data['id']}", token=server.root_token)
    assert r.status_code == 204
    assert_json(server.request("DELETE", f"/user/gpg_keys/{data['id']}", token=server.root_token),
                404, GPG_NOT_FOUND)
    assert_json(post(server, "/user/gpg_keys"), 400, {"error": "key is missing"})
    garbage = ["garbage",
               "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nbm9wZQ==\n-----END PGP PUBLIC KEY BLOCK-----",
               (FIXTURES / "ed25519.pub").read_text()]
    for bad in garbage:
        assert_json(post(server, "/user/gpg_keys", key=bad), 400, {"message": {"key": [GPG_INVALID]}})
    assert_json(server.request("GET", "/user/gpg_keys/999999", token=server.root_token), 404, GPG_NOT_FOUND)


def test_admin_gpg_keys_for_another_user(server, gl, alice):
    armored = gpg_key("Alice <alice@example.com>")
    user = gl.users.get(alice["id"], lazy=True)
    created = user.gpgkeys.create({"key": armored})
    assert [k.id for k in user.gpgkeys.list(get_all=True)] == [created.id]
    assert_json(server.request("GET", f"/users/{alice['id']}/gpg_keys/{created.id}",
                               token=server.root_token), 200)
    mine = assert_json(server.request("GET", "/user/gpg_keys", token=alice["token"]), 200)
    assert [k["id"] for k in mine] == [created.id]
    # the same key for root: taken in the tenant
    assert_json(post(server, "/user/gpg_keys", key=armored), 400, {"message": {"fingerprint": TAKEN}})
    # root's own route does not reach alice's key, nor alice's reach root's routes
    assert_json(server.request("GET", f"/user/gpg_keys/{created.id}", token=server.root_token),
                404, GPG_NOT_FOUND)
    assert_json(server.request("GET", "/users/1/gpg_keys", token=alice["token"]), 403, FORBIDDEN)
    assert_json(post(server, "/users/1/gpg_keys", token=alice["token"], key=armored), 403, FORBIDDEN)
    assert_json(server.request("GET", "/users/424242/gpg_keys", token=server.root_token),
                404, USER_NOT_FOUND)
    r = server.request("DELETE", f"/users/{alice['id']}/gpg_keys/{created.id}", token=server.root_token)
    assert r.status_code == 204
    assert_json(server.request("GET", "/user/gpg_keys", token=alice["token"]), 200, [])


# ---- emails -------------------------------------------------------------------------


def test_emails_with_python_gitlab(server, gl):
    created = gl.user.emails.create({"email": "root.second@example.com"})
    assert created.email == "root.second@example.com"
    assert created.confirmed_at is None
    assert created.id in [e.id for e in gl.user.emails.list(get_all=True)]
    assert gl.user.emails.get(created.id).email == "root.second@example.com"
    created.delete()
    assert created.id not in [e.id for e in gl.user.emails.list(get_all=True)]


def test_email_201_204_and_bad_input(server, alice):
    data = assert_json(post(server, "/user/emails", email="  spaced@example.com "), 201)
    assert data == {"id": data["id"], "email": "spaced@example.com", "confirmed_at": None}
    # taken: the same address in any case, by anyone; and users' primary emails
    assert_json(post(server, "/user/emails", email="SPACED@example.com"), 400, {"message": {"email": TAKEN}})
    assert_json(post(server, "/user/emails", token=alice["token"], email="spaced@example.com"),
                400, {"message": {"email": TAKEN}})
    assert_json(post(server, "/user/emails", token=alice["token"], email="Alice@Example.com"),
                400, {"message": {"email": TAKEN}})
    root_email = assert_json(server.request("GET", "/user", token=server.root_token), 200)["email"]
    assert_json(post(server, "/user/emails", token=alice["token"], email=root_email),
                400, {"message": {"email": TAKEN}})
    for bad in ("plain", "a b@example.com", "@example.com", "x@"):
        assert_json(post(server, "/user/emails", email=bad), 400, {"message": {"email": ["is invalid"]}})
    assert_json(post(server, "/user/emails"), 400, {"error": "email is missing"})
    r = server.request("DELETE", f"/user/emails/{data['id']}", token=server.root_token)
    assert r.status_code == 204
    assert_json(server.request("DELETE", f"/user/emails/{data['id']}", token=server.root_token),
                404, EMAIL_NOT_FOUND)
    assert_json(server.request("GET", "/user/emails/999999", token=server.root_token), 404, EMAIL_NOT_FOUND)
    # freed for reuse
    assert_json(post(server, "/user/emails", token=alice["token"], email="spaced@example.com"), 201)


def test_admin_emails_for_another_user(server, gl, alice):
    user = gl.users.get(alice["id"], lazy=True)
    confirmed = user.emails.create({"email": "alice.confirmed@example.com", "skip_confirmation": True})
    assert confirmed.confirmed_at is not None and ISO_MS.match(confirmed.confirmed_at)
    pending = assert_json(post(server, f"/users/{alice['id']}/emails", email="alice.pending@example.com"), 201)
    assert pending["confirmed_at"] is None
    listed = [e.email for e in user.emails.list(get_all=True)]
    assert {"alice.confirmed@example.com", "alice.pending@example.com"} <= set(listed)
    mine = assert_json(server.request("GET", "/user/emails", token=alice["token"]), 200)
    assert {"alice.confirmed@example.com", "alice.pending@example.com"} <= {e["email"] for e in mine}
    # alice cannot reach root's or the admin routes; root's own route does not see alice's
    assert_json(server.request("GET", f"/user/emails/{pending['id']}", token=server.root_token),
                404, EMAIL_NOT_FOUND)
    assert_json(server.request("GET", "/users/1/emails", token=alice["token"]), 403, FORBIDDEN)
    assert_json(post(server, "/users/1/emails", token=alice["token"], email="z@example.com"), 403, FORBIDDEN)
    assert_json(post(server, "/users/424242/emails", email="z@example.com"), 404, USER_NOT_FOUND)
    assert_json(post(server, f"/users/{alice['id']}/emails", email="y@example.com",
                     skip_confirmation="maybe"), 400, {"error": "skip_confirmation is invalid"})
    r = server.request("DELETE", f"/users/{alice['id']}/emails/{pending['id']}", token=server.root_token)
    assert r.status_code == 204
    assert_json(server.request("DELETE", f"/users/{alice['id']}/emails/{pending['id']}",
                               token=server.root_token), 404, EMAIL_NOT_FOUND)


# ---- impersonation tokens -------------------------------------------------------------


def test_impersonation_tokens_with_python_gitlab(server, gl, alice):
    user = gl.users.get(alice["id"], lazy=True)
    created = user.impersonationtokens.create({"name": "act as alice", "scopes": ["api", "read_user"]})
    assert created.impersonation is True
    assert created.active is True and created.revoked is False
    assert created.scopes == ["api", "read_user"]
    secret = created.token
    # the token authenticates as alice
    me = assert_json(server.request("GET", "/user", token=secret), 200)
    assert me["id"] == alice["id"] and me["username"] == "alice"
    listed = user.impersonationtokens.list(get_all=True)
    assert created.id in [t.id for t in listed]
    assert all(not hasattr(t, "token") for t in listed)
    shown = user.impersonationtokens.get(created.id)
    assert shown.impersonation is True and not hasattr(shown, "token")
    # hidden from the personal access token lists, for alice and for the admin
    pats = assert_json(server.request("GET", "/personal_access_tokens", token=alice["token"]), 200)
    assert created.id not in [t["id"] for t in pats]
    pats = assert_json(server.request("GET", "/personal_access_tokens", token=server.root_token,
                                      params={"user_id": alice["id"]}), 200)
    assert created.id not in [t["id"] for t in pats]
    assert_json(server.request("GET", f"/personal_access_tokens/{created.id}", token=alice["token"]), 404)
    # revoke: 204, then revoked=true, active=false, and the token no longer works
    user.impersonationtokens.delete(created.id)
    revoked = assert_json(server.request("GET", f"/users/{alice['id']}/impersonation_tokens/{created.id}",
                                         token=server.root_token), 200)
    assert revoked["revoked"] is True and revoked["active"] is False
    assert server.request("GET", "/user", token=secret).status_code == 401


def test_impersonation_token_states_and_pagination(server, alice):
    path = f"/users/{alice['id']}/impersonation_tokens"
    ids = [assert_json(post(server, path, name=f"t{i}", scopes=["read_user"]), 201)["id"] for i in range(3)]
    r = server.request("DELETE", f"{path}/{ids[0]}", token=server.root_token)
    assert r.status_code == 204 and r.content == b""
    def listed(**params):
        return [t["id"] for t in assert_json(server.request("GET", path, token=server.root_token,
                                                            params=params), 200)]
    assert ids[0] in listed(state="inactive") and ids[0] not in listed(state="active")
    assert ids[1] in listed(state="active") and ids[1] not in listed(state="inactive")
    assert set(ids) <= set(listed(state="all")) and set(ids) <= set(listed())
    page = server.request("GET", path, token=server.root_token, params={"per_page": 2})
    assert len(assert_json(page, 200)) == 2 and page.headers["X-Next-Page"] == "2"
    assert_json(server.request("GET", path, token=server.root_token, params={"state": "bogus"}), 400)


def test_impersonation_token_expires_at_and_bad_input(server, alice):
    path = f"/users/{alice['id']}/impersonation_tokens"
    expires = (today_utc() + dt.timedelta(days=5)).isoformat()
    data = assert_json(post(server, path, name="dated", scopes=["api"], expires_at=expires), 201)
    assert data["expires_at"] == expires and data["token"]
    assert_json(post(server, path, scopes=["api"]), 400, {"error": "name is missing"})
    assert_json(post(server, path, name="x"), 400, {"error": "scopes is missing"})
    assert_json(post(server, path, name="x", scopes=["sudo"]), 400,
                {"error": "scopes does not have a valid value"})
    assert_json(post(server, path, name="x", scopes=["api"], expires_at="someday"), 400,
                {"error": "expires_at is invalid"})
    assert_json(post(server, path, name="x", scopes=["api"], expires_at="2001-01-01"), 400,
                {"message": {"expires_at": ["must be in the future"]}})
    # an expired token stops working
    server.sql(f"UPDATE personal_access_tokens SET expires_at = '2001-01-01' WHERE id = {data['id']}")
    assert server.request("GET", "/user", token=data["token"]).status_code == 401
    listed = assert_json(server.request("GET", path, token=server.root_token, params={"state": "inactive"}), 200)
    assert data["id"] in [t["id"] for t in listed]


def test_impersonation_tokens_admin_only_and_unknown_ids(server, alice):
    assert_json(server.request("GET", "/users/1/impersonation_tokens", token=alice["token"]), 403, FORBIDDEN)
    assert_json(post(server, "/users/1/impersonation_tokens", token=alice["token"],
                     name="x", scopes=["api"]), 403, FORBIDDEN)
    assert_json(server.request("GET", "/users/424242/impersonation_tokens", token=server.root_token),
                404, USER_NOT_FOUND)
    assert_json(post(server, "/users/424242/impersonation_tokens", name="x", scopes=["api"]),
                404, USER_NOT_FOUND)
    path = f"/users/{alice['id']}/impersonation_tokens"
    assert_json(server.request("GET", f"{path}/999999", token=server.root_token), 404, TOKEN_NOT_FOUND)
    assert_json(server.request("DELETE", f"{path}/999999", token=server.root_token), 404, TOKEN_NOT_FOUND)
    # a personal access token is not an impersonation token, and tokens belong to their user
    pat = server.create_token_api(user_id=alice["id"])
    assert_json(server.request("GET", f"{path}/{pat['id']}", token=server.root_token), 404, TOKEN_NOT_FOUND)
    imp = assert_json(post(server, path, name="alice's", scopes=["api"]), 201)
    assert_json(server.request("GET", f"/users/1/impersonation_tokens/{imp['id']}", token=server.root_token),
                404, TOKEN_NOT_FOUND)
