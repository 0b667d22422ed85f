"""What hangs off one merge request besides its code, end to end: the system notes GitLab writes
when an MR is edited, pushed to, retargeted, approved, locked or time-tracked (exact bodies,
`system: true`, not counted in user_notes_count); the Note Hook for comments on an MR (and
on a line of its diff); award emoji on the MR and on its notes (upvotes/downvotes); subscribe,
to-do, time tracking; related_issues and merge_ref; who may do what, and other tenants kept out.

GitLab CE's answers throughout (docs.gitlab.com: api/merge_requests, api/emoji_reactions,
api/notes, user/project/integrations/webhook_events "Comment on a merge request"); the system
note bodies are GitLab's (app/services/system_notes/issuables_service.rb,
merge_requests_service.rb, commit_service.rb, time_tracking_service.rb), as the issue ones in
test_issue_system_notes.py.

Sections (for `-k`): system_notes, note_hook, award, subscribe, todo, time, related_issues,
merge_ref, permissions, tenant.
"""

from __future__ import annotations

import re
import time

import gitlab
import pytest

from conftest import (FORBIDDEN, ISO_MS, JSON, LOOPBACK_RECEIVERS, PROJECT_NOT_FOUND,
                      UNAUTHORIZED, assert_json, make_user, other_tenant, require_program)
from merge_request_support import (new_project, add_member, Work, mrs_url, open_mr, get_mr,
                                   put_mr, poll, checked, mergeable)

NOT_FOUND = {"message": "404 Not found"}  # an unknown MR iid: ActiveRecord::RecordNotFound
AWARD_NOT_FOUND = {"message": "404 Award Emoji Not Found"}
AWARD_TAKEN = {"message": "404 Award Emoji User has already been taken Not Found"}
SHA = re.compile(r"^[0-9a-f]{40}$")
UTC_TEXT = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$")
NO_TIME = {"time_estimate": 0, "total_time_spent": 0, "human_time_estimate": None,
           "human_total_time_spent": None}
AWARD_FIELDS = {"id", "name", "user", "created_at", "updated_at", "awardable_id",
                "awardable_type"}
# GitLab's Note Hook (lib/gitlab/data_builder/note.rb): the note's hook attributes and, for a
# note on a merge request, the merge request's (`merge_request`) beside them.
NOTE_TOP = {"object_kind", "event_type", "user", "project_id", "project", "repository",
            "object_attributes", "merge_request"}
NOTE_ATTRS = {"id", "note", "noteable_type", "author_id", "created_at", "updated_at", "project_id",
              "attachment", "line_code", "commit_id", "noteable_id", "system", "st_diff", "action",
              "url"}
ISSUE_BASIC = {"id", "iid", "project_id", "title", "description", "state", "web_url",
               "references"}


@pytest.fixture(scope="module", autouse=True)
def _git():
    require_program("git", "git")


@pytest.fixture(scope="module")
def server(make_server):
    """Loopback opened for the webhook receiver, and local hook requests allowed."""
    srv = make_server(LOOPBACK_RECEIVERS)
    assert_json(srv.request("PUT", "/application/settings", token=srv.root_token,
                            json={"allow_local_requests_from_web_hooks_and_services": True}), 200)
    return srv


@pytest.fixture(scope="module")
def people(server):
    """A user (and token) for each role; each test makes them members of its own project.
    ann, bob and cat are assignees and reviewers."""
    return {role: make_user(server, role)
            for role in ("developer", "reporter", "guest", "outsider", "ann", "bob", "cat")}


# ---- helpers ---------------------------------------------------------------------


def post(server, project, iid, sub, token=None, **body):
    return server.request("POST", mrs_url(project, iid, sub), token=token or server.root_token,
                          json=body or None)


def with_branch(server, tmp_path, project, branch="feature", **fields) -> tuple[Work, dict]:
    """A clone with `branch` (one commit on main) pushed, and root's MR of it into main."""
    work = Work(server, tmp_path, project)
    work.commit(branch, f"Start {branch}", {f"{branch}.txt": "one\n"}, start="main")
    work.push(branch)
    return work, open_mr(server, project, branch, **fields)


def notes_of(server, project, iid, token=None) -> list:
    """Every note of the MR, oldest first."""
    r = server.request("GET", mrs_url(project, iid, "/notes"), token=token or server.root_token,
                       params={"sort": "asc", "order_by": "created_at", "per_page": 100})
    return assert_json(r, 200)


def system_bodies(server, project, iid) -> list[str]:
    return [n["body"] for n in notes_of(server, project, iid) if n["system"]]


def comment(server, project, iid, body, token=None) -> dict:
    return assert_json(post(server, project, iid, "/notes", token=token, body=body), 201)


# ---- system notes ------------------------------------------------------------------------


def test_system_notes_title_description_lock_and_draft(server, people, tmp_path):
    """Each edit writes GitLab's note, by whoever edited: the title with GitLab's inline diff
    markup, the description, the discussion lock ("the discussion in this merge request"), and
    a `Draft:` prefix put on and taken off ("marked this merge request as **draft**/**ready**",
    with no title note: the title without the prefix did not change)."""
    project = new_project(server)
    dev, dev_token = people["developer"]
    add_member(server, project, dev, "developer")
    _, mr = with_branch(server, tmp_path, project, title="Old title")
    iid = mr["iid"]
    assert notes_of(server, project, iid) == []

    for fields in ({"title": "New title"}, {"title": "Lorem ipsum"},
                   {"description": "Now described"}, {"discussion_locked": True},
                   {"discussion_locked": False}, {"title": "Draft: Lorem ipsum"},
                   {"title": "Lorem ipsum"}):
        assert_json(put_mr(server, project, iid, token=dev_token, **fields), 200)
    assert system_bodies(server, project, iid) == [
        "changed title from **{-Old-} title** to **{+New+} title**",
        "changed title from **{-New title-}** to **{+Lorem ipsum+}**",
        "changed the description",
        "locked the discussion in this merge request",
        "unlocked the discussion in this merge request",
        "marked this merge request as **draft**",
        "marked this merge request as **ready**",
    ]
    notes = notes_of(server, project, iid)
    assert all(n["system"] is True and n["author"]["id"] == dev.id for n in notes)
    assert all(n["noteable_type"] == "MergeRequest" and n["noteable_iid"] == iid
               and n["noteable_id"] == mr["id"] for n in notes)
    assert all(ISO_MS.match(n["created_at"]) for n in notes)
    assert get_mr(server, project, iid)["user_notes_count"] == 0


def test_system_notes_assignees_and_reviewers(server, people, tmp_path):
    """Assignees and reviewers added and removed, named as GitLab names them (to_sentence)."""
    project = new_project(server)
    ann, bob, cat = (people[name][0] for name in ("ann", "bob", "cat"))
    for user in (ann, bob, cat):
        add_member(server, project, user, "developer")
    _, mr = with_branch(server, tmp_path, project)
    iid = mr["iid"]

    for ids in ([ann.id], [bob.id, cat.id], []):
        assert_json(put_mr(server, project, iid, assignee_ids=ids), 200)
    for ids in ([ann.id], [bob.id], []):
        assert_json(put_mr(server, project, iid, reviewer_ids=ids), 200)
    assert system_bodies(server, project, iid) == [
        f"assigned to @{ann.username}",
        f"assigned to @{bob.username} and @{cat.username} and unassigned @{ann.username}",
        f"unassigned @{bob.username} and @{cat.username}",
        f"requested review from @{ann.username}",
        f"requested review from @{bob.username} and removed review request for @{ann.username}",
        f"removed review request for @{bob.username}",
    ]
    assert get_mr(server, project, iid)["user_notes_count"] == 0


def test_system_notes_target_branch_and_approvals(server, people, tmp_path):
    """Another target branch ("changed target branch from `main` to `stable`"), an approval
    and its withdrawal, each by its actor."""
    project = new_project(server)
    dev, dev_token = people["developer"]
    add_member(server, project, dev, "developer")
    work, mr = with_branch(server, tmp_path, project)
    work.git("branch", "stable", "origin/main")
    work.push("stable")
    iid = mr["iid"]

    assert assert_json(put_mr(server, project, iid, target_branch="stable"),
                       200)["target_branch"] == "stable"
    assert_json(post(server, project, iid, "/approve", token=dev_token), 201)
    assert_json(post(server, project, iid, "/unapprove", token=dev_token), 201)
    notes = [n for n in notes_of(server, project, iid) if n["system"]]
    assert [(n["body"], n["author"]["id"]) for n in notes] == [
        ("changed target branch from `main` to `stable`", 1),
        ("approved this merge request", dev.id),
        ("unapproved this merge request", dev.id),
    ]


def test_system_notes_for_pushed_commits(server, tmp_path):
    """A push to the source branch adds "added 1 commit" (then a list with each new commit's
    short id and title, and a link to compare with the previous version), by the pusher; a push
    of two says "added 2 commits". Opening the MR adds none."""
    project = new_project(server)
    work, mr = with_branch(server, tmp_path, project)
    iid = mr["iid"]
    assert notes_of(server, project, iid) == []

    def commit_notes():
        return [n for n in notes_of(server, project, iid)
                if n["system"] and n["body"].startswith("added ")]

    def short_ids():
        r = server.request("GET", mrs_url(project, iid, "/commits"), token=server.root_token)
        return {c["id"]: c["short_id"] for c in assert_json(r, 200)}

    second = work.commit("feature", "Second step", {"feature.txt": "one\ntwo\n"})
    work.push("feature")
    (note,) = poll(commit_notes, lambda found: len(found) == 1, "the note of the first push")
    assert note["body"].split("\n")[0] == "added 1 commit"
    assert short_ids()[second] in note["body"]
    assert note["author"]["id"] == 1 and note["noteable_type"] == "MergeRequest"

    third = work.commit("feature", "Third step", {"feature.txt": "one\ntwo\nthree\n"})
    fourth = work.commit("feature", "Fourth step", {"feature.txt": "one\ntwo\nthree\nfour\n"})
    work.push("feature")
    found = poll(commit_notes, lambda found: len(found) == 2, "the note of the second push")
    body = found[1]["body"]
    assert body.split("\n")[0] == "added 2 commits"
    ids = short_ids()
    assert ids[third] in body and ids[fourth] in body
    assert "Second step" not in body  # the list has only the new commits
    assert get_mr(server, project, iid)["user_notes_count"] == 0


def test_system_notes_of_one_update_in_gitlabs_order(server, people, tmp_path):
    """One PUT changing several things: title, description, lock and target branch notes in
    GitLab's order (Issuable::CommonSystemNotesService, then the branch), then the assignee and
    reviewer notes; labels and milestones write none."""
    project = new_project(server)
    ann, bob = people["ann"][0], people["bob"][0]
    add_member(server, project, ann, "developer")
    add_member(server, project, bob, "developer")
    work, mr = with_branch(server, tmp_path, project, title="before")
    work.git("branch", "stable", "origin/main")
    work.push("stable")
    iid = mr["iid"]
    r = put_mr(server, project, iid, title="after", description="text", discussion_locked=True,
               target_branch="stable", assignee_ids=[ann.id], reviewer_ids=[bob.id],
               labels="l1")
    assert_json(r, 200)
    bodies = system_bodies(server, project, iid)
    assert bodies[:4] == [
        "changed title from **{-before-}** to **{+after+}**",
        "changed the description",
        "locked the discussion in this merge request",
        "changed target branch from `main` to `stable`",
    ]
    assert sorted(bodies[4:]) == sorted([f"assigned to @{ann.username}",
                                         f"requested review from @{bob.username}"])


def test_system_notes_not_for_labels_milestones_state_or_unchanged_values(server, tmp_path):
    """Labels, milestones, closing and reopening, and values set to what they were already
    write no note (GitLab keeps those as resource events, which the notes API does not list)."""
    project = new_project(server)
    milestone = assert_json(server.request("POST", f"/projects/{project['id']}/milestones",
                                           token=server.root_token, json={"title": "m1"}), 201)
    _, mr = with_branch(server, tmp_path, project, title="quiet", description="same")
    iid = mr["iid"]
    for body in ({"labels": "bug,ui"}, {"add_labels": "x"}, {"remove_labels": "bug"},
                 {"milestone_id": milestone["id"]}, {"milestone_id": 0},
                 {"state_event": "close"}, {"state_event": "reopen"}, {"title": "quiet"},
                 {"description": "same"}, {"discussion_locked": False}, {"assignee_ids": []},
                 {"reviewer_ids": []}, {"target_branch": "main"}):
        assert_json(put_mr(server, project, iid, **body), 200)
    assert notes_of(server, project, iid) == []


def test_system_notes_are_not_counted_editable_or_deletable(server, people, tmp_path):
    """A system note is shown like any note but nobody edits or deletes it (403), not even an
    administrator; user_notes_count counts user notes only, the notes list shows both."""
    project = new_project(server)
    dev, dev_token = people["developer"]
    add_member(server, project, dev, "developer")
    _, mr = with_branch(server, tmp_path, project, title="fixed")
    iid = mr["iid"]
    assert_json(put_mr(server, project, iid, token=dev_token, title="changed"), 200)
    (note,) = notes_of(server, project, iid)
    url = mrs_url(project, iid, f"/notes/{note['id']}")
    shown = assert_json(server.request("GET", url, token=dev_token), 200)
    assert shown["system"] is True and shown["body"] == note["body"]
    for who in (dev_token, server.root_token):
        assert_json(server.request("PUT", url, token=who, json={"body": "rewritten"}), 403,
                    FORBIDDEN)
        assert_json(server.request("DELETE", url, token=who), 403, FORBIDDEN)
    assert notes_of(server, project, iid) == [note]

    comment(server, project, iid, "a comment", token=dev_token)
    assert get_mr(server, project, iid)["user_notes_count"] == 1
    listed = notes_of(server, project, iid)
    assert [(n["system"], n["body"]) for n in listed] == [(True, note["body"]),
                                                         (False, "a comment")]
    r = server.request("GET", mrs_url(project, iid, "/notes"), token=dev_token)
    assert r.headers["X-Total"] == "2"


def test_system_notes_failed_update_writes_none(server, people, tmp_path):
    """A refused update (a bad value, or a reporter's edit) writes no note."""
    project = new_project(server)
    rep, rep_token = people["reporter"]
    add_member(server, project, rep, "reporter")
    _, mr = with_branch(server, tmp_path, project, title="stable title")
    iid = mr["iid"]
    assert put_mr(server, project, iid, title="").status_code == 400
    assert put_mr(server, project, iid, title="renamed", state_event="explode").status_code == 400
    assert_json(put_mr(server, project, iid, token=rep_token, title="reporter's"), 403, FORBIDDEN)
    assert notes_of(server, project, iid) == []
    assert get_mr(server, project, iid)["title"] == "stable title"


# ---- the Note Hook ------------------------------------------------------------------------


def test_note_hook_for_merge_request_notes(server, receiver, tmp_path):
    """A project hook with note_events gets a Note Hook for a comment on an MR (noteable_type
    MergeRequest, the MR as `merge_request`) and for a comment on a line of its diff (a
    DiffNote with its position); system notes send none."""
    project = new_project(server)
    r = server.request("POST", f"/projects/{project['id']}/hooks", token=server.root_token,
                       json={"url": receiver.url, "token": "s3cret", "note_events": True,
                             "push_events": False, "merge_requests_events": False})
    assert_json(r, 201)
    work = Work(server, tmp_path, project)
    work.commit("main", "Add base", {"base.txt": "one\ntwo\nthree\n"})
    work.push("main")
    work.commit("feature", "Shout", {"base.txt": "one\nTWO\nthree\n"}, start="main")
    work.push("feature")
    mr = open_mr(server, project, "feature", title="Hooked notes")
    iid = mr["iid"]
    refs = checked(server, project, iid)["diff_refs"]
    assert_json(put_mr(server, project, iid, title="Hooked notes, renamed"), 200)  # a system note

    note = comment(server, project, iid, "General remark")
    (request,) = receiver.wait(1, "Note Hook")
    headers = request["headers"]
    assert headers["x-gitlab-event"] == "Note Hook" and headers["x-gitlab-token"] == "s3cret"
    assert headers["content-type"] == "application/json"
    body = request["json"]
    assert set(body) == NOTE_TOP, set(body) ^ NOTE_TOP
    assert body["object_kind"] == "note" and body["event_type"] == "note"
    assert body["user"]["username"] == "root" and body["project_id"] == project["id"]
    assert body["project"]["path_with_namespace"] == project["path_with_namespace"]
    attrs = body["object_attributes"]
    assert NOTE_ATTRS <= set(attrs), NOTE_ATTRS - set(attrs)
    assert attrs["id"] == note["id"] and attrs["note"] == "General remark"
    assert attrs["noteable_type"] == "MergeRequest" and attrs["noteable_id"] == mr["id"]
    assert attrs["action"] == "create" and attrs["system"] is False
    assert attrs["url"] == f"{mr['web_url']}#note_{note['id']}"
    assert UTC_TEXT.match(attrs["created_at"])
    merge_request = body["merge_request"]
    assert (merge_request["id"], merge_request["iid"]) == (mr["id"], iid)
    assert merge_request["title"] == "Hooked notes, renamed"
    assert (merge_request["source_branch"], merge_request["target_branch"]) == ("feature", "main")
    assert merge_request["state"] == "opened" and merge_request["url"] == mr["web_url"]

    form = {"body": "Why shout?", "position[position_type]": "text",
            "position[base_sha]": refs["base_sha"], "position[start_sha]": refs["start_sha"],
            "position[head_sha]": refs["head_sha"], "position[old_path]": "base.txt",
            "position[new_path]": "base.txt", "position[new_line]": "2"}
    r = server.request("POST", mrs_url(project, iid, "/discussions"), token=server.root_token,
                       data=form)
    (diff_note,) = assert_json(r, 201)["notes"]
    diff_hook = receiver.wait(2, "Note Hook")[1]["json"]
    attrs = diff_hook["object_attributes"]
    assert attrs["id"] == diff_note["id"] and attrs["note"] == "Why shout?"
    assert attrs["type"] == "DiffNote" and attrs["noteable_type"] == "MergeRequest"
    position = attrs["position"]
    assert (position["new_path"], position["new_line"]) == ("base.txt", 2)
    assert {k: position[k] for k in ("base_sha", "start_sha", "head_sha")} == refs
    assert diff_hook["merge_request"]["iid"] == iid

    time.sleep(1)  # nothing else comes: the title's system note sent no hook
    assert len(receiver.requests()) == 2
    assert {r["headers"]["x-gitlab-event"] for r in receiver.requests()} == {"Note Hook"}


# ---- award emoji --------------------------------------------------------------------------


def test_award_emoji_on_merge_requests(server, people, tmp_path):
    """/merge_requests/:iid/award_emoji: award (201), list, show, revoke (204); thumbsup and
    thumbsdown are the MR's upvotes and downvotes; GitLab's refusals (a second award of the
    same emoji, an unknown emoji, no name, another's award, an unknown MR)."""
    project = new_project(server, visibility="public")
    rep, rep_token = people["reporter"]
    guest, guest_token = people["guest"]
    add_member(server, project, rep, "reporter")
    add_member(server, project, guest, "guest")
    _, mr = with_branch(server, tmp_path, project)
    iid = mr["iid"]
    url = mrs_url(project, iid, "/award_emoji")

    up = assert_json(server.request("POST", url, token=rep_token, json={"name": "thumbsup"}), 201)
    assert AWARD_FIELDS <= set(up), AWARD_FIELDS - set(up)
    assert up["name"] == "thumbsup" and up["user"]["id"] == rep.id
    assert up["awardable_id"] == mr["id"] and up["awardable_type"] == "MergeRequest"
    assert ISO_MS.match(up["created_at"])
    assert_json(server.request("POST", url, token=guest_token, json={"name": "thumbsdown"}), 201)
    assert_json(server.request("POST", url, token=rep_token, json={"name": "tada"}), 201)
    got = get_mr(server, project, iid)
    assert (got["upvotes"], got["downvotes"]) == (1, 1)
    listed = assert_json(server.request("GET", url, token=guest_token), 200)
    assert sorted(a["name"] for a in listed) == ["tada", "thumbsdown", "thumbsup"]
    shown = assert_json(server.request("GET", f"{url}/{up['id']}", token=guest_token), 200)
    assert shown["id"] == up["id"] and shown["name"] == "thumbsup"

    assert_json(server.request("POST", url, token=rep_token, json={"name": "thumbsup"}), 404,
                AWARD_TAKEN)
    bad = server.request("POST", url, token=rep_token, json={"name": "not_an_emoji_xyz"})
    assert bad.status_code == 404, bad.text
    assert_json(server.request("POST", url, token=rep_token, json={}), 400,
                {"error": "name is missing"})
    assert_json(server.request("GET", f"{url}/abc", token=rep_token), 400,
                {"error": "award_id is invalid"})
    assert server.request("GET", url).status_code == 401
    assert server.request("DELETE", f"{url}/{up['id']}", token=guest_token).status_code == 401
    assert_json(server.request("GET", mrs_url(project, 999, "/award_emoji"),
                               token=rep_token), 404, NOT_FOUND)
    assert len(assert_json(server.request("GET", url, token=rep_token), 200)) == 3

    r = server.request("DELETE", f"{url}/{up['id']}", token=rep_token)
    assert r.status_code == 204 and r.content == b""
    assert_json(server.request("GET", f"{url}/{up['id']}", token=rep_token), 404,
                AWARD_NOT_FOUND)
    got = get_mr(server, project, iid)
    assert (got["upvotes"], got["downvotes"]) == (0, 1)
    # an administrator revokes anyone's award
    down = next(a for a in listed if a["name"] == "thumbsdown")
    assert server.request("DELETE", f"{url}/{down['id']}",
                          token=server.root_token).status_code == 204
    assert get_mr(server, project, iid)["downvotes"] == 0


def test_award_emoji_my_reaction_filter(server, people, tmp_path):
    """GET merge_requests?my_reaction_emoji= lists the MRs the caller reacted to with it."""
    project = new_project(server, visibility="public")
    rep, rep_token = people["reporter"]
    add_member(server, project, rep, "reporter")
    work, mr = with_branch(server, tmp_path, project)
    work.commit("other", "Other", {"other.txt": "o\n"}, start="main")
    work.push("other")
    open_mr(server, project, "other")
    assert_json(post(server, project, mr["iid"], "/award_emoji", token=rep_token, name="tada"),
                201)
    r = server.request("GET", mrs_url(project), token=rep_token,
                       params={"my_reaction_emoji": "tada"})
    assert [m["iid"] for m in assert_json(r, 200)] == [mr["iid"]]
    r = server.request("GET", mrs_url(project), token=server.root_token,
                       params={"my_reaction_emoji": "tada"})
    assert assert_json(r, 200) == []


def test_award_emoji_on_merge_request_notes(server, people, tmp_path):
    """.../merge_requests/:iid/notes/:note_id/award_emoji (python-gitlab's note.awardemojis):
    awards on a note are the note's (awardable_type Note), leave the MR's votes alone, and go
    with the note when it is deleted."""
    project = new_project(server, visibility="public")
    rep, rep_token = people["reporter"]
    guest, guest_token = people["guest"]
    add_member(server, project, rep, "reporter")
    add_member(server, project, guest, "guest")
    _, mr = with_branch(server, tmp_path, project)
    iid = mr["iid"]
    mine = server.gitlab(rep_token).projects.get(project["id"], lazy=True).mergerequests.get(iid)
    note = mine.notes.create({"body": "This is a merge request note"})
    emoji = note.awardemojis.create({"name": "tractor"})
    assert emoji.name == "tractor" and emoji.user["id"] == rep.id
    assert emoji.awardable_id == note.id and emoji.awardable_type == "Note"
    up = note.awardemojis.create({"name": "thumbsup"})
    mine.awardemojis.create({"name": "thumbsup"})  # the same emoji on the MR itself
    fresh = get_mr(server, project, iid)
    assert (fresh["upvotes"], fresh["downvotes"]) == (1, 0)
    assert [a.name for a in mine.awardemojis.list(get_all=True)] == ["thumbsup"]
    assert sorted(a.name for a in note.awardemojis.list(get_all=True)) == ["thumbsup", "tractor"]

    base = mrs_url(project, iid, f"/notes/{note.id}/award_emoji")
    got = assert_json(server.request("GET", f"{base}/{emoji.id}", token=guest_token), 200)
    assert got["id"] == emoji.id and got["awardable_type"] == "Note"
    # a note's award is not the MR's
    r = server.request("GET", mrs_url(project, iid, f"/award_emoji/{emoji.id}"), token=rep_token)
    assert r.status_code == 404
    assert_json(server.request("POST", base, token=rep_token, json={"name": "tractor"}), 404,
                AWARD_TAKEN)
    bad = server.request("POST", base, token=rep_token, json={"name": "not_an_emoji_xyz"})
    assert bad.status_code == 404, bad.text
    assert_json(server.request("POST", base, token=rep_token, json={}), 400,
                {"error": "name is missing"})
    unknown = server.request("GET", mrs_url(project, iid, "/notes/999999/award_emoji"),
                             token=rep_token)
    assert unknown.status_code == 404, unknown.text
    assert_json(server.request("GET", mrs_url(project, iid, "/notes/abc/award_emoji"),
                               token=rep_token), 400, {"error": "note_id is invalid"})
    assert server.request("GET", base).status_code == 401
    assert server.request("DELETE", f"{base}/{up.id}", token=guest_token).status_code == 401
    emoji.delete()
    assert [a.name for a in note.awardemojis.list(get_all=True)] == ["thumbsup"]
    note.delete()
    assert get_mr(server, project, iid)["upvotes"] == 1
    assert server.request("GET", f"{base}/{up.id}", token=rep_token).status_code == 404


# ---- subscribe, to-do ---------------------------------------------------------------------


def test_subscribe_and_unsubscribe_304(server, people, tmp_path):
    """POST subscribe/unsubscribe answer 201 with the MR (its `subscribed`), 304 with no body
    when there is nothing to change; the author is subscribed from the start."""
    project = new_project(server, visibility="public")
    guest, guest_token = people["guest"]
    add_member(server, project, guest, "guest")
    _, mr = with_branch(server, tmp_path, project)
    iid = mr["iid"]
    # the author (root) is subscribed
    r = post(server, project, iid, "/subscribe")
    assert r.status_code == 304 and r.content == b""
    off = assert_json(post(server, project, iid, "/unsubscribe"), 201)
    assert off["subscribed"] is False and off["iid"] == iid and off["id"] == mr["id"]
    assert post(server, project, iid, "/unsubscribe").status_code == 304
    assert get_mr(server, project, iid)["subscribed"] is False

    assert get_mr(server, project, iid, token=guest_token)["subscribed"] is False
    on = assert_json(post(server, project, iid, "/subscribe", token=guest_token), 201)
    assert on["subscribed"] is True and on["iid"] == iid
    assert get_mr(server, project, iid, token=guest_token)["subscribed"] is True
    assert post(server, project, iid, "/subscribe", token=guest_token).status_code == 304
    # python-gitlab's subscribe()/unsubscribe(), and its errors on 304
    mine = server.gitlab(guest_token).projects.get(project["id"], lazy=True).mergerequests.get(iid)
    with pytest.raises(gitlab.GitlabSubscribeError):
        mine.subscribe()
    mine.unsubscribe()
    assert mine.subscribed is False
    with pytest.raises(gitlab.GitlabUnsubscribeError):
        mine.unsubscribe()
    assert_json(server.request("POST", mrs_url(project, iid, "/subscribe")), 401, UNAUTHORIZED)
    assert_json(post(server, project, 999, "/subscribe"), 404, NOT_FOUND)


def test_todo_201_then_304(server, people, tmp_path):
    """POST todo: a pending to-do of the caller's ("marked") on the MR, 304 while it stands."""
    project = new_project(server, visibility="public")
    guest, guest_token = people["guest"]
    add_member(server, project, guest, "guest")
    _, mr = with_branch(server, tmp_path, project)
    iid = mr["iid"]
    todo = assert_json(post(server, project, iid, "/todo", token=guest_token), 201)
    assert todo["action_name"] == "marked" and todo["target_type"] == "MergeRequest"
    assert todo["state"] == "pending" and todo["target"]["iid"] == iid
    assert todo["target"]["id"] == mr["id"] and todo["target"]["title"] == mr["title"]
    assert todo["project"]["id"] == project["id"]
    assert todo["author"]["id"] == guest.id
    assert todo["target_url"].endswith(f"/merge_requests/{iid}")
    r = post(server, project, iid, "/todo", token=guest_token)
    assert r.status_code == 304 and r.content == b""
    assert_json(server.request("POST", mrs_url(project, iid, "/todo")), 401, UNAUTHORIZED)
    assert_json(post(server, project, 999, "/todo", token=guest_token), 404, NOT_FOUND)


# ---- time tracking --------------------------------------------------------------------------


def test_time_tracking(server, people, tmp_path):
    """time_estimate, add_spent_time (201), reset_time_estimate, reset_spent_time and
    time_stats with GitLab's human durations, as for issues; the MR shows its time_stats; a
    developer may track time, a reporter or guest may not (403); bad durations are 400s."""
    project = new_project(server, visibility="public")
    dev, dev_token = people["developer"]
    rep, rep_token = people["reporter"]
    guest, guest_token = people["guest"]
    add_member(server, project, dev, "developer")
    add_member(server, project, rep, "reporter")
    add_member(server, project, guest, "guest")
    _, mr = with_branch(server, tmp_path, project)
    iid = mr["iid"]

    def stats(token=guest_token):
        return assert_json(server.request("GET", mrs_url(project, iid, "/time_stats"),
                                          token=token), 200)

    assert stats() == NO_TIME
    r = post(server, project, iid, "/time_estimate", token=dev_token, duration="3h30m")
    assert_json(r, 200, {"time_estimate": 12600, "total_time_spent": 0,
                         "human_time_estimate": "3h 30m", "human_total_time_spent": None})
    r = post(server, project, iid, "/time_estimate", token=dev_token, duration="1mo 2w 3d 4h 5m")
    body = assert_json(r, 200)
    assert body["time_estimate"] == ((4 * 5 + 2 * 5 + 3) * 8 + 4) * 3600 + 300
    assert body["human_time_estimate"] == "1mo 2w 3d 4h 5m"
    r = post(server, project, iid, "/add_spent_time", token=dev_token, duration="1d")
    body = assert_json(r, 201)
    assert body["total_time_spent"] == 8 * 3600 and body["human_total_time_spent"] == "1d"
    body = assert_json(post(server, project, iid, "/add_spent_time", token=dev_token,
                            duration="-2h"), 201)
    assert body["total_time_spent"] == 6 * 3600 and body["human_total_time_spent"] == "6h"
    assert stats()["total_time_spent"] == 6 * 3600
    assert get_mr(server, project, iid)["time_stats"] == stats()

    for sub, fields in (("/time_estimate", {"duration": "soon"}),
                        ("/add_spent_time", {"duration": "3x"}),
                        ("/add_spent_time", {"duration": "-1w"}),
                        ("/time_estimate", {"duration": "-1h"})):
        r = post(server, project, iid, sub, token=dev_token, **fields)
        assert_json(r, 400)
    assert_json(post(server, project, iid, "/time_estimate", token=dev_token), 400,
                {"error": "duration is missing"})
    for token in (rep_token, guest_token):
        assert_json(post(server, project, iid, "/time_estimate", token=token, duration="1h"),
                    403, FORBIDDEN)
        assert_json(post(server, project, iid, "/add_spent_time", token=token, duration="1h"),
                    403, FORBIDDEN)
        assert_json(post(server, project, iid, "/reset_spent_time", token=token), 403, FORBIDDEN)
    assert_json(server.request("POST", mrs_url(project, iid, "/time_estimate"),
                               json={"duration": "1h"}), 401, UNAUTHORIZED)
    assert stats()["total_time_spent"] == 6 * 3600

    assert assert_json(post(server, project, iid, "/reset_time_estimate", token=dev_token),
                       200)["time_estimate"] == 0
    reset = assert_json(post(server, project, iid, "/reset_spent_time", token=dev_token), 200)
    assert reset == NO_TIME
    assert get_mr(server, project, iid)["time_stats"] == NO_TIME
    assert_json(server.request("GET", mrs_url(project, 999, "/time_stats"),
                               token=dev_token), 404, NOT_FOUND)

    # python-gitlab's TimeTrackingMixin on a merge request
    mine = server.gitlab(dev_token).projects.get(project["id"], lazy=True).mergerequests.get(iid)
    assert mine.time_estimate("2h")["human_time_estimate"] == "2h"
    assert mine.add_spent_time("30m")["human_total_time_spent"] == "30m"
    assert stats(dev_token)["time_estimate"] == 7200
    assert mine.reset_time_estimate()["time_estimate"] == 0
    assert mine.reset_spent_time()["total_time_spent"] == 0


def test_time_tracking_system_notes(server, people, tmp_path):
    """Time tracking on an MR writes the same notes as on an issue, by whoever tracked."""
    project = new_project(server)
    dev, dev_token = people["developer"]
    add_member(server, project, dev, "developer")
    _, mr = with_branch(server, tmp_path, project)
    iid = mr["iid"]
    for sub, fields in (("/time_estimate", {"duration": "1h"}),
                        ("/time_estimate", {"duration": "1h"}),
                        ("/time_estimate", {"duration": "1w 4d 5h"}),
                        ("/reset_time_estimate", {}), ("/reset_time_estimate", {}),
                        ("/add_spent_time", {"duration": "1d 2h"}),
                        ("/add_spent_time", {"duration": "-30m"}),
                        ("/reset_spent_time", {})):
        assert post(server, project, iid, sub, token=dev_token, **fields).status_code in (200, 201)
    notes = notes_of(server, project, iid)
    bodies = [n["body"] for n in notes]
    assert bodies[:3] == [
        "added time estimate of 1h",
        "changed time estimate to 1w 4d 5h from 1h",
        "removed time estimate of 1w 4d 5h",
    ]
    stamp = r"at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC"
    assert re.fullmatch(f"added 1d 2h of time spent {stamp}", bodies[3]), bodies
    assert re.fullmatch(f"subtracted 30m of time spent {stamp}", bodies[4]), bodies
    assert bodies[5:] == ["removed time spent"]
    assert all(n["system"] and n["author"]["id"] == dev.id for n in notes)
    assert get_mr(server, project, iid)["user_notes_count"] == 0


# ---- related issues, merge ref ----------------------------------------------------------------


def test_related_issues(server, people, tmp_path):
    """GET related_issues: the issues referenced in the MR's title, description, notes and
    commit messages, closing or not, that the caller may read (IssueBasic entities); an
    unreferenced issue is not among them, nor a confidential one for a guest."""
    project = new_project(server, visibility="public")
    guest, guest_token = people["guest"]
    add_member(server, project, guest, "guest")

    def issue(title, **fields):
        r = server.request("POST", f"/projects/{project['id']}/issues", token=server.root_token,
                           json={"title": title, **fields})
        return assert_json(r, 201)["iid"]

    in_title, closing, mentioned, in_note, in_commit, unrelated = (
        issue(t) for t in ("in title", "closing", "mentioned", "in note", "in commit", "none"))
    secret = issue("secret", confidential=True)
    work = Work(server, tmp_path, project)
    work.commit("feature", f"Touch #{in_commit}", {"f.txt": "f\n"}, start="main")
    work.push("feature")
    mr = open_mr(server, project, "feature", title=f"Fix #{in_title}",
                 description=f"Closes #{closing}\n\nSee #{mentioned} and #{secret}")
    iid = mr["iid"]
    comment(server, project, iid, f"Related to #{in_note}")
    checked(server, project, iid)

    def related(token=server.root_token):
        r = server.request("GET", mrs_url(project, iid, "/related_issues"), token=token)
        return assert_json(r, 200)

    found = related()
    assert sorted(i["iid"] for i in found) == sorted(
        [in_title, closing, mentioned, in_note, in_commit, secret])
    assert unrelated not in [i["iid"] for i in found]
    for item in found:
        assert ISSUE_BASIC <= set(item), ISSUE_BASIC - set(item)
        assert item["project_id"] == project["id"]
    assert sorted(i["iid"] for i in related(guest_token)) == sorted(
        [in_title, closing, mentioned, in_note, in_commit])
    assert_json(server.request("GET", mrs_url(project, 999, "/related_issues"),
                               token=server.root_token), 404, NOT_FOUND)


def test_merge_ref(server, tmp_path):
    """GET merge_ref of a mergeable MR: {"commit_id": sha} of refs/merge-requests/:iid/merge, a
    merge of the source into the target (fetched back with git); of a conflicting one, 400
    "Merge request is not mergeable". The target branch does not move."""
    project = new_project(server)
    work = Work(server, tmp_path, project)
    work.commit("main", "Add shared", {"shared.txt": "first\nsecond\n"})
    work.push("main")
    head = work.commit("feature", "Feature file", {"feature.txt": "f\n"}, start="main")
    work.commit("clash", "Clash edit", {"shared.txt": "clash\nsecond\n"}, start="main")
    target = work.commit("main", "Main edit", {"shared.txt": "main\nsecond\n"})
    work.push("main", "feature", "clash")
    good = open_mr(server, project, "feature")["iid"]
    bad = open_mr(server, project, "clash")["iid"]
    mergeable(server, project, good)
    assert checked(server, project, bad)["has_conflicts"] is True

    r = server.request("GET", mrs_url(project, good, "/merge_ref"), token=server.root_token)
    body = assert_json(r, 200)
    assert set(body) == {"commit_id"} and SHA.match(body["commit_id"])
    work.git("fetch", "-q", "origin", f"refs/merge-requests/{good}/merge")
    assert work.git("rev-parse", "FETCH_HEAD") == body["commit_id"]
    assert work.git("log", "-1", "--format=%P", body["commit_id"]).split() == [target, head]
    work.git("fetch", "-q", "origin")
    assert work.head("main") == target
    assert get_mr(server, project, good)["state"] == "opened"

    r = server.request("GET", mrs_url(project, bad, "/merge_ref"), token=server.root_token)
    assert_json(r, 400, {"message": "Merge request is not mergeable"})
    assert_json(server.request("GET", mrs_url(project, 999, "/merge_ref"),
                               token=server.root_token), 404, NOT_FOUND)


# ---- permissions, tenants ------------------------------------------------------------------


def activity_routes(project, iid, note_id, award_id):
    """Every route of this module's features on MR `iid`, with a body that would succeed."""
    mr = mrs_url(project, iid)
    return [
        ("GET", f"{mr}/award_emoji", None),
        ("POST", f"{mr}/award_emoji", {"name": "tada"}),
        ("GET", f"{mr}/award_emoji/{award_id}", None),
        ("DELETE", f"{mr}/award_emoji/{award_id}", None),
        ("GET", f"{mr}/notes/{note_id}/award_emoji", None),
        ("POST", f"{mr}/notes/{note_id}/award_emoji", {"name": "tada"}),
        ("POST", f"{mr}/subscribe", None),
        ("POST", f"{mr}/unsubscribe", None),
        ("POST", f"{mr}/todo", None),
        ("POST", f"{mr}/time_estimate", {"duration": "1h"}),
        ("POST", f"{mr}/reset_time_estimate", None),
        ("POST", f"{mr}/add_spent_time", {"duration": "1h"}),
        ("POST", f"{mr}/reset_spent_time", None),
        ("GET", f"{mr}/time_stats", None),
        ("GET", f"{mr}/related_issues", None),
        ("GET", f"{mr}/merge_ref", None),
    ]


def setup_private(server, tmp_path):
    """A private project with an MR carrying a note and an award (root's)."""
    project = new_project(server)
    _, mr = with_branch(server, tmp_path, project, title="Private work")
    iid = mr["iid"]
    note = comment(server, project, iid, "private remark")
    award = assert_json(post(server, project, iid, "/award_emoji", name="thumbsup"), 201)
    return project, mr, note, award


def state_of(server, project, mr, note) -> dict:
    """What the routes of activity_routes could change, as root sees it."""
    got = get_mr(server, project, mr["iid"])
    awards = {}
    for sub in ("/award_emoji", f"/notes/{note['id']}/award_emoji"):
        r = server.request("GET", mrs_url(project, mr["iid"], sub), token=server.root_token)
        awards[sub] = sorted((a["name"], a["user"]["id"]) for a in assert_json(r, 200))
    return {"upvotes": got["upvotes"], "time_stats": got["time_stats"],
            "subscribed": got["subscribed"], "awards": awards}


def answer(r) -> tuple:
    """A response as (status, Content-Type, JSON body or text)."""
    try:
        body = r.json()
    except ValueError:
        body = r.text
    return r.status_code, r.headers.get("Content-Type"), body


def test_permissions_non_member_of_a_private_project(server, people, tmp_path):
    """A non-member gets the private project's 404 on every route and anonymous writes are
    401 (the merge requests API authenticates every non-GET request first); nothing changes.
    Every route is tried before the test fails, and the failure lists each wrong answer."""
    project, mr, note, award = setup_private(server, tmp_path)
    before = state_of(server, project, mr, note)
    _, outsider_token = people["outsider"]
    wrong = []
    for method, path, body in activity_routes(project, mr["iid"], note["id"], award["id"]):
        got = answer(server.request(method, path, token=outsider_token, json=body))
        if got != (404, JSON, PROJECT_NOT_FOUND):
            wrong.append(("outsider", method, path, got))
        if method != "GET":
            got = answer(server.request(method, path, json=body))
            if got != (401, JSON, UNAUTHORIZED):
                wrong.append(("anonymous", method, path, got))
    assert wrong == []
    assert state_of(server, project, mr, note) == before


def test_tenant_other_reaches_nothing(server, tmp_path):
    """Another tenant's token is no credential here (401), and on its own host this tenant's
    project id names nothing (404) on every route; nothing changes."""
    project, mr, note, award = setup_private(server, tmp_path)
    before = state_of(server, project, mr, note)
    host, other_root = other_tenant(server, "mra")
    wrong = []
    for method, path, body in activity_routes(project, mr["iid"], note["id"], award["id"]):
        got = answer(server.request(method, path, token=other_root, json=body))
        if got != (401, JSON, UNAUTHORIZED):
            wrong.append(("here", method, path, got))
        got = answer(server.request(method, path, token=other_root, host=host, json=body))
        if got != (404, JSON, PROJECT_NOT_FOUND):
            wrong.append((host, method, path, got))
    assert wrong == []
    assert state_of(server, project, mr, note) == before
