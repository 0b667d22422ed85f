"""System notes on issues, end to end with python-gitlab: the notes GitLab writes when an
issue's assignees, title, description, confidentiality, lock, due date or time tracking
change (exact bodies, `system: true`, by the acting user), that they are not counted in
`user_notes_count`, subscribe nobody and cannot be edited or deleted, that a failed update
writes none, and that a move copies the notes and award emoji and adds the "moved" notes."""

from __future__ import annotations

import datetime as dt
import re
import secrets

import pytest

from conftest import FORBIDDEN, assert_json, make_user



@pytest.fixture(scope="module")
def ctx(server):
    owner, owner_token = make_user(server, "owner")
    reporter, reporter_token = make_user(server, "rep")
    guest, guest_token = make_user(server, "guest")
    others = [make_user(server, name) for name in ("ann", "bob", "cat")]
    p = server.gitlab(owner_token).projects.create(
        {"name": "sysnotes-" + secrets.token_hex(3), "visibility": "public"})
    p.members.create({"user_id": reporter.id, "access_level": 20})
    p.members.create({"user_id": guest.id, "access_level": 10})
    for user, _ in others:
        p.members.create({"user_id": user.id, "access_level": 30})
    return {
        "project": p,
        "owner": (owner, owner_token), "reporter": (reporter, reporter_token),
        "guest": (guest, guest_token), "others": [u for u, _ in others],
    }


def project_as(server, ctx, token):
    return server.gitlab(token).projects.get(ctx["project"].id, lazy=True)


def issue_url(ctx, iid):
    return f"/projects/{ctx['project'].id}/issues/{iid}"


def notes_of(server, ctx, iid, token=None):
    """All notes of the issue, oldest first, as JSON."""
    r = server.request("GET", f"{issue_url(ctx, iid)}/notes", token=token or ctx["owner"][1],
                       params={"sort": "asc", "per_page": 100})
    return assert_json(r, 200)


def system_bodies(server, ctx, iid):
    return [n["body"] for n in notes_of(server, ctx, iid) if n["system"]]


def put(server, ctx, iid, token, **body):
    return server.request("PUT", issue_url(ctx, iid), token=token, json=body)


def long_date(date: dt.date) -> str:
    return f"{date:%B} {date.day}, {date.year}"


def test_update_notes_each_change_with_gitlabs_body(server, ctx):
    reporter, token = ctx["reporter"]
    issue = project_as(server, ctx, ctx["owner"][1]).issues.create({"title": "Old title"})
    iid = issue.iid
    assert system_bodies(server, ctx, iid) == []
    assert_json(put(server, ctx, iid, token, title="New title"), 200)
    assert_json(put(server, ctx, iid, token, title="Lorem ipsum"), 200)
    assert_json(put(server, ctx, iid, token, description="- [ ] one\n- [ ] two"), 200)
    assert_json(put(server, ctx, iid, token, description="- [ ] one\n- [x] two"), 200)
    assert_json(put(server, ctx, iid, token, confidential=True), 200)
    assert_json(put(server, ctx, iid, token, confidential=False), 200)
    assert_json(put(server, ctx, iid, token, discussion_locked=True), 200)
    assert_json(put(server, ctx, iid, token, discussion_locked=False), 200)
    due = dt.date(2031, 6, 5)
    assert_json(put(server, ctx, iid, token, due_date=due.isoformat()), 200)
    assert_json(put(server, ctx, iid, token, due_date="2031-12-24"), 200)
    assert_json(put(server, ctx, iid, token, due_date=""), 200)
    assert system_bodies(server, ctx, iid) == [
        "changed title from **{-Old-} title** to **{+New+} title**",
        "changed title from **{-New title-}** to **{+Lorem ipsum+}**",
        "changed the description",
        "marked the checklist item **two** as completed",
        "made the issue confidential",
        "made the issue visible to everyone",
        "locked the discussion in this issue",
        "unlocked the discussion in this issue",
        f"changed due date to {long_date(due)}",
        "changed due date to December 24, 2031",
        "removed due date December 24, 2031",
    ]
    notes = notes_of(server, ctx, iid)
    assert all(n["system"] is True and n["author"]["id"] == reporter.id for n in notes)
    assert all(n["noteable_iid"] == iid and n["noteable_type"] == "Issue" for n in notes)
    fresh = project_as(server, ctx, token).issues.get(iid)
    assert fresh.user_notes_count == 0


def test_assignee_notes(server, ctx):
    _, token = ctx["owner"]
    ann, bob, cat = ctx["others"]
    issue = project_as(server, ctx, token).issues.create({"title": "assign"})
    for ids in ([ann.id], [bob.id, cat.id], [], [ann.id, bob.id, cat.id], [ann.id, bob.id, cat.id],
                [cat.id, ann.id, bob.id], [0]):
        assert_json(put(server, ctx, issue.iid, token, assignee_ids=ids), 200)
    assert system_bodies(server, ctx, issue.iid) == [
        f"assigned to @{ann.username}",
        f"assigned to @{bob.username} and @{cat.username} and unassigned @{ann.username}",
        f"unassigned @{bob.username} and @{cat.username}",
        f"assigned to @{ann.username}, @{bob.username}, and @{cat.username}",
        # in the order they were assigned
        f"unassigned @{cat.username}, @{ann.username}, and @{bob.username}",
    ]


def test_no_notes_for_labels_milestones_state_or_unchanged_values(server, ctx):
    _, token = ctx["owner"]
    p = project_as(server, ctx, token)
    ms = p.milestones.create({"title": "m-" + secrets.token_hex(2)})
    issue = p.issues.create({"title": "quiet", "description": "same", "confidential": False})
    for body in ({"labels": "bug,ui"}, {"add_labels": "x"}, {"remove_labels": "bug"},
                 {"milestone_id": ms.id}, {"milestone_id": 0}, {"state_event": "close"},
                 {"state_event": "reopen"}, {"title": "quiet"}, {"description": "same"},
                 {"confidential": False}, {"discussion_locked": False}, {"assignee_ids": []},
                 {"due_date": ""}):
        assert_json(put(server, ctx, issue.iid, token, **body), 200)
    assert notes_of(server, ctx, issue.iid) == []


def test_one_update_writes_its_notes_in_gitlabs_order(server, ctx):
    owner, token = ctx["owner"]
    ann = ctx["others"][0]
    issue = project_as(server, ctx, token).issues.create({"title": "before"})
    r = put(server, ctx, issue.iid, token, title="after", confidential=True, assignee_ids=[ann.id],
            description="text", discussion_locked=True, due_date="2032-01-02", labels="l1")
    assert_json(r, 200)
    assert system_bodies(server, ctx, issue.iid) == [
        "changed title from **{-before-}** to **{+after+}**",
        "changed the description",
        "locked the discussion in this issue",
        "changed due date to January 2, 2032",
        f"assigned to @{ann.username}",
        "made the issue confidential",
    ]
    times = {n["created_at"] for n in notes_of(server, ctx, issue.iid)}
    assert len(times) == 1


def test_create_notes_due_date_and_assignees(server, ctx):
    owner, token = ctx["owner"]
    ann, bob, _ = ctx["others"]
    issue = project_as(server, ctx, token).issues.create(
        {"title": "born", "due_date": "2033-03-04", "assignee_ids": [ann.id, bob.id],
         "confidential": True, "discussion_locked": True, "labels": "a"})
    notes = notes_of(server, ctx, issue.iid)
    assert [n["body"] for n in notes] == [
        "changed due date to March 4, 2033",
        f"assigned to @{ann.username} and @{bob.username}",
    ]
    assert all(n["system"] and n["author"]["id"] == owner.id for n in notes)
    assert issue.user_notes_count == 0
    # a guest's metadata is dropped, and so are its notes
    plain = project_as(server, ctx, ctx["guest"][1]).issues.create(
        {"title": "guest", "due_date": "2033-03-04", "assignee_ids": [ann.id]})
    assert notes_of(server, ctx, plain.iid) == []


def test_time_tracking_notes(server, ctx):
    reporter, token = ctx["reporter"]
    issue = project_as(server, ctx, ctx["owner"][1]).issues.create({"title": "timed"})
    mine = project_as(server, ctx, token).issues.get(issue.iid)
    mine.time_estimate("1h")
    mine.time_estimate("1h")
    mine.time_estimate("1w 4d 5h")
    mine.reset_time_estimate()
    mine.reset_time_estimate()
    mine.add_spent_time("1d 2h")
    mine.add_spent_time("-30m")
    mine.reset_spent_time()
    notes = notes_of(server, ctx, issue.iid)
    bodies = [n["body"] for n in notes]
    assert bodies[:3] == [
        "added time estimate of 1h",
        "changed time estimate to 1w 4d 5h from 1h",
        "removed time estimate of 1w 4d 5h",
    ]
    stamp = r"at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC"
    added = re.fullmatch(f"added 1d 2h of time spent {stamp}", bodies[3])
    subtracted = re.fullmatch(f"subtracted 30m of time spent {stamp}", bodies[4])
    assert added and subtracted, bodies
    logged = dt.datetime.strptime(added.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=dt.timezone.utc)
    created = dt.datetime.fromisoformat(notes[3]["created_at"].replace("Z", "+00:00"))
    assert abs((created - logged).total_seconds()) < 1
    assert bodies[5:] == ["removed time spent"]
    assert all(n["system"] and n["author"]["id"] == reporter.id for n in notes)
    # failed time tracking writes nothing
    url = issue_url(ctx, issue.iid)
    for path, body in (("time_estimate", {"duration": "soon"}), ("add_spent_time", {"duration": "-1w"}),
                       ("time_estimate", {"duration": "-1h"})):
        assert_json(server.request("POST", f"{url}/{path}", token=token, json=body), 400)
    assert_json(server.request("POST", f"{url}/time_estimate", token=ctx["guest"][1],
                               json={"duration": "1h"}), 403)
    assert len(notes_of(server, ctx, issue.iid)) == 6


def test_system_notes_are_not_editable_or_deletable(server, ctx):
    reporter, token = ctx["reporter"]
    issue = project_as(server, ctx, ctx["owner"][1]).issues.create({"title": "fixed"})
    assert_json(put(server, ctx, issue.iid, token, title="changed"), 200)
    note = notes_of(server, ctx, issue.iid)[0]
    url = f"{issue_url(ctx, issue.iid)}/notes/{note['id']}"
    shown = assert_json(server.request("GET", url, token=ctx["guest"][1]), 200)
    assert shown["system"] is True and shown["body"] == note["body"]
    # not its author, not the project's owner, not an administrator
    for who in (token, ctx["owner"][1], server.root_token):
        assert_json(server.request("PUT", url, token=who, json={"body": "rewritten"}), 403, FORBIDDEN)
        assert_json(server.request("DELETE", url, token=who), 403, FORBIDDEN)
    assert notes_of(server, ctx, issue.iid) == [note]
    # user notes beside it are counted and editable as before
    mine = project_as(server, ctx, token).issues.get(issue.iid)
    comment = mine.notes.create({"body": "a comment"})
    comment.body = "edited"
    comment.save()
    fresh = project_as(server, ctx, token).issues.get(issue.iid)
    assert fresh.user_notes_count == 1
    listed = notes_of(server, ctx, issue.iid)
    assert [(n["system"], n["body"]) for n in listed] == [(True, note["body"]), (False, "edited")]
    r = server.request("GET", f"{issue_url(ctx, issue.iid)}/notes", token=token)
    assert r.headers["X-Total"] == "2"


def test_failed_update_writes_no_note(server, ctx):
    _, token = ctx["owner"]
    ann = ctx["others"][0]
    issue = project_as(server, ctx, token).issues.create({"title": "stable"})
    for body in ({"title": ""}, {"title": "x" * 256},
                 {"title": "renamed", "milestone_id": 999999},
                 {"title": "renamed", "description": "d" * 1_000_001},
                 {"title": "renamed", "assignee_ids": [ann.id], "due_date": "not-a-date"},
                 {"confidential": True, "state_event": "explode"}):
        r = put(server, ctx, issue.iid, token, **body)
        assert r.status_code == 400, (body, r.text)
    assert_json(put(server, ctx, issue.iid, ctx["guest"][1], title="guest rename"), 403)
    assert notes_of(server, ctx, issue.iid) == []
    fresh = project_as(server, ctx, token).issues.get(issue.iid)
    assert fresh.title == "stable" and fresh.assignees == [] and fresh.confidential is False


def test_system_notes_make_nobody_a_participant_or_subscriber(server, ctx):
    owner, owner_token = ctx["owner"]
    reporter, token = ctx["reporter"]
    issue = project_as(server, ctx, owner_token).issues.create({"title": "watchers"})
    assert_json(put(server, ctx, issue.iid, token, title="watched"), 200)
    mine = project_as(server, ctx, token).issues.get(issue.iid)
    assert mine.subscribed is False
    assert [u["id"] for u in mine.participants()] == [owner.id]
    mine.notes.create({"body": "now I take part"})
    mine = project_as(server, ctx, token).issues.get(issue.iid)
    assert mine.subscribed is True
    assert [u["id"] for u in mine.participants()] == [owner.id, reporter.id]


def test_move_copies_notes_and_award_emoji(server, ctx):
    owner, owner_token = ctx["owner"]
    reporter, reporter_token = ctx["reporter"]
    guest, guest_token = ctx["guest"]
    ann = ctx["others"][0]
    gl = server.gitlab(owner_token)
    source = gl.projects.get(ctx["project"].id)
    group = server.gitlab().groups.create({"name": "grp-" + secrets.token_hex(3),
                                           "path": "grp-" + secrets.token_hex(3)})
    group.members.create({"user_id": owner.id, "access_level": 40})
    target = gl.projects.create({"name": "dest-" + secrets.token_hex(3), "namespace_id": group.id})
    target.issues.create({"title": "already there"})
    issue = source.issues.create({"title": "traveller", "assignee_ids": [ann.id]})
    as_reporter = project_as(server, ctx, reporter_token).issues.get(issue.iid)
    as_guest = project_as(server, ctx, guest_token).issues.get(issue.iid)
    as_guest.notes.create({"body": "guest says hi"})
    as_reporter.notes.create({"body": "between us", "internal": True})
    assert_json(put(server, ctx, issue.iid, reporter_token, title="traveller 2"), 200)
    as_reporter.awardemojis.create({"name": "thumbsup"})
    as_guest.awardemojis.create({"name": "thumbsup"})
    as_guest.awardemojis.create({"name": "thumbsdown"})
    source.issues.get(issue.iid).awardemojis.create({"name": "tada"})
    before = notes_of(server, ctx, issue.iid)
    awards_before = source.issues.get(issue.iid).awardemojis.list(get_all=True)
    assert len(before) == 4

    r = server.request("POST", f"{issue_url(ctx, issue.iid)}/move", token=owner_token,
                       json={"to_project_id": target.id})
    moved = assert_json(r, 201)
    assert moved["iid"] == 2 and moved["project_id"] == target.id
    assert moved["user_notes_count"] == 2
    assert (moved["upvotes"], moved["downvotes"]) == (2, 1)

    r = server.request("GET", f"/projects/{target.id}/issues/{moved['iid']}/notes", token=owner_token,
                       params={"sort": "asc"})
    after = assert_json(r, 200)
    keys = ("body", "system", "internal", "confidential", "created_at", "updated_at")
    assert [{k: n[k] for k in keys} for n in after[:-1]] == [{k: n[k] for k in keys} for n in before]
    assert [n["author"]["id"] for n in after[:-1]] == [n["author"]["id"] for n in before]
    assert all(n["noteable_id"] == moved["id"] and n["project_id"] == target.id for n in after)
    assert {n["id"] for n in after}.isdisjoint({n["id"] for n in before})
    source_path = f"{owner.username}/{source.path}"
    assert after[-1]["body"] == f"moved from {source_path}#{issue.iid}"
    assert after[-1]["system"] is True and after[-1]["author"]["id"] == owner.id
    old_notes = notes_of(server, ctx, issue.iid)
    assert old_notes[:-1] == before
    assert old_notes[-1]["body"] == f"moved to {group.full_path}/{target.path}#{moved['iid']}"
    assert old_notes[-1]["author"]["id"] == owner.id

    r = server.request("GET", f"/projects/{target.id}/issues/{moved['iid']}/award_emoji",
                       token=owner_token)
    awards = assert_json(r, 200)
    assert [(a["name"], a["user"]["id"]) for a in awards] == \
        [(a.name, a.user["id"]) for a in awards_before]
    assert all(a["awardable_id"] == moved["id"] for a in awards)
    # the internal note stays internal in its new home: a guest of the target does not see it
    target.members.create({"user_id": guest.id, "access_level": 10})
    r = server.request("GET", f"/projects/{target.id}/issues/{moved['iid']}/notes", token=guest_token)
    assert "between us" not in [n["body"] for n in assert_json(r, 200)]
    # the original keeps its own notes and counts
    old = source.issues.get(issue.iid)
    assert old.user_notes_count == 2 and (old.upvotes, old.downvotes) == (2, 1)


def test_move_within_a_namespace_names_the_project_by_path(server, ctx):
    _, owner_token = ctx["owner"]
    gl = server.gitlab(owner_token)
    source = gl.projects.get(ctx["project"].id)
    sibling = gl.projects.create({"name": "sibling-" + secrets.token_hex(3)})
    issue = source.issues.create({"title": "short hop"})
    old_iid = issue.iid
    issue.move(sibling.id)
    moved = issue.attributes
    assert moved["user_notes_count"] == 0 and (moved["upvotes"], moved["downvotes"]) == (0, 0)
    r = server.request("GET", f"/projects/{sibling.id}/issues/{moved['iid']}/notes", token=owner_token)
    assert [n["body"] for n in assert_json(r, 200)] == [f"moved from {source.path}#{old_iid}"]
    assert system_bodies(server, ctx, old_iid) == [f"moved to {sibling.path}#{moved['iid']}"]
