"""The per-tenant cap on concurrent clones and fetches (`--max-upload-packs-per-tenant`): with
one slot, a fetch that holds it makes the tenant's next clone wait and, after
`--upload-pack-queue-seconds`, fail with 429; another tenant clones meanwhile; once the slot
frees, clones work again."""

from __future__ import annotations

import secrets
import tempfile
import threading
from pathlib import Path

import pytest
import requests

from conftest import assert_json, git_url, other_tenant, require_program, run_git


@pytest.fixture(scope="module")
def capped(make_server):
    require_program("git", "git")
    return make_server({"TRELLIS_MAX_UPLOAD_PACKS_PER_TENANT": "1",
                        "TRELLIS_UPLOAD_PACK_QUEUE_SECONDS": "1"})


def project(server, token=None, host=None) -> dict:
    r = server.request("POST", "/projects", token=token or server.root_token, host=host,
                       json={"name": "slots" + secrets.token_hex(3), "visibility": "public",
                             "initialize_with_readme": True})
    return assert_json(r, 201)


def test_a_tenants_fetches_wait_for_its_own_slots(capped):
    held = project(capped)
    other_host, other_token = other_tenant(capped, "slots")
    elsewhere = project(capped, other_token, other_host)
    release, holding = threading.Event(), threading.Event()

    def stalled_request():
        holding.set()  # the request is under way: git waits for its body, holding the slot
        release.wait(60)
        yield b"0000"

    def hold_the_slot():
        try:
            requests.post(f"{capped.url}/{held['path_with_namespace']}.git/git-upload-pack",
                          data=stalled_request(), timeout=90,
                          headers={"Content-Type": "application/x-git-upload-pack-request"})
        except requests.RequestException:
            pass

    holder = threading.Thread(target=hold_the_slot, daemon=True)
    holder.start()
    with tempfile.TemporaryDirectory(prefix="trellis-slots-") as tmp:
        home = Path(tmp)
        assert holding.wait(10)
        try:
            url = git_url(capped, f"{held['path_with_namespace']}.git")
            for _ in range(50):  # until the holder's request has taken the slot
                refused = run_git(home, "clone", "-q", url, str(home / "refused"), check=False)
                if refused.returncode != 0:
                    break
                (home / "refused").rename(home / secrets.token_hex(4))
            assert refused.returncode != 0
            assert "429" in refused.stderr, refused.stderr

            other = (f"http://{other_host}:{capped.port}/"
                     f"{elsewhere['path_with_namespace']}.git")
            run_git(home, "-c", f"http.curloptResolve={other_host}:{capped.port}:127.0.0.1",
                    "clone", "-q", other, str(home / "other"))
            assert (home / "other" / "README.md").exists()
        finally:
            release.set()
            holder.join(timeout=30)
        run_git(home, "clone", "-q", url, str(home / "after"))
        assert (home / "after" / "README.md").exists()
