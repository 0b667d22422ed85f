"""An operator suspends, resumes and deletes tenants from the command line: a suspended
tenant's requests are refused (API, git over HTTP) while its data is kept; a deleted tenant is
suspended at once and purged after its grace period, its rows in every table, repositories and
uploads gone, every other tenant untouched, and its id never given to another tenant."""

from __future__ import annotations

import secrets

import pytest

from conftest import assert_json

SUSPENDED = {"message": "403 Forbidden - This instance has been suspended by its operator"}


def new_tenant(server, prefix: str) -> tuple[str, str, int]:
    """A tenant with a user, a project with a commit, an issue and an uploaded file; its host,
    root token and id."""
    host = f"{prefix}-{secrets.token_hex(3)}.example"
    server.cli("tenant", "create", "--host", host)
    token = server.create_token(user="root", name="t", scopes="api", tenant=host)
    assert server.wait_for(
        lambda: server.request("GET", "/user", token=token, host=host).status_code == 200,
        timeout=10)
    tenant_id = int(next(line.split("\t")[0] for line in server.cli("tenant", "list").stdout
                         .splitlines() if f"\t{host}\t" in line))
    project = assert_json(server.request("POST", "/projects", token=token, host=host,
                                         json={"name": "kept", "initialize_with_readme": True}), 201)
    assert_json(server.request("POST", f"/projects/{project['id']}/issues", token=token,
                               host=host, json={"title": "an issue"}), 201)
    assert_json(server.request("POST", "/users", token=token, host=host,
                               json={"username": "someone", "email": "someone@example.com",
                                     "name": "Someone", "password": "Secret-password-1",
                                     "skip_confirmation": True}), 201)
    r = server.request("POST", f"/projects/{project['id']}/uploads", token=token, host=host,
                       files={"file": ("notes.txt", b"kept here\n", "text/plain")})
    assert_json(r, 201)
    return host, token, tenant_id


def rows_of(server, tenant_id: int) -> dict[str, int]:
    tables = ["users", "projects", "issues", "personal_access_tokens", "application_settings",
              "namespaces"]
    return {t: int(server.sql(f"SELECT COUNT(*) FROM {t} WHERE tenant_id = {tenant_id}")[0][0])
            for t in tables}


def tenant_tables(server) -> list[str]:
    """Every table with a tenant_id column, read from the database's catalog."""
    if server.engine == "postgres":
        rows = server.sql("SELECT table_name FROM information_schema.columns "
                          "WHERE column_name = 'tenant_id' AND table_schema = current_schema()")
    else:
        rows = server.sql("SELECT m.name FROM sqlite_master m WHERE m.type = 'table' AND EXISTS "
                          "(SELECT 1 FROM pragma_table_info(m.name) p WHERE p.name = 'tenant_id')")
    return sorted(r[0] for r in rows)


def state_of(server, host: str) -> str:
    for line in server.cli("tenant", "list").stdout.splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and fields[1] == host:
            return fields[2]
    return "absent"


def test_a_suspended_tenant_is_refused_and_resumed_with_its_data(server):
    host, token, tenant_id = new_tenant(server, "paused")
    before = rows_of(server, tenant_id)
    out = server.cli("tenant", "suspend", "--host", host).stdout
    assert "suspended" in out
    assert state_of(server, host) == "suspended"
    assert server.wait_for(lambda: server.request("GET", "/user", token=token,
                                                  host=host).status_code == 403, timeout=10)
    assert_json(server.request("GET", "/projects", token=token, host=host), 403, SUSPENDED)
    assert_json(server.request("POST", "/projects", token=token, host=host,
                               json={"name": "refused"}), 403, SUSPENDED)
    r = server.request("GET", f"{server.url}/root/kept.git/info/refs", host=host,
                       params={"service": "git-upload-pack"})
    assert r.status_code == 403, r.text
    # monitoring is the process's, not the tenant's; the other tenants are served
    assert server.request("GET", "/-/readiness", host=host).status_code == 200
    assert server.request("GET", "/user", token=server.root_token).status_code == 200
    server.cli("tenant", "resume", "--host", host)
    assert server.wait_for(lambda: server.request("GET", "/user", token=token,
                                                  host=host).status_code == 200, timeout=10)
    assert state_of(server, host) == "active"
    assert rows_of(server, tenant_id) == before


def test_a_deletion_taken_back_within_its_grace_period_keeps_everything(server):
    host, token, tenant_id = new_tenant(server, "spared")
    before = rows_of(server, tenant_id)
    out = server.cli("tenant", "delete", "--host", host, "--grace-days", "7").stdout
    assert "will be deleted from" in out, out
    assert state_of(server, host).startswith("deletion due ")
    assert server.wait_for(lambda: server.request("GET", "/user", token=token,
                                                  host=host).status_code == 403, timeout=10)
    server.cli("tenant", "resume", "--host", host)
    assert server.wait_for(lambda: server.request("GET", "/user", token=token,
                                                  host=host).status_code == 200, timeout=10)
    assert rows_of(server, tenant_id) == before
    assert (server.data_dir / "repositories" / str(tenant_id)).is_dir()


def test_a_deleted_tenant_is_purged_and_no_other_tenant_is_touched(server):
    host, token, tenant_id = new_tenant(server, "gone")
    _, other_token, other_id = new_tenant(server, "neighbour")
    other_before = rows_of(server, other_id)
    default_before = rows_of(server, 1)
    assert all(count > 0 for count in rows_of(server, tenant_id).values())
    assert (server.data_dir / "uploads" / str(tenant_id)).is_dir()
    server.cli("tenant", "delete", "--host", host, "--grace-days", "0")
    assert server.wait_for(lambda: state_of(server, host) == "absent", timeout=60), \
        server.cli("tenant", "list").stdout
    assert rows_of(server, tenant_id) == {t: 0 for t in rows_of(server, tenant_id)}
    tables = tenant_tables(server)
    assert len(tables) > 40, tables
    left = {t: int(server.sql(f"SELECT COUNT(*) FROM {t} WHERE tenant_id = {tenant_id}")[0][0])
            for t in tables}
    assert {t: n for t, n in left.items() if n} == {}
    assert server.wait_for(
        lambda: not (server.data_dir / "repositories" / str(tenant_id)).exists()
        and not (server.data_dir / "uploads" / str(tenant_id)).exists(), timeout=10)
    assert rows_of(server, other_id) == other_before
    assert rows_of(server, 1) == default_before
    # the host is free again, now the default tenant's, and a new tenant on it gets a new id
    assert server.wait_for(lambda: server.request("GET", "/user", token=token,
                                                  host=host).status_code == 401, timeout=10)
    assert server.request("GET", "/user", token=other_token,
                          host=f"{host}").status_code == 401
    server.cli("tenant", "create", "--host", host)
    again = next(line for line in server.cli("tenant", "list").stdout.splitlines()
                 if f"\t{host}\t" in line)
    assert int(again.split("\t")[0]) > other_id
    # the job ends (its row marked done) just after its work
    assert server.wait_for(lambda: [(s, int(a)) for s, a in server.sql(
        "SELECT state, attempts FROM jobs WHERE kind = 'purge_tenant'")] == [("done", 1)],
        timeout=10)


@pytest.mark.parametrize("args", [
    ["suspend", "--host", "nobody.example"],
    ["delete", "--host", "nobody.example"],
    ["resume", "--host", "nobody.example"],
    ["suspend", "--host", ""],
])
def test_the_commands_refuse_unknown_tenants_and_the_default_one(server, args):
    proc = server.cli("tenant", *args, check=False)
    assert proc.returncode != 0
    assert server.request("GET", "/user", token=server.root_token).status_code == 200
