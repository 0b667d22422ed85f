"""Issue search at scale, on both engines: terms that most issues contain, terms few contain,
and terms only descriptions contain, over a project of 12,000 issues seeded by SQL (creating
them through the API would take minutes). The answers are GitLab's: the newest matches first,
`X-Total` counted up to 10,000 and omitted beyond it, pages that line up."""

from __future__ import annotations

import pytest

from conftest import assert_json

ISSUES = 12_000
# Issue n was created at a fixed time plus n seconds and updated n minutes later than that.
CREATED = 1_700_000_000_000


def title(n: int) -> str:
    """Every issue says "seeded"; 3 in 4 say "lorem ipsum", the rest "dolor"; every 1,000th
    says "needle"."""
    words = "dolor sit" if n % 4 == 0 else "lorem ipsum"
    return f"Seeded {n} {words}" + (" needle" if n % 1000 == 0 else "")


def description(n: int) -> str:
    return f"Body of {n}" + (" with a Marker inside" if n % 3 == 0 else "")


def closed(n: int) -> bool:
    return n % 5 == 0


@pytest.fixture(scope="module")
def seeded(server):
    project = server.gitlab().projects.create({"name": "search-scale"})
    (tenant,) = server.sql(f"SELECT tenant_id FROM projects WHERE id = {project.id}")[0]
    # Ids above every id the tenant has used, and the counters moved past them, as the server
    # would have.
    rows = server.sql(f"SELECT last_value FROM id_sequences WHERE tenant_id = {tenant} AND name = 'issues'")
    first = int(rows[0][0]) + 1 if rows else 1
    server.sql(f"""
        INSERT INTO issues (tenant_id, id, project_id, iid, author_id, title, description, state,
                            created_at, updated_at)
        WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {ISSUES})
        SELECT {tenant}, {first} - 1 + n, {project.id}, n, 1,
               'Seeded ' || n || CASE WHEN n % 4 = 0 THEN ' dolor sit' ELSE ' lorem ipsum' END
                   || CASE WHEN n % 1000 = 0 THEN ' needle' ELSE '' END,
               'Body of ' || n || CASE WHEN n % 3 = 0 THEN ' with a Marker inside' ELSE '' END,
               CASE WHEN n % 5 = 0 THEN 'closed' ELSE 'opened' END,
               {CREATED} + n * 1000, {CREATED} + n * 1000 + (n % 7) * 60000
        FROM s""")
    for name, value in (("issues", first - 1 + ISSUES), (f"issue_iid:{project.id}", ISSUES)):
        server.sql(f"""
            INSERT INTO id_sequences (tenant_id, name, last_value) VALUES ({tenant}, '{name}', {value})
            ON CONFLICT (tenant_id, name) DO UPDATE SET last_value = {value}""")
    server.sql("ANALYZE")
    # No search rate limit while searching this much (GitLab's default is 30 a minute).
    r = server.request("PUT", "/application/settings", token=server.root_token,
                       json={"search_rate_limit": 0, "search_rate_limit_unauthenticated": 0})
    assert_json(r, 200)
    return project


def matching(pred, order=lambda n: -n):
    return sorted((n for n in range(1, ISSUES + 1) if pred(n)), key=order)


def page(server, project, **params):
    r = server.request("GET", f"/projects/{project.id}/issues", token=server.root_token, params=params)
    return [i["iid"] for i in assert_json(r, 200)], r.headers


TERMS = [
    # (search, in, predicate): common in titles, case-insensitive, rarer, rare, description only
    ("ipsum", None, lambda n: n % 4 != 0),
    ("IPSUM", None, lambda n: n % 4 != 0),
    ("dolor sit", None, lambda n: n % 4 == 0),
    ("needle", None, lambda n: n % 1000 == 0),
    ("marker", "description", lambda n: n % 3 == 0),
    ("marker", "title", lambda n: False),
    ("of 11", None, lambda n: str(n).startswith("11")),
]


@pytest.mark.parametrize("term,where,pred", TERMS, ids=[f"{t[0]}-{t[1]}" for t in TERMS])
def test_counted_terms_page_and_total(server, seeded, term, where, pred):
    extra = {"in": where} if where else {}
    expected = matching(pred)
    first, headers = page(server, seeded, search=term, per_page=20, **extra)
    assert first == expected[:20]
    assert headers["X-Total"] == str(len(expected))
    assert headers["X-Total-Pages"] == str(max(1, -(-len(expected) // 20)))
    if len(expected) > 60:
        third, headers = page(server, seeded, search=term, per_page=20, page=3, **extra)
        assert third == expected[40:60]
        assert headers["X-Page"] == "3" and headers["X-Prev-Page"] == "2"
        assert 'rel="last"' in headers["Link"]


def test_a_term_in_more_than_10000_issues_is_not_counted(server, seeded):
    expected = matching(lambda n: True)
    first, headers = page(server, seeded, search="seeded", per_page=50)
    assert first == expected[:50]
    assert "X-Total" not in headers and "X-Total-Pages" not in headers
    assert headers["X-Next-Page"] == "2" and 'rel="last"' not in headers["Link"]
    deep, headers = page(server, seeded, search="seeded", per_page=100, page=101)
    assert deep == expected[10_000:10_100]
    assert "X-Total" not in headers


def test_common_terms_with_filters_orders_and_keyset(server, seeded):
    # state: the closed issues saying "ipsum"
    expected = matching(lambda n: n % 4 != 0 and closed(n))
    first, headers = page(server, seeded, search="ipsum", state="closed", per_page=20)
    assert first == expected[:20] and headers["X-Total"] == str(len(expected))
    # oldest first
    expected = matching(lambda n: n % 4 != 0, order=lambda n: n)
    first, _ = page(server, seeded, search="ipsum", sort="asc", per_page=20)
    assert first == expected[:20]
    # by update time (n + (n % 7) minutes), newest first; ties broken by id
    expected = sorted((n for n in range(1, ISSUES + 1) if n % 4 != 0),
                      key=lambda n: (-(n * 1000 + (n % 7) * 60000), -n))
    first, _ = page(server, seeded, search="ipsum", order_by="updated_at", per_page=20)
    assert first == expected[:20]
    # pages follow each other without gaps or repeats
    expected = matching(lambda n: n % 4 == 0)
    seen = []
    for number in (1, 2, 3):
        rows, headers = page(server, seeded, search="dolor", per_page=100, page=number)
        seen += rows
    assert seen == expected[:300] and headers["X-Total"] == str(len(expected))
