"""What the merge request suites share: projects and members made through the API, a git
clone to make and push branches in and read the server's merges back from, and the calls and
waits on one merge request (its mergeability is checked in the background)."""

from __future__ import annotations

import secrets
import time
from pathlib import Path

from conftest import assert_json, git_url, run_git

LEVELS = {"guest": 10, "reporter": 20, "developer": 30, "maintainer": 40}

# merge_status / detailed_merge_status while the (asynchronous) mergeability check has not run
PENDING = {"unchecked", "checking", "cannot_be_merged_recheck", "preparing"}
PENDING_DETAILED = {"unchecked", "checking", "preparing", "approvals_syncing"}


def new_project(server, token=None, **attrs) -> dict:
    """A project with a README on `main` (root's unless `token`)."""
    body = {"name": "mr-" + secrets.token_hex(3), "initialize_with_readme": True,
            "default_branch": "main", **attrs}
    return assert_json(server.request("POST", "/projects", token=token or server.root_token,
                                      json=body), 201)


def add_member(server, project, user, role):
    r = server.request("POST", f"/projects/{project['id']}/members", token=server.root_token,
                       json={"user_id": user.id, "access_level": LEVELS[role]})
    assert_json(r, 201)


def set_project(server, project, **settings):
    r = server.request("PUT", f"/projects/{project['id']}", token=server.root_token,
                       json=settings)
    return assert_json(r, 200)


class Work:
    """A clone of a project over smart HTTP (as root unless `login`/`token`): branches are made
    and pushed here, and what the server did to the repository is fetched back here."""

    def __init__(self, server, home: Path, project: dict, login="root", token=None):
        self.home = home
        self.dir = home / f"clone-{project['id']}-{secrets.token_hex(2)}"
        url = git_url(server, f"{project['path_with_namespace']}.git", login,
                      token or server.root_token)
        run_git(home, "clone", "-q", url, str(self.dir))

    def git(self, *args) -> str:
        return run_git(self.home, *args, cwd=self.dir).stdout.strip()

    def commit(self, branch, message, files=None, start=None, move=()) -> str:
        """Commits `files` (path -> text) and `move`s (old, new) on `branch`, made from the ref
        `start` when given; returns the new commit's sha."""
        if start is not None:
            self.git("checkout", "-q", "-B", branch, start)
        else:
            self.git("checkout", "-q", branch)
        for path, text in (files or {}).items():
            (self.dir / path).parent.mkdir(parents=True, exist_ok=True)
            (self.dir / path).write_text(text)
            self.git("add", path)
        for old, new in move:
            self.git("mv", old, new)
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD")

    def push(self, *branches):
        self.git("push", "-q", "origin", *branches)

    def fetch(self):
        self.git("fetch", "-q", "--prune", "origin")

    def head(self, branch) -> str:
        """The server's `branch` as last pushed or fetched."""
        return self.git("rev-parse", f"origin/{branch}")

    def parents(self, sha) -> list[str]:
        return self.git("log", "-1", "--format=%P", sha).split()

    def message(self, sha) -> str:
        return self.git("log", "-1", "--format=%B", sha)

    def tree(self, sha) -> str:
        return self.git("rev-parse", f"{sha}^{{tree}}")

    def remote_branches(self) -> set[str]:
        out = self.git("ls-remote", "--heads", "origin")
        return {line.split("refs/heads/", 1)[1] for line in out.splitlines()}

    def remote(self) -> dict[str, str]:
        """Every ref the server has now (`git ls-remote`), name -> sha."""
        out = self.git("ls-remote", "origin")
        return {line.split("\t")[1]: line.split("\t")[0] for line in out.splitlines()}


def mrs_url(project, iid=None, sub="") -> str:
    base = f"/projects/{project['id']}/merge_requests"
    return base if iid is None else f"{base}/{iid}{sub}"


def open_mr(server, project, source, target="main", token=None, **fields) -> dict:
    body = {"source_branch": source, "target_branch": target,
            "title": fields.pop("title", f"Merge {source}"), **fields}
    r = server.request("POST", mrs_url(project), token=token or server.root_token, json=body)
    return assert_json(r, 201)


def get_mr(server, project, iid, token=None, **params) -> dict:
    r = server.request("GET", mrs_url(project, iid), token=token or server.root_token,
                       params=params)
    return assert_json(r, 200)


def put_mr(server, project, iid, token=None, **fields):
    return server.request("PUT", mrs_url(project, iid), token=token or server.root_token,
                          json=fields)


def merge(server, project, iid, token=None, **body):
    return server.request("PUT", mrs_url(project, iid, "/merge"),
                          token=token or server.root_token, json=body)


def poll(fetch, until, what: str, timeout: float = 10.0):
    """`fetch()` again and again until `until` holds for its value (GitLab checks mergeability,
    rebases and cleans up after merges in the background); fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = fetch()
        if until(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: never happened in {timeout} s; last: {value!r}")
        time.sleep(0.1)


def wait_mr(server, project, iid, until, what, token=None, **params) -> dict:
    return poll(lambda: get_mr(server, project, iid, token=token, **params), until, what)


def checked(server, project, iid, token=None) -> dict:
    """The merge request once its mergeability check has run."""
    return wait_mr(server, project, iid,
                   lambda mr: mr["merge_status"] not in PENDING
                   and mr["detailed_merge_status"] not in PENDING_DETAILED,
                   f"mergeability check of !{iid}", token=token)


def mergeable(server, project, iid, token=None) -> dict:
    return wait_mr(server, project, iid, lambda mr: mr["detailed_merge_status"] == "mergeable",
                   f"!{iid} mergeable", token=token)
