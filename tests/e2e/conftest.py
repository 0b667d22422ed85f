"""Shared fixtures for the Trellis end-to-end suite.

Every test module gets its own server (scope="module"), parametrized over the
storage engines: SQLite always, PostgreSQL when TRELLIS_TEST_DATABASE_URL is set
(a fresh database is created for every server and dropped afterwards).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import email
import email.policy
import hashlib
import os
import re
import secrets
import shutil
import signal
import socket
import sqlite3
import string
import struct
import subprocess
import tempfile
import time
import urllib.parse
import warnings
import zlib
from pathlib import Path

import gitlab
import pytest
import requests

TRELLIS_BIN = os.environ.get("TRELLIS_BIN", "/work/main/target/debug/trellis")
PG_URL = os.environ.get("TRELLIS_TEST_DATABASE_URL")
ENGINES = ["sqlite", "postgres"]
STARTUP_TIMEOUT = 30.0
JSON = "application/json"
ROOT = Path(__file__).resolve().parents[2]
GUEST_TARGET = ROOT / "target" / "wasm-guests"
PASSWORD = "password123"  # of every user make_user creates
# The operator opens loopback to tenants (--outbound-allow-networks) on servers of modules whose
# hook, import or plugin receivers listen there; without it nothing local is reachable.
LOOPBACK_RECEIVERS = {"TRELLIS_OUTBOUND_ALLOW_NETWORKS": "127.0.0.0/8,::1/128"}

# GitLab's bodies and formats that many modules check
UNAUTHORIZED = {"message": "401 Unauthorized"}
FORBIDDEN = {"message": "403 Forbidden"}
PROJECT_NOT_FOUND = {"message": "404 Project Not Found"}
ISSUE_NOT_FOUND = {"message": "404 Issue Not Found"}
USER_NOT_FOUND = {"message": "404 User Not Found"}
ISO_MS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")

_ALNUM = string.ascii_letters + string.digits


def random_token() -> str:
    return "glpat-" + "".join(secrets.choice(_ALNUM) for _ in range(20))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def today_utc() -> dt.date:
    return dt.datetime.now(dt.timezone.utc).date()


def with_database(url: str, name: str) -> str:
    """`url` with its database (path) replaced by `name`."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path="/" + name))


def require_program(name: str, package: str) -> None:
    """Skips the calling test, with a notice in the summary, when a program it runs is missing.
    tests/setup installs these from Debian when it runs as root."""
    if shutil.which(name) is None:
        reason = f"{name} is missing (apt-get install {package})"
        warnings.warn(f"NOTICE: test skipped: {reason}", stacklevel=2)
        pytest.skip(reason)


def gpg_signing_key(gnupg: Path, email: str) -> str:
    """A signing key for `email` in the GnuPG home `gnupg` (made at the first call: a test
    module's home outlives one engine's server), as the ASCII-armoured public key that
    `/user/gpg_keys` takes. Skips the test when gpg is missing."""
    require_program("gpg", "gnupg")
    env = {**os.environ, "GNUPGHOME": str(gnupg)}
    gnupg.mkdir(mode=0o700, exist_ok=True)
    listed = subprocess.run(["gpg", "--batch", "--list-keys", email], env=env,
                            capture_output=True, timeout=60)
    if listed.returncode != 0:
        subprocess.run(["gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", "",
                        "--quick-gen-key", f"Someone <{email}>", "ed25519", "sign", "never"],
                       env=env, check=True, capture_output=True, timeout=120)
    return subprocess.run(["gpg", "--armor", "--export", email], env=env, check=True,
                          capture_output=True, text=True).stdout


def psql(url: str, sql: str) -> str:
    proc = subprocess.run(
        ["psql", url, "-v", "ON_ERROR_STOP=1", "-At", "-c", sql],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"psql failed ({sql!r}): {proc.stderr}")
    return proc.stdout


REDIS = ("127.0.0.1", 6379)


def redis_url(db: int) -> str:
    """The machine's Redis, database `db` (each module that uses Redis takes its own)."""
    return f"redis://{REDIS[0]}:{REDIS[1]}/{db}"


def redis_command(*args: str, db: int = 0) -> bytes:
    """Sends one command to the machine's Redis in database `db` (RESP, no client library)
    and returns the raw answer."""
    def encode(*words: str) -> str:
        return f"*{len(words)}\r\n" + "".join(f"${len(w)}\r\n{w}\r\n" for w in words)
    with socket.create_connection(REDIS, timeout=5) as conn:
        conn.sendall((encode("SELECT", str(db)) + encode(*args)).encode())
        answer = b""
        while answer.count(b"\r\n") < 2:
            chunk = conn.recv(65536)
            if not chunk:
                break
            answer += chunk
        return answer.split(b"\r\n", 1)[1]


def require_redis():
    """Skips the calling test, with a notice, when the machine has no Redis on 6379."""
    try:
        redis_command("PING")
    except OSError as error:
        reason = f"no Redis on {REDIS[0]}:{REDIS[1]} ({error})"
        warnings.warn(f"NOTICE: test skipped: {reason}", stacklevel=2)
        pytest.skip(reason)


def assert_json(resp: requests.Response, status: int, body=None):
    """Asserts status, exact Content-Type and (optionally) the exact JSON body."""
    assert resp.status_code == status, (resp.status_code, resp.text)
    assert resp.headers.get("Content-Type") == JSON, resp.headers.get("Content-Type")
    data = resp.json()
    if body is not None:
        assert data == body
    return data


INSUFFICIENT_SCOPE = {
    "error": "insufficient_scope",
    "error_description": "The request requires higher privileges than provided by the access token.",
}


def insufficient_scope(scope: str) -> dict:
    return {**INSUFFICIENT_SCOPE, "scope": scope}


class Server:
    """One running `trellis serve` process with its own data dir / database."""

    def __init__(self, engine: str, extra_env: dict | None = None):
        self.engine = engine
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.api_url = self.url + "/api/v4"
        self.host = f"127.0.0.1:{self.port}"
        self.root_token = random_token()
        self._tmp = tempfile.TemporaryDirectory(prefix="trellis-e2e-")
        self.data_dir = Path(self._tmp.name) / "data"
        self.data_dir.mkdir()
        self.stderr_path = Path(self._tmp.name) / "stderr.log"
        self.stdout_path = Path(self._tmp.name) / "stdout.log"
        self.database_url: str | None = None
        self._db_name: str | None = None
        self.proc: subprocess.Popen | None = None
        self.env = dict(os.environ)
        self.env.pop("TRELLIS_DATABASE_URL", None)
        self.env.update(
            {
                "TRELLIS_LISTEN": self.host,
                "TRELLIS_DATA_DIR": str(self.data_dir),
                "TRELLIS_INITIAL_ROOT_TOKEN": self.root_token,
                "TRELLIS_LOG": "warn",
            }
        )
        if engine == "postgres":
            self._db_name = "trellis_e2e_" + secrets.token_hex(8)
            psql(PG_URL, f"CREATE DATABASE {self._db_name}")
            self.database_url = with_database(PG_URL, self._db_name)
            self.env["TRELLIS_DATABASE_URL"] = self.database_url
        if extra_env:
            self.env.update(extra_env)

    # ---- lifecycle -------------------------------------------------------

    def start(self) -> "Server":
        self._stderr = open(self.stderr_path, "wb")
        self._stdout = open(self.stdout_path, "wb")
        self.proc = subprocess.Popen(
            [TRELLIS_BIN, "serve"],
            env=self.env,
            stdout=self._stdout,
            stderr=self._stderr,
        )
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                r = requests.get(self.url + "/-/health", timeout=2)
                if r.status_code == 200:
                    self.allow_many_sign_ins(self.root_token, started=True)
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.05)
        rc = self.proc.poll()
        self.stop()
        raise RuntimeError(
            f"trellis did not become healthy (exit code {rc}); stderr:\n{self.stderr_text()}"
        )

    def allow_many_sign_ins(self, token: str, host: str | None = None, started: bool = False):
        """Turns off GitLab's default throttle of protected paths (10 sign-ins or token
        requests a minute per IP): the suite signs in far more often than that from one
        address. test_rate_limits.py tests the throttle itself."""
        r = self.request("PUT", "/application/settings", token=token, host=host,
                         json={"throttle_protected_paths_enabled": False})
        if started and r.status_code == 401:
            return  # a server sharing another's database: its root token is the other's
        assert r.status_code == 200, r.text

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        for f in (getattr(self, "_stderr", None), getattr(self, "_stdout", None)):
            if f is not None and not f.closed:
                f.close()

    def close(self):
        self.stop()
        if self._db_name:
            try:
                psql(PG_URL, f"DROP DATABASE IF EXISTS {self._db_name} WITH (FORCE)")
            except RuntimeError as e:  # pragma: no cover - best effort cleanup
                print(e)
        self._tmp.cleanup()

    def stderr_text(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stdout_text(self) -> str:
        try:
            return self.stdout_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def sql(self, statement: str) -> list[tuple]:
        """Runs a statement on the server's own database (to age or damage a row on purpose,
        or to read what the API does not show); returns its rows (PostgreSQL's as text)."""
        if self.engine == "postgres":
            out = psql(self.database_url, statement)
            return [tuple(line.split("|")) for line in out.splitlines() if line]
        db = sqlite3.connect(self.data_dir / "trellis.db", timeout=30)
        try:
            rows = db.execute(statement).fetchall()
            db.commit()
            return rows
        finally:
            db.close()

    # ---- CLI -------------------------------------------------------------

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        proc = subprocess.run(
            [TRELLIS_BIN, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"trellis {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
            )
        return proc

    def create_token(
        self,
        user: str = "root",
        name: str | None = None,
        scopes: str | list[str] = "api",
        expires_at: str | None = None,
        tenant: str | None = None,
    ) -> str:
        """Creates a token with `trellis token create` and returns its plaintext."""
        if not isinstance(scopes, str):
            scopes = ",".join(scopes)
        args = ["token", "create", "--user", user, "--name", name or "cli-" + secrets.token_hex(4),
                "--scopes", scopes]
        if expires_at:
            args += ["--expires-at", expires_at]
        if tenant:
            args += ["--tenant", tenant]
        out = self.cli(*args).stdout.strip().splitlines()
        assert out, "token create printed nothing"
        return out[-1].strip()

    # ---- HTTP ------------------------------------------------------------

    def full_url(self, path: str) -> str:
        if path.startswith("http://") or path.startswith("https://"):
            return path
        if path.startswith("/api/") or path.startswith("/-/"):
            return self.url + path
        if not path.startswith("/"):
            path = "/" + path
        return self.api_url + path

    def request(
        self,
        method: str,
        path: str,
        token: str | None = None,
        host: str | None = None,
        headers: dict | None = None,
        **kw,
    ) -> requests.Response:
        """`path` is relative to /api/v4 unless it starts with /api/ or /-/ (or is a URL).

        `token` is sent as PRIVATE-TOKEN; `host` (a host name, port added when missing)
        sets the Host header to address a tenant.
        """
        hdrs = dict(headers or {})
        if token is not None:
            hdrs["PRIVATE-TOKEN"] = token
        if host is not None:
            hdrs["Host"] = host if ":" in host else f"{host}:{self.port}"
        kw.setdefault("timeout", 30)
        kw.setdefault("allow_redirects", False)
        return requests.request(method, self.full_url(path), headers=hdrs, **kw)

    def follow(self, url: str, token: str | None = None, **kw) -> requests.Response:
        """GETs a URL the server produced (e.g. a Link header), whatever host it names,
        by connecting to this server and sending the URL's host as the Host header."""
        parts = urllib.parse.urlsplit(url)
        local = urllib.parse.urlunsplit(parts._replace(scheme="http", netloc=self.host))
        return self.request("GET", local, token=token, host=parts.netloc, **kw)

    def gitlab(self, token: str | None = None, host: str | None = None, **kw) -> gitlab.Gitlab:
        session = requests.Session()
        if host is not None:
            session.headers["Host"] = host if ":" in host else f"{host}:{self.port}"
            # pagination links name the tenant's host; keep talking to 127.0.0.1
            kw.setdefault("keep_base_url", True)
        return gitlab.Gitlab(
            self.url,
            private_token=token if token is not None else self.root_token,
            session=session,
            **kw,
        )

    def create_token_api(
        self, name: str | None = None, scopes=("api",), token: str | None = None,
        host: str | None = None, user_id: int = 1, **extra
    ) -> dict:
        """Creates a token for `user_id` through the API (as root by default); returns the body."""
        body = {"name": name or "api-" + secrets.token_hex(4), "scopes": list(scopes), **extra}
        r = self.request(
            "POST", f"/users/{user_id}/personal_access_tokens",
            token=token or self.root_token, host=host, json=body,
        )
        return assert_json(r, 201)

    def wait_for(self, predicate, timeout: float = 10.0, interval: float = 0.1):
        deadline = time.monotonic() + timeout
        while True:
            result = predicate()
            if result:
                return result
            if time.monotonic() > deadline:
                return result
            time.sleep(interval)


def _skip_unless_engine(engine: str):
    if engine == "postgres" and not PG_URL:
        pytest.skip("PostgreSQL engine: set TRELLIS_TEST_DATABASE_URL=postgres://... to run")
    if not os.path.exists(TRELLIS_BIN):
        pytest.fail(f"trellis binary not found at {TRELLIS_BIN} (set TRELLIS_BIN)")


@pytest.fixture(scope="module", params=ENGINES)
def engine(request) -> str:
    _skip_unless_engine(request.param)
    return request.param


@pytest.fixture(scope="module")
def make_server(engine):
    """Factory for extra servers on the module's engine (stopped at module teardown)."""
    started: list[Server] = []

    def make(extra_env: dict | None = None) -> Server:
        srv = Server(engine, extra_env)
        started.append(srv)
        srv.start()
        return srv

    yield make
    for srv in started:
        srv.close()


@pytest.fixture(scope="module")
def server(make_server) -> Server:
    return make_server()


def make_user(server: Server, prefix: str = "u", password: str = PASSWORD, **extra):
    """Creates a confirmed user with a random name starting with `prefix` (as root, through
    python-gitlab) and an api token for it; `extra` adds or overrides fields of the body."""
    name = f"{prefix}{secrets.token_hex(3)}"
    user = server.gitlab().users.create(
        {
            "username": name,
            "email": f"{name}@example.com",
            "name": name.title(),
            "password": password,
            "skip_confirmation": True,
            **extra,
        }
    )
    return user, server.create_token_api(user_id=user.id)["token"]


def csrf_of(html: str) -> str:
    """The CSRF token of the (first) form on a server-rendered page."""
    match = re.search(r'name="authenticity_token" value="([0-9a-f]+)"', html)
    assert match, html
    return match.group(1)


def sign_in(server: Server, login: str, password: str = PASSWORD) -> requests.Session:
    """A browser-like session signed in on the web pages (cookies kept)."""
    session = requests.Session()
    page = session.get(server.url + "/users/sign_in")
    assert page.status_code == 200
    r = session.post(server.url + "/users/sign_in", allow_redirects=False, data={
        "authenticity_token": csrf_of(page.text),
        "user[login]": login, "user[password]": password,
    })
    assert r.status_code == 302, r.text
    return session


def other_tenant(server: Server, prefix: str = "t", host: str | None = None) -> tuple[str, str]:
    """Creates another tenant on `server` (named `host`, or a random name starting with
    `prefix`); returns its host and a root API token once it serves."""
    host = host or f"{prefix}-{secrets.token_hex(3)}.example"
    server.cli("tenant", "create", "--host", host)
    token = server.create_token(user="root", name="t", scopes="api", tenant=host)
    assert server.wait_for(
        lambda: server.request("GET", "/user", token=token, host=host).status_code == 200,
        timeout=10), f"tenant {host} never served"
    server.allow_many_sign_ins(token, host)
    return host, token


@pytest.fixture(scope="module")
def gl(server) -> gitlab.Gitlab:
    """python-gitlab as root, signed in (`gl.user` is root)."""
    client = server.gitlab()
    client.auth()
    return client


# ---- users -------------------------------------------------------------------


@pytest.fixture(scope="module")
def non_admin(server) -> dict:
    """A regular (non-admin) user: its admin view, and "token", an api token of theirs."""
    user, token = make_user(server, "alice")
    return {**user.asdict(), "token": token}


@pytest.fixture(scope="module")
def gl_non_admin(server, non_admin) -> gitlab.Gitlab:
    client = server.gitlab(non_admin["token"])
    client.auth()
    return client


@pytest.fixture(scope="module")
def no_search_rate_limits(server):
    """For modules that search users far more than GitLab's default search limits (30 a
    minute per user, 10 per IP) allow; the limits themselves are tested in test_rate_limits.py."""
    r = server.request("PUT", "/application/settings", token=server.root_token,
                       json={"search_rate_limit": 0, "search_rate_limit_unauthenticated": 0})
    assert_json(r, 200)


# ---- plugins -------------------------------------------------------------------


def build_guest(package: str, artifact: str) -> bytes:
    """Builds a guest plugin crate of the workspace for wasm32-wasip2; returns the component."""
    subprocess.run(
        ["cargo", "build", "--quiet", "--release", "--target", "wasm32-wasip2",
         "--package", package, "--target-dir", str(GUEST_TARGET)],
        cwd=ROOT, check=True, timeout=900,
    )
    return (GUEST_TARGET / "wasm32-wasip2" / "release" / artifact).read_bytes()


@pytest.fixture(scope="module")
def keyword_wasm() -> bytes:
    return build_guest("keyword-spam-filter", "keyword_spam_filter.wasm")


@pytest.fixture(scope="module")
def hostile_wasm() -> bytes:
    return build_guest("hostile-plugin", "hostile_plugin.wasm")


@pytest.fixture(scope="module")
def hostile_auth_wasm() -> bytes:
    return build_guest("hostile-auth-plugin", "hostile_auth_plugin.wasm")


@pytest.fixture(scope="module")
def conventional_commits_wasm() -> bytes:
    return build_guest("conventional-commits", "conventional_commits.wasm")


@pytest.fixture(scope="module")
def hostile_formatter_wasm() -> bytes:
    return build_guest("hostile-formatter-plugin", "hostile_formatter_plugin.wasm")


@pytest.fixture(scope="module")
def hostile_push_wasm() -> bytes:
    return build_guest("hostile-push-plugin", "hostile_push_plugin.wasm")


@pytest.fixture(scope="module")
def forbidden_import_wasm() -> bytes:
    return build_guest("forbidden-import-plugin", "forbidden_import_plugin.wasm")


def upload(server: Server, data: bytes, name: str = "plugin.wasm", token=None, host=None,
           timeout: float = 30, **fields):
    """Uploads a component (compiled on upload: a loaded debug build may need a longer
    `timeout`)."""
    return server.request(
        "POST", "/application/plugins", token=token or server.root_token, host=host,
        files={"file": (name, data, "application/wasm")}, data=fields, timeout=timeout,
    )


def bind(server: Server, hook="spam_check", token=None, host=None, **body):
    return server.request("PUT", f"/application/plugin_hooks/{hook}",
                          token=token or server.root_token, host=host, json=body)


def spam_test(server: Server, title, description="", token=None, host=None, **extra):
    r = server.request("POST", "/application/plugin_hooks/spam_check/test",
                       token=token or server.root_token, host=host,
                       json={"title": title, "description": description, **extra})
    return assert_json(r, 200)


def built_in(server: Server, token=None, host=None, name="spam-filter") -> dict:
    r = server.request("GET", "/application/plugins", token=token or server.root_token, host=host)
    rows = assert_json(r, 200)
    return next(p for p in rows if p["name"] == name and p["built_in"])


# ---- git clients ---------------------------------------------------------------


def run_git(home: Path, *args, cwd=None, check=True) -> subprocess.CompletedProcess:
    """The real `git` with no system or user configuration (HOME is `home`), no credential
    helper and no prompts; `check` asserts it succeeded."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "",
        "SSH_ASKPASS": "",
        "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com",
        "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com",
    }
    done = subprocess.run(
        ["git", "-c", "credential.helper=", "-c", "init.defaultBranch=main", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def commits_stream(ref: str, parent: str, count: int, email: str,
                   message=lambda n: f"feat: change {n}\n",
                   file=lambda n: f"many-{n}.txt") -> str:
    """A `git fast-import` stream of `count` commits on `parent` into `ref`, each adding one
    file: enough of them make a push git receives as a pack (past its unpack limit of 100
    objects) rather than as loose objects."""
    out = []
    for n in range(count):
        text, when = message(n), 1_700_000_000 + n
        content = f"change {n}\n"
        out.append(f"commit {ref}\ncommitter Root <{email}> {when} +0000\n"
                   f"data {len(text)}\n{text}" + (f"from {parent}\n" if n == 0 else "")
                   + f"M 100644 inline {file(n)}\ndata {len(content)}\n{content}\n")
    return "".join(out)


def prescans_used(server: Server) -> int:
    """How many pushes took the verdict of push rules started before their hook
    (`trellis_push_prescans_total{outcome="used"}`)."""
    for line in server.request("GET", "/-/metrics").text.splitlines():
        if line.startswith('trellis_push_prescans_total{outcome="used"}'):
            return int(float(line.split()[-1]))
    return 0


def refs_and_objects(repo: Path) -> tuple[str, str]:
    """Every ref with its object, and a digest of every object the refs reach, listed."""
    refs = subprocess.run(["git", "--git-dir", str(repo), "for-each-ref",
                           "--format=%(objectname) %(refname)"],
                          check=True, capture_output=True, text=True).stdout
    objects = subprocess.run(["git", "--git-dir", str(repo), "rev-list", "--objects", "--all"],
                             check=True, capture_output=True, text=True).stdout
    return refs, hashlib.sha256("\n".join(sorted(objects.splitlines())).encode()).hexdigest()


def git_url(server: Server, path: str, login: str | None = None,
            password: str | None = None) -> str:
    """The smart HTTP URL of `path` on `server`, with credentials when given."""
    auth = f"{login}:{password}@" if login is not None else ""
    return f"http://{auth}{server.host}/{path}"


# ---- the domain event outbox -------------------------------------------------------


def domain_events(server: Server, since: int = 0) -> list[dict]:
    """The events recorded after id `since`, oldest first, with their payload parsed."""
    rows = server.sql(
        "SELECT id, kind, actor_id, project_id, subject_id, payload FROM domain_events "
        f"WHERE id > {int(since)} ORDER BY tenant_id, id"
    )
    out = []
    for id_, kind, actor, project, subject, payload in rows:
        out.append({
            "id": int(id_),
            "kind": kind,
            "actor_id": int(actor) if actor not in (None, "") else None,
            "project_id": int(project) if project not in (None, "") else None,
            "subject_id": int(subject),
            **json.loads(payload),
        })
    return out


def last_event_id(server: Server) -> int:
    rows = server.sql("SELECT COALESCE(MAX(id), 0) FROM domain_events")
    return int(rows[0][0])
# ---- Users API helpers (test_users*.py): request bodies, requests as an admin, PNG images,
# ---- the mails the server wrote, and direct database writes.
USERNAME_RULE = (
    "can contain only letters, digits, '_', '-' and '.'. "
    "Cannot start with '-' or end in '.', '.git' or '.atom'."
)
SUMMARY_FIELDS = {"id", "username", "name", "state", "locked", "avatar_url", "web_url"}
PUBLIC_FIELDS = SUMMARY_FIELDS | {
    "created_at", "bio", "location", "public_email", "skype", "linkedin", "twitter", "discord",
    "website_url", "organization", "job_title", "pronouns", "bot", "work_information",
}
SELF_FIELDS = PUBLIC_FIELDS | {
    "email", "last_sign_in_at", "confirmed_at", "last_activity_on", "theme_id",
    "color_scheme_id", "projects_limit", "current_sign_in_at", "identities", "can_create_group",
    "can_create_project", "two_factor_enabled", "external", "private_profile",
}
ADMIN_FIELDS = SELF_FIELDS | {"is_admin", "note", "current_sign_in_ip", "last_sign_in_ip"}

DROP = object()  # a field to leave out of a request body


def uname(prefix: str = "u") -> str:
    return f"{prefix}{secrets.token_hex(5)}"


def user_payload(username: str | None = None, **fields) -> dict:
    """A valid POST /users body; `fields` override (DROP removes a field)."""
    username = username or uname()
    body = {
        "username": username,
        "email": f"{username}@example.com",
        "name": f"User {username}",
        "password": PASSWORD,
        "skip_confirmation": True,
    }
    body.update(fields)
    return {k: v for k, v in body.items() if v is not DROP}


def post_user(server, body=None, token=None, host=None, **kw):
    return server.request("POST", "/users", token=token or server.root_token, host=host,
                          json=body, **kw)


def as_form(body: dict) -> dict:
    """A request body as form fields (booleans as true/false)."""
    return {k: str(v).lower() if isinstance(v, bool) else v for k, v in body.items()}


def post_user_with_avatar(server, filename, image: bytes, content_type="image/png", body=None):
    """POST /users as root, multipart with an avatar file; a valid user unless `body`."""
    return server.request("POST", "/users", token=server.root_token,
                          data=as_form(body or user_payload()),
                          files={"avatar": (filename, image, content_type)})


def create_user(server, host=None, token=None, **fields) -> dict:
    """Creates a user as admin (root unless `token`) and returns the 201 body."""
    return assert_json(post_user(server, user_payload(**fields), token=token, host=host), 201)


def token_for(server, user_id: int, scopes=("api",), host=None, token=None) -> str:
    """A personal access token for `user_id`, created by an admin through the API."""
    return server.create_token_api(user_id=user_id, scopes=list(scopes), host=host,
                                   token=token)["token"]


def user_with_token(server, **fields) -> tuple[dict, str]:
    user = create_user(server, **fields)
    return user, token_for(server, user["id"])


def admin_get(server, path, host=None, token=None, **params):
    return server.request("GET", path, token=token or server.root_token, host=host,
                          params=params)


def get_user(server, user_id, host=None, token=None) -> dict:
    return assert_json(admin_get(server, f"/users/{user_id}", host=host, token=token), 200)


def users_named(server, username, token=None, host=None) -> list:
    """GET /users?username=... as admin (or `token`)."""
    r = admin_get(server, "/users", token=token, host=host, username=username)
    return assert_json(r, 200)


def list_users(server, token=None, host=None, **params) -> list:
    params.setdefault("per_page", 100)
    r = server.request("GET", "/users", token=token, host=host, params=params)
    return assert_json(r, 200)


def usernames(items) -> list:
    return [u["username"] for u in items]


def put_user(server, user_id, token=None, **kw):
    return server.request("PUT", f"/users/{user_id}", token=token or server.root_token, **kw)


def state_action(server, user_id, action, token=None):
    return server.request("POST", f"/users/{user_id}/{action}",
                          token=token or server.root_token)


def gravatar(address: str) -> str:
    digest = hashlib.sha256(address.strip().lower().encode()).hexdigest()
    return f"https://www.gravatar.com/avatar/{digest}?s=80&d=identicon"


def png(extra: bytes = b"", width: int = 2, height: int = 2) -> bytes:
    """A valid PNG image (optionally padded after IEND to reach a size)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    raw = b"".join(b"\x00" + bytes([secrets.randbelow(256)]) * 3 * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b"")
            + extra)


def png_of_size(size: int) -> bytes:
    base = png()
    return base + b"\x00" * (size - len(base))


def mails_for(server, address: str) -> list:
    """The .eml files under DATA_DIR/mail/ addressed to `address`, parsed."""
    folder = server.data_dir / "mail"
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.glob("*.eml")):
        msg = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        if address.lower() in str(msg.get("To", "")).lower():
            found.append(msg)
    return found


def mail_body(msg) -> str:
    part = msg.get_body(preferencelist=("plain",)) if msg.is_multipart() else msg
    return part.get_content()


def db_write(server, sql: str):
    """Runs one statement straight against the server's database, then waits out the
    server's 1 s token-lookup cache."""
    server.sql(sql)
    time.sleep(1.1)


def db_set_user(server, user: dict, **columns):
    """UPDATE users SET ... for one user (matched by id and username, so only its tenant)."""
    sets = ", ".join(f"{k} = '{v}'" for k, v in columns.items())
    db_write(server, f"UPDATE users SET {sets} WHERE id = {int(user['id'])} "
                     f"AND username = '{user['username']}'")


def days_ago(n: int) -> str:
    return (today_utc() - dt.timedelta(days=n)).isoformat()


@contextlib.contextmanager
def setting(server, name, value, restore):
    r = server.request("PUT", "/application/settings", token=server.root_token,
                       json={name: value})
    assert_json(r, 200)
    try:
        yield
    finally:
        r = server.request("PUT", "/application/settings", token=server.root_token,
                           json={name: restore})
        assert_json(r, 200)


def assert_no_user(server, username: str, address: str | None = None):
    """No user of that name (nor, given `address`, of that email, nor a mail to it) exists."""
    assert users_named(server, username) == []
    if address:
        found = list_users(server, token=server.root_token, search=address)
        assert [u for u in found if u["email"].lower() == address.lower()] == []
        assert mails_for(server, address) == []


def activities(server, token=None, **params) -> list:
    """GET /user/activities as admin (or `token`); `from_` stands for `from`."""
    params.setdefault("per_page", 100)
    if "from_" in params:
        params["from"] = params.pop("from_")
    r = server.request("GET", "/user/activities", token=token or server.root_token,
                       params=params)
    return assert_json(r, 200)
    return next(p for p in rows if p["name"] == "spam-filter" and p["built_in"])


# ---- webhook receivers ---------------------------------------------------------


class WebhookReceiver:
    """A real HTTP receiver on loopback for webhook tests: records every request (headers as a
    case-insensitive dict, the body as text and, when it is JSON, parsed) and answers with the
    statuses in `script` (one per request, then `status`), after `delay` seconds."""

    def __init__(self, status: int = 200, delay: float = 0.0):
        import http.server
        import json as _json
        import threading

        self.status = status
        self.delay = delay
        self.script: list[int] = []
        self.received: list[dict] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode("utf-8", "replace")
                try:
                    parsed = _json.loads(body)
                except ValueError:
                    parsed = None
                with receiver._lock:
                    receiver.received.append({
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": body,
                        "json": parsed,
                    })
                    status = receiver.script.pop(0) if receiver.script else receiver.status
                if receiver.delay:
                    time.sleep(receiver.delay)
                answer = b'{"ok":true}'
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def requests(self, event: str | None = None) -> list[dict]:
        with self._lock:
            return [r for r in self.received
                    if event is None or r["headers"].get("x-gitlab-event") == event]

    def wait(self, count: int = 1, event: str | None = None, timeout: float = 30.0) -> list[dict]:
        """The first `count` requests (of `event`), waiting for them; fails when they do not come."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.requests(event)
            if len(found) >= count:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(found)} of {count} {event or ''} requests arrived: {found}")
            time.sleep(0.05)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def receiver():
    r = WebhookReceiver()
    yield r
    r.close()


@contextlib.contextmanager
def serve_git_daemon(base):
    """`git daemon` exporting every repository under `base` over git:// on a free loopback port;
    yields the `git://127.0.0.1:PORT` prefix."""
    port = free_port()
    proc = subprocess.Popen(["git", "daemon", "--export-all", f"--base-path={base}", "--listen=127.0.0.1",
                             f"--port={port}", "--reuseaddr", str(base)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield f"git://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def bare_repository(tmp_path, name: str, files: dict[str, bytes]):
    """A bare repository `tmp_path/served/<name>.git` with one commit on `main` holding
    `files`, for `serve_git_daemon(tmp_path / "served")`."""
    work = tmp_path / f"{name}-work"
    run_git(tmp_path, "init", "-q", "-b", "main", str(work))
    for path, content in files.items():
        (work / path).write_bytes(content)
    run_git(tmp_path, "add", "-A", cwd=work)
    run_git(tmp_path, "commit", "-q", "-m", "first", cwd=work)
    run_git(tmp_path, "clone", "-q", "--bare", str(work), str(tmp_path / "served" / f"{name}.git"))
