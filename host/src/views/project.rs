//! Project representations: the simple form (anonymous callers, `simple=true`) and the full
//! form for authenticated callers, with the caller's permissions, namespace, owner, links,
//! feature access levels and (with `statistics=true`) statistics. The shapes are in
//! `project_view.rs`, the catalog's settings in `project_settings.rs`.

use super::namespace::NamespaceViews;
use super::project_settings::ProjectSettingsView;
use super::project_view::{
    CustomAttribute, MemberAccess, ProjectFull, ProjectLinks, ProjectOwner, ProjectPermissions,
    ProjectSimple, ProjectStatistics, SharedWithGroup,
};
use super::timestamp;
use super::user::UserViews;
use crate::access_level::{AccessLevel, Permissions};
use crate::model::feature_access::FeatureAccess;
use crate::model::namespaces::NamespaceRow;
use crate::model::project_settings::{default_expiration_policy, setting};
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
    pub forked_from: Option<ProjectSimple>,
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
    ) -> ProjectSimple {
        let full_path = self.full_path(project, ns);
        let web_url = format!("{}/{full_path}", self.base_url);
        let namespaces = NamespaceViews {
            base_url: self.base_url,
        };
        let ns_avatar = namespaces.avatar_url(ns, owner, &self.users);
        let tags = project.tags();
        ProjectSimple {
            id: project.id,
            description: project.description.clone(),
            name: project.name.clone(),
            name_with_namespace: format!("{} / {}", ns.full_name, project.name),
            path: project.path.clone(),
            ssh_url_to_repo: self.ssh_url(&full_path),
            http_url_to_repo: format!("{web_url}.git"),
            path_with_namespace: full_path,
            created_at: timestamp(project.created_at),
            default_branch: project.default_branch.clone(),
            tag_list: tags.clone(),
            topics: tags,
            web_url,
            readme_url: None,
            forks_count: project.forks_count,
            avatar_url: project.avatar_path.as_ref().map(|file| {
                format!(
                    "{}/uploads/-/system/project/avatar/{}/{file}",
                    self.base_url, project.id
                )
            }),
            star_count: project.star_count,
            last_activity_at: timestamp(project.last_activity_at),
            namespace: namespaces.embedded(ns, ns_avatar),
        }
    }

    pub fn full(&self, project: &ProjectRow, ctx: &ProjectContext, admin: bool) -> ProjectFull {
        let settings = project.settings_json();
        let base = format!("{}/api/v4/projects/{}", self.base_url, project.id);
        let level = |l: Option<AccessLevel>| {
            l.map(|access_level| MemberAccess {
                access_level,
                notification_level: 3,
            })
        };
        // Every field that depends on the caller's level reads this one.
        let effective = ctx.permissions.effective_level();
        let maintainer = admin || effective >= AccessLevel::Maintainer;
        let marked_on = project
            .marked_for_deletion_at
            .map(|ms| timestamp(ms)[..10].to_string());
        ProjectFull {
            simple: self.simple(project, ctx.namespace, ctx.owner),
            settings: ProjectSettingsView::of(project, admin, maintainer),
            links: ProjectLinks {
                issues: format!("{base}/issues"),
                merge_requests: format!("{base}/merge_requests"),
                repo_branches: format!("{base}/repository/branches"),
                labels: format!("{base}/labels"),
                events: format!("{base}/events"),
                members: format!("{base}/members"),
                cluster_agents: format!("{base}/cluster_agents"),
                this: base,
            },
            visibility: project.visibility.to_string(),
            owner: ctx.owner.map(|u| ProjectOwner {
                user: self.users.summary(u),
                created_at: timestamp(u.created_at),
            }),
            creator_id: project.creator_id,
            empty_repo: project.commit_count == 0,
            archived: project.archived,
            container_expiration_policy: settings
                .get("container_expiration_policy")
                .cloned()
                .unwrap_or_else(default_expiration_policy),
            repository_object_format: "sha1",
            service_desk_address: None,
            can_create_merge_request_in: effective >= AccessLevel::Developer,
            group_runners_enabled: true,
            import_url: maintainer.then(|| project.import_url.as_deref().map(without_credentials)),
            import_type: maintainer.then_some(None),
            import_status: project.import_status.to_string(),
            import_error: maintainer.then(|| project.import_error.clone()),
            open_issues_count: issues_readable(project.issues_access_level, admin, effective)
                .then_some(project.open_issues_count),
            description_html: project
                .description
                .as_deref()
                .map(html_escape)
                .unwrap_or_default(),
            updated_at: timestamp(project.updated_at),
            ci_job_token_scope_enabled: false,
            ci_separated_caches: true,
            ci_allow_fork_pipelines_to_run_in_parent_project: true,
            keep_latest_artifact: true,
            restrict_user_defined_variables: false,
            runners_token: maintainer.then(|| format!("GR1348941{:020}", project.id)),
            runner_token_expiration_interval: None,
            shared_with_groups: ctx
                .shares
                .iter()
                .filter(|l| l.project_id == project.id)
                .map(|l| SharedWithGroup {
                    group_id: l.group_id,
                    group_name: l.group_name.clone(),
                    group_full_path: l.group_full_path.clone(),
                    group_access_level: l.group_access,
                    expires_at: l.expires_at.clone(),
                })
                .collect(),
            squash_option: "default_off",
            enforce_auth_checks_on_uploads: true,
            merge_commit_template: None,
            squash_commit_template: None,
            issue_branch_template: None,
            emails_enabled: !setting(&settings, "emails_disabled")
                .as_bool()
                .unwrap_or(false),
            compliance_frameworks: Vec::new(),
            warn_about_potentially_unwanted_characters: true,
            marked_for_deletion_at: marked_on.clone(),
            marked_for_deletion_on: marked_on,
            permissions: ProjectPermissions {
                project_access: level(ctx.permissions.project),
                group_access: level(ctx.permissions.group_access()),
            },
            license_url: ctx.license.then_some(None),
            license: ctx.license.then_some(None),
            statistics: ctx.statistics.then_some(ProjectStatistics {
                commit_count: project.commit_count,
                storage_size: project.storage_size,
                repository_size: project.repository_size,
                wiki_size: project.wiki_size,
                lfs_objects_size: 0,
                job_artifacts_size: 0,
                pipeline_artifacts_size: 0,
                packages_size: project.packages_size,
                snippets_size: 0,
                uploads_size: 0,
                container_registry_size: 0,
            }),
            forked_from_project: ctx.forked_from.clone(),
            custom_attributes: ctx.custom_attributes.as_ref().map(|attributes| {
                attributes
                    .iter()
                    .map(|(key, value)| CustomAttribute {
                        key: key.clone(),
                        value: value.clone(),
                    })
                    .collect()
            }),
        }
    }
}

/// GitLab's `feature_available?(:issues, user)`: the issues of a project whose issues are
/// private are for its members.
fn issues_readable(level: FeatureAccess, admin: bool, effective: AccessLevel) -> bool {
    level.open_to(admin || effective >= AccessLevel::Guest)
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
    pub fn ssh_url(&self, full_path: &str) -> String {
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
