"""Git over SSH, driven with the real OpenSSH client and `git`: keys added through
`/user/keys` (python-gitlab), `ssh -T` GitLab's welcome, clone (ssh:// and scp-like URLs),
push and fetch, `git archive --remote` (both URL forms, refused as a clone is, and waiting for
the tenant's upload slot), the refusals GitLab gives (unknown key, expired key, blocked or
deactivated user, restricted key type, a Guest's push, unknown project, malformed command,
protocol turned off), tenants kept apart (each tenant reached over SSH has its own listener),
and a host key that survives a restart (StrictHostKeyChecking against a known_hosts written at
the first start). A GPG-signed tag pushed over SSH keeps its signature in the tags API's
`message`, as in GitLab. Push rules refuse and accept pushes over SSH as over HTTP: the
built-in plugin for a few fields, and the conventional-commits example uploaded through the
API, swapped in without a restart.

ssh runs with BatchMode, IdentitiesOnly and its own known_hosts; git with no system or user
configuration.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import secrets
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pytest
import requests

from conftest import (assert_json, bind, commits_stream, free_port, gpg_signing_key, make_user,
                      other_tenant, prescans_used, require_program, upload)

NOT_FOUND = ("The project you were looking for could not be found or you don't have "
             "permission to view it.")
DENIED = "Permission denied (publickey)"
DOWNLOAD_REFUSED = "You are not allowed to download code from this project."
TOO_MANY = ("Too many clones and fetches of this instance's repositories are running; "
            "try again later.")


@pytest.fixture(scope="module", autouse=True)
def _programs():
    require_program("ssh", "openssh-client")
    require_program("ssh-keygen", "openssh-client")
    require_program("git", "git")


@pytest.fixture(scope="module")
def home():
    with tempfile.TemporaryDirectory(prefix="trellis-ssh-home-") as path:
        yield Path(path)


class Ssh:
    """A server with two SSH listeners: the default tenant's and `tenant_host`'s."""

    def __init__(self, make_server, home: Path, extra_env: dict | None = None):
        self.port = free_port()
        self.tenant_port = free_port()
        self.tenant_host = f"ssh-{secrets.token_hex(3)}.example"
        listen = f"127.0.0.1:{self.port},{self.tenant_host}=127.0.0.1:{self.tenant_port}"
        self.server = make_server({"TRELLIS_SSH_LISTEN": listen, **(extra_env or {})})
        self.home = home
        # One per server: each has its own host key.
        self.known_hosts = home / f"known_hosts_{self.port}"
        self.trust_host_key()

    def host_key_path(self) -> Path:
        return self.server.data_dir / "ssh_host_ed25519_key"

    def trust_host_key(self):
        """known_hosts naming the key on disk for both listeners: StrictHostKeyChecking then
        proves the server presents that key."""
        public = subprocess.run(["ssh-keygen", "-y", "-f", str(self.host_key_path())],
                                check=True, capture_output=True, text=True).stdout.strip()
        self.known_hosts.write_text("".join(
            f"[127.0.0.1]:{port} {public}\n" for port in (self.port, self.tenant_port)))

    def options(self, key: Path) -> list[str]:
        return ["-i", str(key), "-F", "/dev/null", "-o", "IdentitiesOnly=yes",
                "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
                "-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "LogLevel=ERROR"]

    def ssh(self, key: Path, *command: str, port: int | None = None, user: str = "git",
            stdin: str | None = None) -> subprocess.CompletedProcess:
        args = ["ssh", "-T", "-p", str(port or self.port), *self.options(key),
                f"{user}@127.0.0.1", *command]
        return subprocess.run(args, capture_output=True, text=True, timeout=60,
                              input=stdin if stdin is not None else "")

    def git(self, key: Path, *args, cwd=None, port: int | None = None,
            check=True, input: str | None = None) -> subprocess.CompletedProcess:
        ssh_command = " ".join(["ssh", "-p", str(port or self.port), *self.options(key)])
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(self.home),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_SSH_COMMAND": ssh_command,
            "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com",
            "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com",
        }
        done = subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=cwd,
                              env=env, capture_output=True, text=True, timeout=120, input=input)
        if check:
            assert done.returncode == 0, done.stderr
        return done

    def ssh_url(self, path: str, port: int | None = None) -> str:
        return f"ssh://git@127.0.0.1:{port or self.port}/{path}.git"


@pytest.fixture(scope="module")
def ssh(make_server, home) -> Ssh:
    return Ssh(make_server, home)


def new_key(home: Path, kind: str = "ed25519") -> Path:
    path = home / f"id_{kind}_{secrets.token_hex(4)}"
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", "test", "-f", str(path)],
                   check=True, capture_output=True)
    return path


def add_key(gl, key: Path, **extra):
    """Adds `key` to the account `gl` is signed in as, through python-gitlab."""
    return gl.user.keys.create({"title": key.name, "key": key.with_suffix(".pub").read_text(),
                                **extra})


def user_with_key(ssh: Ssh, home: Path, prefix="s", **extra):
    """A new user, its python-gitlab client and a key it added."""
    user, token = make_user(ssh.server, prefix)
    gl = ssh.server.gitlab(token)
    gl.auth()
    key = new_key(home)
    row = add_key(gl, key, **extra)
    return user, gl, key, row


def project_with_guest(ssh: Ssh, gl, home: Path, visibility: str):
    """A new project with a README, and the SSH key of a user who is its Guest."""
    project = gl.projects.create({"name": "g" + secrets.token_hex(3), "visibility": visibility,
                                  "initialize_with_readme": True})
    guest, _, key, _ = user_with_key(ssh, home, "guest")
    project.members.create({"user_id": guest.id, "access_level": 10})
    return project, key


def workdir(home: Path) -> Path:
    return home / secrets.token_hex(4)


def commit(ssh: Ssh, key: Path, repo: Path, name: str, content: str):
    (repo / name).write_text(content)
    ssh.git(key, "add", name, cwd=repo)
    ssh.git(key, "commit", "-q", "-m", f"add {name}", cwd=repo)


def refused_with(done: subprocess.CompletedProcess, message: str):
    assert done.returncode != 0, done.stdout
    assert f"remote: {message}" in done.stderr, done.stderr


@pytest.fixture(scope="module")
def owner(ssh, home):
    return user_with_key(ssh, home, "own")


def test_welcome_names_the_user_and_records_the_key_use(ssh, owner):
    user, gl, key, row = owner
    assert row.last_used_at is None
    done = ssh.ssh(key)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"Welcome to GitLab, @{user.username}!\n"
    assert gl.user.keys.get(row.id).last_used_at is not None


def test_clone_push_and_fetch_over_both_url_forms(ssh, owner, home):
    user, gl, key, _ = owner
    project = gl.projects.create({"name": "p" + secrets.token_hex(3), "visibility": "private",
                                  "initialize_with_readme": True})
    path = project.path_with_namespace
    # SSH is on a port other than 22: GitLab's ssh:// form with the port.
    assert project.ssh_url_to_repo == ssh.ssh_url(path)
    first = workdir(home)
    ssh.git(key, "clone", "-q", project.ssh_url_to_repo, str(first))
    assert (first / "README.md").exists()
    # A pack of several megabytes, streamed through the channel to git.
    (first / "noise.bin").write_bytes(os.urandom(3 * 1024 * 1024))
    ssh.git(key, "add", "noise.bin", cwd=first)
    commit(ssh, key, first, "hello.py", "print('hello')\n")
    ssh.git(key, "push", "-q", "origin", "HEAD", cwd=first)
    # The scp-like form (the port comes from GIT_SSH_COMMAND).
    second = workdir(home)
    scp_like = f"git@127.0.0.1:{path}.git"
    ssh.git(key, "clone", "-q", scp_like, str(second))
    assert (second / "noise.bin").read_bytes() == (first / "noise.bin").read_bytes()
    # The project is up to date once the push has returned.
    stats = gl.projects.get(project.id, statistics=True)
    assert stats.empty_repo is False
    assert stats.statistics["commit_count"] == 2
    # fetch, protocol v2 (GIT_PROTOCOL travels in the SSH environment) and v0
    commit(ssh, key, second, "later.txt", "later\n")
    ssh.git(key, "push", "-q", "origin", "HEAD", cwd=second)
    for version in ("2", "0"):
        fetched = ssh.git(key, "-c", f"protocol.version={version}", "fetch", "origin",
                          cwd=first)
        assert fetched.returncode == 0
    ssh.git(key, "merge", "-q", "--ff-only", "FETCH_HEAD", cwd=first)
    assert (first / "later.txt").read_text() == "later\n"
    listed = ssh.git(key, "-c", "protocol.version=2", "ls-remote", ssh.ssh_url(path), cwd=first)
    assert f"refs/heads/{project.default_branch}" in listed.stdout


def test_a_moved_project_is_served_at_its_old_path(ssh, owner, home):
    """As GitLab's `Checks::ContainerMoved`: git keeps serving a renamed project's old path,
    and a push there names the new SSH remote."""
    user, gl, key, _ = owner
    project = gl.projects.create({"name": "was" + secrets.token_hex(3),
                                  "initialize_with_readme": True})
    old_path = project.path_with_namespace
    project.path = "now-" + secrets.token_hex(3)
    project.save()
    new_path = gl.projects.get(project.id).path_with_namespace
    repo = workdir(home)
    ssh.git(key, "clone", "-q", ssh.ssh_url(old_path), str(repo))
    commit(ssh, key, repo, "moved.txt", "moved\n")
    pushed = ssh.git(key, "push", "origin", "HEAD", cwd=repo)
    assert f"Project '{old_path}' was moved to '{new_path}'." in pushed.stderr
    # The host is the tenant's own (its base URL's), which the loopback listener does not know.
    assert re.search(rf"git remote set-url origin ssh://git@[^/]+:{ssh.port}/{new_path}\.git",
                     pushed.stderr), pushed.stderr
    assert gl.projects.get(project.id).commits.list(get_all=False)[0].title == "add moved.txt"


def test_unknown_keys_and_users_are_refused(ssh, home):
    stranger = new_key(home)
    done = ssh.ssh(stranger)
    assert done.returncode == 255 and DENIED in done.stderr, done.stderr
    _, _, key, _ = user_with_key(ssh, home)
    # Only `git` signs in, whatever the key.
    done = ssh.ssh(key, user="root")
    assert done.returncode == 255 and DENIED in done.stderr, done.stderr


def test_expired_key_is_refused(ssh, home):
    tomorrow = (dt.date.today() + dt.timedelta(days=2)).isoformat()
    _, _, key, row = user_with_key(ssh, home, expires_at=tomorrow)
    assert ssh.ssh(key).returncode == 0
    # Time passes: the key expired a minute ago.
    past_ms = int((dt.datetime.now(dt.timezone.utc).timestamp() - 60) * 1000)
    ssh.server.sql(f"UPDATE ssh_keys SET expires_at = {past_ms} WHERE id = {row.id}")
    done = ssh.ssh(key)
    assert done.returncode == 255 and DENIED in done.stderr, done.stderr


def test_blocked_and_deactivated_users_are_refused_git(ssh, home):
    """As in GitLab, their key still signs in (`ssh -T` welcomes them); git commands answer
    with GitLab's reason."""
    user, gl, key, _ = user_with_key(ssh, home)
    project = gl.projects.create({"name": "b" + secrets.token_hex(3),
                                  "initialize_with_readme": True})
    url = ssh.ssh_url(project.path_with_namespace)
    admin_user = ssh.server.gitlab().users.get(user.id)
    admin_user.block()
    assert ssh.ssh(key).stdout == f"Welcome to GitLab, @{user.username}!\n"
    refused_with(ssh.git(key, "ls-remote", url, check=False), "Your account has been blocked.")
    done = ssh.ssh(key, f"git-upload-pack '/{project.path_with_namespace}.git'")
    assert done.returncode == 1 and "remote: Your account has been blocked." in done.stderr
    admin_user.unblock()
    # GitLab deactivates only users idle for 180 days
    ssh.server.sql(f"UPDATE users SET last_activity_on = '2001-01-01' WHERE id = {user.id}")
    admin_user.deactivate()
    refused_with(ssh.git(key, "clone", "-q", url, str(workdir(home)), check=False),
                 "Your account has been deactivated by your administrator. Please log back in "
                 "from a web browser to reactivate your account at http://")  # the tenant's URL
    admin_user.activate()
    ssh.git(key, "clone", "-q", url, str(workdir(home)))


def test_restricted_key_type_is_refused(ssh, home):
    _, _, key, _ = user_with_key(ssh, home)
    settings = ssh.server.gitlab().settings.get()
    try:
        settings.ed25519_key_restriction = -1
        settings.save()
        done = ssh.ssh(key)
        assert done.returncode == 255 and DENIED in done.stderr, done.stderr
    finally:
        settings.ed25519_key_restriction = 0
        settings.save()
    assert ssh.ssh(key).returncode == 0


def test_guest_may_clone_a_public_project_but_not_push(ssh, owner, home):
    _, gl, _, _ = owner
    project, key = project_with_guest(ssh, gl, home, "public")
    copy = workdir(home)
    ssh.git(key, "clone", "-q", ssh.ssh_url(project.path_with_namespace), str(copy))
    commit(ssh, key, copy, "x.txt", "x\n")
    pushed = ssh.git(key, "push", "origin", "HEAD", cwd=copy, check=False)
    refused_with(pushed, "You are not allowed to push code to this project.")


def test_unknown_and_invisible_projects_are_not_found(ssh, owner, home):
    _, gl, _, _ = owner
    secret = gl.projects.create({"name": "s" + secrets.token_hex(3), "visibility": "private",
                                 "initialize_with_readme": True})
    _, _, key, _ = user_with_key(ssh, home)
    for path in ("nobody/nothing", secret.path_with_namespace):
        done = ssh.git(key, "clone", "-q", ssh.ssh_url(path), str(workdir(home)), check=False)
        refused_with(done, NOT_FOUND)
        done = ssh.ssh(key, f"git-receive-pack '/{path}.git'")
        assert done.returncode == 1
        assert f"remote: {NOT_FOUND}" in done.stderr


def test_malformed_commands_are_disallowed(ssh, owner):
    _, gl, key, _ = owner
    project = gl.projects.list(owned=True, get_all=False)[0]
    path = project.path_with_namespace
    for command in ("ls", "git-upload-pack", f"git-upload-pack '{path}.git'; id",
                    "git-upload-pack '../../etc.git'", "git-upload-archive '../../etc.git'",
                    f"git-upload-pack '{path}.git' extra", "sh -c id"):
        done = ssh.ssh(key, command)
        assert done.returncode == 1, (command, done.stderr)
        assert "remote: Disallowed command" in done.stderr, (command, done.stderr)
        assert done.stdout == ""
    # The same project named plainly works (no pack requested: the advertisement, then EOF).
    done = ssh.ssh(key, f"git-upload-pack '{path}.git'", stdin="0000")
    assert done.returncode == 0, done.stderr
    assert f"refs/heads/{project.default_branch}" in done.stdout


def test_enabled_git_access_protocol_turns_either_transport_off(ssh, owner, home):
    _, gl, key, _ = owner
    project = gl.projects.list(owned=True, get_all=False)[0]
    path = project.path_with_namespace
    token = ssh.server.create_token(scopes="read_repository")
    settings = ssh.server.gitlab().settings.get()

    def http_info_refs():
        return requests.get(f"{ssh.server.url}/{path}.git/info/refs",
                            params={"service": "git-upload-pack"},
                            auth=("root", token), timeout=30)

    try:
        settings.enabled_git_access_protocol = "http"
        settings.save()
        done = ssh.git(key, "ls-remote", ssh.ssh_url(path), check=False)
        refused_with(done, "Git access over SSH is not allowed")
        refused_with(archive(ssh, key, ssh.ssh_url(path), home / "off.tar"),
                     "Git access over SSH is not allowed")
        assert http_info_refs().status_code == 200
        settings.enabled_git_access_protocol = "ssh"
        settings.save()
        refused = http_info_refs()
        assert (refused.status_code, refused.text) == (403, "Git access over HTTP is not allowed")
        assert ssh.git(key, "ls-remote", ssh.ssh_url(path)).returncode == 0
    finally:
        settings.enabled_git_access_protocol = ""
        settings.save()
    assert http_info_refs().status_code == 200


def test_each_tenant_has_its_own_listener_and_keys(ssh, owner, home):
    _, gl, default_key, _ = owner
    # Before the tenant exists, its listener signs nobody in (no fallback to the default).
    assert DENIED in ssh.ssh(default_key, port=ssh.tenant_port).stderr
    host, token = other_tenant(ssh.server, host=ssh.tenant_host)
    tenant_gl = ssh.server.gitlab(token, host=host)
    tenant_gl.auth()
    tenant_key = new_key(home)
    add_key(tenant_gl, tenant_key)
    theirs = tenant_gl.projects.create({"name": "t" + secrets.token_hex(3),
                                        "visibility": "public", "initialize_with_readme": True})
    done = ssh.ssh(tenant_key, port=ssh.tenant_port)
    assert done.stdout == "Welcome to GitLab, @root!\n", done.stderr
    copy = workdir(home)
    url = ssh.ssh_url(theirs.path_with_namespace, port=ssh.tenant_port)
    ssh.git(tenant_key, "clone", "-q", url, str(copy), port=ssh.tenant_port)
    assert (copy / "README.md").exists()
    # The default tenant's key does not open the tenant's listener, even for a public project,
    # and the tenant's key does not open the default tenant's.
    assert DENIED in ssh.ssh(default_key, port=ssh.tenant_port).stderr
    assert DENIED in ssh.ssh(tenant_key).stderr
    # On the default listener the tenant's project path names nothing.
    done = ssh.git(default_key, "clone", "-q", ssh.ssh_url(theirs.path_with_namespace),
                   str(workdir(home)), check=False)
    refused_with(done, NOT_FOUND)


# ---- git archive --remote --------------------------------------------------------


def archive(ssh: Ssh, key: Path, remote: str, output: Path, *args: str,
            port: int | None = None) -> subprocess.CompletedProcess:
    """`git archive --remote` into `output` (git picks the format from its extension)."""
    return ssh.git(key, "archive", f"--remote={remote}", "-o", str(output), *args,
                   cwd=ssh.home, port=port, check=False)


def tar_files(path: Path) -> dict[str, bytes]:
    """The regular files of the (possibly compressed) tar at `path`, by name."""
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def worktree_files(repo: Path) -> dict[str, bytes]:
    return {str(p.relative_to(repo)): p.read_bytes() for p in repo.rglob("*")
            if p.is_file() and ".git" not in p.relative_to(repo).parts}


def test_archive_over_both_url_forms(ssh, owner, home):
    _, gl, key, _ = owner
    project = gl.projects.create({"name": "a" + secrets.token_hex(3), "visibility": "private",
                                  "initialize_with_readme": True})
    path = project.path_with_namespace
    repo = workdir(home)
    ssh.git(key, "clone", "-q", project.ssh_url_to_repo, str(repo))
    (repo / "src").mkdir()
    commit(ssh, key, repo, "src/app.py", "print('app')\n")
    (repo / "docs").mkdir()
    commit(ssh, key, repo, "docs/guide.md", "# Guide\n")
    (repo / "blob.bin").write_bytes(os.urandom(256 * 1024))
    ssh.git(key, "add", "blob.bin", cwd=repo)
    ssh.git(key, "commit", "-q", "-m", "add blob.bin", cwd=repo)
    ssh.git(key, "push", "-q", "origin", "HEAD", cwd=repo)

    whole = home / f"{secrets.token_hex(4)}.tar"
    done = archive(ssh, key, ssh.ssh_url(path), whole, "HEAD")
    assert done.returncode == 0, done.stderr
    assert tar_files(whole) == worktree_files(repo)
    # The scp-like form, with the client's prefix, format and pathspec (wildcards match as
    # git matches them).
    part = home / f"{secrets.token_hex(4)}.tar.gz"
    done = archive(ssh, key, f"git@127.0.0.1:{path}.git", part, "--prefix=v1/",
                   project.default_branch, "*.md")
    assert done.returncode == 0, done.stderr
    assert tar_files(part) == {"v1/README.md": (repo / "README.md").read_bytes(),
                               "v1/docs/guide.md": b"# Guide\n"}


def test_archive_is_refused_as_a_clone_is(ssh, owner, home):
    _, gl, _, _ = owner
    secret, guest_key = project_with_guest(ssh, gl, home, "private")
    _, _, stranger_key, _ = user_with_key(ssh, home)
    output = home / f"{secrets.token_hex(4)}.tar"
    # Another user sees neither the private project nor a project that does not exist.
    for path in (secret.path_with_namespace, "nobody/nothing"):
        refused_with(archive(ssh, stranger_key, ssh.ssh_url(path), output, "HEAD"), NOT_FOUND)
    # A Guest of a private project sees it but may not read its code.
    refused_with(archive(ssh, guest_key, ssh.ssh_url(secret.path_with_namespace), output,
                         "HEAD"), DOWNLOAD_REFUSED)
    done = ssh.ssh(stranger_key, f"git-upload-archive '/{secret.path_with_namespace}.git'")
    assert (done.returncode, done.stdout) == (1, "")
    assert f"remote: {NOT_FOUND}" in done.stderr, done.stderr


def test_archive_waits_for_the_tenants_upload_slot(make_server, home):
    """With one upload slot per tenant, an archive whose request has not come yet holds it:
    the next archive waits, then is refused with the slot's message; once the slot frees,
    archives work again."""
    capped = Ssh(make_server, home, {"TRELLIS_MAX_UPLOAD_PACKS_PER_TENANT": "1",
                                     "TRELLIS_UPLOAD_PACK_QUEUE_SECONDS": "1"})
    _, gl, key, _ = user_with_key(capped, home)
    project = gl.projects.create({"name": "a" + secrets.token_hex(3),
                                  "initialize_with_readme": True})
    url = capped.ssh_url(project.path_with_namespace)
    output = home / f"{secrets.token_hex(4)}.tar"
    holder = subprocess.Popen(
        ["ssh", "-T", "-p", str(capped.port), *capped.options(key), "git@127.0.0.1",
         f"git-upload-archive '{project.path_with_namespace}.git'"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(50):  # until the holder has taken the slot
            refused = archive(capped, key, url, output, "HEAD")
            if refused.returncode != 0:
                break
        refused_with(refused, TOO_MANY)
    finally:
        holder.stdin.close()  # git upload-archive sees the end of its input and exits
        holder.wait(timeout=60)
    done = archive(capped, key, url, output, "HEAD")
    assert done.returncode == 0, done.stderr
    assert "README.md" in tar_files(output)


# ---- a signed tag ------------------------------------------------------------------


def test_a_signed_tags_message_keeps_its_signature(ssh, owner, home):
    """GitLab's tags API shows what Gitaly parses as the tag's message: everything after the
    tag object's header, the signature block included (Gitaly only notes the signature's
    type). So does Trellis, for a tag signed by gpg and pushed over SSH."""
    _, gl, key, _ = owner
    project = gl.projects.create({"name": "t" + secrets.token_hex(3),
                                  "initialize_with_readme": True})
    repo = workdir(home)
    ssh.git(key, "clone", "-q", project.ssh_url_to_repo, str(repo))
    # The helper's git runs with HOME at `home`, so gpg's default home is this one.
    gpg_signing_key(home / ".gnupg", "ada@example.com")
    ssh.git(key, "-c", "user.signingkey=ada@example.com", "tag", "-s", "-m",
            "Release 1.0\n\nNotes.", "v1.0", cwd=repo)
    raw = ssh.git(key, "cat-file", "tag", "v1.0", cwd=repo).stdout
    message = raw.split("\n\n", 1)[1].rstrip("\n")
    assert message.startswith("Release 1.0\n\nNotes.\n-----BEGIN PGP SIGNATURE-----\n")
    assert message.endswith("-----END PGP SIGNATURE-----")
    ssh.git(key, "push", "-q", "origin", "v1.0", cwd=repo)
    assert project.tags.get("v1.0").message == message
    assert [t.message for t in project.tags.list(get_all=True)] == [message]


# ---- push rules --------------------------------------------------------------------


@pytest.fixture(scope="module")
def push_rules_id(ssh) -> int:
    """The built-in push-rules plugin. The first catalog read compiles the built-in plugins,
    which takes long on a loaded machine with a debug build: hence the patient timeout."""
    rows = assert_json(ssh.server.request("GET", "/application/plugins",
                                          token=ssh.server.root_token, timeout=300), 200)
    return next(p["id"] for p in rows if p["name"] == "push-rules" and p["built_in"])


@pytest.fixture
def rules_repo(ssh, owner, home):
    """A project of the owner's, cloned over SSH; push rules unbound afterwards."""
    _, gl, key, _ = owner
    project = gl.projects.create({"name": "r" + secrets.token_hex(3),
                                  "initialize_with_readme": True})
    repo = workdir(home)
    ssh.git(key, "clone", "-q", project.ssh_url_to_repo, str(repo))
    yield project, key, repo
    ssh.server.request("DELETE", "/application/plugin_hooks/push_rules",
                       token=ssh.server.root_token)


def attempt(ssh, key, repo, message="feat: change", file="notes.txt", ref=None):
    """Commits on the remote's default branch and pushes to `ref` (that branch by default)."""
    ssh.git(key, "fetch", "-q", "origin", cwd=repo)
    ssh.git(key, "reset", "-q", "--hard", "origin/HEAD", cwd=repo)
    (repo / file).write_text(secrets.token_hex(8))
    ssh.git(key, "add", file, cwd=repo)
    ssh.git(key, "commit", "-q", "-m", message, cwd=repo)
    return ssh.git(key, "push", "origin", f"HEAD:{ref}" if ref else "HEAD", cwd=repo,
                   check=False)


def refused_by_rule(push, message: str):
    refused_with(push, f"GitLab: {message}")
    assert "pre-receive hook declined" in push.stderr, push.stderr


def bind_push_rules(server, plugin_id: int, config: dict):
    # The operator's longest time per call (not the 100 ms default): a loaded machine running
    # a debug build must not turn a refusal into "push rules unavailable".
    assert_json(bind(server, "push_rules", plugin_id=plugin_id, config=config,
                     timeout_ms=1000), 200)


# field -> (rule, refused attempt, GitLab's message, accepted attempt)
RULES = {
    "commit_message_regex": ({"commit_message_regex": "^(feat|fix): "},
                             {"message": "update stuff"},
                             "Commit message does not follow the pattern '^(feat|fix): '",
                             {"message": "fix: stuff"}),
    "branch_name_regex": ({"branch_name_regex": "^(feat|fix)/"}, {"ref": "refs/heads/random"},
                          "Branch name does not follow the pattern '^(feat|fix)/'",
                          {"ref": "refs/heads/feat/ssh"}),
    "file_name_regex": ({"file_name_regex": "\\.exe$"}, {"file": "tool.exe"},
                        'File name tool.exe was prohibited by the pattern "\\\\.exe$".',
                        {"file": "tool.txt"}),
}


@pytest.mark.parametrize("field", list(RULES))
def test_push_rules_refuse_and_accept_ssh_pushes(ssh, rules_repo, push_rules_id, field):
    project, key, repo = rules_repo
    bind_push_rules(ssh.server, push_rules_id, {})
    rule, bad, message, good = RULES[field]
    project.pushrules.create(rule)
    before = ssh.git(key, "ls-remote", "origin", cwd=repo).stdout
    refused_by_rule(attempt(ssh, key, repo, **bad), message)
    assert ssh.git(key, "ls-remote", "origin", cwd=repo).stdout == before  # nothing moved
    push = attempt(ssh, key, repo, **good)
    assert push.returncode == 0, push.stderr


def test_the_example_refuses_an_ssh_push_after_a_swap_without_restart(
        ssh, rules_repo, push_rules_id, conventional_commits_wasm):
    project, key, repo = rules_repo
    project.pushrules.create({"commit_message_regex": "^JIRA-[0-9]+"})
    bind_push_rules(ssh.server, push_rules_id, {})
    refused_by_rule(attempt(ssh, key, repo, message="docs: readme"),
                    "Commit message does not follow the pattern '^JIRA-[0-9]+'")
    example = assert_json(upload(ssh.server, conventional_commits_wasm,
                                 "conventional_commits.wasm", timeout=300), 201)
    bind_push_rules(ssh.server, example["id"], {"types": ["feat", "docs"]})
    push = attempt(ssh, key, repo, message="Update things")
    refused_by_rule(push, "Commit ")
    assert 'is not a Conventional Commit: "Update things"' in push.stderr, push.stderr
    push = attempt(ssh, key, repo, message="docs: readme")
    assert push.returncode == 0, push.stderr


def test_a_large_ssh_push_is_checked_while_git_walks_it(ssh, rules_repo, push_rules_id):
    """Over SSH too, push rules start on a pushed pack as soon as git has indexed it, and the
    hook takes their verdict (`trellis_push_prescans_total{outcome="used"}`)."""
    project, key, repo = rules_repo
    bind_push_rules(ssh.server, push_rules_id, {})
    project.pushrules.create({"commit_message_regex": "^feat: "})

    def push_many(**stream):
        ssh.git(key, "fetch", "-q", "origin", cwd=repo)
        parent = ssh.git(key, "rev-parse", "origin/HEAD", cwd=repo).stdout.strip()
        ssh.git(key, "fast-import", "--quiet", "--force", cwd=repo,
                input=commits_stream("refs/heads/many", parent, 1000, "ada@example.com",
                                     **stream))
        return ssh.git(key, "push", "origin", "refs/heads/many:refs/heads/main", cwd=repo,
                       check=False)

    used = prescans_used(ssh.server)
    refused_by_rule(push_many(message=lambda n: "wip\n" if n == 0 else f"feat: {n}\n"),
                    "Commit message does not follow the pattern '^feat: '")
    push = push_many()
    assert push.returncode == 0, push.stderr
    # As over HTTP: a hook that comes before the prescan has found the pack checks the push
    # itself, so only some verdict need have come from a prescan.
    assert prescans_used(ssh.server) > used


def test_host_key_is_kept_across_a_restart(ssh, owner):
    _, _, key, _ = owner
    mode = ssh.host_key_path().stat().st_mode & 0o777
    assert mode == 0o600
    before = ssh.host_key_path().read_bytes()
    ssh.server.stop()
    ssh.server.start()
    assert ssh.host_key_path().read_bytes() == before
    # known_hosts still written from the first start: strict checking passes.
    done = ssh.ssh(key)
    assert done.returncode == 0, done.stderr
