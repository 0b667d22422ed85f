"""Three `trellis serve` processes on one PostgreSQL database and one shared data directory,
behind HAProxy (tests/cluster/haproxy.cfg, as tests/cluster/start runs them): what one process
writes another serves; rate limits count once; a revoked token, a changed setting and a plugin
swap reach every process at once; a webhook is delivered once; a rolling restart
under load fails no request; `kill -9` of a process during pushes loses no acknowledged push,
and an import its process died in finishes on another."""

from __future__ import annotations

import secrets
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest
import requests

from conftest import (
    LOOPBACK_RECEIVERS,
    ROOT,
    Server,
    _skip_unless_engine,
    assert_json,
    bare_repository,
    bind,
    built_in,
    free_port,
    require_program,
    run_git,
    serve_git_daemon,
    upload,
    user_with_token,
)

PROCESSES = 3
LEASE_SECONDS = 2
# Caches that would keep an old answer for ten minutes: what one process changes must reach
# the others through the announcements, not through expiry.
LONG_CACHES = {"TRELLIS_AUTH_CACHE_MS": "600000", "TRELLIS_SETTINGS_CACHE_SECONDS": "600"}
# A window within which "at once" must hold on every process.
AT_ONCE = 0.5


@pytest.fixture(scope="module")
def engine() -> str:
    _skip_unless_engine("postgres")
    return "postgres"


class Cluster:
    """The processes (`Server`s sharing the first one's database, data directory and keys)
    and HAProxy in front of them."""

    def __init__(self, make_server):
        require_program("haproxy", "haproxy")
        self.make_server = make_server
        self.secret_key = secrets.token_hex(32)
        self.processes: list[Server] = []
        first = self.start_process(None)
        self.root_token = first.root_token
        self.database_url = first.database_url
        self.data_dir = first.data_dir
        for _ in range(PROCESSES - 1):
            self.start_process(first)
        self.http_port, self.ssh_port = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.http_port}"
        self._dir = tempfile.TemporaryDirectory(prefix="trellis-haproxy-")
        self.haproxy: subprocess.Popen | None = None
        self.start_haproxy()

    def start_process(self, first: Server | None) -> Server:
        env = {**LOOPBACK_RECEIVERS, **LONG_CACHES, "TRELLIS_SECRET_KEY": self.secret_key,
               "TRELLIS_SHUTDOWN_BLACKOUT_SECONDS": "2",
               "TRELLIS_JOB_LEASE_SECONDS": str(LEASE_SECONDS),
               "TRELLIS_TRUSTED_PROXIES": "127.0.0.1/32",
               "TRELLIS_SSH_LISTEN": f"127.0.0.1:{free_port()}"}
        if first is not None:
            env.update({"TRELLIS_DATABASE_URL": first.database_url,
                        "TRELLIS_DATA_DIR": str(first.data_dir),
                        "TRELLIS_INITIAL_ROOT_TOKEN": first.root_token})
        server = self.make_server(env)
        if first is not None:
            # what the environment chose over the server's own (unused) database and keys
            server.root_token = first.root_token
            server.database_url = first.database_url
        self.processes.append(server)
        return server

    def start_haproxy(self):
        def ssh_port_of(server: Server) -> str:
            return server.env["TRELLIS_SSH_LISTEN"].rsplit(":", 1)[1]
        http = "".join(f"    server t{i} 127.0.0.1:{p.port} check\n"
                       for i, p in enumerate(self.processes))
        ssh = "".join(f"    server s{i} 127.0.0.1:{ssh_port_of(p)} check port {p.port}\n"
                      for i, p in enumerate(self.processes))
        config = (ROOT / "tests" / "cluster" / "haproxy.cfg").read_text()
        config = (config.replace("@HTTP_PORT@", str(self.http_port))
                  .replace("@SSH_PORT@", str(self.ssh_port))
                  .replace("@HTTP_SERVERS@", http).replace("@SSH_SERVERS@", ssh))
        path = Path(self._dir.name) / "haproxy.cfg"
        path.write_text(config)
        self.haproxy = subprocess.Popen(["haproxy", "-f", str(path), "-db"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if requests.get(self.url + "/-/readiness", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise RuntimeError("HAProxy never served the cluster")

    def api(self, method: str, path: str, **kw) -> requests.Response:
        headers = {"PRIVATE-TOKEN": kw.pop("token", self.root_token), **kw.pop("headers", {})}
        return requests.request(method, self.url + "/api/v4" + path, headers=headers,
                                timeout=60, **kw)

    def wait_in_rotation(self, server: Server):
        """Until HAProxy sends requests to `server` again (it needs two good checks)."""
        time.sleep(1.5)
        assert server.wait_for(lambda: server.request("GET", "/-/readiness").status_code == 200)

    def close(self):
        if self.haproxy is not None:
            self.haproxy.terminate()
            self.haproxy.wait(timeout=10)
        self._dir.cleanup()


@pytest.fixture(scope="module")
def cluster(make_server):
    cluster = Cluster(make_server)
    yield cluster
    cluster.close()


def new_project(cluster: Cluster, prefix: str, **extra) -> dict:
    return assert_json(cluster.api("POST", "/projects", json={
        "name": f"{prefix}-{secrets.token_hex(3)}", **extra}), 201)


def refs(home: Path, url: str) -> str:
    return run_git(home, "ls-remote", url).stdout


def test_a_push_through_one_process_is_cloned_through_another_and_the_balancer(cluster, tmp_path):
    project = new_project(cluster, "shared")
    a, b = cluster.processes[0], cluster.processes[1]
    auth = f"root:{cluster.root_token}@"
    path = project["path_with_namespace"]
    work = tmp_path / "work"
    run_git(tmp_path, "init", "-q", "-b", "main", str(work))
    (work / "README.md").write_text("pushed through one process\n")
    run_git(tmp_path, "add", ".", cwd=work)
    run_git(tmp_path, "commit", "-qm", "first", cwd=work)
    run_git(tmp_path, "push", "-q", f"http://{auth}127.0.0.1:{a.port}/{path}.git", "main", cwd=work)
    seen_by_b = refs(tmp_path, f"http://{auth}127.0.0.1:{b.port}/{path}.git")
    seen_by_proxy = refs(tmp_path, f"http://{auth}127.0.0.1:{cluster.http_port}/{path}.git")
    head = run_git(tmp_path, "rev-parse", "HEAD", cwd=work).stdout.strip()
    assert f"{head}\trefs/heads/main" in seen_by_b
    assert seen_by_b == seen_by_proxy
    clone = tmp_path / "clone"
    run_git(tmp_path, "clone", "-q", f"http://{auth}127.0.0.1:{cluster.http_port}/{path}.git",
            str(clone))
    assert (clone / "README.md").read_text() == "pushed through one process\n"


def test_git_over_ssh_through_the_balancer(cluster, tmp_path):
    require_program("ssh-keygen", "openssh-client")
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    assert_json(cluster.api("POST", "/user/keys", json={
        "title": "cluster", "key": key.with_suffix(".pub").read_text()}), 201)
    project = new_project(cluster, "ssh", initialize_with_readme=True)
    command = (f"ssh -p {cluster.ssh_port} -i {key} -F /dev/null -o IdentitiesOnly=yes "
               "-o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
               "-o LogLevel=ERROR")
    env = {"PATH": subprocess.os.environ["PATH"], "HOME": str(tmp_path),
           "GIT_SSH_COMMAND": command}
    # Every process presents the same host key (it is in the shared data directory), so the
    # balancer may send each connection anywhere.
    for _ in range(PROCESSES):
        listed = subprocess.run(
            ["git", "ls-remote", f"ssh://git@127.0.0.1:{cluster.ssh_port}/"
             f"{project['path_with_namespace']}.git"],
            env=env, capture_output=True, text=True, timeout=60)
        assert listed.returncode == 0, listed.stderr
        assert "refs/heads/main" in listed.stdout


def test_rate_limits_count_once_across_the_processes(cluster):
    r = cluster.api("PUT", "/application/settings", json={
        "throttle_authenticated_api_enabled": True,
        "throttle_authenticated_api_requests_per_period": 30,
        "throttle_authenticated_api_period_in_seconds": 3600})
    assert_json(r, 200)
    try:
        user = assert_json(cluster.api("POST", "/users", json={
            "username": "rl" + secrets.token_hex(3), "email": f"rl{secrets.token_hex(3)}@e.com",
            "name": "RL", "password": "Secret-password-1", "skip_confirmation": True}), 201)
        token = assert_json(cluster.api("POST", f"/users/{user['id']}/personal_access_tokens",
                                        json={"name": "rl", "scopes": ["api"]}), 201)["token"]
        statuses = []
        for i in range(45):
            target = cluster.processes[i % PROCESSES]
            statuses.append(target.request("GET", "/user", token=token).status_code)
        # 30 in all, wherever they went (an hour's window: no reset within the test)
        assert statuses.count(200) == 30, statuses
        assert set(statuses[30:]) == {429}, statuses
    finally:
        cluster.api("PUT", "/application/settings",
                    json={"throttle_authenticated_api_enabled": False})


def on_every_process(cluster: Cluster, check) -> bool:
    """Whether `check(process)` holds on every process within AT_ONCE."""
    deadline = time.monotonic() + AT_ONCE
    while True:
        if all(check(process) for process in cluster.processes):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


def test_a_revoked_token_a_changed_setting_and_a_plugin_swap_reach_every_process(cluster,
                                                                                  keyword_wasm):
    root = cluster.root_token
    first, second = cluster.processes[0], cluster.processes[1]

    # A token every process has cached is revoked through one of them.
    user, token = user_with_token(first)
    for _ in range(2):
        assert all(p.request("GET", "/user", token=token).status_code == 200
                   for p in cluster.processes)
    tokens = assert_json(first.request("GET", "/personal_access_tokens", token=token), 200)
    r = second.request("DELETE", f"/personal_access_tokens/{tokens[0]['id']}", token=root)
    assert r.status_code == 204, r.text
    assert on_every_process(
        cluster, lambda p: p.request("GET", "/user", token=token).status_code == 401)

    # A setting every process has cached is changed through the balancer.
    def prefix_on(process) -> str:
        return process.create_token_api(token=root)["token"].split("-")[0] + "-"

    assert {prefix_on(p) for p in cluster.processes} == {"glpat-"}
    assert_json(cluster.api("PUT", "/application/settings",
                            json={"personal_access_token_prefix": "swift-"}), 200)
    try:
        assert on_every_process(cluster, lambda p: prefix_on(p) == "swift-")
    finally:
        assert_json(cluster.api("PUT", "/application/settings",
                                json={"personal_access_token_prefix": "glpat-"}), 200)

    # The spam check's plugin is bound, then swapped for an uploaded one (asked about the
    # revoked token's user: administrators are not checked for spam).
    def verdict_on(process, title: str) -> tuple[str, str] | None:
        r = process.request("POST", "/application/plugin_hooks/spam_check/test", token=root,
                            json={"title": title, "user_id": user["id"]})
        return (r.json()["plugin"], r.json()["verdict"]) if r.status_code == 200 else None

    plugin = built_in(first)
    swapped_in = assert_json(upload(first, keyword_wasm, name="keyword-spam-filter.wasm"), 201)
    try:
        assert_json(bind(first, plugin_id=plugin["id"], config={"blocked_words": ["casino"]}),
                    200)
        built_in_name = f"{plugin['name']}@{plugin['version']}"
        assert on_every_process(
            cluster, lambda p: verdict_on(p, "cheap casino") == (built_in_name, "disallow")), \
            [verdict_on(p, "cheap casino") for p in cluster.processes]
        assert_json(bind(second, plugin_id=swapped_in["id"],
                         config={"keywords": ["poker"], "verdict": "disallow"}), 200)
        # An uploaded plugin without a version is named `<name>@unversioned`.
        keyword_name = f"{swapped_in['name']}@{swapped_in['version'] or 'unversioned'}"
        assert on_every_process(
            cluster, lambda p: verdict_on(p, "cheap poker") == (keyword_name, "disallow")
            and verdict_on(p, "cheap casino")[1] != "disallow"), \
            [verdict_on(p, "cheap poker") for p in cluster.processes]
    finally:
        r = cluster.api("DELETE", "/application/plugin_hooks/spam_check")
        assert r.status_code == 204, r.text
    assert on_every_process(cluster, lambda p: verdict_on(p, "cheap poker") is None)


def test_a_webhook_is_delivered_once(cluster, receiver):
    project = new_project(cluster, "hooked")
    assert_json(cluster.api("PUT", "/application/settings", json={
        "allow_local_requests_from_web_hooks_and_services": True}), 200)
    assert_json(cluster.api("POST", f"/projects/{project['id']}/hooks", json={
        "url": receiver.url, "issues_events": True, "push_events": False}), 201)
    for i in range(5):
        assert_json(cluster.api("POST", f"/projects/{project['id']}/issues",
                                json={"title": f"issue {i}"}), 201)
    receiver.wait(5, event="Issue Hook", timeout=60)
    time.sleep(3)  # a second delivery, if any process were to make one, would be here by now
    titles = sorted(r["json"]["object_attributes"]["title"]
                    for r in receiver.requests("Issue Hook"))
    assert titles == [f"issue {i}" for i in range(5)]


def test_a_rolling_restart_under_load_fails_no_request(cluster):
    project = new_project(cluster, "rolling")
    stop = threading.Event()
    outcomes: list[tuple[str, int | str]] = []
    lock = threading.Lock()

    def load(kind: str):
        session = requests.Session()
        session.headers["PRIVATE-TOKEN"] = cluster.root_token
        n = 0
        while not stop.is_set():
            n += 1
            try:
                if kind == "read":
                    r = session.get(f"{cluster.url}/api/v4/projects/{project['id']}", timeout=60)
                else:
                    r = session.post(f"{cluster.url}/api/v4/projects/{project['id']}/issues",
                                     json={"title": f"{kind} {n}"}, timeout=60)
                result: int | str = r.status_code
            except requests.RequestException as error:
                result = type(error).__name__
            with lock:
                outcomes.append((kind, result))

    threads = [threading.Thread(target=load, args=(kind,), daemon=True)
               for kind in ("read", "read", "write")]
    for thread in threads:
        thread.start()
    try:
        for server in cluster.processes:
            time.sleep(1)
            server.proc.send_signal(signal.SIGTERM)
            assert server.proc.wait(timeout=60) == 0, server.stderr_text()[-2000:]
            assert "response failed" not in server.stderr_text()
            server.start()
            cluster.wait_in_rotation(server)
        time.sleep(1)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    failed = [o for o in outcomes if o[1] not in (200, 201)]
    assert len(outcomes) > 100, len(outcomes)
    assert failed == [], (failed[:20], len(outcomes))
    print(f"{len(outcomes)} requests through three restarts, none failed")


def test_kill_9_during_pushes_loses_no_acknowledged_push(cluster, tmp_path):
    project = new_project(cluster, "pushes")
    url = f"http://root:{cluster.root_token}@127.0.0.1:{cluster.http_port}/" \
          f"{project['path_with_namespace']}.git"
    work = tmp_path / "work"
    run_git(tmp_path, "init", "-q", "-b", "main", str(work))
    acknowledged: list[str] = []
    victim = cluster.processes[1]

    def push_loop():
        # one push after another, so the kill below lands while one is in flight
        for i in range(30):
            (work / "file.txt").write_text(f"version {i}\n")
            run_git(tmp_path, "add", ".", cwd=work)
            run_git(tmp_path, "commit", "-qm", f"commit {i}", cwd=work)
            pushed = run_git(tmp_path, "push", "-q", url, "main", cwd=work, check=False)
            if pushed.returncode == 0:
                acknowledged.append(run_git(tmp_path, "rev-parse", "HEAD", cwd=work).stdout.strip())

    pusher = threading.Thread(target=push_loop, daemon=True)
    pusher.start()
    deadline = time.monotonic() + 60
    while len(acknowledged) < 10 and time.monotonic() < deadline:
        time.sleep(0.01)
    victim.proc.kill()  # SIGKILL: no graceful anything
    victim.proc.wait(timeout=10)
    pusher.join(timeout=120)
    assert not pusher.is_alive()
    # a push the kill broke may fail; the others went to the two processes left
    assert len(acknowledged) >= 25, len(acknowledged)
    remote = refs(tmp_path, url)
    tip = acknowledged[-1]
    assert f"{tip}\trefs/heads/main" in remote
    # every acknowledged commit is in the repository's history
    clone = tmp_path / "clone"
    run_git(tmp_path, "clone", "-q", url, str(clone))
    history = set(run_git(tmp_path, "rev-list", "main", cwd=clone).stdout.split())
    assert set(acknowledged) <= history
    victim.start()
    cluster.wait_in_rotation(victim)


def test_an_import_whose_process_is_killed_finishes_on_another(cluster, tmp_path):
    from test_jobs import gated
    bare_repository(tmp_path, "src", {"README.md": b"imported\n"})
    with serve_git_daemon(tmp_path / "served") as daemon_url:
        upstream_port = int(daemon_url.rsplit(":", 1)[1])
        with gated(upstream_port) as (gate_port, opened):
            first = cluster.processes[0]
            created = assert_json(first.request("POST", "/projects", token=cluster.root_token,
                                                json={"name": "imp-" + secrets.token_hex(3),
                                                      "import_url": f"git://127.0.0.1:{gate_port}/src.git"}), 201)

            def status(via: Server):
                r = via.request("GET", f"/projects/{created['id']}", token=cluster.root_token)
                return assert_json(r, 200)["import_status"]

            # the job may start on any process: kill whichever holds it
            assert first.wait_for(lambda: status(first) == "started", timeout=30)
            holder = first.sql(
                "SELECT locked_by FROM jobs WHERE kind = 'fetch' AND state = 'queued'")[0][0]
            pid = int(holder.split("-")[-2])
            victim = next(p for p in cluster.processes if p.proc.pid == pid)
            victim.proc.kill()
            victim.proc.wait(timeout=10)
            opened.set()
            survivor = next(p for p in cluster.processes if p is not victim)
            assert survivor.wait_for(lambda: status(survivor) in ("finished", "failed"),
                                     timeout=60)
            assert status(survivor) == "finished"
            # taken over once (`sql` reads the database directly, whichever process died)
            attempts = first.sql("SELECT attempts FROM jobs WHERE kind = 'fetch'")
            assert [int(a) for (a,) in attempts] == [2]
            victim.start()
            cluster.wait_in_rotation(victim)


def test_kill_9_during_a_delivery_storm_loses_and_doubles_no_delivery(cluster, receiver):
    """Deliveries are leased rows: one whose process died mid-send is sent again by another
    process after its lease, with the same `Idempotency-Key`, so a receiver sees every event,
    and at most once per key."""
    project = new_project(cluster, "storm")
    assert_json(cluster.api("PUT", "/application/settings", json={
        "allow_local_requests_from_web_hooks_and_services": True}), 200)
    assert_json(cluster.api("POST", f"/projects/{project['id']}/hooks", json={
        "url": receiver.url, "issues_events": True, "push_events": False}), 201)
    receiver.delay = 0.05  # deliveries in flight when the process dies
    victim = cluster.processes[2]
    titles = [f"storm {i}" for i in range(40)]
    for i, title in enumerate(titles):
        assert_json(cluster.api("POST", f"/projects/{project['id']}/issues",
                                json={"title": title}), 201)
        if i == 20:
            victim.proc.kill()
            victim.proc.wait(timeout=10)
    receiver.wait(len(titles), event="Issue Hook", timeout=120)
    time.sleep(LEASE_SECONDS + 3)
    received = receiver.requests("Issue Hook")
    by_key: dict[str, set[str]] = {}
    for request in received:
        by_key.setdefault(request["headers"]["idempotency-key"], set()).add(
            request["json"]["object_attributes"]["title"])
    # every event delivered; a repeat (a send the dead process had made) carries its key
    assert sorted(t for ts in by_key.values() for t in ts) == sorted(titles)
    assert all(len(ts) == 1 for ts in by_key.values())
    print(f"{len(received)} requests for {len(titles)} events")
    victim.start()
    cluster.wait_in_rotation(victim)
