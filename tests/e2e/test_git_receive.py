"""The receive path with the real `git` client over smart HTTP: the pre-receive decision
(protected branches: push levels, force pushes, deletions, creation, the first push under
`default_branch_protection`), `receive_max_input_size`, a refused push leaving no objects
behind, and what an accepted push records: statistics, activity, and one `push` or `tag_push`
event per updated branch or tag in the outbox (none for a refused push)."""

from __future__ import annotations

import datetime as dt
import os
import secrets
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import (assert_json, domain_events, git_url, last_event_id, make_user,
                      require_program, run_git)

ZERO = "0" * 40
PUSH_PROTECTED = "You are not allowed to push code to protected branches on this project."
FORCE_PUSH = "You are not allowed to force push code to a protected branch on this project."
DELETE_WEB = "You can only delete protected branches using the web interface."
DELETE_NOT_MAINTAINER = ("You are not allowed to delete protected branches from this project. "
                         "Only a project maintainer or owner can delete a protected branch.")
CREATE_PROTECTED = "You are not allowed to create protected branches on this project."
DELETE_DEFAULT = "The default branch of a project cannot be deleted."


@pytest.fixture(scope="module", autouse=True)
def _git():
    require_program("git", "git")


@pytest.fixture(scope="module")
def home():
    with tempfile.TemporaryDirectory(prefix="trellis-receive-home-") as path:
        yield Path(path)


def workdir(home: Path) -> Path:
    return home / secrets.token_hex(4)


def commit(home: Path, repo: Path, name: str, content: str | bytes, message: str = ""):
    target = repo / name
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        target.write_bytes(content)
    else:
        target.write_text(content)
    run_git(home, "add", name, cwd=repo)
    run_git(home, "commit", "-q", "-m", message or f"add {name}", cwd=repo)


def head(home: Path, repo: Path) -> str:
    return run_git(home, "rev-parse", "HEAD", cwd=repo).stdout.strip()


def remote_refs(home: Path, remote: str) -> dict[str, str]:
    out = run_git(home, "ls-remote", remote).stdout
    return {name: sha for sha, name in (line.split("\t") for line in out.splitlines())}


def refused(done: subprocess.CompletedProcess, message: str):
    assert done.returncode != 0, done.stderr
    assert f"remote: GitLab: {message}" in done.stderr, done.stderr


def make_project(gl, **attrs):
    return gl.projects.create({"name": "r" + secrets.token_hex(3), "default_branch": "main",
                               **attrs})


def repository(server, project_id: int) -> Path:
    """The project's bare repository in the server's data directory (default tenant)."""
    (found,) = (server.data_dir / "repositories").glob(f"1/{project_id}.git")
    return found


def objects(repo: Path) -> tuple[int, int, list[str]]:
    """Loose objects, packed objects and leftover quarantine directories of `repo`."""
    out = subprocess.run(["git", "--git-dir", str(repo), "count-objects", "-v"],
                         capture_output=True, text=True, check=True).stdout
    counts = dict(line.split(": ") for line in out.splitlines())
    leftovers = [p.name for p in (repo / "objects").glob("tmp_objdir-*")]
    return int(counts["count"]), int(counts["in-pack"]), leftovers


@pytest.fixture(scope="module")
def people(server):
    developer, dev_token = make_user(server, "rdev")
    maintainer, maintainer_token = make_user(server, "rmaint")
    return {"developer": (developer, dev_token), "maintainer": (maintainer, maintainer_token)}


def member_remote(server, gl, people, project, role: str) -> str:
    user, token = people[role]
    level = 30 if role == "developer" else 40
    if not any(m.id == user.id for m in project.members.list(get_all=True)):
        project.members.create({"user_id": user.id, "access_level": level})
    return git_url(server, project.path_with_namespace + ".git", user.username, token)


def test_push_levels_on_protected_branches(server, gl, home, people):
    project = make_project(gl, visibility="private", initialize_with_readme=True)
    dev = member_remote(server, gl, people, project, "developer")
    maintainer = member_remote(server, gl, people, project, "maintainer")
    work = workdir(home)
    run_git(home, "clone", "-q", dev, str(work))
    before = remote_refs(home, dev)
    commit(home, work, "dev.txt", "d\n")
    # main is protected by default_branch_protection (2: maintainers push)
    refused(run_git(home, "push", "origin", "HEAD:main", cwd=work, check=False),
            PUSH_PROTECTED)
    assert remote_refs(home, dev) == before
    # an unprotected branch is the developer's to push
    run_git(home, "push", "-q", "origin", "HEAD:feature/x", cwd=work)
    # creating a branch a protected pattern covers needs its push level
    project.protectedbranches.create({"name": "release/*", "push_access_level": 40,
                                      "merge_access_level": 40})
    refused(run_git(home, "push", "origin", "HEAD:release/1", cwd=work, check=False),
            CREATE_PROTECTED)
    project.protectedbranches.create({"name": "dev/*", "push_access_level": 30})
    run_git(home, "push", "-q", "origin", "HEAD:dev/topic", cwd=work)
    # a maintainer pushes to main
    run_git(home, "push", "-q", maintainer, "HEAD:main", cwd=work)
    assert remote_refs(home, dev)["refs/heads/main"] == head(home, work)


def test_force_push_refused_until_allowed(server, gl, home, people):
    project = make_project(gl, visibility="private", initialize_with_readme=True)
    remote = member_remote(server, gl, people, project, "maintainer")
    work = workdir(home)
    run_git(home, "clone", "-q", remote, str(work))
    commit(home, work, "a.txt", "a\n")
    run_git(home, "push", "-q", "origin", "HEAD:main", cwd=work)
    pushed = head(home, work)
    run_git(home, "commit", "-q", "--amend", "-m", "rewritten", cwd=work)
    refused(run_git(home, "push", "-f", "origin", "HEAD:main", cwd=work, check=False),
            FORCE_PUSH)
    assert remote_refs(home, remote)["refs/heads/main"] == pushed
    branch = project.protectedbranches.get("main")
    branch.allow_force_push = True
    branch.save()
    run_git(home, "push", "-q", "-f", "origin", "HEAD:main", cwd=work)
    assert remote_refs(home, remote)["refs/heads/main"] == head(home, work)


def test_protected_branches_are_not_deleted_over_git(server, gl, home, people):
    project = make_project(gl, visibility="private", initialize_with_readme=True)
    dev = member_remote(server, gl, people, project, "developer")
    maintainer = member_remote(server, gl, people, project, "maintainer")
    work = workdir(home)
    run_git(home, "clone", "-q", maintainer, str(work))
    run_git(home, "push", "-q", "origin", "HEAD:stable", cwd=work)
    project.protectedbranches.create({"name": "stable", "push_access_level": 30})
    refused(run_git(home, "push", maintainer, ":stable", cwd=work, check=False), DELETE_WEB)
    refused(run_git(home, "push", dev, ":stable", cwd=work, check=False),
            DELETE_NOT_MAINTAINER)
    refused(run_git(home, "push", maintainer, ":main", cwd=work, check=False), DELETE_DEFAULT)
    assert {"refs/heads/stable", "refs/heads/main"} <= set(remote_refs(home, maintainer))
    # once unprotected, it goes
    project.protectedbranches.delete("stable")
    run_git(home, "push", "-q", maintainer, ":stable", cwd=work)
    assert "refs/heads/stable" not in remote_refs(home, maintainer)


def test_first_push_under_default_branch_protection(server, gl, home, people):
    project = make_project(gl, visibility="private")
    dev = member_remote(server, gl, people, project, "developer")
    maintainer = member_remote(server, gl, people, project, "maintainer")
    work = workdir(home)
    run_git(home, "init", "-q", str(work))
    commit(home, work, "first.txt", "1\n")
    # full protection (2): only maintainers make the first push
    refused(run_git(home, "push", dev, "HEAD:main", cwd=work, check=False), CREATE_PROTECTED)
    run_git(home, "push", "-q", maintainer, "HEAD:main", cwd=work)
    (branch,) = project.protectedbranches.list(get_all=True)
    assert branch.name == "main"
    assert [l["access_level"] for l in branch.push_access_levels] == [40]
    shown = gl.projects.get(project.id)
    assert shown.default_branch == "main" and shown.empty_repo is False


def test_developers_may_push_first_with_protection_4(server, gl, home, people):
    r = server.request("PUT", "/application/settings", token=server.root_token,
                       json={"default_branch_protection": 4})
    assert_json(r, 200)
    try:
        project = make_project(gl, visibility="private")
        dev = member_remote(server, gl, people, project, "developer")
        work = workdir(home)
        run_git(home, "init", "-q", str(work))
        commit(home, work, "first.txt", "1\n")
        run_git(home, "push", "-q", dev, "HEAD:main", cwd=work)
        # ...and then main is fully protected
        commit(home, work, "second.txt", "2\n")
        refused(run_git(home, "push", dev, "HEAD:main", cwd=work, check=False), PUSH_PROTECTED)
    finally:
        server.request("PUT", "/application/settings", token=server.root_token,
                       json={"default_branch_protection": 2})


def test_oversized_and_refused_pushes_leave_nothing(server, gl, home):
    project = make_project(gl, visibility="private", initialize_with_readme=True)
    token = server.create_token(scopes="write_repository")
    remote = git_url(server, project.path_with_namespace + ".git", "root", token)
    repo = repository(server, project.id)
    work = workdir(home)
    run_git(home, "clone", "-q", remote, str(work))
    refs = remote_refs(home, remote)
    stored = objects(repo)
    assert stored[2] == []
    r = server.request("PUT", "/application/settings", token=server.root_token,
                       json={"receive_max_input_size": 1})
    assert_json(r, 200)
    try:
        commit(home, work, "big.bin", os.urandom(3 * 1024 * 1024))
        done = run_git(home, "push", "origin", "HEAD:main", cwd=work, check=False)
        assert done.returncode != 0
        assert "pack exceeds maximum allowed size" in done.stderr, done.stderr
    finally:
        server.request("PUT", "/application/settings", token=server.root_token,
                       json={"receive_max_input_size": None})
    assert remote_refs(home, remote) == refs
    assert objects(repo) == stored
    # a push the pre-receive refuses: its objects were quarantined and are gone
    since = last_event_id(server)
    project.protectedbranches.create({"name": "locked", "push_access_level": 0,
                                      "merge_access_level": 0})
    refused(run_git(home, "push", "origin", "HEAD:locked", cwd=work, check=False),
            CREATE_PROTECTED)
    assert remote_refs(home, remote) == refs
    assert objects(repo) == stored
    assert [e["kind"] for e in domain_events(server, since)] == ["protected_branch.created"]


def test_push_and_tag_push_events(server, gl, home, people):
    project = make_project(gl, visibility="private", initialize_with_readme=True)
    user, token = people["maintainer"]
    remote = member_remote(server, gl, people, project, "maintainer")
    work = workdir(home)
    run_git(home, "clone", "-q", remote, str(work))
    run_git(home, "checkout", "-q", "-b", "topic", cwd=work)
    commit(home, work, "one.txt", "1\n", "first line\n\nbody")
    (work / "README.md").write_text("changed\n")
    run_git(home, "rm", "-q", "--cached", "README.md", cwd=work)
    run_git(home, "commit", "-q", "-m", "drop readme", cwd=work)
    tip = head(home, work)
    run_git(home, "tag", "v1", cwd=work)
    server.sql(f"UPDATE users SET last_activity_on = '2001-01-01' WHERE id = {user.id}")
    before_activity = gl.projects.get(project.id).last_activity_at
    since = last_event_id(server)
    run_git(home, "push", "-q", "origin", "topic", cwd=work)
    run_git(home, "push", "-q", "origin", "v1", cwd=work)
    recorded = domain_events(server, since)
    kinds = sorted(e["kind"] for e in recorded)
    assert kinds == ["push", "tag_push"], kinds
    push = next(e for e in recorded if e["kind"] == "push")
    assert push["actor_id"] == user.id
    assert push["project_id"] == project.id and push["subject_id"] == project.id
    assert push["before"] is None
    after = push["after"]
    assert after["before"] == ZERO and after["after"] == tip
    assert after["ref"] == "refs/heads/topic" and after["checkout_sha"] == tip
    assert after["ref_protected"] is False and after["message"] is None
    assert after["user_id"] == user.id and after["user_username"] == user.username
    assert after["user_name"] == user.name and after["user_email"] == user.email
    assert "user_avatar" in after
    assert after["total_commits_count"] == 2
    first, second = after["commits"]
    assert second["id"] == tip
    assert first["title"] == "first line" and first["message"].startswith("first line\n\nbody")
    assert first["added"] == ["one.txt"] and first["modified"] == [] and first["removed"] == []
    assert second["removed"] == ["README.md"]
    assert first["author"] == {"name": "Ada", "email": "ada@example.com"}
    assert dt.datetime.fromisoformat(first["timestamp"]).utcoffset() is not None
    tag = next(e for e in recorded if e["kind"] == "tag_push")["after"]
    assert tag["ref"] == "refs/tags/v1" and tag["after"] == tip and tag["before"] == ZERO
    # as GitLab: a tag lists the one commit it points at, already on topic or not
    assert tag["total_commits_count"] == 1 and [c["id"] for c in tag["commits"]] == [tip]
    assert tag["checkout_sha"] == tip and tag["message"] is None  # lightweight
    # activity: the project's and the pusher's
    assert gl.projects.get(project.id).last_activity_at > before_activity
    today = dt.datetime.now(dt.timezone.utc).date().isoformat()
    shown = assert_json(server.request("GET", f"/users/{user.id}", token=server.root_token), 200)
    assert shown["last_activity_on"] == today
    # a deletion: after is zeros, no checkout sha, no commits
    since = last_event_id(server)
    run_git(home, "push", "-q", "origin", ":topic", cwd=work)
    (deleted,) = domain_events(server, since)
    assert deleted["kind"] == "push"
    assert deleted["after"]["after"] == ZERO and deleted["after"]["before"] == tip
    assert deleted["after"]["checkout_sha"] is None and deleted["after"]["commits"] == []


def test_large_pushes_list_the_last_twenty(server, gl, home):
    project = make_project(gl, visibility="private")
    token = server.create_token(scopes="write_repository")
    remote = git_url(server, project.path_with_namespace + ".git", "root", token)
    work = workdir(home)
    run_git(home, "init", "-q", str(work))
    for n in range(25):
        run_git(home, "commit", "-q", "--allow-empty", "-m", f"c{n}", cwd=work)
    since = last_event_id(server)
    run_git(home, "push", "-q", remote, "HEAD:main", cwd=work)
    (push,) = [e for e in domain_events(server, since) if e["kind"] == "push"]
    assert push["after"]["total_commits_count"] == 25
    titles = [c["title"] for c in push["after"]["commits"]]
    assert titles == [f"c{n}" for n in range(5, 25)]
    stats = assert_json(server.request("GET", f"/projects/{project.id}?statistics=true",
                                       token=server.root_token), 200)
    assert stats["statistics"]["commit_count"] == 25
