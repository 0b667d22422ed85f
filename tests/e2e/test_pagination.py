"""Offset and keyset pagination on GET /personal_access_tokens."""

import math
import urllib.parse

import pytest

from conftest import assert_json

EXTRA_TOKENS = 45
PATH = "/personal_access_tokens"


@pytest.fixture(scope="module")
def total(server):
    """Creates 45 tokens (plus the initial root token) and returns the total count."""
    for i in range(EXTRA_TOKENS):
        server.create_token_api(name=f"page-{i:02d}", scopes=["read_api"])
    return EXTRA_TOKENS + 1


def get(server, **params):
    return server.request("GET", PATH, token=server.root_token, params=params)


def query(url: str) -> dict:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))


# ---- offset pagination: headers ------------------------------------------


def test_default_per_page_is_20(server, total):
    r = get(server)
    data = assert_json(r, 200)
    assert len(data) == 20
    assert r.headers["X-Per-Page"] == "20"
    assert r.headers["X-Page"] == "1"


def test_first_page_headers(server, total):
    r = get(server, per_page=20)
    assert r.headers["X-Page"] == "1"
    assert r.headers["X-Per-Page"] == "20"
    assert r.headers["X-Next-Page"] == "2"
    assert r.headers["X-Prev-Page"] == ""
    assert r.headers["X-Total"] == str(total)
    assert r.headers["X-Total-Pages"] == str(math.ceil(total / 20)) == "3"


def test_middle_page_headers(server, total):
    r = get(server, per_page=20, page=2)
    assert len(assert_json(r, 200)) == 20
    assert r.headers["X-Page"] == "2"
    assert r.headers["X-Next-Page"] == "3"
    assert r.headers["X-Prev-Page"] == "1"


def test_last_page_headers(server, total):
    r = get(server, per_page=20, page=3)
    assert len(assert_json(r, 200)) == total - 40
    assert r.headers["X-Page"] == "3"
    assert r.headers["X-Next-Page"] == ""
    assert r.headers["X-Prev-Page"] == "2"
    assert r.headers["X-Total-Pages"] == "3"


def test_per_page_capped_at_100(server, total):
    r = get(server, per_page=500)
    data = assert_json(r, 200)
    assert r.headers["X-Per-Page"] == "100"
    assert len(data) == total  # fewer than 100 exist
    assert r.headers["X-Total-Pages"] == "1"


def test_per_page_invalid(server, total):
    assert_json(get(server, per_page="abc"), 400, {"error": "per_page is invalid"})


def test_pages_do_not_overlap(server, total):
    seen = []
    for page in (1, 2, 3):
        seen += [t["id"] for t in assert_json(get(server, per_page=20, page=page), 200)]
    assert len(seen) == total
    assert len(set(seen)) == total


# ---- offset pagination: Link header --------------------------------------


def test_link_on_middle_page_has_all_rels(server, total):
    r = get(server, per_page=20, page=2)
    assert {"prev", "next", "first", "last"} <= set(r.links), r.headers.get("Link")
    base = f"http://127.0.0.1:{server.port}/api/v4/personal_access_tokens"
    for rel, page in [("prev", "1"), ("next", "3"), ("first", "1"), ("last", "3")]:
        url = r.links[rel]["url"]
        assert url.startswith(base), url
        q = query(url)
        assert q["page"] == page, (rel, url)
        assert q["per_page"] == "20", (rel, url)


def test_link_on_first_page(server, total):
    r = get(server, per_page=20)
    assert {"next", "first", "last"} <= set(r.links)
    assert query(r.links["next"]["url"])["page"] == "2"
    assert query(r.links["last"]["url"])["page"] == "3"


def test_link_on_last_page_has_no_next(server, total):
    r = get(server, per_page=20, page=3)
    assert "next" not in r.links
    assert {"prev", "first", "last"} <= set(r.links)


def test_link_keeps_filters(server, total):
    r = get(server, per_page=10, state="active")
    q = query(r.links["next"]["url"])
    assert q["state"] == "active"
    assert q["per_page"] == "10"


def test_link_uses_host_header(server, total):
    host = f"pages.example:{server.port}"
    r = server.request("GET", PATH, token=server.root_token, host=host, params={"per_page": 20})
    assert_json(r, 200)
    for rel in ("next", "first", "last"):
        assert r.links[rel]["url"].startswith(f"http://{host}/api/v4/personal_access_tokens"), r.links


@pytest.mark.parametrize("param", ["access_token", "private_token"])
def test_link_never_contains_secret(server, total, param):
    r = server.request("GET", PATH, params={param: server.root_token, "per_page": 20, "page": 2})
    assert_json(r, 200)
    link = r.headers["Link"]
    assert server.root_token not in link
    assert server.root_token.removeprefix("glpat-") not in link
    assert set(r.links) >= {"prev", "next", "first", "last"}
    for rel in r.links.values():
        keys = {k for k, _ in urllib.parse.parse_qsl(urllib.parse.urlsplit(rel["url"]).query)}
        assert not keys & {"access_token", "private_token"}, rel["url"]


def test_follow_link_next(server, total):
    r = get(server, per_page=20)
    ids = [t["id"] for t in assert_json(r, 200)]
    requests_made = 1
    while "next" in r.links:
        r = server.follow(r.links["next"]["url"], token=server.root_token)
        ids += [t["id"] for t in assert_json(r, 200)]
        requests_made += 1
        assert requests_made <= 10
    assert requests_made == 3
    assert len(ids) == total == len(set(ids))


def test_python_gitlab_get_all(server, total):
    gl = server.gitlab()
    tokens = gl.personal_access_tokens.list(get_all=True)
    assert len(tokens) == total
    assert len({t.id for t in tokens}) == total


def test_python_gitlab_iterator(server, total):
    gl = server.gitlab()
    it = gl.personal_access_tokens.list(iterator=True, per_page=20)
    ids = [t.id for t in it]
    assert len(ids) == total == len(set(ids))
    assert it.total == total
    assert it.total_pages == 3


def test_python_gitlab_single_page(server, total):
    gl = server.gitlab()
    tokens = gl.personal_access_tokens.list(per_page=20, page=2)
    assert len(tokens) == 20


# ---- HEAD ----------------------------------------------------------------


def test_head_has_headers_and_no_body(server, total):
    g = get(server, per_page=20, page=2)
    h = server.request("HEAD", PATH, token=server.root_token, params={"per_page": 20, "page": 2})
    assert h.status_code == 200
    assert h.content == b""
    for name in ("X-Page", "X-Per-Page", "X-Next-Page", "X-Prev-Page", "X-Total", "X-Total-Pages"):
        assert h.headers.get(name) == g.headers[name], name


# ---- keyset pagination ---------------------------------------------------


def walk_keyset(server, sort):
    r = get(server, pagination="keyset", order_by="id", sort=sort, per_page=20)
    pages = []
    while True:
        data = assert_json(r, 200)
        pages.append((r, data))
        if "next" not in r.links:
            break
        assert len(pages) <= 10
        r = server.follow(r.links["next"]["url"], token=server.root_token)
    return pages


@pytest.mark.parametrize("sort,param", [("asc", "id_after"), ("desc", "id_before")])
def test_keyset_link_only_next(server, total, sort, param):
    r = get(server, pagination="keyset", order_by="id", sort=sort, per_page=20)
    data = assert_json(r, 200)
    assert len(data) == 20
    assert set(r.links) == {"next"}, r.headers.get("Link")
    url = r.links["next"]["url"]
    assert url.startswith(f"http://127.0.0.1:{server.port}/api/v4/personal_access_tokens")
    q = query(url)
    assert q[param] == str(data[-1]["id"])
    assert q["pagination"] == "keyset"
    assert q["order_by"] == "id"
    assert q["sort"] == sort
    assert q["per_page"] == "20"


@pytest.mark.parametrize("sort", ["asc", "desc"])
def test_keyset_walk_returns_each_once_in_order(server, total, sort):
    pages = walk_keyset(server, sort)
    ids = [t["id"] for _, data in pages for t in data]
    assert len(pages) == 3
    assert len(ids) == total == len(set(ids))
    assert ids == sorted(ids, reverse=(sort == "desc"))
    last_resp, _ = pages[-1]
    assert "next" not in last_resp.links


def test_keyset_matches_offset_listing(server, total):
    offset_ids = sorted(t["id"] for t in assert_json(get(server, per_page=100), 200))
    keyset_ids = [t["id"] for _, data in walk_keyset(server, "asc") for t in data]
    assert keyset_ids == offset_ids


def test_keyset_order_by_name_not_available(server, total):
    r = get(server, pagination="keyset", order_by="name")
    assert_json(r, 405, {"error": "Keyset pagination is not yet available for this type of request"})


def test_python_gitlab_keyset_iterator(server, total):
    gl = server.gitlab()
    it = gl.personal_access_tokens.list(iterator=True, pagination="keyset", order_by="id",
                                        sort="asc", per_page=20)
    ids = [t.id for t in it]
    assert ids == sorted(ids)
    assert len(ids) == total == len(set(ids))
