"""Git over smart HTTP, driven with the real `git` client: clone, fetch and push at GitLab's
URLs, HTTP Basic credentials (tokens, OAuth tokens, passwords), GitLab's access rules and its
answers (401 with a Basic challenge, 403 with the reason git prints, 404), tenants kept apart.

git runs with no system or user configuration (GIT_CONFIG_NOSYSTEM, HOME in a temporary
directory), no credential helper and no prompts; credentials travel in the URL.
"""

from __future__ import annotations

import gzip
import os
import secrets
import subprocess
import tempfile
from pathlib import Path

import pytest
import requests

from conftest import (PASSWORD, assert_json, git_url, make_user, other_tenant, require_program,
                      run_git)

CHALLENGE = 'Basic realm="GitLab"'
NOT_FOUND = ("The project you were looking for could not be found or you don't have "
             "permission to view it.")


@pytest.fixture(scope="module", autouse=True)
def _git():
    require_program("git", "git")


@pytest.fixture(scope="module")
def home():
    with tempfile.TemporaryDirectory(prefix="trellis-git-home-") as path:
        yield Path(path)


git = run_git
url = git_url


def workdir(home: Path) -> Path:
    return home / secrets.token_hex(4)


def commit(home: Path, repo: Path, name: str, content: str):
    (repo / name).write_text(content)
    git(home, "add", name, cwd=repo)
    git(home, "commit", "-q", "-m", f"add {name}", cwd=repo)


def info_refs(server, path: str, service="git-upload-pack", auth=None, host=None, **headers):
    if host:
        headers["Host"] = f"{host}:{server.port}"
    return requests.get(f"{server.url}/{path}/info/refs", params={"service": service},
                        auth=auth, headers=headers, timeout=30, allow_redirects=False)


def make_project(gl, **attrs):
    return gl.projects.create({"name": "p" + secrets.token_hex(3), **attrs})


@pytest.fixture(scope="module")
def public(gl):
    return make_project(gl, visibility="public", initialize_with_readme=True)


@pytest.fixture(scope="module")
def private(gl):
    return make_project(gl, visibility="private", initialize_with_readme=True)


def statistics(server, project_id: int) -> dict:
    r = server.request("GET", f"/projects/{project_id}?statistics=true",
                       token=server.root_token)
    return assert_json(r, 200)


def test_clone_push_and_fetch_with_a_token(server, home, private):
    token = server.create_token(scopes="write_repository")
    remote = url(server, private.path_with_namespace + ".git", "root", token)
    first = workdir(home)
    git(home, "clone", "-q", remote, str(first))
    assert (first / "README.md").exists()
    # a pack larger than any request body limit of the API (bodies are streamed to git)
    (first / "noise.bin").write_bytes(os.urandom(3 * 1024 * 1024))
    git(home, "add", "noise.bin", cwd=first)
    commit(home, first, "hello.py", "print('hello')\n")
    pushed = git(home, "push", "-q", "origin", "HEAD", cwd=first)
    assert pushed.returncode == 0
    # The push is visible to a second clone, and the project is up to date once it returns.
    second = workdir(home)
    git(home, "clone", "-q", remote, str(second))
    assert (second / "hello.py").read_text() == "print('hello')\n"
    assert (second / "noise.bin").read_bytes() == (first / "noise.bin").read_bytes()
    project = statistics(server, private.id)
    assert project["empty_repo"] is False
    assert project["statistics"]["commit_count"] == 2
    # fetch (protocol v2, git's default) brings a later commit to the first copy
    commit(home, second, "two.txt", "2\n")
    git(home, "push", "-q", "origin", "HEAD", cwd=second)
    git(home, "-c", "protocol.version=2", "fetch", "-q", "origin", cwd=first)
    log = git(home, "log", "--oneline", "origin/HEAD", cwd=first).stdout
    assert "add two.txt" in log


def test_info_refs_answers_like_git_http_backend(server, public):
    r = info_refs(server, public.path_with_namespace + ".git")
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "application/x-git-upload-pack-advertisement"
    assert r.headers["Cache-Control"] == "no-cache"
    assert r.content.startswith(b"001e# service=git-upload-pack\n0000")
    assert f"refs/heads/{public.default_branch}".encode() in r.content
    v2 = info_refs(server, public.path_with_namespace + ".git", **{"Git-Protocol": "version=2"})
    assert v2.content[34:].startswith(b"000eversion 2\n")
    # without .git, GitLab redirects info/refs to the .git URL (and git follows it)
    bare = info_refs(server, public.path_with_namespace)
    assert bare.status_code == 301
    assert bare.headers["Location"] == (
        f"/{public.path_with_namespace}.git/info/refs?service=git-upload-pack")
    r = requests.post(f"{server.url}/{public.path_with_namespace}/git-upload-pack", timeout=30)
    assert r.status_code == 404
    # dumb HTTP is not served
    r = requests.get(f"{server.url}/{public.path_with_namespace}.git/info/refs", timeout=30)
    assert r.status_code == 403


def test_gzipped_requests_are_inflated(server, public):
    def pkt(line: bytes) -> bytes:
        return b"%04x" % (len(line) + 4) + line
    body = pkt(b"command=ls-refs\n") + b"0001" + b"0000"
    r = requests.post(
        f"{server.url}/{public.path_with_namespace}.git/git-upload-pack",
        data=gzip.compress(body), timeout=30,
        headers={"Content-Encoding": "gzip", "Git-Protocol": "version=2",
                 "Content-Type": "application/x-git-upload-pack-request"})
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "application/x-git-upload-pack-result"
    assert f"refs/heads/{public.default_branch}".encode() in r.content


def test_anonymous_clones_public_but_is_asked_for_credentials_elsewhere(server, home, public,
                                                                         private):
    target = workdir(home)
    git(home, "clone", "-q", url(server, public.path_with_namespace), str(target))
    assert (target / "README.md").exists()
    denied = git(home, "clone", "-q", url(server, private.path_with_namespace + ".git"),
                 str(workdir(home)), check=False)
    assert denied.returncode != 0
    assert "terminal prompts disabled" in denied.stderr or "Authentication failed" in denied.stderr
    for path in (private.path_with_namespace, "root/does-not-exist"):
        r = info_refs(server, path + ".git")
        assert r.status_code == 401
        assert r.headers["WWW-Authenticate"] == CHALLENGE
    # pushing always needs credentials, even to a public project
    r = info_refs(server, public.path_with_namespace + ".git", service="git-receive-pack")
    assert r.status_code == 401 and r.headers["WWW-Authenticate"] == CHALLENGE


def test_a_guest_cannot_push(server, gl, home, public, private):
    user, token = make_user(server, "guest")
    for project in (public, private):
        project.members.create({"user_id": user.id, "access_level": 10})
    target = workdir(home)
    git(home, "clone", "-q", url(server, public.path_with_namespace + ".git", user.username,
                                 token), str(target))
    commit(home, target, "guest.txt", "g\n")
    pushed = git(home, "push", "origin", "HEAD", cwd=target, check=False)
    assert pushed.returncode != 0
    assert "You are not allowed to push code to this project." in pushed.stderr
    r = info_refs(server, public.path_with_namespace + ".git", service="git-receive-pack",
                  auth=(user.username, token))
    assert r.status_code == 403
    assert r.text == "You are not allowed to push code to this project."
    # a guest of a private project may see it but not read its code
    r = info_refs(server, private.path_with_namespace + ".git", auth=(user.username, token))
    assert r.status_code == 403
    assert r.text == "You are not allowed to download code from this project."
    # someone with no membership gets 404 for the private project
    _, stranger = make_user(server, "stranger")
    r = info_refs(server, private.path_with_namespace + ".git", auth=("x", stranger))
    assert r.status_code == 404 and r.text == NOT_FOUND


def test_token_scopes(server, private):
    path = private.path_with_namespace + ".git"
    for scopes in ("read_repository", "read_api", "api", "write_repository"):
        token = server.create_token(scopes=scopes)
        assert info_refs(server, path, auth=("anyone", token)).status_code == 200, scopes
    for scopes in ("read_user", "read_registry"):
        token = server.create_token(scopes=scopes)
        r = info_refs(server, path, auth=("root", token))
        assert r.status_code == 403 and r.text == "You are not allowed to download code.", scopes
    reader = server.create_token(scopes="read_repository")
    r = info_refs(server, path, service="git-receive-pack", auth=("root", reader))
    assert r.status_code == 403 and r.text == "You are not allowed to upload code."
    writer = server.create_token(scopes="write_repository")
    r = info_refs(server, path, service="git-receive-pack", auth=("root", writer))
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "application/x-git-receive-pack-advertisement"


def test_oauth_token_as_password(server, private):
    r = server.request("POST", "/applications", token=server.root_token, data={
        "name": "git-" + secrets.token_hex(3), "redirect_uri": "http://localhost/cb",
        "scopes": "read_repository api"})
    app = assert_json(r, 201)
    r = requests.post(server.url + "/oauth/token", timeout=30, data={
        "grant_type": "password", "username": "root", "password": root_password(server),
        "scope": "read_repository"}, auth=(app["application_id"], app["secret"]))
    token = assert_json(r, 200)["access_token"]
    path = private.path_with_namespace + ".git"
    assert info_refs(server, path, auth=("oauth2", token)).status_code == 200
    r = info_refs(server, path, service="git-receive-pack", auth=("oauth2", token))
    assert r.status_code == 403 and r.text == "You are not allowed to upload code."


def root_password(server) -> str:
    """Gives root a known password (through the API) and returns it."""
    r = server.request("PUT", "/users/1", token=server.root_token,
                       data={"password": PASSWORD, "skip_reconfirmation": "true"})
    assert_json(r, 200)
    return PASSWORD


def test_passwords_and_bad_credentials(server, home, gl, private):
    user, _ = make_user(server, "dev")
    private.members.create({"user_id": user.id, "access_level": 30})
    path = private.path_with_namespace + ".git"
    target = workdir(home)
    git(home, "clone", "-q", url(server, path, user.username, PASSWORD), str(target))
    commit(home, target, "dev.txt", "d\n")
    # a branch of their own: the default branch is protected (default_branch_protection)
    git(home, "push", "-q", "origin", "HEAD:dev-work", cwd=target)
    bad = info_refs(server, path, auth=(user.username, "wrong-password"))
    assert bad.status_code == 401 and bad.headers["WWW-Authenticate"] == CHALLENGE
    assert bad.text.startswith("HTTP Basic: Access denied.")
    failed = git(home, "clone", "-q", url(server, path, user.username, "wrong-password"),
                 str(workdir(home)), check=False)
    assert failed.returncode != 0 and "Authentication failed" in failed.stderr
    # with passwords turned off for git, only tokens work
    r = server.request("PUT", "/application/settings", token=server.root_token,
                       data={"password_authentication_enabled_for_git": "false"})
    assert_json(r, 200)
    try:
        assert info_refs(server, path, auth=(user.username, PASSWORD)).status_code == 401
    finally:
        server.request("PUT", "/application/settings", token=server.root_token,
                       data={"password_authentication_enabled_for_git": "true"})
    # blocked users are refused whatever they present
    token = server.create_token_api(user_id=user.id, scopes=["read_repository"])["token"]
    assert info_refs(server, path, auth=(user.username, token)).status_code == 200
    assert server.request("POST", f"/users/{user.id}/block",
                          token=server.root_token).status_code == 201
    assert info_refs(server, path, auth=(user.username, token)).status_code == 401
    assert info_refs(server, path, auth=(user.username, PASSWORD)).status_code == 401


def test_first_push_sets_the_default_branch(server, home, gl):
    project = make_project(gl, visibility="private")
    assert project.empty_repo is True
    token = server.create_token(scopes="write_repository")
    target = workdir(home)
    git(home, "init", "-q", str(target))
    commit(home, target, "first.txt", "1\n")
    git(home, "checkout", "-q", "-b", "trunk", cwd=target)
    remote = url(server, project.path_with_namespace + ".git", "root", token)
    git(home, "push", "-q", remote, "trunk", cwd=target)
    shown = statistics(server, project.id)
    assert shown["default_branch"] == "trunk"
    assert shown["empty_repo"] is False and shown["statistics"]["commit_count"] == 1
    # HEAD follows, so a clone checks the branch out
    copy = workdir(home)
    git(home, "clone", "-q", remote, str(copy))
    assert (copy / "first.txt").exists()


def test_archived_and_disabled_repositories(server, gl):
    project = make_project(gl, visibility="private", initialize_with_readme=True)
    token = server.create_token(scopes="api")
    path = project.path_with_namespace + ".git"
    project.archive()
    r = info_refs(server, path, service="git-receive-pack", auth=("root", token))
    assert r.status_code == 403
    assert r.text == "You are not allowed to push code to an archived project."
    assert info_refs(server, path, auth=("root", token)).status_code == 200
    project.unarchive()
    r = server.request("PUT", f"/projects/{project.id}", token=server.root_token,
                       data={"repository_access_level": "disabled"})
    assert_json(r, 200)
    r = info_refs(server, path, auth=("root", token))
    assert r.status_code == 403
    assert r.text == "You are not allowed to download code from this project."


def test_tenants_are_kept_apart(server, public, private):
    host, other_root = other_tenant(server, "git")
    # the other tenant's root, on its own host, finds nothing at this tenant's paths
    for project in (public, private):
        r = info_refs(server, project.path_with_namespace + ".git", auth=("root", other_root),
                      host=host)
        assert r.status_code == 404 and r.text == NOT_FOUND
    # anonymous, the public project of this tenant is not there either
    r = info_refs(server, public.path_with_namespace + ".git", host=host)
    assert r.status_code == 401
    # and this tenant's token means nothing on the other host
    token = server.create_token(scopes="api")
    r = info_refs(server, public.path_with_namespace + ".git", auth=("root", token), host=host)
    assert r.status_code == 401
