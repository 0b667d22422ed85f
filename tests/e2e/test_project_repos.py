"""Project repositories end to end: a real bare repository per project (README commit with
`initialize_with_readme`, cloned with git), statistics, languages, snapshot, housekeeping,
nothing half-created, deletion (immediate and delayed, restore) removing repositories and
uploads, pull mirrors and imports with the outbound address policy."""

from __future__ import annotations

import io
import secrets
import subprocess
import tarfile
from pathlib import Path

import pytest

from conftest import LOOPBACK_RECEIVERS, PROJECT_NOT_FOUND, assert_json, make_user, other_tenant, serve_git_daemon



@pytest.fixture(scope="module")
def server(make_server):
    """Imports come from a git daemon on loopback, which the operator opens."""
    return make_server(LOOPBACK_RECEIVERS)


@pytest.fixture(scope="module")
def owner(server):
    return make_user(server, "owner")


@pytest.fixture(scope="module")
def other(server):
    return make_user(server, "other")


def repo_dir(server, project_id: int, tenant: int = 1, wiki: bool = False) -> Path:
    suffix = ".wiki.git" if wiki else ".git"
    return server.data_dir / "repositories" / str(tenant) / f"{project_id}{suffix}"


def git(*args, cwd=None) -> str:
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "PATH": "/usr/bin:/bin",
           "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.com"}
    out = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def push_files(server, project_id: int, files: dict[str, str], tmp_path: Path, branch="main"):
    """Writes commits straight into the bare repository (git push over HTTP is a later issue)."""
    work = tmp_path / f"work-{secrets.token_hex(3)}"
    git("clone", "-q", str(repo_dir(server, project_id)), str(work))
    for name, content in files.items():
        path = work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    git("checkout", "-q", "-B", branch, cwd=work)
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "files", cwd=work)
    git("push", "-q", "origin", branch, cwd=work)


def test_readme_commit_is_cloneable_and_counted(server, owner, tmp_path):
    user, token = owner
    gl = server.gitlab(token)
    p = gl.projects.create({"name": "With Readme", "initialize_with_readme": True})
    assert p.empty_repo is False
    assert p.default_branch == "main"
    assert p.http_url_to_repo == f"{server.url}/{user.username}/with-readme.git"
    assert p.ssh_url_to_repo == f"git@127.0.0.1:{user.username}/with-readme.git"
    clone = tmp_path / "clone"
    git("clone", "-q", str(repo_dir(server, p.id)), str(clone))
    log = git("log", "--format=%an|%ae|%s", cwd=clone).strip().splitlines()
    assert log == [f"{user.name}|{user.email}|Initial commit"]
    readme = (clone / "README.md").read_text()
    assert readme.startswith("# With Readme\n")
    assert "Getting started" in readme
    stats = gl.projects.get(p.id, statistics=True).statistics
    assert stats["commit_count"] == 1
    assert stats["repository_size"] > 0 and stats["storage_size"] >= stats["repository_size"]
    assert gl.projects.get(p.id).languages() == {}


def test_empty_repository_and_default_branch_setting(server, owner):
    _, token = owner
    gl = server.gitlab(token)
    p = gl.projects.create({"name": "Empty One"})
    assert p.empty_repo is True
    assert gl.projects.get(p.id, statistics=True).statistics["commit_count"] == 0
    assert (repo_dir(server, p.id) / "HEAD").read_text().strip() == "ref: refs/heads/main"
    root = server.root_token
    assert_json(server.request("PUT", "/application/settings", token=root,
                               json={"default_branch_name": "trunk"}), 200)
    try:
        q = gl.projects.create({"name": "Trunk One", "initialize_with_readme": True})
        assert q.default_branch == "trunk"
        assert git("--git-dir", str(repo_dir(server, q.id)), "branch", "--list").strip() == "* trunk"
        r = gl.projects.create({"name": "Own Branch", "default_branch": "main", "initialize_with_readme": True})
        assert r.default_branch == "main" and r.empty_repo is False
    finally:
        server.request("PUT", "/application/settings", token=root, json={"default_branch_name": ""})


def test_statistics_need_reporter(server, owner, other):
    _, token = owner
    p = server.gitlab(token).projects.create({"name": "Stats Pub", "visibility": "public",
                                              "initialize_with_readme": True})
    mine = assert_json(server.request("GET", f"/projects/{p.id}", token=token, params={"statistics": True}), 200)
    assert mine["statistics"]["commit_count"] == 1
    theirs = assert_json(server.request("GET", f"/projects/{p.id}", token=other[1], params={"statistics": True}), 200)
    assert "statistics" not in theirs
    listed = assert_json(server.request("GET", "/projects", token=token,
                                        params={"statistics": True, "owned": True}), 200)
    assert all("statistics" in x for x in listed)


def test_languages_by_bytes(server, owner, tmp_path):
    _, token = owner
    gl = server.gitlab(token)
    p = gl.projects.create({"name": "Polyglot", "initialize_with_readme": True})
    push_files(server, p.id, {"src/main.rs": "x" * 300, "app.py": "y" * 100, "docs/a.rb": "z" * 999,
                              "notes.md": "w" * 5000}, tmp_path)
    # the server refreshes statistics and languages after housekeeping
    assert_json(server.request("POST", f"/projects/{p.id}/housekeeping", token=token), 201)
    assert server.wait_for(lambda: gl.projects.get(p.id).languages() != {}, timeout=15)
    langs = gl.projects.get(p.id).languages()
    assert langs == {"Rust": 75.0, "Python": 25.0}
    assert abs(sum(langs.values()) - 100) < 1e-9
    assert gl.projects.get(p.id, statistics=True).statistics["commit_count"] == 2
    found = assert_json(server.request("GET", "/projects", token=token,
                                       params={"with_programming_language": "rust"}), 200)
    assert [x["id"] for x in found] == [p.id]
    assert assert_json(server.request("GET", "/projects", token=token,
                                      params={"with_programming_language": "cobol"}), 200) == []


def test_snapshot_is_a_cloneable_tar(server, owner, other, tmp_path):
    _, token = owner
    p = server.gitlab(token).projects.create({"name": "Snap", "initialize_with_readme": True})
    r = server.request("GET", f"/projects/{p.id}/snapshot", token=server.root_token)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "application/x-tar"
    target = tmp_path / "snap.git"
    with tarfile.open(fileobj=io.BytesIO(r.content)) as tar:
        tar.extractall(target, filter="data")
    clone = tmp_path / "from-snapshot"
    git("clone", "-q", str(target), str(clone))
    assert git("log", "--format=%s", cwd=clone).strip() == "Initial commit"
    assert (clone / "README.md").read_text().startswith("# Snap")
    # only administrators; no wiki repository → 404
    assert_json(server.request("GET", f"/projects/{p.id}/snapshot", token=token), 403)
    assert_json(server.request("GET", f"/projects/{p.id}/snapshot"), 401)
    assert_json(server.request("GET", f"/projects/{p.id}/snapshot", token=other[1]), 404, PROJECT_NOT_FOUND)
    assert_json(server.request("GET", "/projects/999999/snapshot", token=server.root_token), 404, PROJECT_NOT_FOUND)
    assert_json(server.request("GET", f"/projects/{p.id}/snapshot", token=server.root_token,
                               params={"wiki": True}), 404, {"message": "404 Not Found"})
    assert_json(server.request("GET", f"/projects/{p.id}/snapshot", token=server.root_token,
                               params={"wiki": "maybe"}), 400, {"error": "wiki is invalid"})


def test_housekeeping(server, owner, other):
    _, token = owner
    gl = server.gitlab(token)
    p = gl.projects.create({"name": "Housekeep", "initialize_with_readme": True})
    gl.projects.get(p.id, lazy=True).housekeeping()
    assert server.wait_for(lambda: list((repo_dir(server, p.id) / "objects" / "pack").glob("*.pack")), timeout=15)
    assert_json(server.request("POST", f"/projects/{p.id}/housekeeping"), 401)
    assert_json(server.request("POST", f"/projects/{p.id}/housekeeping", token=other[1]), 404, PROJECT_NOT_FOUND)
    assert_json(server.request("POST", "/projects/999999/housekeeping", token=token), 404, PROJECT_NOT_FOUND)
    q = gl.projects.create({"name": "Housekeep Pub", "visibility": "public"})
    assert_json(server.request("POST", f"/projects/{q.id}/housekeeping", token=other[1]), 403)


def test_nothing_half_created(server, owner):
    user, token = owner
    gl = server.gitlab(token)
    first = gl.projects.create({"name": "Unique Name"})
    before = sorted(p.name for p in (server.data_dir / "repositories" / "1").iterdir())
    # a taken path: 400 and no repository directory appears
    r = server.request("POST", "/projects", token=token, json={"name": "Unique Name"})
    assert r.status_code == 400
    assert sorted(p.name for p in (server.data_dir / "repositories" / "1").iterdir()) == before
    # a repository that cannot be made: the project row is not left behind
    blocker = repo_dir(server, first.id + 1)
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("in the way")
    try:
        total = len(server.request("GET", "/projects", token=server.root_token,
                                   params={"per_page": 100}).json())
        r = server.request("POST", "/projects", token=token, json={"name": "Blocked Repo"})
        assert r.status_code == 500, r.text
        assert_json(server.request("GET", f"/projects/{user.username}%2Fblocked-repo", token=token), 404, PROJECT_NOT_FOUND)
        assert len(server.request("GET", "/projects", token=server.root_token,
                                  params={"per_page": 100}).json()) == total
    finally:
        blocker.unlink()
    again = assert_json(server.request("POST", "/projects", token=token, json={"name": "Blocked Repo"}), 201)
    assert repo_dir(server, again["id"]).is_dir()


def test_delete_removes_repository_and_uploads(server, owner, other):
    _, token = owner
    gl = server.gitlab(token)
    p = gl.projects.create({"name": "Doomed", "initialize_with_readme": True})
    up = assert_json(server.request("POST", f"/projects/{p.id}/uploads", token=token,
                                    files={"file": ("a.txt", b"hello")}), 201)
    uploads = server.data_dir / "uploads" / "1" / "project" / str(p.id)
    assert uploads.is_dir() and repo_dir(server, p.id).is_dir()
    assert_json(server.request("DELETE", f"/projects/{p.id}", token=other[1]), 404, PROJECT_NOT_FOUND)
    assert_json(server.request("DELETE", f"/projects/{p.id}", token=token), 202, {"message": "202 Accepted"})
    assert not repo_dir(server, p.id).exists()
    assert not uploads.exists()
    assert_json(server.request("GET", f"/projects/{p.id}", token=token), 404, PROJECT_NOT_FOUND)
    assert server.request("GET", up["full_path"], token=token).status_code == 404


def test_delayed_deletion_and_restore(server, owner, other):
    user, token = owner
    root = server.root_token
    gl = server.gitlab(token)
    p = gl.projects.create({"name": "Later", "initialize_with_readme": True})
    # restore of a project that is not marked
    assert_json(server.request("POST", f"/projects/{p.id}/restore", token=token), 400,
                {"message": "Project has not been marked for deletion"})
    assert_json(server.request("PUT", "/application/settings", token=root,
                               json={"delayed_project_deletion": True, "deletion_adjourned_period": 3}), 200)
    try:
        r = server.request("DELETE", f"/projects/{p.id}", token=token,
                           params={"permanently_remove": True, "full_path": f"{user.username}/later"})
        assert_json(r, 400, {"message": "Project must be marked for deletion first."})
        assert_json(server.request("DELETE", f"/projects/{p.id}", token=token), 202, {"message": "202 Accepted"})
        marked = assert_json(server.request("GET", f"/projects/{p.id}", token=token), 200)
        assert marked["marked_for_deletion_on"] == marked["marked_for_deletion_at"]
        assert len(marked["marked_for_deletion_on"]) == 10
        assert marked["archived"] is True
        assert marked["path"] == f"later-deletion_scheduled-{p.id}"
        assert repo_dir(server, p.id).is_dir()
        # the path is free again
        gl.projects.create({"name": "Later"}).delete()
        assert_json(server.request("DELETE", f"/projects/{p.id}", token=token), 400,
                    {"message": "Project has been already marked for deletion"})
        assert_json(server.request("POST", f"/projects/{p.id}/restore", token=other[1]), 404, PROJECT_NOT_FOUND)
        assert_json(server.request("POST", f"/projects/{p.id}/restore"), 401)
        restored = assert_json(server.request("POST", f"/projects/{p.id}/restore", token=token), 201)
        assert restored["archived"] is False and restored["marked_for_deletion_on"] is None
        assert restored["path"] == "later" and restored["name"] == "Later"
        # mark again, then remove permanently with the (new) full path
        assert_json(server.request("DELETE", f"/projects/{p.id}", token=token), 202)
        full = f"{user.username}/later-deletion_scheduled-{p.id}"
        r = server.request("DELETE", f"/projects/{p.id}", token=token,
                           params={"permanently_remove": True, "full_path": f"{user.username}/later"})
        assert_json(r, 400, {"message": "`full_path` is incorrect. You must enter the complete path for the project."})
        r = server.request("DELETE", f"/projects/{p.id}", token=token,
                           params={"permanently_remove": True, "full_path": full})
        assert_json(r, 202)
        assert_json(server.request("GET", f"/projects/{p.id}", token=root), 404, PROJECT_NOT_FOUND)
        assert not repo_dir(server, p.id).exists()
    finally:
        server.request("PUT", "/application/settings", token=root, json={"delayed_project_deletion": False})


def test_import_url_and_pull_mirror(server, owner, other, tmp_path):
    user, token = owner
    root = server.root_token
    gl = server.gitlab(token)
    source = gl.projects.create({"name": "Mirror Source", "initialize_with_readme": True})
    local_url = f"{server.url}/{user.username}/mirror-source.git"
    # local addresses are refused by default, when stored and when fetched
    r = server.request("POST", "/projects", token=token, json={"name": "Imp", "import_url": local_url})
    assert_json(r, 400, {"message": {"import_url": ["is blocked: Requests to localhost are not allowed"]}})
    r = server.request("POST", "/projects", token=token,
                       json={"name": "Imp", "import_url": "file:///etc/passwd"})
    assert_json(r, 400, {"message": {"import_url": ["is blocked: Only allowed schemes are http, https, git"]}})
    target = gl.projects.create({"name": "Mirror Target"})
    path = f"/projects/{target.id}/mirror/pull"
    assert_json(server.request("POST", path, token=token), 400, {"message": "The project is not mirrored"})
    assert_json(server.request("POST", path, token=token, json={"import_url": "http://10.1.2.3/x.git"}), 400,
                {"message": {"import_url": ["is blocked: Requests to the local network are not allowed"]}})
    assert_json(server.request("POST", path), 401)
    assert_json(server.request("POST", path, token=other[1]), 404, PROJECT_NOT_FOUND)
    assert_json(server.request("POST", "/projects/999999/mirror/pull", token=token), 404, PROJECT_NOT_FOUND)
    # allowed through the allowlist: the fetch runs (git over HTTP is not served yet, so it
    # fails, and the failure is reported without the URL)
    assert_json(server.request("PUT", "/application/settings", token=root,
                               json={"outbound_local_requests_whitelist": ["127.0.0.1"]}), 200)
    try:
        assert_json(server.request("POST", path, token=token, json={"import_url": local_url}), 200)
        done = server.wait_for(
            lambda: gl.projects.get(target.id).import_status in ("finished", "failed"), timeout=20)
        assert done
        got = gl.projects.get(target.id)
        assert got.import_status == "failed" and got.import_error
        assert local_url not in got.import_error
        assert got.mirror is True and got.import_url == local_url
        creds = local_url.replace("http://", "http://user:secret@")
        r = server.request("PUT", f"/projects/{target.id}", token=token, json={"import_url": creds})
        assert assert_json(r, 200)["import_url"] == local_url
        assert_json(server.request("GET", f"/projects/{target.id}", token=other[1]), 404, PROJECT_NOT_FOUND)
    finally:
        server.request("PUT", "/application/settings", token=root, json={"outbound_local_requests_whitelist": []})
    # with the allowlist empty again, the stored URL is refused before the fetch
    r = server.request("POST", path, token=token)
    assert_json(r, 200)
    server.wait_for(lambda: gl.projects.get(target.id).import_status == "failed", timeout=20)
    assert "Requests to localhost are not allowed" in gl.projects.get(target.id).import_error


@pytest.fixture
def git_daemon(server):
    """`git daemon` serving the server's repositories of tenant 1 over git:// on loopback."""
    with serve_git_daemon(server.data_dir / "repositories" / "1") as url:
        yield url


def test_import_and_mirror_fetch_a_repository(server, owner, git_daemon, tmp_path):
    _, token = owner
    root = server.root_token
    gl = server.gitlab(token)
    source = gl.projects.create({"name": "Served", "initialize_with_readme": True})
    url = f"{git_daemon}/{source.id}.git"
    assert_json(server.request("PUT", "/application/settings", token=root,
                               json={"allow_local_requests_from_web_hooks_and_services": True}), 200)
    try:
        r = server.request("POST", "/projects", token=token, json={"name": "Imported", "import_url": url})
        created = assert_json(r, 201)
        assert created["import_status"] == "scheduled"
        assert server.wait_for(lambda: gl.projects.get(created["id"]).import_status in ("finished", "failed"),
                               timeout=30)
        imported = gl.projects.get(created["id"])
        assert imported.import_status == "finished", imported.import_error
        assert imported.empty_repo is False
        assert git("--git-dir", str(repo_dir(server, imported.id)), "log", "--format=%s").strip() == "Initial commit"
        # a new commit upstream arrives with the next pull
        push_files(server, source.id, {"lib.rs": "fn main() {}"}, tmp_path)
        r = server.request("POST", f"/projects/{imported.id}/mirror/pull", token=token, json={"import_url": url})
        assert_json(r, 200)
        assert server.wait_for(lambda: gl.projects.get(imported.id).import_status == "finished", timeout=30)
        stats = gl.projects.get(imported.id, statistics=True).statistics
        assert stats["commit_count"] == 2
        assert gl.projects.get(imported.id).languages() == {"Rust": 100.0}
    finally:
        server.request("PUT", "/application/settings", token=root,
                       json={"allow_local_requests_from_web_hooks_and_services": False})


def test_other_tenant_ids_are_unknown(server, owner):
    host, token_b = other_tenant(server, "repo")
    _, token = owner
    p = server.gitlab(token).projects.create({"name": "Tenant A Repo", "initialize_with_readme": True})
    for method, suffix in [("GET", "/languages"), ("GET", "/snapshot"), ("POST", "/housekeeping"),
                           ("POST", "/restore"), ("POST", "/mirror/pull"), ("DELETE", "")]:
        r = server.request(method, f"/projects/{p.id}{suffix}", token=token_b, host=host)
        assert_json(r, 404, PROJECT_NOT_FOUND)
    assert repo_dir(server, p.id).is_dir()


def test_group_and_user_deletion_remove_repositories(server, owner):
    _, token = owner
    gl = server.gitlab(token)
    group = gl.groups.create({"name": "Gone Group", "path": f"gone-{secrets.token_hex(3)}"})
    inside = gl.projects.create({"name": "Inside", "namespace_id": group.id, "initialize_with_readme": True})
    outside = gl.projects.create({"name": "Outside Src", "visibility": "public"})
    fork = gl.projects.get(outside.id, lazy=True).forks.create({"namespace_id": group.id})
    assert gl.projects.get(outside.id).forks_count == 1
    assert repo_dir(server, inside.id).is_dir() and repo_dir(server, fork.id).is_dir()
    assert_json(server.request("DELETE", f"/groups/{group.id}", token=token), 202)
    assert not repo_dir(server, inside.id).exists()
    # The fork's copy runs in the background: one still running removes what it wrote when it ends.
    assert server.wait_for(lambda: not repo_dir(server, fork.id).exists(), timeout=10)
    assert gl.projects.get(outside.id).forks_count == 0
    doomed, doomed_token = make_user(server, "doomed")
    mine = server.gitlab(doomed_token).projects.create({"name": "Mine", "initialize_with_readme": True})
    assert repo_dir(server, mine.id).is_dir()
    r = server.request("DELETE", f"/users/{doomed.id}", token=server.root_token, params={"hard_delete": True})
    assert r.status_code == 204
    assert server.wait_for(lambda: not repo_dir(server, mine.id).exists(), timeout=10)


PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")


def test_project_avatar(server, owner, other, tmp_path):
    _, token = owner
    gl = server.gitlab(token)
    p = gl.projects.create({"name": "Pictured"})
    logo = tmp_path / "logo.png"
    logo.write_bytes(PNG)
    p.avatar = open(logo, "rb")
    p.save()
    got = gl.projects.get(p.id)
    # python-gitlab names the part after the attribute (avatar.png)
    assert got.avatar_url.startswith(f"{server.url}/uploads/-/system/project/avatar/{p.id}/")
    assert got.avatar_url.endswith(".png")
    r = server.follow(got.avatar_url, token=token)
    assert r.status_code == 200 and r.content == PNG and r.headers["Content-Type"] == "image/png"
    # private project: hidden from others and anonymous callers
    assert server.follow(got.avatar_url, token=other[1]).status_code == 404
    assert server.follow(got.avatar_url).status_code == 404
    r = server.request("PUT", f"/projects/{p.id}", token=token, files={"avatar": ("x.txt", b"text")})
    assert r.status_code == 400 and "avatar" in r.json()["message"]
    # created with one, then removed with avatar=""
    r = server.request("POST", "/projects", token=token, data={"name": "Born Pictured"},
                       files={"avatar": ("icon.png", PNG)})
    born = assert_json(r, 201)
    assert born["avatar_url"].endswith(f"/project/avatar/{born['id']}/icon.png")
    assert server.follow(born["avatar_url"], token=token).content == PNG
    cleared = assert_json(server.request("PUT", f"/projects/{born['id']}", token=token, json={"avatar": ""}), 200)
    assert cleared["avatar_url"] is None
    assert server.follow(born["avatar_url"], token=token).status_code == 404
