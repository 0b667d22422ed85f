//! Projects as the API shows them: the spec's shapes (the simple form for anonymous callers,
//! `simple=true` and a fork's source; the full form, which adds the caller's permissions,
//! links, settings and the rest), how `ProjectViews` fills them from rows, and what they need
//! besides the rows, loaded for a whole page at once (`ProjectViews::load_page`): the caller's
//! levels, namespaces and their owners, shares, custom attributes and the sources of forks,
//! each in one statement whatever the page's length. The catalog's settings are in
//! `project_settings.rs`.

use std::collections::HashMap;
use std::future::Future;

use serde::{Serialize, Serializer};
use serde_json::Value;
use utoipa::openapi::schema::{AnyOfBuilder, Schema};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use super::namespace::{NamespaceEmbedded, NamespaceViews};
use super::project_settings::ProjectSettingsView;
use super::timestamp;
use super::unique;
use super::user::{UserSummary, UserViews};
use crate::access_level::{AccessLevel, Permissions};
use crate::model::feature_access::FeatureAccess;
use crate::model::namespaces::NamespaceRow;
use crate::model::project_settings::{default_expiration_policy, setting};
use crate::model::project_shares::ShareRow;
use crate::model::projects::ProjectRow;
use crate::model::today;
use crate::model::users::UserRow;
use crate::policy::{self, ProjectCtx, Scope};
use crate::services::Refusal;
use crate::store::TenantDb;
use crate::store::members::{NAMESPACE, PROJECT};
use crate::store::projects::Viewer;

#[derive(Clone, Serialize, ToSchema)]
pub struct ProjectSimple {
    pub id: i64,
    pub description: Option<String>,
    pub name: String,
    pub name_with_namespace: String,
    pub path: String,
    pub path_with_namespace: String,
    pub created_at: String,
    pub default_branch: Option<String>,
    pub tag_list: Vec<String>,
    pub topics: Vec<String>,
    pub ssh_url_to_repo: String,
    pub http_url_to_repo: String,
    pub web_url: String,
    /// Always null: Trellis does not look for a README.
    pub readme_url: Option<String>,
    pub forks_count: i64,
    pub avatar_url: Option<String>,
    pub star_count: i64,
    pub last_activity_at: String,
    pub namespace: NamespaceEmbedded,
}

/// The full form: the simple one, the catalog's settings (`project_settings.rs`) and the rest.
#[derive(Clone, Serialize, ToSchema)]
pub struct ProjectFull {
    #[serde(flatten)]
    pub simple: ProjectSimple,
    #[serde(flatten)]
    pub settings: ProjectSettingsView,
    #[serde(rename = "_links")]
    pub links: ProjectLinks,
    pub visibility: String,
    /// Only for personal projects, as GitLab shows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<ProjectOwner>,
    pub creator_id: Option<i64>,
    pub empty_repo: bool,
    pub archived: bool,
    #[schema(value_type = Object)]
    pub container_expiration_policy: Value,
    pub repository_object_format: &'static str,
    pub service_desk_address: Option<String>,
    pub can_create_merge_request_in: bool,
    pub group_runners_enabled: bool,
    /// Maintainers only (as the other `Option<Option<_>>` keys: left out for others), without
    /// its credentials.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub import_url: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub import_type: Option<Option<String>>,
    pub import_status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub import_error: Option<Option<String>>,
    /// Only for those who may read the project's issues.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_issues_count: Option<i64>,
    pub description_html: String,
    pub updated_at: String,
    pub ci_job_token_scope_enabled: bool,
    pub ci_separated_caches: bool,
    pub ci_allow_fork_pipelines_to_run_in_parent_project: bool,
    pub keep_latest_artifact: bool,
    pub restrict_user_defined_variables: bool,
    /// Maintainers only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runners_token: Option<String>,
    pub runner_token_expiration_interval: Option<i64>,
    pub shared_with_groups: Vec<SharedWithGroup>,
    pub squash_option: &'static str,
    pub enforce_auth_checks_on_uploads: bool,
    pub merge_commit_template: Option<String>,
    pub squash_commit_template: Option<String>,
    pub issue_branch_template: Option<String>,
    pub emails_enabled: bool,
    /// Always empty: Trellis has no compliance frameworks, but the API's project lists the key.
    pub compliance_frameworks: Vec<String>,
    pub warn_about_potentially_unwanted_characters: bool,
    pub marked_for_deletion_at: Option<String>,
    pub marked_for_deletion_on: Option<String>,
    pub permissions: ProjectPermissions,
    /// `license_url` and `license` only with `license=true`, and then null: Trellis does not
    /// detect licenses.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub license_url: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub license: Option<Option<Value>>,
    /// Only with `statistics=true`, for those who may see them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub statistics: Option<ProjectStatistics>,
    /// Only for forks whose source the caller can see.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forked_from_project: Option<ProjectSimple>,
    /// Only with `with_custom_attributes=true`, for administrators.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom_attributes: Option<Vec<CustomAttribute>>,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct ProjectLinks {
    #[serde(rename = "self")]
    pub this: String,
    pub issues: String,
    pub merge_requests: String,
    pub repo_branches: String,
    pub labels: String,
    pub events: String,
    pub members: String,
    pub cluster_agents: String,
}

/// The owner of a personal project: the user summary and when they signed up.
#[derive(Clone, Serialize, ToSchema)]
pub struct ProjectOwner {
    #[serde(flatten)]
    pub user: UserSummary,
    pub created_at: String,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct SharedWithGroup {
    pub group_id: i64,
    pub group_name: String,
    pub group_full_path: String,
    pub group_access_level: i64,
    pub expires_at: Option<String>,
}

/// The caller's own levels on the project and through its groups.
#[derive(Clone, Serialize, ToSchema)]
pub struct ProjectPermissions {
    pub project_access: Option<MemberAccess>,
    pub group_access: Option<MemberAccess>,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct MemberAccess {
    #[schema(value_type = i64)]
    pub access_level: AccessLevel,
    pub notification_level: i64,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct ProjectStatistics {
    pub commit_count: i64,
    pub storage_size: i64,
    pub repository_size: i64,
    pub wiki_size: i64,
    pub lfs_objects_size: i64,
    pub job_artifacts_size: i64,
    pub pipeline_artifacts_size: i64,
    pub packages_size: i64,
    pub snippets_size: i64,
    pub uploads_size: i64,
    pub container_registry_size: i64,
}

#[derive(Clone, Serialize, ToSchema)]
pub struct CustomAttribute {
    pub key: String,
    pub value: String,
}

/// A project as one response shows it: simple or full, as the caller and `simple` decide.
#[derive(Clone)]
pub enum ProjectView {
    Simple(Box<ProjectSimple>),
    Full(Box<ProjectFull>),
}

impl Serialize for ProjectView {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ProjectView::Simple(simple) => simple.serialize(serializer),
            ProjectView::Full(full) => full.serialize(serializer),
        }
    }
}

/// Any of the two forms: not one of, since a full project is also a valid simple one.
impl PartialSchema for ProjectView {
    fn schema() -> RefOr<Schema> {
        AnyOfBuilder::new()
            .item(Ref::from_schema_name(ProjectFull::name()))
            .item(Ref::from_schema_name(ProjectSimple::name()))
            .into()
    }
}

impl ToSchema for ProjectView {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((ProjectFull::name().into(), ProjectFull::schema()));
        ProjectFull::schemas(schemas);
        schemas.push((ProjectSimple::name().into(), ProjectSimple::schema()));
        ProjectSimple::schemas(schemas);
    }
}

/// What a project view needs besides the row.
struct ProjectContext<'a> {
    namespace: &'a NamespaceRow,
    /// The personal namespace's user, for `owner` and the namespace avatar.
    owner: Option<&'a UserRow>,
    permissions: Permissions,
    statistics: bool,
    license: bool,
    custom_attributes: Option<Vec<(String, String)>>,
    /// The source's simple view, when this is a fork of a project the caller can see.
    forked_from: Option<ProjectSimple>,
    /// The groups the project is shared with.
    shares: &'a [ShareRow],
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

    fn full(&self, project: &ProjectRow, ctx: &ProjectContext, admin: bool) -> ProjectFull {
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

/// How projects are shown in one response.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProjectShape {
    pub simple: bool,
    pub statistics: bool,
    pub license: bool,
    pub custom_attributes: bool,
}

/// Statistics are for reporters and above, and administrators.
pub fn may_see_statistics(level: AccessLevel, admin: bool) -> bool {
    admin || level >= AccessLevel::Reporter
}

/// What decides whether the caller may see a project a page links to (a fork's source), given
/// their levels in it: `policy`, for a request's [`Scope`].
pub trait ProjectVisibility: Sync {
    /// `false` for a project the caller may not see; a refusal (external authorization's) as
    /// the error.
    fn may_see(
        &self,
        project: &ProjectRow,
        permissions: &Permissions,
    ) -> impl Future<Output = Result<bool, Refusal>> + Send;
}

impl ProjectVisibility for Scope<'_> {
    fn may_see(
        &self,
        project: &ProjectRow,
        permissions: &Permissions,
    ) -> impl Future<Output = Result<bool, Refusal>> + Send {
        policy::projects::may_see(self, project, permissions)
    }
}

/// Whom project views are loaded for: the tenant's rows, the caller, and what decides which
/// linked projects they may see.
pub struct ProjectReader<'a, V> {
    pub db: &'a TenantDb,
    pub viewer: Viewer,
    pub visibility: &'a V,
}

// By hand: a derive would ask `V: Copy`, and only a reference to it is held.
impl<V> Clone for ProjectReader<'_, V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<V> Copy for ProjectReader<'_, V> {}

impl<'a> ProjectReader<'a, Scope<'a>> {
    /// The request's tenant and caller, and `policy`'s rule.
    pub fn of(scope: &'a Scope<'a>) -> Self {
        ProjectReader {
            db: scope.db(),
            viewer: scope.viewer(),
            visibility: scope,
        }
    }
}

impl ProjectViews<'_> {
    /// The views of `rows` as the caller sees them, by id. What they show besides the rows is
    /// loaded for the whole page at once, in at most nine statements however many rows there are:
    /// the fork sources, the caller's levels (in the projects and the sources, and in every
    /// group), the namespaces, shares and custom attributes, then the sources' namespaces
    /// missing from the page, then the namespaces' owners. A row whose namespace is gone is left
    /// out; `license` is not shown in lists.
    pub async fn load_page<V: ProjectVisibility>(
        &self,
        reader: ProjectReader<'_, V>,
        rows: &[ProjectRow],
        shape: ProjectShape,
    ) -> Result<HashMap<i64, ProjectView>, Refusal> {
        let db = reader.db;
        let full = !shape.simple;
        let ids: Vec<i64> = rows.iter().map(|p| p.id).collect();
        let source_ids = if full {
            unique(rows.iter().filter_map(|p| p.forked_from_id))
        } else {
            Vec::new()
        };
        let level_ids = unique(ids.iter().chain(&source_ids).copied());
        let namespace_ids = unique(rows.iter().map(|p| p.namespace_id));
        let today = today();
        let caller = reader.viewer.user_id().filter(|_| full);
        // The page's independent lookups run concurrently (each on its own pooled connection).
        let (sources, levels, namespaces, attributes, shares) = tokio::try_join!(
            db.projects_by_ids(&source_ids),
            CallerLevels::load(db, caller, &level_ids, &today),
            db.namespaces_by_ids(&namespace_ids),
            async {
                if shape.custom_attributes && full {
                    db.project_custom_attributes_of(&ids).await.map(Some)
                } else {
                    Ok(None)
                }
            },
            async {
                if full {
                    db.shares_of(&ids, &today).await
                } else {
                    Ok(Vec::new())
                }
            },
        )?;
        let places = Places::load(db, namespaces, &sources).await?;
        let sources = self
            .visible_sources(&reader, rows, sources, &levels, &places)
            .await?;
        let admin = matches!(reader.viewer, Viewer::Admin { .. });
        let mut out = HashMap::new();
        for project in rows {
            let Some(namespace) = places.namespaces.get(&project.namespace_id) else {
                continue;
            };
            let owner = places.owner_of(namespace);
            if shape.simple {
                out.insert(
                    project.id,
                    ProjectView::Simple(Box::new(self.simple(project, namespace, owner))),
                );
                continue;
            }
            let permissions = levels.permissions(project, namespace);
            let context = ProjectContext {
                namespace,
                owner,
                permissions,
                statistics: shape.statistics
                    && may_see_statistics(permissions.effective_level(), admin),
                license: false,
                custom_attributes: attributes
                    .as_ref()
                    .map(|all| attributes_of(all, project.id)),
                forked_from: project
                    .forked_from_id
                    .and_then(|id| sources.get(&id).cloned()),
                shares: &shares,
            };
            out.insert(
                project.id,
                ProjectView::Full(Box::new(self.full(project, &context, admin))),
            );
        }
        Ok(out)
    }

    /// The view of the project `ctx` holds (with the caller's levels in it) as the caller sees
    /// it: its shares, custom attributes and fork source loaded as for a page of one.
    pub async fn load_one<V: ProjectVisibility>(
        &self,
        reader: ProjectReader<'_, V>,
        ctx: &ProjectCtx,
        shape: ProjectShape,
    ) -> Result<ProjectView, Refusal> {
        let project = &ctx.project;
        if shape.simple {
            return Ok(ProjectView::Simple(Box::new(self.simple(
                project,
                &ctx.namespace,
                ctx.owner.as_ref(),
            ))));
        }
        let db = reader.db;
        let ids = [project.id];
        let source_ids: Vec<i64> = project.forked_from_id.into_iter().collect();
        let today = today();
        let (sources, levels, attributes, shares) = tokio::try_join!(
            db.projects_by_ids(&source_ids),
            CallerLevels::load(db, reader.viewer.user_id(), &source_ids, &today),
            async {
                if shape.custom_attributes {
                    db.project_custom_attributes_of(&ids).await.map(Some)
                } else {
                    Ok(None)
                }
            },
            db.shares_of(&ids, &today),
        )?;
        let places = Places::load(db, Vec::new(), &sources).await?;
        let mut sources = self
            .visible_sources(
                &reader,
                std::slice::from_ref(project),
                sources,
                &levels,
                &places,
            )
            .await?;
        let context = ProjectContext {
            namespace: &ctx.namespace,
            owner: ctx.owner.as_ref(),
            permissions: ctx.permissions,
            statistics: shape.statistics && may_see_statistics(ctx.level(), ctx.admin),
            license: shape.license,
            custom_attributes: attributes
                .as_ref()
                .map(|all| attributes_of(all, project.id)),
            forked_from: project.forked_from_id.and_then(|id| sources.remove(&id)),
            shares: &shares,
        };
        Ok(ProjectView::Full(Box::new(
            self.full(project, &context, ctx.admin),
        )))
    }

    /// The simple views of the `sources` of forks among `rows` that the caller may see, by id;
    /// decided in the order of the rows, so the first refusal is the one a page of them had.
    async fn visible_sources<V: ProjectVisibility>(
        &self,
        reader: &ProjectReader<'_, V>,
        rows: &[ProjectRow],
        sources: Vec<ProjectRow>,
        levels: &CallerLevels,
        places: &Places,
    ) -> Result<HashMap<i64, ProjectSimple>, Refusal> {
        let mut sources: HashMap<i64, ProjectRow> =
            sources.into_iter().map(|p| (p.id, p)).collect();
        let mut visible = HashMap::new();
        for id in rows.iter().filter_map(|p| p.forked_from_id) {
            let Some(source) = sources.remove(&id) else {
                continue;
            };
            let Some(namespace) = places.namespaces.get(&source.namespace_id) else {
                continue;
            };
            let permissions = levels.permissions(&source, namespace);
            if reader.visibility.may_see(&source, &permissions).await? {
                let owner = places.owner_of(namespace);
                visible.insert(id, self.simple(&source, namespace, owner));
            }
        }
        Ok(visible)
    }
}

/// The custom attributes of project `id` among a page's, as `(key, value)`.
fn attributes_of(all: &[(i64, String, String)], id: i64) -> Vec<(String, String)> {
    all.iter()
        .filter(|(project, _, _)| *project == id)
        .map(|(_, key, value)| (key.clone(), value.clone()))
        .collect()
}

/// The caller's live memberships a page's permissions are read from: of its projects, of every
/// group (for the levels projects inherit), and through the groups its projects are shared with.
#[derive(Default)]
struct CallerLevels {
    user: Option<i64>,
    projects: HashMap<i64, AccessLevel>,
    groups: HashMap<i64, AccessLevel>,
    shared: HashMap<i64, AccessLevel>,
}

impl CallerLevels {
    /// The levels of `user` (none for anonymous callers) in `project_ids`: three statements,
    /// none when there is no caller or no project.
    async fn load(
        db: &TenantDb,
        user: Option<i64>,
        project_ids: &[i64],
        today: &str,
    ) -> crate::store::Result<CallerLevels> {
        let Some(user) = user.filter(|_| !project_ids.is_empty()) else {
            return Ok(CallerLevels::default());
        };
        let (projects, groups, shared) = tokio::try_join!(
            db.levels_of(user, PROJECT, Some(project_ids), today),
            db.levels_of(user, NAMESPACE, None, today),
            db.shared_levels(user, project_ids, today),
        )?;
        let stored = |rows: Vec<(i64, i64)>| -> HashMap<i64, AccessLevel> {
            rows.into_iter()
                .map(|(id, level)| (id, AccessLevel::from_stored(level)))
                .collect()
        };
        Ok(CallerLevels {
            user: Some(user),
            projects: stored(projects),
            groups: stored(groups),
            shared: stored(shared),
        })
    }

    /// The caller's permissions in `project`, in `namespace`.
    fn permissions(&self, project: &ProjectRow, namespace: &NamespaceRow) -> Permissions {
        let inherited = if namespace.is_group() {
            namespace
                .ancestry()
                .iter()
                .filter_map(|id| self.groups.get(id).copied())
                .max()
        } else {
            None
        };
        Permissions {
            project: self.projects.get(&project.id).copied(),
            group: inherited,
            shared: self.shared.get(&project.id).copied(),
            personal_owner: self.user.is_some() && namespace.owner_id == self.user,
        }
    }
}

/// The namespaces a page's projects and their fork sources are in, and the users whose
/// personal namespaces they are.
struct Places {
    namespaces: HashMap<i64, NamespaceRow>,
    owners: HashMap<i64, UserRow>,
}

impl Places {
    /// `loaded` with the namespaces of `sources` it lacks (one statement, none when it lacks
    /// none), and their owners (one statement, none when all are groups).
    async fn load(
        db: &TenantDb,
        loaded: Vec<NamespaceRow>,
        sources: &[ProjectRow],
    ) -> crate::store::Result<Places> {
        let mut namespaces: HashMap<i64, NamespaceRow> =
            loaded.into_iter().map(|n| (n.id, n)).collect();
        let missing = unique(
            sources
                .iter()
                .map(|p| p.namespace_id)
                .filter(|id| !namespaces.contains_key(id)),
        );
        for namespace in db.namespaces_by_ids(&missing).await? {
            namespaces.insert(namespace.id, namespace);
        }
        let owner_ids = unique(namespaces.values().filter_map(|n| n.owner_id));
        let owners = db
            .users_by_ids(&owner_ids)
            .await?
            .into_iter()
            .map(|u| (u.id, u))
            .collect();
        Ok(Places { namespaces, owners })
    }

    fn owner_of(&self, namespace: &NamespaceRow) -> Option<&UserRow> {
        namespace.owner_id.and_then(|id| self.owners.get(&id))
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
    pub fn ssh_url(&self, full_path: &str) -> String {
        crate::links::ssh_clone_url(self.host, self.ssh_port, full_path)
    }

    /// The project representations for the scope's tenant (its URLs and SSH port).
    pub fn of<'a>(scope: &Scope<'a>) -> ProjectViews<'a> {
        let base = scope.tenant.base_url.as_str();
        ProjectViews {
            base_url: base,
            host: crate::links::web_host(base),
            ssh_port: scope.ctx.ssh_port(scope.tenant.id),
            users: UserViews::of(scope),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Tenant};

    /// Lets the caller see every fork source: the statements counted are the page's own.
    struct EverySource;

    impl ProjectVisibility for EverySource {
        async fn may_see(&self, _: &ProjectRow, _: &Permissions) -> Result<bool, Refusal> {
            Ok(true)
        }
    }

    /// `length` projects spread over the root's namespace and two groups; two in three are forks,
    /// of two sources in a group of their own (so the sources' namespaces are not the page's).
    async fn projects(world: &Tenant, length: usize) -> Vec<ProjectRow> {
        let sources = world.group(&format!("Sources{length}")).await;
        let sources = [
            world
                .project_row(sources.id, &format!("a{length}"), None)
                .await,
            world
                .project_row(sources.id, &format!("b{length}"), None)
                .await,
        ];
        let namespaces = [
            world.namespace,
            world.group(&format!("One{length}")).await.id,
            world.group(&format!("Two{length}")).await.id,
        ];
        let mut rows = Vec::new();
        for i in 0..length {
            let source = sources.get(i % 3).map(|s| s.id);
            let name = format!("p{length}-{i}");
            rows.push(world.project_row(namespaces[i % 3], &name, source).await);
        }
        rows
    }

    #[tokio::test]
    async fn a_page_of_projects_costs_the_same_statements_whatever_its_length() {
        let dir = tempfile::tempdir().unwrap();
        let world = test_support::tenant(dir.path()).await;
        let views = ProjectViews {
            base_url: "http://trellis.test",
            host: "trellis.test",
            ssh_port: None,
            users: UserViews(crate::links::UserLinks {
                base_url: "http://trellis.test",
                avatar_service: false,
            }),
        };
        let reader = ProjectReader {
            db: &world.tenant,
            viewer: Viewer::Admin { id: world.root.id },
            visibility: &EverySource,
        };
        let shape = ProjectShape {
            statistics: true,
            custom_attributes: true,
            ..ProjectShape::default()
        };
        let mut costs = Vec::new();
        for length in [5, 100] {
            let rows = projects(&world, length).await;
            let before = world.db.statement_count();
            let page = views.load_page(reader, &rows, shape).await.unwrap();
            costs.push(world.db.statement_count() - before);
            assert_eq!(page.len(), length);
            for project in &rows {
                let view = serde_json::to_value(&page[&project.id]).unwrap();
                let source = view["forked_from_project"]["id"].as_i64();
                assert_eq!(source, project.forked_from_id);
            }
        }
        assert_eq!(costs[0], costs[1], "statements for 5 and 100 projects");
        assert!(
            costs[0] <= 9,
            "{} statements for a page of projects",
            costs[0]
        );
    }
}
