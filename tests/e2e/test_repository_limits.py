"""Limits on the repository API's costly reads.

Blame: a file changed by 200 commits (pushed at once) blamed line by line with the right commit
each, `range[start]`/`range[end]`, the size and line caps (413), and the per-user and per-IP
blame rate limit (429). Diffs: `diff_max_patch_bytes`, `diff_max_files` and `diff_max_lines`
on a commit's diff and on compare, as GitLab applies them (a too large file keeps its place
without its patch, the list is cut past the maximums, compare collapses past the safe limits).
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import assert_json, make_user, require_program

MAX_BLAME_BYTES = 1024 * 1024
MAX_BLAME_LINES = 10_000
# GitLab's defaults, restored after each test that changes them.
DIFF_DEFAULTS = {"diff_max_patch_bytes": 204800, "diff_max_files": 1000, "diff_max_lines": 50000}


@pytest.fixture(scope="module", autouse=True)
def _git():
    require_program("git", "git")


@pytest.fixture(scope="module")
def git_runs(tmp_path_factory) -> Path:
    """A `git` that notes each run (its arguments, a line a run) and runs the real one: the
    module's server finds it first on its PATH."""
    directory = tmp_path_factory.mktemp("git-wrapper")
    runs = directory / "runs.log"
    runs.touch()
    wrapper = directory / "git"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {runs}\nexec {shutil.which("git")} "$@"\n')
    wrapper.chmod(0o755)
    return runs


@pytest.fixture(scope="module")
def server(make_server, git_runs):
    return make_server({"PATH": f"{git_runs.parent}:{os.environ['PATH']}"})


def runs_of(request, git_runs: Path) -> list[str]:
    """The git runs the server made for `request` (called once git has been quiet a while, so
    the work that follows a push is not counted)."""
    size = -1
    while size != git_runs.stat().st_size:
        size = git_runs.stat().st_size
        time.sleep(1.0)
    request()
    return git_runs.read_text()[size:].splitlines()


def git(home: Path, *args, input: bytes | None = None) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_TERMINAL_PROMPT": "0"}
    done = subprocess.run(["git", "-c", "credential.helper=", *args], env=env, input=input,
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def data(content: str) -> bytes:
    raw = content.encode()
    return b"data %d\n%s\n" % (len(raw), raw)


def push_history(server, project, commits: list[dict]) -> list[str]:
    """Pushes `commits` to `main` of the (empty) project in one push, made with one
    `git fast-import`: each commit a `message` and the `files` it writes (path to content).
    The commit ids, oldest first."""
    stream = bytearray()
    for n, commit in enumerate(commits, start=1):
        stream += b"commit refs/heads/main\nmark :%d\n" % n
        stream += b"author Author %d <a%d@example.com> %d +0100\n" % (n % 7, n % 7, 1700000000 + n)
        stream += b"committer Pusher <p@example.com> %d +0000\n" % (1700000000 + n)
        stream += data(commit["message"])
        if n > 1:
            stream += b"from :%d\n" % (n - 1)
        for path, content in commit["files"].items():
            stream += f"M 100644 inline {path}\n".encode() + data(content)
        stream += b"\n"
    home = Path(tempfile.mkdtemp(prefix="trellis-limits-"))
    repo = str(home / "repo.git")
    git(home, "init", "-q", "--bare", "-b", "main", repo)
    git(home, "-C", repo, "fast-import", "--quiet", input=bytes(stream))
    remote = f"http://root:{server.root_token}@{server.host}/{project.path_with_namespace}.git"
    git(home, "-C", repo, "push", "-q", remote, "main")
    return git(home, "-C", repo, "rev-list", "--reverse", "main").split()


def blame_url(project, path: str) -> str:
    return f"/projects/{project.id}/repository/files/{path}/blame"


@pytest.fixture(scope="module")
def history(server, gl):
    """A public project whose `poem.txt` grew a line a commit for 200 commits; from the 100th
    on, every tenth commit rewrote an early line. The commit ids, each line's text and the
    index of the commit that last changed it."""
    project = gl.projects.create({"name": "blame" + secrets.token_hex(3), "visibility": "public",
                                  "default_branch": "main"})
    texts: list[str] = []
    owners: list[int] = []
    commits = []
    for n in range(200):
        texts.append(f"line {n}")
        owners.append(n)
        if n >= 100 and n % 10 == 0:
            texts[n - 100] = f"line {n - 100}, again in {n}"
            owners[n - 100] = n
        files = {"poem.txt": "\n".join(texts) + "\n"}
        if n == 0:
            files["tiny.txt"] = "tiny\n"
        commits.append({"message": f"change {n}\n\nbody of {n}\n", "files": files})
    ids = push_history(server, project, commits)
    assert len(ids) == 200
    return project, ids, texts, owners


# ---- blame ---------------------------------------------------------------------------------


def test_blame_names_the_commit_of_every_line(server, history):
    project, ids, texts, owners = history
    r = server.request("GET", blame_url(project, "poem.txt"), params={"ref": "main"},
                       token=server.root_token)
    ranges = assert_json(r, 200)
    blamed = [(rng["commit"]["id"], line) for rng in ranges for line in rng["lines"]]
    assert blamed == [(ids[owner], text) for owner, text in zip(owners, texts)]
    # consecutive lines of one commit form one range; here no two neighbours share one
    assert len(ranges) == 200
    for rng in ranges:
        commit = rng["commit"]
        n = ids.index(commit["id"])
        # GitLab's `BlameRangeCommit` has no title
        assert "title" not in commit
        assert commit["message"] == f"change {n}\n\nbody of {n}\n"
        assert commit["parent_ids"] == ([ids[n - 1]] if n else [])
        assert commit["author_name"] == f"Author {(n + 1) % 7}"
        assert commit["authored_date"].endswith("+01:00")
        assert commit["committer_name"] == "Pusher"


def test_blame_runs_git_a_bounded_number_of_times(server, history, git_runs):
    # Once a commit (rev-parse and show) it took 400 runs and seconds for these 200 commits.
    project = history[0]

    def blame():
        r = server.request("GET", blame_url(project, "poem.txt"), params={"ref": "main"},
                           token=server.root_token)
        assert len(assert_json(r, 200)) == 200

    runs = runs_of(blame, git_runs)
    assert 0 < len(runs) <= 8, runs
    assert sum(" blame " in run for run in runs) == 1, runs


def test_blame_of_a_range(server, history):
    project, ids, texts, owners = history
    url = blame_url(project, "poem.txt")
    token = server.root_token

    def blame(start, end):
        params = {"ref": "main", "range[start]": start, "range[end]": end}
        return server.request("GET", url, params=params, token=token)

    ranges = assert_json(blame(10, 12), 200)
    assert [(r["commit"]["id"], r["lines"]) for r in ranges] == [
        (ids[owners[i]], [texts[i]]) for i in range(9, 12)]
    # an end past the file stops at its end, as git blame -L
    ranges = assert_json(blame(199, 5000), 200)
    assert [line for r in ranges for line in r["lines"]] == texts[198:]
    assert_json(blame(12, 10), 400,
                {"message": "range[start] must be less than or equal to range[end]"})
    assert_json(blame(201, 300), 400, {"message": "range is outside of the file length"})
    assert_json(blame(0, 3), 400, {"error": "range[start] does not have a valid value"})
    assert_json(blame("one", 3), 400, {"error": "range[start] is invalid"})
    r = server.request("GET", url, params={"ref": "main", "range[start]": 1}, token=token)
    assert_json(r, 400, {"error": "range[end] is missing"})
    # the file is looked up before the range is compared, as in GitLab
    r = server.request("GET", blame_url(project, "nope.txt"),
                       params={"ref": "main", "range[start]": 5, "range[end]": 1}, token=token)
    assert_json(r, 404, {"message": "404 File Not Found"})


def test_blame_refuses_files_over_its_caps(server, gl):
    project = gl.projects.create({"name": "caps" + secrets.token_hex(3),
                                  "default_branch": "main"})
    long_text = "".join(f"{n}\n" for n in range(MAX_BLAME_LINES + 1))
    push_history(server, project, [{"message": "big files", "files": {
        "wide.txt": "w" * MAX_BLAME_BYTES + "\n",
        "exact.txt": "e" * (MAX_BLAME_BYTES - 1) + "\n",
        "long.txt": long_text,
    }}])
    token = server.root_token

    def blame(path, **params):
        return server.request("GET", blame_url(project, path), params={"ref": "main", **params},
                              token=token)

    too_wide = {"message": f"The file is larger than {MAX_BLAME_BYTES} bytes: it cannot be blamed"}
    assert_json(blame("wide.txt"), 413, too_wide)
    assert_json(blame("wide.txt", **{"range[start]": 1, "range[end]": 1}), 413, too_wide)
    assert [r["lines"] for r in assert_json(blame("exact.txt"), 200)] == [["e" * (MAX_BLAME_BYTES - 1)]]
    assert_json(blame("long.txt"), 413, {"message": (
        f"The file has more than {MAX_BLAME_LINES} lines: "
        "blame it in parts with range[start] and range[end]")})
    ranges = assert_json(blame("long.txt", **{"range[start]": 2,
                                               "range[end]": MAX_BLAME_LINES + 1}), 200)
    assert ranges[0]["lines"] == [str(n) for n in range(1, MAX_BLAME_LINES + 1)]
    r = blame("long.txt", **{"range[start]": 1, "range[end]": MAX_BLAME_LINES + 1})
    assert_json(r, 413, {"message": f"A blame covers at most {MAX_BLAME_LINES} lines"})


def fresh_window(period: int, needed: float):
    """Waits for the next rate limit window when fewer than `needed` seconds are left in this
    one (windows are aligned to the epoch)."""
    left = period - (time.time() % period)
    if left < needed:
        time.sleep(left + 0.05)


def test_blame_rate_limit_per_user_and_per_ip(server, history):
    project = history[0]
    url = blame_url(project, "tiny.txt")
    _, token = make_user(server, "blamer")
    fresh_window(60, needed=30)
    statuses = [server.request("GET", url, params={"ref": "main"}, token=token).status_code
                for _ in range(30)]
    assert statuses == [200] * 30
    r = server.request("GET", url, params={"ref": "main"}, token=token)
    assert r.status_code == 429, r.text
    assert (r.text, r.headers["RateLimit-Name"]) == ("Retry later\n", "blame")
    assert r.headers["RateLimit-Observed"] == "31" and "Retry-After" in r.headers
    # other users are counted apart; anonymous callers per IP, 10 a minute
    assert server.request("GET", url, params={"ref": "main"},
                          token=server.root_token).status_code == 200
    statuses = [server.request("GET", url, params={"ref": "main"}).status_code
                for _ in range(10)]
    assert statuses == [200] * 10
    r = server.request("GET", url, params={"ref": "main"})
    assert r.status_code == 429 and r.headers["RateLimit-Name"] == "blame_unauthenticated"
    # other reads of the file are not blame
    raw = f"/projects/{project.id}/repository/files/tiny.txt/raw"
    assert server.request("GET", raw, params={"ref": "main"}, token=token).status_code == 200


# ---- diffs ---------------------------------------------------------------------------------


@pytest.fixture
def diff_settings(server):
    """Sets diff limits for one test (GitLab's defaults again afterwards)."""
    def put(**values):
        r = server.request("PUT", "/application/settings", token=server.root_token, json=values)
        assert_json(r, 200)
    yield put
    put(**DIFF_DEFAULTS)


def commit_files(project, files: dict[str, str]):
    return project.commits.create({"branch": "main", "commit_message": "files", "actions": [
        {"action": "create", "file_path": path, "content": content}
        for path, content in files.items()]})


def commit_diff(server, project, sha, **params):
    r = server.request("GET", f"/projects/{project.id}/repository/commits/{sha}/diff",
                       params={"per_page": 100, **params}, token=server.root_token)
    return assert_json(r, 200), r.headers


def compare(server, project, frm, to):
    r = server.request("GET", f"/projects/{project.id}/repository/compare",
                       params={"from": frm, "to": to}, token=server.root_token)
    return assert_json(r, 200)


def new_project(gl):
    return gl.projects.create({"name": "d" + secrets.token_hex(3),
                               "initialize_with_readme": True, "default_branch": "main"})


def test_small_diffs_are_unchanged_by_default(server, gl):
    project = new_project(gl)
    base = project.branches.get("main").commit["id"]
    head = commit_files(project, {"a.txt": "a\n", "b.txt": "b\nc\n"}).id
    diffs, headers = commit_diff(server, project, head)
    assert diffs == [
        {"diff": "@@ -0,0 +1 @@\n+a\n", "collapsed": False, "too_large": False,
         "new_path": "a.txt", "old_path": "a.txt", "a_mode": "0", "b_mode": "100644",
         "new_file": True, "renamed_file": False, "deleted_file": False,
         "generated_file": False},
        {"diff": "@@ -0,0 +1,2 @@\n+b\n+c\n", "collapsed": False, "too_large": False,
         "new_path": "b.txt", "old_path": "b.txt", "a_mode": "0", "b_mode": "100644",
         "new_file": True, "renamed_file": False, "deleted_file": False,
         "generated_file": False},
    ]
    assert headers["X-Total"] == "2"
    compared = compare(server, project, base, head)
    assert compared["diffs"] == diffs and compared["compare_timeout"] is False


def test_a_patch_over_diff_max_patch_bytes_is_too_large(server, gl, diff_settings):
    project = new_project(gl)
    base = commit_files(project, {"small.txt": "a\n"}).id
    big = "".join(f"{n:05} " + "x" * 44 + "\n" for n in range(300))  # 15,000 bytes
    head = project.commits.create({"branch": "main", "commit_message": "grow", "actions": [
        {"action": "update", "file_path": "small.txt", "content": "a\nb\n"},
        {"action": "create", "file_path": "big.txt", "content": big}]}).id
    diff_settings(diff_max_patch_bytes=5000)
    diffs, _ = commit_diff(server, project, head)
    by_path = {d["new_path"]: d for d in diffs}
    assert list(by_path) == ["big.txt", "small.txt"]
    assert (by_path["big.txt"]["diff"], by_path["big.txt"]["too_large"],
            by_path["big.txt"]["collapsed"]) == ("", True, False)
    assert by_path["big.txt"]["new_file"] is True
    assert by_path["small.txt"]["diff"] == "@@ -1 +1,2 @@\n a\n+b\n"
    assert by_path["small.txt"]["too_large"] is False
    compared = compare(server, project, base, head)
    assert [(d["new_path"], d["too_large"], d["diff"] == "") for d in compared["diffs"]] == [
        ("big.txt", True, True), ("small.txt", False, False)]
    assert compared["compare_timeout"] is False
    # under the default limit the big patch is shown whole
    diff_settings(**DIFF_DEFAULTS)
    diffs, _ = commit_diff(server, project, head)
    assert diffs[0]["too_large"] is False and diffs[0]["diff"].count("\n+") == 300


def test_diff_max_files_cuts_the_list_and_compare_collapses_past_a_tenth(server, gl,
                                                                          diff_settings):
    project = new_project(gl)
    base = project.branches.get("main").commit["id"]
    names = [f"{c}.txt" for c in "abcde"]
    head = commit_files(project, {name: f"{name}\n" for name in names}).id
    diff_settings(diff_max_files=3)
    diffs, headers = commit_diff(server, project, head)
    assert [d["new_path"] for d in diffs] == names[:3]
    assert all(d["diff"] and not d["collapsed"] for d in diffs)
    assert headers["X-Total"] == "3"
    compared = compare(server, project, base, head)
    assert compared["compare_timeout"] is True
    # past 3 / 10 = 0 files, every patch collapses in a compare
    assert [(d["new_path"], d["collapsed"], d["diff"]) for d in compared["diffs"]] == [
        (name, True, "") for name in names[:3]]
    diff_settings(diff_max_files=20)
    compared = compare(server, project, base, head)
    assert compared["compare_timeout"] is False
    assert [d["collapsed"] for d in compared["diffs"]] == [False, False, True, True, True]
    assert compared["diffs"][1]["diff"] == "@@ -0,0 +1 @@\n+b.txt\n"
    diffs, _ = commit_diff(server, project, head)
    assert len(diffs) == 5 and not any(d["collapsed"] for d in diffs)


def test_diff_max_lines_cuts_the_list_at_the_file_reaching_it(server, gl, diff_settings):
    project = new_project(gl)
    base = project.branches.get("main").commit["id"]
    head = commit_files(project, {f"{c}.txt": "1\n2\n3\n" for c in "abcd"}).id
    # each patch has 4 lines (its `@@` line and 3 added lines): b brings 8, c 12 >= 10
    diff_settings(diff_max_lines=10)
    diffs, headers = commit_diff(server, project, head)
    assert [d["new_path"] for d in diffs] == ["a.txt", "b.txt"]
    assert headers["X-Total"] == "2"
    # a compare collapses past 10 / 10 = 1 line, and collapsed patches do not count
    compared = compare(server, project, base, head)
    assert [d["collapsed"] for d in compared["diffs"]] == [True] * 4
    assert compared["compare_timeout"] is False
    diff_settings(diff_max_lines=12)
    diffs, _ = commit_diff(server, project, head)
    assert len(diffs) == 2
    diff_settings(diff_max_lines=13)
    diffs, _ = commit_diff(server, project, head)
    assert len(diffs) == 3
