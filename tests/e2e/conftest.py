"""Shared fixtures for the Trellis end-to-end suite.

Every test module gets its own server (scope="module"), parametrized over the
storage engines: SQLite always, PostgreSQL when TRELLIS_TEST_DATABASE_URL is set
(a fresh database is created for every server and dropped afterwards).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import secrets
import shutil
import signal
import socket
import sqlite3
import string
import subprocess
import tempfile
import time
import urllib.parse
import warnings
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
def forbidden_import_wasm() -> bytes:
    return build_guest("forbidden-import-plugin", "forbidden_import_plugin.wasm")


def upload(server: Server, data: bytes, name: str = "plugin.wasm", token=None, host=None,
           **fields):
    return server.request(
        "POST", "/application/plugins", token=token or server.root_token, host=host,
        files={"file": (name, data, "application/wasm")}, data=fields,
    )


def bind(server: Server, hook="spam_check", token=None, host=None, **body):
    return server.request("PUT", f"/application/plugin_hooks/{hook}",
                          token=token or server.root_token, host=host, json=body)


def spam_test(server: Server, title, description="", token=None, host=None, **extra):
    r = server.request("POST", "/application/plugin_hooks/spam_check/test",
                       token=token or server.root_token, host=host,
                       json={"title": title, "description": description, **extra})
    return assert_json(r, 200)


def built_in(server: Server, token=None, host=None) -> dict:
    r = server.request("GET", "/application/plugins", token=token or server.root_token, host=host)
    rows = assert_json(r, 200)
    return next(p for p in rows if p["name"] == "spam-filter" and p["built_in"])
