"""Limits on the repository API's costly reads: `diff_max_patch_bytes`, `diff_max_files` and
`diff_max_lines` on a commit's diff and on compare, as GitLab applies them (a too large file keeps
its place without its patch, the list is cut past the maximums, compare collapses past the safe
limits).
"""

from __future__ import annotations

import secrets

import pytest

from conftest import assert_json

# GitLab's defaults, restored after each test that changes them.
DIFF_DEFAULTS = {"diff_max_patch_bytes": 204800, "diff_max_files": 1000, "diff_max_lines": 50000}


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
         "new_path": "a.txt", "old_path": "a.txt", "a_mode": "000000", "b_mode": "100644",
         "new_file": True, "renamed_file": False, "deleted_file": False,
         "generated_file": False},
        {"diff": "@@ -0,0 +1,2 @@\n+b\n+c\n", "collapsed": False, "too_large": False,
         "new_path": "b.txt", "old_path": "b.txt", "a_mode": "000000", "b_mode": "100644",
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
