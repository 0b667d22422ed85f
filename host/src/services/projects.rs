//! Creating and deleting projects with their repositories, and storing what a repository
//! holds. No git process and no repository filesystem work runs while a database transaction
//! is open: on SQLite a transaction holds the one writer connection, so every tenant's writes
//! would wait behind `git`.

use std::path::{Path, PathBuf};

use super::protected_branches::{DefaultBranchProtection, protect_default_branch};
use super::readme::readme;
use super::{Refusal, TakenOn};
use crate::access_level::AccessLevel;
use crate::git::{self, Author, Repository};
use crate::model::projects::{DEFAULT_BRANCH, ProjectRow};
use crate::model::users::UserRow;
use crate::store::TenantDb;
use crate::store::projects::ProjectChanges;

/// The data directory's folder of uploaded files.
pub const UPLOADS_DIR: &str = "uploads";

/// `DATA_DIR/uploads/<tenant>/<relative>`: where a tenant's uploaded files live.
pub fn uploads_dir(data_dir: &Path, tenant: i64, relative: &str) -> PathBuf {
    data_dir
        .join(UPLOADS_DIR)
        .join(tenant.to_string())
        .join(relative)
}

/// The unique indexes a project write can run into, each as `(table, column, field)` with the
/// field GitLab reports as "has already been taken".
pub const PROJECT_UNIQUES: &[(&str, &str, &str)] = &[
    ("projects", "path_lower", "path"),
    ("projects", "name", "name"),
];

/// A project to create.
pub struct NewProject<'a> {
    pub namespace_id: i64,
    /// The creator: the project's first owner, and the README commit's author.
    pub creator: &'a UserRow,
    /// Every column but the id, the creator and the timestamps; `name` is required, and
    /// `default_branch` (else `main`) is the repository's first branch.
    pub changes: ProjectChanges,
    /// Starts the repository with GitLab's README commit (`initialize_with_readme`).
    pub with_readme: bool,
    /// How the default branch is protected once it exists (a README commit creates it; else
    /// the first push does, `services::push`). None for forks, whose branches are copies.
    pub default_branch_protection: Option<DefaultBranchProtection>,
}

/// The level of the creator's direct membership of a new project, if any: Owner in a personal
/// namespace and for a creator who is no member of the group (an administrator); none for a
/// creator who is a Maintainer or Owner of the group or an ancestor (GitLab's
/// `Projects::CreateService`: their access comes through the group, and tools that count a
/// project's members rely on that); Maintainer for a group member below that (a Developer
/// allowed to create projects), so that they can manage what they made.
async fn creator_membership(
    db: &TenantDb,
    namespace_id: i64,
    creator_id: i64,
) -> crate::store::Result<Option<AccessLevel>> {
    let Some(namespace) = db.namespace_by_id(namespace_id).await? else {
        return Ok(Some(AccessLevel::Owner));
    };
    if namespace.kind != "group" {
        return Ok(Some(AccessLevel::Owner));
    }
    let lineage: Vec<i64> = namespace
        .traversal
        .split('/')
        .filter_map(|id| id.parse().ok())
        .collect();
    let levels = db
        .levels_of(
            creator_id,
            "Namespace",
            Some(&lineage),
            &crate::model::today(),
        )
        .await?;
    Ok(match levels.iter().map(|(_, level)| *level).max() {
        None => Some(AccessLevel::Owner),
        Some(level) if level >= AccessLevel::Maintainer as i64 => None,
        Some(_) => Some(AccessLevel::Maintainer),
    })
}

/// Creates a project and its repository: reserves the id, makes the repository (with its
/// README commit when asked) and reads its statistics, then inserts the rows in one short
/// transaction. A failed git step inserts nothing (the reserved id stays unused); a failed
/// insert removes the repository again.
pub async fn create(
    db: &TenantDb,
    data_dir: &Path,
    new: NewProject<'_>,
) -> Result<ProjectRow, Refusal> {
    let creator_level = creator_membership(db, new.namespace_id, new.creator.id).await?;
    let id = db.reserve_project_id().await?;
    let repo = Repository::project(data_dir, db.tenant_id(), id);
    let mut changes = new.changes;
    let made = initialize(&repo, &changes, new.with_readme.then_some(new.creator)).await;
    let stats = match made {
        Ok(stats) => stats,
        Err(error) => {
            repo.remove().await;
            return Err(error.into());
        }
    };
    // The repository exists before the row, so the row starts with its statistics.
    changes.set("commit_count", stats.commit_count);
    changes.set("repository_size", stats.size);
    changes.set("storage_size", stats.size);
    changes.set(
        "repository_languages",
        stats.languages.to_json().to_string(),
    );
    match db
        .insert_project(
            id,
            new.namespace_id,
            new.creator.id,
            creator_level,
            &changes,
        )
        .await
    {
        Ok(row) => {
            if let (true, Some(protection), Some(branch)) = (
                new.with_readme,
                new.default_branch_protection,
                row.default_branch.as_deref(),
            ) {
                protect_default_branch(db, id, branch, protection).await?;
            }
            Ok(row)
        }
        Err(error) => {
            repo.remove().await;
            Err(Refusal::taken(error, PROJECT_UNIQUES))
        }
    }
}

/// Makes the repository of a project being created: an empty bare repository on the
/// project's default branch, plus the README commit by `readme_author`. A leftover directory
/// under a reserved id can only come from an interrupted creation (the id was never used), so
/// it is replaced.
async fn initialize(
    repo: &Repository,
    changes: &ProjectChanges,
    readme_author: Option<&UserRow>,
) -> git::Result<git::Statistics> {
    let branch = changes.text("default_branch").unwrap_or(DEFAULT_BRANCH);
    repo.remove().await;
    repo.create(branch).await?;
    if let Some(author) = readme_author {
        let name = changes.text("name").unwrap_or_default();
        let author = Author {
            name: &author.name,
            email: &author.email,
        };
        repo.commit_file(
            branch,
            "README.md",
            readme(name).as_bytes(),
            "Initial commit",
            &author,
        )
        .await?;
    }
    repo.statistics(branch).await
}

/// Applies `changes` to a project as `actor` (404 when it is gone; a name or path another
/// project took meanwhile is GitLab's "has already been taken").
pub async fn update(
    db: &TenantDb,
    project_id: i64,
    changes: &ProjectChanges,
    actor: i64,
) -> Result<ProjectRow, Refusal> {
    db.update_project(project_id, changes, Some(actor))
        .await
        .taken_on(PROJECT_UNIQUES)?
        .ok_or(Refusal::NotFound("Project"))
}

/// A queued housekeeping (`jobs::Job::Housekeeping`): `git gc` on the project's repository,
/// then its statistics. Nothing to do when the project is gone.
pub async fn housekeeping(db: &TenantDb, data_dir: &Path, project_id: i64) -> anyhow::Result<()> {
    let Some(project) = db.project_by_id(project_id).await? else {
        return Ok(());
    };
    let repo = Repository::project(data_dir, db.tenant_id(), project_id);
    let branch = project.head_branch();
    repo.ensure(&branch).await?;
    repo.gc().await?;
    refresh_statistics(db, &repo, project_id, &branch).await?;
    Ok(())
}

/// Stores the repository's commit count, size and languages on the project row (after the
/// server changed the repository: a fork's copy, an import, housekeeping). The git work is
/// done before the one update starts.
pub async fn refresh_statistics(
    db: &TenantDb,
    repo: &Repository,
    project_id: i64,
    branch: &str,
) -> Result<(), Refusal> {
    let stats = repo.statistics(branch).await?;
    db.set_repository_statistics(
        project_id,
        stats.commit_count,
        stats.size,
        &stats.languages.to_json().to_string(),
    )
    .await?;
    Ok(())
}

/// Deletes a project's rows, in their own transaction, then its repositories. The database
/// is the source of truth: a row whose repository was removed first would be left broken if
/// the delete then failed, while a repository left behind by a failed removal is only logged,
/// belongs to no row and is never adopted (ids are never reused, and a creation replaces any
/// leftover under its reserved id). The caller removes the project's uploaded files likewise.
/// `actor` is who deletes it (none for the sweep of projects whose deletion was delayed).
pub async fn delete(
    db: &TenantDb,
    data_dir: &Path,
    project_id: i64,
    actor: Option<i64>,
) -> Result<(), Refusal> {
    db.delete_project(project_id, actor).await?;
    remove_repositories(data_dir, db.tenant_id(), project_id).await;
    Ok(())
}

/// Removes a deleted project's repository and wiki, logging what cannot be removed (the
/// rows are already gone).
pub async fn remove_repositories(data_dir: &Path, tenant: i64, project_id: i64) {
    Repository::project(data_dir, tenant, project_id)
        .remove()
        .await;
    Repository::wiki(data_dir, tenant, project_id)
        .remove()
        .await;
}

/// Stars or unstars a project for `user_id`; `false` when it already was as asked.
pub async fn star(
    db: &TenantDb,
    project_id: i64,
    user_id: i64,
    star: bool,
) -> Result<bool, Refusal> {
    Ok(db.set_star(project_id, user_id, star).await?.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;

    #[tokio::test]
    async fn a_failed_git_step_inserts_nothing_and_a_failed_insert_leaves_no_repository() {
        let dir = tempfile::tempdir().unwrap();
        let world = test_support::tenant(dir.path()).await;
        let db = &world.tenant;
        let new_project = |name| world.new_project(name, None);
        let repo = |id| Repository::project(dir.path(), db.tenant_id(), id);

        let made = create(db, dir.path(), new_project("Made")).await.unwrap();
        assert!(repo(made.id).exists().await);
        assert_eq!(
            made.commit_count, 1,
            "the row starts with the README commit"
        );
        assert!(made.repository_size > 0 && made.storage_size == made.repository_size);

        // A file where the next repository goes: git fails, and no row is inserted.
        let blocked = made.id + 1;
        std::fs::write(repo(blocked).path(), "in the way").unwrap();
        let error = create(db, dir.path(), new_project("Blocked"))
            .await
            .unwrap_err();
        assert!(matches!(error, Refusal::Git(_)), "{error:?}");
        assert!(db.project_by_id(blocked).await.unwrap().is_none());
        std::fs::remove_file(repo(blocked).path()).unwrap();

        // A taken name: the insert fails, and the repository made for it is removed.
        let error = create(db, dir.path(), new_project("Made"))
            .await
            .unwrap_err();
        assert!(matches!(error, Refusal::Invalid("name", _)), "{error:?}");
        let unused = blocked + 1;
        assert!(db.project_by_id(unused).await.unwrap().is_none());
        assert!(!repo(unused).exists().await && !repo(unused).path().exists());

        // Reserved ids that were never used leave gaps.
        let next = create(db, dir.path(), new_project("Next")).await.unwrap();
        assert_eq!(next.id, unused + 1);

        delete(db, dir.path(), made.id, None).await.unwrap();
        assert!(db.project_by_id(made.id).await.unwrap().is_none());
        assert!(!repo(made.id).path().exists());
    }
}
