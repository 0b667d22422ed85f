//! Forks: who may fork a project, what the fork takes from its source, and the copy of its
//! repository. GitLab answers a fork at once with `import_status` `scheduled`; the copy
//! (`copy`) runs afterwards, outside any transaction, and ends `finished` or `failed`.

use std::path::Path;

use serde_json::Value;

use super::Refusal;
use super::project_placement::{Creator, check_projects_limit, check_taken};
use super::projects::{self, NewProject, refresh_statistics};
use crate::access_level::AccessLevel;
use crate::git::Repository;
use crate::model::feature_access::FeatureAccess;
use crate::model::namespaces::NamespaceRow;
use crate::model::project_names::{
    NAME_MESSAGE, PATH_MESSAGE, path_from_name, valid_name, valid_path,
};
use crate::model::projects::ProjectRow;
use crate::model::states::ImportStatus;
use crate::model::visibility::Visibility;
use crate::store::TenantDb;
use crate::store::projects::ProjectChanges;

/// Settings a fork does not inherit: mirroring belongs to the source.
const NOT_INHERITED: &[&str] = &["mirror", "mirror_user_id", "mirror_trigger_builds"];

/// A project and the standing of whoever wants to fork it (or link a fork to it).
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    pub project: &'a ProjectRow,
    pub level: AccessLevel,
    pub admin: bool,
}

impl Source<'_> {
    /// Forking not disabled, and for private projects (or forking limited to members) a
    /// reporter or above.
    pub fn may_fork(&self) -> bool {
        if self.admin {
            return true;
        }
        let settings = self.project.settings_json();
        let members_only = match self
            .project
            .feature_access(&settings, "forking_access_level")
        {
            FeatureAccess::Disabled => return false,
            FeatureAccess::Private => true,
            FeatureAccess::Enabled | FeatureAccess::Public => {
                self.project.visibility == Visibility::Private
            }
        };
        !members_only || self.level >= AccessLevel::Reporter
    }
}

/// What a fork request asks for; what is not given comes from the source project.
pub struct ForkRequest {
    /// The namespace's id or full path; the creator's own namespace when absent.
    pub namespace: Option<String>,
    pub name: Option<String>,
    /// Whether `name` is given (even as null): the path then derives from the name.
    pub name_given: bool,
    pub path: Option<String>,
    pub visibility: Option<Visibility>,
    /// Only these branches are copied; all when absent.
    pub branches: Option<Vec<String>>,
    pub description: Option<String>,
    pub mr_default_target_self: Option<bool>,
}

/// The fork's namespace: the requested one (404 Namespace Not Found when unknown), else the
/// creator's own; 404 Target Namespace where the creator may not create projects.
async fn namespace(
    db: &TenantDb,
    creator: Creator<'_>,
    key: Option<&str>,
) -> Result<NamespaceRow, Refusal> {
    let namespace = match key {
        Some(key) => db.namespace_by_key(key).await?,
        None => db.user_namespace(creator.user.id).await?,
    };
    let namespace = namespace.ok_or(Refusal::NotFound("Namespace"))?;
    if creator.may_create_in(db, creator.user, &namespace).await? {
        Ok(namespace)
    } else {
        Err(Refusal::NotFound("Target Namespace"))
    }
}

/// The fork is at most as visible as its source, its group and the requested level.
fn visibility(
    source: &ProjectRow,
    namespace: &NamespaceRow,
    requested: Option<Visibility>,
) -> Visibility {
    let mut visibility = source.visibility;
    if namespace.is_group() {
        visibility = visibility.min(namespace.visibility);
    }
    if let Some(requested) = requested {
        visibility = visibility.min(requested);
    }
    visibility
}

/// Creates the fork of `source` for `creator` (its row and an empty repository, `import_status`
/// `scheduled`): 404 "404 Not Found" when the source may not be forked; a name or path that
/// is invalid or taken, or the creator's project limit, refuse it with the field map.
pub async fn create(
    db: &TenantDb,
    data_dir: &Path,
    creator: Creator<'_>,
    source: Source<'_>,
    request: ForkRequest,
) -> Result<ProjectRow, Refusal> {
    if !source.may_fork() {
        return Err(Refusal::Absent);
    }
    let project = source.project;
    let namespace = namespace(db, creator, request.namespace.as_deref()).await?;
    let name = request.name.unwrap_or_else(|| project.name.clone());
    let path = match request.path {
        Some(path) => path,
        None if request.name_given => path_from_name(&name),
        None => project.path.clone(),
    };
    if !valid_name(&name) {
        return Err(Refusal::invalid("name", NAME_MESSAGE));
    }
    if !valid_path(&path) {
        return Err(Refusal::invalid("path", PATH_MESSAGE));
    }
    let visibility = visibility(project, &namespace, request.visibility);
    check_projects_limit(db, creator.user, &namespace).await?;
    check_taken(db, namespace.id, &name, &path, None).await?;

    let mut settings = project.settings_json();
    for key in NOT_INHERITED {
        settings.remove(*key);
    }
    if let Some(own) = request.mr_default_target_self {
        settings.insert("mr_default_target_self".into(), Value::Bool(own));
    }
    let mut changes = ProjectChanges::default();
    changes.set_name_and_path(&name, &path);
    changes.set("visibility", visibility.as_str());
    changes.set("visibility_level", visibility.level());
    let description = request.description.or_else(|| project.description.clone());
    changes.set("description", description);
    changes.set("default_branch", project.default_branch.clone());
    changes.set("tag_list", project.tag_list.as_str());
    changes.set("issues_access_level", project.issues_access_level.as_str());
    changes.set(
        "merge_requests_access_level",
        project.merge_requests_access_level.as_str(),
    );
    changes.set("settings", Value::Object(settings).to_string());
    changes.set("forked_from_id", project.id);
    changes.set("import_status", ImportStatus::Scheduled.as_str());
    let new = NewProject {
        namespace_id: namespace.id,
        creator: creator.user,
        changes,
        with_readme: false,
        default_branch_protection: None,
    };
    projects::create(db, data_dir, new).await
}

/// A queued fork copy (`jobs::Job::ForkCopy`): the source's repository (only `branches` when
/// given) into the fork's, with how it went in the fork's `import_status`. Nothing to do when
/// the fork is gone; a source deleted while the copy waited fails it.
pub async fn copy(
    db: &TenantDb,
    data_dir: &Path,
    source_id: i64,
    fork_id: i64,
    branches: Option<&[String]>,
) -> anyhow::Result<()> {
    let Some(fork) = db.project_by_id(fork_id).await? else {
        return Ok(());
    };
    let Some(source) = db.project_by_id(source_id).await? else {
        let reason = "The source project was deleted";
        db.set_import_status(fork.id, ImportStatus::Failed, Some(reason))
            .await?;
        return Ok(());
    };
    let from = Repository::project(data_dir, db.tenant_id(), source.id);
    let into = Repository::project(data_dir, db.tenant_id(), fork.id);
    let branch = fork.head_branch();
    db.set_import_status(fork.id, ImportStatus::Started, None)
        .await?;
    let copied = async {
        from.ensure(&source.head_branch()).await?;
        into.fetch(&from.path().to_string_lossy(), branches, &[])
            .await?;
        if into.branch_exists(&branch).await? {
            into.set_head(&branch).await?;
        }
        refresh_statistics(db, &into, fork.id, &branch).await?;
        anyhow::Ok(())
    }
    .await;
    // Deleted while git copied (with its group or owner, say): the deletion removed the
    // repository before git finished writing into it, so what git wrote is removed here.
    if db.project_by_id(fork.id).await?.is_none() {
        projects::remove_repositories(data_dir, db.tenant_id(), fork.id).await;
        return Ok(());
    }
    match copied {
        Ok(()) => {
            db.set_import_status(fork.id, ImportStatus::Finished, None)
                .await?
        }
        Err(error) => {
            db.set_import_status(fork.id, ImportStatus::Failed, Some(&format!("{error:#}")))
                .await?
        }
    }
    Ok(())
}

/// Marks `project` as a fork of `source` (`POST /projects/:id/fork/:forked_from_id`): 403
/// when the source may not be forked, 409 when the project already is a fork.
pub async fn link(db: &TenantDb, project: &ProjectRow, source: Source<'_>) -> Result<(), Refusal> {
    if !source.may_fork() {
        return Err(Refusal::forbidden());
    }
    if project.forked_from_id.is_some() || source.project.id == project.id {
        return Err(Refusal::Conflict("Project already forked".into()));
    }
    db.set_forked_from(project.id, Some(source.project.id))
        .await?;
    Ok(())
}

/// Ends a fork's link to its source; `false` when the project is no fork.
pub async fn unlink(db: &TenantDb, project_id: i64) -> Result<bool, Refusal> {
    Ok(db.set_forked_from(project_id, None).await?)
}

#[cfg(test)]
mod tests {
    use crate::model::states::ImportStatus;
    use crate::test_support;

    #[tokio::test]
    async fn a_copy_whose_source_was_deleted_fails_the_fork() {
        let dir = tempfile::tempdir().unwrap();
        let world = test_support::tenant(dir.path()).await;
        let fork = world.project(dir.path(), "Fork", None).await;
        super::copy(&world.tenant, dir.path(), fork.id + 100, fork.id, None)
            .await
            .unwrap();
        let fork = world.tenant.project_by_id(fork.id).await.unwrap().unwrap();
        assert_eq!(fork.import_status, ImportStatus::Failed);
        assert_eq!(
            fork.import_error.as_deref(),
            Some("The source project was deleted")
        );
        // A fork deleted while its copy waited leaves nothing to do.
        super::copy(&world.tenant, dir.path(), fork.id, fork.id + 100, None)
            .await
            .unwrap();
    }
}
