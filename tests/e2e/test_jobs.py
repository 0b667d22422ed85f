"""The job queue: background work (imports, fork copies, housekeeping) outlives the process that
took the request. A process killed with `kill -9` in the middle of an import leaves the job
leased; once the lease runs out (`--job-lease-seconds`), the next process takes it over and the
import finishes. Each job runs once per request, and what it did is recorded on its row."""

from __future__ import annotations

import contextlib
import secrets
import socket
import threading

import pytest

from conftest import LOOPBACK_RECEIVERS, Server, assert_json, bare_repository, serve_git_daemon


@contextlib.contextmanager
def gated(upstream_port: int):
    """A TCP proxy on loopback that holds every connection until `open` is set, then relays it
    to `upstream_port`: a source that stalls an import for as long as the test likes."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    opened = threading.Event()
    stop = threading.Event()
    conns: list[socket.socket] = []

    def pipe(src: socket.socket, dst: socket.socket):
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)

    def relay(client: socket.socket):
        while not opened.wait(0.1):
            if stop.is_set():
                return
        upstream = socket.create_connection(("127.0.0.1", upstream_port))
        conns.append(upstream)
        threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()
        pipe(client, upstream)

    def accept():
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                continue
            conns.append(client)
            threading.Thread(target=relay, args=(client,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield listener.getsockname()[1], opened
    finally:
        stop.set()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.close()
        listener.close()


@pytest.fixture
def source(tmp_path):
    """`git daemon` serving a small repository with one commit on `main`."""
    bare_repository(tmp_path, "src", {"README.md": b"imported\n"})
    with serve_git_daemon(tmp_path / "served") as url:
        yield url


def allow_loopback(server: Server):
    assert_json(server.request("PUT", "/application/settings", token=server.root_token,
                               json={"allow_local_requests_from_web_hooks_and_services": True}), 200)


def project(server: Server, project_id: int) -> dict:
    return assert_json(server.request("GET", f"/projects/{project_id}", token=server.root_token), 200)


def jobs_of(server: Server, kind: str) -> list[tuple]:
    return server.sql(f"SELECT state, attempts, args FROM jobs WHERE kind = '{kind}' ORDER BY id")


def test_an_import_whose_process_is_killed_finishes_in_the_next_one(make_server, source):
    server = make_server({**LOOPBACK_RECEIVERS, "TRELLIS_JOB_LEASE_SECONDS": "2"})
    allow_loopback(server)
    upstream_port = int(source.rsplit(":", 1)[1])
    with gated(upstream_port) as (gate_port, opened):
        url = f"git://127.0.0.1:{gate_port}/src.git"
        created = assert_json(server.request("POST", "/projects", token=server.root_token,
                                             json={"name": "imp-" + secrets.token_hex(3),
                                                   "import_url": url}), 201)
        assert created["import_status"] == "scheduled"
        assert server.wait_for(lambda: project(server, created["id"])["import_status"] == "started",
                               timeout=30)
        server.proc.kill()  # SIGKILL: the import's process dies holding the job's lease
        server.proc.wait(timeout=10)
        [(state, attempts, _)] = jobs_of(server, "fetch")
        assert (state, int(attempts)) == ("queued", 1)
        opened.set()
        server.start()
        assert server.wait_for(
            lambda: project(server, created["id"])["import_status"] in ("finished", "failed"),
            timeout=60)
    imported = project(server, created["id"])
    assert imported["import_status"] == "finished", imported["import_error"]
    assert imported["empty_repo"] is False
    # One job, taken over once; ended, its arguments (the URL, which may hold credentials)
    # are cleared.
    [(state, attempts, args)] = jobs_of(server, "fetch")
    assert (state, int(attempts), args) == ("done", 2, "{}")


def test_housekeeping_and_fork_copies_run_as_jobs(make_server, source):
    server = make_server(LOOPBACK_RECEIVERS)
    allow_loopback(server)
    token = server.root_token
    created = assert_json(server.request("POST", "/projects", token=token,
                                         json={"name": "src-" + secrets.token_hex(3),
                                               "import_url": f"{source}/src.git"}), 201)
    assert server.wait_for(lambda: project(server, created["id"])["import_status"] == "finished",
                           timeout=60)
    assert_json(server.request("POST", f"/projects/{created['id']}/housekeeping", token=token), 201)
    fork = assert_json(server.request("POST", f"/projects/{created['id']}/fork", token=token,
                                      json={"path": "fork-" + secrets.token_hex(3),
                                            "name": "fork"}), 201)
    assert server.wait_for(lambda: project(server, fork["id"])["import_status"] == "finished",
                           timeout=60)
    assert project(server, fork["id"])["empty_repo"] is False
    assert server.wait_for(lambda: [s for s, _, _ in jobs_of(server, "housekeeping")] == ["done"],
                           timeout=60)
    assert [s for s, _, _ in jobs_of(server, "fork_copy")] == ["done"]


def test_a_job_this_version_cannot_read_fails_at_once(make_server):
    server = make_server()
    server.sql("INSERT INTO jobs (tenant_id, id, kind, unique_key, args, max_attempts, run_at, created_at) "
               "VALUES (1, 1000, 'fetch', 'x', '{\"kind\":\"from_a_later_version\"}', 5, 0, 0)")

    def state():
        return server.sql("SELECT state, attempts, last_error FROM jobs WHERE id = 1000")[0]

    assert server.wait_for(lambda: state()[0] != "queued", timeout=30)
    status, attempts, error = state()
    # No retry can read it better: one attempt, failed for good.
    assert (status, int(attempts)) == ("failed", 1)
    assert error.startswith("unreadable job arguments"), error


def repository_of(server: Server, project_id: int):
    return server.data_dir / "repositories" / "1" / f"{project_id}.git"


def test_projects_past_their_deletion_period_are_deleted_by_a_job(make_server):
    server = make_server()
    root = server.root_token
    assert_json(server.request("PUT", "/application/settings", token=root,
                               json={"delayed_project_deletion": True,
                                     "deletion_adjourned_period": 1}), 200)
    created = [assert_json(server.request("POST", "/projects", token=root,
                                          json={"name": f"doomed-{i}-" + secrets.token_hex(3),
                                                "initialize_with_readme": True}), 201)
               for i in range(2)]
    doomed, spared = (p["id"] for p in created)
    for project_id in (doomed, spared):
        assert_json(server.request("DELETE", f"/projects/{project_id}", token=root), 202)
    # Only the first mark is older than the one-day period; the sweep runs when a process
    # starts and every minute after.
    server.sql(f"UPDATE projects SET marked_for_deletion_at = 1000 WHERE id = {doomed}")
    server.stop()
    server.start()
    assert server.wait_for(lambda: server.request("GET", f"/projects/{doomed}",
                                                  token=root).status_code == 404, timeout=30)
    assert server.wait_for(lambda: not repository_of(server, doomed).exists(), timeout=10)
    # the job ends (its row marked done) just after its work
    assert server.wait_for(lambda: [(s, int(a)) for s, a, _ in jobs_of(
        server, "purge_marked_project")] == [("done", 1)], timeout=10), \
        jobs_of(server, "purge_marked_project")
    assert project(server, spared)["marked_for_deletion_on"] is not None
    assert repository_of(server, spared).is_dir()


def test_a_deletion_interrupted_after_its_row_went_removes_the_files_when_run_again(make_server):
    """What a process that died between deleting a marked project's row and its repository
    leaves behind: the job, run again, removes the files."""
    server = make_server()
    created = assert_json(server.request("POST", "/projects", token=server.root_token,
                                         json={"name": "half-" + secrets.token_hex(3),
                                               "initialize_with_readme": True}), 201)
    project_id = created["id"]
    assert repository_of(server, project_id).is_dir()
    server.stop()
    server.sql(f"DELETE FROM projects WHERE id = {project_id}")
    server.sql("INSERT INTO jobs (tenant_id, id, kind, unique_key, args, max_attempts, run_at, "
               f"created_at) VALUES (1, 2000, 'purge_marked_project', '{project_id}', "
               f"'{{\"kind\":\"purge_marked_project\",\"project_id\":{project_id}}}', 5, 0, 0)")
    server.start()
    assert server.wait_for(lambda: not repository_of(server, project_id).exists(), timeout=30)
    assert server.wait_for(
        lambda: server.sql("SELECT state FROM jobs WHERE id = 2000")[0][0] == "done", timeout=10)
