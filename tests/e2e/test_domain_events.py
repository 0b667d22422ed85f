"""The domain event outbox: every state change records its event in the same transaction as
the change (the table `domain_events`), with the actor, the object before and after, and the
changed fields; a write that fails records nothing. Nothing consumes the outbox yet, so these
tests read the table directly."""

from pathlib import Path

import pytest

from conftest import assert_json, domain_events, last_event_id, make_user

FIXTURES = Path(__file__).resolve().parents[2] / "host" / "tests" / "fixtures"


events = domain_events
last_id = last_event_id


def kinds(recorded: list[dict]) -> list[str]:
    return [e["kind"] for e in recorded]


@pytest.fixture(scope="module")
def project(server):
    return assert_json(server.request("POST", "/projects", token=server.root_token,
                                      json={"name": "events"}), 201)


def root_id(server) -> int:
    return assert_json(server.request("GET", "/user", token=server.root_token), 200)["id"]


def test_issue_lifecycle_records_each_change(server, project):
    pid = project["id"]
    since = last_id(server)
    issue = assert_json(server.request("POST", f"/projects/{pid}/issues", token=server.root_token,
                                       json={"title": "Crash", "labels": "bug"}), 201)
    opened = events(server, since)
    assert kinds(opened) == ["issue.opened"]
    event = opened[0]
    assert event["actor_id"] == root_id(server)
    assert event["project_id"] == pid
    assert event["subject_id"] == issue["id"]
    assert event["before"] is None
    assert event["after"]["title"] == "Crash"
    assert event["after"]["labels"] == ["bug"]
    assert event["changes"] == {}

    since = last_id(server)
    url = f"/projects/{pid}/issues/{issue['iid']}"
    assert_json(server.request("PUT", url, token=server.root_token,
                               json={"title": "Crash on save", "labels": "bug,ui"}), 200)
    (updated,) = events(server, since)
    assert updated["kind"] == "issue.updated"
    assert updated["changes"]["title"] == {"previous": "Crash", "current": "Crash on save"}
    assert updated["changes"]["labels"] == {"previous": ["bug"], "current": ["bug", "ui"]}
    assert "state" not in updated["changes"]

    since = last_id(server)
    assert_json(server.request("PUT", url, token=server.root_token,
                               json={"state_event": "close"}), 200)
    assert_json(server.request("PUT", url, token=server.root_token,
                               json={"state_event": "reopen"}), 200)
    closed, reopened = events(server, since)
    assert closed["kind"] == "issue.closed"
    assert closed["changes"]["state"] == {"previous": "opened", "current": "closed"}
    assert reopened["kind"] == "issue.reopened"
    assert reopened["changes"]["state"] == {"previous": "closed", "current": "opened"}

    since = last_id(server)
    r = server.request("DELETE", url, token=server.root_token)
    assert r.status_code == 204, r.text
    (deleted,) = events(server, since)
    assert deleted["kind"] == "issue.deleted"
    assert deleted["before"]["id"] == issue["id"]
    assert deleted["after"] is None


def test_notes_record_created_updated_deleted(server, project):
    pid = project["id"]
    issue = assert_json(server.request("POST", f"/projects/{pid}/issues", token=server.root_token,
                                       json={"title": "Noted"}), 201)
    notes = f"/projects/{pid}/issues/{issue['iid']}/notes"
    since = last_id(server)
    note = assert_json(server.request("POST", notes, token=server.root_token,
                                      json={"body": "first"}), 201)
    assert_json(server.request("PUT", f"{notes}/{note['id']}", token=server.root_token,
                               json={"body": "second"}), 200)
    r = server.request("DELETE", f"{notes}/{note['id']}", token=server.root_token)
    assert r.status_code == 204, r.text
    created, updated, deleted = events(server, since)
    assert [created["kind"], updated["kind"], deleted["kind"]] == [
        "note.created", "note.updated", "note.deleted"]
    assert all(e["subject_id"] == note["id"] and e["project_id"] == pid
               for e in (created, updated, deleted))
    assert created["after"]["body"] == "first"
    assert updated["changes"]["body"] == {"previous": "first", "current": "second"}
    assert deleted["before"]["body"] == "second"


def test_move_records_the_move_and_the_new_issue(server, project):
    target = assert_json(server.request("POST", "/projects", token=server.root_token,
                                        json={"name": "events-target"}), 201)
    issue = assert_json(server.request("POST", f"/projects/{project['id']}/issues",
                                       token=server.root_token, json={"title": "Moving"}), 201)
    since = last_id(server)
    moved = assert_json(server.request(
        "POST", f"/projects/{project['id']}/issues/{issue['iid']}/move",
        token=server.root_token, json={"to_project_id": target["id"]}), 201)
    old, new = events(server, since)
    assert old["kind"] == "issue.moved" and old["subject_id"] == issue["id"]
    assert old["changes"]["state"] == {"previous": "opened", "current": "closed"}
    assert old["changes"]["moved_to_id"]["current"] == moved["id"]
    assert new["kind"] == "issue.opened" and new["project_id"] == target["id"]
    assert new["subject_id"] == moved["id"]


def test_time_subscriptions_todos_and_award_emoji_record_their_events(server, project):
    pid = project["id"]
    issue = assert_json(server.request("POST", f"/projects/{pid}/issues", token=server.root_token,
                                       json={"title": "Engaged"}), 201)
    url = f"/projects/{pid}/issues/{issue['iid']}"
    since = last_id(server)
    assert_json(server.request("POST", f"{url}/add_spent_time", token=server.root_token,
                               json={"duration": "1h"}), 201)
    (spent,) = events(server, since)
    assert spent["kind"] == "issue.updated" and spent["subject_id"] == issue["id"]
    assert spent["changes"]["total_time_spent"] == {"previous": 0, "current": 3600}

    since = last_id(server)
    assert_json(server.request("POST", f"{url}/unsubscribe", token=server.root_token), 201)
    assert_json(server.request("POST", f"{url}/subscribe", token=server.root_token), 201)
    assert_json(server.request("POST", f"{url}/todo", token=server.root_token), 201)
    award = assert_json(server.request("POST", f"{url}/award_emoji", token=server.root_token,
                                       json={"name": "thumbsup"}), 201)
    r = server.request("DELETE", f"{url}/award_emoji/{award['id']}", token=server.root_token)
    assert r.status_code == 204, r.text
    recorded = events(server, since)
    assert kinds(recorded) == ["issue.unsubscribed", "issue.subscribed", "todo.marked",
                               "award_emoji.awarded", "award_emoji.revoked"]
    assert all(e["project_id"] == pid and e["actor_id"] == root_id(server) for e in recorded)
    assert recorded[3]["after"]["name"] == "thumbsup"
    assert recorded[4]["before"]["id"] == award["id"]

    # What changes nothing records nothing: a second subscribe or to-do answers 304.
    since = last_id(server)
    assert server.request("POST", f"{url}/subscribe", token=server.root_token).status_code == 304
    assert server.request("POST", f"{url}/todo", token=server.root_token).status_code == 304
    assert events(server, since) == []


def test_failed_note_award_and_time_writes_record_nothing(server, project):
    pid = project["id"]
    issue = assert_json(server.request("POST", f"/projects/{pid}/issues", token=server.root_token,
                                       json={"title": "Refusals"}), 201)
    url = f"/projects/{pid}/issues/{issue['iid']}"
    note = assert_json(server.request("POST", f"{url}/notes", token=server.root_token,
                                      json={"body": "mine"}), 201)
    assert_json(server.request("POST", f"{url}/award_emoji", token=server.root_token,
                               json={"name": "tada"}), 201)
    since = last_id(server)
    assert_json(server.request("POST", f"{url}/notes", token=server.root_token, json={}), 400)
    assert_json(server.request("PUT", f"{url}/notes/{note['id']}", token=server.root_token,
                               json={"body": ""}), 400)
    # the same emoji twice: GitLab's 404
    assert server.request("POST", f"{url}/award_emoji", token=server.root_token,
                          json={"name": "tada"}).status_code == 404
    # more time subtracted than was spent
    assert_json(server.request("POST", f"{url}/add_spent_time", token=server.root_token,
                               json={"duration": "-1h"}), 400)
    assert events(server, since) == []


def test_failed_writes_record_nothing(server, project):
    pid = project["id"]
    user, token = make_user(server)
    since = last_id(server)
    # Missing title: refused before anything is written.
    assert_json(server.request("POST", f"/projects/{pid}/issues", token=server.root_token,
                               json={"description": "no title"}), 400)
    # No access to the private project: 404, nothing written.
    assert server.request("POST", f"/projects/{pid}/issues", token=token,
                          json={"title": "x"}).status_code == 404
    assert events(server, since) == []
    # An update that fails validation writes neither the change nor its event.
    issue = assert_json(server.request("POST", f"/projects/{pid}/issues", token=server.root_token,
                                       json={"title": "Stays"}), 201)
    since = last_id(server)
    assert_json(server.request("PUT", f"/projects/{pid}/issues/{issue['iid']}",
                               token=server.root_token, json={"title": ""}), 400)
    assert events(server, since) == []


def test_users_record_created_renamed_state_changes_and_destroyed(server):
    root = root_id(server)
    since = last_id(server)
    user, _token = make_user(server)
    recorded = events(server, since)
    # make_user also creates the user's token.
    assert kinds(recorded) == ["user.created", "token.created"]
    created = recorded[0]
    assert created["actor_id"] == root and created["subject_id"] == user.id
    assert created["after"]["username"] == user.username
    assert "password_digest" not in created["after"]

    since = last_id(server)
    assert_json(server.request("PUT", f"/users/{user.id}", token=server.root_token,
                               json={"bio": "hello"}), 200)
    assert_json(server.request("PUT", f"/users/{user.id}", token=server.root_token,
                               json={"username": user.username + "x"}), 200)
    for action in ("block", "unblock", "deactivate", "activate"):
        assert server.request("POST", f"/users/{user.id}/{action}",
                              token=server.root_token).status_code == 201
    recorded = events(server, since)
    assert kinds(recorded) == ["user.updated", "user.renamed", "user.blocked", "user.unblocked",
                               "user.deactivated", "user.activated"]
    assert recorded[0]["changes"]["bio"] == {"previous": "", "current": "hello"}
    assert recorded[1]["changes"]["username"]["current"] == user.username + "x"
    assert recorded[2]["changes"]["state"] == {"previous": "active", "current": "blocked"}

    since = last_id(server)
    r = server.request("DELETE", f"/users/{user.id}", token=server.root_token,
                       params={"hard_delete": "true"})
    assert r.status_code == 204, r.text
    assert server.wait_for(lambda: "user.destroyed" in kinds(events(server, since)))
    destroyed = [e for e in events(server, since) if e["kind"] == "user.destroyed"][0]
    assert destroyed["subject_id"] == user.id and destroyed["after"] is None


def test_keys_and_tokens_record_added_and_removed(server):
    user, token = make_user(server)
    key = (FIXTURES / "ed25519.pub").read_text().strip()
    since = last_id(server)
    created = assert_json(server.request("POST", "/user/keys", token=token,
                                         json={"title": "laptop", "key": key}), 201)
    r = server.request("DELETE", f"/user/keys/{created['id']}", token=token)
    assert r.status_code == 204, r.text
    pat = server.create_token_api(user_id=user.id)
    r = server.request("DELETE", f"/personal_access_tokens/{pat['id']}", token=server.root_token)
    assert r.status_code == 204, r.text
    recorded = events(server, since)
    assert kinds(recorded) == ["key.added", "key.removed", "token.created", "token.revoked"]
    added, removed, token_created, revoked = recorded
    assert added["actor_id"] == user.id and added["after"]["title"] == "laptop"
    assert removed["before"]["id"] == created["id"]
    assert token_created["actor_id"] == root_id(server)
    assert "token_digest" not in token_created["after"]
    assert revoked["changes"] == {} and revoked["after"]["revoked"] is True

    # A key that is refused (already taken) records nothing.
    assert_json(server.request("POST", "/user/keys", token=token,
                               json={"title": "again", "key": key}), 201)
    since = last_id(server)
    assert server.request("POST", "/user/keys", token=token,
                          json={"title": "dup", "key": key}).status_code == 400
    assert events(server, since) == []


def test_members_record_added_updated_removed(server, project):
    user, _token = make_user(server)
    pid = project["id"]
    since = last_id(server)
    assert_json(server.request("POST", f"/projects/{pid}/members", token=server.root_token,
                               json={"user_id": user.id, "access_level": 30}), 201)
    assert_json(server.request("PUT", f"/projects/{pid}/members/{user.id}",
                               token=server.root_token, json={"access_level": 40}), 200)
    r = server.request("DELETE", f"/projects/{pid}/members/{user.id}", token=server.root_token)
    assert r.status_code == 204, r.text
    added, updated, removed = events(server, since)
    assert [added["kind"], updated["kind"], removed["kind"]] == [
        "member.added", "member.updated", "member.removed"]
    assert all(e["subject_id"] == user.id and e["project_id"] == pid
               for e in (added, updated, removed))
    assert updated["changes"]["access_level"] == {"previous": 30, "current": 40}
    # Adding the same member twice: the second is refused and records nothing.
    assert_json(server.request("POST", f"/projects/{pid}/members", token=server.root_token,
                               json={"user_id": user.id, "access_level": 30}), 201)
    since = last_id(server)
    assert server.request("POST", f"/projects/{pid}/members", token=server.root_token,
                          json={"user_id": user.id, "access_level": 30}).status_code == 409
    assert events(server, since) == []


def test_projects_record_created_updated_renamed_archived_transferred_deleted(server):
    root = root_id(server)
    since = last_id(server)
    made = assert_json(server.request("POST", "/projects", token=server.root_token,
                                      json={"name": "evented", "initialize_with_readme": True}), 201)
    pid = made["id"]
    (created,) = [e for e in events(server, since) if e["kind"].startswith("project.")]
    assert created["kind"] == "project.created"
    assert created["actor_id"] == root and created["subject_id"] == pid == created["project_id"]
    assert created["after"]["path"] == "evented"
    assert "settings" not in created["after"] and "import_url" not in created["after"]

    group = assert_json(server.request("POST", "/groups", token=server.root_token,
                                       json={"name": "evgroup", "path": "evgroup"}), 201)
    since = last_id(server)
    assert_json(server.request("PUT", f"/projects/{pid}", token=server.root_token,
                               json={"description": "now described"}), 200)
    assert_json(server.request("PUT", f"/projects/{pid}", token=server.root_token,
                               json={"path": "evented-renamed"}), 200)
    assert server.request("POST", f"/projects/{pid}/archive",
                          token=server.root_token).status_code == 201
    assert server.request("POST", f"/projects/{pid}/unarchive",
                          token=server.root_token).status_code == 201
    assert_json(server.request("PUT", f"/projects/{pid}/transfer", token=server.root_token,
                               json={"namespace": group["id"]}), 200)
    recorded = [e for e in events(server, since) if e["subject_id"] == pid]
    assert kinds(recorded) == ["project.updated", "project.renamed", "project.archived",
                               "project.unarchived", "project.transferred"]
    assert recorded[0]["changes"]["description"]["current"] == "now described"
    assert recorded[1]["changes"]["path"] == {"previous": "evented", "current": "evented-renamed"}
    assert recorded[4]["changes"]["namespace_id"]["current"] == group["id"]

    since = last_id(server)
    r = server.request("DELETE", f"/projects/{pid}", token=server.root_token)
    assert r.status_code == 202, r.text
    recorded = [e for e in events(server, since) if e["subject_id"] == pid]
    # Deletion is immediate by default, or marked first when delayed deletion is on.
    assert kinds(recorded) in (["project.destroyed"], ["project.marked_for_deletion"])
    assert recorded[0]["before"]["id"] == pid


def test_groups_record_created_updated_destroyed(server):
    root = root_id(server)
    since = last_id(server)
    group = assert_json(server.request("POST", "/groups", token=server.root_token,
                                       json={"name": "evg2", "path": "evg2"}), 201)
    assert_json(server.request("PUT", f"/groups/{group['id']}", token=server.root_token,
                               json={"description": "described"}), 200)
    r = server.request("DELETE", f"/groups/{group['id']}", token=server.root_token)
    assert r.status_code == 202, r.text
    recorded = [e for e in events(server, since) if e["kind"].startswith("group.")]
    assert kinds(recorded) == ["group.created", "group.updated", "group.destroyed"]
    assert all(e["subject_id"] == group["id"] and e["actor_id"] == root for e in recorded)
    assert recorded[1]["changes"]["description"] == {"previous": "", "current": "described"}
    # A group whose path is taken is refused and records nothing.
    since = last_id(server)
    assert_json(server.request("POST", "/groups", token=server.root_token,
                               json={"name": "evg3", "path": "evg3"}), 201)
    since = last_id(server)
    assert server.request("POST", "/groups", token=server.root_token,
                          json={"name": "evg3", "path": "evg3"}).status_code == 400
    assert events(server, since) == []
