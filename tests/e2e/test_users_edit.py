"""The Users API, changing users: PUT /users/:id (every field, identities, avatars, and every
refusal changing nothing), uploaded avatars and the avatar service, and
DELETE /users/:id/identities/:provider.

Happy paths go through python-gitlab; every bad input is sent with requests and checked for
GitLab's status and body, and for nothing being written (no row, no mail, no change).
"""

from __future__ import annotations

import secrets

import gitlab
import pytest

from conftest import FORBIDDEN, UNAUTHORIZED, USER_NOT_FOUND, assert_json
from conftest import (USERNAME_RULE, create_user, get_user, gravatar, list_users, mail_body,
                          mails_for, png, png_of_size, post_user_with_avatar, put_user, setting,
                          uname, user_with_token, usernames, users_named)

# Searches users far more often than GitLab's default search limits allow.
pytestmark = pytest.mark.usefixtures("no_search_rate_limits")


IDENTITY_NOT_FOUND = {"message": "404 Identity Not Found"}


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
    # The CI minute limits are accepted and stored; showing them is GitLab EE's.
    ee_only = {"shared_runners_minutes_limit", "extra_shared_runners_minutes_limit"}
    updated = assert_json(put_user(server, body["id"], json=changes), 200)
    assert not ee_only & set(updated)
    for key, value in changes.items():
        if key in ee_only:
            continue
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
        {"provider": "github", "extern_uid": new_uid}]


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
    # The second is a GIF: an avatar's content must be the type its name says (GitLab's
    # UploadTypeCheck).
    first, second = png(), b"GIF89a" + png()[8:]
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


def test_update_as_non_admin_is_403(server, non_admin):
    body = create_user(server)
    assert_json(put_user(server, body["id"], token=non_admin["token"], json={"bio": "x"}), 403,
                FORBIDDEN)
    # not even their own record
    assert_json(put_user(server, non_admin["id"], token=non_admin["token"], json={"admin": True}), 403,
                FORBIDDEN)
    assert get_user(server, non_admin["id"])["is_admin"] is False
    assert get_user(server, body["id"])["bio"] == ""


def test_update_without_token_is_401(server, non_admin):
    r = server.request("PUT", f"/users/{non_admin['id']}", json={"bio": "x"})
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


def test_avatar_served_without_auth_on_any_view(server, non_admin):
    image = png()
    r = post_user_with_avatar(server, "pic.png", image)
    body = assert_json(r, 201)
    public = assert_json(server.request("GET", f"/users/{body['id']}"), 200)
    assert public["avatar_url"] == body["avatar_url"]
    listed = list_users(server, token=non_admin["token"], username=body["username"])[0]
    assert listed["avatar_url"] == body["avatar_url"]
    assert server.request("GET", body["avatar_url"]).content == image


def test_avatar_url_follows_host_header(server):
    r = post_user_with_avatar(server, "pic.png", png())
    body = assert_json(r, 201)
    r = server.request("GET", f"/users/{body['id']}", host=f"alias.test:{server.port}")
    url = assert_json(r, 200)["avatar_url"]
    assert url.startswith(f"http://alias.test:{server.port}/uploads/-/system/user/avatar/")


def test_avatar_wrong_filename_or_user_is_404(server):
    r = post_user_with_avatar(server, "pic.png", png())
    body = assert_json(r, 201)
    base = "/uploads/-/system/user/avatar"
    assert server.request("GET", f"{server.url}{base}/{body['id']}/other.png").status_code == 404
    assert server.request("GET", f"{server.url}{base}/1/pic.png").status_code == 404
    assert server.request("GET", f"{server.url}{base}/999999/pic.png").status_code == 404


def test_avatar_gone_after_user_deleted(server):
    r = post_user_with_avatar(server, "pic.png", png())
    body = assert_json(r, 201)
    assert server.request("DELETE", f"/users/{body['id']}", token=server.root_token
                          ).status_code == 204
    assert server.request("GET", body["avatar_url"]).status_code == 404


def test_avatar_service_disabled_gives_null(server, non_admin):
    r = post_user_with_avatar(server, "pic.png", png())
    uploaded = assert_json(r, 201)
    with setting(server, "avatar_service_enabled", False, True):
        assert get_user(server, non_admin["id"])["avatar_url"] is None
        anon = assert_json(server.request("GET", f"/users/{non_admin['id']}"), 200)
        assert anon["avatar_url"] is None
        listed = list_users(server, token=non_admin["token"], username=non_admin["username"])[0]
        assert listed["avatar_url"] is None
        me = assert_json(server.request("GET", "/user", token=non_admin["token"]), 200)
        assert me["avatar_url"] is None
        # an uploaded avatar does not depend on the avatar service
        assert get_user(server, uploaded["id"])["avatar_url"] == uploaded["avatar_url"]
    assert get_user(server, non_admin["id"])["avatar_url"] == gravatar(non_admin["email"])

# ============================================================================
# DELETE /users/:id/identities/:provider
# ============================================================================


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


def test_delete_identity_as_non_admin(server, non_admin):
    body = create_user(server, extern_uid="e-" + secrets.token_hex(3), provider="github")
    r = server.request("DELETE", f"/users/{body['id']}/identities/github",
                       token=non_admin["token"])
    assert_json(r, 403, FORBIDDEN)
    assert len(get_user(server, body["id"])["identities"]) == 1
