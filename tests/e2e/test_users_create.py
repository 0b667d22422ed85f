"""The Users API, POST /users: every field, form and query encodings, settings that give
defaults, the mails sent, avatars uploaded with the user, and every refusal.

Happy paths go through python-gitlab; every bad input is sent with requests and checked for
GitLab's status and body, and for nothing being written (no row, no mail, no change).
"""

from __future__ import annotations

import secrets

import gitlab
import pytest

from conftest import FORBIDDEN, ISO_MS, PASSWORD, UNAUTHORIZED, assert_json
from conftest import (ADMIN_FIELDS, DROP, USERNAME_RULE, as_form, assert_no_user,
                          create_user, get_user, gravatar, list_users, mail_body, mails_for, png,
                          png_of_size, post_user, post_user_with_avatar, setting, uname,
                          user_payload, user_with_token, usernames, users_named)

# Searches users far more often than GitLab's default search limits allow.
pytestmark = pytest.mark.usefixtures("no_search_rate_limits")


PASSWORD_OPTIONS_MISSING = {
    "error": "password, reset_password, force_random_password are missing, "
             "at least one parameter must be provided"
}


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
        {"provider": "github", "extern_uid": "uid-" + username}
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
    # Accepted and stored; showing the CI minute limits is GitLab EE's.
    assert "shared_runners_minutes_limit" not in body
    assert "extra_shared_runners_minutes_limit" not in body
    # and it was stored, not just echoed
    stored = get_user(server, body["id"])
    assert stored == body


def test_create_with_form_encoding(server):
    username = uname("form")
    data = as_form(user_payload(username, external=True, projects_limit=3))
    r = server.request("POST", "/users", token=server.root_token, data=data)
    body = assert_json(r, 201)
    assert body["username"] == username
    assert body["external"] is True
    assert body["projects_limit"] == 3
    assert body["confirmed_at"] is not None


def test_create_with_query_string(server):
    username = uname("qs")
    params = as_form(user_payload(username))
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
    # the content must be the image type the extension names (magic bytes)
    magic = {"png": b"", "jpg": b"\xff\xd8\xff\xe0", "jpeg": b"\xff\xd8\xff\xe0", "gif": b"GIF89a",
             "bmp": b"BM", "tiff": b"II*\x00", "ico": b"\x00\x00\x01\x00",
             "webp": b"RIFF\x00\x00\x00\x00WEBPVP8 "}[filename.rsplit(".", 1)[1].lower()]
    image = magic + png() if magic else png()
    r = post_user_with_avatar(server, filename, image, "application/octet-stream")
    body = assert_json(r, 201)
    assert body["avatar_url"].startswith(
        f"{server.url}/uploads/-/system/user/avatar/{body['id']}/")
    assert server.request("GET", body["avatar_url"]).content == image


def test_create_with_avatar_of_exactly_200_kib(server):
    image = png_of_size(200 * 1024)
    r = post_user_with_avatar(server, "big.png", image)
    body = assert_json(r, 201)
    assert server.request("GET", body["avatar_url"]).content == image


def test_create_avatar_filename_cannot_escape(server):
    image = png()
    r = post_user_with_avatar(server, "../../../escape.png", image)
    body = assert_json(r, 201)
    assert ".." not in body["avatar_url"]
    assert server.request("GET", body["avatar_url"]).content == image
    assert not any(p.name == "escape.png" for p in server.data_dir.parent.glob("*"))
    assert not any(p.name == "escape.png" for p in server.data_dir.glob("*"))


def test_create_avatar_filename_with_spaces_is_servable(server):
    image = png()
    r = post_user_with_avatar(server, "my face.png", image)
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
    r = post_user_with_avatar(server, filename, png(), "application/octet-stream", body=body)
    err = assert_json(r, 400)
    assert list(err) == ["message"] and list(err["message"]) == ["avatar"], err
    assert err["message"]["avatar"] and all(isinstance(m, str) for m in err["message"]["avatar"])
    assert_no_user(server, body["username"], body["email"])


def test_create_avatar_too_big(server):
    body = user_payload(skip_confirmation=DROP)
    r = post_user_with_avatar(server, "big.png", png_of_size(200 * 1024 + 1), body=body)
    err = assert_json(r, 400)
    assert list(err["message"]) == ["avatar"], err
    assert_no_user(server, body["username"], body["email"])


def test_create_failed_avatar_leaves_no_file(server):
    before = sorted(p for p in server.data_dir.rglob("*") if p.is_file() and "uploads" in p.parts)
    r = post_user_with_avatar(server, "x.exe", b"MZ" + b"\x00" * 100)
    assert r.status_code == 400
    after = sorted(p for p in server.data_dir.rglob("*") if p.is_file() and "uploads" in p.parts)
    assert after == before


def test_create_as_non_admin_is_403(server, non_admin):
    body = user_payload(skip_confirmation=DROP)
    assert_json(post_user(server, body, token=non_admin["token"]), 403, FORBIDDEN)
    assert_no_user(server, body["username"], body["email"])


def test_create_as_non_admin_python_gitlab(server, non_admin):
    gla = server.gitlab(non_admin["token"])
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
