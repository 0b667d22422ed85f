//! What unit tests of the services and views share: a migrated SQLite database with its
//! default tenant and root, the projects they push to, and bare rows for tests that only read
//! them.

use std::path::Path;

use crate::model::namespaces::NamespaceRow;
use crate::model::projects::ProjectRow;
use crate::model::users::UserRow;
use crate::model::visibility::Visibility;
use crate::services::projects::{self, NewProject};
use crate::services::protected_branches::DefaultBranchProtection;
use crate::store::namespaces::NewGroup;
use crate::store::projects::ProjectChanges;
use crate::store::{Db, DbOptions, TenantDb};
use crate::tenants::{RootCredentials, bootstrap};

/// The default tenant of a fresh SQLite database under `dir`, and its root.
pub struct Tenant {
    pub db: Db,
    pub tenant: TenantDb,
    pub root: UserRow,
    /// The root's personal namespace.
    pub namespace: i64,
}

pub async fn tenant(dir: &Path) -> Tenant {
    let db = Db::connect(DbOptions {
        database_url: None,
        data_dir: dir,
        max_connections: 2,
    })
    .await
    .unwrap();
    db.migrate().await.unwrap();
    let credentials = RootCredentials {
        password: Some("a-long-root-password".into()),
        token: None,
    };
    let tenant = bootstrap(&db, "", credentials).await.unwrap().tenant;
    let tenant = db.tenant(tenant.id);
    let root = tenant.user_by_id(1).await.unwrap().unwrap();
    let namespace = tenant.user_namespace(root.id).await.unwrap().unwrap().id;
    Tenant {
        db,
        tenant,
        root,
        namespace,
    }
}

impl Tenant {
    /// A private project of the root's named `name` (its path the name in lower case), with
    /// a README commit on `main`.
    pub fn new_project(
        &self,
        name: &str,
        protection: Option<DefaultBranchProtection>,
    ) -> NewProject<'_> {
        let mut changes = ProjectChanges::default();
        changes.set_name_and_path(name, &name.to_lowercase());
        changes.set("default_branch", "main");
        changes.set("visibility", Visibility::Private.as_str());
        changes.set("visibility_level", Visibility::Private.level());
        NewProject {
            namespace_id: self.namespace,
            creator: &self.root,
            changes,
            with_readme: true,
            default_branch_protection: protection,
        }
    }

    /// Creates `new_project(name, protection)` with its repository under `dir`.
    pub async fn project(
        &self,
        dir: &Path,
        name: &str,
        protection: Option<DefaultBranchProtection>,
    ) -> ProjectRow {
        let new = self.new_project(name, protection);
        projects::create(&self.tenant, dir, new).await.unwrap()
    }
}

impl Tenant {
    /// A private top-level group named `name` (its path the name in lower case), the root its
    /// owner.
    pub async fn group(&self, name: &str) -> NamespaceRow {
        let group = NewGroup {
            name,
            path: &name.to_lowercase(),
            description: "",
            visibility: Visibility::Private,
            parent: None,
            settings: "{}",
            creator_id: self.root.id,
        };
        self.tenant.create_group(group).await.unwrap()
    }

    /// A private project row named `name` in `namespace_id`, a fork of `forked_from` when given,
    /// without a repository: for tests that only read rows.
    pub async fn project_row(
        &self,
        namespace_id: i64,
        name: &str,
        forked_from: Option<i64>,
    ) -> ProjectRow {
        let mut changes = ProjectChanges::default();
        changes.set_name_and_path(name, &name.to_lowercase());
        changes.set("visibility", Visibility::Private.as_str());
        changes.set("visibility_level", Visibility::Private.level());
        if let Some(source) = forked_from {
            changes.set("forked_from_id", source);
        }
        let id = self.tenant.reserve_project_id().await.unwrap();
        self.tenant
            .insert_project(id, namespace_id, self.root.id, None, &changes)
            .await
            .unwrap()
    }
}
