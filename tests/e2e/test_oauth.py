"""OAuth 2.0 provider end to end: every flow through a real OAuth client library (authlib),
the web pages it needs (sign-in, applications, consent) through a requests session, then
REST calls with the tokens through python-gitlab; and every attack the issue lists."""

from __future__ import annotations

import base64
import concurrent.futures
import hashlib
import re
import secrets
import urllib.parse

import pytest
import requests
from authlib.integrations.requests_client import OAuth2Session
from authlib.oauth2.rfc7636 import create_s256_code_challenge

import gitlab
from conftest import PASSWORD, assert_json, csrf_of, make_user, other_tenant, sign_in

REDIRECT = "https://client.example/callback"
GRANT_ERROR = {
    "error": "invalid_grant",
    "error_description": "The provided authorization grant is invalid, expired, revoked, does "
    "not match the redirection URI used in the authorization request, or was issued to "
    "another client.",
}
INVALID_CLIENT = {
    "error": "invalid_client",
    "error_description": "Client authentication failed due to unknown client, no client "
    "authentication included, or unsupported authentication method.",
}
INVALID_SCOPE = {
    "error": "invalid_scope",
    "error_description": "The requested scope is invalid, unknown, or malformed.",
}


# ---- helpers ----------------------------------------------------------------------------


def admin_app(server, scopes="api read_user", redirect=REDIRECT, confidential=True) -> dict:
    r = server.request("POST", "/applications", token=server.root_token, data={
        "name": "app-" + secrets.token_hex(3), "redirect_uri": redirect, "scopes": scopes,
        "confidential": str(confidential).lower(),
    })
    return assert_json(r, 201)


def oauth_client(app: dict, **kw) -> OAuth2Session:
    return OAuth2Session(app["application_id"], app.get("secret"), **kw)


def approve(server, session: requests.Session, url: str) -> str:
    """Opens an authorization URL as the signed-in user, approves if asked; the Location."""
    r = session.get(url, allow_redirects=False)
    if r.status_code == 200:
        form = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', r.text))
        form = {k: v.replace("&amp;", "&") for k, v in form.items() if k != "_method"}
        r = session.post(server.url + "/oauth/authorize", data=form, allow_redirects=False)
    assert r.status_code == 302, (r.status_code, r.text)
    return r.headers["Location"]


def query_of(location: str) -> dict:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query))


def fragment_of(location: str) -> dict:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).fragment))


def verifier() -> str:
    return secrets.token_urlsafe(48)[:64]


def s256(v: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(v.encode()).digest()).rstrip(b"=").decode()


def post_token(server, data: dict, auth=None, host=None) -> requests.Response:
    headers = {"Host": f"{host}:{server.port}"} if host else {}
    return requests.post(server.url + "/oauth/token", data=data, auth=auth, headers=headers,
                         timeout=30)


def code_for(server, session, app, scope="api", **extra) -> str:
    params = {"client_id": app["application_id"], "redirect_uri": REDIRECT,
              "response_type": "code", "scope": scope, "state": "st", **extra}
    location = approve(server, session, server.url + "/oauth/authorize?"
                       + urllib.parse.urlencode(params))
    return query_of(location)["code"]


def exchange(server, app, code, **extra) -> requests.Response:
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, **extra}
    return post_token(server, data, auth=(app["application_id"], app["secret"]))


@pytest.fixture(scope="module")
def user(server):
    return make_user(server)[0]


@pytest.fixture(scope="module")
def browser(server, user) -> requests.Session:
    return sign_in(server, user.username)


# ---- flows through authlib -----------------------------------------------------------------


def test_code_flow_with_pkce_then_python_gitlab(server, user, browser):
    app = admin_app(server)
    client = oauth_client(app, scope="api", redirect_uri=REDIRECT, code_challenge_method="S256")
    v = verifier()
    url, state = client.create_authorization_url(server.url + "/oauth/authorize", code_verifier=v)
    location = approve(server, browser, url)
    assert location.startswith(REDIRECT + "?")
    assert query_of(location)["state"] == state
    token = client.fetch_token(server.url + "/oauth/token", authorization_response=location,
                               code_verifier=v)
    assert token["token_type"].lower() == "bearer"
    assert token["expires_in"] == 7200
    assert token["scope"] == "api"
    assert re.fullmatch(r"[0-9a-f]{64}", token["access_token"])
    assert token["refresh_token"] and isinstance(token["created_at"], int)
    gl = gitlab.Gitlab(server.url, oauth_token=token["access_token"])
    gl.auth()
    assert gl.user.username == user.username
    # query parameter form as well
    r = requests.get(server.api_url + "/user", params={"access_token": token["access_token"]})
    assert r.status_code == 200 and r.json()["id"] == user.id


def test_code_flow_without_pkce_and_auto_approval(server, user, browser):
    app = admin_app(server)
    client = oauth_client(app, scope="read_user", redirect_uri=REDIRECT)
    url, _ = client.create_authorization_url(server.url + "/oauth/authorize")
    first = browser.get(url, allow_redirects=False)
    assert first.status_code == 200 and "read_user" in first.text
    assert first.headers["X-Frame-Options"] == "DENY"
    assert first.headers["Referrer-Policy"] == "no-referrer"
    location = approve(server, browser, url)
    token = client.fetch_token(server.url + "/oauth/token", authorization_response=location)
    # read_user reads the user but cannot write
    r = requests.get(server.api_url + "/user",
                     headers={"Authorization": f"Bearer {token['access_token']}"})
    assert r.status_code == 200
    r = requests.post(server.api_url + "/user/keys", data={"title": "x", "key": "y"},
                      headers={"Authorization": f"Bearer {token['access_token']}"})
    assert r.status_code == 403 and r.json()["error"] == "insufficient_scope"
    # approved with the same scopes before: no consent page the second time
    url2, _ = client.create_authorization_url(server.url + "/oauth/authorize")
    again = browser.get(url2, allow_redirects=False)
    assert again.status_code == 302 and "code=" in again.headers["Location"]


def test_implicit_flow(server, user, browser):
    app = admin_app(server, confidential=False)
    client = OAuth2Session(app["application_id"], scope="api", redirect_uri=REDIRECT)
    url, state = client.create_authorization_url(server.url + "/oauth/authorize",
                                                 response_type="token")
    location = approve(server, browser, url)
    frag = fragment_of(location)
    assert frag["state"] == state and frag["token_type"].lower() == "bearer"
    assert frag["expires_in"] == "7200" and "code" not in query_of(location)
    token = client.token_from_fragment(location)
    info = requests.get(server.url + "/oauth/token/info",
                        params={"access_token": token["access_token"]})
    assert info.json()["application"]["uid"] == app["application_id"]
    r = requests.get(server.api_url + "/user",
                     headers={"Authorization": f"Bearer {token['access_token']}"})
    assert r.status_code == 200 and r.json()["id"] == user.id


def test_implicit_flow_can_be_turned_off(server, browser):
    app = admin_app(server, confidential=False)
    r = server.request("PUT", "/application/settings", token=server.root_token,
                       json={"oauth_implicit_grant_enabled": False})
    assert_json(r, 200)
    try:
        meta = requests.get(server.url + "/.well-known/oauth-authorization-server").json()
        assert "token" not in meta["response_types_supported"]
        url = server.url + "/oauth/authorize?" + urllib.parse.urlencode({
            "client_id": app["application_id"], "redirect_uri": REDIRECT,
            "response_type": "token", "state": "s1"})
        r = browser.get(url, allow_redirects=False)
        assert r.status_code == 400 and "Location" not in r.headers
        assert "unsupported_response_type" in r.text
    finally:
        server.request("PUT", "/application/settings", token=server.root_token,
                       json={"oauth_implicit_grant_enabled": True})


def test_password_grant(server, user):
    app = admin_app(server)
    client = oauth_client(app)
    token = client.fetch_token(server.url + "/oauth/token", username=user.username,
                               password=PASSWORD)
    assert token["scope"] == "api" and token["expires_in"] == 7200
    assert "refresh_token" not in token and "created_at" not in token
    gl = gitlab.Gitlab(server.url, oauth_token=token["access_token"])
    gl.auth()
    assert gl.user.id == user.id
    # by email too; a wrong password is invalid_grant
    by_email = client.fetch_token(server.url + "/oauth/token", username=user.email,
                                  password=PASSWORD)
    assert by_email["access_token"] != token["access_token"]
    r = post_token(server, {"grant_type": "password", "username": user.username,
                            "password": "wrong"}, auth=(app["application_id"], app["secret"]))
    assert_json(r, 400, GRANT_ERROR)
    assert r.headers["Cache-Control"] == "no-store"


def test_password_grant_refusals(server):
    app = admin_app(server)
    auth = (app["application_id"], app["secret"])
    blocked, _ = make_user(server)
    server.request("POST", f"/users/{blocked.id}/block", token=server.root_token)
    deactivated, _ = make_user(server)
    server.sql(f"UPDATE users SET state = 'deactivated' WHERE id = {deactivated.id}")
    two_factor, _ = make_user(server)
    server.sql(f"UPDATE users SET two_factor_enabled = 1 WHERE id = {two_factor.id}")
    for u in (blocked, deactivated, two_factor):
        r = post_token(server, {"grant_type": "password", "username": u.username,
                                "password": PASSWORD}, auth=auth)
        assert_json(r, 400, GRANT_ERROR)
    # no client authentication at all
    r = post_token(server, {"grant_type": "password", "username": "x", "password": "y"})
    assert_json(r, 401, INVALID_CLIENT)
    assert r.headers["WWW-Authenticate"].startswith("Bearer")
    # a scope the application does not have
    r = post_token(server, {"grant_type": "password", "username": blocked.username,
                            "password": PASSWORD, "scope": "sudo"}, auth=auth)
    assert_json(r, 400, INVALID_SCOPE)


def sign_in_alert(server, login: str, password: str) -> tuple[int, str]:
    """The status and the alert of a web sign-in attempt."""
    s = requests.Session()
    page = s.get(server.url + "/users/sign_in")
    r = s.post(server.url + "/users/sign_in", allow_redirects=False, data={
        "authenticity_token": csrf_of(page.text), "user[login]": login,
        "user[password]": password})
    alert = re.search(r'role="alert">([^<]*)<', r.text)
    return r.status_code, alert.group(1) if alert else ""


def test_lockout_after_ten_failures(server):
    u, _ = make_user(server)
    app = admin_app(server)
    auth = (app["application_id"], app["secret"])
    for _ in range(10):
        r = post_token(server, {"grant_type": "password", "username": u.username,
                                "password": "nope"}, auth=auth)
        assert_json(r, 400, GRANT_ERROR)
    # locked: even the right password is refused, on the token endpoint and the web page,
    # with the answer of a wrong password (the lock must not reveal that the account exists)
    r = post_token(server, {"grant_type": "password", "username": u.username,
                            "password": PASSWORD}, auth=auth)
    assert_json(r, 400, GRANT_ERROR)
    assert sign_in_alert(server, u.username, PASSWORD) == (401, "Invalid login or password.")
    shown = assert_json(server.request("GET", f"/users/{u.id}", token=server.root_token), 200)
    assert shown["locked"] is True
    # after the lock time (10 minutes, aged in the database) the password works again
    server.sql(f"UPDATE users SET locked_until = 1 WHERE id = {u.id}")
    r = post_token(server, {"grant_type": "password", "username": u.username,
                            "password": PASSWORD}, auth=auth)
    assert r.status_code == 200


def test_locked_wrong_and_unknown_accounts_look_the_same(server):
    """Ten failures lock a real account; an unknown one never locks. Whatever the attacker
    tries, the web page and the password grant answer all three cases alike."""
    u, _ = make_user(server)
    app = admin_app(server)
    auth = (app["application_id"], app["secret"])
    unknown = "nobody-" + secrets.token_hex(4)
    web, grant = [], []
    for _ in range(12):
        for login in (u.username, unknown):
            web.append(sign_in_alert(server, login, "wrong-password"))
            r = post_token(server, {"grant_type": "password", "username": login,
                                    "password": "wrong-password"}, auth=auth)
            grant.append((r.status_code, r.json()))
    assert set(web) == {(401, "Invalid login or password.")}
    assert all(g == (400, GRANT_ERROR) for g in grant)
    locked = server.sql(f"SELECT locked_until FROM users WHERE id = {u.id}")[0][0]
    assert locked is not None
    assert sign_in_alert(server, u.username, PASSWORD) == sign_in_alert(server, unknown, PASSWORD)


def test_refresh_rotation(server, browser):
    app = admin_app(server)
    client = oauth_client(app, scope="api", redirect_uri=REDIRECT)
    url, _ = client.create_authorization_url(server.url + "/oauth/authorize")
    first = client.fetch_token(server.url + "/oauth/token",
                               authorization_response=approve(server, browser, url))
    second = client.refresh_token(server.url + "/oauth/token",
                                  refresh_token=first["refresh_token"])
    assert second["access_token"] != first["access_token"]
    assert second["refresh_token"] != first["refresh_token"]
    old = requests.get(server.api_url + "/user",
                       headers={"Authorization": f"Bearer {first['access_token']}"})
    assert old.status_code == 401
    new = requests.get(server.api_url + "/user",
                       headers={"Authorization": f"Bearer {second['access_token']}"})
    assert new.status_code == 200
    # the old refresh token is spent
    r = post_token(server, {"grant_type": "refresh_token",
                            "refresh_token": first["refresh_token"]},
                   auth=(app["application_id"], app["secret"]))
    assert_json(r, 400, GRANT_ERROR)


def test_refresh_token_replay_revokes_the_chain(server, browser):
    """Hydra's reuse detection: a rotated refresh token that comes back means a copy exists,
    so every token of its chain is revoked, the newest one included."""
    app = admin_app(server)
    auth = (app["application_id"], app["secret"])
    first = assert_json(exchange(server, app, code_for(server, browser, app)), 200)
    second = assert_json(post_token(server, {"grant_type": "refresh_token",
                                             "refresh_token": first["refresh_token"]},
                                    auth=auth), 200)
    third = assert_json(post_token(server, {"grant_type": "refresh_token",
                                            "refresh_token": second["refresh_token"]},
                                   auth=auth), 200)
    # another application presenting the stolen token revokes nothing
    other = admin_app(server)
    r = post_token(server, {"grant_type": "refresh_token", "refresh_token": first["refresh_token"]},
                   auth=(other["application_id"], other["secret"]))
    assert_json(r, 400, GRANT_ERROR)
    bearer = {"Authorization": f"Bearer {third['access_token']}"}
    assert requests.get(server.api_url + "/user", headers=bearer).status_code == 200
    # the replay by the right client: refused, and the live tokens of the chain die with it
    r = post_token(server, {"grant_type": "refresh_token", "refresh_token": first["refresh_token"]},
                   auth=auth)
    assert_json(r, 400, GRANT_ERROR)
    assert requests.get(server.api_url + "/user", headers=bearer).status_code == 401
    info = requests.get(server.url + "/oauth/token/info", headers=bearer)
    assert_json(info, 401)["error_description"] == "The access token was revoked"
    r = post_token(server, {"grant_type": "refresh_token", "refresh_token": third["refresh_token"]},
                   auth=auth)
    assert_json(r, 400, GRANT_ERROR)
    # another chain of the same user and application is untouched
    separate = assert_json(exchange(server, app, code_for(server, browser, app)), 200)
    r = post_token(server, {"grant_type": "refresh_token",
                            "refresh_token": separate["refresh_token"]}, auth=auth)
    assert_json(r, 200)


def test_concurrent_refresh_has_one_winner(server, browser):
    app = admin_app(server)
    code = code_for(server, browser, app)
    token = assert_json(exchange(server, app, code), 200)
    data = {"grant_type": "refresh_token", "refresh_token": token["refresh_token"]}
    auth = (app["application_id"], app["secret"])
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        results = list(pool.map(lambda _: post_token(server, data, auth=auth), range(6)))
    statuses = sorted(r.status_code for r in results)
    assert statuses == [200, 400, 400, 400, 400, 400], statuses
    for r in results:
        if r.status_code == 400:
            assert r.json()["error"] == "invalid_grant"
    # the losers presented a spent refresh token: reuse, so the winner's token is revoked too
    won = next(r for r in results if r.status_code == 200).json()
    r = requests.get(server.api_url + "/user",
                     headers={"Authorization": f"Bearer {won['access_token']}"})
    assert r.status_code == 401


def test_token_info(server, browser, user):
    app = admin_app(server)
    token = assert_json(exchange(server, app, code_for(server, browser, app)), 200)
    r = requests.get(server.url + "/oauth/token/info",
                     headers={"Authorization": f"Bearer {token['access_token']}"})
    body = assert_json(r, 200)
    assert body["resource_owner_id"] == user.id
    assert body["scope"] == ["api"] and body["scopes"] == ["api"]
    assert 7190 <= body["expires_in"] <= 7200 and body["expires_in_seconds"] == body["expires_in"]
    assert body["application"] == {"uid": app["application_id"]}
    assert body["created_at"] == token["created_at"]
    r = requests.get(server.url + "/oauth/token/info", params={"access_token": "nope"})
    assert_json(r, 401, {"error": "invalid_token",
                         "error_description": "The access token is invalid",
                         "state": "unauthorized"})
    assert r.headers["WWW-Authenticate"].startswith("Bearer")
    r = requests.get(server.url + "/oauth/token/info")
    assert r.status_code == 401


def test_revoke(server, browser):
    app = admin_app(server)
    client = oauth_client(app)
    token = assert_json(exchange(server, app, code_for(server, browser, app)), 200)
    other = admin_app(server)
    # another client may not revoke it
    r = requests.post(server.url + "/oauth/revoke", data={"token": token["access_token"]},
                      auth=(other["application_id"], other["secret"]))
    assert_json(r, 403, {"error": "unauthorized_client",
                         "error_description": "You are not authorized to revoke this token"})
    r = client.revoke_token(server.url + "/oauth/revoke", token=token["access_token"],
                            token_type_hint="access_token")
    assert r.status_code == 200 and r.json() == {}
    r = requests.get(server.api_url + "/user",
                     headers={"Authorization": f"Bearer {token['access_token']}"})
    assert r.status_code == 401
    info = requests.get(server.url + "/oauth/token/info",
                        params={"access_token": token["access_token"]})
    assert_json(info, 401)["error_description"] == "The access token was revoked"
    # its refresh token went with it; unknown tokens are fine (RFC 7009)
    r = post_token(server, {"grant_type": "refresh_token", "refresh_token": token["refresh_token"]},
                   auth=(app["application_id"], app["secret"]))
    assert r.status_code == 400
    r = client.revoke_token(server.url + "/oauth/revoke", token="unknown")
    assert r.status_code == 200
    r = requests.post(server.url + "/oauth/revoke", data={"token": "x"},
                      auth=(app["application_id"], "wrong"))
    assert_json(r, 401, INVALID_CLIENT)


def test_introspect(server, browser, user):
    app = admin_app(server)
    client = oauth_client(app)
    token = assert_json(exchange(server, app, code_for(server, browser, app)), 200)
    r = client.introspect_token(server.url + "/oauth/introspect", token=token["access_token"])
    body = r.json()
    assert body["active"] is True and body["scope"] == "api"
    assert body["client_id"] == app["application_id"] and body["sub"] == str(user.id)
    assert body["exp"] - body["iat"] == 7200
    r = client.introspect_token(server.url + "/oauth/introspect", token="unknown")
    assert r.json() == {"active": False}
    other = admin_app(server)
    r = requests.post(server.url + "/oauth/introspect", data={"token": token["access_token"]},
                      auth=(other["application_id"], other["secret"]))
    assert r.json() == {"active": False}
    r = requests.post(server.url + "/oauth/introspect", data={"token": token["access_token"]})
    assert_json(r, 401, INVALID_CLIENT)


def test_metadata(server):
    for path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
        body = assert_json(requests.get(server.url + path), 200)
        assert body["issuer"] == server.url
        assert body["token_endpoint"] == server.url + "/oauth/token"
        assert body["authorization_endpoint"] == server.url + "/oauth/authorize"
        assert body["revocation_endpoint"] == server.url + "/oauth/revoke"
        assert body["introspection_endpoint"] == server.url + "/oauth/introspect"
        assert "S256" in body["code_challenge_methods_supported"]
        assert "api" in body["scopes_supported"]


@pytest.mark.filterwarnings("ignore:authlib.jose module is deprecated")
def test_openid_connect(server, user, browser):
    from authlib.jose import JsonWebKey, jwt

    app = admin_app(server, scopes="openid profile email api")
    nonce = secrets.token_hex(8)
    code = code_for(server, browser, app, scope="openid profile email", nonce=nonce)
    token = assert_json(exchange(server, app, code), 200)
    meta = requests.get(server.url + "/.well-known/openid-configuration").json()
    assert meta["jwks_uri"] == server.url + "/oauth/discovery/keys"
    assert meta["id_token_signing_alg_values_supported"] == ["RS256"]
    jwks = assert_json(requests.get(meta["jwks_uri"]), 200)
    assert [k["alg"] for k in jwks["keys"]] == ["RS256"]
    claims = jwt.decode(token["id_token"], JsonWebKey.import_key_set(jwks))
    claims.validate()
    assert claims["iss"] == server.url and claims["aud"] == app["application_id"]
    assert claims["sub"] == str(user.id) and claims["nonce"] == nonce
    assert claims["preferred_username"] == user.username and claims["email"] == user.email
    assert 0 < claims["exp"] - claims["iat"] <= 120
    # a tampered token does not verify
    head, body, sig = token["id_token"].split(".")
    with pytest.raises(Exception):
        jwt.decode(f"{head}.{body}.{sig[:-4]}AAAA", JsonWebKey.import_key_set(jwks))
    # userinfo
    info = requests.get(meta["userinfo_endpoint"],
                        headers={"Authorization": f"Bearer {token['access_token']}"})
    body = assert_json(info, 200)
    assert body["sub"] == str(user.id) and body["nickname"] == user.username
    assert "nonce" not in body
    # the key stays the same; a refresh brings a new ID token
    assert requests.get(meta["jwks_uri"]).json() == jwks
    refreshed = assert_json(post_token(server, {"grant_type": "refresh_token",
                                                "refresh_token": token["refresh_token"]},
                                       auth=(app["application_id"], app["secret"])), 200)
    assert jwt.decode(refreshed["id_token"], JsonWebKey.import_key_set(jwks))["sub"] == str(user.id)
    # without the openid scope: no ID token, userinfo refused
    plain = assert_json(exchange(server, app, code_for(server, browser, app, scope="api")), 200)
    assert "id_token" not in plain
    r = requests.get(meta["userinfo_endpoint"],
                     headers={"Authorization": f"Bearer {plain['access_token']}"})
    assert_json(r, 403)["error"] == "insufficient_scope"
    r = requests.get(meta["userinfo_endpoint"], headers={"Authorization": "Bearer nope"})
    assert_json(r, 401)["error"] == "invalid_token"
    assert r.headers["WWW-Authenticate"].startswith("Bearer")


# ---- attacks --------------------------------------------------------------------------------


def test_pkce_downgrades(server, browser):
    app = admin_app(server)
    v = verifier()
    code = code_for(server, browser, app, code_challenge=s256(v), code_challenge_method="S256")
    # the verifier is required for a code issued with a challenge
    r = exchange(server, app, code)
    assert_json(r, 400, {"error": "invalid_request",
                         "error_description": "Missing required parameter: code_verifier."})
    # wrong verifier, and a verifier of the wrong shape
    assert_json(exchange(server, app, code, code_verifier=verifier()), 400, GRANT_ERROR)
    assert_json(exchange(server, app, code, code_verifier="short"), 400, GRANT_ERROR)
    assert exchange(server, app, code, code_verifier=v).status_code == 200
    # a verifier for a code issued without a challenge
    plain_code = code_for(server, browser, app)
    assert_json(exchange(server, app, plain_code, code_verifier=v), 400, GRANT_ERROR)
    # plain method works; an unknown method is refused at authorization
    code = code_for(server, browser, app, code_challenge=v, code_challenge_method="plain")
    assert exchange(server, app, code, code_verifier=v).status_code == 200
    url = server.url + "/oauth/authorize?" + urllib.parse.urlencode({
        "client_id": app["application_id"], "redirect_uri": REDIRECT, "response_type": "code",
        "state": "z", "code_challenge": s256(v), "code_challenge_method": "S512"})
    r = browser.get(url, allow_redirects=False)
    assert r.status_code == 400 and "Location" not in r.headers
    assert "invalid_request" in r.text and "code_challenge_method" in r.text


def test_code_replay_revokes_tokens(server, browser):
    app = admin_app(server)
    code = code_for(server, browser, app)
    token = assert_json(exchange(server, app, code), 200)
    refreshed = assert_json(post_token(server, {"grant_type": "refresh_token",
                                                "refresh_token": token["refresh_token"]},
                                       auth=(app["application_id"], app["secret"])), 200)
    assert_json(exchange(server, app, code), 400, GRANT_ERROR)
    for access in (token["access_token"], refreshed["access_token"]):
        r = requests.get(server.api_url + "/user", headers={"Authorization": f"Bearer {access}"})
        assert r.status_code == 401


def test_expired_code(server, browser):
    app = admin_app(server)
    code = code_for(server, browser, app)
    digest = hashlib.sha256(code.encode()).hexdigest()
    server.sql(f"UPDATE oauth_access_grants SET expires_at = 1 WHERE code_digest = '{digest}'")
    assert_json(exchange(server, app, code), 400, GRANT_ERROR)


def test_expired_access_token(server, browser):
    app = admin_app(server)
    token = assert_json(exchange(server, app, code_for(server, browser, app)), 200)
    digest = hashlib.sha256(token["access_token"].encode()).hexdigest()
    server.sql(f"UPDATE oauth_access_tokens SET expires_at = 1 WHERE token_digest = '{digest}'")
    r = requests.get(server.api_url + "/user",
                     headers={"Authorization": f"Bearer {token['access_token']}"})
    assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("Bearer")
    info = requests.get(server.url + "/oauth/token/info",
                        params={"access_token": token["access_token"]})
    assert_json(info, 401)["error_description"] == "The access token expired"
    # the refresh token still renews it
    r = post_token(server, {"grant_type": "refresh_token", "refresh_token": token["refresh_token"]},
                   auth=(app["application_id"], app["secret"]))
    assert r.status_code == 200


def test_redirect_uri_mismatch_renders_error_page(server, browser):
    app = admin_app(server, redirect="https://client.example/callback\nhttp://127.0.0.1/cb")
    base = {"client_id": app["application_id"], "response_type": "code", "state": "s"}
    tricks = [
        "https://client.example/callback/evil",
        "https://client.example/callbackx",
        "https://client.example.evil.com/callback",
        "https://client.example@evil.com/callback",
        "https://evil.com/callback",
        "http://client.example/callback",
        "https://client.example/x/../callback",
        "https://client.example/callback#frag",
        "https://client.example:444/callback",
        "http://localhost:9999/cb",
        "",
    ]
    for uri in tricks:
        r = browser.get(server.url + "/oauth/authorize",
                        params={**base, "redirect_uri": uri}, allow_redirects=False)
        assert r.status_code == 400, uri
        assert "invalid_redirect_uri" in r.text and "Location" not in r.headers
    # extra query on the request is ignored (the registered URI has none); loopback any port
    for uri in ("https://client.example/callback?x=1", "http://127.0.0.1:8765/cb"):
        r = browser.get(server.url + "/oauth/authorize",
                        params={**base, "redirect_uri": uri}, allow_redirects=False)
        assert r.status_code == 200, uri
    # unknown client: a page too
    r = browser.get(server.url + "/oauth/authorize", params={**base, "client_id": "nope",
                                                               "redirect_uri": REDIRECT},
                    allow_redirects=False)
    assert r.status_code == 400 and "invalid_client" in r.text
    # the code is bound to its redirect_uri
    code = code_for(server, browser, app)
    r = post_token(server, {"grant_type": "authorization_code", "code": code,
                            "redirect_uri": "https://client.example/callback?x=1"},
                   auth=(app["application_id"], app["secret"]))
    assert_json(r, 400, GRANT_ERROR)


def test_authorize_errors_render_a_page_never_redirect(server, browser):
    """Any user may register an application with any redirect URI, so an error redirected
    before consent would make the server an open redirector: as GitLab, every
    pre-authorization error renders the error page, whatever the client and URI."""
    evil = "https://evil.example/landing"
    owner, _ = make_user(server)
    r = register_on_page(server, sign_in(server, owner.username), redirect_uri=evil,
                         scopes=["read_user"])
    assert r.status_code == 201
    uid = re.search(r'id="application_id">([0-9a-f]{64})<', r.text).group(1)
    base = {"client_id": uid, "redirect_uri": evil, "response_type": "code",
            "scope": "read_user", "state": "keep-me"}
    for bad, code in [({"scope": "api"}, "invalid_scope"),
                      ({"response_type": "bogus"}, "unsupported_response_type"),
                      ({"response_type": ""}, "invalid_request"),
                      ({"code_challenge": "x" * 43, "code_challenge_method": "S512"},
                       "invalid_request"),
                      ({"code_challenge": "short"}, "invalid_request")]:
        r = browser.get(server.url + "/oauth/authorize", params={**base, **bad},
                        allow_redirects=False)
        assert r.status_code == 400 and "Location" not in r.headers, bad
        assert code in r.text and "evil.example" not in r.text, bad
    # the valid request shows the consent page, and only the user's Deny goes back
    page = browser.get(server.url + "/oauth/authorize", params=base, allow_redirects=False)
    assert page.status_code == 200 and "Authorize" in page.text


def test_deny(server, browser):
    app = admin_app(server)
    url = server.url + "/oauth/authorize?" + urllib.parse.urlencode({
        "client_id": app["application_id"], "redirect_uri": REDIRECT, "response_type": "code",
        "scope": "api", "state": "d"})
    page = browser.get(url)
    form = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page.text))
    form["_method"] = "delete"
    r = browser.post(server.url + "/oauth/authorize", data=form, allow_redirects=False)
    q = query_of(r.headers["Location"])
    assert q["error"] == "access_denied" and q["state"] == "d"


def test_consent_requires_csrf_and_session(server, browser, user):
    app = admin_app(server)
    form = {"client_id": app["application_id"], "redirect_uri": REDIRECT,
            "response_type": "code", "scope": "api", "state": "s"}
    r = browser.post(server.url + "/oauth/authorize", data=form, allow_redirects=False)
    assert r.status_code == 422
    r = browser.post(server.url + "/oauth/authorize",
                     data={**form, "authenticity_token": "0" * 64}, allow_redirects=False)
    assert r.status_code == 422
    # a token from another session does not work in this one
    other = sign_in(server, user.username)
    page = other.get(server.url + "/oauth/authorize", params=form)
    r = browser.post(server.url + "/oauth/authorize",
                     data={**form, "authenticity_token": csrf_of(page.text)},
                     allow_redirects=False)
    assert r.status_code == 422
    # without a session: sent to sign in
    r = requests.get(server.url + "/oauth/authorize", params=form, allow_redirects=False)
    assert r.status_code in (302, 303) and "/users/sign_in" in r.headers["Location"]


def test_wrong_secret_and_foreign_codes(server, browser):
    app = admin_app(server)
    other = admin_app(server)
    code = code_for(server, browser, app)
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT}
    r = post_token(server, data, auth=(app["application_id"], "gloas-wrong"))
    assert_json(r, 401, INVALID_CLIENT)
    assert r.headers["WWW-Authenticate"].startswith("Bearer")
    r = post_token(server, {**data, "client_id": app["application_id"],
                            "client_secret": "nope"})
    assert_json(r, 401, INVALID_CLIENT)
    # another client's code
    assert_json(post_token(server, data, auth=(other["application_id"], other["secret"])), 400,
                GRANT_ERROR)
    token = assert_json(post_token(server, data, auth=(app["application_id"], app["secret"])), 200)
    # another client's refresh token
    r = post_token(server, {"grant_type": "refresh_token", "refresh_token": token["refresh_token"]},
                   auth=(other["application_id"], other["secret"]))
    assert_json(r, 400, GRANT_ERROR)
    # unsupported grant, missing grant
    r = post_token(server, {"grant_type": "client_credentials"},
                   auth=(app["application_id"], app["secret"]))
    assert_json(r, 400)["error"] == "unsupported_grant_type"
    r = post_token(server, {}, auth=(app["application_id"], app["secret"]))
    assert_json(r, 400, {"error": "invalid_request",
                         "error_description": "Missing required parameter: grant_type."})


def test_scope_escalation_on_refresh(server, browser):
    app = admin_app(server, scopes="api read_user")
    token = assert_json(exchange(server, app, code_for(server, browser, app, scope="read_user")),
                        200)
    auth = (app["application_id"], app["secret"])
    r = post_token(server, {"grant_type": "refresh_token", "refresh_token": token["refresh_token"],
                            "scope": "api"}, auth=auth)
    assert_json(r, 400, INVALID_SCOPE)
    r = post_token(server, {"grant_type": "refresh_token", "refresh_token": token["refresh_token"],
                            "scope": "read_user"}, auth=auth)
    assert assert_json(r, 200)["scope"] == "read_user"


def test_cross_tenant_tokens(server, browser):
    host, _ = other_tenant(server, "oauth-b")
    app = admin_app(server)
    token = assert_json(exchange(server, app, code_for(server, browser, app)), 200)
    headers = {"Authorization": f"Bearer {token['access_token']}", "Host": f"{host}:{server.port}"}
    assert requests.get(server.api_url + "/user", headers=headers).status_code == 401
    r = requests.get(server.url + "/oauth/token/info", headers=headers)
    assert r.status_code == 401
    # the application itself is unknown there
    r = post_token(server, {"grant_type": "refresh_token", "refresh_token": token["refresh_token"]},
                   auth=(app["application_id"], app["secret"]), host=host)
    assert_json(r, 401, INVALID_CLIENT)


def test_public_client_needs_pkce_not_secret(server, browser):
    app = admin_app(server, confidential=False)
    v = verifier()
    code = code_for(server, browser, app, code_challenge=s256(v), code_challenge_method="S256")
    r = post_token(server, {"grant_type": "authorization_code", "code": code,
                            "redirect_uri": REDIRECT, "client_id": app["application_id"],
                            "code_verifier": v})
    assert assert_json(r, 200)["refresh_token"]
    # a confidential client must present its secret
    conf = admin_app(server)
    r = post_token(server, {"grant_type": "authorization_code", "code": "x",
                            "redirect_uri": REDIRECT, "client_id": conf["application_id"]})
    assert_json(r, 401, INVALID_CLIENT)


# ---- web pages and the applications API -----------------------------------------------------


def test_sign_in_page_and_session_cookie(server, user):
    s = requests.Session()
    page = s.get(server.url + "/users/sign_in")
    assert page.headers["Content-Type"].startswith("text/html")
    assert page.headers["X-Frame-Options"] == "DENY"
    # no CSRF token: refused
    r = s.post(server.url + "/users/sign_in", allow_redirects=False,
               data={"user[login]": user.username, "user[password]": PASSWORD})
    assert r.status_code == 422
    r = s.post(server.url + "/users/sign_in", allow_redirects=False, data={
        "authenticity_token": csrf_of(page.text), "user[login]": user.email.upper(),
        "user[password]": PASSWORD, "redirect_to": "https://evil.com/"})
    assert r.status_code == 302 and r.headers["Location"] == "/profile/applications"
    cookie = [c for c in r.headers.get("Set-Cookie", "").split(", ") if "_gitlab_session" in c][0]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" not in cookie
    # sign out ends the session server-side
    apps = s.get(server.url + "/profile/applications")
    assert apps.status_code == 200
    value = s.cookies.get("_gitlab_session")
    r = s.post(server.url + "/users/sign_out", data={"authenticity_token": csrf_of(apps.text)},
               allow_redirects=False)
    assert r.status_code == 302
    replay = requests.get(server.url + "/profile/applications",
                          cookies={"_gitlab_session": value}, allow_redirects=False)
    assert replay.status_code in (302, 303) and "/users/sign_in" in replay.headers["Location"]


def test_secure_cookie_with_https_external_url(make_server):
    srv = make_server({"TRELLIS_EXTERNAL_URL": "https://trellis.example"})
    u, _ = make_user(srv)
    page = requests.get(srv.url + "/users/sign_in")
    assert "Secure" in page.headers["Set-Cookie"]
    # a Secure cookie is not sent back over plain http by a client: send it by hand
    r = requests.post(srv.url + "/users/sign_in", allow_redirects=False,
                      cookies={"_trellis_csrf": page.cookies["_trellis_csrf"]}, data={
                          "authenticity_token": csrf_of(page.text), "user[login]": u.username,
                          "user[password]": PASSWORD})
    assert r.status_code == 302 and "Secure" in r.headers["Set-Cookie"]


def signed_in(server, session: requests.Session) -> bool:
    r = session.get(server.url + "/profile/applications", allow_redirects=False)
    assert r.status_code in (200, 302, 303), r.status_code
    return r.status_code == 200


def test_password_change_ends_web_sessions(server):
    """As GitLab: a new password signs out every browser signed in with the old one."""
    u, _ = make_user(server)
    first, second = sign_in(server, u.username), sign_in(server, u.username)
    bystander, _ = make_user(server)
    other = sign_in(server, bystander.username)
    # an edit that leaves the password alone ends nothing
    r = server.request("PUT", f"/users/{u.id}", token=server.root_token, json={"bio": "b"})
    assert_json(r, 200)
    assert signed_in(server, first) and signed_in(server, second)
    r = server.request("PUT", f"/users/{u.id}", token=server.root_token,
                       json={"password": "An0ther-password!"})
    assert_json(r, 200)
    assert not signed_in(server, first) and not signed_in(server, second)
    assert int(server.sql(f"SELECT COUNT(*) FROM web_sessions WHERE user_id = {u.id}")[0][0]) == 0
    assert signed_in(server, other)
    # the new password signs in again
    assert signed_in(server, sign_in(server, u.username, "An0ther-password!"))


def test_deactivated_user_signing_in_becomes_active(server):
    u, _ = make_user(server)
    server.sql(f"UPDATE users SET state = 'deactivated' WHERE id = {u.id}")
    sign_in(server, u.username)
    body = assert_json(server.request("GET", f"/users/{u.id}", token=server.root_token), 200)
    assert body["state"] == "active"
    assert body["current_sign_in_ip"] == "127.0.0.1" and body["current_sign_in_at"]


def test_blocked_user_cannot_sign_in(server):
    u, _ = make_user(server)
    server.request("POST", f"/users/{u.id}/block", token=server.root_token)
    s = requests.Session()
    page = s.get(server.url + "/users/sign_in")
    r = s.post(server.url + "/users/sign_in", allow_redirects=False, data={
        "authenticity_token": csrf_of(page.text), "user[login]": u.username,
        "user[password]": PASSWORD})
    assert r.status_code == 401 and "blocked" in r.text


def register_on_page(server, session, path="/profile/applications", **fields) -> tuple:
    page = session.get(server.url + path)
    data = {"authenticity_token": csrf_of(page.text),
            "doorkeeper_application[name]": fields.get("name", "My <app>"),
            "doorkeeper_application[redirect_uri]": fields.get("redirect_uri", REDIRECT),
            "doorkeeper_application[confidential]": "1",
            "doorkeeper_application[scopes][]": fields.get("scopes", ["api"])}
    return session.post(server.url + path, data=data, allow_redirects=False)


def test_applications_pages(server):
    u, _ = make_user(server)
    s = sign_in(server, u.username)
    r = register_on_page(server, s, "/user_settings/applications")
    assert r.status_code == 201
    assert "My &lt;app&gt;" in r.text and "<app>" not in r.text  # escaped
    uid = re.search(r'id="application_id">([0-9a-f]{64})<', r.text).group(1)
    secret = re.search(r'id="client_secret">(gloas-[0-9a-f]{64})<', r.text).group(1)
    app_id = re.search(r'/user_settings/applications/(\d+)"', r.text).group(1)
    # listed, the secret never shown again
    listing = s.get(server.url + "/profile/applications")
    assert uid not in listing.text or secret not in listing.text
    shown = s.get(server.url + f"/profile/applications/{app_id}")
    assert uid in shown.text and secret not in shown.text
    # the secret works at the token endpoint (password grant)
    r = post_token(server, {"grant_type": "password", "username": u.username,
                            "password": PASSWORD}, auth=(uid, secret))
    assert r.status_code == 200
    # edit
    r = s.post(server.url + f"/profile/applications/{app_id}", allow_redirects=False, data={
        "authenticity_token": csrf_of(shown.text), "doorkeeper_application[name]": "Renamed",
        "doorkeeper_application[redirect_uri]": REDIRECT,
        "doorkeeper_application[scopes][]": ["read_user"]})
    assert r.status_code == 302
    assert "Renamed" in s.get(server.url + f"/profile/applications/{app_id}").text
    # another user sees nothing of it
    other = sign_in(server, make_user(server)[0].username)
    assert other.get(server.url + f"/profile/applications/{app_id}").status_code == 404
    # refused URIs and blank scopes
    for uri in ("javascript:alert(1)", "data:text/html,x", "vbscript:x"):
        r = register_on_page(server, s, redirect_uri=uri)
        assert r.status_code == 422 and "Redirect URI is forbidden by the server." in r.text
    r = register_on_page(server, s, scopes=[])
    assert r.status_code == 422 and "Scopes can&#39;t be blank" in r.text or "Scopes can't be blank" in r.text
    # delete
    r = s.post(server.url + f"/profile/applications/{app_id}", allow_redirects=False,
               data={"authenticity_token": csrf_of(shown.text), "_method": "delete"})
    assert r.status_code == 302
    assert s.get(server.url + f"/profile/applications/{app_id}").status_code == 404
    r = post_token(server, {"grant_type": "password", "username": u.username,
                            "password": PASSWORD}, auth=(uid, secret))
    assert r.status_code == 401


def test_revoke_authorized_application(server):
    u, _ = make_user(server)
    s = sign_in(server, u.username)
    app = admin_app(server)
    token = assert_json(exchange(server, app, code_for(server, s, app)), 200)
    page = s.get(server.url + "/profile/applications")
    assert "Authorized applications (1)" in page.text and app["application_name"] in page.text
    other = sign_in(server, make_user(server)[0].username)
    other_page = other.get(server.url + "/profile/applications")
    # another user cannot revoke it (nothing of theirs to revoke), nor without CSRF
    r = other.post(server.url + f"/oauth/authorized_applications/{app['id']}",
                   data={"authenticity_token": csrf_of(other_page.text), "_method": "delete"},
                   allow_redirects=False)
    assert r.status_code == 404
    r = s.post(server.url + f"/oauth/authorized_applications/{app['id']}",
               data={"_method": "delete"}, allow_redirects=False)
    assert r.status_code == 422
    r = s.post(server.url + f"/oauth/authorized_applications/{app['id']}",
               data={"authenticity_token": csrf_of(page.text), "_method": "delete"},
               allow_redirects=False)
    assert r.status_code == 302
    r = requests.get(server.api_url + "/user",
                     headers={"Authorization": f"Bearer {token['access_token']}"})
    assert r.status_code == 401
    # consent is asked again
    url = server.url + "/oauth/authorize?" + urllib.parse.urlencode({
        "client_id": app["application_id"], "redirect_uri": REDIRECT, "response_type": "code",
        "scope": "api"})
    assert s.get(url, allow_redirects=False).status_code == 200


def test_deleting_a_user_removes_their_applications_tokens_and_sessions(server):
    u, _ = make_user(server)
    s = sign_in(server, u.username)
    assert register_on_page(server, s).status_code == 201
    app = admin_app(server)
    token = assert_json(exchange(server, app, code_for(server, s, app)), 200)
    r = server.request("DELETE", f"/users/{u.id}", token=server.root_token,
                       params={"hard_delete": "true"})
    assert r.status_code in (202, 204), r.text

    def gone():
        r = requests.get(server.api_url + "/user",
                         headers={"Authorization": f"Bearer {token['access_token']}"})
        return r.status_code == 401

    assert server.wait_for(gone, timeout=10)
    page = s.get(server.url + "/profile/applications", allow_redirects=False)
    assert page.status_code == 302


def test_user_oauth_applications_setting(server):
    u, _ = make_user(server)
    s = sign_in(server, u.username)
    page = s.get(server.url + "/profile/applications")
    server.request("PUT", "/application/settings", token=server.root_token,
                   json={"user_oauth_applications": False})
    try:
        r = s.post(server.url + "/profile/applications", data={
            "authenticity_token": csrf_of(page.text), "doorkeeper_application[name]": "x",
            "doorkeeper_application[redirect_uri]": REDIRECT,
            "doorkeeper_application[scopes][]": ["api"]}, allow_redirects=False)
        assert r.status_code == 403
        admin, _ = make_user(server, admin=True)
        r = register_on_page(server, sign_in(server, admin.username))
        assert r.status_code == 201
    finally:
        server.request("PUT", "/application/settings", token=server.root_token,
                       json={"user_oauth_applications": True})


def test_applications_api(server):
    r = server.request("POST", "/applications", token=server.root_token,
                       json={"name": "ci", "redirect_uri": REDIRECT, "scopes": "api read_user",
                             "confidential": False})
    body = assert_json(r, 201)
    assert set(body) == {"id", "application_id", "application_name", "secret", "callback_url",
                         "confidential"}
    assert body["secret"].startswith("gloas-") and body["confidential"] is False
    listed = assert_json(server.request("GET", "/applications", token=server.root_token), 200)
    mine = [a for a in listed if a["id"] == body["id"]]
    assert mine == [{k: v for k, v in body.items() if k != "secret"}]
    renewed = assert_json(server.request("POST", f"/applications/{body['id']}/renew-secret",
                                         token=server.root_token), 201)
    assert renewed["secret"] != body["secret"]
    assert server.request("DELETE", f"/applications/{body['id']}",
                          token=server.root_token).status_code == 204
    assert_json(server.request("DELETE", f"/applications/{body['id']}", token=server.root_token),
                404, {"message": "404 Application Not Found"})
    assert_json(server.request("DELETE", "/applications/abc", token=server.root_token), 404)


def test_applications_api_bad_inputs(server):
    root = server.root_token
    assert_json(server.request("POST", "/applications", token=root, json={}), 400,
                {"error": "name is missing"})
    assert_json(server.request("POST", "/applications", token=root,
                               json={"name": "x", "scopes": "api"}), 400,
                {"error": "redirect_uri is missing"})
    assert_json(server.request("POST", "/applications", token=root,
                               json={"name": "x", "redirect_uri": REDIRECT}), 400,
                {"error": "scopes is missing"})
    r = server.request("POST", "/applications", token=root,
                       json={"name": "x", "redirect_uri": "javascript:alert(1)", "scopes": "api"})
    assert_json(r, 400, {"message": {"redirect_uri": ["is forbidden by the server."]}})
    r = server.request("POST", "/applications", token=root,
                       json={"name": "x", "redirect_uri": REDIRECT, "scopes": "bogus"})
    assert_json(r, 400, {"message": {"scopes": ["doesn't match configured on the server."]}})
    # no token, non-admin, token without api scope
    assert_json(server.request("GET", "/applications"), 401)
    u, user_token = make_user(server)
    assert_json(server.request("GET", "/applications", token=user_token), 403)
    read_only = server.create_token_api(scopes=("read_api",))["token"]
    assert_json(server.request("POST", "/applications", token=read_only,
                               json={"name": "x", "redirect_uri": REDIRECT, "scopes": "api"}), 403)
    # another tenant's application id is unknown there
    body = assert_json(server.request("POST", "/applications", token=root,
                                      json={"name": "x", "redirect_uri": REDIRECT,
                                            "scopes": "api"}), 201)
    host, b_token = other_tenant(server, "apps-b")
    r = server.request("DELETE", f"/applications/{body['id']}", token=b_token, host=host)
    assert r.status_code == 404


def test_token_endpoint_bad_inputs(server, browser):
    app = admin_app(server)
    auth = (app["application_id"], app["secret"])

    def missing(name):
        return {"error": "invalid_request",
                "error_description": f"Missing required parameter: {name}."}

    code = code_for(server, browser, app)
    r = post_token(server, {"grant_type": "authorization_code", "redirect_uri": REDIRECT}, auth=auth)
    assert_json(r, 400, missing("code"))
    r = post_token(server, {"grant_type": "authorization_code", "code": code}, auth=auth)
    assert_json(r, 400, missing("redirect_uri"))
    r = post_token(server, {"grant_type": "authorization_code", "code": "0" * 64,
                            "redirect_uri": REDIRECT}, auth=auth)
    assert_json(r, 400, GRANT_ERROR)
    assert_json(post_token(server, {"grant_type": "password", "password": "x"}, auth=auth), 400,
                missing("username"))
    assert_json(post_token(server, {"grant_type": "password", "username": "x"}, auth=auth), 400,
                missing("password"))
    assert_json(post_token(server, {"grant_type": "refresh_token"}, auth=auth), 400,
                missing("refresh_token"))
    # unknown client id, a malformed Basic header
    assert_json(post_token(server, {"grant_type": "password", "username": "x", "password": "y"},
                           auth=("nope", "nope")), 401, INVALID_CLIENT)
    r = requests.post(server.url + "/oauth/token", data={"grant_type": "password"},
                      headers={"Authorization": "Basic !!!"})
    assert_json(r, 401, INVALID_CLIENT)
    # JSON bodies are read as well
    r = requests.post(server.url + "/oauth/token", json={"grant_type": "authorization_code",
                                                         "code": code, "redirect_uri": REDIRECT},
                      auth=auth)
    assert r.status_code == 200
    # the code stays usable only once
    assert_json(exchange(server, app, code), 400, GRANT_ERROR)


def test_oversize_bodies(make_server):
    srv = make_server({"TRELLIS_MAX_BODY_BYTES": "2048"})
    big = {"grant_type": "password", "username": "x" * 4096, "password": "y"}
    r = requests.post(srv.url + "/oauth/token", data=big)
    assert_json(r, 413)["error"] == "invalid_request"
    assert r.headers["Cache-Control"] == "no-store"
    r = requests.post(srv.url + "/users/sign_in", data={"user[login]": "x" * 4096})
    assert r.status_code == 413 and r.headers["Content-Type"].startswith("text/html")


def test_password_grant_off_with_git_password_authentication(server, user):
    app = admin_app(server)
    server.request("PUT", "/application/settings", token=server.root_token,
                   json={"password_authentication_enabled_for_git": False})
    try:
        r = post_token(server, {"grant_type": "password", "username": user.username,
                                "password": PASSWORD}, auth=(app["application_id"], app["secret"]))
        assert_json(r, 400, GRANT_ERROR)
    finally:
        server.request("PUT", "/application/settings", token=server.root_token,
                       json={"password_authentication_enabled_for_git": True})


def test_secrets_never_logged(make_server):
    srv = make_server({"TRELLIS_LOG": "trace"})
    u, _ = make_user(srv)
    s = sign_in(srv, u.username)
    app = admin_app(srv)
    code = code_for(srv, s, app)
    token = assert_json(exchange(srv, app, code), 200)
    assert assert_json(post_token(srv, {"grant_type": "password", "username": u.username,
                                        "password": PASSWORD},
                                  auth=(app["application_id"], app["secret"])), 200)
    requests.get(srv.api_url + "/user", params={"access_token": token["access_token"]})
    log = srv.stderr_text() + srv.stdout_text()
    assert "request" in log  # the trace level did log requests
    for secret in (code, token["access_token"], token["refresh_token"], app["secret"], PASSWORD,
                   s.cookies.get("_gitlab_session")):
        assert secret not in log
