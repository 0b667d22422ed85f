"""Generic error responses: unknown routes, wrong methods, bad bodies, body size limit."""

import json

import pytest

from conftest import assert_json

NOT_FOUND = {"error": "404 Not Found"}
METHOD_NOT_ALLOWED = {"message": "405 Method Not Allowed"}
TOO_LARGE = {"message": "413 Request Entity Too Large"}


@pytest.mark.parametrize("path", ["/nonexistent", "/users/1/nonexistent", "/personal_access_tokens/1/x"])
def test_unknown_route_with_token(server, path):
    assert_json(server.request("GET", path, token=server.root_token), 404, NOT_FOUND)


def test_unknown_route_without_token(server):
    assert_json(server.request("GET", "/nonexistent"), 404, NOT_FOUND)


def test_unknown_route_post(server):
    assert_json(server.request("POST", "/nonexistent", token=server.root_token, json={}), 404,
                NOT_FOUND)


def test_unknown_api_version(server):
    r = server.request("GET", "/api/v3/user", token=server.root_token)
    assert_json(r, 404, NOT_FOUND)


@pytest.mark.parametrize("method,path", [
    ("PUT", "/user"),
    ("DELETE", "/user"),
    ("POST", "/version"),
    ("PATCH", "/metadata"),
    ("PUT", "/personal_access_tokens"),
])
def test_wrong_method(server, method, path):
    r = server.request(method, path, token=server.root_token)
    assert_json(r, 405, METHOD_NOT_ALLOWED)


def test_wrong_method_without_token(server):
    assert_json(server.request("PUT", "/user"), 405, METHOD_NOT_ALLOWED)


def test_invalid_json_body(server):
    r = server.request("POST", "/users/1/personal_access_tokens", token=server.root_token,
                       data=b'{"name": "x", "scopes": [', headers={"Content-Type": "application/json"})
    assert r.status_code == 400, r.text
    assert r.headers["Content-Type"] == "application/json"
    r.json()


def test_invalid_json_body_creates_nothing(server):
    before = server.request("GET", "/personal_access_tokens", token=server.root_token).headers["X-Total"]
    r = server.request("POST", "/users/1/personal_access_tokens", token=server.root_token,
                       data=b"not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    after = server.request("GET", "/personal_access_tokens", token=server.root_token).headers["X-Total"]
    assert before == after


def test_non_numeric_token_id(server):
    r = server.request("GET", "/personal_access_tokens/abc", token=server.root_token)
    assert r.status_code in (400, 404), r.text
    assert r.headers["Content-Type"] == "application/json"


# ---- body size limit -----------------------------------------------------


@pytest.fixture(scope="module")
def small_server(make_server):
    return make_server({"TRELLIS_MAX_BODY_BYTES": "1024"})


def test_large_form_body_is_413(small_server):
    r = small_server.request("POST", "/users/1/personal_access_tokens", token=small_server.root_token,
                             data={"name": "x" * 4096, "scopes": "api"})
    assert_json(r, 413, TOO_LARGE)


def test_large_json_body_is_413(small_server):
    body = json.dumps({"name": "x" * 4096, "scopes": ["api"]})
    r = small_server.request("POST", "/users/1/personal_access_tokens", token=small_server.root_token,
                             data=body, headers={"Content-Type": "application/json"})
    assert_json(r, 413, TOO_LARGE)


def test_small_body_accepted_under_limit(small_server):
    r = small_server.request("POST", "/users/1/personal_access_tokens", token=small_server.root_token,
                             json={"name": "small", "scopes": ["api"]})
    assert_json(r, 201)


def test_large_body_creates_nothing(small_server):
    r = small_server.request("POST", "/users/1/personal_access_tokens", token=small_server.root_token,
                             json={"name": "big-" + "y" * 4096, "scopes": ["api"]})
    assert r.status_code == 413
    r = small_server.request("GET", "/personal_access_tokens", token=small_server.root_token,
                             params={"per_page": 100})
    assert all(not t["name"].startswith("big-") for t in assert_json(r, 200))
