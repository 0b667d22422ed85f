//! Who may do what: the rules every transport shares (the REST API, git over HTTP, SSH and the
//! web pages), read from a [`Scope`] (the tenant, the caller and the settings) rather than from
//! any transport's request. Refusals are [`Refusal`]s; each transport renders its own answer.

pub mod groups;
pub mod issues;
pub mod merge_requests;
pub mod projects;

use crate::auth::Caller;
use crate::context::ApiContext;
use crate::links::UserLinks;
use crate::model::visibility::Visibility;
use crate::settings::Settings;
use crate::settings::keys;
use crate::store::TenantDb;
use crate::store::projects::Viewer;
use crate::tenants::Tenant;

pub use groups::{GroupCtx, group};
pub use projects::{ProjectCtx, project, refused_projects};

/// Who asks, and where: the shared state, the tenant, the caller (none when anonymous) and
/// the tenant's settings.
#[derive(Clone, Copy)]
pub struct Scope<'a> {
    pub ctx: &'a ApiContext,
    pub tenant: &'a Tenant,
    pub caller: Option<&'a Caller>,
    pub settings: &'a Settings,
}

impl<'a> Scope<'a> {
    pub fn db(&self) -> &'a TenantDb {
        &self.tenant.db
    }

    /// The caller as the store's visibility filters see them.
    pub fn viewer(&self) -> Viewer {
        match self.caller {
            None => Viewer::Anonymous,
            Some(c) if c.is_admin() => Viewer::Admin { id: c.user.id },
            Some(c) => Viewer::User {
                id: c.user.id,
                external: c.user.external,
            },
        }
    }

    fn is_admin(&self) -> bool {
        self.caller.is_some_and(|c| c.is_admin())
    }

    /// Whether something of `visibility` is open to the caller without membership.
    fn open_to(&self, visibility: Visibility) -> bool {
        match visibility {
            Visibility::Public => true,
            Visibility::Internal => self.caller.is_some_and(|c| !c.user.external),
            Visibility::Private => false,
        }
    }

    /// The tenant's user URLs.
    pub fn user_links(&self) -> UserLinks<'a> {
        UserLinks {
            base_url: &self.tenant.base_url,
            avatar_service: self.settings.get(keys::AVATAR_SERVICE_ENABLED),
        }
    }

    /// The SSH clone URL of the tenant's project at `full_path`.
    pub fn ssh_url(&self, full_path: &str) -> String {
        let host = crate::links::web_host(&self.tenant.base_url);
        crate::links::ssh_clone_url(host, self.ctx.ssh_port(self.tenant.id), full_path)
    }
}
