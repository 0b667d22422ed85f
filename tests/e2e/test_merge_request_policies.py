"""Merge requests under the project's and the instance's policies, end to end on real
repositories (branches pushed with the real `git` over smart HTTP): push rules deciding the
commits the server makes when it merges (the merge commit and the squash commit), the bound
spam check refusing a merge request's text, an archived project refusing every write, and bad
inputs GitLab refuses before anything is written. GitLab CE's answers throughout
(docs.gitlab.com: api/merge_requests, user/project/repository/push_rules, the spam check),
and after every refusal the repository (`git ls-remote`) and the merge request list unchanged.

Sections (for `-k`): push_rule, spam, archived, bad_inputs.
"""

from __future__ import annotations

import secrets

import pytest

from conftest import (FORBIDDEN, JSON, UNAUTHORIZED, assert_json, bind, built_in, make_user,
                      require_program)
from merge_request_support import (new_project, add_member, Work, mrs_url, open_mr, get_mr,
                                   put_mr, merge, checked, mergeable)

NOT_FOUND = {"message": "404 Not found"}  # ActiveRecord::RecordNotFound

# The push rule of these tests and GitLab's refusal of a commit that breaks it.
RULE = "^(feat|fix): "
RULE_BROKEN = f"Commit message does not follow the pattern '{RULE}'"
# Spammable#unrecoverable_spam_error! with spammable_entity_type "merge request", on :base,
# which API::Helpers::MergeRequestsHelpers#handle_merge_request_errors! answers with 422
# (:base is one of its UNPROCESSABLE_ERROR_KEYS) and the list of messages.
SPAM = {"message": ["Your merge request has been recognized as spam. "
                    "Please, change the content to proceed."]}
TITLE_TOO_LONG = {"message": {"title": ["is too long (maximum is 255 characters)"]}}
IID_INVALID = {"error": "merge_request_iid is invalid"}


@pytest.fixture(scope="module", autouse=True)
def _git():
    require_program("git", "git")


@pytest.fixture(scope="module")
def people(server):
    """A user for each role (user, token); each test makes them members of its own project."""
    return {role: make_user(server, role) for role in ("developer", "guest", "outsider")}


@pytest.fixture(autouse=True)
def _unbound(server):
    """The instance's push rule and spam bindings are dropped after every test."""
    yield
    for hook in ("push_rules", "spam_check"):
        server.request("DELETE", f"/application/plugin_hooks/{hook}", token=server.root_token)


# ---- helpers (as in test_merge_requests.py) ------------------------------------------


def post_mr(server, project, token=None, **body):
    return server.request("POST", mrs_url(project), token=token or server.root_token, json=body)


def listed(server, project, **params) -> list[int]:
    """The iids of the project's merge requests (root's view), X-Total agreeing."""
    params.setdefault("per_page", 100)
    r = server.request("GET", mrs_url(project), token=server.root_token, params=params)
    body = assert_json(r, 200)
    assert r.headers["X-Total"] == str(len(body)), r.headers.get("X-Total")
    return [m["iid"] for m in body]


def assert_unmerged(server, project, iid):
    """The merge request is open and records no merge."""
    mr = get_mr(server, project, iid)
    assert mr["state"] == "opened", mr["state"]
    for key in ("merged_by", "merge_user", "merged_at", "merge_commit_sha",
                "squash_commit_sha"):
        assert mr[key] is None, (key, mr[key])
    assert listed(server, project, state="merged") == []


# ---- push rules -------------------------------------------------------------------------


def enforce_rule(server, project, **rule):
    """The project's push rule, enforced by the instance's built-in push-rules plugin."""
    path = f"/projects/{project['id']}/push_rule"
    assert_json(server.request("POST", path, token=server.root_token, json=rule), 201)
    plugin = built_in(server, name="push-rules")
    assert_json(bind(server, "push_rules", plugin_id=plugin["id"], config={}), 200)


def refused_api_commit(server, project, message):
    """What the repository commits API answers for a commit the push rule refuses: the
    answer a refused server-side merge must share (a change the server makes on the caller's
    behalf, decided as a push)."""
    r = server.request("POST", f"/projects/{project['id']}/repository/commits",
                       token=server.root_token,
                       json={"branch": "scratch-" + secrets.token_hex(2), "start_branch": "main",
                             "commit_message": message,
                             "actions": [{"action": "create", "file_path": "scratch.txt",
                                          "content": "scratch\n"}]})
    assert r.status_code in (400, 403), (r.status_code, r.text)
    assert r.headers.get("Content-Type") == JSON
    assert RULE_BROKEN in str(r.json()["message"]), r.text
    return r.status_code, r.json()


def assert_refused_like(r, expected):
    assert r.headers.get("Content-Type") == JSON, r.headers.get("Content-Type")
    assert (r.status_code, r.json()) == expected, (r.status_code, r.text)


def test_push_rule_refuses_a_merge_commit_message(server, tmp_path):
    """commit_message_regex decides the merge commit the server makes: a merge_commit_message
    that breaks it, and the default `Merge branch ...` message, are refused as the commits
    API refuses such a commit (403 naming the rule); the merge request stays open, the target
    and the source branch (should_remove_source_branch notwithstanding) stay where they were.
    A compliant message merges."""
    project = new_project(server)
    work = Work(server, tmp_path, project)
    before = work.head("main")
    work.commit("feature", "feat: add one", {"one.txt": "1\n"}, start="main")
    head = work.commit("feature", "fix: tune one", {"one.txt": "1\n2\n"})
    work.push("feature")
    iid = open_mr(server, project, "feature", title="Add one")["iid"]
    mergeable(server, project, iid)
    enforce_rule(server, project, commit_message_regex=RULE)
    expected = refused_api_commit(server, project, "update stuff")
    assert expected == (403, {"message": f"403 Forbidden - {RULE_BROKEN}"})
    refs = work.remote()

    assert_refused_like(merge(server, project, iid, merge_commit_message="Merge the feature",
                              should_remove_source_branch=True, sha=head), expected)
    # GitLab's default message (`Merge branch 'feature' into 'main'`) breaks the rule too
    assert_refused_like(merge(server, project, iid), expected)
    assert_unmerged(server, project, iid)
    assert work.remote() == refs
    assert refs["refs/heads/main"] == before and refs["refs/heads/feature"] == head

    body = assert_json(merge(server, project, iid, merge_commit_message="feat: merge one",
                             should_remove_source_branch=True), 200)
    assert body["state"] == "merged"
    merged = body["merge_commit_sha"]
    work.fetch()
    assert work.head("main") == merged
    assert work.parents(merged) == [before, head]
    assert work.message(merged).splitlines()[0] == "feat: merge one"


@pytest.mark.parametrize("method", ["merge", "ff"])
def test_push_rule_refuses_a_squash_commit_message(server, tmp_path, method):
    """squash=true: the squash commit is a new commit the rule decides, under a merge commit
    (merge) or alone on the target (ff, gitlab-org/gitlab#345359). A squash_commit_message
    that breaks the rule, or the default one (the title), is refused; a compliant one merges
    with that message."""
    project = new_project(server)
    r = server.request("PUT", f"/projects/{project['id']}", token=server.root_token,
                       json={"merge_method": method})
    assert assert_json(r, 200)["merge_method"] == method
    work = Work(server, tmp_path, project)
    before = work.head("main")
    work.commit("feature", "feat: step 1", {"s1.txt": "1\n"}, start="main")
    head = work.commit("feature", "feat: step 2", {"s2.txt": "2\n"})
    work.push("feature")
    iid = open_mr(server, project, "feature", title="Both steps")["iid"]
    mergeable(server, project, iid)
    enforce_rule(server, project, commit_message_regex=RULE)
    expected = refused_api_commit(server, project, "update stuff")
    refs = work.remote()

    assert_refused_like(merge(server, project, iid, squash=True,
                              squash_commit_message="All the steps",
                              merge_commit_message="feat: merge the steps"), expected)
    assert_refused_like(merge(server, project, iid, squash=True,
                              merge_commit_message="feat: merge the steps"), expected)
    assert_unmerged(server, project, iid)
    assert work.remote() == refs and refs["refs/heads/main"] == before

    body = assert_json(merge(server, project, iid, squash=True,
                             squash_commit_message="feat: all the steps",
                             merge_commit_message="feat: merge the steps"), 200)
    assert body["state"] == "merged"
    squashed = body["squash_commit_sha"]
    assert squashed and squashed != head
    work.fetch()
    assert work.parents(squashed) == [before]
    assert work.message(squashed).splitlines()[0] == "feat: all the steps"
    if method == "ff":
        assert work.head("main") == squashed
    else:
        merged = body["merge_commit_sha"]
        assert work.head("main") == merged and work.parents(merged) == [before, squashed]
        assert work.message(merged).splitlines()[0] == "feat: merge the steps"


# ---- spam check -----------------------------------------------------------------------


def bind_spam_filter(server, *words):
    plugin = built_in(server)
    assert_json(bind(server, plugin_id=plugin["id"], config={"blocked_words": list(words)}),
                200)


def test_spam_check_refuses_merge_request_create(server, people, tmp_path):
    """With a spam check bound, a new merge request whose title or description the plugin
    calls spam is refused with GitLab's spam error, and none is stored; a clean one opens."""
    dev, dev_token = people["developer"]
    project = new_project(server)
    add_member(server, project, dev, "developer")
    work = Work(server, tmp_path, project)
    work.commit("feature", "Feature", {"f.txt": "f\n"}, start="main")
    work.push("feature")
    bind_spam_filter(server, "casino")
    base = {"source_branch": "feature", "target_branch": "main"}

    assert_json(post_mr(server, project, token=dev_token, title="Best CASINO in town", **base),
                422, SPAM)
    assert_json(post_mr(server, project, token=dev_token, title="Fine",
                        description="Win big at the casino", **base), 422, SPAM)
    assert listed(server, project) == []
    clean = assert_json(post_mr(server, project, token=dev_token, title="Add f",
                                description="A file", **base), 201)
    assert listed(server, project) == [clean["iid"]]


def test_spam_check_refuses_merge_request_update(server, people, tmp_path):
    """An edit that makes the title or description spam is refused with GitLab's spam error
    and changes nothing, not even the other fields sent with it; edits of other fields, and
    clean text, go through."""
    dev, dev_token = people["developer"]
    project = new_project(server)
    add_member(server, project, dev, "developer")
    work = Work(server, tmp_path, project)
    work.commit("feature", "Feature", {"f.txt": "f\n"}, start="main")
    work.push("feature")
    iid = open_mr(server, project, "feature", token=dev_token, title="Fine",
                  description="fine", labels="keep")["iid"]
    bind_spam_filter(server, "casino")
    before = get_mr(server, project, iid)

    assert_json(put_mr(server, project, iid, token=dev_token, title="casino royale"), 422, SPAM)
    assert_json(put_mr(server, project, iid, token=dev_token, description="casino"), 422, SPAM)
    assert_json(put_mr(server, project, iid, token=dev_token, title="Renamed",
                       description="casino night", labels="spam", squash=True), 422, SPAM)
    after = get_mr(server, project, iid)
    for key in ("title", "description", "labels", "squash", "updated_at", "state"):
        assert after[key] == before[key], key

    assert assert_json(put_mr(server, project, iid, token=dev_token, labels="bug"),
                       200)["labels"] == ["bug"]
    assert assert_json(put_mr(server, project, iid, token=dev_token, title="Still fine"),
                       200)["title"] == "Still fine"


# ---- archived projects ------------------------------------------------------------------


def test_archived_project_refuses_merge_request_writes(server, people, tmp_path):
    """An archived project is read-only: opening a merge request is 403 (no
    create_merge_request_from), editing and rebasing 403, and merging is the 401 GitLab's merge
    gives whoever may not push to the target (can_be_merged_by?: no push_code on an archived
    project). Nothing is written."""
    dev, dev_token = people["developer"]
    project = new_project(server)
    add_member(server, project, dev, "developer")
    work = Work(server, tmp_path, project)
    work.commit("feature", "Feature", {"f.txt": "f\n"}, start="main")
    work.commit("later", "Later", {"l.txt": "l\n"}, start="main")
    work.push("feature", "later")
    iid = open_mr(server, project, "feature", title="Before the archive")["iid"]
    mergeable(server, project, iid)
    r = server.request("POST", f"/projects/{project['id']}/archive", token=server.root_token)
    assert assert_json(r, 201)["archived"] is True
    refs = work.remote()
    before = get_mr(server, project, iid)

    for token in (server.root_token, dev_token):
        assert_json(post_mr(server, project, token=token, source_branch="later",
                            target_branch="main", title="After the archive"), 403, FORBIDDEN)
        assert_json(put_mr(server, project, iid, token=token, title="Renamed"), 403, FORBIDDEN)
        assert_json(put_mr(server, project, iid, token=token, state_event="close"), 403,
                    FORBIDDEN)
        assert_json(server.request("PUT", mrs_url(project, iid, "/rebase"), token=token),
                    403, FORBIDDEN)
        assert_json(merge(server, project, iid, token=token), 401, UNAUTHORIZED)
    assert listed(server, project) == [iid]
    after = get_mr(server, project, iid)
    for key in ("title", "state", "updated_at", "merge_commit_sha"):
        assert after[key] == before[key], key
    assert work.remote() == refs


# ---- bad inputs ---------------------------------------------------------------------------


def test_bad_inputs_target_project_the_user_cannot_see(server, people, tmp_path):
    """MergeRequests::CreateService#set_projects!: a target_project_id the caller may not open
    merge requests in is Gitlab::Access::AccessDeniedError (403), one that names no project
    ActiveRecord::RecordNotFound (404 Not found). Neither project gets a merge request; the
    project's own id is just the default target."""
    dev, dev_token = people["developer"]
    project = new_project(server)
    add_member(server, project, dev, "developer")
    hidden = new_project(server)  # private, and the developer is no member
    work = Work(server, tmp_path, project)
    work.commit("feature", "Feature", {"f.txt": "f\n"}, start="main")
    work.push("feature")
    body = {"source_branch": "feature", "target_branch": "main", "title": "Elsewhere"}

    assert_json(server.request("GET", f"/projects/{hidden['id']}", token=dev_token), 404)
    assert_json(post_mr(server, project, token=dev_token, target_project_id=hidden["id"],
                        **body), 403, FORBIDDEN)
    assert_json(post_mr(server, project, token=dev_token, target_project_id=99999999, **body),
                404, NOT_FOUND)
    assert listed(server, project) == [] and listed(server, hidden) == []
    made = assert_json(post_mr(server, project, token=dev_token,
                               target_project_id=project["id"], **body), 201)
    assert made["target_project_id"] == made["source_project_id"] == project["id"]
    assert listed(server, hidden) == []


def test_bad_inputs_unknown_source_branch(server, tmp_path):
    """A source branch the repository lacks: the model's validation error, 400 with the
    field (`{"message": {"source_branch": ["does not exist"]}}`); nothing is stored."""
    project = new_project(server)
    work = Work(server, tmp_path, project)
    refs = work.remote()
    r = post_mr(server, project, source_branch="no-such-branch", target_branch="main",
                title="Nothing to merge")
    assert_json(r, 400, {"message": {"source_branch": ["does not exist"]}})
    assert listed(server, project) == []
    assert work.remote() == refs


def test_bad_inputs_guests_neither_open_nor_merge(server, people, tmp_path):
    """On a public project a guest reads merge requests but opens none (403, no
    create_merge_request_from), edits none (403) and merges none (401: may not push to the
    target). On a private project a guest does not see them: merging is the finder's 404."""
    guest, guest_token = people["guest"]
    for visibility in ("public", "private"):
        project = new_project(server, visibility=visibility)
        add_member(server, project, guest, "guest")
        work = Work(server, tmp_path, project)
        work.commit("feature", "Feature", {"f.txt": "f\n"}, start="main")
        work.commit("other", "Other", {"o.txt": "o\n"}, start="main")
        work.push("feature", "other")
        iid = open_mr(server, project, "feature", title="Root's")["iid"]
        mergeable(server, project, iid)
        refs = work.remote()

        r = post_mr(server, project, token=guest_token, source_branch="other",
                    target_branch="main", title="Guest's")
        assert_json(r, 403, FORBIDDEN)
        if visibility == "public":
            assert get_mr(server, project, iid, token=guest_token)["title"] == "Root's"
            assert_json(put_mr(server, project, iid, token=guest_token, title="Guest's"), 403,
                        FORBIDDEN)
            assert_json(merge(server, project, iid, token=guest_token), 401, UNAUTHORIZED)
        else:
            assert_json(server.request("GET", mrs_url(project, iid), token=guest_token), 404,
                        NOT_FOUND)
            assert_json(merge(server, project, iid, token=guest_token), 404, NOT_FOUND)
        assert listed(server, project) == [iid]
        assert_unmerged(server, project, iid)
        assert get_mr(server, project, iid)["title"] == "Root's"
        assert work.remote() == refs


def test_bad_inputs_non_integer_iid(server, tmp_path):
    """merge_request_iid is a Grape Integer on every route: anything else is 400
    `merge_request_iid is invalid`, whatever the route and its body."""
    project = new_project(server)
    work = Work(server, tmp_path, project)
    work.commit("feature", "Feature", {"f.txt": "f\n"}, start="main")
    work.push("feature")
    iid = open_mr(server, project, "feature", title="Stays")["iid"]
    mergeable(server, project, iid)
    refs = work.remote()
    routes = [("PUT", "", {"title": "Renamed"}), ("PUT", "/merge", {}), ("DELETE", "", None),
              ("PUT", "/rebase", None), ("POST", "/approve", None), ("GET", "/commits", None),
              ("GET", "/changes", None), ("POST", "/notes", {"body": "hi"})]
    for bad in ("abc", "1.5", "1abc"):
        for method, sub, body in routes:
            r = server.request(method, mrs_url(project, bad, sub), token=server.root_token,
                               json=body)
            assert r.status_code == 400, (method, sub, bad, r.text)
            assert_json(r, 400, IID_INVALID)
    mr = get_mr(server, project, iid)
    assert (mr["title"], mr["state"], mr["user_notes_count"]) == ("Stays", "opened", 0)
    assert listed(server, project) == [iid]
    assert work.remote() == refs


def test_bad_inputs_wrong_types(server, tmp_path):
    """Grape's coercion errors (400 `<field> is invalid`) for a Boolean or Integer parameter
    that is neither, on create, update and merge; none of them writes anything."""
    project = new_project(server)
    work = Work(server, tmp_path, project)
    work.commit("feature", "Feature", {"f.txt": "f\n"}, start="main")
    work.commit("other", "Other", {"o.txt": "o\n"}, start="main")
    work.push("feature", "other")
    iid = open_mr(server, project, "feature", title="Stays")["iid"]
    mergeable(server, project, iid)
    refs = work.remote()
    before = get_mr(server, project, iid)
    good = {"source_branch": "other", "target_branch": "main", "title": "Other"}

    for name, value in (("squash", "maybe"), ("remove_source_branch", "maybe"),
                        ("milestone_id", "abc"), ("target_project_id", "abc"),
                        ("assignee_id", "abc")):
        r = post_mr(server, project, **good, **{name: value})
        assert_json(r, 400, {"error": f"{name} is invalid"})
    assert listed(server, project) == [iid]

    for name, value in (("squash", "maybe"), ("remove_source_branch", "maybe"),
                        ("discussion_locked", "maybe"), ("milestone_id", "abc")):
        r = put_mr(server, project, iid, title="Renamed", **{name: value})
        assert_json(r, 400, {"error": f"{name} is invalid"})
    for name in ("squash", "should_remove_source_branch"):
        assert_json(merge(server, project, iid, **{name: "maybe"}), 400,
                    {"error": f"{name} is invalid"})
    after = get_mr(server, project, iid)
    for key in ("title", "squash", "discussion_locked", "milestone", "state",
                "force_remove_source_branch", "updated_at"):
        assert after[key] == before[key], key
    assert_unmerged(server, project, iid)
    assert work.remote() == refs


def test_bad_inputs_assignee_ids_that_are_not_numbers(server, tmp_path):
    """assignee_ids is coerced by API::Validations::Types::CommaSeparatedToIntegerArray, which
    maps each item with `to_i`: "abc" is [0], which the documentation defines as "unassign
    all assignees". So GitLab opens the merge request (201) with nobody assigned."""
    project = new_project(server)
    work = Work(server, tmp_path, project)
    work.commit("feature", "Feature", {"f.txt": "f\n"}, start="main")
    work.push("feature")
    r = post_mr(server, project, source_branch="feature", target_branch="main",
                title="Nobody assigned", assignee_ids="abc")
    made = assert_json(r, 201)
    assert made["assignees"] == [] and made["assignee"] is None
    assert listed(server, project) == [made["iid"]]


def test_bad_inputs_oversize_title(server, tmp_path):
    """The title's 255-character limit (characters, not bytes): 256 is the model's 400 on
    create and on update and stores nothing; 255 two-byte characters are a valid title."""
    project = new_project(server)
    work = Work(server, tmp_path, project)
    work.commit("feature", "Feature", {"f.txt": "f\n"}, start="main")
    work.commit("other", "Other", {"o.txt": "o\n"}, start="main")
    work.push("feature", "other")
    iid = open_mr(server, project, "feature", title="Short")["iid"]
    before = checked(server, project, iid)

    r = post_mr(server, project, source_branch="other", target_branch="main", title="x" * 256)
    assert_json(r, 400, TITLE_TOO_LONG)
    assert listed(server, project) == [iid]
    assert_json(put_mr(server, project, iid, title="y" * 256), 400, TITLE_TOO_LONG)
    assert_json(put_mr(server, project, iid, title="é" * 256, description="new"), 400,
                TITLE_TOO_LONG)
    after = get_mr(server, project, iid)
    for key in ("title", "description", "updated_at"):
        assert after[key] == before[key], key

    long_title = "é" * 255
    made = open_mr(server, project, "other", title=long_title)
    assert made["title"] == long_title
    assert assert_json(put_mr(server, project, iid, title="z" * 255), 200)["title"] == "z" * 255
    assert sorted(listed(server, project)) == sorted([iid, made["iid"]])
