"""Every filter of GET /projects/:id/issues, /groups/:id/issues and /issues against a fixture
of a few dozen issues whose attributes are known, so each filter's answer is computed here
independently of the server."""

from __future__ import annotations

import datetime as dt
import secrets

import pytest

from conftest import assert_json, make_user

N = 36
BASE = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)




def spec(n):
    """The known attributes of fixture issue n (created at BASE + n days)."""
    return {
        "labels": [["Bug"], ["Bug", "UI"], []][n % 3],
        "milestone": ["m1", "m2", None, None][n % 4],
        "assignee": ["alice", "bob", None, None, None][n % 5],
        "closed": n % 6 == 0,
        "confidential": n == 7,
        "title": f"Issue {n} " + ("needle" if n % 7 == 0 else "hay"),
        "description": "findme here" if n % 10 == 3 else "plain",
        "created": BASE + dt.timedelta(days=n),
        "author": "bob" if n % 9 == 4 else "root",
        "emoji": "thumbsup" if n % 8 == 1 else None,
    }


@pytest.fixture(scope="module")
def world(server):
    gl = server.gitlab()
    alice, alice_token = make_user(server, "alice")
    bob, bob_token = make_user(server, "bob")
    group = gl.groups.create({"name": "fg" + secrets.token_hex(2), "path": "fg" + secrets.token_hex(3)})
    project = gl.projects.create({"name": "filters", "namespace_id": group.id, "visibility": "private"})
    project.members.create({"user_id": alice.id, "access_level": 30})
    project.members.create({"user_id": bob.id, "access_level": 30})
    m1 = project.milestones.create({"title": "m1"})
    m2 = project.milestones.create({"title": "m2"})
    milestones = {"m1": m1.id, "m2": m2.id}
    users = {"alice": alice.id, "bob": bob.id}
    tokens = {"root": server.root_token, "alice": alice_token, "bob": bob_token}
    iids = {}
    for n in range(N):
        s = spec(n)
        body = {
            "title": s["title"], "description": s["description"],
            "labels": ",".join(s["labels"]), "confidential": s["confidential"],
            "created_at": s["created"].isoformat(),
        }
        if s["milestone"]:
            body["milestone_id"] = milestones[s["milestone"]]
        if s["assignee"]:
            body["assignee_ids"] = [users[s["assignee"]]]
        r = server.request("POST", f"/projects/{project.id}/issues", token=tokens[s["author"]], json=body)
        created = assert_json(r, 201)
        iid = created["iid"]
        iids[n] = iid
        if s["closed"]:
            server.request("PUT", f"/projects/{project.id}/issues/{iid}", token=server.root_token,
                           json={"state_event": "close", "created_at": s["created"].isoformat(),
                                 "updated_at": (s["created"] + dt.timedelta(hours=1)).isoformat()})
        else:
            server.request("PUT", f"/projects/{project.id}/issues/{iid}", token=server.root_token,
                           json={"updated_at": (s["created"] + dt.timedelta(hours=1)).isoformat(),
                                 "created_at": s["created"].isoformat()})
        if s["emoji"]:
            r = server.request("POST", f"/projects/{project.id}/issues/{iid}/award_emoji",
                               token=alice_token, json={"name": s["emoji"]})
            assert r.status_code == 201, r.text
    # another project in the same group, one issue, and one outside the group
    sibling = gl.projects.create({"name": "sibling", "namespace_id": group.id})
    sibling.issues.create({"title": "sibling issue"})
    return {
        "project": project, "group": group, "iids": iids, "users": users, "tokens": tokens,
        "milestones": milestones, "sibling": sibling,
    }


def expected(pred):
    return sorted(n for n in range(N) if pred(spec(n)))


def listed(server, world, params, path=None, token=None):
    path = path or f"/projects/{world['project'].id}/issues"
    r = server.request("GET", path, token=token or server.root_token,
                       params={"per_page": 100, **params})
    body = assert_json(r, 200)
    back = {iid: n for n, iid in world["iids"].items()}
    return sorted(back[i["iid"]] for i in body if i["project_id"] == world["project"].id)


CASES = [
    ({}, lambda s: True),
    ({"state": "opened"}, lambda s: not s["closed"]),
    ({"state": "closed"}, lambda s: s["closed"]),
    ({"state": "all"}, lambda s: True),
    ({"labels": "bug"}, lambda s: "Bug" in s["labels"]),
    ({"labels": "Bug,ui"}, lambda s: s["labels"] == ["Bug", "UI"]),
    ({"labels[]": ["BUG", "UI"]}, lambda s: s["labels"] == ["Bug", "UI"]),
    ({"labels": "None"}, lambda s: not s["labels"]),
    ({"labels": "No Label"}, lambda s: not s["labels"]),
    ({"labels": "Any"}, lambda s: bool(s["labels"])),
    ({"labels": "nope"}, lambda s: False),
    ({"milestone": "m1"}, lambda s: s["milestone"] == "m1"),
    ({"milestone": "None"}, lambda s: s["milestone"] is None),
    ({"milestone": "Any"}, lambda s: s["milestone"] is not None),
    ({"assignee_id": "None"}, lambda s: s["assignee"] is None),
    ({"assignee_id": "Any"}, lambda s: s["assignee"] is not None),
    ({"assignee_username": "{alice}"}, lambda s: s["assignee"] == "alice"),
    ({"assignee_username[]": "{bob}"}, lambda s: s["assignee"] == "bob"),
    ({"assignee_id": "{alice_id}"}, lambda s: s["assignee"] == "alice"),
    ({"author_id": "{bob_id}"}, lambda s: s["author"] == "bob"),
    ({"author_username": "{bob}"}, lambda s: s["author"] == "bob"),
    ({"search": "needle"}, lambda s: "needle" in s["title"]),
    ({"search": "FINDME"}, lambda s: "findme" in s["description"]),
    ({"iids[]": "{iid3}"}, lambda s: s["title"].startswith("Issue 3 ")),
    ({"created_after": "2024-01-10T00:00:00Z"}, lambda s: s["created"] >= BASE + dt.timedelta(days=9)),
    ({"created_before": "2024-01-05T00:00:00Z"}, lambda s: s["created"] <= BASE + dt.timedelta(days=4)),
    ({"created_after": "2024-01-05T00:00:00Z", "created_before": "2024-01-05T00:00:00Z"},
     lambda s: s["created"] == BASE + dt.timedelta(days=4)),
    ({"updated_after": "2024-01-20T01:00:00Z"}, lambda s: s["created"] >= BASE + dt.timedelta(days=19)),
    ({"updated_before": "2024-01-03T01:00:00Z"}, lambda s: s["created"] <= BASE + dt.timedelta(days=2)),
    ({"confidential": "true"}, lambda s: s["confidential"]),
    ({"confidential": "false"}, lambda s: not s["confidential"]),
    ({"scope": "all"}, lambda s: True),
    ({"labels": "bug", "state": "opened", "milestone": "m1"},
     lambda s: "Bug" in s["labels"] and not s["closed"] and s["milestone"] == "m1"),
    # the label walk with other filters, another order, and the search index beside it
    ({"labels": "bug", "order_by": "updated_at"}, lambda s: "Bug" in s["labels"]),
    ({"labels": "ui,bug", "confidential": "false"},
     lambda s: s["labels"] == ["Bug", "UI"] and not s["confidential"]),
    ({"labels": "bug", "search": "needle"}, lambda s: "Bug" in s["labels"] and "needle" in s["title"]),
    ({"labels": "bug,nope"}, lambda s: False),
    # search: short terms (no trigrams) scan, longer ones use the index; both are substrings
    ({"search": "ne"}, lambda s: "ne" in s["title"].lower() or "ne" in s["description"]),
    ({"search": "7 NEED"}, lambda s: "7 need" in s["title"].lower()),
    ({"search": "ssue 1"}, lambda s: "ssue 1" in s["title"]),
    ({"search": "ne%dle"}, lambda s: False),
    ({"search": "%"}, lambda s: False),
    ({"search": 'nee"dle'}, lambda s: False),
]


def fill(params, world):
    names = {"alice": None, "bob": None}
    for user in world["project"].members.list(get_all=True):
        for key in names:
            if user.username.startswith(key):
                names[key] = user.username
    values = {**names, "alice_id": world["users"]["alice"], "bob_id": world["users"]["bob"],
              "iid3": world["iids"][3]}
    return {k: (v.format(**values) if isinstance(v, str) else v) for k, v in params.items()}


@pytest.mark.parametrize("params,pred", CASES, ids=[str(c[0]) for c in CASES])
def test_project_filter(server, world, params, pred):
    assert listed(server, world, fill(params, world)) == expected(pred)


def test_my_reaction_emoji(server, world):
    alice = world["tokens"]["alice"]
    assert listed(server, world, {"my_reaction_emoji": "thumbsup"}, token=alice) == \
        expected(lambda s: s["emoji"] == "thumbsup")
    assert listed(server, world, {"my_reaction_emoji": "Any"}, token=alice) == \
        expected(lambda s: s["emoji"] is not None)
    assert listed(server, world, {"my_reaction_emoji": "None"}, token=alice) == \
        expected(lambda s: s["emoji"] is None)
    # someone else's reactions do not count
    assert listed(server, world, {"my_reaction_emoji": "Any"}) == []


def test_order_and_sort(server, world):
    r = server.request("GET", f"/projects/{world['project'].id}/issues", token=server.root_token,
                       params={"per_page": 100})
    created = [i["created_at"] for i in r.json()]
    assert created == sorted(created, reverse=True)
    r = server.request("GET", f"/projects/{world['project'].id}/issues", token=server.root_token,
                       params={"per_page": 100, "order_by": "updated_at", "sort": "asc"})
    updated = [i["updated_at"] for i in r.json()]
    assert updated == sorted(updated)
    assert_json(server.request("GET", f"/projects/{world['project'].id}/issues",
                               token=server.root_token, params={"order_by": "bogus"}), 400,
                {"error": "order_by does not have a valid value"})


def test_label_walk_order_and_pages(server, world):
    path = f"/projects/{world['project'].id}/issues"
    every = server.request("GET", path, token=server.root_token,
                           params={"labels": "bug", "per_page": 100}).json()
    assert len(every) == len(expected(lambda s: "Bug" in s["labels"]))
    created = [i["created_at"] for i in every]
    assert created == sorted(created, reverse=True)
    paged = []
    for page in (1, 2, 3, 4, 5):
        r = server.request("GET", path, token=server.root_token,
                           params={"labels": "bug", "per_page": 5, "page": page})
        assert r.headers["X-Total"] == str(len(every))
        paged += r.json()
    assert [i["iid"] for i in paged] == [i["iid"] for i in every]
    ascending = server.request("GET", path, token=server.root_token,
                               params={"labels": "bug", "sort": "asc", "per_page": 100}).json()
    assert [i["iid"] for i in ascending] == [i["iid"] for i in reversed(every)]
    # a guest needs the confidential check (issue 7 is confidential and labelled Bug)
    guest, guest_token = make_user(server, "labelguest")
    world["project"].members.create({"user_id": guest.id, "access_level": 10})
    r = server.request("GET", path, token=guest_token, params={"labels": "bug", "per_page": 100})
    assert [i["iid"] for i in r.json()] == [i["iid"] for i in every if i["iid"] != world["iids"][7]]
    assert r.headers["X-Total"] == str(len(every) - 1)


def test_pagination_headers(server, world):
    r = server.request("GET", f"/projects/{world['project'].id}/issues", token=server.root_token,
                       params={"per_page": 10, "page": 2})
    assert r.headers["X-Total"] == str(N) and r.headers["X-Total-Pages"] == "4"
    assert r.headers["X-Page"] == "2" and r.headers["X-Next-Page"] == "3"
    assert len(r.json()) == 10 and 'rel="next"' in r.headers["Link"]
    items = server.gitlab().projects.get(world["project"].id).issues.list(iterator=True, per_page=7)
    assert len(list(items)) == N


def test_group_issues(server, world):
    path = f"/groups/{world['group'].id}/issues"
    assert listed(server, world, {}, path=path) == expected(lambda s: True)
    r = server.request("GET", path, token=server.root_token, params={"per_page": 100})
    projects = {i["project_id"] for i in r.json()}
    assert projects == {world["project"].id, world["sibling"].id}
    assert listed(server, world, {"labels": "ui", "state": "closed"}, path=path) == \
        expected(lambda s: "UI" in s["labels"] and s["closed"])
    # a member of the project only sees that project's issues, and not the confidential ones
    alice = world["tokens"]["alice"]
    r = server.request("GET", path, token=alice, params={"per_page": 100})
    assert {i["project_id"] for i in r.json()} == {world["project"].id}
    assert_json(server.request("GET", "/groups/999999/issues", token=alice), 404,
                {"message": "404 Group Not Found"})


def test_global_issues_scopes(server, world):
    bob = world["tokens"]["bob"]
    alice = world["tokens"]["alice"]
    # default scope: created by me
    assert listed(server, world, {}, path="/issues", token=bob) == expected(lambda s: s["author"] == "bob")
    assert listed(server, world, {"scope": "created-by-me"}, path="/issues", token=bob) == \
        expected(lambda s: s["author"] == "bob")
    assert listed(server, world, {"scope": "assigned_to_me"}, path="/issues", token=alice) == \
        expected(lambda s: s["assignee"] == "alice")
    assert listed(server, world, {"scope": "assigned-to-me"}, path="/issues", token=alice) == \
        expected(lambda s: s["assignee"] == "alice")
    assert listed(server, world, {"scope": "all", "labels": "bug"}, path="/issues", token=alice) == \
        expected(lambda s: "Bug" in s["labels"])
    both = {"scope": "all", "author_id": world["users"]["bob"], "state": "opened"}
    assert listed(server, world, both, path="/issues", token=alice) == \
        expected(lambda s: s["author"] == "bob" and not s["closed"])
    assert listed(server, world, {"search": "needle", "in": "title", "scope": "all"},
                  path="/issues") == expected(lambda s: "needle" in s["title"])
    assert listed(server, world, {"search": "needle", "in": "description", "scope": "all"},
                  path="/issues") == []
    assert listed(server, world, {"search": "findme", "in": "title,description", "scope": "all"},
                  path="/issues") == expected(lambda s: "findme" in s["description"])


BAD = [
    ({"author_id": "1", "author_username": "root"}, {"error": "author_id, author_username are mutually exclusive"}),
    ({"assignee_id": "1", "assignee_username": "root"}, {"error": "assignee_id, assignee_username are mutually exclusive"}),
    ({"assignee_username[]": ["a", "b"]}, {"error": "assignee_username allows one value, but found 2: a, b"}),
    ({"created_after": "yesterday"}, {"error": "created_after is invalid"}),
    ({"updated_before": "2024-02-30"}, {"error": "updated_before is invalid"}),
    ({"state": "weird"}, {"error": "state does not have a valid value"}),
    ({"scope": "mine"}, {"error": "scope does not have a valid value"}),
    ({"sort": "up"}, {"error": "sort does not have a valid value"}),
    ({"confidential": "perhaps"}, {"error": "confidential is invalid"}),
    ({"iids[]": "x"}, {"error": "iids is invalid"}),
    ({"assignee_id": "somebody"}, {"error": "assignee_id is invalid"}),
    ({"labels[a]": "b"}, {"error": "labels is invalid"}),
    ({"in": "body"}, {"error": "in does not have a valid value"}),
]


@pytest.mark.parametrize("params,body", BAD, ids=[str(b[0]) for b in BAD])
def test_bad_filters(server, world, params, body):
    for path in (f"/projects/{world['project'].id}/issues", f"/groups/{world['group'].id}/issues", "/issues"):
        r = server.request("GET", path, token=server.root_token, params=params)
        assert_json(r, 400, body)


def test_label_and_search_indexes_follow_every_write(server):
    """The label walk's copies and the search index follow create, update, move and delete."""
    gl = server.gitlab()
    p = gl.projects.create({"name": "idx-" + secrets.token_hex(3)})
    target = gl.projects.create({"name": "idx-target-" + secrets.token_hex(3)})
    word = "zq" + secrets.token_hex(4)

    def found(params, project=p):
        r = server.request("GET", f"/projects/{project.id}/issues", token=server.root_token,
                           params={"per_page": 100, **params})
        assert r.headers["X-Total"] == str(len(r.json()))
        return [i["iid"] for i in assert_json(r, 200)]

    old = p.issues.create({"title": "first", "labels": "walk", "created_at": "2020-01-01T00:00:00Z"})
    new = p.issues.create({"title": f"second {word}", "labels": "walk,other"})
    assert found({"labels": "walk"}) == [new.iid, old.iid]
    assert found({"search": word}) == [new.iid]
    # created_at moves the issue in the label walk; relabelling moves it in and out
    p.issues.update(old.iid, {"created_at": "2030-01-01T00:00:00Z"})
    assert found({"labels": "walk"}) == [old.iid, new.iid]
    p.issues.update(new.iid, {"labels": "other"})
    assert found({"labels": "walk"}) == [old.iid]
    p.issues.update(new.iid, {"add_labels": "walk"})
    assert found({"labels": "walk,other"}) == [new.iid]
    # a new title or description is searchable, the old one is not
    p.issues.update(old.iid, {"title": f"renamed {word.upper()}"})
    assert sorted(found({"search": word})) == sorted([new.iid, old.iid])
    p.issues.update(new.iid, {"title": "plain", "description": f"body {word}"})
    assert sorted(found({"search": word})) == sorted([old.iid, new.iid])
    assert found({"search": word, "in": "title"}) == [old.iid]
    assert found({"search": word, "in": "description"}) == [new.iid]
    # moved: the copy is found in its new project (with its label), the original stays closed
    moved = server.request("POST", f"/projects/{p.id}/issues/{new.iid}/move",
                           token=server.root_token, json={"to_project_id": target.id}).json()
    assert found({"search": word}, project=target) == [moved["iid"]]
    assert found({"search": word, "state": "closed"}) == [new.iid]
    # deleted: gone from the label walk, its count and the search
    assert server.request("DELETE", f"/projects/{p.id}/issues/{old.iid}",
                          token=server.root_token).status_code == 204
    assert found({"labels": "walk"}) == [new.iid]
    assert found({"search": word}) == [new.iid]
    assert found({"labels": "walk", "search": "renamed"}) == []
