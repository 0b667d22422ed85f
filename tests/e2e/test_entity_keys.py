"""Every answer object has the key set of GitLab CE's entity for the same caller: no EE key, no
key GitLab leaves out (rather than sending `null`), none missing. The sets are GitLab's
`lib/api/entities` (CE, 18.x); where docs/compatibility.md records a key Trellis does not
send yet, the set says so by name."""

import pytest

from conftest import PUBLIC_FIELDS, SUMMARY_FIELDS, assert_json, make_user

# `UserBasic`.
USER_BASIC = SUMMARY_FIELDS
# `User`; not yet sent (docs/compatibility.md, Users): followers, following, is_followed,
# local_time.
USER = PUBLIC_FIELDS
USER_PUBLIC = USER | {
    "last_sign_in_at", "confirmed_at", "last_activity_on", "email", "theme_id",
    "color_scheme_id", "projects_limit", "current_sign_in_at", "identities", "can_create_group",
    "can_create_project", "two_factor_enabled", "external", "private_profile", "commit_email",
}
# `UserWithAdmin`; not yet sent: namespace_id, created_by, email_reset_offered_at. Trellis adds
# the sign-in IPs (recorded).
USER_WITH_ADMIN = USER_PUBLIC | {"is_admin", "note", "current_sign_in_ip", "last_sign_in_ip"}
EE_USER_KEYS = {"shared_runners_minutes_limit", "extra_shared_runners_minutes_limit",
                "scim_identities", "is_auditor", "using_license_seat", "plan", "trial"}

PROJECT_SIMPLE = {
    "id", "description", "name", "name_with_namespace", "path", "path_with_namespace",
    "created_at", "default_branch", "tag_list", "topics", "ssh_url_to_repo", "http_url_to_repo",
    "web_url", "readme_url", "forks_count", "avatar_url", "star_count", "last_activity_at",
    "namespace",
}
NAMESPACE_BASIC = {"id", "name", "path", "kind", "full_path", "parent_id", "avatar_url", "web_url"}
# `compliance_frameworks` is EE's too, but the API this server implements lists it (always `[]`).
EE_PROJECT_KEYS = {"approvals_before_merge", "requirements_access_level", "requirements_enabled",
                   "merge_pipelines_enabled", "merge_trains_enabled",
                   "issues_template", "merge_requests_template"}
MAINTAINER_PROJECT_KEYS = {"import_url", "import_type", "import_error", "runners_token",
                           "build_git_strategy"}

GROUP = {
    "id", "web_url", "name", "path", "description", "visibility", "share_with_group_lock",
    "require_two_factor_authentication", "two_factor_grace_period", "project_creation_level",
    "auto_devops_enabled", "subgroup_creation_level", "emails_disabled", "emails_enabled",
    "show_diff_preview_in_email", "mentions_disabled", "lfs_enabled", "archived",
    "math_rendering_limits_enabled", "lock_math_rendering_limits_enabled", "default_branch",
    "default_branch_protection", "default_branch_protection_defaults", "avatar_url",
    "request_access_enabled", "full_name", "full_path", "created_at", "parent_id",
    "organization_id", "shared_runners_setting", "max_artifacts_size", "marked_for_deletion_on",
}
# `GroupDetail`; not yet sent: runners_token, prevent_sharing_groups_outside_hierarchy.
GROUP_DETAIL = GROUP | {"shared_with_groups", "projects", "shared_projects"}

MEMBER = USER_BASIC | {"access_level", "created_at", "expires_at"}

ISSUE = {
    "id", "iid", "project_id", "title", "description", "state", "created_at", "updated_at",
    "imported", "imported_from", "closed_at", "closed_by", "labels", "milestone", "assignees",
    "author", "type", "assignee", "user_notes_count", "merge_requests_count", "upvotes",
    "downvotes", "due_date", "confidential", "discussion_locked", "issue_type", "web_url",
    "time_stats", "task_completion_status", "has_tasks", "_links", "references", "severity",
    "moved_to_id", "service_desk_reply_to",
}
EE_ISSUE_KEYS = {"weight", "epic", "epic_iid", "iteration", "health_status",
                 "blocking_issues_count"}

ACCESS_LEVEL = {"id", "access_level", "access_level_description"}


def keys(resp, status=200):
    body = assert_json(resp, status)
    return set((body[0] if isinstance(body, list) else body).keys())


@pytest.fixture(scope="module")
def alice(server):
    user, token = make_user(server, "keys")
    return {"id": user.id, "token": token}


@pytest.fixture(scope="module")
def group(server):
    r = server.request("POST", "/groups", token=server.root_token,
                       json={"name": "Keys", "path": "keys-group", "visibility": "public"})
    return assert_json(r, 201)


@pytest.fixture(scope="module")
def project(server, group):
    r = server.request("POST", "/projects", token=server.root_token,
                       json={"name": "keys", "namespace_id": group["id"], "visibility": "public",
                             "initialize_with_readme": True})
    return assert_json(r, 201)


def test_users(server, gl, alice):
    root, token = server.root_token, alice["token"]
    assert keys(server.request("GET", "/user", token=token)) == USER_PUBLIC
    assert keys(server.request("GET", "/user", token=root)) == USER_WITH_ADMIN
    assert keys(server.request("GET", f"/users/{alice['id']}", token=root)) == USER_WITH_ADMIN
    assert keys(server.request("GET", "/users", token=root)) == USER_WITH_ADMIN
    assert keys(server.request("GET", "/users", token=token)) == USER_BASIC
    assert keys(server.request("GET", "/users", token=None)) == USER_BASIC
    assert keys(server.request("GET", "/users/1", token=token)) == USER
    assert keys(server.request("GET", "/users/1", token=None)) == USER
    # python-gitlab reads the same answer.
    assert not EE_USER_KEYS & set(gl.users.get(alice["id"]).attributes)


def test_user_identities_have_no_saml_provider(server, alice):
    r = server.request("PUT", f"/users/{alice['id']}", token=server.root_token,
                       json={"provider": "github", "extern_uid": "keys-1"})
    identities = assert_json(r, 200)["identities"]
    assert [set(i) for i in identities] == [{"provider", "extern_uid"}]


def test_user_keys_emails_status_tokens(server, alice):
    root = server.root_token
    r = server.request("POST", "/user/keys", token=root, json={
        "title": "k", "key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE0QXxwoq5mW3T3kQ2hQhT3hJ7bq8T5V7Yb5H2mCk8nB a@b"})
    assert keys(r, 201) == {"id", "title", "created_at", "expires_at", "last_used_at", "key",
                            "usage_type"}
    r = server.request("POST", "/user/emails", token=root, json={"email": "keys-extra@example.com"})
    assert keys(r, 201) == {"id", "email", "confirmed_at"}
    assert keys(server.request("GET", "/user/status", token=root)) == {
        "emoji", "message", "availability", "message_html", "clear_status_at"}
    token_keys = {"id", "name", "revoked", "created_at", "scopes", "user_id", "last_used_at",
                  "active", "expires_at"}
    assert keys(server.request("GET", "/personal_access_tokens", token=root)) == token_keys
    r = server.request("POST", f"/users/{alice['id']}/impersonation_tokens", token=root,
                       json={"name": "imp", "scopes": ["api"]})
    assert keys(r, 201) == token_keys | {"impersonation", "token"}


def test_projects(server, alice, group, project):
    root, token, pid = server.root_token, alice["token"], project["id"]
    assert keys(server.request("GET", f"/projects/{pid}", token=None)) == PROJECT_SIMPLE
    assert keys(server.request("GET", "/projects?simple=true", token=root)) == PROJECT_SIMPLE
    assert set(project["namespace"]) == NAMESPACE_BASIC

    full = assert_json(server.request("GET", f"/projects/{pid}", token=root), 200)
    assert PROJECT_SIMPLE < set(full)
    assert not EE_PROJECT_KEYS & set(full)
    assert full["compliance_frameworks"] == []
    assert "owner" not in full and "license_url" not in full and "license" not in full
    assert MAINTAINER_PROJECT_KEYS <= set(full)
    assert "open_issues_count" in full

    # A signed-in non-member of a public project: no key of a maintainer's.
    seen = assert_json(server.request("GET", f"/projects/{pid}", token=token), 200)
    assert not MAINTAINER_PROJECT_KEYS & set(seen)
    assert set(full) - set(seen) == MAINTAINER_PROJECT_KEYS | {"repository_storage"}

    licensed = assert_json(server.request("GET", f"/projects/{pid}?license=true", token=root), 200)
    assert licensed["license_url"] is None and licensed["license"] is None

    # A personal project shows its owner.
    r = server.request("POST", "/projects", token=token, json={"name": "mine"})
    assert set(assert_json(r, 201)["owner"]) == USER_BASIC | {"created_at"}

    # Issues disabled: no open issue count.
    r = server.request("PUT", f"/projects/{pid}", token=root, json={"issues_access_level": "disabled"})
    assert "open_issues_count" not in assert_json(r, 200)
    server.request("PUT", f"/projects/{pid}", token=root, json={"issues_access_level": "enabled"})


def test_groups_and_namespaces(server, alice, group, project):
    root, gid = server.root_token, group["id"]
    assert set(group) == GROUP_DETAIL
    assert keys(server.request("GET", f"/groups/{gid}", token=root)) == GROUP_DETAIL
    assert keys(server.request("GET", f"/groups/{gid}", token=None)) == GROUP_DETAIL
    assert keys(server.request("GET", "/groups", token=root)) == GROUP
    r = server.request("POST", "/groups", token=root,
                       json={"name": "Sub", "path": "sub", "parent_id": gid, "visibility": "public"})
    assert keys(r, 201) == GROUP_DETAIL
    assert keys(server.request("GET", f"/groups/{gid}/subgroups", token=root)) == GROUP
    assert keys(server.request("GET", "/namespaces", token=root)) == NAMESPACE_BASIC
    assert keys(server.request("GET", "/namespaces", token=alice["token"])) == NAMESPACE_BASIC
    assert keys(server.request("GET", f"/namespaces/{gid}", token=root)) == NAMESPACE_BASIC


def test_members(server, alice, group, project):
    root, pid = server.root_token, project["id"]
    r = server.request("POST", f"/projects/{pid}/members", token=root,
                       json={"user_id": alice["id"], "access_level": 30})
    assert keys(r, 201) == MEMBER
    assert keys(server.request("GET", f"/projects/{pid}/members", token=root)) == MEMBER
    assert keys(server.request("GET", f"/projects/{pid}/members", token=alice["token"])) == MEMBER
    assert keys(server.request("GET", f"/groups/{group['id']}/members", token=root)) == MEMBER
    assert keys(server.request("GET", f"/projects/{pid}/members/all", token=root)) == MEMBER


def test_protected_refs(server, project):
    root, pid = server.root_token, project["id"]
    r = server.request("POST", f"/projects/{pid}/protected_branches", token=root,
                       json={"name": "release-*", "code_owner_approval_required": True})
    branch = assert_json(r, 201)
    assert set(branch) == {"id", "name", "push_access_levels", "merge_access_levels",
                           "allow_force_push"}
    assert set(branch["push_access_levels"][0]) == ACCESS_LEVEL | {"deploy_key_id"}
    assert set(branch["merge_access_levels"][0]) == ACCESS_LEVEL
    r = server.request("POST", f"/projects/{pid}/protected_tags", token=root, json={"name": "v*"})
    tag = assert_json(r, 201)
    assert set(tag) == {"name", "create_access_levels"}
    assert set(tag["create_access_levels"][0]) == ACCESS_LEVEL | {"deploy_key_id"}


def test_issues(server, project):
    root, pid = server.root_token, project["id"]
    r = server.request("POST", f"/projects/{pid}/issues", token=root, json={"title": "plain"})
    plain = assert_json(r, 201)
    # Without a task list there is no task_status, as GitLab's `Issue` entity exposes it.
    assert set(plain) == ISSUE | {"subscribed"}
    assert not EE_ISSUE_KEYS & set(plain)
    assert plain["type"] == "ISSUE" and plain["issue_type"] == "issue"
    assert plain["severity"] == "UNKNOWN"
    r = server.request("POST", f"/projects/{pid}/issues", token=root,
                       json={"title": "tasks", "description": "- [x] a\n- [ ] b"})
    tasks = assert_json(r, 201)
    assert set(tasks) == ISSUE | {"subscribed", "task_status"}
    assert tasks["task_status"] == "1 of 2 checklist items completed"
    listed = assert_json(server.request("GET", f"/projects/{pid}/issues", token=root), 200)
    assert {frozenset(i) for i in listed} == {frozenset(ISSUE), frozenset(ISSUE | {"task_status"})}
