"""Push rules end to end: the `/projects/:id/push_rule` patterns GitLab refuses, bindings whose
configuration the plugin refuses, and real `git push`es over HTTP refused and accepted for
every push rule field by the built-in `push-rules` plugin, by the conventional-commits
example uploaded through the API, and across binding swaps without a restart."""

from __future__ import annotations

import os
import secrets
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import (assert_json, bind, built_in, commits_stream, gpg_signing_key, make_user,
                      prescans_used, require_program, upload)


@pytest.fixture(scope="module")
def owner(server):
    return make_user(server, "prowner")


@pytest.fixture(scope="module")
def project(server, owner):
    return server.gitlab(owner[1]).projects.create({"name": "push-rules-api"})


@pytest.fixture(autouse=True)
def unbound(server):
    yield
    server.request("DELETE", "/application/plugin_hooks/push_rules", token=server.root_token)


def test_invalid_patterns_answer_400_with_the_field(server, owner, project):
    path = f"/projects/{project.id}/push_rule"
    r = server.request("POST", path, token=owner[1], json={
        "commit_message_regex": "(unclosed",
        "file_name_regex": "(?=lookahead)",
        "author_email_regex": "@example\\.com$",
    })
    body = assert_json(r, 400)
    assert sorted(body["message"]) == ["commit_message_regex", "file_name_regex"]
    for field in ("commit_message_regex", "file_name_regex"):
        [problem] = body["message"][field]
        assert problem.startswith("not valid RE2 syntax: ") and len(problem) > 22, problem
    # GitLab's 511-character limit, and a pattern whose compiled program is too large.
    assert_json(server.request("POST", path, token=owner[1], json={"branch_name_regex": "a" * 512}),
                400, {"message": {"branch_name_regex": ["is too long (maximum is 511 characters)"]}})
    assert_json(server.request("POST", path, token=owner[1],
                               json={"commit_message_negative_regex": "\\w{250}\\w{250}"}),
                400, {"message": {"commit_message_negative_regex": [
                    "not valid RE2 syntax: pattern too large - compile failed"]}})
    assert server.request("GET", path, token=owner[1]).json() is None

    made = assert_json(server.request("POST", path, token=owner[1],
                                      json={"commit_message_regex": "^(feat|fix): "}), 201)
    assert made["commit_message_regex"] == "^(feat|fix): "
    r = server.request("PUT", path, token=owner[1], json={"branch_name_regex": "[z-a]"})
    assert list(assert_json(r, 400)["message"]) == ["branch_name_regex"]
    kept = assert_json(server.request("GET", path, token=owner[1]), 200)
    assert kept["branch_name_regex"] is None and kept["commit_message_regex"] == "^(feat|fix): "
    server.request("DELETE", path, token=owner[1])


def test_the_built_in_plugin_binds_only_with_a_valid_configuration(server):
    plugin = built_in(server, name="push-rules")
    assert plugin["world"] == "push-rules-plugin" and plugin["api_version"] == "0.2.0"
    r = bind(server, "push_rules", plugin_id=plugin["id"], config={"regex_size": 1})
    assert r.status_code == 400 and "regex_size" in r.json()["message"], r.text
    r = bind(server, "push_rules", plugin_id=plugin["id"], config={"regex_size_limit": 10})
    assert r.status_code == 400 and "regex_size_limit" in r.json()["message"], r.text
    hooks = assert_json(server.request("GET", "/application/plugin_hooks",
                                       token=server.root_token), 200)
    assert next(h for h in hooks if h["hook"] == "push_rules")["plugin"] is None
    r = bind(server, "push_rules", plugin_id=plugin["id"], config={})
    assert r.status_code == 200, r.text
    # The world decides the hook: a push-rules plugin is no spam check.
    r = bind(server, "spam_check", plugin_id=plugin["id"], config={})
    assert r.status_code == 400, r.text


def test_the_example_is_uploaded_and_bound(server, conventional_commits_wasm):
    r = upload(server, conventional_commits_wasm, "conventional_commits.wasm", version="1.0.0")
    assert r.status_code in (200, 201), r.text
    entry = r.json()
    assert entry["world"] == "push-rules-plugin" and entry["api_version"] == "0.2.0"
    r = bind(server, "push_rules", plugin_id=entry["id"], config={"types": []})
    assert r.status_code == 400 and "types must not be empty" in r.json()["message"], r.text
    r = bind(server, "push_rules", plugin_id=entry["id"], config={"types": ["feat", "fix"]})
    assert r.status_code == 200, r.text


# ---- pushes with the real git client ----------------------------------------------------

GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": ""}


@pytest.fixture(scope="module")
def home():
    require_program("git", "git")
    with tempfile.TemporaryDirectory(prefix="trellis-push-rules-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def root_email(server) -> str:
    return assert_json(server.request("GET", "/user", token=server.root_token), 200)["email"]


class Clone:
    """A clone of a project, pushed to as root over HTTP with the root token."""

    def __init__(self, server, home: Path, project, email: str):
        self.home, self.email, self.branch = home, email, project.default_branch
        self.dir = home / secrets.token_hex(4)
        remote = f"http://root:{server.root_token}@{server.host}/{project.path_with_namespace}.git"
        self.git("clone", "-q", remote, str(self.dir), cwd=home)

    def git(self, *args, cwd=None, author=None, committer=None, check=True, input=None):
        env = {"PATH": os.environ["PATH"], "HOME": str(self.home), **GIT_ENV,
               "GNUPGHOME": str(self.home / "gnupg"),
               "GIT_AUTHOR_NAME": "Root", "GIT_AUTHOR_EMAIL": author or self.email,
               "GIT_COMMITTER_NAME": "Root", "GIT_COMMITTER_EMAIL": committer or self.email}
        done = subprocess.run(["git", "-c", "credential.helper=", *args], cwd=cwd or self.dir,
                              env=env, capture_output=True, text=True, timeout=120, input=input)
        if check:
            assert done.returncode == 0, done.stderr
        return done

    def remote_refs(self) -> str:
        return self.git("ls-remote", "origin").stdout

    def attempt(self, message="feat: change", file=("notes.txt", 10), author=None,
                committer=None, ref=None, sign=None):
        """Commits on the remote's default branch and pushes to `ref` (that branch by
        default); the finished `git push`."""
        ref = ref or f"refs/heads/{self.branch}"
        self.git("fetch", "-q", "origin", self.branch)
        self.git("reset", "-q", "--hard", f"origin/{self.branch}")
        name, size = file
        (self.dir / name).write_bytes(secrets.token_bytes(size // 2).hex().encode()[:size])
        self.git("add", name)
        signing = ["-c", f"user.signingkey={sign}", "commit", "-S"] if sign else ["commit"]
        self.git(*signing, "-q", "-m", message, author=author, committer=committer)
        return self.git("push", "origin", f"HEAD:{ref}", check=False)


    def push_many(self, count: int, **stream):
        """`count` commits (`commits_stream`) on the remote's default branch, pushed to it."""
        self.git("fetch", "-q", "origin", self.branch)
        parent = self.git("rev-parse", f"origin/{self.branch}").stdout.strip()
        self.git("fast-import", "--quiet", "--force",
                 input=commits_stream("refs/heads/many", parent, count, self.email, **stream))
        return self.git("push", "origin", f"refs/heads/many:refs/heads/{self.branch}",
                        check=False)


def refused(push, message: str):
    assert push.returncode != 0, push.stderr
    assert f"remote: GitLab: {message}" in push.stderr, push.stderr
    assert "pre-receive hook declined" in push.stderr, push.stderr


def accepted(push):
    assert push.returncode == 0, push.stderr


@pytest.fixture(scope="module")
def pushed(server, gl, home, root_email):
    project = gl.projects.create({"name": "rules" + secrets.token_hex(3),
                                  "initialize_with_readme": True})
    return project, Clone(server, home, project, root_email)


def set_rule(server, project, **fields):
    path = f"/projects/{project.id}/push_rule"
    server.request("DELETE", path, token=server.root_token)
    assert_json(server.request("POST", path, token=server.root_token, json=fields), 201)


def bind_built_in(server):
    plugin = built_in(server, name="push-rules")
    assert bind(server, "push_rules", plugin_id=plugin["id"], config={}).status_code == 200


STRANGER = "stranger@nowhere.example"

# field -> (rule, refused attempt, GitLab's message, accepted attempt)
CASES = {
    "commit_message_regex": ({"commit_message_regex": "^(feat|fix): "},
                             {"message": "update stuff"},
                             "Commit message does not follow the pattern '^(feat|fix): '",
                             {"message": "fix: stuff"}),
    "commit_message_negative_regex": ({"commit_message_negative_regex": "(?i)wip"},
                                      {"message": "feat: WIP login"},
                                      "Commit message contains the forbidden pattern '(?i)wip'",
                                      {"message": "feat: login"}),
    "branch_name_regex": ({"branch_name_regex": "^(feat|fix)/"},
                          {"ref": "refs/heads/random"},
                          "Branch name does not follow the pattern '^(feat|fix)/'",
                          {"ref": "refs/heads/feat/login"}),
    "author_email_regex": ({"author_email_regex": "@example\\.com$"},
                           {"author": STRANGER},
                           f"Author's email '{STRANGER}' does not follow the pattern "
                           "'@example\\.com$'",
                           {}),
    "member_check": ({"member_check": True}, {"author": STRANGER},
                     f"Author '{STRANGER}' is not a member of team", {}),
    "commit_committer_check": ({"commit_committer_check": True}, {"committer": STRANGER},
                               f"You cannot push commits for '{STRANGER}'. You can only push "
                               "commits if the committer email is one of your own verified "
                               "emails.", {}),
    "file_name_regex": ({"file_name_regex": "\\.exe$"}, {"file": ("tool.exe", 4)},
                        'File name tool.exe was prohibited by the pattern "\\\\.exe$".',
                        {"file": ("tool.txt", 4)}),
    "prevent_secrets": ({"prevent_secrets": True}, {"file": ("server.pem", 4)},
                        'File name server.pem was prohibited by the pattern "\\\\.pem$".',
                        {"file": ("server.txt", 4)}),
    "max_file_size": ({"max_file_size": 1}, {"file": ("big.bin", (1 << 20) + 10)},
                      'File "big.bin" is larger than the allowed size of 1 MiB. Use Git LFS '
                      "to manage this file.",
                      {"file": ("small.bin", 1 << 19)}),
    "reject_unsigned_commits": ({"reject_unsigned_commits": True}, {},
                                "Commit must be signed with a GPG key", None),
}


@pytest.mark.parametrize("field", list(CASES))
def test_each_field_refuses_and_accepts_a_real_push(server, pushed, field):
    project, clone = pushed
    bind_built_in(server)
    rule, bad, message, good = CASES[field]
    set_rule(server, project, **rule)
    before = clone.remote_refs()
    refused(clone.attempt(**bad), message)
    # A refused push moves no reference.
    assert clone.remote_refs() == before
    if good is not None:
        accepted(clone.attempt(**good))
    server.request("DELETE", f"/projects/{project.id}/push_rule", token=server.root_token)


def test_deny_delete_tag(server, pushed):
    project, clone = pushed
    bind_built_in(server)
    set_rule(server, project, deny_delete_tag=True)
    accepted(clone.attempt(ref="refs/tags/v1"))
    refused(clone.git("push", "origin", ":refs/tags/v1", check=False), "You cannot delete a tag")
    set_rule(server, project, deny_delete_tag=False)
    accepted(clone.git("push", "origin", ":refs/tags/v1", check=False))


def test_signed_commits_by_the_pushers_key_are_accepted(server, pushed, home, root_email):
    armored = gpg_signing_key(home / "gnupg", root_email)
    project, clone = pushed
    bind_built_in(server)
    set_rule(server, project, reject_unsigned_commits=True)
    r = server.request("POST", "/user/gpg_keys", token=server.root_token, json={"key": armored})
    assert r.status_code == 201, r.text
    accepted(clone.attempt(sign=root_email))
    server.request("DELETE", f"/projects/{project.id}/push_rule", token=server.root_token)


def test_the_example_refuses_end_to_end_and_bindings_swap_without_restart(
        server, pushed, conventional_commits_wasm):
    project, clone = pushed
    set_rule(server, project, commit_message_regex="^JIRA-[0-9]+")
    bind_built_in(server)
    refused(clone.attempt(message="docs: readme"),
            "Commit message does not follow the pattern '^JIRA-[0-9]+'")
    entry = upload(server, conventional_commits_wasm, "conventional_commits.wasm").json()
    assert bind(server, "push_rules", plugin_id=entry["id"],
                config={"types": ["feat", "docs"]}).status_code == 200
    push = clone.attempt(message="Update things")
    refused(push, "Commit ")
    assert 'is not a Conventional Commit: "Update things"' in push.stderr, push.stderr
    accepted(clone.attempt(message="docs: readme"))
    # Unbound: nothing is checked, whatever the push rule says.
    server.request("DELETE", "/application/plugin_hooks/push_rules", token=server.root_token)
    accepted(clone.attempt(message="anything goes"))
    server.request("DELETE", f"/projects/{project.id}/push_rule", token=server.root_token)


def test_a_large_push_is_checked_while_git_walks_it(server, pushed):
    """Past git's unpack limit a push arrives as a pack, and push rules start on it as soon as
    git has indexed it, beside git's connectivity walk; the hook takes that verdict. Refusals
    (the oldest commit's message, a file in the middle) and acceptance are the hook's own."""
    project, clone = pushed
    # The longest time per call: five calls of 200 commits on a loaded machine.
    plugin = built_in(server, name="push-rules")
    assert bind(server, "push_rules", plugin_id=plugin["id"], config={},
                timeout_ms=1000).status_code == 200
    set_rule(server, project, commit_message_regex="^feat: ", file_name_regex="\\.exe$")
    used = prescans_used(server)
    before = clone.remote_refs()
    refused(clone.push_many(1000, message=lambda n: "wip\n" if n == 0 else f"feat: {n}\n"),
            "Commit message does not follow the pattern '^feat: '")
    refused(clone.push_many(1000, file=lambda n: "tool.exe" if n == 500 else f"many-{n}.txt"),
            'File name tool.exe was prohibited by the pattern "\\\\.exe$".')
    assert clone.remote_refs() == before
    accepted(clone.push_many(1000))
    # A hook nearly always finds the prescan done or under way on its own quarantine: git's
    # walk of 3,000 objects and the hook's start take longer than the 5 ms the prescan waits
    # between looks. A hook that comes first checks the push itself, with the same verdict,
    # so the test asks only that some verdict came from a prescan.
    assert prescans_used(server) > used
    server.request("DELETE", f"/projects/{project.id}/push_rule", token=server.root_token)
