//! Project representations: the simple form (anonymous callers, `simple=true`) and the full
//! form for authenticated callers, with the caller's permissions, namespace, owner, links,
//! feature access levels and (with `statistics=true`) statistics.

use serde_json::{Map, Value, json};

use super::namespace::NamespaceViews;
use super::timestamp;
use super::user::UserViews;
use crate::access_level::{AccessLevel, Permissions};
use crate::model::namespaces::NamespaceRow;
use crate::model::project_settings::{Kind, PROJECT_SETTINGS, default_expiration_policy, setting};
use crate::model::project_shares::ShareRow;
use crate::model::projects::ProjectRow;
use crate::model::users::UserRow;

/// What a project view needs besides the row.
pub struct ProjectContext<'a> {
    pub namespace: &'a NamespaceRow,
    /// The personal namespace's user, for `owner` and the namespace avatar.
    pub owner: Option<&'a UserRow>,
    pub permissions: Permissions,
    pub statistics: bool,
    pub license: bool,
    pub custom_attributes: Option<Vec<(String, String)>>,
    /// The source's simple view, when this is a fork of a project the caller can see.
    pub forked_from: Option<Map<String, Value>>,
    /// The groups the project is shared with.
    pub shares: &'a [ShareRow],
}

pub struct ProjectViews<'a> {
    pub base_url: &'a str,
    pub host: &'a str,
    /// The port git over SSH serves this tenant on, when it is served.
    pub ssh_port: Option<u16>,
    pub users: UserViews<'a>,
}

impl ProjectViews<'_> {
    fn full_path(&self, project: &ProjectRow, ns: &NamespaceRow) -> String {
        format!("{}/{}", ns.full_path, project.path)
    }

    pub fn simple(
        &self,
        project: &ProjectRow,
        ns: &NamespaceRow,
        owner: Option<&UserRow>,
    ) -> Map<String, Value> {
        let full_path = self.full_path(project, ns);
        let web_url = format!("{}/{full_path}", self.base_url);
        let namespaces = NamespaceViews {
            base_url: self.base_url,
        };
        let ns_avatar = namespaces.avatar_url(ns, owner, &self.users);
        let tags = project.tags();
        let view = json!({
            "id": project.id,
            "description": project.description,
            "name": project.name,
            "name_with_namespace": format!("{} / {}", ns.full_name, project.name),
            "path": project.path,
            "path_with_namespace": full_path,
            "created_at": timestamp(project.created_at),
            "default_branch": project.default_branch,
            "tag_list": tags,
            "topics": tags,
            "ssh_url_to_repo": self.ssh_url(&full_path),
            "http_url_to_repo": format!("{web_url}.git"),
            "web_url": web_url,
            "readme_url": null,
            "forks_count": project.forks_count,
            "avatar_url": project.avatar_path.as_ref().map(|file| format!(
                "{}/uploads/-/system/project/avatar/{}/{file}", self.base_url, project.id
            )),
            "star_count": project.star_count,
            "last_activity_at": timestamp(project.last_activity_at),
            "namespace": namespaces.embedded(ns, ns_avatar),
        });
        let Value::Object(map) = view else {
            unreachable!()
        };
        map
    }

    pub fn full(&self, project: &ProjectRow, ctx: &ProjectContext, admin: bool) -> Value {
        let mut map = self.simple(project, ctx.namespace, ctx.owner);
        let settings = project.settings_json();
        let get = |key: &str| setting(&settings, key);
        let base = format!("{}/api/v4/projects/{}", self.base_url, project.id);
        let access = |key: &str| -> Value {
            match key {
                "issues_access_level" => json!(project.issues_access_level),
                "merge_requests_access_level" => json!(project.merge_requests_access_level),
                _ => get(key),
            }
        };
        let enabled = |key: &str| json!(access(key).as_str() != Some("disabled"));
        let level = |l: Option<AccessLevel>| {
            l.map(|l| json!({ "access_level": l, "notification_level": 3 }))
        };
        // Every field that depends on the caller's level reads this one.
        let effective = ctx.permissions.effective_level();
        let maintainer = admin || effective >= AccessLevel::Maintainer;
        let marked_on = project
            .marked_for_deletion_at
            .map(|ms| timestamp(ms)[..10].to_string());
        let extra = json!({
            "_links": {
                "self": base,
                "issues": format!("{base}/issues"),
                "merge_requests": format!("{base}/merge_requests"),
                "repo_branches": format!("{base}/repository/branches"),
                "labels": format!("{base}/labels"),
                "events": format!("{base}/events"),
                "members": format!("{base}/members"),
                "cluster_agents": format!("{base}/cluster_agents"),
            },
            "visibility": project.visibility,
            "owner": ctx.owner.map(|u| {
                let mut owner = json!(self.users.summary(u));
                owner["created_at"] = json!(timestamp(u.created_at));
                owner
            }),
            "creator_id": project.creator_id,
            "packages_enabled": get("packages_enabled"),
            "empty_repo": project.commit_count == 0,
            "archived": project.archived,
            "resolve_outdated_diff_discussions": get("resolve_outdated_diff_discussions"),
            "container_expiration_policy": settings.get("container_expiration_policy").cloned().unwrap_or_else(default_expiration_policy),
            "repository_object_format": "sha1",
            "issues_enabled": enabled("issues_access_level"),
            "merge_requests_enabled": enabled("merge_requests_access_level"),
            "wiki_enabled": enabled("wiki_access_level"),
            "jobs_enabled": enabled("builds_access_level"),
            "snippets_enabled": enabled("snippets_access_level"),
            "container_registry_enabled": enabled("container_registry_access_level"),
            "service_desk_enabled": get("service_desk_enabled"),
            "service_desk_address": null,
            "can_create_merge_request_in": effective >= AccessLevel::Developer,
            "lfs_enabled": get("lfs_enabled"),
            "shared_runners_enabled": get("shared_runners_enabled"),
            "group_runners_enabled": true,
            "import_url": if maintainer {
                project.import_url.as_deref().map(without_credentials)
            } else {
                None
            },
            "import_type": null,
            "import_status": project.import_status,
            "import_error": project.import_error,
            "open_issues_count": project.open_issues_count,
            "description_html": project.description.as_deref().map(html_escape).unwrap_or_default(),
            "updated_at": timestamp(project.updated_at),
            "ci_default_git_depth": get("ci_default_git_depth"),
            "ci_forward_deployment_enabled": get("ci_forward_deployment_enabled"),
            "ci_job_token_scope_enabled": false,
            "ci_separated_caches": true,
            "ci_allow_fork_pipelines_to_run_in_parent_project": true,
            "build_git_strategy": get("build_git_strategy"),
            "keep_latest_artifact": true,
            "restrict_user_defined_variables": false,
            "runners_token": if maintainer { json!(format!("GR1348941{:020}", project.id)) } else { Value::Null },
            "runner_token_expiration_interval": null,
            "auto_cancel_pending_pipelines": get("auto_cancel_pending_pipelines"),
            "build_timeout": get("build_timeout"),
            "auto_devops_enabled": get("auto_devops_enabled"),
            "auto_devops_deploy_strategy": get("auto_devops_deploy_strategy"),
            "ci_config_path": get("ci_config_path"),
            "public_jobs": get("public_builds"),
            "shared_with_groups": ctx.shares.iter().filter(|l| l.project_id == project.id).map(|l| json!({
                "group_id": l.group_id,
                "group_name": l.group_name,
                "group_full_path": l.group_full_path,
                "group_access_level": l.group_access,
                "expires_at": l.expires_at,
            })).collect::<Vec<_>>(),
            "only_allow_merge_if_pipeline_succeeds": get("only_allow_merge_if_pipeline_succeeds"),
            "allow_merge_on_skipped_pipeline": get("allow_merge_on_skipped_pipeline"),
            "request_access_enabled": get("request_access_enabled"),
            "only_allow_merge_if_all_discussions_are_resolved": get("only_allow_merge_if_all_discussions_are_resolved"),
            "remove_source_branch_after_merge": get("remove_source_branch_after_merge"),
            "printing_merge_request_link_enabled": get("printing_merge_request_link_enabled"),
            "printing_merge_requests_link_enabled": get("printing_merge_request_link_enabled"),
            "merge_method": get("merge_method"),
            "squash_option": "default_off",
            "enforce_auth_checks_on_uploads": true,
            "suggestion_commit_message": get("suggestion_commit_message"),
            "merge_commit_template": null,
            "squash_commit_template": null,
            "issue_branch_template": null,
            "autoclose_referenced_issues": get("autoclose_referenced_issues"),
            "approvals_before_merge": get("approvals_before_merge"),
            "mirror": get("mirror"),
            "mirror_user_id": get("mirror_user_id"),
            "mirror_trigger_builds": get("mirror_trigger_builds"),
            "only_mirror_protected_branches": get("only_mirror_protected_branches"),
            "mirror_overwrites_diverged_branches": get("mirror_overwrites_diverged_branches"),
            "external_authorization_classification_label": get("external_authorization_classification_label"),
            "emails_disabled": get("emails_disabled"),
            "emails_enabled": !get("emails_disabled").as_bool().unwrap_or(false),
            "show_default_award_emojis": get("show_default_award_emojis"),
            "build_coverage_regex": get("build_coverage_regex"),
            "compliance_frameworks": [],
            "warn_about_potentially_unwanted_characters": true,
            "marked_for_deletion_at": marked_on,
            "marked_for_deletion_on": marked_on,
            "permissions": {
                "project_access": level(ctx.permissions.project),
                "group_access": level(ctx.permissions.group_access()),
            },
            "license_url": null,
            "license": null,
        });
        let Value::Object(extra) = extra else {
            unreachable!()
        };
        map.extend(extra);
        for (key, kind, _) in PROJECT_SETTINGS {
            if matches!(kind, Kind::Access | Kind::PublicAccess) {
                map.insert(key.to_string(), access(key));
            }
        }
        map.insert("issues_access_level".into(), access("issues_access_level"));
        map.insert(
            "merge_requests_access_level".into(),
            access("merge_requests_access_level"),
        );
        if admin {
            map.insert("repository_storage".into(), get("repository_storage"));
        }
        if !ctx.license {
            map.remove("license");
        }
        if ctx.statistics {
            map.insert(
                "statistics".into(),
                json!({
                    "commit_count": project.commit_count,
                    "storage_size": project.storage_size,
                    "repository_size": project.repository_size,
                    "wiki_size": project.wiki_size,
                    "lfs_objects_size": 0,
                    "job_artifacts_size": 0,
                    "pipeline_artifacts_size": 0,
                    "packages_size": project.packages_size,
                    "snippets_size": 0,
                    "uploads_size": 0,
                    "container_registry_size": 0,
                }),
            );
        }
        if let Some(source) = &ctx.forked_from {
            map.insert("forked_from_project".into(), Value::Object(source.clone()));
        }
        if let Some(attributes) = &ctx.custom_attributes {
            map.insert(
                "custom_attributes".into(),
                attributes
                    .iter()
                    .map(|(k, v)| json!({ "key": k, "value": v }))
                    .collect(),
            );
        }
        Value::Object(map)
    }
}

/// A URL without its user name and password (import URLs may carry a token).
fn without_credentials(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.to_string()
        }
        Err(_) => String::new(),
    }
}

impl ProjectViews<'_> {
    /// GitLab's SSH clone URL: scp-like on port 22 (or when SSH is not served), else an
    /// `ssh://` URL with the port, as GitLab writes it for a non-standard `ssh_port`.
    fn ssh_url(&self, full_path: &str) -> String {
        let host = ssh_host(self.host);
        match self.ssh_port {
            Some(port) if port != 22 => format!("ssh://git@{host}:{port}/{full_path}.git"),
            _ => format!("git@{host}:{full_path}.git"),
        }
    }
}

/// The host part of an SSH clone URL: the web host without its port.
fn ssh_host(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split_inclusive(']').next().unwrap_or(host);
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}

fn html_escape(s: &str) -> String {
    if s.is_empty() {
        return String::new();
    }
    let escaped = s
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;");
    format!(
        "<p data-sourcepos=\"1:1-1:{}\" dir=\"auto\">{escaped}</p>",
        s.len()
    )
}
