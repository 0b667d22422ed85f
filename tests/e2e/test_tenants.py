"""Multi-tenancy: tenants chosen by Host header, fully isolated from each other."""

import re

import pytest

from conftest import UNAUTHORIZED, assert_json

B = "b.test"
TOKEN_NOT_FOUND = {"message": "404 Personal Access Token Not Found"}
A_EXTRA_TOKENS = 5


@pytest.fixture(scope="module")
def tenant_b(server):
    """Creates tenant b.test and a root token for it; waits until the server serves it."""
    out = server.cli("tenant", "create", "--host", B).stdout
    token = server.create_token(user="root", name="t", scopes="api", tenant=B)

    def visible():
        return server.request("GET", "/user", token=token, host=B).status_code == 200

    assert server.wait_for(visible, timeout=10, interval=0.2), "tenant b.test never became visible"
    return {"output": out, "token": token}


@pytest.fixture(scope="module")
def a_tokens(server):
    """Extra tokens in the default tenant (A), so its ids run past B's."""
    return [server.create_token_api(name=f"a-{i}", scopes=["api"]) for i in range(A_EXTRA_TOKENS)]


def listing(server, token, host=None):
    r = server.request("GET", "/personal_access_tokens", token=token, host=host,
                       params={"per_page": 100})
    return assert_json(r, 200)


# ---- CLI -----------------------------------------------------------------


def test_tenant_create_output(tenant_b):
    out = tenant_b["output"]
    assert re.search(r"^tenant \d+ created for host b\.test$", out, re.M), out
    m = re.search(r"^root password: (\S+)$", out, re.M)
    assert m, out
    assert len(m.group(1)) >= 8


def test_tenant_list_prints_both(server, tenant_b):
    out = server.cli("tenant", "list").stdout
    lines = [l for l in out.splitlines() if l.strip()]
    assert len(lines) >= 2, out
    assert any("b.test" in l for l in lines), out
    assert any("b.test" not in l for l in lines), out  # the default tenant


def test_tenant_create_duplicate_fails(server, tenant_b):
    proc = server.cli("tenant", "create", "--host", B, check=False)
    assert proc.returncode != 0


def test_token_create_for_unknown_tenant_fails(server):
    proc = server.cli("token", "create", "--user", "root", "--name", "x", "--scopes", "api",
                      "--tenant", "nosuch.test", check=False)
    assert proc.returncode != 0


# ---- authentication is per tenant ----------------------------------------


def test_b_root_token_works_on_b(server, tenant_b):
    r = server.request("GET", "/user", token=tenant_b["token"], host=B)
    me = assert_json(r, 200)
    assert me["id"] == 1
    assert me["username"] == "root"
    assert me["is_admin"] is True
    assert me["web_url"] == f"http://b.test:{server.port}/root"


def test_b_host_is_case_insensitive(server, tenant_b):
    r = server.request("GET", "/user", token=tenant_b["token"], host=f"B.TeSt:{server.port}")
    assert assert_json(r, 200)["username"] == "root"


def test_b_host_without_port(server, tenant_b):
    r = server.request("GET", "/user", token=tenant_b["token"], headers={"Host": "b.test"})
    assert assert_json(r, 200)["username"] == "root"


def test_b_token_is_401_on_default_tenant(server, tenant_b):
    assert_json(server.request("GET", "/user", token=tenant_b["token"]), 401, UNAUTHORIZED)


def test_b_token_is_401_on_unclaimed_host(server, tenant_b):
    r = server.request("GET", "/user", token=tenant_b["token"], host="other.test")
    assert_json(r, 401, UNAUTHORIZED)


def test_default_token_is_401_on_b(server, tenant_b):
    assert_json(server.request("GET", "/user", token=server.root_token, host=B), 401, UNAUTHORIZED)


def test_default_token_works_on_unclaimed_host(server, tenant_b):
    r = server.request("GET", "/user", token=server.root_token, host="other.test")
    assert assert_json(r, 200)["web_url"] == f"http://other.test:{server.port}/root"


def test_default_token_via_query_is_401_on_b(server, tenant_b):
    r = server.request("GET", "/user", host=B, params={"access_token": server.root_token})
    assert_json(r, 401, UNAUTHORIZED)


def test_python_gitlab_on_b(server, tenant_b):
    gl = server.gitlab(tenant_b["token"], host=B)
    gl.auth()
    assert gl.user.username == "root"
    assert gl.user.web_url == f"http://b.test:{server.port}/root"
    tokens = gl.personal_access_tokens.list(get_all=True)
    assert [t.name for t in tokens] == ["t"]


# ---- data is per tenant --------------------------------------------------


def test_a_token_id_is_404_on_b(server, tenant_b, a_tokens):
    b_rows = listing(server, tenant_b["token"], host=B)
    assert [t["name"] for t in b_rows] == ["t"]  # only B's CLI token so far
    b_ids = {t["id"] for t in b_rows}
    assert 2 not in b_ids
    r = server.request("GET", "/personal_access_tokens/2", token=tenant_b["token"], host=B)
    assert_json(r, 404, TOKEN_NOT_FOUND)
    a_id = max(t["id"] for t in a_tokens)
    assert a_id not in b_ids
    r = server.request("GET", f"/personal_access_tokens/{a_id}", token=tenant_b["token"], host=B)
    assert_json(r, 404, TOKEN_NOT_FOUND)
    # ...while A sees it
    r = server.request("GET", f"/personal_access_tokens/{a_id}", token=server.root_token)
    assert assert_json(r, 200)["name"] == a_tokens[-1]["name"]


def test_b_has_own_ids(server, tenant_b):
    self_b = assert_json(server.request("GET", "/personal_access_tokens/self",
                                        token=tenant_b["token"], host=B), 200)
    assert self_b["id"] == 1
    assert self_b["user_id"] == 1
    assert self_b["name"] == "t"


def test_overlapping_ids_are_isolated(server, tenant_b, a_tokens):
    b_created = [server.create_token_api(name=f"b-{i}", scopes=["api"], token=tenant_b["token"], host=B)
                 for i in range(3)]
    a_rows = listing(server, server.root_token)
    b_rows = listing(server, tenant_b["token"], host=B)
    a_ids = {t["id"] for t in a_rows}
    b_ids = {t["id"] for t in b_rows}
    assert a_ids & b_ids, (a_ids, b_ids)  # ids overlap between tenants
    assert {t["name"] for t in b_rows} == {"t"} | {t["name"] for t in b_created}
    assert not any(t["name"].startswith("b-") or t["name"] == "t" for t in a_rows)
    assert {t["name"] for t in a_tokens} <= {t["name"] for t in a_rows}
    # the same id shows each tenant its own row
    for tid in sorted(a_ids & b_ids):
        ra = assert_json(server.request("GET", f"/personal_access_tokens/{tid}",
                                        token=server.root_token), 200)
        rb = assert_json(server.request("GET", f"/personal_access_tokens/{tid}",
                                        token=tenant_b["token"], host=B), 200)
        assert ra["name"] == next(t["name"] for t in a_rows if t["id"] == tid)
        assert rb["name"] == next(t["name"] for t in b_rows if t["id"] == tid)
        assert ra["name"] != rb["name"]


def test_b_tokens_only_work_on_b(server, tenant_b):
    created = server.create_token_api(name="b-only", scopes=["api"], token=tenant_b["token"], host=B)
    assert created["token"].startswith("glpat-")
    assert_json(server.request("GET", "/user", token=created["token"], host=B), 200)
    assert_json(server.request("GET", "/user", token=created["token"]), 401, UNAUTHORIZED)


def test_revoke_on_b_does_not_touch_a(server, tenant_b, a_tokens):
    victim = a_tokens[0]
    for _ in range(A_EXTRA_TOKENS + 2):
        if max(t["id"] for t in listing(server, tenant_b["token"], host=B)) >= victim["id"]:
            break
        server.create_token_api(name="b-filler", scopes=["api"], token=tenant_b["token"], host=B)
    b_row = next(t for t in listing(server, tenant_b["token"], host=B) if t["id"] == victim["id"])
    r = server.request("DELETE", f"/personal_access_tokens/{victim['id']}",
                       token=tenant_b["token"], host=B)
    assert r.status_code == 204, r.text
    row_b = assert_json(server.request("GET", f"/personal_access_tokens/{victim['id']}",
                                       token=tenant_b["token"], host=B), 200)
    assert row_b["name"] == b_row["name"] and row_b["revoked"] is True
    # A's token with the same id is untouched
    assert_json(server.request("GET", "/user", token=victim["token"]), 200)
    row_a = assert_json(server.request("GET", f"/personal_access_tokens/{victim['id']}",
                                       token=server.root_token), 200)
    assert row_a["name"] == victim["name"] and row_a["revoked"] is False


def test_b_pagination_links_use_b_host(server, tenant_b):
    r = server.request("GET", "/personal_access_tokens", token=tenant_b["token"], host=B)
    assert_json(r, 200)
    assert r.links["first"]["url"].startswith(f"http://b.test:{server.port}/api/v4/")


def test_b_revoked_token_rejected(server, tenant_b):
    created = server.create_token_api(name="b-revoke", scopes=["api"], token=tenant_b["token"], host=B)
    r = server.request("DELETE", "/personal_access_tokens/self", token=created["token"], host=B)
    assert r.status_code == 204
    r = server.request("GET", "/user", token=created["token"], host=B)
    assert_json(r, 401, {"error": "invalid_token", "error_description": "Token has been revoked."})
    assert_json(server.request("GET", "/user", token=tenant_b["token"], host=B), 200)


def test_health_on_b_host(server, tenant_b):
    r = server.request("GET", "/-/health", host=B)
    assert r.status_code == 200 and r.text.strip() == "GitLab OK"


# ---- links are built from the tenant, never from raw Host text ---------------------------

MALFORMED_HOST = {"message": "400 Bad request - Host header is malformed"}
POISONED_HOSTS = ["b.test:@evil.example", "b.test:80@evil.example", "root@b.test",
                  "b.test/evil", "b.test:80:80", "b.test:", "b.test:99999", "[::1"]


@pytest.mark.parametrize("host", POISONED_HOSTS)
def test_malformed_host_is_400_everywhere(server, tenant_b, host):
    """b.test:@evil.example used to resolve to tenant b and lend its text to every link."""
    assert_json(server.request("GET", "/user", token=tenant_b["token"], host=host), 400,
                MALFORMED_HOST)
    oidc = server.request("GET", server.url + "/.well-known/openid-configuration", host=host)
    assert oidc.status_code == 400 and "evil" not in oidc.text
    page = server.request("GET", server.url + "/users/sign_in", host=host)
    assert page.status_code == 400 and "evil" not in page.text


def mail_texts(server) -> str:
    folder = server.data_dir / "mail"
    return "".join(p.read_text(errors="replace") for p in folder.glob("*.eml")) \
        if folder.is_dir() else ""


def test_confirmation_mail_and_issuer_name_the_tenant(server, tenant_b):
    body = {"username": "mailed", "name": "Mailed", "email": "mailed@b.example",
            "password": "Secret-password-1"}
    r = server.request("POST", "/users", token=tenant_b["token"], host="b.test:@evil.example",
                       json=body)
    assert_json(r, 400, MALFORMED_HOST)
    r = server.request("POST", "/users", token=tenant_b["token"], host=f"B.TEST:{server.port}",
                       json=body)
    assert_json(r, 201)
    assert server.wait_for(lambda: "mailed@b.example" in mail_texts(server))
    mails = mail_texts(server)
    assert f"http://b.test:{server.port}/" in mails and "evil" not in mails
    meta = server.request("GET", server.url + "/.well-known/openid-configuration", host=f"B.TEST:{server.port}")
    assert assert_json(meta, 200)["issuer"] == f"http://b.test:{server.port}"


def test_a_command_started_beside_the_server_on_a_fresh_database_waits_its_turn(engine):
    """`trellis serve` and `trellis tenant create` started together on a fresh database (as a
    container's entrypoint may run them) take turns migrating and making root: before the
    startup lock, one of the two failed in four starts of five ("duplicate column name" from a
    migration applied twice, or "creating root")."""
    import threading

    from conftest import Server

    for attempt in range(3):
        server = Server(engine)
        try:
            started: list[BaseException | None] = []

            def start():
                try:
                    server.start()
                    started.append(None)
                except BaseException as error:  # reported below
                    started.append(error)

            thread = threading.Thread(target=start)
            thread.start()
            created = server.cli("tenant", "create", "--host", f"t{attempt}.test", check=False)
            thread.join(timeout=120)
            assert started == [None], f"the server failed to start: {started}"
            assert created.returncode == 0, created.stderr
            assert f"for host t{attempt}.test" in created.stdout
            # Both finished their bootstrap: one root in each tenant, the server's token works.
            assert server.request("GET", "/user", token=server.root_token).json()["username"] == "root"
            rows = server.sql("SELECT COUNT(*) FROM users WHERE username = 'root'")
            assert int(rows[0][0]) == 2
        finally:
            server.close()
