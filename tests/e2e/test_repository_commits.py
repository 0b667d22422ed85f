"""Commits through the API with python-gitlab: several actions in one commit (create, update,
delete, move, chmod), lists with ref_name, path, since/until, all and with_stats, a single
commit with stats, its diff and refs, compare, and the real `git` client cloning what the
server committed. The rest of the repository API is in test_repository_api.py.
"""

from __future__ import annotations

import base64
import os
import secrets
import subprocess
import tempfile
from pathlib import Path

import gitlab
import pytest

from conftest import assert_json, require_program


@pytest.fixture(scope="module", autouse=True)
def _git():
    require_program("git", "git")


def run_git(home: Path, *args, cwd=None) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_TERMINAL_PROMPT": "0"}
    done = subprocess.run(["git", "-c", "credential.helper=", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def new_project(gl, **attrs):
    return gl.projects.create({"name": "c" + secrets.token_hex(3),
                               "initialize_with_readme": True, "default_branch": "main", **attrs})


def test_commit_with_every_action_and_a_clone_of_it(server, gl):
    p = new_project(gl, visibility="private")
    first = p.commits.create({
        "branch": "main", "commit_message": "Add files\n\nWith a body.",
        "author_name": "Grace", "author_email": "grace@example.com",
        "actions": [
            {"action": "create", "file_path": "a.txt", "content": "a\n"},
            {"action": "create", "file_path": "bin/run.sh", "content": "#!/bin/sh\n",
             "execute_filemode": True},
            {"action": "create", "file_path": "img.bin",
             "content": base64.b64encode(b"\x00\x01\x02").decode(), "encoding": "base64"},
            {"action": "create", "file_path": "old/name.txt", "content": "moved\n"},
        ]})
    assert first.title == "Add files" and first.message == "Add files\n\nWith a body."
    assert (first.author_name, first.author_email) == ("Grace", "grace@example.com")
    assert first.stats == {"additions": 3, "deletions": 0, "total": 3}
    assert first.project_id == p.id and first.status is None
    assert first.web_url.endswith(f"/{p.path_with_namespace}/-/commit/{first.id}")

    second = p.commits.create({
        "branch": "main", "commit_message": "Change files",
        "actions": [
            {"action": "update", "file_path": "a.txt", "content": "a\nb\n"},
            {"action": "delete", "file_path": "img.bin"},
            {"action": "move", "previous_path": "old/name.txt", "file_path": "new/name.txt"},
            {"action": "chmod", "file_path": "bin/run.sh", "execute_filemode": False},
            {"action": "create", "file_path": "c.txt", "content": "c"},
            {"action": "move", "previous_path": "c.txt", "file_path": "d.txt", "content": "d"},
        ]})
    assert second.parent_ids == [first.id]
    diffs = {d["new_path"]: d for d in p.commits.get(second.id).diff(get_all=True)}
    assert diffs["a.txt"]["diff"] == "@@ -1 +1,2 @@\n a\n+b\n"
    assert diffs["img.bin"]["deleted_file"] is True
    assert diffs["new/name.txt"]["renamed_file"] is True
    assert diffs["new/name.txt"]["old_path"] == "old/name.txt"
    assert (diffs["bin/run.sh"]["a_mode"], diffs["bin/run.sh"]["b_mode"]) == ("100755", "100644")
    assert diffs["d.txt"]["new_file"] is True and "c.txt" not in diffs

    # the real git client sees exactly what the server committed
    token = server.create_token(scopes="read_repository")
    with tempfile.TemporaryDirectory(prefix="trellis-repo-api-") as tmp:
        home = Path(tmp)
        clone = home / "clone"
        run_git(home, "clone", "-q",
                f"http://root:{token}@{server.host}/{p.path_with_namespace}.git", str(clone))
        assert (clone / "a.txt").read_text() == "a\nb\n"
        assert (clone / "new/name.txt").read_text() == "moved\n"
        assert (clone / "d.txt").read_text() == "d"
        assert not (clone / "img.bin").exists() and not (clone / "old").exists()
        assert not os.access(clone / "bin/run.sh", os.X_OK)
        log = run_git(home, "log", "--format=%H %an <%ae> %cn %s", cwd=clone).splitlines()
        assert log[0].startswith(f"{second.id} {gl.user.name} <")
        assert log[1] == f"{first.id} Grace <grace@example.com> {gl.user.name} Add files"
        run_git(home, "fsck", "--strict", cwd=clone)


def test_commit_errors(server, gl):
    p = new_project(gl)
    base = f"/projects/{p.id}/repository/commits"
    tok = server.root_token
    head = p.branches.get("main").commit["id"]

    def post(actions, status, body, **extra):
        r = server.request("POST", base, token=tok, json={
            "branch": "main", "commit_message": "m", "actions": actions, **extra})
        assert_json(r, status, body)

    post([{"action": "create", "file_path": "README.md", "content": "x"}], 400,
         {"message": "A file with this name already exists"})
    post([{"action": "update", "file_path": "nope", "content": "x"}], 400,
         {"message": "A file with this name doesn't exist"})
    post([{"action": "delete", "file_path": "nope"}], 400,
         {"message": "A file with this name doesn't exist"})
    post([{"action": "move", "previous_path": "nope", "file_path": "x"}], 400,
         {"message": "A file with this name doesn't exist"})
    post([{"action": "create", "file_path": "a", "content": "1"},
          {"action": "create", "file_path": "a", "content": "2"}], 400,
         {"message": "A file with this name already exists"})
    post([{"action": "update", "file_path": "README.md", "content": "x",
           "last_commit_id": "f" * 40}], 400,
         {"message": "You are attempting to update a file that has changed since you "
                     "started editing it."})
    post([{"action": "explode", "file_path": "a"}], 400,
         {"error": "actions[0][action] does not have a valid value"})
    post([{"action": "create", "file_path": "../../outside"}], 400,
         {"error": "actions[0][file_path] should be a valid file path"})
    post([{"action": "create", "file_path": "/etc/passwd"}], 400,
         {"error": "actions[0][file_path] should be a valid file path"})
    post([{"action": "move", "file_path": "x"}], 400,
         {"error": "actions[0][previous_path] is missing"})
    post([{"action": "create", "file_path": "x"}], 400,
         {"message": "Something went wrong when we tried to create 'main' for you: "
                     "Branch already exists"}, start_branch="other")
    post([{"action": "create", "file_path": "x"}], 400,
         {"message": "Something went wrong when we tried to create 'a..b' for you: "
                     "Branch name is invalid"}, branch="a..b")
    r = server.request("POST", base, token=tok, json={"branch": "main", "commit_message": "m"})
    assert_json(r, 400, {"error": "actions is missing"})
    # nothing was committed by the refusals
    assert p.branches.get("main").commit["id"] == head
    # start_sha starts a new branch at an older commit
    r = server.request("POST", base, token=tok, json={
        "branch": "from-sha", "start_sha": head, "commit_message": "m",
        "actions": [{"action": "create", "file_path": "x", "content": ""}]})
    assert assert_json(r, 201)["parent_ids"] == [head]


def test_commit_lists_and_single_commits(server, gl):
    p = new_project(gl)
    for i in range(3):
        p.commits.create({"branch": "main", "commit_message": f"c{i}", "actions": [
            {"action": "create", "file_path": f"dir{i % 2}/f{i}.txt", "content": f"{i}\n"}]})
    p.commits.create({"branch": "side", "start_branch": "main", "commit_message": "side",
                      "actions": [{"action": "create", "file_path": "s.txt", "content": "s"}]})
    titles = [c.title for c in p.commits.list(get_all=True)]
    assert titles == ["c2", "c1", "c0", "Initial commit"]
    assert [c.title for c in p.commits.list(ref_name="side", get_all=True)][0] == "side"
    assert [c.title for c in p.commits.list(query_parameters={"path": "dir0"}, get_all=True)] == ["c2", "c0"]
    assert len(p.commits.list(all=True, get_all=True)) == 5
    assert p.commits.list(ref_name="nope", get_all=True) == []
    assert p.commits.list(until="2000-01-01T00:00:00Z", get_all=True) == []
    assert len(p.commits.list(since="2000-01-01T00:00:00Z", get_all=True)) == 4
    with_stats = p.commits.list(with_stats=True, per_page=1, get_all=False)
    assert with_stats[0].stats == {"additions": 1, "deletions": 0, "total": 1}
    r = server.request("GET", f"/projects/{p.id}/repository/commits?per_page=2&page=2",
                       token=server.root_token)
    assert [c["title"] for c in assert_json(r, 200)] == ["c0", "Initial commit"]
    assert r.headers["X-Page"] == "2" and r.headers["X-Prev-Page"] == "1"

    head = p.commits.get("main")
    assert head.title == "c2" and head.stats["additions"] == 1
    assert p.commits.get(head.short_id).id == head.id
    refs = head.refs(get_all=True)
    assert {"type": "branch", "name": "main"} in refs and {"type": "branch", "name": "side"} in refs
    p.tags.create({"tag_name": "v1", "ref": head.id})
    assert head.refs(type="tag", get_all=True) == [{"type": "tag", "name": "v1"}]
    for sha in ["nope", "-n", "0" * 40, "main:README.md", "HEAD..main"]:
        r = server.request("GET", f"/projects/{p.id}/repository/commits/{sha}",
                           token=server.root_token)
        assert_json(r, 404, {"message": "404 Commit Not Found"})
    r = server.request("GET", f"/projects/{p.id}/repository/commits?since=yesterday",
                       token=server.root_token)
    assert_json(r, 400, {"error": "since is invalid"})


def test_compare(server, gl):
    p = new_project(gl)
    base = p.branches.get("main").commit["id"]
    p.commits.create({"branch": "topic", "start_branch": "main", "commit_message": "t1",
                      "actions": [{"action": "create", "file_path": "t.txt", "content": "t\n"}]})
    p.commits.create({"branch": "topic", "commit_message": "t2",
                      "actions": [{"action": "update", "file_path": "t.txt",
                                   "content": "t\nu\n"}]})
    p.commits.create({"branch": "main", "commit_message": "m1",
                      "actions": [{"action": "create", "file_path": "m.txt", "content": "m"}]})
    result = p.repository_compare("main", "topic")
    assert [c["title"] for c in result["commits"]] == ["t1", "t2"]
    assert result["commit"]["title"] == "t2"
    assert [d["new_path"] for d in result["diffs"]] == ["t.txt"]  # from the merge base
    assert result["compare_same_ref"] is False and result["compare_timeout"] is False
    straight = p.repository_compare("main", "topic", straight=True)
    assert sorted(d["new_path"] for d in straight["diffs"]) == ["m.txt", "t.txt"]
    same = p.repository_compare("main", "main")
    assert same["commits"] == [] and same["diffs"] == [] and same["compare_same_ref"] is True
    assert same["commit"] is None
    assert p.repository_compare(base, "main")["commits"][0]["title"] == "m1"
    r = server.request("GET", f"/projects/{p.id}/repository/compare?from=main",
                       token=server.root_token)
    assert_json(r, 400, {"error": "to is missing"})
    for bad in ["nope", "--output=x", "main..topic"]:
        r = server.request("GET", f"/projects/{p.id}/repository/compare",
                           params={"from": bad, "to": "main"}, token=server.root_token)
        assert_json(r, 404, {"message": "404 Ref Not Found"})
    with pytest.raises(gitlab.GitlabGetError):
        p.repository_compare("main", "nope")


def test_merge_base(server, gl):
    p = new_project(gl)
    base = p.branches.get("main").commit["id"]
    for branch in ("left", "right"):
        p.commits.create({"branch": branch, "start_branch": "main", "commit_message": branch,
                          "actions": [{"action": "create", "file_path": f"{branch}.txt",
                                       "content": branch}]})
    found = p.repository_merge_base(["left", "right"])
    assert found["id"] == base and found["title"] == "Initial commit"
    assert {"id", "short_id", "title", "message", "parent_ids", "web_url"} <= set(found)
    url = f"/projects/{p.id}/repository/merge_base"
    token = server.root_token
    # comma-separated refs, and three refs (the first against a merge of the others)
    r = server.request("GET", url, params={"refs": "left,main"}, token=token)
    assert assert_json(r, 200)["id"] == base
    r = server.request("GET", url, params={"refs[]": ["left", "right", "main"]}, token=token)
    assert assert_json(r, 200)["id"] == base
    assert_json(server.request("GET", url, token=token), 400, {"error": "refs is missing"})
    r = server.request("GET", url, params={"refs[]": ["left"]}, token=token)
    assert_json(r, 400, {"message": "Provide at least 2 refs"})
    r = server.request("GET", url, params={"refs[]": ["left", "nope"]}, token=token)
    assert_json(r, 400, {"message": "Could not find ref: nope"})
    r = server.request("GET", url, params={"refs[]": ["nope", "gone", "left"]}, token=token)
    assert_json(r, 400, {"message": "Could not find refs: nope, gone"})
    assert_json(server.request("GET", f"/projects/999999/repository/merge_base",
                               params={"refs": "a,b"}, token=token), 404,
                {"message": "404 Project Not Found"})
    # unrelated histories have no merge base
    home = Path(tempfile.mkdtemp(prefix="trellis-mb-"))
    run_git(home, "init", "-q", "-b", "orphan", str(home / "w"))
    (home / "w" / "o.txt").write_text("o")
    run_git(home, "-C", str(home / "w"), "add", "o.txt")
    run_git(home, "-C", str(home / "w"), "-c", "user.name=O", "-c", "user.email=o@example.com",
            "commit", "-q", "-m", "orphan")
    remote = f"http://root:{token}@{server.host}/{p.path_with_namespace}.git"
    run_git(home, "-C", str(home / "w"), "push", "-q", remote, "orphan")
    r = server.request("GET", url, params={"refs": "orphan,main"}, token=token)
    assert_json(r, 404, {"message": "404 Merge Base Not Found"})


def test_contributors(server, gl):
    p = new_project(gl)
    home = Path(tempfile.mkdtemp(prefix="trellis-contrib-"))
    remote = f"http://root:{server.root_token}@{server.host}/{p.path_with_namespace}.git"
    run_git(home, "clone", "-q", remote, str(home / "w"))
    for n, (name, email) in enumerate([("Zed Zero", "zed@example.com"),
                                       ("Amy Able", "amy@example.com"),
                                       ("Zed Zero", "zed@example.com")]):
        (home / "w" / f"f{n}.txt").write_text(str(n))
        run_git(home, "-C", str(home / "w"), "add", ".")
        run_git(home, "-C", str(home / "w"), "-c", f"user.name={name}", "-c",
                f"user.email={email}", "commit", "-q", "-m", f"change {n}")
    run_git(home, "-C", str(home / "w"), "push", "-q", "origin", "main")

    listed = p.repository_contributors(get_all=True)
    # one per email, the README's author included; by commits, ascending (GitLab's default)
    assert len(listed) == 3
    assert [c["commits"] for c in listed] == [1, 1, 2]
    assert {"amy@example.com", "zed@example.com"} <= {c["email"] for c in listed}
    zed = next(c for c in listed if c["email"] == "zed@example.com")
    assert zed == {"name": "Zed Zero", "email": "zed@example.com", "commits": 2,
                   "additions": 0, "deletions": 0}
    url = f"/projects/{p.id}/repository/contributors"
    token = server.root_token
    r = server.request("GET", url, params={"order_by": "name", "sort": "asc"}, token=token)
    names = [c["name"] for c in assert_json(r, 200)]
    assert names == sorted(names)
    r = server.request("GET", url, params={"order_by": "commits", "sort": "desc"}, token=token)
    assert assert_json(r, 200)[0]["email"] == "zed@example.com"
    r = server.request("GET", url, params={"order_by": "name", "per_page": 1}, token=token)
    assert len(assert_json(r, 200)) == 1 and r.headers["X-Total"] == str(len(listed))
    assert_json(server.request("GET", url, params={"order_by": "size"}, token=token), 400,
                {"error": "order_by does not have a valid value"})
    assert_json(server.request("GET", url, params={"sort": "up"}, token=token), 400,
                {"error": "sort does not have a valid value"})
    assert_json(server.request("GET", url, params={"ref": "nope"}, token=token), 404,
                {"message": "404 Ref Not Found"})
    r = server.request("GET", url, params={"ref": "main~3"}, token=token)
    assert [c["commits"] for c in assert_json(r, 200)] == [1]  # the README commit alone


def test_blame(server, gl):
    p = new_project(gl)
    p.commits.create({"branch": "main", "commit_message": "first lines",
                      "actions": [{"action": "create", "file_path": "docs/poem.txt",
                                   "content": "one\ntwo\nthree\n"}]})
    second = p.commits.create({"branch": "main", "commit_message": "a middle line",
                               "actions": [{"action": "update", "file_path": "docs/poem.txt",
                                            "content": "one\ntwo and a half\nthree\n"}]})
    ranges = p.files.blame(file_path="docs/poem.txt", ref="main")
    assert [r["lines"] for r in ranges] == [["one"], ["two and a half"], ["three"]]
    first_id = ranges[0]["commit"]["id"]
    assert ranges[2]["commit"]["id"] == first_id != second.id
    assert ranges[1]["commit"]["id"] == second.id
    assert ranges[1]["commit"]["message"] == "a middle line"
    assert set(ranges[0]["commit"]) == {"id", "parent_ids", "message", "author_name",
                                        "author_email", "authored_date", "committer_name",
                                        "committer_email", "committed_date"}
    # at an older ref, the older text
    older = p.files.blame(file_path="docs/poem.txt", ref=first_id)
    assert [r["lines"] for r in older] == [["one", "two", "three"]]
    url = f"/projects/{p.id}/repository/files/docs%2Fpoem.txt/blame"
    token = server.root_token
    assert_json(server.request("GET", url, token=token), 400, {"error": "ref is missing"})
    r = server.request("GET", url.replace("poem", "nope"), params={"ref": "main"}, token=token)
    assert_json(r, 404, {"message": "404 File Not Found"})
    r = server.request("GET", url, params={"ref": "nope"}, token=token)
    assert_json(r, 404, {"message": "404 Commit Not Found"})
    r = server.request("GET", f"/projects/{p.id}/repository/files/..%2Fetc/blame",
                       params={"ref": "main"}, token=token)
    assert_json(r, 400, {"error": "file_path should be a valid file path"})
