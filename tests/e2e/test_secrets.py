"""Token plaintexts never reach the database or the logs."""

import re
import sqlite3
import subprocess

import pytest

from conftest import PG_URL, assert_json, random_token

HEX64 = re.compile(r"^[0-9a-f]{64}$")


def make_secrets(server) -> list[str]:
    """Creates tokens in every supported way, uses them, revokes one; returns the plaintexts."""
    tokens = [server.root_token]
    tokens.append(server.create_token_api(name="json", scopes=["api"])["token"])
    r = server.request("POST", "/users/1/personal_access_tokens", token=server.root_token,
                       data={"name": "form", "scopes[]": ["api", "read_user"]})
    tokens.append(assert_json(r, 201)["token"])
    r = server.request("POST", "/users/1/personal_access_tokens", token=server.root_token,
                       params={"name": "query", "scopes": "read_api"})
    tokens.append(assert_json(r, 201)["token"])
    tokens.append(server.create_token(name="cli", scopes="api,sudo"))
    tokens.append(server.create_token(name="cli-expired", scopes="api", expires_at="2020-01-01"))
    for t in tokens:
        server.request("GET", "/user", token=t)
        server.request("GET", "/user", params={"access_token": t})
        server.request("GET", "/personal_access_tokens", params={"private_token": t})
        server.request("GET", "/user", headers={"Authorization": f"Bearer {t}"})
    revoked = server.create_token_api(name="revoked", scopes=["api"])
    tokens.append(revoked["token"])
    assert server.request("DELETE", "/personal_access_tokens/self",
                          token=revoked["token"]).status_code == 204
    server.request("GET", "/user", params={"access_token": revoked["token"]})
    return tokens


def needles(tokens):
    """Each plaintext and its random part (without the glpat- prefix), as bytes."""
    out = []
    for t in tokens:
        out.append(t.encode())
        out.append(t.removeprefix("glpat-").encode())
    return out


def assert_absent(blob: bytes, tokens, where: str):
    for needle in needles(tokens):
        assert needle not in blob, f"token plaintext {needle!r} found in {where}"


def data_dir_bytes(server) -> dict[str, bytes]:
    files = {}
    for path in server.data_dir.rglob("*"):
        if path.is_file():
            files[path.name] = path.read_bytes()
    return files


# ---- SQLite --------------------------------------------------------------


def sqlite_only(engine):
    if engine != "sqlite":
        pytest.skip("SQLite-specific check")


def postgres_only(engine):
    if engine != "postgres":
        pytest.skip("PostgreSQL-specific check")


def test_sqlite_files_hold_no_plaintext(engine, server):
    sqlite_only(engine)
    tokens = make_secrets(server)
    files = data_dir_bytes(server)
    assert "trellis.db" in files, list(files)
    for name, blob in files.items():
        assert_absent(blob, tokens, name)
    assert server.request("GET", "/user", token=tokens[1]).status_code == 200


def test_sqlite_files_hold_no_plaintext_after_shutdown(engine, make_server):
    sqlite_only(engine)
    srv = make_server()
    tokens = make_secrets(srv)
    srv.stop()
    files = data_dir_bytes(srv)
    assert "trellis.db" in files
    for name, blob in files.items():
        assert_absent(blob, tokens, name)


def test_sqlite_digests_are_hex(engine, server):
    sqlite_only(engine)
    server.create_token_api(name="digest-check", scopes=["api"])
    conn = sqlite3.connect(f"file:{server.data_dir / 'trellis.db'}?mode=ro", uri=True)
    try:
        digests = [row[0] for row in conn.execute("SELECT token_digest FROM personal_access_tokens")]
    finally:
        conn.close()
    assert len(digests) >= 2
    assert all(HEX64.match(d) for d in digests), digests
    assert len(set(digests)) == len(digests)


# ---- PostgreSQL ----------------------------------------------------------


def test_postgres_digests_are_hex(engine, server):
    postgres_only(engine)
    tokens = make_secrets(server)
    out = subprocess.run(
        ["psql", server.database_url, "-v", "ON_ERROR_STOP=1", "-At", "-c",
         "SELECT token_digest FROM personal_access_tokens"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout
    digests = [l for l in out.splitlines() if l.strip()]
    assert len(digests) >= len(tokens)
    assert all(HEX64.match(d) for d in digests), digests
    assert len(set(digests)) == len(digests)
    assert_absent(out.encode(), tokens, "token_digest column")


def test_postgres_dump_holds_no_plaintext(engine, server):
    postgres_only(engine)
    tokens = make_secrets(server)
    dump = subprocess.run(["pg_dump", server.database_url], capture_output=True, timeout=120,
                          check=True).stdout
    assert b"personal_access_tokens" in dump
    assert_absent(dump, tokens, "pg_dump output")


# ---- logs ----------------------------------------------------------------


@pytest.fixture(scope="module")
def debug_server(make_server):
    return make_server({"TRELLIS_LOG": "debug"})


def test_debug_logs_hold_no_plaintext(debug_server):
    srv = debug_server
    tokens = make_secrets(srv)
    unknown = random_token()
    tokens.append(unknown)
    srv.request("GET", "/user", params={"access_token": unknown})
    srv.request("GET", "/user", headers={"PRIVATE-TOKEN": unknown})
    srv.request("GET", "/nonexistent", params={"access_token": srv.root_token})
    srv.request("PUT", "/user", params={"private_token": srv.root_token})
    srv.request("GET", "/personal_access_tokens",
                params={"access_token": srv.root_token, "per_page": 1, "page": 2})
    srv.request("GET", "/user", params={"access_token": srv.root_token, "sudo": "nobody"})
    srv.request("POST", "/users/1/personal_access_tokens", data=b"{bad json",
                headers={"Content-Type": "application/json", "PRIVATE-TOKEN": srv.root_token})
    cli = srv.cli("token", "create", "--user", "root", "--name", "cli-log", "--scopes", "api")
    cli_token = cli.stdout.strip().splitlines()[-1]
    tokens.append(cli_token)
    assert_absent(cli.stderr.encode(), tokens, "CLI stderr")
    srv.request("GET", "/user", params={"access_token": cli_token})
    srv.stop()
    stderr = srv.stderr_path.read_bytes()
    assert stderr.strip(), "expected debug output on stderr"
    assert_absent(stderr, tokens, "server stderr")
    assert_absent(srv.stdout_path.read_bytes(), tokens, "server stdout")


def test_default_server_logs_hold_no_plaintext(server):
    tokens = make_secrets(server)
    assert_absent(server.stderr_path.read_bytes(), tokens, "server stderr")
    assert_absent(server.stdout_path.read_bytes(), tokens, "server stdout")
