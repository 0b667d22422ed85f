"""The repository API, hooks, uploads and push rules answer with exactly the key sets of GitLab
CE's entities (`lib/api/entities`, 18.x) for every caller: an administrator, a Maintainer, a
Reporter, a Guest and an anonymous caller of a public project. Keys docs/compatibility.md
records as not sent yet are named beside each set."""

import base64

import pytest

from conftest import LOOPBACK_RECEIVERS, WebhookReceiver, assert_json, make_user
from test_entity_keys import keys

# `Commit`.
COMMIT = {
    "id", "short_id", "created_at", "parent_ids", "title", "message", "author_name",
    "author_email", "authored_date", "committer_name", "committer_email", "committed_date",
    "trailers", "extended_trailers", "web_url",
}
# `CommitWithStats`.
COMMIT_WITH_STATS = COMMIT | {"stats"}
# `CommitStats`.
COMMIT_STATS = {"additions", "deletions", "total"}
# `CommitDetail`, with `stats` unless `stats=false`.
COMMIT_DETAIL = COMMIT | {"stats", "status", "project_id", "last_pipeline"}
# `Branch`.
BRANCH = {"name", "commit", "merged", "protected", "developers_can_push", "developers_can_merge",
          "can_push", "default", "web_url"}
# `Tag`: `release` for whoever may read releases, which is everyone who may read the tags.
TAG = {"name", "message", "target", "commit", "release", "protected", "created_at"}
# `Compare`.
COMPARE = {"commit", "commits", "diffs", "compare_timeout", "compare_same_ref", "web_url"}
# `Diff`.
DIFF = {"diff", "collapsed", "too_large", "new_path", "old_path", "a_mode", "b_mode", "new_file",
        "renamed_file", "deleted_file", "generated_file"}
# `BasicRef`.
BASIC_REF = {"type", "name"}
# `Contributor`.
CONTRIBUTOR = {"name", "email", "commits", "additions", "deletions"}
# `TreeObject`.
TREE_OBJECT = {"id", "name", "type", "path", "mode"}
# `API::Repositories` blob.
BLOB = {"size", "encoding", "content", "sha"}
# `API::Files#blob_data` and the content.
FILE = {"file_name", "file_path", "size", "encoding", "content", "content_sha256", "ref",
        "blob_id", "commit_id", "last_commit_id", "execute_filemode"}
FILE_WRITE = {"file_path", "branch"}
# `BlameRange` and `BlameRangeCommit`.
BLAME_RANGE = {"commit", "lines"}
BLAME_RANGE_COMMIT = {"id", "parent_ids", "message", "authored_date", "author_name",
                      "author_email", "committed_date", "committer_name", "committer_email"}

# `Hook`, the keys project and system hooks share; not yet sent (docs/compatibility.md, Project
# hooks): name, description, custom_webhook_template. Trellis adds `formatter` (recorded).
HOOK = {"id", "url", "created_at", "push_events", "tag_push_events", "merge_requests_events",
        "repository_update_events", "enable_ssl_verification", "alert_status", "disabled_until",
        "url_variables", "custom_headers", "formatter"}
# `Hook` for a system hook; not yet sent: push_events_branch_filter, branch_filter_strategy.
SYSTEM_HOOK = HOOK
# `ProjectHook`; not yet sent: feature_flag_events, milestone_events, emoji_events,
# resource_access_token_events, vulnerability_events.
PROJECT_HOOK = HOOK | {
    "project_id", "push_events_branch_filter", "branch_filter_strategy", "issues_events",
    "confidential_issues_events", "note_events", "confidential_note_events", "pipeline_events",
    "wiki_page_events", "deployment_events", "job_events", "releases_events",
}
# What `POST /hooks/:id` sends and answers: GitLab's fixed `project_create` sample.
SYSTEM_HOOK_SAMPLE = {"project_id", "owner_email", "owner_name", "name", "path", "event_name"}
# `ProjectUpload`.
PROJECT_UPLOAD = {"id", "alt", "url", "full_path", "markdown"}
# The spec's "Project push rule" (EE's `PushRule` in GitLab; the spec lists it, so it stays).
PUSH_RULE = {"id", "project_id", "commit_message_regex", "commit_message_negative_regex",
             "branch_name_regex", "deny_delete_tag", "created_at", "member_check",
             "prevent_secrets", "author_email_regex", "file_name_regex", "max_file_size",
             "commit_committer_check", "reject_unsigned_commits"}
EE_PUSH_RULE_KEYS = {"commit_committer_name_check", "reject_non_dco_commits"}


@pytest.fixture(scope="module")
def server(make_server):
    """Loopback is open to hooks, for the hook test answers."""
    srv = make_server(LOOPBACK_RECEIVERS)
    assert_json(srv.request("PUT", "/application/settings", token=srv.root_token,
                            json={"allow_local_requests_from_web_hooks_and_services": True,
                                  "allow_local_requests_from_system_hooks": True}), 200)
    return srv


@pytest.fixture(scope="module")
def project(server):
    """A public project with two commits on `main`, a branch, an annotated tag and a
    lightweight one."""
    root = server.root_token
    r = server.request("POST", "/projects", token=root,
                       json={"name": "repo-keys", "visibility": "public",
                             "initialize_with_readme": True, "default_branch": "main"})
    created = assert_json(r, 201)
    pid = created["id"]
    r = server.request("POST", f"/projects/{pid}/repository/commits", token=root,
                       json={"branch": "main", "commit_message": "add a file",
                             "actions": [{"action": "create", "file_path": "docs/a.txt",
                                          "content": "one\ntwo\n"}]})
    assert_json(r, 201)
    assert_json(server.request("POST", f"/projects/{pid}/repository/branches", token=root,
                               params={"branch": "feature", "ref": "main"}), 201)
    assert_json(server.request("POST", f"/projects/{pid}/repository/tags", token=root,
                               json={"tag_name": "v1", "ref": "main", "message": "one"}), 201)
    assert_json(server.request("POST", f"/projects/{pid}/repository/tags", token=root,
                               json={"tag_name": "light", "ref": "main~1"}), 201)
    return created


@pytest.fixture(scope="module")
def callers(server, project):
    """Each caller's token: `None` is anonymous."""
    tokens = {"admin": server.root_token, "anonymous": None}
    for name, level in (("maintainer", 40), ("reporter", 20), ("guest", 10)):
        user, token = make_user(server, name[:4])
        assert_json(server.request("POST", f"/projects/{project['id']}/members",
                                   token=server.root_token,
                                   json={"user_id": user.id, "access_level": level}), 201)
        tokens[name] = token
    return tokens


def test_branches_tags_and_their_commits(server, project, callers):
    repo = f"/projects/{project['id']}/repository"
    for caller, token in callers.items():
        for path in ("/branches", "/branches/main"):
            body = assert_json(server.request("GET", repo + path, token=token), 200)
            branch = body[0] if isinstance(body, list) else body
            assert (caller, set(branch)) == (caller, BRANCH)
            assert (caller, set(branch["commit"])) == (caller, COMMIT)
        tags = assert_json(server.request("GET", repo + "/tags", token=token), 200)
        assert (caller, [set(t) for t in tags]) == (caller, [TAG, TAG])
        assert all(set(t["commit"]) == COMMIT and t["release"] is None for t in tags)
        assert keys(server.request("GET", repo + "/tags/light", token=token)) == TAG

    for token in (callers["admin"], callers["maintainer"]):
        name = f"b-{token[-6:]}"
        r = server.request("POST", repo + "/branches", token=token,
                           params={"branch": name, "ref": "main"})
        assert set(assert_json(r, 201)) == BRANCH
        r = server.request("POST", repo + "/tags", token=token,
                           json={"tag_name": f"t-{token[-6:]}", "ref": "main"})
        created = assert_json(r, 201)
        assert set(created) == TAG and set(created["commit"]) == COMMIT


def test_commits(server, project, callers):
    repo = f"/projects/{project['id']}/repository"
    for caller, token in callers.items():
        assert (caller, keys(server.request("GET", repo + "/commits", token=token))) == (caller, COMMIT)
        listed = assert_json(server.request("GET", repo + "/commits", token=token,
                                            params={"with_stats": "true"}), 200)
        assert set(listed[0]) == COMMIT_WITH_STATS and set(listed[0]["stats"]) == COMMIT_STATS
        detail = assert_json(server.request("GET", repo + "/commits/main", token=token), 200)
        assert (caller, set(detail)) == (caller, COMMIT_DETAIL)
        assert set(detail["stats"]) == COMMIT_STATS
        assert keys(server.request("GET", repo + "/commits/main", token=token,
                                   params={"stats": "false"})) == COMMIT_DETAIL - {"stats"}
        assert keys(server.request("GET", repo + "/commits/main/diff", token=token)) == DIFF
        assert keys(server.request("GET", repo + "/commits/main~1/refs", token=token)) == BASIC_REF
        assert keys(server.request("GET", repo + "/contributors", token=token)) == CONTRIBUTOR

    for token in (callers["admin"], callers["maintainer"]):
        r = server.request("POST", repo + "/commits", token=token,
                           json={"branch": "main", "commit_message": "more",
                                 "actions": [{"action": "create",
                                              "file_path": f"more-{token[-6:]}.txt",
                                              "content": "x\n"}]})
        assert set(assert_json(r, 201)) == COMMIT_DETAIL


def test_compare_and_its_diffs(server, project, callers):
    repo = f"/projects/{project['id']}/repository"
    for caller, token in callers.items():
        body = assert_json(server.request("GET", repo + "/compare", token=token,
                                          params={"from": "light", "to": "v1"}), 200)
        assert (caller, set(body)) == (caller, COMPARE)
        assert set(body["commit"]) == COMMIT and [set(c) for c in body["commits"]] == [COMMIT]
        assert [set(d) for d in body["diffs"]] == [DIFF]


def test_tree_blobs_files_and_blame(server, project, callers):
    repo = f"/projects/{project['id']}/repository"
    for caller, token in callers.items():
        tree = assert_json(server.request("GET", repo + "/tree", token=token), 200)
        assert (caller, {frozenset(e) for e in tree}) == (caller, {frozenset(TREE_OBJECT)})
        blob = next(e for e in tree if e["type"] == "blob")
        assert keys(server.request("GET", f"{repo}/blobs/{blob['id']}", token=token)) == BLOB
        file = assert_json(server.request("GET", repo + "/files/docs%2Fa.txt", token=token,
                                          params={"ref": "main"}), 200)
        assert (caller, set(file)) == (caller, FILE)
        ranges = assert_json(server.request("GET", repo + "/files/docs%2Fa.txt/blame",
                                            token=token, params={"ref": "main"}), 200)
        assert (caller, set(ranges[0]), set(ranges[0]["commit"])) == (
            caller, BLAME_RANGE, BLAME_RANGE_COMMIT)

    for token in (callers["admin"], callers["maintainer"]):
        path = f"{repo}/files/w-{token[-6:]}.txt"
        content = base64.b64encode(b"a\n").decode()
        r = server.request("POST", path, token=token,
                           json={"branch": "main", "commit_message": "add", "content": content,
                                 "encoding": "base64"})
        assert set(assert_json(r, 201)) == FILE_WRITE
        r = server.request("PUT", path, token=token,
                           json={"branch": "main", "commit_message": "edit", "content": "b\n"})
        assert set(assert_json(r, 200)) == FILE_WRITE
        r = server.request("DELETE", path, token=token,
                           json={"branch": "main", "commit_message": "drop"})
        assert r.status_code == 204 and r.content == b""


def test_project_hooks_and_their_test_answer(server, project, callers):
    hooks = f"/projects/{project['id']}/hooks"
    receiver = WebhookReceiver()
    try:
        for token in (callers["admin"], callers["maintainer"]):
            created = assert_json(server.request("POST", hooks, token=token,
                                                 json={"url": receiver.url}), 201)
            assert set(created) == PROJECT_HOOK
            assert created["repository_update_events"] is False
            assert keys(server.request("GET", hooks, token=token)) == PROJECT_HOOK
            path = f"{hooks}/{created['id']}"
            assert keys(server.request("GET", path, token=token)) == PROJECT_HOOK
            r = server.request("PUT", path, token=token,
                               json={"url": receiver.url, "issues_events": True})
            assert keys(r) == PROJECT_HOOK
            assert_json(server.request("POST", f"{path}/test/push_events", token=token), 201,
                        {"message": "201 Created"})
    finally:
        receiver.close()


def test_system_hooks_and_their_test_answer(server):
    root = server.root_token
    receiver = WebhookReceiver()
    try:
        created = assert_json(server.request("POST", "/hooks", token=root,
                                             json={"url": receiver.url}), 201)
        assert set(created) == SYSTEM_HOOK
        assert created["alert_status"] == "executable" and created["disabled_until"] is None
        assert created["custom_headers"] == [] and created["url_variables"] == []
        assert keys(server.request("GET", "/hooks", token=root)) == SYSTEM_HOOK
        assert keys(server.request("GET", f"/hooks/{created['id']}", token=root)) == SYSTEM_HOOK
        r = server.request("PUT", f"/hooks/{created['id']}", token=root,
                           json={"url": receiver.url, "push_events": True})
        assert keys(r) == SYSTEM_HOOK
        r = server.request("POST", f"/hooks/{created['id']}", token=root)
        assert keys(r, 201) == SYSTEM_HOOK_SAMPLE
    finally:
        receiver.close()


def test_uploads(server, project, callers):
    for caller in ("admin", "maintainer"):
        r = server.request("POST", f"/projects/{project['id']}/uploads", token=callers[caller],
                           files={"file": ("logo.png", b"\x89PNG\r\n\x1a\n", "image/png")})
        body = assert_json(r, 201)
        assert (caller, set(body)) == (caller, PROJECT_UPLOAD)
        assert isinstance(body["id"], int)


def test_push_rule_follows_the_spec(server, project, callers):
    path = f"/projects/{project['id']}/push_rule"
    r = server.request("POST", path, token=callers["admin"], json={"deny_delete_tag": True})
    assert set(assert_json(r, 201)) == PUSH_RULE
    for caller in ("admin", "maintainer"):
        body = assert_json(server.request("GET", path, token=callers[caller]), 200)
        assert (caller, set(body)) == (caller, PUSH_RULE)
        assert not EE_PUSH_RULE_KEYS & set(body)
        r = server.request("PUT", path, token=callers[caller], json={"member_check": True})
        assert set(assert_json(r, 200)) == PUSH_RULE
