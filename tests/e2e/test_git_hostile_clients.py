"""Git's transports under hostile callers: what one caller can hold, and for how long, and what
a push may write.

- SSH signs the key in again on every command (a real OpenSSH ControlMaster connection kept
  open while the user is demoted, blocked and their key removed), caps channels per
  connection, connections not yet signed in (per address) and their time to sign in.
- HTTP closes a client that does not send its request head in time, and caps connections per
  address.
- A stalled clone or push is stopped once idle; one address cannot hold every fetch slot of a
  tenant; pushes have per-user slots; the archive endpoint takes a fetch slot.
- Git's children see none of the server's secrets.
- The `info/refs` redirect never points at another site.
- Pushes are checked with fsck, and may not create the ref names the API refuses nor write
  the server's hidden refs.
- Failed git Basic authentications ban their address, as GitLab's Rack::Attack does.

Addresses: the servers trust loopback as a proxy where a test needs several clients, and
name each client with `X-Forwarded-For`; raw sockets bind other loopback addresses
(127.0.0.x) where a cap counts the connection's own address.
"""

from __future__ import annotations

import http.client
import os
import secrets
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import requests

from conftest import assert_json, free_port, git_url, make_user, require_program, run_git
from test_git_ssh import Ssh, add_key, new_key

NOT_FOUND = ("The project you were looking for could not be found or you don't have "
             "permission to view it.")
TOO_MANY = ("Too many clones and fetches of this instance's repositories are running; "
            "try again later.")
TOO_MANY_PUSHES = "Too many pushes to this instance's repositories are running; try again later."

# Small limits, so that each one is reached and released within a test.
LIMITS = {
    "TRELLIS_MAX_UPLOAD_PACKS_PER_TENANT": "2",
    "TRELLIS_UPLOAD_PACK_QUEUE_SECONDS": "3",
    "TRELLIS_GIT_IDLE_TIMEOUT_SECONDS": "4",
    "TRELLIS_MAX_PUSHES_PER_USER": "1",
    "TRELLIS_TRUSTED_PROXIES": "127.0.0.0/8",
}


@pytest.fixture(scope="module", autouse=True)
def _programs():
    require_program("git", "git")
    require_program("ssh", "openssh-client")


@pytest.fixture(scope="module")
def home():
    with tempfile.TemporaryDirectory(prefix="trellis-hostile-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def server(make_server):
    return make_server(LIMITS)


@pytest.fixture(scope="module")
def public_project(server):
    r = server.request("POST", "/projects", token=server.root_token,
                       json={"name": "pub" + secrets.token_hex(3), "visibility": "public",
                             "initialize_with_readme": True})
    return assert_json(r, 201)


def connect(server, source: str = "127.0.0.1", port: int | None = None) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((source, 0))
    sock.settimeout(30)
    sock.connect(("127.0.0.1", port or server.port))
    return sock


def stalled_rpc(server, path: str, service: str, client: str, auth: str | None = None,
                source: str = "127.0.0.1") -> socket.socket:
    """A git RPC POST that announces a body it never finishes sending."""
    sock = connect(server, source)
    head = (f"POST /{path}.git/{service} HTTP/1.1\r\nHost: {server.host}\r\n"
            f"Content-Type: application/x-{service}-request\r\nContent-Length: 100000\r\n"
            f"X-Forwarded-For: {client}\r\n")
    if auth:
        head += f"Authorization: Basic {auth}\r\n"
    # The start of a packet: git waits for the rest of it.
    sock.sendall(head.encode() + b"\r\n0032want")
    return sock


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the server ends the connection (or the response) within `seconds`."""
    sock.settimeout(seconds)
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            if not sock.recv(65536):
                return True
    except (TimeoutError, socket.timeout):
        return False
    except ConnectionError:
        return True
    return False


def running_git(server, program: str) -> int:
    """How many `git <program>` the server runs now."""
    count = 0
    for pid in git_children(server):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if program.encode() in cmdline:
            count += 1
    return count


def wait_for_git(server, program: str, count: int = 1):
    """Waits until the server runs `count` `git <program>` (a request has its slot)."""
    assert server.wait_for(lambda: running_git(server, program) >= count, timeout=30), \
        f"the server did not start git {program}"


def with_client(client: str) -> list[str]:
    return ["-c", f"http.extraHeader=X-Forwarded-For: {client}"]


def basic(login: str, password: str) -> str:
    import base64
    return base64.b64encode(f"{login}:{password}".encode()).decode()


# ---- fetches: slots shared between addresses, idle transfers stopped ---------------------


def test_stalled_clones_are_stopped_and_one_address_cannot_hold_every_slot(
        server, public_project, home):
    path = public_project["path_with_namespace"]
    # The attacker's address asks for both of the tenant's slots and never sends its body.
    held = stalled_rpc(server, path, "git-upload-pack", "203.0.113.1")
    wait_for_git(server, "upload-pack")
    waiting = stalled_rpc(server, path, "git-upload-pack", "203.0.113.1")
    try:
        # Another address still has a slot: its clone goes through at once.
        done = run_git(home, *with_client("203.0.113.2"), "clone", "-q",
                       git_url(server, path), str(home / secrets.token_hex(4)), check=False)
        assert done.returncode == 0, done.stderr
        # The attacker's second request waited for a slot of its own and was refused.
        waiting.settimeout(10)
        answer = waiting.recv(65536).decode(errors="replace")
        assert answer.startswith("HTTP/1.1 429"), answer
        assert TOO_MANY in answer
        # The stalled one is stopped once it has moved nothing for the idle time.
        assert closed_within(held, 15), "the stalled clone was not stopped"
    finally:
        held.close()
        waiting.close()


def git_children(server) -> list[int]:
    """Process ids of the server's git children (and theirs)."""
    pids, frontier = [], [server.proc.pid]
    while frontier:
        parent = frontier.pop()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == parent:
                pids.append(int(entry))
                frontier.append(int(entry))
    return pids


def test_git_children_see_none_of_the_servers_secrets(server, public_project):
    stalled = stalled_rpc(server, public_project["path_with_namespace"], "git-upload-pack",
                          "203.0.113.9")
    try:
        children = server.wait_for(lambda: git_children(server), timeout=10)
        assert children, "no git process was started"
        for pid in children:
            try:
                environ = Path(f"/proc/{pid}/environ").read_bytes()
            except OSError:
                continue
            assert server.root_token.encode() not in environ
            assert b"TRELLIS_INITIAL_ROOT_TOKEN" not in environ
            assert b"TRELLIS_DATA_DIR" not in environ
            if server.database_url:
                assert b"TRELLIS_DATABASE_URL" not in environ
    finally:
        stalled.close()


# ---- pushes: per-user slots ----------------------------------------------------------------


def pushable_clone(server, home, token, project) -> Path:
    repo = home / secrets.token_hex(4)
    url = git_url(server, project["path_with_namespace"], "oauth2", token)
    run_git(home, "clone", "-q", url, str(repo))
    (repo / f"{secrets.token_hex(3)}.txt").write_text("change\n")
    run_git(home, "add", ".", cwd=repo)
    run_git(home, "commit", "-q", "-m", "change", cwd=repo)
    return repo


def test_a_user_has_a_push_slot_and_a_stalled_push_gives_it_back(server, home):
    user, token = make_user(server, "pusher")
    other, other_token = make_user(server, "other")
    projects = []
    for owner_token in (token, other_token):
        r = server.request("POST", "/projects", token=owner_token,
                           json={"name": "push" + secrets.token_hex(3),
                                 "initialize_with_readme": True})
        projects.append(assert_json(r, 201))
    mine, theirs = projects
    repo = pushable_clone(server, home, token, mine)
    stalled = stalled_rpc(server, mine["path_with_namespace"], "git-receive-pack",
                          "203.0.113.20", auth=basic("oauth2", token))
    try:
        wait_for_git(server, "receive-pack")
        refused = run_git(home, "push", "-q", "origin", "HEAD", cwd=repo, check=False)
        assert refused.returncode != 0
        assert "429" in refused.stderr, refused.stderr
        # Another user's push is not held up.
        other_repo = pushable_clone(server, home, other_token, theirs)
        run_git(home, "push", "-q", "origin", "HEAD", cwd=other_repo)
        # Once idle for long enough the stalled push is stopped and its slot is free.
        assert closed_within(stalled, 15)
        run_git(home, "push", "-q", "origin", "HEAD", cwd=repo)
    finally:
        stalled.close()


# ---- the archive endpoint takes a fetch slot ---------------------------------------------


def test_archives_take_the_tenants_fetch_slots(server, home):
    r = server.request("POST", "/projects", token=server.root_token,
                       json={"name": "big" + secrets.token_hex(3), "visibility": "public",
                             "initialize_with_readme": True})
    project = assert_json(r, 201)
    repo = pushable_clone(server, home, server.root_token, project)
    # Larger than the socket buffers between git and an archive client that does not read.
    (repo / "noise.bin").write_bytes(os.urandom(24 * 1024 * 1024))
    run_git(home, "add", ".", cwd=repo)
    run_git(home, "commit", "-q", "-m", "noise", cwd=repo)
    run_git(home, "push", "-q", "origin", "HEAD", cwd=repo)
    url = f"{server.api_url}/projects/{project['id']}/repository/archive.tar"
    first = requests.get(url, headers={"X-Forwarded-For": "203.0.113.30"}, stream=True, timeout=30)
    try:
        assert first.status_code == 200
        # The same address's second archive waits for a slot of its own, then is refused.
        second = requests.get(url, headers={"X-Forwarded-For": "203.0.113.30"}, timeout=30)
        assert_json(second, 429, {"message": TOO_MANY})
        # Another address is served.
        third = requests.get(url, headers={"X-Forwarded-For": "203.0.113.31"}, timeout=60)
        assert third.status_code == 200 and len(third.content) > 24 * 1024 * 1024
        # The first, not read, is stopped once idle: its body ends short.
        time.sleep(6)
        received = sum(len(chunk) for chunk in first.iter_content(1 << 20))
        assert received < len(third.content)
    finally:
        first.close()


# ---- the info/refs redirect -----------------------------------------------------------------


@pytest.mark.parametrize("path", ["//evil.example/x/info/refs", "/\\evil.example/x/info/refs",
                                  "/%2F%2Fevil.example/x/info/refs"])
def test_the_info_refs_redirect_never_leaves_the_site(server, path):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("GET", f"{path}?service=git-upload-pack")
    response = connection.getresponse()
    location = response.getheader("Location") or ""
    assert not location.startswith("//") and not location.startswith("/\\"), location
    assert response.status == 404
    connection.close()


def test_the_info_refs_redirect_still_serves_project_paths(server, public_project):
    path = public_project["path_with_namespace"]
    r = requests.get(f"{server.url}/{path}/info/refs?service=git-upload-pack",
                     allow_redirects=False, timeout=10)
    assert r.status_code == 301
    assert r.headers["Location"] == f"/{path}.git/info/refs?service=git-upload-pack"


# ---- what a push may write --------------------------------------------------------------


@pytest.fixture(scope="module")
def push_target(server, home):
    project = assert_json(server.request(
        "POST", "/projects", token=server.root_token,
        json={"name": "refs" + secrets.token_hex(3), "initialize_with_readme": True}), 201)
    repo = home / ("refs-" + secrets.token_hex(3))
    url = git_url(server, project["path_with_namespace"], "oauth2", server.root_token)
    run_git(home, "clone", "-q", url, str(repo))
    return project, repo


def refs_of(server, project) -> set[str]:
    r = server.request("GET", f"/projects/{project['id']}/repository/branches",
                       token=server.root_token)
    return {b["name"] for b in assert_json(r, 200)}


@pytest.mark.parametrize("ref,message", [
    ("refs/heads/HEAD", "You cannot create a branch with an invalid name."),
    ("refs/heads/-x", "You cannot create a branch with an invalid name."),
    ("refs/heads/" + "a" * 40, "You cannot create a branch with a SHA-1 or SHA-256 branch name."),
    ("refs/tags/" + "b" * 40, "You cannot create a tag with a SHA-1 or SHA-256 tag name."),
    ("refs/keep-around/" + "c" * 40, "deny updating a hidden ref"),
    ("refs/merge-requests/1/head", "deny updating a hidden ref"),
])
def test_push_may_not_create_names_the_api_refuses(server, home, push_target, ref, message):
    project, repo = push_target
    done = run_git(home, "push", "origin", f"HEAD:{ref}", cwd=repo, check=False)
    assert done.returncode != 0, done.stderr
    assert message in done.stderr, done.stderr
    assert ref.removeprefix("refs/heads/") not in refs_of(server, project)


def test_a_branch_named_like_a_commit_cannot_shadow_it(server, home, push_target):
    project, repo = push_target
    head = run_git(home, "rev-parse", "HEAD", cwd=repo).stdout.strip()
    done = run_git(home, "push", "origin", f"HEAD:refs/heads/{head}", cwd=repo, check=False)
    assert done.returncode != 0
    r = server.request("GET", f"/projects/{project['id']}/repository/commits/{head}",
                       token=server.root_token)
    assert assert_json(r, 200)["id"] == head


def git_plumbing(home, repo, *args, input: str | None = None) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.com",
           "GIT_COMMITTER_NAME": "A", "GIT_COMMITTER_EMAIL": "a@example.com"}
    done = subprocess.run(["git", *args], cwd=repo, env=env, input=input, capture_output=True,
                          text=True, timeout=60, check=True)
    return done.stdout.strip()


def commit_with_tree(home, repo, entries: str) -> str:
    tree = git_plumbing(home, repo, "mktree", input=entries)
    head = git_plumbing(home, repo, "rev-parse", "HEAD")
    return git_plumbing(home, repo, "commit-tree", tree, "-p", head, "-m", "hostile")


@pytest.mark.parametrize("kind", ["dotgit", "submodule"])
def test_pushes_are_fscked(server, home, push_target, kind):
    project, repo = push_target
    blob = git_plumbing(home, repo, "hash-object", "-w", "--stdin", input="x\n")
    if kind == "dotgit":
        entries = f"100644 blob {blob}\t.GIT\n"
        expected = "hasDotgit"
    else:
        modules = '[submodule "../../escape"]\n\tpath = x\n\turl = https://example.com/x\n'
        gitmodules = git_plumbing(home, repo, "hash-object", "-w", "--stdin", input=modules)
        head = git_plumbing(home, repo, "rev-parse", "HEAD")
        entries = (f"100644 blob {gitmodules}\t.gitmodules\n"
                   f"160000 commit {head}\tx\n")
        expected = "gitmodulesName"
    commit = commit_with_tree(home, repo, entries)
    branch = f"fsck-{kind}"
    done = run_git(home, "push", "origin", f"{commit}:refs/heads/{branch}", cwd=repo, check=False)
    assert done.returncode != 0, done.stderr
    assert expected in done.stderr, done.stderr
    assert branch not in refs_of(server, project)


# ---- failed git authentications ban the address ---------------------------------------------


def test_repeated_failed_git_authentications_ban_the_address(server, public_project):
    _, token = make_user(server, "guess")
    url = f"{server.url}/{public_project['path_with_namespace']}.git/info/refs"
    params = {"service": "git-upload-pack"}

    def attempt(client, password, login="root"):
        return requests.get(url, params=params, auth=(login, password), timeout=10,
                            headers={"X-Forwarded-For": client})

    # Failures count in fixed one-minute windows, as Rack::Attack's: twenty put ten in one.
    statuses = [attempt("203.0.113.40", f"wrong-{n}", login=f"user{n}").status_code
                for n in range(20)]
    first_ban = statuses.index(403)
    assert first_ban >= 10 and set(statuses[:first_ban]) == {401}, statuses
    # Banned: even a valid token from that address is refused, and so is anonymous git.
    banned = attempt("203.0.113.40", token, login="oauth2")
    assert banned.status_code == 403 and banned.text == "Forbidden\n"
    anonymous = requests.get(url, params=params, timeout=10,
                             headers={"X-Forwarded-For": "203.0.113.40"})
    assert anonymous.status_code == 403
    # Another address is not.
    assert attempt("203.0.113.41", token, login="oauth2").status_code == 200
    # The API is not git: it still answers that address.
    r = requests.get(f"{server.api_url}/version", headers={"PRIVATE-TOKEN": token,
                                                           "X-Forwarded-For": "203.0.113.40"},
                     timeout=10)
    assert r.status_code == 200


# ---- HTTP connections ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def capped(make_server):
    return make_server({"TRELLIS_MAX_CONNECTIONS_PER_ADDRESS": "4",
                        "TRELLIS_HTTP_HEADER_TIMEOUT_SECONDS": "2"})


def test_a_half_sent_request_head_is_closed(capped):
    sock = connect(capped)
    try:
        sock.sendall(f"GET /api/v4/version HTTP/1.1\r\nHost: {capped.host}\r\n".encode())
        started = time.monotonic()
        assert closed_within(sock, 10)
        assert time.monotonic() - started < 8
    finally:
        sock.close()


def test_one_address_cannot_hold_every_connection(capped):
    held = [connect(capped, "127.0.0.5") for _ in range(4)]
    try:
        extra = connect(capped, "127.0.0.5")
        assert closed_within(extra, 5), "a fifth connection from the address was kept"
        extra.close()
        # Other addresses are served meanwhile.
        assert requests.get(f"{capped.url}/-/health", timeout=5).status_code == 200
        other = connect(capped, "127.0.0.6")
        other.sendall(f"GET /-/health HTTP/1.1\r\nHost: {capped.host}\r\n\r\n".encode())
        assert other.recv(100).startswith(b"HTTP/1.1 200")
        other.close()
    finally:
        for sock in held:
            sock.close()
    # Freed places are taken again.
    time.sleep(0.2)
    again = connect(capped, "127.0.0.5")
    again.sendall(f"GET /-/health HTTP/1.1\r\nHost: {capped.host}\r\n\r\n".encode())
    assert again.recv(100).startswith(b"HTTP/1.1 200")
    again.close()


# ---- SSH ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ssh(make_server, home) -> Ssh:
    # Enough fetch slots for one address to hold a connection's every channel.
    return Ssh(make_server, home, {"TRELLIS_SSH_MAX_STARTUPS": "10",
                                   "TRELLIS_SSH_LOGIN_GRACE_SECONDS": "3",
                                   "TRELLIS_MAX_UPLOAD_PACKS_PER_TENANT": "40"})


class Master:
    """An OpenSSH ControlMaster connection: later commands reuse its one signed-in session,
    as a client with `ControlPersist` does."""

    def __init__(self, ssh: Ssh, key: Path):
        self.ssh = ssh
        self.socket = ssh.home / f"ctl-{secrets.token_hex(4)}"
        self.options = [*ssh.options(key), "-o", f"ControlPath={self.socket}",
                        "-o", "ServerAliveInterval=1"]
        self.proc = subprocess.Popen(
            ["ssh", "-p", str(ssh.port), *self.options, "-o", "ControlMaster=yes", "-N",
             "git@127.0.0.1"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while not self.socket.exists():
            assert self.proc.poll() is None, self.proc.stderr.read()
            assert time.monotonic() < deadline, "the master connection did not open"
            time.sleep(0.05)

    def run(self, *command: str, stdin: str = "") -> subprocess.CompletedProcess:
        return subprocess.run(["ssh", "-T", "-p", str(self.ssh.port), *self.options,
                               "-o", "ControlMaster=no", "git@127.0.0.1", *command],
                              capture_output=True, text=True, timeout=60, input=stdin)

    def git(self, *args, cwd=None, check=False) -> subprocess.CompletedProcess:
        command = " ".join(["ssh", "-p", str(self.ssh.port), *self.options,
                            "-o", "ControlMaster=no"])
        env = {"PATH": os.environ["PATH"], "HOME": str(self.ssh.home), "GIT_CONFIG_NOSYSTEM": "1",
               "GIT_SSH_COMMAND": command, "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@e.com",
               "GIT_COMMITTER_NAME": "A", "GIT_COMMITTER_EMAIL": "a@e.com"}
        done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=60)
        assert not check or done.returncode == 0, done.stderr
        return done

    def close(self):
        subprocess.run(["ssh", "-o", f"ControlPath={self.socket}", "-O", "exit", "x"],
                       capture_output=True, timeout=10)
        self.proc.kill()
        self.proc.wait(timeout=10)


def test_ssh_decides_every_command_again_on_a_kept_connection(ssh, home):
    """The audit's high finding: over a ControlMaster connection opened while she was an
    administrator, a user whose rights and key were then removed still pushed."""
    server = ssh.server
    gl = server.gitlab()
    user, token = make_user(server, "adm", admin=True)
    key = new_key(home)
    own = server.gitlab(token)
    own.auth()
    row = add_key(own, key)
    private = gl.projects.create({"name": "vault" + secrets.token_hex(3), "visibility": "private",
                                  "initialize_with_readme": True})
    url = ssh.ssh_url(private.path_with_namespace)
    master = Master(ssh, key)
    try:
        assert master.run().stdout == f"Welcome to GitLab, @{user.username}!\n"
        assert master.git("ls-remote", url).returncode == 0
        # Demoted: the same connection no longer reaches the private project.
        assert_json(server.request("PUT", f"/users/{user.id}", token=server.root_token,
                                   json={"admin": False}), 200)
        done = master.git("ls-remote", url)
        assert done.returncode != 0 and NOT_FOUND in done.stderr, done.stderr
        clone = home / secrets.token_hex(4)
        assert master.git("clone", "-q", url, str(clone)).returncode != 0
        # Blocked: refused with GitLab's message, on the same connection.
        assert_json(server.request("POST", f"/users/{user.id}/block",
                                   token=server.root_token), 201)
        public = gl.projects.create({"name": "open" + secrets.token_hex(3),
                                     "visibility": "public", "initialize_with_readme": True})
        public_url = ssh.ssh_url(public.path_with_namespace)
        done = master.git("ls-remote", public_url)
        assert done.returncode != 0 and "Your account has been blocked." in done.stderr
        # The key removed: the connection signs in nobody; a push is refused.
        assert_json(server.request("POST", f"/users/{user.id}/unblock",
                                   token=server.root_token), 201)
        assert server.request("DELETE", f"/users/{user.id}/keys/{row.id}",
                              token=server.root_token).status_code == 204
        assert master.run().stdout == "Welcome to GitLab, Anonymous!\n"
        repo = home / secrets.token_hex(4)
        run_git(home, "clone", "-q",
                git_url(server, public.path_with_namespace, "oauth2", server.root_token),
                str(repo))
        (repo / "x.txt").write_text("x\n")
        run_git(home, "add", ".", cwd=repo)
        run_git(home, "commit", "-q", "-m", "x", cwd=repo)
        pushed = master.git("push", public_url, "HEAD:main", cwd=repo)
        assert pushed.returncode != 0, pushed.stderr
        assert master.git("ls-remote", url).returncode != 0
    finally:
        master.close()


def test_ssh_caps_channels_per_connection(ssh, home):
    server = ssh.server
    user, token = make_user(server, "chan")
    key = new_key(home)
    own = server.gitlab(token)
    own.auth()
    add_key(own, key)
    project = own.projects.create(
        {"name": "ch" + secrets.token_hex(3), "initialize_with_readme": True})
    command = f"git-upload-pack '{project.path_with_namespace}.git'"
    master = Master(ssh, key)
    sessions = []
    try:
        for _ in range(10):
            sessions.append(subprocess.Popen(
                ["ssh", "-T", "-p", str(ssh.port), *master.options, "-o", "ControlMaster=no",
                 "git@127.0.0.1", command],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL))
        for session in sessions:
            assert session.stdout.read(4), "an upload-pack did not start"
        eleventh = master.run(command)
        assert eleventh.returncode != 0
        assert "Session open refused by peer" in eleventh.stderr, eleventh.stderr
        # A channel that closes gives its place back.
        sessions.pop().kill()
        time.sleep(0.5)
        assert master.run().stdout == f"Welcome to GitLab, @{user.username}!\n"
    finally:
        for session in sessions:
            session.kill()
            session.wait(timeout=10)
        master.close()


def test_ssh_connections_not_signed_in_are_capped_and_timed(ssh, home):
    first = connect(ssh.server, "127.0.0.7", port=ssh.port)
    try:
        assert first.recv(100).startswith(b"SSH-2.0-Trellis")
        # MaxStartups of 10: one connection not yet signed in per address.
        second = connect(ssh.server, "127.0.0.7", port=ssh.port)
        assert closed_within(second, 5)
        second.close()
        # Other clients still sign in.
        user, token = make_user(ssh.server, "grace")
        key = new_key(home)
        own = ssh.server.gitlab(token)
        own.auth()
        add_key(own, key)
        assert ssh.ssh(key).stdout == f"Welcome to GitLab, @{user.username}!\n"
        # The login grace time ends the silent connection.
        assert closed_within(first, 10)
    finally:
        first.close()
