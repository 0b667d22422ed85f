"""`trellis tenant export` and `trellis tenant import`: one tenant's rows, repositories and
uploads move as one archive into another deployment, from SQLite to PostgreSQL and back, under
a new host. The imported tenant answers the API field by field as the original did (its ids
kept), its repositories hold the same refs and objects, its uploads the same bytes; nothing of
other tenants goes along. Credentials travel only with --include-secrets; a damaged archive, a
taken host and an archive without the secrets asked for are refused with nothing written."""

from __future__ import annotations

import io
import json
import secrets
import subprocess
import tarfile
from pathlib import Path

import pytest

from conftest import ENGINES, PASSWORD, PG_URL, Server, assert_json, refs_and_objects, run_git


def reads(project: int, issue: int, group: int) -> list[str]:
    """Reads whose answers must be the same, field by field, once the host is replaced."""
    return [
        "/users?per_page=100&order_by=id&sort=asc",
        "/projects?per_page=100&order_by=id&sort=asc&statistics=true",
        f"/projects/{project}",
        f"/projects/{project}/members/all",
        f"/projects/{project}/repository/branches",
        f"/projects/{project}/repository/tags",
        f"/projects/{project}/repository/tree?recursive=true&per_page=100",
        f"/projects/{project}/issues?per_page=100",
        f"/projects/{project}/issues/{issue}/notes?sort=asc",
        f"/projects/{project}/labels",
        f"/projects/{project}/milestones",
        f"/projects/{project}/hooks",
        f"/groups/{group}",
        f"/groups/{group}/members",
        "/namespaces?per_page=100",
        "/application/settings",
    ]


@pytest.fixture(scope="module")
def target_engine(engine) -> str:
    """The other engine when both run here: archives cross engines both ways."""
    if PG_URL and len(ENGINES) > 1:
        return "sqlite" if engine == "postgres" else "postgres"
    return engine


def tenant_id_of(server: Server, host: str) -> int:
    return int(next(line.split("\t")[0] for line in server.cli("tenant", "list").stdout
                    .splitlines() if f"\t{host}\t" in line))


def git_host(server: Server, host: str) -> list[str]:
    """git options reaching the tenant answering `host` on `server`."""
    return ["-c", f"http.extraHeader=Host: {host}:{server.port}"]


@pytest.fixture(scope="module")
def source(make_server, tmp_path_factory):
    """A tenant with users, a group, a project with branches, tags, issues, notes, labels, a
    milestone, a webhook with a token, an upload and a secret setting; the default tenant
    holds a project of its own, which must not travel."""
    server = make_server()
    home = tmp_path_factory.mktemp("home")
    host = f"acme-{secrets.token_hex(3)}.example"
    server.cli("tenant", "create", "--host", host)
    token = server.create_token(user="root", name="t", scopes="api", tenant=host)
    assert server.wait_for(
        lambda: server.request("GET", "/user", token=token, host=host).status_code == 200)
    server.allow_many_sign_ins(token, host)
    server.gitlab().projects.create({"name": "default-only"})

    gl = server.gitlab(token=token, host=host)
    alice = gl.users.create({"username": "alice", "email": "alice@example.com", "name": "Alice",
                             "password": PASSWORD, "skip_confirmation": True})
    alice_token = assert_json(server.request(
        "POST", f"/users/{alice.id}/personal_access_tokens", token=token, host=host,
        json={"name": "a", "scopes": ["api"]}), 201)["token"]
    group = gl.groups.create({"name": "Team", "path": "team"})
    group.members.create({"user_id": alice.id, "access_level": 30})
    project = gl.projects.create({"name": "widget", "namespace_id": group.id,
                                  "initialize_with_readme": True})
    project.members.create({"user_id": alice.id, "access_level": 40})
    work = home / "widget"
    run_git(home, *git_host(server, host), "clone", "-q",
            f"http://root:{token}@{server.host}/team/widget.git", str(work))
    for n in range(3):
        (work / f"f{n}.txt").write_text(f"{n}\n")
        run_git(home, "add", ".", cwd=work)
        run_git(home, "commit", "-q", "-m", f"commit {n}", cwd=work)
    run_git(home, "checkout", "-q", "-b", "topic", cwd=work)
    (work / "topic.txt").write_text("topic\n")
    run_git(home, "add", ".", cwd=work)
    run_git(home, "commit", "-q", "-m", "topic", cwd=work)
    run_git(home, *git_host(server, host), "push", "-q", "origin", "main", "topic", cwd=work)
    project.tags.create({"tag_name": "v1.0", "ref": "main"})
    project.labels.create({"name": "bug", "color": "#ff0000"})
    milestone = project.milestones.create({"title": "1.0"})
    issue = project.issues.create({"title": "Broken", "labels": "bug",
                                   "milestone_id": milestone.id, "assignee_ids": [alice.id]})
    issue.notes.create({"body": "Confirmed"})
    project.hooks.create({"url": "https://example.com/hook", "push_events": True,
                          "token": "hook-secret"})
    upload = assert_json(server.request(
        "POST", f"/projects/{project.id}/uploads", token=token, host=host,
        files={"file": ("logo.png", b"\x89PNG\r\n" + bytes(range(256)), "image/png")}), 201)
    assert_json(server.request("PUT", "/application/settings", token=token, host=host,
                               json={"spam_filter_api_key": "akismet-key",
                                     "home_page_url": "https://acme.example/home"}), 200)
    return {
        "server": server, "host": host, "token": token, "alice_token": alice_token,
        "id": tenant_id_of(server, host), "project": project.id, "issue": issue.iid,
        "group": group.id, "upload": upload,
    }


@pytest.fixture(scope="module")
def target(target_engine):
    server = Server(target_engine)
    server.start()
    # The target has a tenant of its own already: ids and hosts meet existing rows.
    server.cli("tenant", "create", "--host", f"other-{secrets.token_hex(3)}.example")
    server.gitlab().projects.create({"name": "already-here"})
    yield server
    server.close()


def export(source, path: Path, *extra: str) -> subprocess.CompletedProcess:
    return source["server"].cli("tenant", "export", "--host", source["host"],
                                "--output", str(path), *extra)


def import_(target: Server, path: Path, host: str, *extra: str, check=True):
    return target.cli("tenant", "import", "--input", str(path), "--host", host, *extra,
                      check=check)


def served(target: Server, host: str) -> str:
    """A root token of the imported tenant once a running server serves it."""
    token = target.create_token(user="root", name="imported", scopes="api", tenant=host)
    assert target.wait_for(
        lambda: target.request("GET", "/user", token=token, host=host).status_code == 200,
        timeout=15), f"{host} never served"
    return token


def password_works(server: Server, host: str, home: Path) -> bool:
    """Whether alice's password lets git list the project's refs on the tenant `host`."""
    listed = run_git(home, *git_host(server, host), "ls-remote",
                     f"http://alice:{PASSWORD}@{server.host}/team/widget.git", check=False)
    return listed.returncode == 0


def answers(server: Server, token: str, host: str, paths: list[str]) -> dict[str, object]:
    out = {}
    for path in paths:
        r = server.request("GET", path, token=token, host=host)
        assert r.status_code == 200, (path, r.status_code, r.text)
        text = r.text.replace(f"{host}:{server.port}", "HOST").replace(host, "HOST")
        out[path] = json.loads(text)
    return out


@pytest.fixture(scope="module")
def imported(source, target, tmp_path_factory):
    archive = tmp_path_factory.mktemp("archives") / "acme.tar"
    out = export(source, archive).stdout
    assert "exported" in out and archive.is_file()
    assert archive.stat().st_mode & 0o077 == 0, "the archive is readable by its owner only"
    host = f"moved-{secrets.token_hex(3)}.example"
    out = import_(target, archive, host).stdout
    assert "credentials were not carried" in out
    return {"archive": archive, "host": host, "token": served(target, host),
            "id": tenant_id_of(target, host)}


def test_the_imported_tenant_answers_field_by_field_as_the_original(source, target, imported):
    server = source["server"]
    paths = reads(source["project"], source["issue"], source["group"])
    before = answers(server, source["token"], source["host"], paths)
    after = answers(target, imported["token"], imported["host"], paths)
    for path in paths:
        assert after[path] == before[path], path


def test_only_the_tenants_own_rows_travel(source, target, imported):
    projects = [p["name"] for p in assert_json(target.request(
        "GET", "/projects", token=imported["token"], host=imported["host"]), 200)]
    assert projects == ["widget"]
    assert "already-here" in [p.name for p in target.gitlab().projects.list(all=True)]


def test_repositories_hold_the_same_refs_and_objects_and_clone(source, target, imported,
                                                               tmp_path):
    project = source["project"]
    original = source["server"].data_dir / "repositories" / str(source["id"]) / f"{project}.git"
    copy = target.data_dir / "repositories" / str(imported["id"]) / f"{project}.git"
    assert refs_and_objects(copy) == refs_and_objects(original)
    clone = tmp_path / "clone"
    run_git(tmp_path, *git_host(target, imported["host"]), "clone", "-q",
            f"http://root:{imported['token']}@{target.host}/team/widget.git", str(clone))
    assert (clone / "f2.txt").read_text() == "2\n"
    (clone / "after.txt").write_text("pushed after the move\n")
    run_git(tmp_path, "add", ".", cwd=clone)
    run_git(tmp_path, "commit", "-q", "-m", "after", cwd=clone)
    run_git(tmp_path, *git_host(target, imported["host"]), "push", "-q", "origin", "main",
            cwd=clone)


def test_uploads_keep_their_bytes_and_urls(source, target, imported):
    path = source["upload"]["full_path"]
    original = source["server"].request("GET", source["server"].url + path,
                                        token=source["token"], host=source["host"])
    copy = target.request("GET", target.url + path, token=imported["token"],
                          host=imported["host"])
    assert original.status_code == 200 and copy.status_code == 200, copy.text
    assert copy.content == original.content == b"\x89PNG\r\n" + bytes(range(256))


def test_credentials_stay_behind_without_include_secrets(source, target, imported, tmp_path):
    host = imported["host"]
    r = target.request("GET", "/user", token=source["alice_token"], host=host)
    assert_json(r, 401, {"message": "401 Unauthorized"})
    assert not password_works(target, host, tmp_path)
    rows = target.sql("SELECT COUNT(*), COUNT(token) FROM project_hooks "
                      f"WHERE tenant_id = {imported['id']}")
    assert [int(n) for n in rows[0]] == [1, 0], "the hook came without its token"
    settings = target.sql(f"SELECT data FROM application_settings WHERE tenant_id = {imported['id']}")
    assert "spam_filter_api_key" not in settings[0][0]
    assert "acme.example/home" in settings[0][0]


def test_include_secrets_carries_tokens_passwords_and_encrypted_values(source, target,
                                                                       tmp_path):
    archive = tmp_path / "with-secrets.tar"
    assert "holds secrets" in export(source, archive, "--include-secrets").stdout
    host = f"secret-{secrets.token_hex(3)}.example"
    import_(target, archive, host, "--include-secrets")
    assert target.wait_for(lambda: target.request(
        "GET", "/user", token=source["alice_token"], host=host).status_code == 200, timeout=15)
    assert password_works(target, host, tmp_path)
    new_id = tenant_id_of(target, host)
    stored = target.sql(f"SELECT token FROM project_hooks WHERE tenant_id = {new_id}")[0][0]
    original = source["server"].sql(
        f"SELECT token FROM project_hooks WHERE tenant_id = {source['id']}")[0][0]
    assert stored and stored != original, "the token is encrypted anew with the target's key"
    # Inside the archive the secret is in the clear; the target's settings hold it encrypted.
    with tarfile.open(archive) as tar:
        rows = [m for m in tar.getmembers() if "application_settings" in m.name]
        assert b"akismet-key" in tar.extractfile(rows[0]).read()
    settings = target.sql(f"SELECT data FROM application_settings WHERE tenant_id = {new_id}")
    assert "spam_filter_api_key" in settings[0][0] and "akismet-key" not in settings[0][0]


def test_refusals_write_nothing(source, target, imported, tmp_path):
    tenants_before = target.cli("tenant", "list").stdout
    repositories_before = sorted(p.name for p in (target.data_dir / "repositories").iterdir())

    # A taken host.
    r = import_(target, imported["archive"], imported["host"], check=False)
    assert r.returncode != 0 and "already exists" in r.stderr

    # Secrets asked of an archive without them.
    r = import_(target, imported["archive"], f"x-{secrets.token_hex(3)}.example",
                "--include-secrets", check=False)
    assert r.returncode != 0 and "holds no secrets" in r.stderr

    # One byte changed in a row file.
    damaged = tmp_path / "damaged.tar"
    with tarfile.open(imported["archive"]) as original, tarfile.open(damaged, "w") as out:
        for member in original.getmembers():
            data = original.extractfile(member).read()
            if member.name.endswith("_issues.jsonl"):
                data = data.replace(b"Broken", b"Bricked")
            out.addfile(member, io.BytesIO(data))
    r = import_(target, damaged, f"y-{secrets.token_hex(3)}.example", check=False)
    assert r.returncode != 0 and "damaged or was altered" in r.stderr

    # A symbolic link among the files.
    linked = tmp_path / "linked.tar"
    with tarfile.open(imported["archive"]) as original, tarfile.open(linked, "w") as out:
        for member in original.getmembers():
            out.addfile(member, original.extractfile(member))
        link = tarfile.TarInfo("uploads/escape")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        out.addfile(link)
    r = import_(target, linked, f"w-{secrets.token_hex(3)}.example", check=False)
    assert r.returncode != 0 and "neither a file nor a folder" in r.stderr

    # Not an archive at all.
    junk = tmp_path / "junk.tar"
    junk.write_bytes(b"not a tar file" * 100)
    r = import_(target, junk, f"z-{secrets.token_hex(3)}.example", check=False)
    assert r.returncode != 0

    assert target.cli("tenant", "list").stdout == tenants_before
    assert sorted(p.name for p in (target.data_dir / "repositories").iterdir()) \
        == repositories_before
    assert not [p for p in target.data_dir.iterdir() if p.name.startswith(".trellis-tenant")]


def test_export_refuses_an_existing_file_and_an_unknown_host(source, tmp_path):
    existing = tmp_path / "there.tar"
    existing.write_bytes(b"keep me")
    r = source["server"].cli("tenant", "export", "--host", source["host"], "--output",
                             str(existing), check=False)
    assert r.returncode != 0 and existing.read_bytes() == b"keep me"
    r = source["server"].cli("tenant", "export", "--host", "nobody.example", "--output",
                             str(tmp_path / "none.tar"), check=False)
    assert r.returncode != 0 and "no tenant answers" in r.stderr
    assert not (tmp_path / "none.tar").exists()


def test_the_default_tenant_moves_under_a_host_of_its_own(source, target, tmp_path):
    archive = tmp_path / "default.tar"
    out = source["server"].cli("tenant", "export", "--default-tenant", "--output",
                               str(archive)).stdout
    assert "the default tenant" in out
    host = f"was-default-{secrets.token_hex(3)}.example"
    import_(target, archive, host)
    token = served(target, host)
    names = [p["name"] for p in assert_json(target.request("GET", "/projects", token=token,
                                                           host=host), 200)]
    assert names == ["default-only"]
    r = source["server"].cli("tenant", "export", "--default-tenant", "--host", source["host"],
                             "--output", str(tmp_path / "both.tar"), check=False)
    assert r.returncode != 0 and not (tmp_path / "both.tar").exists()
