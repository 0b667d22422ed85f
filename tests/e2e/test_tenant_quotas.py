"""Per-tenant quotas, set by the operator with `trellis tenant quota` on a running server:
projects, users, storage and requests per second are refused with GitLab's answers once
reached, with nothing half-written; clearing a quota lifts it; other tenants are never
affected; the tenant's administrators see the quotas and their usage in the admin console."""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import pytest
import requests

from conftest import PASSWORD, assert_json, csrf_of, other_tenant, run_git


def project_limit(n: int) -> dict:
    return {"message": {"limit_reached": [
        f"This instance's project limit of {n} projects has been reached. "
        "Please contact your GitLab administrator to increase it"]}}


def user_limit(n: int) -> dict:
    return {"message": {"limit_reached": [
        f"This instance's user limit of {n} users has been reached. "
        "Please contact your GitLab administrator to increase it"]}}


@pytest.fixture(scope="module")
def tenant(server):
    host, token = other_tenant(server, "quota")
    tenant_id = int(next(line.split("\t")[0] for line in server.cli("tenant", "list").stdout
                         .splitlines() if f"\t{host}\t" in line))
    return {"host": host, "token": token, "id": tenant_id}


def quota(server, tenant, *flags: str):
    return server.cli("tenant", "quota", "--host", tenant["host"], *flags)


def api(server, tenant, method, path, **kw):
    return server.request(method, path, token=tenant["token"], host=tenant["host"], **kw)


def repositories(server, tenant) -> list[str]:
    root = server.data_dir / "repositories" / str(tenant["id"])
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def count(server, table: str, tenant) -> int:
    return int(server.sql(f"SELECT COUNT(*) FROM {table} WHERE tenant_id = {tenant['id']}")[0][0])


def test_the_project_quota_refuses_every_way_of_making_a_project(server, tenant):
    source = assert_json(api(server, tenant, "POST", "/projects",
                             json={"name": "first", "initialize_with_readme": True}), 201)
    held = count(server, "projects", tenant)
    quota(server, tenant, "--projects", str(held))
    try:
        before = repositories(server, tenant)
        r = api(server, tenant, "POST", "/projects", json={"name": "one-too-many"})
        assert_json(r, 400, project_limit(held))
        # GitLab answers a fork's validation errors with 409.
        r = api(server, tenant, "POST", f"/projects/{source['id']}/fork",
                json={"name": "fork", "path": "fork-" + secrets.token_hex(2)})
        assert_json(r, 409, project_limit(held))
        assert count(server, "projects", tenant) == held
        assert repositories(server, tenant) == before, "no repository left behind"
        # Another tenant is not held back.
        assert server.gitlab().projects.create({"name": "elsewhere-" + secrets.token_hex(2)})
    finally:
        quota(server, tenant, "--projects", "none")
    assert_json(api(server, tenant, "POST", "/projects", json={"name": "lifted"}), 201)


def test_the_user_quota_refuses_new_users(server, tenant):
    held = count(server, "users", tenant)
    quota(server, tenant, "--users", str(held))
    body = {"username": "over" + secrets.token_hex(2), "email": f"o{secrets.token_hex(3)}@e.com",
            "name": "Over", "password": PASSWORD, "skip_confirmation": True}
    try:
        assert_json(api(server, tenant, "POST", "/users", json=body), 400, user_limit(held))
        assert count(server, "users", tenant) == held
    finally:
        quota(server, tenant, "--users", "none")
    assert_json(api(server, tenant, "POST", "/users", json=body), 201)


def git_host(server, tenant) -> list[str]:
    return ["-c", f"http.extraHeader=Host: {tenant['host']}:{server.port}"]


def test_the_storage_quota_refuses_pushes_and_uploads_but_not_deletions(server, tenant,
                                                                     tmp_path: Path):
    project = assert_json(api(server, tenant, "POST", "/projects",
                              json={"name": "stored", "initialize_with_readme": True}), 201)
    url = f"http://root:{tenant['token']}@{server.host}/{project['path_with_namespace']}.git"
    work = tmp_path / "work"
    run_git(tmp_path, *git_host(server, tenant), "clone", "-q", url, str(work))
    run_git(tmp_path, "checkout", "-q", "-b", "doomed", cwd=work)
    run_git(tmp_path, *git_host(server, tenant), "push", "-q", "origin", "doomed", cwd=work)
    quota(server, tenant, "--storage", "1")
    try:
        (work / "more.txt").write_text("more\n")
        run_git(tmp_path, "add", ".", cwd=work)
        run_git(tmp_path, "commit", "-q", "-m", "more", cwd=work)
        pushed = run_git(tmp_path, *git_host(server, tenant), "push", "origin", "HEAD:main",
                         cwd=work, check=False)
        assert pushed.returncode != 0
        assert "Your push has been rejected, because this instance has exceeded its storage " \
               "limit of 1 B by" in pushed.stderr, pushed.stderr
        r = api(server, tenant, "POST", f"/projects/{project['id']}/uploads",
                files={"file": ("a.txt", b"hello", "text/plain")})
        assert_json(r, 403, {"message": "403 Forbidden - This instance has reached its "
                                        "storage limit of 1 B"})
        # Deleting a branch frees space, so it goes through.
        deleted = run_git(tmp_path, *git_host(server, tenant), "push", "origin", ":doomed",
                          cwd=work, check=False)
        assert deleted.returncode == 0, deleted.stderr
    finally:
        quota(server, tenant, "--storage", "none")
    run_git(tmp_path, *git_host(server, tenant), "push", "-q", "origin", "HEAD:main", cwd=work)


def test_the_request_quota_throttles_the_tenant_alone(server, tenant):
    quota(server, tenant, "--requests-per-second", "5")
    try:
        # The running server hears of the change (at once through PostgreSQL, within the
        # tenants' refresh on SQLite).
        assert server.wait_for(lambda: any(
            api(server, tenant, "GET", "/version").status_code == 429 for _ in range(20)),
            timeout=10)
        time.sleep(1 - time.time() % 1)  # the counters' windows are whole Unix seconds
        answered: dict[int, list[int]] = {}
        for _ in range(12):
            second = int(time.time())
            status = api(server, tenant, "GET", "/version").status_code
            if int(time.time()) == second:  # counted in the window it was sent in
                answered.setdefault(second, []).append(status)
        assert all(statuses.count(200) <= 5 for statuses in answered.values()), answered
        assert any(429 in statuses for statuses in answered.values()), answered
        r = api(server, tenant, "GET", "/version")
        if r.status_code == 429:
            assert r.text == "Retry later\n"
            assert int(r.headers["Retry-After"]) <= 1
            assert r.headers["RateLimit-Name"] == "tenant_requests_per_second"
        # The default tenant is not counted with it.
        assert all(server.request("GET", "/version", token=server.root_token).status_code == 200
                   for _ in range(12))
    finally:
        quota(server, tenant, "--requests-per-second", "none")
    assert server.wait_for(lambda: all(api(server, tenant, "GET", "/version").status_code == 200
                                       for _ in range(12)), timeout=10)


def test_the_admin_console_shows_quotas_and_usage(server, tenant):
    quota(server, tenant, "--projects", "50", "--storage", "10GiB", "--plugin-instances", "1")
    try:
        admin = assert_json(api(server, tenant, "POST", "/users", json={
            "username": "qadmin" + secrets.token_hex(2), "email": f"q{secrets.token_hex(3)}@e.com",
            "name": "Q", "password": PASSWORD, "skip_confirmation": True, "admin": True}), 201)
        web = sign_in_at(server, tenant, admin["username"])
        r = web.get(server.url + "/admin/usage", headers=host_header(server, tenant),
                    allow_redirects=False)
        assert r.status_code == 200, r.text[:300]
        projects = count(server, "projects", tenant)
        assert f"{projects} of 50" in r.text
        assert "of 10 GiB" in r.text and "1 at once" in r.text
        printed = quota(server, tenant).stdout
        assert f"Projects: {projects} of 50" in printed and "Requests per second: no limit" in printed
    finally:
        quota(server, tenant, "--projects", "none", "--storage", "none",
              "--plugin-instances", "none")


def host_header(server, tenant) -> dict:
    return {"Host": f"{tenant['host']}:{server.port}"}


def sign_in_at(server, tenant, login: str) -> requests.Session:
    """A web session on the tenant's host, signed in as `login`."""
    session = requests.Session()
    session.headers.update(host_header(server, tenant))
    page = session.get(server.url + "/users/sign_in")
    r = session.post(server.url + "/users/sign_in", allow_redirects=False, data={
        "authenticity_token": csrf_of(page.text), "user[login]": login, "user[password]": PASSWORD})
    assert r.status_code == 302, r.text
    return session


@pytest.mark.parametrize("flags", [["--projects", "many"], ["--storage", "10 parsecs"],
                                   ["--users=-1"]])
def test_the_command_refuses_malformed_quotas(server, tenant, flags):
    r = server.cli("tenant", "quota", "--host", tenant["host"], *flags, check=False)
    assert r.returncode == 2 and "invalid value" in r.stderr


def test_the_command_refuses_the_default_and_unknown_tenants(server):
    r = server.cli("tenant", "quota", "--host", "nobody.example", "--projects", "1", check=False)
    assert r.returncode != 0 and "no tenant answers" in r.stderr
