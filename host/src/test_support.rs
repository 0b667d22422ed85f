//! What unit tests of the services share: a migrated SQLite database with its default tenant
//! and root, and the projects they push to.

use std::path::Path;

use crate::model::projects::ProjectRow;
use crate::model::users::UserRow;
use crate::model::visibility::Visibility;
use crate::services::projects::{self, NewProject};
use crate::services::protected_branches::DefaultBranchProtection;
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
