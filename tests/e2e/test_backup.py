"""`trellis backup create` while the server runs and pushes land, and `trellis backup restore`
into a fresh deployment: the restored server answers the API as the original did, its
repositories hold the same refs and objects, old tokens still work; a tampered backup and a
non-empty target are refused without writing anything."""

from __future__ import annotations

import hashlib
import json
import secrets
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from conftest import (PASSWORD, TRELLIS_BIN, Server, assert_json, git_url, make_user, psql,
                      refs_and_objects, run_git)


def push_commits(home: Path, server: Server, path: str, login: str, count: int,
                 branch: str = "main") -> Path:
    """Clones `path`, commits `count` files on `branch` and pushes; the clone."""
    work = home / secrets.token_hex(4)
    run_git(home, "clone", "-q", git_url(server, f"{path}.git", login, PASSWORD), str(work))
    run_git(home, "checkout", "-q", "-B", branch, cwd=work)
    for n in range(count):
        (work / f"file-{n}.txt").write_text(f"{branch} {n}\n")
        run_git(home, "add", ".", cwd=work)
        run_git(home, "commit", "-q", "-m", f"{branch} {n}", cwd=work)
    run_git(home, "push", "-q", "origin", branch, cwd=work)
    return work


def head_of(repo: Path) -> str:
    return subprocess.run(["git", "--git-dir", str(repo), "symbolic-ref", "HEAD"],
                          check=True, capture_output=True, text=True).stdout


def restore(target: Server, backup: Path) -> subprocess.CompletedProcess:
    env = dict(target.env)
    env.pop("RUST_BACKTRACE", None)
    return subprocess.run([TRELLIS_BIN, "backup", "restore", "--input", str(backup)],
                          env=env, capture_output=True, text=True, timeout=300)


def holds_nothing(target: Server) -> bool:
    """Whether restore wrote nothing: no database rows or file, no repository, no key."""
    data = list(target.data_dir.rglob("*"))
    written = [p for p in data if p.is_file() and not p.name.endswith(".lock")]
    if target.engine == "postgres":
        tables = psql(target.database_url, "SELECT COUNT(*) FROM information_schema.tables "
                      "WHERE table_schema = current_schema()").strip()
        return written == [] and tables == "0"
    return written == []


@pytest.fixture(scope="module")
def world(make_server, tmp_path_factory):
    """A deployment with users, a group, projects with pushed commits, issues, notes,
    tokens, an upload and a webhook; backed up while a push loop runs."""
    source = make_server()
    home = tmp_path_factory.mktemp("home")
    gl = source.gitlab()
    alice, alice_token = make_user(source, "alice")
    bob, bob_token = make_user(source, "bob")
    group = gl.groups.create({"name": "team" + secrets.token_hex(2),
                              "path": "team" + secrets.token_hex(2)})
    group.members.create({"user_id": bob.id, "access_level": 30})
    alice_gl = source.gitlab(token=alice_token)
    quiet = alice_gl.projects.create({"name": "quiet", "initialize_with_readme": True})
    busy = gl.projects.create({"name": "busy", "namespace_id": group.id,
                               "initialize_with_readme": True})
    empty = gl.projects.create({"name": "empty"})
    quiet.members.create({"user_id": bob.id, "access_level": 30})
    push_commits(home, source, quiet.path_with_namespace, alice.username, 5)
    push_commits(home, source, quiet.path_with_namespace, alice.username, 2, branch="topic")
    quiet.tags.create({"tag_name": "v1.0", "ref": "main"})
    issue = quiet.issues.create({"title": "Broken build", "description": "It fails",
                                 "labels": "bug"})
    issue.notes.create({"body": "Confirmed"})
    source.gitlab(token=bob_token).projects.get(quiet.id).issues.get(issue.iid).notes.create(
        {"body": "Fixed on topic"})
    busy.issues.create({"title": "Second"})
    quiet.hooks.create({"url": "https://example.com/hook", "push_events": True,
                        "token": "hook-secret"})
    r = source.request("POST", f"/projects/{quiet.id}/uploads", token=alice_token,
                       files={"file": ("logo.png", b"\x89PNG\r\n\x1a\n" + bytes(range(256)),
                                       "image/png")})
    uploaded = assert_json(r, 201)

    # The backup is taken while root pushes to `busy` in a loop.
    stop = threading.Event()
    pushed: list[int] = []
    clone = home / "busy"
    run_git(home, "clone", "-q", git_url(source, f"{busy.path_with_namespace}.git", "root",
                                         source.root_token), str(clone))

    def push_loop():
        n = 0
        while not stop.is_set() and n < 500:
            (clone / f"loop-{n}.txt").write_text(f"{n}\n")
            run_git(home, "add", ".", cwd=clone)
            run_git(home, "commit", "-q", "-m", f"loop {n}", cwd=clone)
            if run_git(home, "push", "-q", "origin", "main", cwd=clone, check=False).returncode == 0:
                pushed.append(n)
            n += 1

    pusher = threading.Thread(target=push_loop)
    pusher.start()
    source.wait_for(lambda: len(pushed) >= 2, timeout=60)
    backup = Path(tempfile.mkdtemp(prefix="trellis-backup-")) / "b"
    try:
        made = source.cli("backup", "create", "--output", str(backup))
    finally:
        stop.set()
        pusher.join(timeout=120)
    assert pushed, "the push loop pushed nothing"
    assert "backup written" in made.stdout

    target = Server(source.engine)
    done = restore(target, backup)
    assert done.returncode == 0, done.stderr
    target.start()
    yield {
        "source": source, "target": target, "backup": backup, "home": home,
        "alice_token": alice_token, "bob_token": bob_token, "quiet": quiet, "busy": busy,
        "empty": empty, "issue": issue, "uploaded": uploaded, "group": group,
    }
    target.close()
    shutil.rmtree(backup.parent, ignore_errors=True)


def both(world, path: str, token_key: str | None = None):
    # the restored server knows the source's tokens, root's among them
    token = world[token_key] if token_key else world["source"].root_token
    answers = []
    for side in ("source", "target"):
        server = world[side]
        r = server.request("GET", path, token=token)
        assert_json(r, 200)
        # links name the server's own address
        answers.append(json.loads(r.text.replace(server.host, "HOST")))
    return answers


def without(rows, *ids):
    return [row for row in rows if row["id"] not in ids]


def test_the_manifest_lists_every_file_with_its_checksum(world):
    manifest = json.loads((world["backup"] / "manifest.json").read_text())
    assert manifest["format_version"] == 1
    assert manifest["engine"] == world["source"].engine
    assert manifest["schema_version"] > 0
    paths = {f["path"] for f in manifest["files"]}
    assert "files/secret_key" in paths
    # the SSH host key exists when SSH is served
    host_key = (world["source"].data_dir / "ssh_host_ed25519_key").exists()
    assert ("files/ssh_host_ed25519_key" in paths) == host_key
    assert any(p.startswith("files/uploads/") for p in paths)
    for entry in manifest["files"]:
        data = (world["backup"] / entry["path"]).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (entry["size"], entry["sha256"])
    repos = {r["path"]: r for r in manifest["repositories"]}
    assert len(repos) == 3
    empty = next(r for r in repos.values() if r["bundle"] is None)
    assert empty["head"] == "refs/heads/main"


def test_users_groups_and_projects_answer_as_before(world):
    source, target = both(world, "/users?per_page=100&order_by=id")
    assert target == source
    source, target = both(world, "/groups?per_page=100")
    assert target == source
    source, target = both(world, "/groups/%d/members" % world["group"].id)
    assert target == source
    # `busy` took pushes after the backup: its activity differs, everything else is equal.
    source, target = both(world, "/projects?per_page=100&order_by=id&sort=asc")
    assert without(target, world["busy"].id) == without(source, world["busy"].id)
    assert [p["id"] for p in target] == [p["id"] for p in source]
    source, target = both(world, f"/projects/{world['quiet'].id}/members")
    assert target == source


def test_issues_notes_hooks_and_tags_answer_as_before(world):
    quiet, issue = world["quiet"], world["issue"]
    for path in ("/issues?scope=all&per_page=100",
                 f"/projects/{quiet.id}/issues/{issue.iid}/notes?sort=asc",
                 f"/projects/{quiet.id}/hooks",
                 f"/projects/{quiet.id}/repository/tags",
                 f"/projects/{quiet.id}/repository/branches",
                 f"/projects/{quiet.id}/labels"):
        source, target = both(world, path)
        assert target == source, path


def test_tokens_from_before_still_work(world):
    for key in ("alice_token", "bob_token"):
        source, target = both(world, "/user", key)
        assert target == source
        assert target["username"].startswith(key.split("_")[0])
    # ids and iids continue after the restored rows
    alice = world["target"].gitlab(token=world["alice_token"])
    created = alice.projects.get(world["quiet"].id).issues.create({"title": "After restore"})
    assert created.iid == world["issue"].iid + 1
    project = alice.projects.create({"name": "after"})
    assert project.id > world["empty"].id


def test_uploads_come_back_byte_for_byte(world):
    path = world["uploaded"]["full_path"]
    answers = [world[side].request("GET", world[side].url + path, token=world["alice_token"])
               for side in ("source", "target")]
    assert [a.status_code for a in answers] == [200, 200]
    assert answers[1].content == answers[0].content
    assert answers[1].content.endswith(bytes(range(256)))


def test_repositories_hold_the_same_refs_and_objects(world):
    source, target = world["source"], world["target"]
    quiet_rel = Path("repositories") / "1" / f"{world['quiet'].id}.git"
    for project in (world["quiet"], world["empty"]):
        rel = Path("repositories") / "1" / f"{project.id}.git"
        assert refs_and_objects(target.data_dir / rel) == refs_and_objects(source.data_dir / rel)
        assert head_of(target.data_dir / rel) == head_of(source.data_dir / rel)
    # a clone over HTTP from the restored server is the same repository, every ref included
    home = world["home"]
    copies = []
    for server in (source, target):
        copy = home / secrets.token_hex(4)
        url = git_url(server, f"{world['quiet'].path_with_namespace}.git", "root",
                      source.root_token)
        run_git(home, "clone", "-q", "--mirror", url, str(copy))
        copies.append(refs_and_objects(copy))
    assert copies[1] == copies[0]
    assert "refs/tags/v1.0" in copies[0][0] and "refs/heads/topic" in copies[0][0]
    assert (target.data_dir / quiet_rel).is_dir()


def test_a_repository_pushed_to_during_the_backup_is_a_consistent_earlier_state(world):
    source, target = world["source"], world["target"]
    rel = Path("repositories") / "1" / f"{world['busy'].id}.git"
    restored = target.data_dir / rel
    subprocess.run(["git", "--git-dir", str(restored), "fsck", "--strict", "--no-progress"],
                   check=True, capture_output=True)
    tip = subprocess.run(["git", "--git-dir", str(restored), "rev-parse", "refs/heads/main"],
                         check=True, capture_output=True, text=True).stdout.strip()
    # every commit the restored branch has, the source has, and the source's branch descends
    # from it
    ancestry = subprocess.run(["git", "--git-dir", str(source.data_dir / rel), "merge-base",
                               "--is-ancestor", tip, "refs/heads/main"])
    assert ancestry.returncode == 0
    # and the restored server serves it
    home = world["home"]
    url = git_url(target, f"{world['busy'].path_with_namespace}.git", "root", source.root_token)
    run_git(home, "clone", "-q", url, str(home / "busy-restored"))


def test_a_tampered_backup_is_refused_and_nothing_is_written(world, tmp_path):
    for victim in ("database", "repositories", "files/secret_key"):
        copy = tmp_path / victim.replace("/", "-")
        shutil.copytree(world["backup"], copy)
        file = copy / victim
        if file.is_dir():
            file = max((p for p in file.rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)
        data = bytearray(file.read_bytes())
        data[len(data) // 2] ^= 0x01
        file.write_bytes(bytes(data))
        target = Server(world["source"].engine)
        try:
            done = restore(target, copy)
            assert done.returncode != 0
            assert "does not match the manifest" in done.stderr
            assert holds_nothing(target), victim
        finally:
            target.close()


def test_a_restore_into_a_deployment_in_use_is_refused(world, make_server):
    done = restore(world["target"], world["backup"])
    assert done.returncode != 0
    assert "already" in done.stderr and "empty deployment" in done.stderr
    # a fresh server's database (default tenant and root made at start) is not empty either
    fresh = make_server()
    fresh.stop()
    done = restore(fresh, world["backup"])
    assert done.returncode != 0
    assert "already holds a deployment" in done.stderr
