"""The key sets of labels, milestones, notes, award emoji, time stats, application settings,
OAuth applications and the smaller user and project answers, for every caller that changes
them: GitLab CE's `lib/api/entities` (18.x), the spec where it lists a key. Keys Trellis does
not send yet are named in the comments and recorded in docs/compatibility.md."""

import pytest

from conftest import assert_json, make_user
from test_entity_keys import USER_BASIC, keys

# `LabelBasic` (issues' `with_labels_details`); not yet sent: archived (GitLab's label
# archiving, behind its `labels_archive` flag in CE 18).
LABEL_BASIC = {"id", "name", "color", "description", "description_html", "text_color"}
# `ProjectLabel` (`Label` with `subscribed`, plus priority and is_project_label).
PROJECT_LABEL = LABEL_BASIC | {"subscribed", "priority", "is_project_label"}
LABEL_COUNTS = {"open_issues_count", "closed_issues_count", "open_merge_requests_count"}

# `Milestone` of a project (`group_id` only on group milestones, which Trellis does not have).
MILESTONE = {"id", "iid", "project_id", "title", "description", "state", "created_at",
             "updated_at", "due_date", "start_date", "expired", "web_url"}

# `Note` of an issue: not a diff note (no position, commit_id), not resolvable (so no
# resolved, resolved_by, resolved_at).
NOTE = {"id", "type", "body", "attachment", "author", "created_at", "updated_at", "system",
        "noteable_id", "noteable_type", "project_id", "resolvable", "confidential", "internal",
        "imported", "imported_from", "noteable_iid", "commands_changes"}

# `AwardEmoji`.
AWARD_EMOJI = {"id", "name", "user", "created_at", "updated_at", "awardable_id",
               "awardable_type", "url"}

# `IssuableTimeStats`.
TIME_STATS = {"time_estimate", "total_time_spent", "human_time_estimate",
              "human_total_time_spent"}

# `UserAgentDetail`, with the spec's name for GitLab's `akismet_submitted`.
USER_AGENT_DETAIL = {"user_agent", "ip_address", "spam_filter_submitted"}

# `Application` and `ApplicationWithSecret`.
APPLICATION = {"id", "application_id", "application_name", "callback_url", "confidential"}

MEMBERSHIP = {"source_id", "source_name", "source_type", "access_level"}
USER_ACTIVITY = {"username", "last_activity_on", "last_activity_at"}
USER_COUNTS = {"merge_requests", "assigned_issues", "assigned_merge_requests",
               "review_requested_merge_requests", "todos"}
USER_STARS_PROJECT = {"starred_since", "user"}
PROJECT_GROUP_LINK = {"id", "project_id", "group_id", "group_access", "expires_at"}

# The spec's table of application settings (its `[T]` rows included: the spec lists them), in
# the spec's order, as whitespace-separated names.
SPEC_SETTINGS = set("""
    admin_mode admin_notification_email abuse_notification_email after_sign_out_path
    after_sign_up_text spam_filter_enabled spam_filter_api_key
    allow_group_owners_to_manage_ldap allow_local_requests_from_hooks_and_services
    allow_local_requests_from_web_hooks_and_services allow_local_requests_from_system_hooks
    archive_builds_in_human_readable asset_proxy_enabled asset_proxy_secret_key
    asset_proxy_url asset_proxy_whitelist asset_proxy_allowlist authorized_keys_enabled
    auto_devops_domain auto_devops_enabled automatic_purchased_storage_allocation
    check_namespace_plan commit_email_hostname
    container_expiration_policies_enable_historic_entries
    container_registry_cleanup_tags_service_max_list_size
    container_registry_delete_tags_service_timeout
    container_registry_expiration_policies_caching
    container_registry_expiration_policies_worker_capacity
    container_registry_token_expire_delay deactivate_dormant_users default_artifacts_expire_in
    default_branch_name default_branch_protection default_ci_config_path
    default_group_visibility default_project_creation default_project_visibility
    default_projects_limit default_snippet_visibility delayed_project_deletion
    delayed_group_deletion delete_inactive_projects deletion_adjourned_period
    diff_max_patch_bytes diff_max_files diff_max_lines disable_feed_token
    disabled_oauth_sign_in_sources dns_rebinding_protection_enabled domain_denylist_enabled
    domain_denylist domain_allowlist dsa_key_restriction rsa_key_restriction
    ecdsa_key_restriction ecdsa_sk_key_restriction ed25519_key_restriction
    ed25519_sk_key_restriction cluster_integration_access_key_id
    cluster_integration_account_id cluster_integration_secret_access_key
    cluster_integration_enabled search_engine_aws_access_key search_engine_aws_region
    search_engine_aws_secret_access_key search_engine_aws
    search_engine_indexed_field_length_limit search_engine_indexed_file_size_limit_kb
    search_engine_indexing search_engine_limit_indexing search_engine_search
    search_engine_max_bulk_concurrency search_engine_max_bulk_size_mb
    search_engine_namespace_ids search_engine_project_ids search_engine_url
    search_engine_username search_engine_password email_additional_text email_author_in_body
    enabled_git_access_protocol enforce_namespace_storage_limit enforce_terms terms
    external_auth_client_cert external_auth_client_key external_auth_client_key_pass
    external_authorization_service_enabled external_authorization_service_default_label
    external_authorization_service_timeout external_authorization_service_url
    external_pipeline_validation_service_url external_pipeline_validation_service_token
    external_pipeline_validation_service_timeout file_template_project_id first_day_of_week
    geo_node_allowed_ips geo_status_timeout git_two_factor_session_expiry
    git_backend_timeout_default git_backend_timeout_fast git_backend_timeout_medium
    dashboard_enabled dashboard_url avatar_service_enabled hashed_storage_enabled
    help_page_hide_commercial_content help_page_support_url help_page_text help_text
    hide_third_party_offers home_page_url housekeeping_bitmaps_enabled housekeeping_enabled
    housekeeping_full_repack_period housekeeping_gc_period
    housekeeping_incremental_repack_period html_emails_enabled import_sources
    in_product_marketing_emails_enabled inactive_projects_delete_after_months
    inactive_projects_min_size_mb inactive_projects_send_warning_email_after_months
    invisible_captcha_enabled issues_create_limit keep_latest_artifact local_markdown_version
    mail_provider_signing_key mail_provider_events_enabled maintenance_mode_message
    maintenance_mode max_artifacts_size max_attachment_size max_pages_size max_export_size
    max_import_size max_personal_access_token_lifetime max_ssh_key_lifetime
    metrics_method_call_threshold mirror_available mirror_capacity_threshold
    mirror_max_capacity mirror_max_delay js_package_requests_forwarding
    py_package_requests_forwarding outbound_local_requests_whitelist
    pages_domain_verification_enabled password_authentication_enabled_for_git
    password_authentication_enabled_for_web password_number_required password_symbol_required
    password_uppercase_required password_lowercase_required performance_bar_allowed_group_id
    performance_bar_allowed_group_path performance_bar_enabled personal_access_token_prefix
    pipeline_limit_per_project_user_sha diagram_renderer_enabled diagram_renderer_url
    polling_interval_multiplier project_export_enabled prometheus_metrics_enabled
    protected_ci_variables push_event_activities_limit push_event_hooks_limit
    rate_limiting_response_text raw_blob_request_limit user_email_lookup_limit
    search_rate_limit search_rate_limit_unauthenticated captcha_enabled captcha_private_key
    captcha_site_key receive_max_input_size repository_checks_enabled repository_size_limit
    repository_storages_weighted repository_storages require_admin_approval_after_user_signup
    require_two_factor_authentication restricted_visibility_levels
    send_user_confirmation_email session_expire_delay shared_runners_enabled
    shared_runners_minutes shared_runners_text background_job_limiter_mode
    background_job_limiter_compression_threshold_bytes background_job_limiter_limit_bytes
    sign_in_text signin_enabled signup_enabled chat_app_enabled chat_app_id chat_app_secret
    chat_app_verification_token chat_app_signing_secret snippet_size_limit
    analytics_tracking_app_id analytics_tracking_cookie_domain
    analytics_tracking_collector_hostname analytics_tracking_enabled code_intel_enabled
    code_intel_public_only code_intel_url spam_check_endpoint_enabled spam_check_endpoint_url
    spam_check_api_key suggest_pipeline_enabled terminal_max_session_time
    throttle_authenticated_api_enabled throttle_authenticated_api_period_in_seconds
    throttle_authenticated_api_requests_per_period throttle_authenticated_web_enabled
    throttle_authenticated_web_period_in_seconds
    throttle_authenticated_web_requests_per_period throttle_authenticated_packages_api_enabled
    throttle_authenticated_packages_api_period_in_seconds
    throttle_authenticated_packages_api_requests_per_period
    throttle_unauthenticated_api_enabled throttle_unauthenticated_api_period_in_seconds
    throttle_unauthenticated_api_requests_per_period throttle_unauthenticated_web_enabled
    throttle_unauthenticated_web_period_in_seconds
    throttle_unauthenticated_web_requests_per_period
    throttle_unauthenticated_packages_api_enabled
    throttle_unauthenticated_packages_api_period_in_seconds
    throttle_unauthenticated_packages_api_requests_per_period throttle_unauthenticated_enabled
    throttle_unauthenticated_period_in_seconds throttle_unauthenticated_requests_per_period
    time_tracking_limit_to_hours two_factor_grace_period unique_ips_limit_enabled
    unique_ips_limit_per_user unique_ips_limit_time_window usage_ping_enabled
    version_check_enabled user_deactivation_emails_enabled user_default_external
    user_default_internal_regex user_oauth_applications user_show_add_ssh_key_message
    whats_new_variant web_ide_clientside_preview_enabled wiki_page_max_content_bytes
""".split())
# GitLab CE settings the spec leaves out but Trellis sends: the protected paths throttle.
# `oauth_implicit_grant_enabled` is Trellis's own (docs/compatibility.md, OAuth). Not yet sent:
# the CE settings outside the spec's table (docs/compatibility.md, Application settings).
SETTINGS = {"id", "created_at", "updated_at"} | SPEC_SETTINGS | {
    "protected_paths", "throttle_protected_paths_enabled",
    "throttle_protected_paths_period_in_seconds", "throttle_protected_paths_requests_per_period",
    "oauth_implicit_grant_enabled",
}
# Keys only GitLab EE's `ApplicationSetting` adds that the spec does not list.
EE_SETTINGS = {"elasticsearch_indexing", "elasticsearch_url", "slack_app_enabled",
               "lock_memberships_to_ldap", "duo_features_enabled", "enforce_pat_expiration",
               "secret_detection_token_revocation_enabled", "elasticsearch_aws"}


def key_sets(resp):
    return {frozenset(item) for item in assert_json(resp, 200)}


@pytest.fixture(scope="module")
def people(server):
    member, member_token = make_user(server, "trkm")
    outsider, outsider_token = make_user(server, "trko")
    return {"member": {"id": member.id, "token": member_token},
            "outsider": {"id": outsider.id, "token": outsider_token}}


@pytest.fixture(scope="module")
def project(server, people):
    root = server.root_token
    r = server.request("POST", "/projects", token=root,
                       json={"name": "tracking-keys", "visibility": "public"})
    project = assert_json(r, 201)
    r = server.request("POST", f"/projects/{project['id']}/members", token=root,
                       json={"user_id": people["member"]["id"], "access_level": 20})
    assert_json(r, 201)
    return project


@pytest.fixture(scope="module")
def callers(server, people):
    """Every caller whose key set could differ on a public project."""
    return {"admin": server.root_token, "member": people["member"]["token"],
            "non-member": people["outsider"]["token"], "anonymous": None}


@pytest.fixture(scope="module")
def issue(server, project):
    r = server.request("POST", f"/projects/{project['id']}/issues", token=server.root_token,
                       json={"title": "tracked", "labels": "keyed"})
    return assert_json(r, 201)


def test_project_labels(server, project, callers):
    root, pid = server.root_token, project["id"]
    r = server.request("POST", f"/projects/{pid}/labels", token=root,
                       json={"name": "Bug", "color": "#d9534f", "description": "broken"})
    label = assert_json(r, 201)
    assert set(label) == PROJECT_LABEL
    assert label["color"] == "#d9534f" and label["text_color"] == "#FFFFFF"
    r = server.request("POST", f"/projects/{pid}/labels", token=root,
                       json={"name": "Counted", "color": "red", "with_counts": True})
    counted = assert_json(r, 201)
    assert set(counted) == PROJECT_LABEL | LABEL_COUNTS
    # A color name is stored and answered as GitLab's `Gitlab::Color` hex value.
    assert counted["color"] == "#FF0000"
    r = server.request("PUT", f"/projects/{pid}/labels/{label['id']}", token=root,
                       json={"priority": 3})
    assert keys(r) == PROJECT_LABEL
    r = server.request("PUT", f"/projects/{pid}/labels", token=root,
                       json={"name": "Bug", "description": "still <broken> & open"})
    updated = assert_json(r, 200)
    assert set(updated) == PROJECT_LABEL
    # GitLab renders the description: plain text comes back HTML-escaped.
    assert updated["description_html"] == "still &lt;broken&gt; &amp; open"
    for caller, token in callers.items():
        url = f"/projects/{pid}/labels"
        assert key_sets(server.request("GET", url, token=token)) == {frozenset(PROJECT_LABEL)}, caller
        counted = server.request("GET", url, token=token, params={"with_counts": "true"})
        assert key_sets(counted) == {frozenset(PROJECT_LABEL | LABEL_COUNTS)}, caller
        single = server.request("GET", f"{url}/{label['id']}", token=token)
        assert keys(single) == PROJECT_LABEL, caller


def test_label_counts_are_of_the_issues_the_caller_sees(server, project, people, callers):
    root, pid, outsider = server.root_token, project["id"], people["outsider"]["token"]
    assert_json(server.request("POST", f"/projects/{pid}/labels", token=root,
                               json={"name": "Secretive", "color": "#000000"}), 201)
    for token, confidential in [(root, False), (root, True), (outsider, True)]:
        r = server.request("POST", f"/projects/{pid}/issues", token=token,
                           json={"title": "counted", "confidential": confidential})
        created = assert_json(r, 201)
        assert created["confidential"] is confidential
        # A non-member may not label an issue: the administrator does.
        r = server.request("PUT", f"/projects/{pid}/issues/{created['iid']}", token=root,
                           json={"add_labels": "Secretive"})
        assert assert_json(r, 200)["labels"] == ["Secretive"]
    # GitLab counts with the caller's issue finder: confidential issues only for Reporters and
    # up, their authors and assignees.
    expected = {"admin": 3, "member": 3, "non-member": 2, "anonymous": 1}
    for caller, token in callers.items():
        counted = assert_json(server.request("GET", f"/projects/{pid}/labels/Secretive", token=token,
                                             params={"with_counts": "true"}), 200)
        assert counted["open_issues_count"] == expected[caller], caller

def test_issue_labels_details(server, project, issue):
    r = server.request("GET", f"/projects/{project['id']}/issues/{issue['iid']}",
                       token=server.root_token, params={"with_labels_details": "true"})
    assert [set(label) for label in assert_json(r, 200)["labels"]] == [LABEL_BASIC]


def test_milestones(server, project, callers, issue):
    root, pid = server.root_token, project["id"]
    r = server.request("POST", f"/projects/{pid}/milestones", token=root,
                       json={"title": "v1", "due_date": "2020-01-01", "start_date": "2019-12-01"})
    milestone = assert_json(r, 201)
    # GitLab's `Milestone` has no `closed_at`: the milestones API never shows it.
    assert set(milestone) == MILESTONE
    assert milestone["expired"] is True
    r = server.request("PUT", f"/projects/{pid}/milestones/{milestone['id']}", token=root,
                       json={"state_event": "close"})
    assert keys(r) == MILESTONE
    for caller, token in callers.items():
        url = f"/projects/{pid}/milestones"
        assert key_sets(server.request("GET", url, token=token)) == {frozenset(MILESTONE)}, caller
        assert keys(server.request("GET", f"{url}/{milestone['id']}", token=token)) == MILESTONE

    # In issues: the spec adds `closed_at` to the single issue's milestone only.
    url = f"/projects/{pid}/issues/{issue['iid']}"
    r = server.request("PUT", url, token=root, json={"milestone_id": milestone["id"]})
    assert set(assert_json(r, 200)["milestone"]) == MILESTONE | {"closed_at"}
    listed = assert_json(server.request("GET", f"/projects/{pid}/issues", token=root), 200)
    assert {frozenset(i["milestone"]) for i in listed if i["milestone"]} == {frozenset(MILESTONE)}


def test_notes_and_system_notes(server, project, callers, issue):
    root, pid = server.root_token, project["id"]
    url = f"/projects/{pid}/issues/{issue['iid']}"
    r = server.request("POST", f"{url}/notes", token=root, json={"body": "a comment"})
    note = assert_json(r, 201)
    assert set(note) == NOTE
    assert set(note["author"]) == USER_BASIC
    assert (note["imported"], note["imported_from"]) == (False, "none")
    assert note["resolvable"] is False and note["type"] is None and note["attachment"] is None
    r = server.request("PUT", f"{url}/notes/{note['id']}", token=root, json={"body": "edited"})
    assert keys(r) == NOTE
    # A change that writes a system note.
    assert_json(server.request("PUT", url, token=root, json={"title": "tracked again"}), 200)
    for caller, token in callers.items():
        notes = assert_json(server.request("GET", f"{url}/notes", token=token), 200)
        assert {n["system"] for n in notes} == {True, False}, caller
        assert {frozenset(n) for n in notes} == {frozenset(NOTE)}, caller
        assert keys(server.request("GET", f"{url}/notes/{note['id']}", token=token)) == NOTE


def test_award_emoji(server, project, callers, issue):
    root, pid = server.root_token, project["id"]
    url = f"/projects/{pid}/issues/{issue['iid']}"
    r = server.request("POST", f"{url}/award_emoji", token=root, json={"name": "thumbsup"})
    award = assert_json(r, 201)
    assert set(award) == AWARD_EMOJI
    assert set(award["user"]) == USER_BASIC
    # Only custom emoji have a URL; Trellis has none.
    assert award["url"] is None
    note = assert_json(server.request("POST", f"{url}/notes", token=root, json={"body": "n"}), 201)
    r = server.request("POST", f"{url}/notes/{note['id']}/award_emoji", token=root,
                       json={"name": "tada"})
    assert keys(r, 201) == AWARD_EMOJI
    # The award emoji API needs a token.
    for caller in ["admin", "member", "non-member"]:
        token = callers[caller]
        listed = server.request("GET", f"{url}/award_emoji", token=token)
        assert key_sets(listed) == {frozenset(AWARD_EMOJI)}, caller
        single = server.request("GET", f"{url}/award_emoji/{award['id']}", token=token)
        assert keys(single) == AWARD_EMOJI, caller
        on_note = server.request("GET", f"{url}/notes/{note['id']}/award_emoji", token=token)
        assert key_sets(on_note) == {frozenset(AWARD_EMOJI)}, caller


def test_time_stats_participants_user_agent(server, project, callers, issue):
    root, pid = server.root_token, project["id"]
    url = f"/projects/{pid}/issues/{issue['iid']}"
    r = server.request("POST", f"{url}/time_estimate", token=root, json={"duration": "3h"})
    assert keys(r) == TIME_STATS
    r = server.request("POST", f"{url}/add_spent_time", token=root, json={"duration": "1h"})
    assert keys(r, 201) == TIME_STATS
    assert keys(server.request("POST", f"{url}/reset_time_estimate", token=root)) == TIME_STATS
    assert keys(server.request("POST", f"{url}/reset_spent_time", token=root)) == TIME_STATS
    for caller, token in callers.items():
        assert keys(server.request("GET", f"{url}/time_stats", token=token)) == TIME_STATS
        participants = server.request("GET", f"{url}/participants", token=token)
        assert key_sets(participants) == {frozenset(USER_BASIC)}, caller
    assert keys(server.request("GET", f"{url}/user_agent_detail", token=root)) == USER_AGENT_DETAIL


def test_applications(server):
    root = server.root_token
    r = server.request("POST", "/applications", token=root,
                       json={"name": "keys", "redirect_uri": "https://app.example/cb",
                             "scopes": "api"})
    app = assert_json(r, 201)
    assert set(app) == APPLICATION | {"secret"}
    assert key_sets(server.request("GET", "/applications", token=root)) == {frozenset(APPLICATION)}
    r = server.request("POST", f"/applications/{app['id']}/renew-secret", token=root)
    assert keys(r, 201) == APPLICATION | {"secret"}


def test_user_answers(server, people, project):
    root, member = server.root_token, people["member"]
    r = server.request("GET", f"/users/{member['id']}/memberships", token=root)
    memberships = assert_json(r, 200)
    assert [set(m) for m in memberships] == [MEMBERSHIP]
    # An integer, as GitLab sends the member's column (docs/compatibility.md, Users).
    assert memberships[0]["access_level"] == 20
    assert keys(server.request("GET", "/user/activities", token=root)) == USER_ACTIVITY
    for token in [root, member["token"]]:
        assert keys(server.request("GET", "/user_counts", token=token)) == USER_COUNTS


def test_project_answers(server, people, project, callers):
    root, pid = server.root_token, project["id"]
    assert_json(server.request("POST", f"/projects/{pid}/star", token=people["member"]["token"]), 201)
    r = server.request("POST", "/groups", token=root,
                       json={"name": "Shared", "path": "tracking-shared"})
    group = assert_json(r, 201)
    r = server.request("POST", f"/projects/{pid}/share", token=root,
                       json={"group_id": group["id"], "group_access": 30})
    assert keys(r, 201) == PROJECT_GROUP_LINK
    for caller, token in callers.items():
        starrers = assert_json(server.request("GET", f"/projects/{pid}/starrers", token=token), 200)
        assert [set(s) for s in starrers] == [USER_STARS_PROJECT], caller
        assert set(starrers[0]["user"]) == USER_BASIC, caller
        users = server.request("GET", f"/projects/{pid}/users", token=token)
        assert key_sets(users) == {frozenset(USER_BASIC)}, caller


def test_application_settings(server):
    root = server.root_token
    settings = assert_json(server.request("GET", "/application/settings", token=root), 200)
    assert set(settings) == SETTINGS
    assert not EE_SETTINGS & set(settings)
    r = server.request("PUT", "/application/settings", token=root, json={"home_page_url": None})
    assert keys(r) == SETTINGS
