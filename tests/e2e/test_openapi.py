"""The OpenAPI document at /api/v4/openapi.json, and schemathesis driven by it.

schemathesis generates requests for every documented operation (path parameters of each
schema type, a fixed seed, a bounded number of examples) and checks that the server never
answers 5xx and that each answer matches the document: success bodies match their view
schemas, and every error is in GitLab's body shape (`{"message": ...}` or `{"error": ...}`).
"""

from __future__ import annotations

import subprocess
import sys

from conftest import JSON, UNAUTHORIZED, assert_json, random_token

# Operations that destroy what the run stands on, whatever the generated ids: root is user 1
# and its token is a personal access token, so these could delete, block or deactivate the
# admin, revoke the token the run uses, or delete the project the other operations find.
DESTRUCTIVE = [
    "DELETE /api/v4/users/{id}",
    "POST /api/v4/users/{id}/block",
    "POST /api/v4/users/{id}/deactivate",
    "DELETE /api/v4/projects/{id}",
    "DELETE /api/v4/personal_access_tokens/self",
    "DELETE /api/v4/personal_access_tokens/{id}",
    "DELETE /api/v4/users/{user_id}/impersonation_tokens/{impersonation_token_id}",
]

# Bounds that keep one engine's run to a few minutes on a small machine: examples per
# operation, and a hard stop for the whole run.
EXAMPLES = 4
RUN_TIMEOUT = 240


def test_document_needs_a_signed_in_user(server):
    assert_json(server.request("GET", "/openapi.json"), 401, UNAUTHORIZED)
    assert_json(server.request("GET", "/openapi.json", token=random_token()), 401, UNAUTHORIZED)


def test_document_is_served_to_a_signed_in_user(server):
    r = server.request("GET", "/openapi.json", token=server.root_token)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith(JSON)
    document = r.json()
    assert document["openapi"] == "3.1.0"
    assert set(document["components"]["securitySchemes"]) == {
        "private_token_header", "bearer", "private_token", "access_token",
    }
    issue = document["paths"]["/api/v4/projects/{id}/issues/{issue_iid}"]
    assert set(issue) >= {"get", "put", "delete"}
    assert issue["get"]["responses"]["404"]["content"][JSON]["schema"] == {
        "$ref": "#/components/schemas/Error"
    }
    user = document["paths"]["/api/v4/user"]["get"]["responses"]["200"]
    assert user["content"][JSON]["schema"] == {"$ref": "#/components/schemas/UserSelf"}


def test_typed_inputs_are_documented_as_parameters(server):
    document = server.request("GET", "/openapi.json", token=server.root_token).json()
    issues = document["paths"]["/api/v4/projects/{id}/issues"]
    query = {p["name"]: p for p in issues["get"]["parameters"] if p["in"] == "query"}
    assert query["state"]["schema"] == {"type": "string", "enum": ["opened", "closed", "all"]}
    assert query["per_page"]["schema"]["type"] == "integer"
    assert query["labels"]["schema"]["type"] == "array"
    body = issues["post"]["requestBody"]["content"][JSON]["schema"]
    assert body["required"] == ["title"]
    assert body["properties"]["title"]["type"] == "string"
    assert body["properties"]["confidential"]["type"] == "boolean"
    assert body["properties"]["due_date"]["format"] == "date"
    # GitLab's length limits, where the input checks them as it reads.
    milestone = document["paths"]["/api/v4/projects/{id}/milestones"]["post"]["requestBody"]
    description = milestone["content"][JSON]["schema"]["properties"]["description"]
    assert description == {"type": "string", "maxLength": 1_000_000}
    # A file makes the body a multipart form.
    upload = document["paths"]["/api/v4/projects/{id}/uploads"]["post"]["requestBody"]
    assert upload["content"]["multipart/form-data"]["schema"]["properties"]["file"]["format"] == "binary"
    # A required query parameter.
    file_get = document["paths"]["/api/v4/projects/{id}/repository/files/{file_path}"]["get"]
    ref = next(p for p in file_get["parameters"] if p["name"] == "ref")
    assert ref["in"] == "query" and ref["required"] is True


def test_views_are_documented_as_response_schemas(server):
    document = server.request("GET", "/openapi.json", token=server.root_token).json()
    paths = document["paths"]
    schemas = document["components"]["schemas"]
    tags = paths["/api/v4/projects/{id}/repository/tags"]["get"]["responses"]["200"]
    assert tags["content"][JSON]["schema"] == {
        "type": "array", "items": {"$ref": "#/components/schemas/TagView"},
    }
    assert "commit" in schemas["TagView"]["required"]
    note = paths["/api/v4/projects/{id}/issues/{issue_iid}/notes"]["post"]["responses"]["201"]
    assert note["content"][JSON]["schema"] == {"$ref": "#/components/schemas/NoteView"}
    for name in ["BranchView", "CommitView", "LabelView", "MilestoneView", "ProtectedBranchView",
                 "SshKeyView", "TokenView"]:
        assert name in schemas, name


def success_schema(document, path, method):
    responses = document["paths"][path][method]["responses"]
    status = "201" if method == "post" else "200"
    return responses[status]["content"][JSON]["schema"]


def ref(name):
    return {"$ref": f"#/components/schemas/{name}"}


def list_of(name):
    return {"type": "array", "items": ref(name)}


def test_issues_are_documented_as_issue_views(server):
    document = server.request("GET", "/openapi.json", token=server.root_token).json()
    issue = "/api/v4/projects/{id}/issues/{issue_iid}"
    for path in ["/api/v4/issues", "/api/v4/groups/{id}/issues", "/api/v4/projects/{id}/issues"]:
        assert success_schema(document, path, "get") == list_of("IssueView"), path
    assert success_schema(document, "/api/v4/projects/{id}/issues", "post") == ref("IssueView")
    for path, method in [(issue, "get"), (issue, "put"), (f"{issue}/subscribe", "post"),
                         (f"{issue}/move", "post")]:
        assert success_schema(document, path, method) == ref("IssueView"), path
    assert success_schema(document, f"{issue}/todo", "post") == ref("TodoView")
    schemas = document["components"]["schemas"]
    assert "subscribed" not in schemas["IssueView"]["required"]
    assert {"labels", "time_stats", "_links", "references"} <= set(schemas["IssueView"]["required"])
    # A to-do item's target is the issue or merge request it is about.
    assert schemas["TodoView"]["properties"]["target"] == ref("TodoTarget")
    targets = schemas["TodoTarget"].get("oneOf") or schemas["TodoTarget"].get("anyOf")
    assert ref("IssueView") in targets and ref("MergeRequestView") in targets


def test_projects_are_documented_as_project_views(server):
    document = server.request("GET", "/openapi.json", token=server.root_token).json()
    for path in ["/api/v4/projects", "/api/v4/projects/{id}/forks", "/api/v4/users/{id}/projects",
                 "/api/v4/groups/{id}/projects"]:
        assert success_schema(document, path, "get") == list_of("ProjectView"), path
    for path, method in [("/api/v4/projects", "post"), ("/api/v4/projects/{id}", "get"),
                         ("/api/v4/projects/{id}", "put"), ("/api/v4/projects/{id}/fork", "post"),
                         ("/api/v4/projects/{id}/star", "post"),
                         ("/api/v4/projects/{id}/archive", "post")]:
        assert success_schema(document, path, method) == ref("ProjectView"), path
    schemas = document["components"]["schemas"]
    # Simple or full, as the caller and `simple` decide; a full project is also a simple one.
    assert schemas["ProjectView"] == {"anyOf": [ref("ProjectFull"), ref("ProjectSimple")]}
    full = schemas["ProjectFull"]["allOf"]
    assert full[:2] == [ref("ProjectSimple"), ref("ProjectSettingsView")]
    assert not {"statistics", "license", "forked_from_project"} & set(full[2]["required"])
    # The catalog's settings are listed with their kinds.
    settings = schemas["ProjectSettingsView"]
    assert settings["properties"]["merge_method"] == {
        "type": "string", "enum": ["merge", "rebase_merge", "ff"]}
    assert settings["properties"]["build_timeout"] == {"type": "integer"}
    assert settings["properties"]["ci_default_git_depth"] == {"type": ["integer", "null"]}
    assert settings["properties"]["pages_access_level"]["enum"][-1] == "public"
    assert settings["properties"]["public_jobs"] == {"type": "boolean"}
    assert {"wiki_access_level", "issues_enabled", "issues_access_level"} <= set(settings["required"])
    assert "repository_storage" not in settings["required"]
    assert "template_name" not in settings["properties"]


def test_groups_and_namespaces_are_documented_as_their_views(server):
    document = server.request("GET", "/openapi.json", token=server.root_token).json()
    for path in ["/api/v4/groups", "/api/v4/groups/{id}/subgroups"]:
        assert success_schema(document, path, "get") == list_of("GroupView"), path
    assert success_schema(document, "/api/v4/groups", "post") == ref("GroupDetail")
    for method in ["get", "put"]:
        assert success_schema(document, "/api/v4/groups/{id}", method) == ref("GroupDetail")
    assert success_schema(document, "/api/v4/namespaces", "get") == list_of("NamespaceView")
    assert success_schema(document, "/api/v4/namespaces/{id}", "get") == ref("NamespaceView")
    schemas = document["components"]["schemas"]
    detail = schemas["GroupDetail"]["allOf"]
    assert detail[0] == ref("GroupView")
    assert detail[1]["properties"]["projects"]["items"] == ref("ProjectView")
    # The group settings are listed from their catalog, typed as their defaults are.
    settings = schemas["GroupSettingsView"]["properties"]
    assert settings["lfs_enabled"] == {"type": "boolean"}
    assert settings["two_factor_grace_period"] == {"type": "integer"}
    assert settings["project_creation_level"] == {"type": ["string", "null"]}


def test_hooks_and_push_rules_are_documented_as_their_views(server):
    document = server.request("GET", "/openapi.json", token=server.root_token).json()
    hooks, hook = "/api/v4/projects/{id}/hooks", "/api/v4/projects/{id}/hooks/{hook_id}"
    assert success_schema(document, hooks, "get") == list_of("HookView")
    assert success_schema(document, hooks, "post") == ref("HookView")
    for method in ["get", "put"]:
        assert success_schema(document, hook, method) == ref("HookView")
    assert success_schema(document, f"{hook}/events", "get") == list_of("HookLogView")
    assert success_schema(document, "/api/v4/hooks", "get") == list_of("SystemHookView")
    assert success_schema(document, "/api/v4/hooks/{hook_id}", "put") == ref("SystemHookView")
    push_rule = "/api/v4/projects/{id}/push_rule"
    # No rule yet reads as null, as on GitLab.
    assert success_schema(document, push_rule, "get") == {"oneOf": [ref("PushRuleView"), {"type": "null"}]}
    for method in ["post", "put"]:
        assert success_schema(document, push_rule, method) == ref("PushRuleView")
    schemas = document["components"]["schemas"]
    # The toggles and push rule settings are listed from their lists in model::hooks.
    assert schemas["HookFlags"]["properties"]["issues_events"] == {"type": "boolean"}
    assert "enable_ssl_verification" in schemas["HookFlags"]["required"]
    assert "repository_update_events" in schemas["SystemHookFlags"]["required"]
    assert schemas["PushRuleFlags"]["properties"]["deny_delete_tag"] == {"type": "boolean"}
    assert schemas["PushRuleRegexes"]["properties"]["branch_name_regex"] == {"type": ["string", "null"]}


def test_settings_and_plugins_are_documented_as_their_views(server):
    document = server.request("GET", "/openapi.json", token=server.root_token).json()
    for method in ["get", "put"]:
        assert success_schema(document, "/api/v4/application/settings", method) == ref("SettingsView")
    plugins, hooks = "/api/v4/application/plugins", "/api/v4/application/plugin_hooks"
    assert success_schema(document, plugins, "get") == list_of("PluginView")
    assert success_schema(document, plugins, "post") == ref("PluginView")
    assert success_schema(document, hooks, "get") == list_of("PluginHookView")
    assert success_schema(document, f"{hooks}/{{hook}}", "put") == ref("PluginHookView")
    assert success_schema(document, f"{hooks}/spam_check/test", "post") == ref("SpamTestView")
    schemas = document["components"]["schemas"]
    assert schemas["SettingsView"]["allOf"][0]["$ref"] == "#/components/schemas/CatalogSettings"
    # Every setting of the catalog, each with the type of its kind.
    settings = schemas["CatalogSettings"]["properties"]
    assert settings["signup_enabled"] == {"type": "boolean"}
    assert settings["default_projects_limit"] == {"type": "integer"}
    assert settings["external_authorization_service_timeout"] == {"type": "number"}
    assert settings["after_sign_out_path"] == {"type": ["string", "null"]}
    assert settings["restricted_visibility_levels"]["items"] == {"type": "string"}
    assert settings["repository_storages_weighted"]["additionalProperties"] == {"type": "integer"}
    # Secrets are listed, and read as null.
    assert "null" in settings["asset_proxy_secret_key"]["type"]
    current = server.request("GET", "/application/settings", token=server.root_token).json()
    assert set(current) == set(settings) | {"id", "created_at", "updated_at"}


def test_bytes_are_documented_with_their_media_types(server):
    document = server.request("GET", "/openapi.json", token=server.root_token).json()

    def content(path):
        return document["paths"][path]["get"]["responses"]["200"]["content"]

    repository = "/api/v4/projects/{id}/repository"
    assert set(content(f"{repository}/archive")) == {"application/gzip"}
    assert set(content(f"{repository}/archive.{{format}}")) == {
        "application/gzip", "application/x-bzip2", "application/x-tar", "application/zip"}
    assert set(content("/api/v4/projects/{id}/snapshot")) == {"application/x-tar"}
    for path in [f"{repository}/files/{{file_path}}/raw", f"{repository}/blobs/{{sha}}/raw"]:
        assert content(path) == {"text/plain": {"schema": {"type": "string", "format": "binary"}}}


def test_users_are_documented_as_their_views(server):
    document = server.request("GET", "/openapi.json", token=server.root_token).json()
    for path, method in [("/api/v4/user/status", "get"), ("/api/v4/user/status", "put"),
                         ("/api/v4/users/{id}/status", "get")]:
        assert success_schema(document, path, method) == ref("UserStatusView"), path
    assert success_schema(document, "/api/v4/user_counts", "get") == ref("UserCounts")
    assert success_schema(document, "/api/v4/user/activities", "get") == list_of("ActivityView")
    memberships = success_schema(document, "/api/v4/users/{id}/memberships", "get")
    assert memberships == list_of("MembershipView")
    assert success_schema(document, "/api/v4/users", "post") == ref("UserAdminDetail")
    assert success_schema(document, "/api/v4/users/{id}", "put") == ref("UserAdminDetail")
    for action in ["block", "unblock", "deactivate", "activate"]:
        path = f"/api/v4/users/{{id}}/{action}"
        assert success_schema(document, path, "post") == ref("UserStateAnswer"), path
    schemas = document["components"]["schemas"]
    # GitLab's answer when nothing changed may be null or false.
    assert schemas["UserStateAnswer"]["type"] == ["boolean", "null"]
    assert schemas["UserAdminDetail"]["allOf"][0] == ref("UserAdmin")


def test_repository_files_and_authors_are_documented_as_their_views(server):
    document = server.request("GET", "/openapi.json", token=server.root_token).json()
    repository = "/api/v4/projects/{id}/repository"
    file = f"{repository}/files/{{file_path}}"
    assert success_schema(document, file, "get") == ref("FileView")
    for method in ["post", "put"]:
        assert success_schema(document, file, method) == ref("FileWriteView")
    assert success_schema(document, f"{file}/blame", "get") == list_of("BlameRangeView")
    assert success_schema(document, f"{repository}/blobs/{{sha}}", "get") == ref("BlobView")
    contributors = success_schema(document, f"{repository}/contributors", "get")
    assert contributors == list_of("ContributorView")
    refs = success_schema(document, f"{repository}/commits/{{sha}}/refs", "get")
    assert refs == list_of("CommitRefView")
    assert "ref" in document["components"]["schemas"]["FileView"]["required"]


def test_project_answers_are_documented_as_their_views(server):
    document = server.request("GET", "/openapi.json", token=server.root_token).json()
    project = "/api/v4/projects/{id}"
    assert success_schema(document, f"{project}/share", "post") == ref("ProjectGroupLinkView")
    assert success_schema(document, f"{project}/languages", "get") == ref("LanguagesView")
    for path in [f"{project}/housekeeping", f"{project}/mirror/pull"]:
        assert success_schema(document, path, "post") == ref("StartedView"), path
    assert success_schema(document, f"{project}/starrers", "get") == list_of("StarrerView")
    assert success_schema(document, f"{project}/users", "get") == list_of("UserSummary")
    schemas = document["components"]["schemas"]
    # A map of language name to percent.
    assert schemas["LanguagesView"]["additionalProperties"]["type"] == "number"


def test_issue_side_lists_are_documented(server):
    document = server.request("GET", "/openapi.json", token=server.root_token).json()
    issue = "/api/v4/projects/{id}/issues/{issue_iid}"
    assert success_schema(document, f"{issue}/participants", "get") == list_of("UserSummary")
    # The merge requests that close the issue.
    for path in [f"{issue}/closed_by", f"{issue}/related_merge_requests"]:
        assert success_schema(document, path, "get") == list_of("MergeRequestView")
    detail = success_schema(document, f"{issue}/user_agent_detail", "get")
    assert detail == ref("UserAgentDetailView")


def test_hook_tests_are_documented_as_their_views(server):
    document = server.request("GET", "/openapi.json", token=server.root_token).json()
    assert success_schema(document, "/api/v4/hooks/{hook_id}", "post") == ref("SystemHookSample")
    hook = "/api/v4/projects/{id}/hooks/{hook_id}"
    assert success_schema(document, f"{hook}/test/{{trigger}}", "post") == ref("HookTestView")
    resend = f"{hook}/events/{{hook_log_id}}/resend"
    assert success_schema(document, resend, "post") == ref("HookResendView")


def test_version_and_metadata_are_documented_as_their_views(server):
    document = server.request("GET", "/openapi.json", token=server.root_token).json()
    assert success_schema(document, "/api/v4/version", "get") == ref("MetadataView")
    assert success_schema(document, "/api/v4/metadata", "get") == ref("MetadataView")
    kas = document["components"]["schemas"]["KasView"]["properties"]
    assert set(kas) == {"enabled", "externalUrl", "externalK8sProxyUrl", "version"}


# The success bodies documented as any JSON, and why.
UNTYPED_BODIES = {
    # The document itself: the OpenAPI specification describes it.
    "GET /api/v4/openapi.json",
}


def test_every_json_success_body_has_a_schema(server):
    document = server.request("GET", "/openapi.json", token=server.root_token).json()
    untyped = set()
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for status, response in operation["responses"].items():
                body = response.get("content", {}).get(JSON)
                if status.startswith("2") and body is not None and body["schema"] == {}:
                    untyped.add(f"{method.upper()} {path}")
    assert untyped == UNTYPED_BODIES


def test_every_route_is_documented(server):
    document = server.request("GET", "/openapi.json", token=server.root_token).json()
    routes = server.cli("routes").stdout.split()
    api_routes = [route.replace("{*", "{") for route in routes if route.startswith("/api/v4/")]
    assert api_routes
    missing = [route for route in api_routes if route not in document["paths"]]
    assert missing == []


def test_schemathesis_finds_no_server_error_and_no_undocumented_shape(server, gl, tmp_path):
    project = gl.projects.create({"name": "fuzzed"})
    project.issues.create({"title": "an issue", "description": "to find"})
    document = tmp_path / "openapi.json"
    document.write_text(server.request("GET", "/openapi.json", token=server.root_token).text)
    excluded = [arg for operation in DESTRUCTIVE for arg in ("--exclude-operation-id", operation)]
    run = subprocess.run(
        [
            sys.executable, "-m", "schemathesis.cli", "run", str(document),
            "--url", server.url,
            "-H", f"PRIVATE-TOKEN: {server.root_token}",
            "--checks", "not_a_server_error,response_schema_conformance",
            "--phases", "examples,fuzzing",
            "--mode", "positive",
            "--max-examples", str(EXAMPLES),
            "--seed", "17",
            "--no-shrink",
            "--workers", "1",
            "--generation-with-security-parameters", "false",
            "--generation-database", "none",
            "--request-timeout", "30",
            "--report", "junit",
            "--report-dir", str(tmp_path),
            "--no-color",
            *excluded,
        ],
        # schemathesis keeps a cache of the crashes it found in the working directory.
        capture_output=True, text=True, timeout=RUN_TIMEOUT, cwd=tmp_path,
    )
    assert run.returncode == 0, run.stdout[-20000:] + run.stderr[-5000:]
    # The destructive operations were left out, and the ones the run stands on still work.
    assert gl.projects.get(project.id).issues.get(1).title == "an issue"
