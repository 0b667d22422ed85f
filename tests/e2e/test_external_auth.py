"""External authorization (issue 9): GitLab's external authorization service asked through the
built-in `external-authorization` plugin and its granted outbound HTTP, against a small
authorization service written here (a real HTTP server on loopback, in a thread).

The service answers by classification label: `allowed` 200, `refused` 401 with a reason,
`slow` after 5 s; the path `/redirect` answers 302 to 10.0.0.1. The same service also runs over
HTTPS (certificates from a CA made here, which the server trusts through SSL_CERT_FILE), once
requiring a client certificate and once with a certificate from a CA the server does not trust.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from conftest import LOOPBACK_RECEIVERS, assert_json, make_user

REASON = "you lack the clearance"
TIMEOUT = 1.0


class AuthService(BaseHTTPRequestHandler):
    requests: list[dict] = []
    # Over HTTPS: the subject of each client certificate presented (None: none).
    client_certificates: list[str | None] = []

    def do_POST(self):  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        AuthService.requests.append(body)
        if isinstance(self.connection, ssl.SSLSocket):
            peer = self.connection.getpeercert()
            AuthService.client_certificates.append(
                dict(x[0] for x in peer["subject"])["commonName"] if peer else None)
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "http://10.0.0.1/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        label = body["project_classification_label"]
        if label == "slow":
            time.sleep(5)
        status, answer = (200, {}) if label in ("allowed", "slow") else (401, {"reason": REASON})
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def run_service(context: ssl.SSLContext | None = None):
    """The service on loopback (over TLS with `context`): its URL and the server to shut down."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), AuthService)
    if context is not None:
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
        # A refused handshake is what some tests want; keep it out of the output.
        httpd.handle_error = lambda *args: None
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    scheme = "https://localhost" if context else "http://127.0.0.1"
    return f"{scheme}:{httpd.server_address[1]}", httpd


@pytest.fixture(scope="module")
def service():
    url, httpd = run_service()
    yield url
    httpd.shutdown()


class Pki:
    """A CA the server trusts, another it does not, and certificates from them (PEM files
    and text)."""

    PASSPHRASE = "correct horse"

    def __init__(self, directory):
        self.dir = directory
        now = datetime.datetime.now(datetime.timezone.utc)
        self._validity = (now - datetime.timedelta(days=1), now + datetime.timedelta(days=30))
        self.ca_key, self.ca = self._ca("Trellis test CA")
        self.ca_file = self._write("ca.pem", self._pem(self.ca))
        self.server = self._issue("localhost", self.ca_key, self.ca, server=True)
        self.other_ca_key, self.other_ca = self._ca("Untrusted CA")
        self.untrusted_server = self._issue("localhost", self.other_ca_key, self.other_ca,
                                            server=True)
        key, cert = self._issue("trellis", self.ca_key, self.ca, server=False)
        self.client_cert = self._pem(cert)
        self.client_key = key.private_bytes(serialization.Encoding.PEM,
                                            serialization.PrivateFormat.PKCS8,
                                            serialization.NoEncryption()).decode()
        encryption = serialization.BestAvailableEncryption(self.PASSPHRASE.encode())
        self.client_key_encrypted = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption).decode()
        self.client_key_traditional = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
            encryption).decode()

    @staticmethod
    def _pem(cert) -> str:
        return cert.public_bytes(serialization.Encoding.PEM).decode()

    def _write(self, name: str, text: str) -> str:
        path = self.dir / name
        path.write_text(text)
        return str(path)

    def _builder(self, subject: str, issuer, public_key):
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
        return (x509.CertificateBuilder().subject_name(name)
                .issuer_name(issuer.subject if issuer is not None else name)
                .public_key(public_key).serial_number(x509.random_serial_number())
                .not_valid_before(self._validity[0]).not_valid_after(self._validity[1]))

    def _ca(self, name: str):
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (self._builder(name, None, key.public_key())
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .add_extension(x509.KeyUsage(False, False, False, False, False, True, True,
                                             False, False), critical=True)
                .sign(key, hashes.SHA256()))
        return key, cert

    def _issue(self, name: str, ca_key, ca, server: bool):
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (self._builder(name, ca, key.public_key())
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None),
                                  critical=True))
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False).add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        else:
            builder = builder.add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        return key, builder.sign(ca_key, hashes.SHA256())

    def server_context(self, untrusted=False, require_client=False) -> ssl.SSLContext:
        key, cert = self.untrusted_server if untrusted else self.server
        prefix = "untrusted-" if untrusted else ""
        key_file = self._write(f"{prefix}server-key.pem", key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()).decode())
        cert_file = self._write(f"{prefix}server.pem", self._pem(cert))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_file, key_file)
        if require_client:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(self.ca_file)
        return context


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return Pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def server(make_server, pki):
    """This module's server trusts the test CA (and only it) for outbound HTTPS, and its
    operator opens loopback, where the services listen."""
    return make_server({"SSL_CERT_FILE": pki.ca_file, **LOOPBACK_RECEIVERS})


@pytest.fixture(scope="module")
def tls_services(pki):
    """The service over HTTPS: requiring a client certificate, and with an untrusted one."""
    mutual, httpd = run_service(pki.server_context(require_client=True))
    untrusted, other = run_service(pki.server_context(untrusted=True))
    yield {"mutual": mutual, "untrusted": untrusted}
    httpd.shutdown()
    other.shutdown()


def settings(server, **values):
    r = server.request("PUT", "/application/settings", token=server.root_token, json=values)
    assert_json(r, 200)


def enable(server, url, allow_local=True):
    settings(server, external_authorization_service_enabled=True,
             external_authorization_service_url=url,
             external_authorization_service_default_label="allowed",
             external_authorization_service_timeout=TIMEOUT,
             allow_local_requests_from_web_hooks_and_services=allow_local)


@pytest.fixture(scope="module")
def world(server, service):
    """A user, and public projects labelled allowed / refused / slow / none (default label)."""
    user = make_user(server, "ea")
    projects = {}
    for label in ("allowed", "refused", "slow", ""):
        r = server.request("POST", "/projects", token=server.root_token, json={
            "name": f"ea-{label or 'default'}", "visibility": "public",
            "external_authorization_classification_label": label})
        projects[label] = assert_json(r, 201)["id"]
    yield user, projects
    settings(server, external_authorization_service_enabled=False,
             allow_local_requests_from_web_hooks_and_services=False)


def get_project(server, project_id, token):
    return server.request("GET", f"/projects/{project_id}", token=token)


def test_allowed_and_refused_labels(server, service, world):
    (_, token), projects = world
    # Off: no one is asked.
    AuthService.requests.clear()
    assert get_project(server, projects["refused"], token).status_code == 200
    assert AuthService.requests == []
    enable(server, service)
    assert_json(get_project(server, projects["allowed"], token), 200)
    assert_json(get_project(server, projects[""], token), 200)
    for who in (token, server.root_token):  # administrators too
        r = get_project(server, projects["refused"], who)
        assert_json(r, 403, {"message": f"403 Forbidden - {REASON}"})
        r = server.request("GET", f"/projects/{projects['refused']}/issues", token=who)
        assert_json(r, 403, {"message": f"403 Forbidden - {REASON}"})
    sent = [b for b in AuthService.requests if b["project_classification_label"] == "refused"]
    assert sent and set(sent[0]) >= {"user_identifier", "project_classification_label",
                                     "identities"}
    assert "@" in sent[0]["user_identifier"]
    # Decisions are cached: asking again does not reach the service.
    before = len(AuthService.requests)
    assert get_project(server, projects["allowed"], token).status_code == 200
    assert len(AuthService.requests) == before
    # Anonymous callers are refused for labelled projects.
    assert server.request("GET", f"/projects/{projects['allowed']}").status_code == 403


def test_slow_service_is_a_refusal_within_the_timeout(server, service, world):
    _, projects = world
    enable(server, service)
    started = time.monotonic()
    r = get_project(server, projects["slow"], server.root_token)
    elapsed = time.monotonic() - started
    assert r.status_code == 403
    assert "time" in r.json()["message"]
    assert elapsed < TIMEOUT + 3  # loosely: well before the service's 5 s


def test_timeout_setting_is_capped_by_the_operator(server, service, world):
    """external_authorization_service_timeout allows 10 s; --plugin-max-timeout-ms (1 s by
    default) caps it, so the 5 s service is still a refusal at about 1 s."""
    _, projects = world
    enable(server, service)
    settings(server, external_authorization_service_timeout=10)
    started = time.monotonic()
    r = get_project(server, projects["slow"], server.root_token)
    elapsed = time.monotonic() - started
    assert r.status_code == 403
    assert "time" in r.json()["message"]
    assert elapsed < 3


def test_service_down_is_a_refusal(server, service, world):
    _, projects = world
    enable(server, "http://127.0.0.1:9/authorize")  # changing settings drops cached decisions
    r = get_project(server, projects["allowed"], server.root_token)
    assert r.status_code == 403
    assert r.json()["message"].startswith("403 Forbidden - ")


@pytest.mark.parametrize("url,refusal", [
    ("http://127.0.0.1:{port}/", "Requests to localhost are not allowed"),
    ("http://localhost:{port}/", "Requests to localhost are not allowed"),
    ("http://[::1]:{port}/", "Requests to localhost are not allowed"),
    ("http://10.0.0.1:{port}/", "Requests to the local network are not allowed"),
    ("http://169.254.169.254:{port}/", "Requests to the link local network are not allowed"),
])
def test_local_addresses_need_the_setting(server, service, world, url, refusal):
    _, projects = world
    port = service.rsplit(":", 1)[1]
    enable(server, url.format(port=port), allow_local=False)
    r = get_project(server, projects["allowed"], server.root_token)
    assert_json(r, 403)
    assert refusal in r.json()["message"]


def test_redirect_is_not_followed(server, service, world):
    _, projects = world
    AuthService.requests.clear()
    enable(server, service + "/redirect")
    r = get_project(server, projects["allowed"], server.root_token)
    assert r.status_code == 403
    assert len(AuthService.requests) == 1  # asked once; 10.0.0.1 never reached


def built_in_id(server):
    rows = assert_json(server.request("GET", "/application/plugins", token=server.root_token), 200)
    return next(p["id"] for p in rows if p["name"] == "external-authorization" and p["built_in"])


def test_outbound_http_must_be_granted_at_bind_time(server, service, world):
    _, projects = world
    plugin = built_in_id(server)
    config = {"url": service + "/"}
    r = server.request("PUT", "/application/plugin_hooks/external_authorization",
                       token=server.root_token, json={"plugin_id": plugin, "config": config})
    assert r.status_code == 400
    assert "outbound_http" in r.json()["message"]
    for bad in (["ftp://x"], ["http://a/path"], "not a url"):
        r = server.request("PUT", "/application/plugin_hooks/external_authorization",
                           token=server.root_token,
                           json={"plugin_id": plugin, "config": config, "outbound_http": bad})
        assert r.status_code == 400, bad
    # Granted another origin than the one it calls: the request is refused at call time.
    r = server.request("PUT", "/application/plugin_hooks/external_authorization",
                       token=server.root_token,
                       json={"plugin_id": plugin, "config": config,
                             "outbound_http": ["http://127.0.0.2:1"]})
    assert_json(r, 200)
    enable(server, service)
    r = get_project(server, projects["allowed"], server.root_token)
    assert r.status_code == 403
    assert "not among the origins granted" in r.json()["message"]
    # Granted the right origin: it works.
    r = server.request("PUT", "/application/plugin_hooks/external_authorization",
                       token=server.root_token,
                       json={"plugin_id": plugin, "config": config, "outbound_http": [service]})
    assert_json(r, 200)
    settings(server, external_authorization_service_timeout=TIMEOUT + 0.5)  # drop the cache
    assert_json(get_project(server, projects["allowed"], server.root_token), 200)
    r = server.request("DELETE", "/application/plugin_hooks/external_authorization",
                       token=server.root_token)
    assert r.status_code == 204


def test_lists_leave_refused_projects_out(server, service, world):
    (_, token), projects = world
    enable(server, service)
    for label, pid in projects.items():
        r = server.request("POST", f"/projects/{pid}/issues", token=server.root_token,
                           json={"title": f"issue in {label or 'default'}"})
        assert r.status_code == (403 if label in ("refused", "slow") else 201), label
    for who in (token, server.root_token):
        r = server.request("GET", "/projects", token=who, params={"per_page": 100})
        ids = {p["id"] for p in assert_json(r, 200)}
        assert projects["allowed"] in ids and projects[""] in ids
        assert projects["refused"] not in ids and projects["slow"] not in ids
        assert int(r.headers["X-Total"]) == len(ids)
        r = server.request("GET", "/issues", token=who, params={"scope": "all", "per_page": 100})
        issues = assert_json(r, 200)
        assert {i["project_id"] for i in issues} <= {projects["allowed"], projects[""]}
        assert int(r.headers["X-Total"]) == len(issues)


def client_certificate(server, cert=None, key="", passphrase=""):
    """Sets (or, without `cert`, clears) the service's client certificate settings."""
    settings(server, external_auth_client_cert=cert, external_auth_client_key=key,
             external_auth_client_key_pass=passphrase)


def test_https_with_a_client_certificate(server, tls_services, pki, world):
    (_, token), projects = world
    client_certificate(server, pki.client_cert, pki.client_key)
    enable(server, tls_services["mutual"] + "/authorize")
    AuthService.client_certificates.clear()
    assert_json(get_project(server, projects["allowed"], token), 200)
    r = get_project(server, projects["refused"], token)
    assert_json(r, 403, {"message": f"403 Forbidden - {REASON}"})
    assert AuthService.client_certificates == ["trellis", "trellis"]
    # The key is write-only: the settings show the certificate, not the key.
    shown = assert_json(server.request("GET", "/application/settings",
                                       token=server.root_token), 200)
    assert shown["external_auth_client_cert"] == pki.client_cert
    assert shown.get("external_auth_client_key") in (None, "")


def test_https_without_the_required_client_certificate_is_refused(server, tls_services, world):
    _, projects = world
    client_certificate(server)
    enable(server, tls_services["mutual"] + "/authorize")
    AuthService.requests.clear()
    r = get_project(server, projects["allowed"], server.root_token)
    assert r.status_code == 403
    assert AuthService.requests == []  # the handshake failed: nothing was sent


@pytest.mark.parametrize("key,passphrase,allowed,message", [
    ("client_key_encrypted", Pki.PASSPHRASE, True, None),
    ("client_key_encrypted", "wrong", False, "wrong passphrase"),
    ("client_key_encrypted", "", False, "no passphrase is set"),
    ("client_key_traditional", Pki.PASSPHRASE, False, "traditional encryption"),
])
def test_encrypted_client_keys(server, tls_services, pki, world, key, passphrase, allowed,
                               message):
    _, projects = world
    client_certificate(server, pki.client_cert, getattr(pki, key), passphrase)
    enable(server, tls_services["mutual"] + "/authorize")
    AuthService.requests.clear()
    r = get_project(server, projects["allowed"], server.root_token)
    if allowed:
        assert_json(r, 200)
    else:
        assert r.status_code == 403
        assert message in r.json()["message"]
        assert AuthService.requests == []  # fail closed: no request without the certificate


def test_untrusted_server_certificate_is_refused(server, tls_services, pki, world):
    _, projects = world
    client_certificate(server, pki.client_cert, pki.client_key)
    enable(server, tls_services["untrusted"] + "/authorize")
    AuthService.requests.clear()
    r = get_project(server, projects["allowed"], server.root_token)
    assert r.status_code == 403
    assert "certificate" in r.json()["message"].lower()
    assert AuthService.requests == []
    client_certificate(server)


def test_every_project_and_issue_list_leaves_refused_projects_out(server, service, world):
    """Group, user, starred and fork lists, and group issues: filtered, X-Total agreeing."""
    (_, token), projects = world
    settings(server, external_authorization_service_enabled=False)
    root = server.gitlab()
    group = root.groups.create({"name": "ea-group", "path": f"ea-group-{time.time_ns()}",
                                "visibility": "public"})
    in_group = {}
    for label in ("allowed", "refused"):
        r = server.request("POST", "/projects", token=server.root_token, json={
            "name": f"ea-group-{label}", "visibility": "public", "namespace_id": group.id,
            "external_authorization_classification_label": label})
        in_group[label] = assert_json(r, 201)["id"]
        r = server.request("POST", f"/projects/{in_group[label]}/issues",
                           token=server.root_token, json={"title": f"group issue {label}"})
        assert_json(r, 201)
        r = server.request("POST", f"/projects/{in_group[label]}/fork/{projects['allowed']}",
                           token=server.root_token)
        assert r.status_code in (200, 201), r.text
    for pid in (projects["allowed"], projects["refused"]):
        r = server.request("POST", f"/projects/{pid}/star", token=server.root_token)
        assert r.status_code in (201, 304), r.text
    enable(server, service)
    root_id = assert_json(server.request("GET", "/user", token=server.root_token), 200)["id"]
    lists = {
        f"/groups/{group.id}/issues": "project_id",
        f"/users/{root_id}/projects": "id",
        f"/users/{root_id}/starred_projects": "id",
        f"/projects/{projects['allowed']}/forks": "id",
    }
    refused = {projects["refused"], projects["slow"], in_group["refused"]}
    for who in (token, server.root_token):
        for path, field in lists.items():
            r = server.request("GET", path, token=who, params={"per_page": 100})
            rows = assert_json(r, 200)
            ids = {row[field] for row in rows}
            assert ids and not ids & refused, (path, ids)
            assert int(r.headers["X-Total"]) == len(rows), path
        shown = assert_json(server.request("GET", f"/groups/{group.id}", token=who), 200)
        assert [p["id"] for p in shown["projects"]] == [in_group["allowed"]]


def test_group_project_lists_leave_refused_projects_out(server, service, world):
    """`GET /groups/:id/projects` (own and shared projects) and `/projects/shared`."""
    (_, token), projects = world
    settings(server, external_authorization_service_enabled=False)
    group = server.gitlab().groups.create({"name": "ea-gp", "path": f"ea-gp-{time.time_ns()}",
                                           "visibility": "public"})
    own = {}
    for label in ("allowed", "refused"):
        r = server.request("POST", "/projects", token=server.root_token, json={
            "name": f"ea-gp-{label}", "visibility": "public", "namespace_id": group.id,
            "external_authorization_classification_label": label})
        own[label] = assert_json(r, 201)["id"]
        r = server.request("POST", f"/projects/{projects[label]}/share", token=server.root_token,
                           json={"group_id": group.id, "group_access": 30})
        assert_json(r, 201)
    for who in (token, server.root_token):
        r = server.request("GET", f"/groups/{group.id}/projects", token=who)
        assert len(assert_json(r, 200)) == int(r.headers["X-Total"]) == 4
    enable(server, service)
    lists = {"projects": {own["allowed"], projects["allowed"]},
             "projects/shared": {projects["allowed"]}}
    for who in (token, server.root_token):
        for suffix, expected in lists.items():
            r = server.request("GET", f"/groups/{group.id}/{suffix}", token=who,
                               params={"per_page": 1})
            rows = assert_json(r, 200)
            assert int(r.headers["X-Total"]) == len(expected), suffix
            r = server.request("GET", f"/groups/{group.id}/{suffix}", token=who,
                               params={"per_page": 100})
            assert {p["id"] for p in assert_json(r, 200)} == expected, suffix
            assert rows and rows[0]["id"] in expected
