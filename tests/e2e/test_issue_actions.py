"""What hangs off one issue, end to end with python-gitlab: notes (and locked discussions),
award emoji (upvotes/downvotes), subscriptions, todos, time tracking with GitLab's human
durations, move, participants, closed_by / related merge requests, user agent detail."""

from __future__ import annotations

import secrets

import gitlab
import pytest

from conftest import ISSUE_NOT_FOUND, assert_json, make_user





@pytest.fixture(scope="module")
def ctx(server):
    owner, owner_token = make_user(server, "owner")
    reporter, reporter_token = make_user(server, "reporter")
    guest, guest_token = make_user(server, "guest")
    outsider, outsider_token = make_user(server, "outsider")
    p = server.gitlab(owner_token).projects.create(
        {"name": "acts-" + secrets.token_hex(3), "visibility": "public"})
    p.members.create({"user_id": reporter.id, "access_level": 20})
    p.members.create({"user_id": guest.id, "access_level": 10})
    return {
        "project": p,
        "owner": (owner, owner_token), "reporter": (reporter, reporter_token),
        "guest": (guest, guest_token), "outsider": (outsider, outsider_token),
    }


def issue_as(server, ctx, token, iid):
    return server.gitlab(token).projects.get(ctx["project"].id, lazy=True).issues.get(iid)


def new_issue(server, ctx, **extra):
    return server.gitlab(ctx["owner"][1]).projects.get(ctx["project"].id, lazy=True).issues.create(
        {"title": "act " + secrets.token_hex(2), **extra})


def test_notes_crud(server, ctx):
    issue = new_issue(server, ctx)
    _, guest_token = ctx["guest"]
    mine = issue_as(server, ctx, guest_token, issue.iid)
    note = mine.notes.create({"body": "first!"})
    assert note.body == "first!" and note.author["id"] == ctx["guest"][0].id
    assert note.noteable_type == "Issue" and note.noteable_iid == issue.iid and note.system is False
    note.body = "edited"
    note.save()
    assert mine.notes.get(note.id).body == "edited"
    second = issue_as(server, ctx, ctx["outsider"][1], issue.iid).notes.create({"body": "second"})
    notes = mine.notes.list(get_all=True, sort="asc")
    assert [n.id for n in notes] == [note.id, second.id]
    assert issue_as(server, ctx, guest_token, issue.iid).user_notes_count == 2
    url = f"/projects/{ctx['project'].id}/issues/{issue.iid}/notes"
    # someone else may not edit it; the maintainer may delete it
    assert_json(server.request("PUT", f"{url}/{note.id}", token=ctx["outsider"][1],
                               json={"body": "hijack"}), 403)
    assert_json(server.request("DELETE", f"{url}/{second.id}", token=guest_token), 403)
    assert server.request("DELETE", f"{url}/{second.id}", token=ctx["owner"][1]).status_code == 204
    assert_json(server.request("GET", f"{url}/{second.id}", token=guest_token), 404,
                {"message": "404 Note Not Found"})
    # bad inputs
    assert_json(server.request("POST", url, token=guest_token, json={}), 400, {"error": "body is missing"})
    assert_json(server.request("POST", url, token=guest_token, json={"body": "  "}), 400)
    assert_json(server.request("POST", url, token=guest_token, json={"body": "x" * 1_000_001}), 400)
    assert_json(server.request("POST", url, json={"body": "anon"}), 401)
    assert_json(server.request("GET", f"/projects/{ctx['project'].id}/issues/99999/notes",
                               token=guest_token), 404, ISSUE_NOT_FOUND)
    assert issue_as(server, ctx, guest_token, issue.iid).user_notes_count == 1


def test_locked_discussion_only_members_comment(server, ctx):
    issue = new_issue(server, ctx, discussion_locked=True)
    assert issue.discussion_locked is True
    url = f"/projects/{ctx['project'].id}/issues/{issue.iid}/notes"
    assert_json(server.request("POST", url, token=ctx["outsider"][1], json={"body": "x"}), 403)
    r = server.request("POST", url, token=ctx["guest"][1], json={"body": "member"})
    assert r.status_code == 201


def test_award_emoji_votes_and_reactions(server, ctx):
    issue = new_issue(server, ctx)
    _, reporter_token = ctx["reporter"]
    mine = issue_as(server, ctx, reporter_token, issue.iid)
    up = mine.awardemojis.create({"name": "thumbsup"})
    assert up.name == "thumbsup" and up.user["id"] == ctx["reporter"][0].id
    issue_as(server, ctx, ctx["guest"][1], issue.iid).awardemojis.create({"name": "thumbsdown"})
    mine.awardemojis.create({"name": "tada"})
    fresh = issue_as(server, ctx, reporter_token, issue.iid)
    assert (fresh.upvotes, fresh.downvotes) == (1, 1)
    assert sorted(a.name for a in fresh.awardemojis.list(get_all=True)) == ["tada", "thumbsdown", "thumbsup"]
    url = f"/projects/{ctx['project'].id}/issues/{issue.iid}/award_emoji"
    dup = server.request("POST", url, token=reporter_token, json={"name": "thumbsup"})
    assert dup.status_code == 404
    bad = server.request("POST", url, token=reporter_token, json={"name": "not_an_emoji_xyz"})
    assert bad.status_code == 404
    assert_json(server.request("POST", url, token=reporter_token, json={}), 400, {"error": "name is missing"})
    # only the awarder (or an admin) removes it
    assert server.request("DELETE", f"{url}/{up.id}", token=ctx["guest"][1]).status_code == 401
    assert server.request("DELETE", f"{url}/{up.id}", token=reporter_token).status_code == 204
    assert issue_as(server, ctx, reporter_token, issue.iid).upvotes == 0
    assert_json(server.request("GET", f"{url}/{up.id}", token=reporter_token), 404,
                {"message": "404 Award Emoji Not Found"})
    reacted = server.request("GET", f"/projects/{ctx['project'].id}/issues", token=reporter_token,
                             params={"my_reaction_emoji": "tada"}).json()
    assert [i["iid"] for i in reacted] == [issue.iid]


def test_award_emoji_on_notes(server, ctx):
    """`.../notes/:note_id/award_emoji`, as python-gitlab's `note.awardemojis`: awards on a note
    are the note's (awardable_type Note), leave the issue's votes and reactions alone, and go
    with the note when it is deleted."""
    issue = new_issue(server, ctx)
    reporter, reporter_token = ctx["reporter"]
    mine = issue_as(server, ctx, reporter_token, issue.iid)
    note = mine.notes.create({"body": "This is an issue note"})
    emoji = note.awardemojis.create({"name": "tractor"})
    assert emoji.name == "tractor" and emoji.user["id"] == reporter.id
    assert emoji.awardable_id == note.id and emoji.awardable_type == "Note"
    assert emoji in note.awardemojis.list()
    up = note.awardemojis.create({"name": "thumbsup"})
    # the same user may give the same emoji to the issue itself
    mine.awardemojis.create({"name": "thumbsup"})
    fresh = issue_as(server, ctx, reporter_token, issue.iid)
    assert (fresh.upvotes, fresh.downvotes) == (1, 0)
    assert [a.name for a in fresh.awardemojis.list(get_all=True)] == ["thumbsup"]
    assert sorted(a.name for a in note.awardemojis.list(get_all=True)) == ["thumbsup", "tractor"]
    base = f"/projects/{ctx['project'].id}/issues/{issue.iid}/notes/{note.id}/award_emoji"
    got = assert_json(server.request("GET", f"{base}/{emoji.id}", token=reporter_token), 200)
    assert got["id"] == emoji.id and got["awardable_type"] == "Note"
    # an issue award is not found under the note, nor a note award under the issue
    issue_url = f"/projects/{ctx['project'].id}/issues/{issue.iid}/award_emoji"
    assert server.request("GET", f"{issue_url}/{emoji.id}", token=reporter_token).status_code == 404
    # bad inputs: duplicate, unknown emoji, missing name, unknown note, no token, another's award
    dup = server.request("POST", base, token=reporter_token, json={"name": "tractor"})
    assert_json(dup, 404, {"message": "404 Award Emoji User has already been taken Not Found"})
    bad = server.request("POST", base, token=reporter_token, json={"name": "not_an_emoji_xyz"})
    assert bad.status_code == 404
    assert_json(server.request("POST", base, token=reporter_token, json={}), 400,
                {"error": "name is missing"})
    unknown = f"/projects/{ctx['project'].id}/issues/{issue.iid}/notes/999999/award_emoji"
    assert_json(server.request("GET", unknown, token=reporter_token), 404,
                {"message": "404 Note Not Found"})
    assert server.request("GET", base).status_code == 401
    notes_url = f"/projects/{ctx['project'].id}/issues/{issue.iid}/notes"
    assert_json(server.request("GET", f"{notes_url}/abc/award_emoji", token=reporter_token), 400,
                {"error": "note_id is invalid"})
    assert_json(server.request("GET", f"{base}/abc", token=reporter_token), 400,
                {"error": "award_id is invalid"})
    assert server.request("DELETE", f"{base}/{up.id}", token=ctx["guest"][1]).status_code == 401
    emoji.delete()
    assert [a.name for a in note.awardemojis.list(get_all=True)] == ["thumbsup"]
    # deleting the note takes its awards along; the issue keeps its own
    note.delete()
    assert issue_as(server, ctx, reporter_token, issue.iid).upvotes == 1
    gone = server.request("GET", f"{base}/{up.id}", token=reporter_token)
    assert_json(gone, 404, {"message": "404 Note Not Found"})


def test_subscribe_unsubscribe_304(server, ctx):
    issue = new_issue(server, ctx)
    url = f"/projects/{ctx['project'].id}/issues/{issue.iid}"
    owner_token = ctx["owner"][1]
    # the creator is subscribed
    assert server.request("POST", f"{url}/subscribe", token=owner_token).status_code == 304
    r = server.request("POST", f"{url}/unsubscribe", token=owner_token)
    assert assert_json(r, 201)["subscribed"] is False
    assert server.request("POST", f"{url}/unsubscribe", token=owner_token).status_code == 304
    other = issue_as(server, ctx, ctx["guest"][1], issue.iid)
    assert other.subscribed is False
    other.subscribe()
    assert other.subscribed is True
    with pytest.raises(gitlab.GitlabSubscribeError):
        other.subscribe()
    other.unsubscribe()
    with pytest.raises(gitlab.GitlabUnsubscribeError):
        other.unsubscribe()
    assert_json(server.request("POST", f"{url}/subscribe"), 401)


def test_todo_201_then_304(server, ctx):
    issue = new_issue(server, ctx)
    url = f"/projects/{ctx['project'].id}/issues/{issue.iid}/todo"
    r = server.request("POST", url, token=ctx["guest"][1])
    todo = assert_json(r, 201)
    assert todo["action_name"] == "marked" and todo["target_type"] == "Issue"
    assert todo["state"] == "pending" and todo["target"]["iid"] == issue.iid
    assert todo["project"]["id"] == ctx["project"].id
    assert set(todo["project"]) >= {"id", "name", "name_with_namespace", "path", "path_with_namespace"}
    assert todo["author"]["id"] == ctx["guest"][0].id and todo["target_url"].endswith(f"/issues/{issue.iid}")
    assert server.request("POST", url, token=ctx["guest"][1]).status_code == 304


def fresh_stats(server, ctx, iid):
    r = server.request("GET", f"/projects/{ctx['project'].id}/issues/{iid}/time_stats",
                       token=ctx["guest"][1])
    return assert_json(r, 200)


def test_time_tracking(server, ctx):
    issue = new_issue(server, ctx)
    mine = issue_as(server, ctx, ctx["reporter"][1], issue.iid)
    stats = mine.time_estimate("3h30m")
    assert stats == {"time_estimate": 12600, "total_time_spent": 0,
                     "human_time_estimate": "3h 30m", "human_total_time_spent": None}
    stats = mine.time_estimate("1mo 2w 3d 4h 5m")
    assert stats["time_estimate"] == ((4 * 5 + 2 * 5 + 3) * 8 + 4) * 3600 + 300
    assert stats["human_time_estimate"] == "1mo 2w 3d 4h 5m"
    stats = mine.add_spent_time("1d")
    assert stats["total_time_spent"] == 8 * 3600 and stats["human_total_time_spent"] == "1d"
    stats = mine.add_spent_time("-2h")
    assert stats["total_time_spent"] == 6 * 3600 and stats["human_total_time_spent"] == "6h"
    assert fresh_stats(server, ctx, issue.iid)["total_time_spent"] == 6 * 3600
    assert issue_as(server, ctx, ctx["reporter"][1], issue.iid).attributes["time_stats"]["time_estimate"] == stats["time_estimate"]
    url = f"/projects/{ctx['project'].id}/issues/{issue.iid}"
    token = ctx["reporter"][1]
    for path, body in (("time_estimate", {"duration": "soon"}), ("add_spent_time", {"duration": "3x"}),
                       ("add_spent_time", {"duration": "-1w"}), ("time_estimate", {"duration": "-1h"})):
        assert_json(server.request("POST", f"{url}/{path}", token=token, json=body), 400)
    assert_json(server.request("POST", f"{url}/time_estimate", token=token, json={}), 400,
                {"error": "duration is missing"})
    assert fresh_stats(server, ctx, issue.iid)["total_time_spent"] == 6 * 3600
    assert_json(server.request("POST", f"{url}/time_estimate", token=ctx["guest"][1],
                               json={"duration": "1h"}), 403)
    assert mine.reset_time_estimate()["time_estimate"] == 0
    reset = mine.reset_spent_time()
    assert reset["total_time_spent"] == 0 and reset["human_total_time_spent"] is None


def test_time_tracking_limit_to_hours(make_server):
    server = make_server()
    r = server.request("PUT", "/application/settings", token=server.root_token,
                       json={"time_tracking_limit_to_hours": True})
    assert r.status_code == 200, r.text
    p = server.gitlab().projects.create({"name": "hours"})
    issue = p.issues.create({"title": "h"})
    assert server.wait_for(
        lambda: issue.time_estimate("1w 1h")["human_time_estimate"] == "41h", timeout=70)


def test_move(server, ctx):
    owner, owner_token = ctx["owner"]
    gl = server.gitlab(owner_token)
    source = gl.projects.get(ctx["project"].id)
    target = gl.projects.create({"name": "target-" + secrets.token_hex(3)})
    target.labels.create({"name": "Shared", "color": "#00ff00"})
    target.milestones.create({"title": "Release"})
    target.issues.create({"title": "already there"})
    ms = source.milestones.create({"title": "Release"})
    issue = source.issues.create({"title": "mover", "labels": "shared,only-here", "milestone_id": ms.id,
                                  "description": "body"})
    old_iid = issue.iid
    issue.move(target.id)
    moved = issue.attributes
    assert moved["project_id"] == target.id and moved["iid"] == 2
    assert moved["labels"] == ["Shared"] and moved["milestone"]["title"] == "Release"
    assert moved["milestone"]["project_id"] == target.id
    assert moved["title"] == "mover" and moved["description"] == "body"
    old = source.issues.get(old_iid)
    assert old.state == "closed" and old.moved_to_id == moved["id"]
    url = f"/projects/{source.id}/issues"
    other = source.issues.create({"title": "stay"})
    assert_json(server.request("POST", f"{url}/{other.iid}/move", token=owner_token,
                               json={"to_project_id": source.id}), 400,
                {"message": "Cannot move issue to project it originates from!"})
    foreign = server.gitlab(ctx["outsider"][1]).projects.create(
        {"name": "foreign-" + secrets.token_hex(3), "visibility": "public"})
    assert_json(server.request("POST", f"{url}/{other.iid}/move", token=owner_token,
                               json={"to_project_id": foreign.id}), 400,
                {"message": "Cannot move issue due to insufficient permissions!"})
    assert_json(server.request("POST", f"{url}/{other.iid}/move", token=owner_token, json={}), 400,
                {"error": "to_project_id is missing"})
    assert_json(server.request("POST", f"{url}/{other.iid}/move", token=owner_token,
                               json={"to_project_id": 999999}), 404, {"message": "404 Project Not Found"})
    assert source.issues.get(other.iid).state == "opened"


def test_participants_and_merge_request_lists(server, ctx):
    reporter = ctx["reporter"][0]
    issue = new_issue(server, ctx, assignee_ids=[reporter.id])
    issue_as(server, ctx, ctx["guest"][1], issue.iid).notes.create({"body": "hi"})
    mine = issue_as(server, ctx, ctx["owner"][1], issue.iid)
    ids = [u["id"] for u in mine.participants()]
    assert ids == [ctx["owner"][0].id, reporter.id, ctx["guest"][0].id]
    assert mine.closed_by() == []
    assert mine.related_merge_requests() == []


def test_user_agent_detail(server, ctx):
    url = f"/projects/{ctx['project'].id}/issues"
    r = server.request("POST", url, token=ctx["owner"][1], json={"title": "ua"},
                       headers={"User-Agent": "trellis-test/1.0"})
    iid = assert_json(r, 201)["iid"]
    detail = server.request("GET", f"{url}/{iid}/user_agent_detail", token=server.root_token)
    assert assert_json(detail, 200) == {"user_agent": "trellis-test/1.0", "ip_address": "127.0.0.1",
                                        "spam_filter_submitted": False}
    assert_json(server.request("GET", f"{url}/{iid}/user_agent_detail", token=ctx["owner"][1]), 403)
    assert_json(server.request("GET", f"{url}/{iid}/user_agent_detail"), 401)
