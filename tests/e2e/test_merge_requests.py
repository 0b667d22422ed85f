"""Merge requests end to end, on real repositories: branches pushed with the real `git` over
smart HTTP, merge requests opened, listed, edited, discussed, approved and merged through the
REST API (raw requests and python-gitlab), and the result fetched back with `git` (merge
commits, fast-forwards, squashes, rebases, deleted source branches). GitLab CE's answers and
shapes throughout (docs.gitlab.com: api/merge_requests, api/merge_request_approvals,
api/discussions, the Merge Request Hook), issues closed by a merge, other tenants kept out.

Sections (for `-k`): create, get, list, update, delete, diffs, merge, merge_method, squash,
rebase, discussions, approvals, notes, webhook, closes_issues, python_gitlab, tenant.
"""

from __future__ import annotations

import re
import secrets
import time

import gitlab
import pytest

from conftest import (FORBIDDEN, ISO_MS, JSON, LOOPBACK_RECEIVERS, PROJECT_NOT_FOUND,
                      UNAUTHORIZED, assert_json, make_user, other_tenant, require_program)
from merge_request_support import (new_project, add_member, set_project, Work, mrs_url, open_mr,
                                   get_mr, put_mr, merge, poll, wait_mr, checked, mergeable)

NOT_FOUND = {"message": "404 Not found"}  # an unknown iid: ActiveRecord::RecordNotFound
METHOD_NOT_ALLOWED = {"message": "405 Method Not Allowed"}
SHA = re.compile(r"^[0-9a-f]{40}$")

# GitLab's merge request entity (single GET, POST, PUT, merge); lists lack the last three.
MR_FIELDS = {
    "id", "iid", "project_id", "title", "description", "state", "created_at", "updated_at",
    "merged_by", "merge_user", "merged_at", "closed_by", "closed_at", "target_branch",
    "source_branch", "user_notes_count", "upvotes", "downvotes", "author", "assignees",
    "assignee", "reviewers", "source_project_id", "target_project_id", "labels", "draft",
    "work_in_progress", "milestone", "merge_when_pipeline_succeeds", "merge_status",
    "detailed_merge_status", "sha", "merge_commit_sha", "squash_commit_sha", "discussion_locked",
    "should_remove_source_branch", "force_remove_source_branch", "reference", "references",
    "web_url", "time_stats", "squash", "has_conflicts", "blocking_discussions_resolved",
    "diff_refs", "changes_count", "user",
}
BASIC_FIELDS = MR_FIELDS - {"diff_refs", "changes_count", "user"}
SIMPLE_FIELDS = {"id", "iid", "project_id", "title", "description", "state", "created_at",
                 "updated_at", "web_url"}
USER_FIELDS = {"id", "username", "name", "state", "avatar_url", "web_url"}
DIFF_FIELDS = {"old_path", "new_path", "a_mode", "b_mode", "diff", "new_file", "renamed_file",
               "deleted_file"}
COMMIT_FIELDS = {"id", "short_id", "title", "message", "author_name", "author_email",
                 "authored_date", "committer_name", "committer_email", "committed_date",
                 "created_at", "web_url"}
TIME_STATS = {"time_estimate": 0, "total_time_spent": 0, "human_time_estimate": None,
              "human_total_time_spent": None}
# An open, non-draft merge request that cannot be merged as it stands (conflicts, or a merge
# method that needs a rebase first). GitLab's answer differs by version: 406 "Branch cannot be
# merged" (documented up to 15.x), 422 with the same message (16.x+), or 405 when the failing
# mergeability check runs before it (gitlab-org/gitlab#364102). Each is a status with its body.
CANNOT_MERGE = [
    (406, {"message": "Branch cannot be merged"}),
    (422, {"message": "Branch cannot be merged"}),
    (405, METHOD_NOT_ALLOWED),
]


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
    """A user for each role (user, token); each test makes them members of its own project."""
    return {role: make_user(server, role)
            for role in ("developer", "reporter", "guest", "maintainer", "outsider")}


# ---- helpers ---------------------------------------------------------------------


def assert_cannot_merge(r):
    assert r.headers.get("Content-Type") == JSON, r.headers.get("Content-Type")
    assert (r.status_code, r.json()) in CANNOT_MERGE, (r.status_code, r.text)


def listed(server, path, token=None, **params) -> list[int]:
    """The iids a list answers (root's view unless `token`); X-Total must agree when the
    whole list fits on the page."""
    params.setdefault("per_page", 100)
    r = server.request("GET", path, token=token or server.root_token, params=params)
    body = assert_json(r, 200)
    if params["per_page"] == 100:
        assert r.headers["X-Total"] == str(len(body)), (params, r.headers.get("X-Total"))
    return [m["iid"] for m in body]


# ---- create ------------------------------------------------------------------------


def test_create_with_every_field_and_read_it_back(server, gl, people, tmp_path):
    """Every create parameter lands on the entity, and GET shows the full entity once the
    mergeability check has run (diff_refs from the real branches, changes_count a string)."""
    project = new_project(server)
    dev, rep = people["developer"][0], people["reporter"][0]
    add_member(server, project, dev, "developer")
    add_member(server, project, rep, "reporter")
    milestone = assert_json(server.request("POST", f"/projects/{project['id']}/milestones",
                                           token=server.root_token, json={"title": "v1"}), 201)
    work = Work(server, tmp_path, project)
    base = work.head("main")
    work.commit("feature", "Add a", {"a.txt": "a\n"}, start="main")
    head = work.commit("feature", "Add b", {"b.txt": "b\n"})
    work.push("feature")

    mr = open_mr(server, project, "feature", title="Add a and b", description="Both files.",
                 assignee_ids=[dev.id], reviewer_ids=[rep.id], labels="bug,ui",
                 milestone_id=milestone["id"], remove_source_branch=True, squash=True)
    assert BASIC_FIELDS <= set(mr), BASIC_FIELDS - set(mr)
    assert mr["iid"] == 1 and mr["project_id"] == project["id"]
    assert mr["source_project_id"] == mr["target_project_id"] == project["id"]
    assert (mr["title"], mr["description"]) == ("Add a and b", "Both files.")
    assert (mr["source_branch"], mr["target_branch"]) == ("feature", "main")
    assert mr["state"] == "opened" and ISO_MS.match(mr["created_at"])
    assert ISO_MS.match(mr["updated_at"])
    assert mr["author"]["id"] == gl.user.id and mr["author"]["username"] == gl.user.username
    assert USER_FIELDS <= set(mr["author"])
    assert [a["id"] for a in mr["assignees"]] == [dev.id] and mr["assignee"]["id"] == dev.id
    assert [r["id"] for r in mr["reviewers"]] == [rep.id]
    assert sorted(mr["labels"]) == ["bug", "ui"]
    assert mr["milestone"]["id"] == milestone["id"] and mr["milestone"]["title"] == "v1"
    assert mr["force_remove_source_branch"] is True and mr["squash"] is True
    assert mr["draft"] is False and mr["work_in_progress"] is False
    for key in ("merged_by", "merge_user", "merged_at", "closed_by", "closed_at",
                "merge_commit_sha", "squash_commit_sha"):
        assert mr[key] is None, key
    assert mr["reference"] == "!1"
    assert mr["references"] == {"short": "!1", "relative": "!1",
                                "full": f"{project['path_with_namespace']}!1"}
    assert mr["web_url"] == f"{project['web_url']}/-/merge_requests/1"

    got = checked(server, project, 1)
    assert MR_FIELDS <= set(got), MR_FIELDS - set(got)
    assert got["id"] == mr["id"] and got["sha"] == head
    assert got["diff_refs"] == {"base_sha": base, "start_sha": base, "head_sha": head}
    assert got["changes_count"] == "2"
    assert got["user"] == {"can_merge": True}
    assert got["merge_status"] == "can_be_merged" and got["detailed_merge_status"] == "mergeable"
    assert got["has_conflicts"] is False and got["blocking_discussions_resolved"] is True
    assert got["merge_when_pipeline_succeeds"] is False and got["discussion_locked"] is None
    assert got["should_remove_source_branch"] is None
    assert (got["user_notes_count"], got["upvotes"], got["downvotes"]) == (0, 0, 0)
    assert got["time_stats"] == TIME_STATS
    # the list shows the same merge request in the basic entity
    r = server.request("GET", mrs_url(project), token=server.root_token)
    (item,) = assert_json(r, 200)
    assert BASIC_FIELDS <= set(item) and item["id"] == got["id"]
    assert sorted(item["labels"]) == ["bug", "ui"] and item["sha"] == head


def test_create_errors_and_permissions(server, people, tmp_path):
    """Grape's 400s for missing parameters, 422 for the same branch twice, 400 validation errors
    for branches that do not exist, 409 for a second open MR of the same branches; guests,
    anonymous callers and outsiders are kept out. Nothing is created by a refusal."""
    project = new_project(server)
    guest, guest_token = people["guest"]
    add_member(server, project, guest, "guest")
    _, outsider_token = people["outsider"]
    work = Work(server, tmp_path, project)
    work.commit("feature", "Feature", {"f.txt": "f\n"}, start="main")
    work.push("feature")
    good = {"title": "Feature", "source_branch": "feature", "target_branch": "main"}

    def post(body, token=server.root_token, project_id=project["id"]):
        return server.request("POST", f"/projects/{project_id}/merge_requests", token=token,
                              json=body)

    for missing in ("title", "source_branch", "target_branch"):
        body = {k: v for k, v in good.items() if k != missing}
        assert_json(post(body), 400, {"error": f"{missing} is missing"})
    assert_json(post({**good, "source_branch": "main"}), 422,
                {"message": ["You can't use same project/branch for source and target"]})
    for field in ("source_branch", "target_branch"):
        body = assert_json(post({**good, field: "no-such-branch"}), 400)
        assert field in body["message"], body
    assert_json(server.request("POST", mrs_url(project), json=good), 401, UNAUTHORIZED)
    assert_json(post(good, token=guest_token), 403, FORBIDDEN)
    assert_json(post(good, token=outsider_token), 404, PROJECT_NOT_FOUND)
    assert_json(post(good, project_id=999999), 404, PROJECT_NOT_FOUND)
    assert listed(server, mrs_url(project)) == []

    assert open_mr(server, project, "feature", title="Feature")["iid"] == 1
    assert_json(post({**good, "title": "Again"}), 409,
                {"message": ["Another open merge request already exists for this source branch: !1"]})
    assert listed(server, mrs_url(project)) == [1]
    # only an open merge request of the same branches stands in the way
    assert_json(put_mr(server, project, 1, state_event="close"), 200)
    assert open_mr(server, project, "feature", title="Again")["iid"] == 2


# ---- get -----------------------------------------------------------------------------


def test_get_unknown_merge_request_or_project(server):
    """An unknown iid is GitLab's bare 404 on every route of a merge request; a non-integer iid
    is a 400; an unknown project its own 404."""
    project = new_project(server)
    tok = server.root_token
    for sub in ("", "/commits", "/changes", "/diffs", "/raw_diffs", "/approvals",
                "/closes_issues"):
        assert_json(server.request("GET", mrs_url(project, 999, sub), token=tok), 404, NOT_FOUND)
    for method, sub, body in (("PUT", "", {"title": "x"}), ("PUT", "/merge", None),
                              ("PUT", "/rebase", None), ("POST", "/approve", None),
                              ("DELETE", "", None)):
        r = server.request(method, mrs_url(project, 999, sub), token=tok, json=body)
        assert_json(r, 404, NOT_FOUND)
    assert_json(server.request("GET", mrs_url(project, "abc"), token=tok), 400,
                {"error": "merge_request_iid is invalid"})
    assert_json(server.request("GET", "/projects/999999/merge_requests/1", token=tok), 404,
                PROJECT_NOT_FOUND)
    assert_json(server.request("GET", "/projects/999999/merge_requests", token=tok), 404,
                PROJECT_NOT_FOUND)


# ---- list ----------------------------------------------------------------------------


def test_list_filters_order_and_pagination(server, people, tmp_path, no_search_rate_limits):
    """One project with four merge requests (open, draft, closed, merged) and every documented
    filter of GET /projects/:id/merge_requests; the state defaults to all."""
    project = new_project(server)
    dev, dev_token = people["developer"]
    rep = people["reporter"][0]
    add_member(server, project, dev, "developer")
    add_member(server, project, rep, "reporter")
    milestone = assert_json(server.request("POST", f"/projects/{project['id']}/milestones",
                                           token=server.root_token, json={"title": "v1"}), 201)
    work = Work(server, tmp_path, project)
    for name in ("f-alpha", "f-beta", "f-gamma", "f-delta"):
        work.commit(name, f"{name} work", {f"{name}.txt": name + "\n"}, start="main")
    work.git("branch", "stable", "origin/main")
    work.push("f-alpha", "f-beta", "f-gamma", "f-delta", "stable")

    a = open_mr(server, project, "f-alpha", title="Alpha feature",
                description="Touches the parser", assignee_id=dev.id, reviewer_ids=[rep.id],
                labels="bug", milestone_id=milestone["id"])
    b = open_mr(server, project, "f-beta", token=dev_token, title="Draft: Beta work",
                labels="ui")
    c = open_mr(server, project, "f-gamma", target="stable", title="Gamma fix")
    d = open_mr(server, project, "f-delta", title="Delta cleanup")
    A, B, C, D = (m["iid"] for m in (a, b, c, d))
    mergeable(server, project, D)
    assert assert_json(merge(server, project, D), 200)["state"] == "merged"
    assert_json(put_mr(server, project, C, state_event="close"), 200)
    assert_json(put_mr(server, project, A, title="Alpha feature, polished"), 200)

    url = mrs_url(project)

    def ls(**params):
        return listed(server, url, **params)

    # state (all by default), newest first
    assert ls() == [D, C, B, A]
    assert ls(state="all") == [D, C, B, A]
    assert ls(state="opened") == [B, A]
    assert ls(state="closed") == [C]
    assert ls(state="merged") == [D]
    assert sorted(ls(**{"iids[]": [A, C]})) == [A, C]
    # branches, people, labels, milestones
    assert ls(source_branch="f-beta") == [B]
    assert ls(target_branch="stable") == [C]
    assert ls(author_id=dev.id) == [B]
    assert ls(author_username=dev.username) == [B]
    assert ls(assignee_id=dev.id) == [A]
    assert ls(assignee_id="None") == [D, C, B]
    assert ls(assignee_id="Any") == [A]
    assert ls(reviewer_id=rep.id) == [A]
    assert ls(reviewer_id="None") == [D, C, B]
    assert ls(labels="bug") == [A]
    assert ls(labels="None") == [D, C]
    assert ls(labels="Any") == [B, A]
    assert ls(milestone="v1") == [A]
    assert ls(milestone="None") == [D, C, B]
    assert ls(milestone="Any") == [A]
    # search (title and description), drafts, creation times
    assert ls(search="parser") == [A]
    assert ls(search="Gamma") == [C]
    assert ls(wip="yes") == [B]
    assert ls(wip="no") == [D, C, A]
    assert ls(draft="true") == [B]
    assert ls(draft="false") == [D, C, A]
    assert ls(created_after="2000-01-01T00:00:00Z") == [D, C, B, A]
    assert ls(created_before="2000-01-01T00:00:00Z") == []
    assert ls(created_after="2999-01-01T00:00:00Z") == []
    # order
    assert ls(order_by="created_at", sort="asc") == [A, B, C, D]
    titles = {m["iid"]: m["title"] for m in assert_json(
        server.request("GET", url, token=server.root_token), 200)}
    assert ls(order_by="title", sort="asc") == sorted(titles, key=titles.get)
    assert ls(order_by="title", sort="desc") == sorted(titles, key=titles.get, reverse=True)
    r = server.request("GET", url, token=server.root_token,
                       params={"order_by": "updated_at", "sort": "desc"})
    by_update = assert_json(r, 200)
    stamps = [m["updated_at"] for m in by_update]
    assert stamps == sorted(stamps, reverse=True)
    order = [m["iid"] for m in by_update]
    assert order.index(A) < order.index(B)  # A was edited after B was last touched
    # view=simple has only the simple entity's fields
    r = server.request("GET", url, token=server.root_token, params={"view": "simple"})
    simple = assert_json(r, 200)
    assert [m["iid"] for m in simple] == [D, C, B, A]
    for item in simple:
        assert set(item) == SIMPLE_FIELDS, item
    # pagination headers
    r = server.request("GET", url, token=server.root_token, params={"per_page": 2, "page": 2})
    assert [m["iid"] for m in assert_json(r, 200)] == [B, A]
    assert (r.headers["X-Total"], r.headers["X-Page"], r.headers["X-Per-Page"]) == ("4", "2", "2")
    assert r.headers["X-Total-Pages"] == "2" and r.headers["X-Prev-Page"] == "1"
    # values outside the documented sets
    for name, value in (("state", "explode"), ("order_by", "nope"), ("sort", "up"),
                        ("wip", "maybe"), ("view", "fancy")):
        r = server.request("GET", url, token=server.root_token, params={name: value})
        assert_json(r, 400, {"error": f"{name} does not have a valid value"})


def test_list_global_and_group(server, people, tmp_path, no_search_rate_limits):
    """GET /merge_requests is the caller's own by default (scope=created_by_me), needs a token
    unless scope=all, and shows only what the caller may read; GET /groups/:id/merge_requests
    lists the group's projects."""
    _, outsider_token = people["outsider"]
    author, author_token = make_user(server, "author")  # fresh: has authored nothing else
    path = "mrg-" + secrets.token_hex(3)
    group = assert_json(server.request("POST", "/groups", token=server.root_token,
                                       json={"name": path, "path": path}), 201)
    project = new_project(server, namespace_id=group["id"])
    add_member(server, project, author, "developer")
    work = Work(server, tmp_path, project)
    for name in ("one", "two"):
        work.commit(name, name, {f"{name}.txt": name}, start="main")
    work.push("one", "two")
    marker = "zq" + secrets.token_hex(4)
    a = open_mr(server, project, "one", token=author_token, title=f"{marker} by the author")
    b = open_mr(server, project, "two", title=f"{marker} by root", assignee_ids=[author.id])

    def ids(path, token, **params):
        r = server.request("GET", path, token=token, params=params)
        return [m["id"] for m in assert_json(r, 200)]

    assert ids("/merge_requests", author_token) == [a["id"]]
    assert ids("/merge_requests", author_token, scope="created_by_me") == [a["id"]]
    assert ids("/merge_requests", author_token, scope="assigned_to_me") == [b["id"]]
    assert ids("/merge_requests", author_token, scope="all", search=marker) == [b["id"], a["id"]]
    assert ids("/merge_requests", server.root_token, search=marker) == [b["id"]]
    assert ids("/merge_requests", outsider_token, scope="all", search=marker) == []
    assert_json(server.request("GET", "/merge_requests"), 401, UNAUTHORIZED)
    r = server.request("GET", "/merge_requests", params={"scope": "all", "search": marker})
    assert assert_json(r, 200) == []  # the project is private

    gurl = f"/groups/{group['id']}/merge_requests"
    r = server.request("GET", gurl, token=server.root_token)
    assert [m["id"] for m in assert_json(r, 200)] == [b["id"], a["id"]]
    assert r.headers["X-Total"] == "2"
    assert ids(gurl, server.root_token, author_id=author.id) == [a["id"]]
    assert ids(gurl, server.root_token, state="merged") == []
    assert_json(server.request("GET", gurl, token=outsider_token), 404,
                {"message": "404 Group Not Found"})


# ---- update --------------------------------------------------------------------------


def test_update_every_field_close_and_reopen(server, gl, people, tmp_path):
    """PUT changes each documented field; state_event closes and reopens (closed_by and
    closed_at follow); a `Draft:` title makes a draft; bad inputs change nothing."""
    project = new_project(server)
    dev, dev_token = people["developer"]
    rep, rep_token = people["reporter"]
    add_member(server, project, dev, "developer")
    add_member(server, project, rep, "reporter")
    milestone = assert_json(server.request("POST", f"/projects/{project['id']}/milestones",
                                           token=server.root_token, json={"title": "v2"}), 201)
    work = Work(server, tmp_path, project)
    base = work.head("main")
    head = work.commit("feature", "Feature", {"f.txt": "f\n"}, start="main")
    stable = work.commit("stable", "Stable fix", {"s.txt": "s\n"}, start="main")
    work.push("feature", "stable")
    iid = open_mr(server, project, "feature", title="First title")["iid"]

    r = put_mr(server, project, iid, title="Second title", description="Now described",
               labels="a,b", assignee_ids=[dev.id], reviewer_ids=[rep.id],
               milestone_id=milestone["id"], remove_source_branch=True, squash=True,
               discussion_locked=True)
    body = assert_json(r, 200)
    assert MR_FIELDS <= set(body)
    assert (body["title"], body["description"]) == ("Second title", "Now described")
    assert sorted(body["labels"]) == ["a", "b"]
    assert [u["id"] for u in body["assignees"]] == [dev.id] and body["assignee"]["id"] == dev.id
    assert [u["id"] for u in body["reviewers"]] == [rep.id]
    assert body["milestone"]["id"] == milestone["id"]
    assert body["force_remove_source_branch"] is True and body["squash"] is True
    assert body["discussion_locked"] is True
    got = get_mr(server, project, iid)
    assert (got["title"], got["discussion_locked"], got["squash"]) == ("Second title", True, True)

    # another target: the diff is now against stable
    retargeted = assert_json(put_mr(server, project, iid, target_branch="stable"), 200)
    assert retargeted["target_branch"] == "stable"
    moved = wait_mr(server, project, iid,
                    lambda m: (m["diff_refs"] or {}).get("start_sha") == stable,
                    "diff against stable")
    assert moved["diff_refs"] == {"base_sha": base, "start_sha": stable, "head_sha": head}

    # labels added, removed, cleared; people and milestone unset
    def labels(**fields):
        return sorted(assert_json(put_mr(server, project, iid, **fields), 200)["labels"])

    assert labels(add_labels="c") == ["a", "b", "c"]
    assert labels(remove_labels="a") == ["b", "c"]
    assert labels(labels="") == []
    body = assert_json(put_mr(server, project, iid, assignee_ids=[], reviewer_ids=[],
                              milestone_id=0), 200)
    assert body["assignees"] == [] and body["assignee"] is None and body["reviewers"] == []
    assert body["milestone"] is None

    # close and reopen
    closed = assert_json(put_mr(server, project, iid, state_event="close"), 200)
    assert closed["state"] == "closed" and ISO_MS.match(closed["closed_at"])
    assert closed["closed_by"]["id"] == gl.user.id
    assert get_mr(server, project, iid)["state"] == "closed"
    reopened = assert_json(put_mr(server, project, iid, state_event="reopen"), 200)
    assert reopened["state"] == "opened"
    assert reopened["closed_by"] is None and reopened["closed_at"] is None

    # a Draft: title
    draft = assert_json(put_mr(server, project, iid, title="Draft: Second title"), 200)
    assert draft["draft"] is True and draft["work_in_progress"] is True
    assert checked(server, project, iid)["detailed_merge_status"] == "draft_status"
    ready = assert_json(put_mr(server, project, iid, title="Second title"), 200)
    assert ready["draft"] is False and ready["work_in_progress"] is False

    # refusals leave it as it is
    before = get_mr(server, project, iid)
    r = server.request("PUT", mrs_url(project, iid), token=server.root_token, json={})
    assert r.status_code == 400 and "at least one parameter must be provided" in r.json()["error"]
    assert_json(put_mr(server, project, iid, title=""), 400, {"error": "title is empty"})
    assert_json(put_mr(server, project, iid, state_event="explode"), 400,
                {"error": "state_event does not have a valid value"})
    assert_json(put_mr(server, project, iid, token=rep_token, title="reporter"), 403, FORBIDDEN)
    assert_json(server.request("PUT", mrs_url(project, iid), json={"title": "anon"}), 401,
                UNAUTHORIZED)
    after = get_mr(server, project, iid)
    for key in ("title", "description", "state", "labels", "target_branch", "draft"):
        assert after[key] == before[key], key
    # a developer may edit
    assert assert_json(put_mr(server, project, iid, token=dev_token, title="By the developer"),
                       200)["title"] == "By the developer"


# ---- delete --------------------------------------------------------------------------


def test_delete_owner_or_admin_only(server, people, tmp_path):
    """Only the project's owner or an administrator deletes a merge request (204); a developer
    gets 403 and a deleted merge request is a 404 afterwards."""
    owner, owner_token = make_user(server, "mrowner")
    dev, dev_token = people["developer"]
    project = new_project(server, token=owner_token)
    add_member(server, project, dev, "developer")
    work = Work(server, tmp_path, project, login=owner.username, token=owner_token)
    for name in ("one", "two"):
        work.commit(name, name, {f"{name}.txt": name}, start="main")
    work.push("one", "two")
    one = open_mr(server, project, "one", token=owner_token)["iid"]
    two = open_mr(server, project, "two", token=dev_token)["iid"]

    assert_json(server.request("DELETE", mrs_url(project, two), token=dev_token), 403, FORBIDDEN)
    assert_json(server.request("DELETE", mrs_url(project, one)), 401, UNAUTHORIZED)
    r = server.request("DELETE", mrs_url(project, one), token=owner_token)
    assert r.status_code == 204 and r.content == b""
    assert_json(server.request("GET", mrs_url(project, one), token=owner_token), 404, NOT_FOUND)
    assert_json(server.request("DELETE", mrs_url(project, one), token=owner_token), 404,
                NOT_FOUND)
    r = server.request("DELETE", mrs_url(project, two), token=server.root_token)
    assert r.status_code == 204
    assert listed(server, mrs_url(project)) == []


# ---- commits, changes, diffs ----------------------------------------------------------


def test_diffs_commits_changes_and_raw_diffs(server, tmp_path):
    """The commits of the source branch that the target lacks, newest first; the changes (an
    added, an edited and a renamed file) in GitLab's diff shape, in /changes, paginated in
    /diffs, and as a plain-text patch in /raw_diffs."""
    project = new_project(server)
    work = Work(server, tmp_path, project)
    work.commit("main", "Add base files",
                {"base.txt": "one\ntwo\nthree\n", "old.txt": "content that moves along\n"})
    work.push("main")
    c1 = work.commit("feature", "Add new file", {"new.txt": "hello\n"}, start="main")
    c2 = work.commit("feature", "Edit base\n\nLine two shouts now.",
                     {"base.txt": "one\nTWO\nthree\n"})
    c3 = work.commit("feature", "Rename old", move=[("old.txt", "renamed.txt")])
    work.push("feature")
    iid = open_mr(server, project, "feature")["iid"]
    checked(server, project, iid)
    tok = server.root_token

    commits = assert_json(server.request("GET", mrs_url(project, iid, "/commits"), token=tok), 200)
    assert [c["id"] for c in commits] == [c3, c2, c1]
    assert [c["title"] for c in commits] == ["Rename old", "Edit base", "Add new file"]
    assert commits[1]["message"].rstrip("\n") == "Edit base\n\nLine two shouts now."
    for c in commits:
        assert COMMIT_FIELDS <= set(c), COMMIT_FIELDS - set(c)
        assert c["id"].startswith(c["short_id"]) and len(c["short_id"]) >= 7
        assert (c["author_name"], c["author_email"]) == ("Ada", "ada@example.com")

    changes = assert_json(server.request("GET", mrs_url(project, iid, "/changes"), token=tok), 200)
    assert MR_FIELDS <= set(changes) and changes["changes_count"] == "3"
    by_path = {d["new_path"]: d for d in changes["changes"]}
    assert set(by_path) == {"base.txt", "new.txt", "renamed.txt"}
    for d in by_path.values():
        assert DIFF_FIELDS <= set(d), DIFF_FIELDS - set(d)
    added = by_path["new.txt"]
    assert (added["new_file"], added["renamed_file"], added["deleted_file"]) == (True, False, False)
    assert (added["old_path"], added["a_mode"], added["b_mode"]) == ("new.txt", "0", "100644")
    assert added["diff"] == "@@ -0,0 +1 @@\n+hello\n"
    edited = by_path["base.txt"]
    assert edited["diff"] == "@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
    assert not (edited["new_file"] or edited["renamed_file"] or edited["deleted_file"])
    assert (edited["a_mode"], edited["b_mode"]) == ("100644", "100644")
    renamed = by_path["renamed.txt"]
    assert renamed["renamed_file"] is True and renamed["old_path"] == "old.txt"
    assert renamed["diff"] == ""

    # /diffs: the same diff objects, a page at a time
    r = server.request("GET", mrs_url(project, iid, "/diffs"), token=tok)
    every = {d["new_path"]: d for d in assert_json(r, 200)}
    assert set(every) == set(by_path)
    for path, d in every.items():
        assert {k: d[k] for k in DIFF_FIELDS} == {k: by_path[path][k] for k in DIFF_FIELDS}
    pages = []
    for page in (1, 2):
        r = server.request("GET", mrs_url(project, iid, "/diffs"), token=tok,
                           params={"per_page": 2, "page": page})
        pages.append([d["new_path"] for d in assert_json(r, 200)])
    assert [len(p) for p in pages] == [2, 1] and set(pages[0] + pages[1]) == set(by_path)

    # /raw_diffs: a patch git understands
    r = server.request("GET", mrs_url(project, iid, "/raw_diffs"), token=tok)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/plain")
    assert "diff --git a/base.txt b/base.txt" in r.text and "-two\n+TWO\n" in r.text
    assert "diff --git a/new.txt b/new.txt" in r.text and "new file mode 100644" in r.text


# ---- merge ---------------------------------------------------------------------------


def test_merge_makes_a_merge_commit_and_removes_the_source_branch(server, gl, tmp_path):
    """The default merge method: a merge commit with the target and the source as parents and
    the given message; the MR is merged by the caller, and should_remove_source_branch deletes
    the source branch."""
    project = new_project(server)
    work = Work(server, tmp_path, project)
    before = work.head("main")
    work.commit("feature", "First", {"one.txt": "1\n"}, start="main")
    head = work.commit("feature", "Second", {"two.txt": "2\n"})
    work.push("feature")
    iid = open_mr(server, project, "feature")["iid"]
    assert mergeable(server, project, iid)["sha"] == head

    body = assert_json(merge(server, project, iid, merge_commit_message="Merge the feature",
                             should_remove_source_branch=True, sha=head), 200)
    assert MR_FIELDS <= set(body)
    assert body["state"] == "merged" and SHA.match(body["merge_commit_sha"])
    assert body["merged_by"]["id"] == gl.user.id and body["merge_user"]["id"] == gl.user.id
    assert ISO_MS.match(body["merged_at"])
    assert body["squash_commit_sha"] is None
    merged = body["merge_commit_sha"]
    work.fetch()
    assert work.head("main") == merged
    assert work.parents(merged) == [before, head]
    assert work.message(merged).splitlines()[0] == "Merge the feature"
    assert work.tree(merged) == work.tree(head)

    branch = f"/projects/{project['id']}/repository/branches/feature"
    poll(lambda: server.request("GET", branch, token=server.root_token).status_code,
         lambda status: status == 404, "source branch deleted")
    work.fetch()
    assert "feature" not in work.remote_branches()
    after = get_mr(server, project, iid)
    assert after["state"] == "merged" and after["merge_commit_sha"] == merged
    assert after["should_remove_source_branch"] is True
    assert listed(server, mrs_url(project), state="merged") == [iid]
    assert_json(merge(server, project, iid), 405, METHOD_NOT_ALLOWED)


def test_merge_refusals_sha_closed_draft_and_roles(server, people, tmp_path):
    """GitLab's refusals of PUT merge: 401 for whoever may not push to the target, 409 when
    `sha` is not the source head (naming the head), 405 for a closed or draft MR or one merged
    already, 404 for an unknown iid. None of them touches the target branch."""
    project = new_project(server)
    rep, rep_token = people["reporter"]
    add_member(server, project, rep, "reporter")
    work = Work(server, tmp_path, project)
    before = work.head("main")
    for name in ("ready", "closed", "draft"):
        work.commit(name, name, {f"{name}.txt": name}, start="main")
    work.push("ready", "closed", "draft")
    ready = open_mr(server, project, "ready")["iid"]
    closed = open_mr(server, project, "closed")["iid"]
    draft = open_mr(server, project, "draft", title="Draft: not yet")["iid"]
    head = mergeable(server, project, ready)["sha"]

    assert_json(merge(server, project, ready, token=rep_token), 401, UNAUTHORIZED)
    assert_json(server.request("PUT", mrs_url(project, ready, "/merge")), 401, UNAUTHORIZED)
    assert_json(merge(server, project, ready, sha=before), 409,
                {"message": f"SHA does not match HEAD of source branch: {head}"})
    assert_json(put_mr(server, project, closed, state_event="close"), 200)
    assert_json(merge(server, project, closed), 405, METHOD_NOT_ALLOWED)
    got = checked(server, project, draft)
    assert got["draft"] is True and got["detailed_merge_status"] == "draft_status"
    assert_json(merge(server, project, draft), 405, METHOD_NOT_ALLOWED)
    assert_json(merge(server, project, 999), 404, NOT_FOUND)
    work.fetch()
    assert work.head("main") == before
    assert listed(server, mrs_url(project), state="merged") == []

    assert assert_json(merge(server, project, ready, sha=head), 200)["state"] == "merged"
    assert_json(merge(server, project, ready), 405, METHOD_NOT_ALLOWED)


def test_merge_conflicts_are_detected_and_refused(server, tmp_path):
    """Both branches change the same line: the check finds the conflict (cannot_be_merged,
    has_conflicts, detailed_merge_status conflict) and the merge is refused."""
    project = new_project(server)
    work = Work(server, tmp_path, project)
    work.commit("main", "Add shared", {"shared.txt": "first\nsecond\n"})
    work.push("main")
    work.commit("feature", "Feature edit", {"shared.txt": "feature\nsecond\n"}, start="main")
    before = work.commit("main", "Main edit", {"shared.txt": "main\nsecond\n"})
    work.push("main", "feature")
    iid = open_mr(server, project, "feature")["iid"]

    got = checked(server, project, iid)
    assert got["merge_status"] == "cannot_be_merged"
    assert got["has_conflicts"] is True and got["detailed_merge_status"] == "conflict"
    assert_cannot_merge(merge(server, project, iid))
    work.fetch()
    assert work.head("main") == before
    assert get_mr(server, project, iid)["state"] == "opened"


def test_merge_into_protected_branch_needs_its_merge_level(server, people, tmp_path):
    """A target protected with merge_access_level 40: a developer's merge is 401 (and
    user.can_merge is false for them), a maintainer's goes through; the same developer merges
    into an unprotected branch."""
    project = new_project(server)
    dev, dev_token = people["developer"]
    maint, maint_token = people["maintainer"]
    add_member(server, project, dev, "developer")
    add_member(server, project, maint, "maintainer")
    work = Work(server, tmp_path, project)
    work.git("branch", "release", "origin/main")
    work.git("branch", "next", "origin/main")
    work.commit("to-release", "For release", {"r.txt": "r\n"}, start="main")
    work.commit("to-next", "For next", {"n.txt": "n\n"}, start="main")
    work.push("release", "next", "to-release", "to-next")
    r = server.request("POST", f"/projects/{project['id']}/protected_branches",
                       token=server.root_token,
                       json={"name": "release", "push_access_level": 40, "merge_access_level": 40})
    assert_json(r, 201)
    protected = open_mr(server, project, "to-release", target="release")["iid"]
    unprotected = open_mr(server, project, "to-next", target="next")["iid"]
    mergeable(server, project, protected)
    mergeable(server, project, unprotected)

    assert get_mr(server, project, protected, token=dev_token)["user"] == {"can_merge": False}
    assert get_mr(server, project, protected, token=maint_token)["user"] == {"can_merge": True}
    assert_json(merge(server, project, protected, token=dev_token), 401, UNAUTHORIZED)
    body = assert_json(merge(server, project, unprotected, token=dev_token), 200)
    assert body["state"] == "merged" and body["merge_user"]["id"] == dev.id
    body = assert_json(merge(server, project, protected, token=maint_token), 200)
    assert body["state"] == "merged" and body["merge_user"]["id"] == maint.id


# ---- merge methods, rebase, squash -------------------------------------------------------


@pytest.mark.parametrize("method", ["ff", "rebase_merge"])
def test_merge_method_needs_a_rebase_then_merges(server, tmp_path, method):
    """With merge_method ff or rebase_merge, a source branch that is behind its moved target
    needs a rebase (detailed_merge_status need_rebase, the merge refused). PUT rebase answers
    202 and puts the source on top of the target; then ff fast-forwards the target to the source
    head (no merge commit) and rebase_merge makes a merge commit of the two."""
    project = new_project(server)
    assert set_project(server, project, merge_method=method)["merge_method"] == method
    work = Work(server, tmp_path, project)
    old = work.commit("feature", "Feature", {"feature.txt": "f\n"}, start="main")
    moved = work.commit("main", "Main moves on", {"main.txt": "m\n"})
    work.push("main", "feature")
    iid = open_mr(server, project, "feature")["iid"]

    got = checked(server, project, iid)
    assert got["detailed_merge_status"] == "need_rebase" and got["has_conflicts"] is False
    assert_cannot_merge(merge(server, project, iid))
    work.fetch()
    assert work.head("main") == moved

    r = server.request("PUT", mrs_url(project, iid, "/rebase"), token=server.root_token)
    assert_json(r, 202, {"rebase_in_progress": True})
    done = wait_mr(server, project, iid,
                   lambda m: m.get("rebase_in_progress") is False and m["sha"] != old,
                   "the rebase", include_rebase_in_progress="true")
    assert done["merge_error"] is None
    work.fetch()
    rebased = work.head("feature")
    assert rebased == done["sha"] and work.parents(rebased) == [moved]
    work.git("merge-base", "--is-ancestor", "origin/main", "origin/feature")  # fails if not

    mergeable(server, project, iid)
    body = assert_json(merge(server, project, iid), 200)
    assert body["state"] == "merged"
    work.fetch()
    head = work.head("main")
    if method == "ff":
        assert head == rebased  # the target fast-forwarded: no merge commit
    else:
        assert work.parents(head) == [moved, rebased] and body["merge_commit_sha"] == head


def test_merge_squash_makes_one_commit_under_the_merge_commit(server, tmp_path):
    """squash=true on a three-commit branch: one squash commit (with the given message and the
    branch's tree) becomes the second parent of the merge commit; the three commits stay off
    the target."""
    project = new_project(server)
    work = Work(server, tmp_path, project)
    before = work.head("main")
    work.commit("feature", "Step 1", {"s1.txt": "1\n"}, start="main")
    work.commit("feature", "Step 2", {"s2.txt": "2\n"})
    head = work.commit("feature", "Step 3", {"s3.txt": "3\n"})
    work.push("feature")
    iid = open_mr(server, project, "feature")["iid"]
    assert mergeable(server, project, iid)["squash"] is False

    body = assert_json(merge(server, project, iid, squash=True,
                             squash_commit_message="All three steps",
                             merge_commit_message="Merge the steps"), 200)
    assert body["state"] == "merged" and body["squash"] is True
    squashed, merged = body["squash_commit_sha"], body["merge_commit_sha"]
    assert SHA.match(squashed) and SHA.match(merged) and squashed != head
    work.fetch()
    assert work.head("main") == merged
    assert work.parents(merged) == [before, squashed]
    assert work.parents(squashed) == [before]
    assert work.tree(squashed) == work.tree(head)
    assert work.message(squashed).splitlines()[0] == "All three steps"
    assert work.message(merged).splitlines()[0] == "Merge the steps"
    assert work.git("rev-list", "--count", f"{before}..origin/main") == "2"


def test_merge_waits_for_resolved_discussions_when_the_project_says_so(server, tmp_path):
    """only_allow_merge_if_all_discussions_are_resolved: an unresolved thread makes
    detailed_merge_status discussions_not_resolved and the merge 405; resolving it lets the
    merge through."""
    project = new_project(server)
    set_project(server, project, only_allow_merge_if_all_discussions_are_resolved=True)
    work = Work(server, tmp_path, project)
    work.commit("feature", "Feature", {"f.txt": "f\n"}, start="main")
    work.push("feature")
    iid = open_mr(server, project, "feature")["iid"]
    mergeable(server, project, iid)
    thread = assert_json(server.request("POST", mrs_url(project, iid, "/discussions"),
                                        token=server.root_token,
                                        json={"body": "Please rename this"}), 201)

    got = wait_mr(server, project, iid,
                  lambda m: m["detailed_merge_status"] == "discussions_not_resolved",
                  "discussions_not_resolved")
    assert got["blocking_discussions_resolved"] is False
    assert_json(merge(server, project, iid), 405, METHOD_NOT_ALLOWED)

    r = server.request("PUT", mrs_url(project, iid, f"/discussions/{thread['id']}"),
                       token=server.root_token, params={"resolved": "true"})
    assert all(n["resolved"] for n in assert_json(r, 200)["notes"])
    assert mergeable(server, project, iid)["blocking_discussions_resolved"] is True
    assert assert_json(merge(server, project, iid), 200)["state"] == "merged"


# ---- approvals -----------------------------------------------------------------------------


def test_approvals_approve_unapprove(server, people, tmp_path):
    """CE approvals: anyone who may (the author too) approves once (201, approved_by lists
    users); approving again is 401; unapprove takes one's approval back (201), and again 404."""
    project = new_project(server)
    dev, dev_token = people["developer"]
    maint, maint_token = people["maintainer"]
    add_member(server, project, dev, "developer")
    add_member(server, project, maint, "maintainer")
    work = Work(server, tmp_path, project)
    head = work.commit("feature", "Feature", {"f.txt": "f\n"}, start="main")
    work.push("feature")
    iid = open_mr(server, project, "feature", token=dev_token)["iid"]  # the developer's own

    def approvals(token=server.root_token):
        r = server.request("GET", mrs_url(project, iid, "/approvals"), token=token)
        return assert_json(r, 200)

    def post(action, token, **body):
        return server.request("POST", mrs_url(project, iid, f"/{action}"), token=token,
                              json=body or None)

    def approvers(body):
        return sorted(a["user"]["id"] for a in body["approved_by"])

    none = approvals()
    assert none["approved"] is False and none["approved_by"] == []
    assert none["user_has_approved"] is False and none["user_can_approve"] is True
    mine = assert_json(post("approve", dev_token), 201)
    assert approvers(mine) == [dev.id] and mine["approved"] is True
    assert mine["user_has_approved"] is True and mine["user_can_approve"] is False
    assert USER_FIELDS <= set(mine["approved_by"][0]["user"])
    assert_json(post("approve", dev_token), 401, UNAUTHORIZED)
    both = assert_json(post("approve", maint_token), 201)
    assert approvers(both) == sorted([dev.id, maint.id])
    assert approvers(approvals(dev_token)) == sorted([dev.id, maint.id])
    assert approvals(dev_token)["user_has_approved"] is True
    assert_json(post("approve", server.root_token, sha="0" * 40), 409,
                {"message": f"SHA does not match HEAD of source branch: {head}"})
    assert_json(server.request("POST", mrs_url(project, iid, "/approve")), 401, UNAUTHORIZED)

    off = assert_json(post("unapprove", dev_token), 201)
    assert approvers(off) == [maint.id] and off["user_has_approved"] is False
    assert_json(post("unapprove", dev_token), 404, {"message": "404 Not Found"})
    assert approvers(approvals()) == [maint.id]


def test_approvals_approval_state_has_no_rules(server, tmp_path):
    """GET approval_state without approval rules (CE): nothing overwritten, no rules."""
    project = new_project(server)
    work = Work(server, tmp_path, project)
    work.commit("feature", "Feature", {"f.txt": "f\n"}, start="main")
    work.push("feature")
    iid = open_mr(server, project, "feature")["iid"]
    r = server.request("GET", mrs_url(project, iid, "/approval_state"), token=server.root_token)
    assert_json(r, 200, {"approval_rules_overwritten": False, "rules": []})


# ---- notes and discussions -------------------------------------------------------------------


def test_notes_and_discussions_with_diff_positions(server, gl, tmp_path):
    """A plain note, a diff thread on a line of the new version (position from the MR's
    diff_refs), a reply to it and its resolution, as the notes and discussions APIs show them."""
    project = new_project(server)
    work = Work(server, tmp_path, project)
    work.commit("main", "Add base", {"base.txt": "one\ntwo\nthree\n"})
    work.push("main")
    work.commit("feature", "Shout", {"base.txt": "one\nTWO\nthree\nfour\n"}, start="main")
    work.push("feature")
    iid = open_mr(server, project, "feature")["iid"]
    refs = checked(server, project, iid)["diff_refs"]
    tok = server.root_token

    note = assert_json(server.request("POST", mrs_url(project, iid, "/notes"), token=tok,
                                      json={"body": "General remark"}), 201)
    assert note["body"] == "General remark" and note["system"] is False
    assert note["noteable_type"] == "MergeRequest" and note["noteable_iid"] == iid
    assert note["author"]["id"] == gl.user.id
    notes = assert_json(server.request("GET", mrs_url(project, iid, "/notes"), token=tok), 200)
    assert note["id"] in [n["id"] for n in notes]

    form = {"body": "Why shout?", "position[position_type]": "text",
            "position[base_sha]": refs["base_sha"], "position[start_sha]": refs["start_sha"],
            "position[head_sha]": refs["head_sha"], "position[old_path]": "base.txt",
            "position[new_path]": "base.txt", "position[new_line]": "2"}
    thread = assert_json(server.request("POST", mrs_url(project, iid, "/discussions"),
                                        token=tok, data=form), 201)
    assert SHA.match(thread["id"]) and thread["individual_note"] is False
    (first,) = thread["notes"]
    assert first["type"] == "DiffNote" and first["body"] == "Why shout?"
    assert first["resolvable"] is True and first["resolved"] is False
    position = first["position"]
    assert position["position_type"] == "text" and position["new_path"] == "base.txt"
    assert position["new_line"] == 2
    assert {k: position[k] for k in ("base_sha", "start_sha", "head_sha")} == refs

    one = mrs_url(project, iid, f"/discussions/{thread['id']}")
    reply = assert_json(server.request("POST", one + "/notes", token=tok,
                                       json={"body": "It matters"}), 201)
    assert reply["body"] == "It matters"
    got = assert_json(server.request("GET", one, token=tok), 200)
    assert [n["body"] for n in got["notes"]] == ["Why shout?", "It matters"]
    resolved = assert_json(server.request("PUT", one, token=tok, params={"resolved": "true"}), 200)
    assert all(n["resolved"] for n in resolved["notes"])
    assert resolved["notes"][0]["resolved_by"]["id"] == gl.user.id

    listed_threads = assert_json(server.request("GET", mrs_url(project, iid, "/discussions"),
                                                token=tok), 200)
    by_id = {d["id"]: d for d in listed_threads}
    assert len(by_id[thread["id"]]["notes"]) == 2
    assert any(d["individual_note"] and d["notes"][0]["id"] == note["id"] for d in listed_threads)
    assert get_mr(server, project, iid)["user_notes_count"] == 3
    r = server.request("GET", mrs_url(project, iid, "/discussions/" + "0" * 40), token=tok)
    assert r.status_code == 404


def test_participants_and_reviewers(server, gl, people, tmp_path):
    """Participants are the author, assignees, reviewers and commenters, once each, in that
    order; reviewers show their review state, `approved` once they approve."""
    project = new_project(server)
    dev, dev_token = people["developer"]
    rep = people["reporter"][0]
    add_member(server, project, dev, "developer")
    add_member(server, project, rep, "reporter")
    work = Work(server, tmp_path, project)
    work.commit("feature", "Add a", {"a.txt": "a\n"}, start="main")
    work.push("feature")
    iid = open_mr(server, project, "feature", assignee_ids=[rep.id],
                  reviewer_ids=[dev.id, rep.id])["iid"]
    assert_json(server.request("POST", mrs_url(project, iid, "/notes"), token=dev_token,
                               json={"body": "Looks fine"}), 201)

    got = assert_json(server.request("GET", mrs_url(project, iid, "/participants"),
                                     token=server.root_token), 200)
    assert [u["id"] for u in got] == [gl.user.id, rep.id, dev.id]
    assert USER_FIELDS <= set(got[0])

    assert_json(server.request("POST", mrs_url(project, iid, "/approve"), token=dev_token), 201)
    reviewers = assert_json(server.request("GET", mrs_url(project, iid, "/reviewers"),
                                           token=server.root_token), 200)
    assert [(r["user"]["id"], r["state"]) for r in reviewers] == [
        (dev.id, "approved"), (rep.id, "unreviewed")]
    assert all(ISO_MS.match(r["created_at"]) for r in reviewers)
    assert_json(server.request("GET", mrs_url(project, 999, "/participants"),
                               token=server.root_token), 404, NOT_FOUND)


# ---- webhooks -------------------------------------------------------------------------------


def mr_hook(receiver, action, after=-1, timeout=30.0):
    """The first Merge Request Hook of `action` that arrived after request number `after`
    (waiting for it): (its number, its body)."""
    deadline = time.monotonic() + timeout
    while True:
        sent = receiver.requests("Merge Request Hook")
        for n, request in enumerate(sent):
            body = request["json"] or {}
            if n > after and body.get("object_attributes", {}).get("action") == action:
                return n, body
        if time.monotonic() > deadline:
            actions = [(r["json"] or {}).get("object_attributes", {}).get("action") for r in sent]
            raise AssertionError(f"no {action} hook after #{after}; got {actions}")
        time.sleep(0.05)


def test_webhook_merge_request_hook_for_every_action(server, gl, receiver, tmp_path):
    """A hook with merge_requests_events gets a Merge Request Hook for open, update (with
    changes), close, reopen, approved, unapproved and merge, in that order."""
    project = new_project(server)
    r = server.request("POST", f"/projects/{project['id']}/hooks", token=server.root_token,
                       json={"url": receiver.url, "token": "s3cret", "push_events": False,
                             "merge_requests_events": True})
    assert_json(r, 201)
    work = Work(server, tmp_path, project)
    work.commit("feature", "Feature", {"f.txt": "f\n"}, start="main")
    work.push("feature")
    mr = open_mr(server, project, "feature", title="Hooked")
    iid = mr["iid"]

    n, opened = mr_hook(receiver, "open")
    request = receiver.requests("Merge Request Hook")[n]
    assert request["headers"]["x-gitlab-token"] == "s3cret"
    assert request["headers"]["content-type"] == "application/json"
    assert {"object_kind", "event_type", "user", "project", "object_attributes", "labels",
            "changes", "repository"} <= set(opened)
    assert opened["object_kind"] == "merge_request" and opened["event_type"] == "merge_request"
    assert opened["user"]["username"] == gl.user.username
    assert opened["project"]["id"] == project["id"]
    assert opened["project"]["path_with_namespace"] == project["path_with_namespace"]
    assert opened["repository"]["name"] == project["name"]
    attrs = opened["object_attributes"]
    assert (attrs["id"], attrs["iid"], attrs["title"]) == (mr["id"], iid, "Hooked")
    assert (attrs["source_branch"], attrs["target_branch"]) == ("feature", "main")
    assert attrs["state"] == "opened" and attrs["url"] == mr["web_url"]
    assert attrs["source_project_id"] == attrs["target_project_id"] == project["id"]
    assert attrs["author_id"] == gl.user.id

    assert_json(put_mr(server, project, iid, title="Hooked, renamed"), 200)
    n, updated = mr_hook(receiver, "update", n)
    assert updated["changes"]["title"] == {"previous": "Hooked", "current": "Hooked, renamed"}
    assert updated["object_attributes"]["title"] == "Hooked, renamed"
    assert_json(put_mr(server, project, iid, state_event="close"), 200)
    n, closed = mr_hook(receiver, "close", n)
    assert closed["object_attributes"]["state"] == "closed"
    assert_json(put_mr(server, project, iid, state_event="reopen"), 200)
    n, reopened = mr_hook(receiver, "reopen", n)
    assert reopened["object_attributes"]["state"] == "opened"
    url = mrs_url(project, iid)
    assert_json(server.request("POST", url + "/approve", token=server.root_token), 201)
    n, _ = mr_hook(receiver, "approved", n)
    assert_json(server.request("POST", url + "/unapprove", token=server.root_token), 201)
    n, _ = mr_hook(receiver, "unapproved", n)
    mergeable(server, project, iid)
    assert_json(merge(server, project, iid), 200)
    n, merged = mr_hook(receiver, "merge", n)
    assert merged["object_attributes"]["state"] == "merged"
    assert merged["object_attributes"]["iid"] == iid
    assert all(r["json"]["object_kind"] == "merge_request"
               for r in receiver.requests("Merge Request Hook"))


# ---- closing issues ---------------------------------------------------------------------------


def test_closes_issues_on_merge(server, gl, tmp_path):
    """`Closes #N` in the description: closes_issues lists issue N before the merge, the issue's
    closed_by lists the MR, and merging into the default branch closes the issue."""
    project = new_project(server)
    issue = assert_json(server.request("POST", f"/projects/{project['id']}/issues",
                                       token=server.root_token, json={"title": "Crash"}), 201)
    other = assert_json(server.request("POST", f"/projects/{project['id']}/issues",
                                       token=server.root_token, json={"title": "Unrelated"}), 201)
    work = Work(server, tmp_path, project)
    work.commit("fix", "Fix the crash", {"fix.txt": "fixed\n"}, start="main")
    work.push("fix")
    iid = open_mr(server, project, "fix", title="Fix the crash",
                  description=f"Stops the crash.\n\nCloses #{issue['iid']}")["iid"]
    tok = server.root_token
    issue_url = f"/projects/{project['id']}/issues"

    r = server.request("GET", mrs_url(project, iid, "/closes_issues"), token=tok)
    assert [i["iid"] for i in assert_json(r, 200)] == [issue["iid"]]
    r = server.request("GET", f"{issue_url}/{issue['iid']}/closed_by", token=tok)
    assert [m["iid"] for m in assert_json(r, 200)] == [iid]
    r = server.request("GET", f"{issue_url}/{other['iid']}/closed_by", token=tok)
    assert assert_json(r, 200) == []

    mergeable(server, project, iid)
    assert_json(merge(server, project, iid), 200)
    closed = poll(lambda: assert_json(server.request("GET", f"{issue_url}/{issue['iid']}",
                                                     token=tok), 200),
                  lambda i: i["state"] == "closed", "issue closed by the merge")
    assert closed["closed_by"]["id"] == gl.user.id
    r = server.request("GET", f"{issue_url}/{issue['iid']}/closed_by", token=tok)
    assert [m["iid"] for m in assert_json(r, 200)] == [iid]
    r = server.request("GET", f"{issue_url}/{other['iid']}", token=tok)
    assert assert_json(r, 200)["state"] == "opened"


# ---- python-gitlab -----------------------------------------------------------------------------


def test_python_gitlab_workflow(server, gl, tmp_path):
    """The whole workflow through python-gitlab's objects: create, list by state, edit and save,
    commits, changes, a note and a thread, approve, merge."""
    project = new_project(server)
    work = Work(server, tmp_path, project)
    work.commit("feature", "Add feature", {"feature.txt": "on\n"}, start="main")
    work.commit("feature", "Tune feature", {"feature.txt": "on\nfast\n"})
    work.push("feature")
    p = gl.projects.get(project["id"])

    mr = p.mergerequests.create({"source_branch": "feature", "target_branch": "main",
                                 "title": "Add the feature", "description": "For speed",
                                 "labels": ["perf"]})
    assert mr.state == "opened" and mr.labels == ["perf"] and mr.iid == 1
    assert [m.iid for m in p.mergerequests.list(state="opened", get_all=True)] == [mr.iid]
    assert p.mergerequests.list(state="merged", get_all=True) == []
    mr.title = "Add the fast feature"
    mr.save()
    assert p.mergerequests.get(mr.iid).title == "Add the fast feature"
    assert [c.title for c in mr.commits()] == ["Tune feature", "Add feature"]
    changes = mr.changes()
    assert [(c["new_path"], c["new_file"]) for c in changes["changes"]] == [("feature.txt", True)]
    mr.notes.create({"body": "Looks good"})
    thread = mr.discussions.create({"body": "One question"})
    assert thread.attributes["notes"][0]["body"] == "One question"
    bodies = {n.body for n in mr.notes.list(get_all=True) if not n.system}
    assert {"Looks good", "One question"} <= bodies
    iid = mr.iid
    approval = mr.approve()  # python-gitlab keeps the approvals body as the object's attributes
    assert [a["user"]["username"] for a in approval["approved_by"]] == [gl.user.username]

    mr = poll(lambda: p.mergerequests.get(iid), lambda m: m.detailed_merge_status == "mergeable",
              "mergeable through python-gitlab")
    mr.merge()
    assert mr.state == "merged" and SHA.match(mr.merge_commit_sha)
    assert [m.iid for m in p.mergerequests.list(state="merged", get_all=True)] == [iid]
    with pytest.raises(gitlab.GitlabMRClosedError) as refused:
        mr.merge()
    assert refused.value.response_code == 405


# ---- tenants -------------------------------------------------------------------------------------


def test_tenant_other_reaches_nothing(server, tmp_path):
    """Another tenant's token is no credential here (401), and on its own host this tenant's
    project id names nothing (404) on every merge request route; nothing changes."""
    project = new_project(server)
    work = Work(server, tmp_path, project)
    work.commit("feature", "Feature", {"f.txt": "f\n"}, start="main")
    work.push("feature")
    mr = open_mr(server, project, "feature", title="Ours")
    iid = mr["iid"]
    host, other_root = other_tenant(server, "mr")
    routes = [
        ("GET", mrs_url(project), None),
        ("POST", mrs_url(project), {"title": "Theirs", "source_branch": "feature",
                                    "target_branch": "main"}),
        ("GET", mrs_url(project, iid), None),
        ("PUT", mrs_url(project, iid), {"title": "Theirs"}),
        ("PUT", mrs_url(project, iid, "/merge"), None),
        ("PUT", mrs_url(project, iid, "/rebase"), None),
        ("GET", mrs_url(project, iid, "/commits"), None),
        ("GET", mrs_url(project, iid, "/changes"), None),
        ("GET", mrs_url(project, iid, "/diffs"), None),
        ("POST", mrs_url(project, iid, "/approve"), None),
        ("POST", mrs_url(project, iid, "/notes"), {"body": "theirs"}),
        ("POST", mrs_url(project, iid, "/discussions"), {"body": "theirs"}),
        ("DELETE", mrs_url(project, iid), None),
    ]
    for method, path, body in routes:
        r = server.request(method, path, token=other_root, json=body)
        assert_json(r, 401, UNAUTHORIZED)
        r = server.request(method, path, token=other_root, host=host, json=body)
        assert_json(r, 404, PROJECT_NOT_FOUND)
    r = server.request("GET", "/merge_requests", token=other_root, host=host,
                       params={"scope": "all"})
    assert all(m["title"] != "Ours" for m in assert_json(r, 200))
    after = get_mr(server, project, iid)
    assert (after["title"], after["state"], after["user_notes_count"]) == ("Ours", "opened", 0)
    assert listed(server, mrs_url(project)) == [iid]
