"""Push rules: the `/projects/:id/push_rule` patterns GitLab refuses, the built-in
`push-rules` plugin and the conventional-commits example in the catalog, and bindings whose
configuration the plugin refuses."""

from __future__ import annotations

import pytest

from conftest import assert_json, bind, built_in, make_user, upload


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
