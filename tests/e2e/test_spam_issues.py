"""The spam hook on issues: python-gitlab's issue create and update go through the tenant's
bound spam-check plugin (the built-in filter, then an uploaded one replacing it without a
restart), with GitLab's refusals, the author blocked on `block_user`, and the check recorded
in the issue's user agent detail. With no plugin bound, nothing is checked.
"""

from __future__ import annotations

import gitlab
import pytest

from conftest import assert_json, bind, built_in, make_user, upload

SPAM = {"message": {"base": ["Your issue has been recognized as spam. Please, change the content to proceed."]}}


def bind_filter(server, **config):
    assert_json(bind(server, plugin_id=built_in(server)["id"], config=config), 200)


def unbind(server):
    server.request("DELETE", "/application/plugin_hooks/spam_check", token=server.root_token)


@pytest.fixture
def author(server):
    """A regular user with a project of their own; the hook is unbound afterwards."""
    user, token = make_user(server, "spam")
    project = server.gitlab(token).projects.create({"name": f"p-{user.username}"})
    yield {"user": user, "token": token, "project": project}
    unbind(server)


def detail(server, project_id, iid):
    r = server.request("GET", f"/projects/{project_id}/issues/{iid}/user_agent_detail",
                       token=server.root_token)
    return assert_json(r, 200)


def issues_url(author):
    return f"/projects/{author['project'].id}/issues"


def test_no_plugin_bound_means_no_check(server, author):
    issue = author["project"].issues.create({"title": "casino", "description": "x"})
    assert detail(server, author["project"].id, issue.iid)["spam_filter_submitted"] is False


def test_clean_issue_is_accepted_and_recorded(server, author):
    bind_filter(server, blocked_words=["casino"])
    issue = author["project"].issues.create({"title": "Crash on save", "description": "Steps"})
    assert detail(server, author["project"].id, issue.iid)["spam_filter_submitted"] is True


def spam_log_titles(server, user_id) -> list[str]:
    """The titles of the author's spam log rows (the admin spam log API is not served)."""
    rows = server.sql(f"SELECT title FROM spam_logs WHERE user_id = {user_id} ORDER BY id")
    return [title for (title,) in rows]


def test_only_spam_verdicts_are_logged(server, author):
    """As GitLab's SpamActionService: a disallowed write leaves a spam log row, an allowed one
    does not."""
    bind_filter(server, blocked_words=["casino"])
    author["project"].issues.create({"title": "An ordinary bug", "description": "Steps"})
    with pytest.raises(gitlab.GitlabCreateError):
        author["project"].issues.create({"title": "casino bonus", "description": "x"})
    assert spam_log_titles(server, author["user"].id) == ["casino bonus"]


def test_spam_create_is_refused_with_gitlabs_error(server, author):
    bind_filter(server, blocked_words=["casino"])
    r = server.request("POST", issues_url(author), token=author["token"],
                       json={"title": "Best CASINO in town"})
    assert_json(r, 400, SPAM)
    with pytest.raises(gitlab.GitlabCreateError) as err:
        author["project"].issues.create({"title": "ok", "description": "casino bonus"})
    assert err.value.response_code == 400
    listed = server.request("GET", issues_url(author), token=author["token"]).json()
    assert listed == [], "a refused issue must not be stored"


def test_spam_update_is_refused_and_leaves_the_issue(server, author):
    issue = author["project"].issues.create({"title": "Fine", "description": "fine"})
    bind_filter(server, blocked_words=["casino"])
    url = f"{issues_url(author)}/{issue.iid}"
    r = server.request("PUT", url, token=author["token"], json={"description": "casino"})
    assert_json(r, 400, SPAM)
    after = assert_json(server.request("GET", url, token=author["token"]), 200)
    assert after["description"] == "fine"
    # Only a changed title or description is checked: other edits pass without a check.
    r = server.request("PUT", url, token=author["token"], json={"labels": "bug"})
    assert_json(r, 200)
    assert detail(server, author["project"].id, issue.iid)["spam_filter_submitted"] is False
    r = server.request("PUT", url, token=author["token"], json={"title": "Still fine"})
    assert_json(r, 200)
    assert detail(server, author["project"].id, issue.iid)["spam_filter_submitted"] is True


def test_block_user_verdict_blocks_the_author(server, author):
    bind_filter(server, blocked_link_domains=["spam.example"])
    r = server.request("POST", issues_url(author), token=author["token"],
                       json={"title": "hi", "description": "see https://www.spam.example/x"})
    assert_json(r, 400, SPAM)
    user = server.gitlab().users.get(author["user"].id)
    assert user.state == "blocked"
    r = server.request("GET", "/user", token=author["token"])
    assert r.status_code in (401, 403), r.text


def test_uploaded_plugin_replaces_the_built_in(server, author, keyword_wasm):
    bind_filter(server, blocked_words=["casino"])
    r = upload(server, keyword_wasm, name="keyword-spam-filter.wasm")
    assert r.status_code in (200, 201), r.text
    kw = r.json()
    assert_json(bind(server, plugin_id=kw["id"], config={"keywords": ["lottery"]}), 200)
    # The built-in's word passes now; the uploaded plugin's keyword is refused.
    author["project"].issues.create({"title": "casino night"})
    r = server.request("POST", issues_url(author), token=author["token"],
                       json={"title": "win the lottery"})
    assert_json(r, 400, SPAM)


def test_multibyte_padding_is_checked_whole(server, author):
    """630,000 two-byte characters (1.26 MB) are within the API's 1,000,000-character limit;
    the plugin gets all of them, so the word at the end is seen (not skipped as oversize)."""
    assert_json(bind(server, plugin_id=built_in(server)["id"], timeout_ms=1000,
                     config={"blocked_words": ["casino"], "trust_admins": False}), 200)
    r = server.request("POST", issues_url(author), token=author["token"],
                       json={"title": "padded", "description": "é" * 630_000 + " casino"})
    assert_json(r, 400, SPAM)
