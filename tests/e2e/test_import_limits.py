"""Repository imports are bounded (issue 17, finding 6): a tarpit source fails the import with
GitLab's `import_status` "failed" and an `import_error` after `--import-timeout-seconds`; a
source larger than `--import-max-bytes` fails and leaves the project's repository empty; and
`--max-concurrent-imports` imports run at once, the rest staying "scheduled"."""

from __future__ import annotations

import secrets
import socket
import subprocess
import threading

import pytest

from conftest import LOOPBACK_RECEIVERS, TRELLIS_BIN, Server, assert_json, bare_repository, serve_git_daemon

MIB = 1024 * 1024


@pytest.fixture
def tarpit():
    """A TCP server on loopback that accepts connections and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
                held.append(conn)
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/stalled/repo.git"
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in held:
            conn.close()
        listener.close()


@pytest.fixture
def big_source(tmp_path):
    """`git daemon` on loopback serving a repository of 4 MiB of incompressible content."""
    bare_repository(tmp_path, "big", {"noise.bin": secrets.token_bytes(4 * MIB)})
    with serve_git_daemon(tmp_path / "served") as url:
        yield f"{url}/big.git"


def limited_server(make_server, **env) -> Server:
    server = make_server({**LOOPBACK_RECEIVERS, **env})
    assert_json(server.request("PUT", "/application/settings", token=server.root_token,
                               json={"allow_local_requests_from_web_hooks_and_services": True}), 200)
    return server


def start_import(server: Server, url: str) -> dict:
    r = server.request("POST", "/projects", token=server.root_token,
                       json={"name": "imp-" + secrets.token_hex(3), "import_url": url})
    created = assert_json(r, 201)
    assert created["import_status"] == "scheduled"
    return created


def status(server: Server, project_id: int) -> dict:
    return assert_json(server.request("GET", f"/projects/{project_id}", token=server.root_token), 200)


def wait_done(server: Server, project_id: int) -> dict:
    assert server.wait_for(lambda: status(server, project_id)["import_status"] in ("finished", "failed"),
                           timeout=60)
    return status(server, project_id)


def test_a_tarpit_import_fails_after_the_import_timeout(make_server, tarpit):
    server = limited_server(make_server, TRELLIS_IMPORT_TIMEOUT_SECONDS="2")
    project = wait_done(server, start_import(server, tarpit)["id"])
    assert project["import_status"] == "failed"
    assert project["import_error"] == "Import failed: it took longer than 2 seconds"
    assert tarpit not in project["import_error"]
    # The process serves on, and a later import still gets a slot.
    assert wait_done(server, start_import(server, tarpit)["id"])["import_status"] == "failed"


def repository_objects(server: Server, project_id: int) -> dict:
    repo = server.data_dir / "repositories" / "1" / f"{project_id}.git"
    out = subprocess.run(["git", "--git-dir", str(repo), "count-objects", "-v"],
                         capture_output=True, text=True, check=True).stdout
    counts = dict(line.split(": ") for line in out.strip().splitlines())
    leftovers = [p for p in (repo / "objects").rglob("*") if p.is_file() and "tmp" in p.name]
    return {"count": int(counts["count"]), "packs": int(counts["packs"]), "leftovers": leftovers}


def test_an_oversized_import_fails_and_leaves_no_repository_data(make_server, big_source):
    server = limited_server(make_server, TRELLIS_IMPORT_MAX_BYTES=str(MIB))
    project = wait_done(server, start_import(server, big_source)["id"])
    assert project["import_status"] == "failed"
    assert project["import_error"] == f"Import failed: the repository is larger than {MIB} bytes"
    assert project["empty_repo"] is True
    assert repository_objects(server, project["id"]) == {"count": 0, "packs": 0, "leftovers": []}
    # Within the limit the same source imports.
    roomy = limited_server(make_server, TRELLIS_IMPORT_MAX_BYTES=str(64 * MIB))
    imported = wait_done(roomy, start_import(roomy, big_source)["id"])
    assert imported["import_status"] == "finished", imported["import_error"]
    assert imported["empty_repo"] is False


def test_imports_beyond_the_concurrency_cap_stay_scheduled(make_server, tarpit):
    server = limited_server(make_server, TRELLIS_MAX_CONCURRENT_IMPORTS="1",
                            TRELLIS_IMPORT_TIMEOUT_SECONDS="3")
    first = start_import(server, tarpit)["id"]
    assert server.wait_for(lambda: status(server, first)["import_status"] == "started", timeout=30)
    second = start_import(server, tarpit)["id"]
    # The only slot is held by the stalled first import: the second waits for it.
    assert status(server, second)["import_status"] == "scheduled"
    assert server.wait_for(lambda: status(server, first)["import_status"] == "failed", timeout=30)
    assert wait_done(server, second)["import_status"] == "failed"
    assert status(server, second)["import_error"] == "Import failed: it took longer than 3 seconds"


@pytest.mark.parametrize("value", ["0x", "-1", "many"])
def test_a_malformed_concurrency_cap_stops_the_start(value):
    done = subprocess.run([TRELLIS_BIN, "serve", f"--max-concurrent-imports={value}"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode != 0
    assert "--max-concurrent-imports" in done.stderr
