"""Push Hooks end to end: a real `git push` over smart HTTP (a branch, a tag, a branch
deletion) reaches a project hook and a system hook, listening on a real HTTP receiver, in
GitLab's Push Hook and Tag Push Hook formats ("Webhook events": push events, tag events; the
system hooks' `push` and `tag_push` events) with GitLab's headers; `ref_protected` says
whether the pushed branch is protected."""

from __future__ import annotations

import re
import secrets
import tempfile
from pathlib import Path

import pytest

from conftest import (LOOPBACK_RECEIVERS, WebhookReceiver, assert_json, git_url,
                      require_program, run_git)

ZERO = "0" * 40
ISO_OFFSET = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d([+-]\d\d:\d\d|Z)$")
# The keys of GitLab's documented Push Hook example.
PUSH_KEYS = {"object_kind", "event_name", "before", "after", "ref", "ref_protected",
             "checkout_sha", "message", "user_id", "user_name", "user_username", "user_email",
             "user_avatar", "project_id", "project", "commits", "total_commits_count",
             "push_options", "repository"}
COMMIT_KEYS = {"id", "message", "title", "timestamp", "url", "author", "added", "modified",
               "removed"}
REPOSITORY_KEYS = {"name", "url", "description", "homepage", "git_http_url", "git_ssh_url",
                   "visibility_level"}


@pytest.fixture(scope="module", autouse=True)
def _git():
    require_program("git", "git")


@pytest.fixture(scope="module")
def server(make_server):
    srv = make_server(LOOPBACK_RECEIVERS)
    assert_json(srv.request("PUT", "/application/settings", token=srv.root_token,
                            json={"allow_local_requests_from_web_hooks_and_services": True,
                                  "allow_local_requests_from_system_hooks": True}), 200)
    return srv


@pytest.fixture()
def home():
    with tempfile.TemporaryDirectory(prefix="trellis-push-hooks-") as path:
        yield Path(path)


def commit(home: Path, work: Path, message: str, write=(), remove=()):
    for name, content in write:
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(content)
        run_git(home, "add", name, cwd=work)
    for name in remove:
        run_git(home, "rm", "-q", name, cwd=work)
    run_git(home, "commit", "-q", "-m", message, cwd=work)
    return run_git(home, "rev-parse", "HEAD", cwd=work).stdout.strip()


def delivered(hooks, event, project, root):
    """The only `event` request `hooks` received (waiting for it), checked for GitLab's
    headers and the keys and values every push body has; its body."""
    (request,) = hooks.wait(1, event)
    headers = request["headers"]
    assert headers["x-gitlab-event"] == event
    assert headers["x-gitlab-token"] == "s3cret"
    assert headers["content-type"] == "application/json"
    body = request["json"]
    kind = "tag_push" if event == "Tag Push Hook" else "push"
    assert set(body) == PUSH_KEYS
    assert body["object_kind"] == kind and body["event_name"] == kind
    assert body["user_id"] == root.id and body["user_username"] == root.username
    assert body["user_name"] == root.name
    assert body["project_id"] == project.id
    assert body["project"]["id"] == project.id
    assert body["project"]["path_with_namespace"] == project.path_with_namespace
    assert body["project"]["web_url"] == project.web_url
    assert set(body["repository"]) == REPOSITORY_KEYS
    assert body["repository"]["homepage"] == project.web_url
    assert body["repository"]["git_http_url"] == project.web_url + ".git"
    return body


def test_branch_tag_and_delete_pushes_reach_project_and_system_hooks(server, home):
    gl = server.gitlab()
    gl.auth()
    root = gl.user
    project = gl.projects.create({"name": "pushed-" + secrets.token_hex(3), "default_branch": "main"})
    hooks = WebhookReceiver()
    system = WebhookReceiver()
    system_hook = gl.hooks.create({"url": system.url, "push_events": True,
                                   "tag_push_events": True, "repository_update_events": False})
    try:
        project.hooks.create({"url": hooks.url, "token": "s3cret", "push_events": True,
                              "tag_push_events": True})
        work = home / "work"
        run_git(home, "init", "-q", str(work))
        first = commit(home, work, "Add readme\n\nWhy it is there.",
                       write=[("README.md", "hello\n"), ("old.txt", "old\n")])
        second = commit(home, work, "Document and tidy", write=[("README.md", "hello again\n"),
                                                                  ("docs/a.md", "a\n")],
                        remove=["old.txt"])
        remote = git_url(server, project.path_with_namespace + ".git", root.username,
                         server.root_token)
        run_git(home, "remote", "add", "origin", remote, cwd=work)

        # 1. the first push of main: protected by default_branch_protection
        run_git(home, "push", "-q", "origin", "HEAD:main", cwd=work)
        body = delivered(hooks, "Push Hook", project, root)
        assert (body["before"], body["after"], body["ref"]) == (ZERO, second, "refs/heads/main")
        assert body["ref_protected"] is True
        assert body["checkout_sha"] == second and body["message"] is None
        assert body["total_commits_count"] == 2
        assert [c["id"] for c in body["commits"]] == [first, second]  # oldest first
        older, newer = body["commits"]
        assert set(older) == COMMIT_KEYS
        assert older["message"].startswith("Add readme\n\nWhy it is there.")
        assert older["title"] == "Add readme"
        assert ISO_OFFSET.match(older["timestamp"])
        assert older["url"] == f"{project.web_url}/-/commit/{first}"
        assert older["author"] == {"name": "Ada", "email": "ada@example.com"}
        assert (sorted(older["added"]), older["modified"], older["removed"]) == (
            ["README.md", "old.txt"], [], [])
        assert (newer["added"], newer["modified"], newer["removed"]) == (
            ["docs/a.md"], ["README.md"], ["old.txt"])

        # 2. a new, unprotected branch at a commit main already has: no new commits
        run_git(home, "push", "-q", "origin", "HEAD:feature", cwd=work)
        body = hooks.wait(2, "Push Hook")[1]["json"]
        assert (body["before"], body["after"], body["ref"]) == (ZERO, second, "refs/heads/feature")
        assert body["ref_protected"] is False
        assert body["commits"] == [] and body["total_commits_count"] == 0

        # 3. an annotated tag: the tagged commit, its message, the tag object in `after`
        run_git(home, "tag", "-a", "v1.0", "-m", "Release 1.0", cwd=work)
        tag_object = run_git(home, "rev-parse", "v1.0", cwd=work).stdout.strip()
        run_git(home, "push", "-q", "origin", "v1.0", cwd=work)
        body = delivered(hooks, "Tag Push Hook", project, root)
        assert (body["before"], body["after"], body["ref"]) == (ZERO, tag_object, "refs/tags/v1.0")
        assert body["checkout_sha"] == second and body["message"] == "Release 1.0"
        assert body["ref_protected"] is False
        assert [c["id"] for c in body["commits"]] == [second] and body["total_commits_count"] == 1

        # 4. deleting the branch
        run_git(home, "push", "-q", "origin", ":feature", cwd=work)
        body = hooks.wait(3, "Push Hook")[2]["json"]
        assert (body["before"], body["after"], body["ref"]) == (second, ZERO, "refs/heads/feature")
        assert body["checkout_sha"] is None
        assert body["commits"] == [] and body["total_commits_count"] == 0

        # the system hook got the same pushes, as GitLab's `push` and `tag_push` events
        sent = system.wait(4, "System Hook")
        kinds = sorted((r["json"]["event_name"], r["json"]["ref"], r["json"]["after"]) for r in sent)
        assert kinds == [("push", "refs/heads/feature", ZERO), ("push", "refs/heads/feature", second),
                         ("push", "refs/heads/main", second), ("tag_push", "refs/tags/v1.0", tag_object)]
        (main,) = [r["json"] for r in sent if r["json"]["ref"] == "refs/heads/main"]
        assert main == hooks.requests("Push Hook")[0]["json"]
        assert len(hooks.requests()) == 4  # nothing else, nothing twice
    finally:
        system_hook.delete()
        hooks.close()
        system.close()


def test_a_push_of_many_references_fires_no_hooks_for_them(server, home):
    """GitLab's `push_event_hooks_limit` (3): changes are grouped by kind and action, and a
    group larger than the limit fires no push hooks, so a push of thousands of references
    costs no work per reference after it is received."""
    gl = server.gitlab()
    gl.auth()
    project = gl.projects.create({"name": "many-" + secrets.token_hex(3),
                                  "initialize_with_readme": True})
    hooks = WebhookReceiver()
    try:
        project.hooks.create({"url": hooks.url, "push_events": True, "tag_push_events": True})
        work = home / ("many-" + secrets.token_hex(3))
        remote = git_url(server, project.path_with_namespace + ".git", gl.user.username,
                         server.root_token)
        run_git(home, "clone", "-q", remote, str(work))
        # 400 new branches at once: none fires a hook, and all of them arrive.
        refspecs = [f"HEAD:refs/heads/bulk-{n}" for n in range(400)]
        run_git(home, "push", "-q", "origin", *refspecs, cwd=work)
        branches = project.branches.list(get_all=True)
        assert len([b for b in branches if b.name.startswith("bulk-")]) == 400
        # Two at once are within the limit: each fires its hook.
        run_git(home, "push", "-q", "origin", "HEAD:refs/heads/pair-1", "HEAD:refs/heads/pair-2",
                cwd=work)
        pushed = sorted(r["json"]["ref"] for r in hooks.wait(2, "Push Hook"))
        assert pushed == ["refs/heads/pair-1", "refs/heads/pair-2"]
        assert all(not r["json"]["ref"].startswith("refs/heads/bulk-")
                   for r in hooks.requests("Push Hook"))
        assert_json(server.request("PUT", "/application/settings", token=server.root_token,
                                   json={"push_event_hooks_limit": 500}), 200)
        run_git(home, "push", "-q", "origin", "--delete", *[f"bulk-{n}" for n in range(4)],
                cwd=work)
        deleted = hooks.wait(6, "Push Hook")[2:]
        assert sorted(r["json"]["ref"] for r in deleted) == [f"refs/heads/bulk-{n}" for n in range(4)]
    finally:
        server.request("PUT", "/application/settings", token=server.root_token,
                       json={"push_event_hooks_limit": 3})
        hooks.close()
