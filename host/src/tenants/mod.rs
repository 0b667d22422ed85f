//! Tenants: which tenant a host name belongs to, and how a tenant comes into being.

pub mod quotas;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use anyhow::Context;

use crate::auth::secrets;
use crate::store::tenants::{DEFAULT_TENANT_HOST, TenantQuotas, TenantRow};
use crate::store::tokens::NewToken;
use crate::store::users::NewUser;
use crate::store::{Db, TenantDb};

/// How often a process that hears no announcements (`invalidation`) re-reads the tenants
/// table, so a tenant created by `trellis tenant create` (another process) is served without a
/// restart.
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(2);

/// The tenant a request belongs to.
#[derive(Clone)]
pub struct Tenant {
    pub id: i64,
    pub db: TenantDb,
    /// Where this tenant's web pages live: the external URL for the default tenant when one is
    /// configured, otherwise the scheme and host the request came in on.
    pub base_url: String,
}

/// Host name → tenant id, with the default tenant for every other host, which tenants are
/// suspended, and their quotas.
pub struct TenantRegistry {
    known: RwLock<Arc<Known>>,
    default_id: i64,
}

/// One reading of the tenants table, replaced whole so hosts, suspensions and quotas always
/// agree.
struct Known {
    /// The live tenants' hosts (a purged tenant's row stays, with its host released).
    hosts: HashMap<String, i64>,
    suspended: HashSet<i64>,
    /// The tenants with at least one quota.
    quotas: HashMap<i64, TenantQuotas>,
}

impl Known {
    fn of(tenants: &[TenantRow]) -> Arc<Known> {
        Arc::new(Known {
            hosts: tenants
                .iter()
                .filter(|t| t.host != DEFAULT_TENANT_HOST && t.deleted_at.is_none())
                .map(|t| (t.host.clone(), t.id))
                .collect(),
            suspended: tenants
                .iter()
                .filter(|t| t.suspended_at.is_some())
                .map(|t| t.id)
                .collect(),
            quotas: tenants
                .iter()
                .filter(|t| t.quotas != TenantQuotas::default())
                .map(|t| (t.id, t.quotas))
                .collect(),
        })
    }
}

impl TenantRegistry {
    pub async fn load(db: &Db) -> anyhow::Result<TenantRegistry> {
        let tenants = db.list_tenants().await?;
        let default_id = tenants
            .iter()
            .find(|t| t.host == DEFAULT_TENANT_HOST)
            .map(|t| t.id)
            .context("no default tenant: run `trellis migrate` or `trellis serve` once")?;
        Ok(TenantRegistry {
            known: RwLock::new(Known::of(&tenants)),
            default_id,
        })
    }

    pub fn default_id(&self) -> i64 {
        self.default_id
    }

    pub fn resolve(&self, host_name: &str) -> i64 {
        self.find(host_name).unwrap_or(self.default_id)
    }

    /// The tenant answering exactly `host_name`, without falling back to the default tenant
    /// (for listeners bound to one tenant, which must not serve another when it is missing).
    pub fn find(&self, host_name: &str) -> Option<i64> {
        self.known
            .read()
            .expect("tenant registry")
            .hosts
            .get(host_name)
            .copied()
    }

    /// Whether the operator suspended the tenant (or scheduled its deletion): its requests
    /// are refused.
    pub fn is_suspended(&self, tenant_id: i64) -> bool {
        self.known
            .read()
            .expect("tenant registry")
            .suspended
            .contains(&tenant_id)
    }

    /// The tenant's quotas as last read (see [`REFRESH_INTERVAL`] and `invalidation`), for
    /// the checks on every request, which must not query for them.
    pub fn quotas(&self, tenant_id: i64) -> TenantQuotas {
        self.known
            .read()
            .expect("tenant registry")
            .quotas
            .get(&tenant_id)
            .copied()
            .unwrap_or_default()
    }

    /// Every tenant's plugin-instance quota, as the plugin host takes them.
    pub fn plugin_instance_quotas(&self) -> HashMap<i64, usize> {
        self.known
            .read()
            .expect("tenant registry")
            .quotas
            .iter()
            .filter_map(|(tenant, quotas)| {
                let quota = quotas.max_plugin_instances?;
                Some((*tenant, usize::try_from(quota).unwrap_or(0)))
            })
            .collect()
    }

    pub async fn refresh(&self, db: &Db) -> anyhow::Result<()> {
        let tenants = db.list_tenants().await?;
        *self.known.write().expect("tenant registry") = Known::of(&tenants);
        Ok(())
    }
}

/// Normalises a host given on the command line the way request hosts are matched.
pub fn normalize_host(host: &str) -> anyhow::Result<String> {
    let host = host.trim().to_ascii_lowercase();
    let valid = !host.is_empty()
        && host.len() <= 253
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
    anyhow::ensure!(valid, "{host:?} is not a host name");
    Ok(host)
}

/// How the first administrator of a new tenant gets in.
pub struct RootCredentials {
    pub password: Option<String>,
    pub token: Option<String>,
}

pub struct Bootstrapped {
    pub tenant: TenantRow,
    /// False when the tenant and its root already existed (made by an earlier or another process).
    pub created_root: bool,
    /// The generated password, when none was supplied.
    pub generated_password: Option<String>,
}

/// Creates a tenant with its administrator `root` (id 1) and its settings row. Each step
/// checks what exists, so a bootstrap interrupted half-way, or raced by another process
/// sharing the database, completes instead of failing.
pub async fn bootstrap(db: &Db, host: &str, root: RootCredentials) -> anyhow::Result<Bootstrapped> {
    let tenant = match db.find_tenant(host).await? {
        Some(tenant) => tenant,
        None => match db.insert_tenant(host).await {
            Ok(tenant) => tenant,
            Err(error) => db
                .find_tenant(host)
                .await?
                .ok_or(error)
                .context("creating the tenant")?,
        },
    };
    let tdb = db.tenant(tenant.id);
    tdb.ensure_settings().await?;
    if tdb.user_by_username("root").await?.is_some() {
        return Ok(Bootstrapped {
            tenant,
            created_root: false,
            generated_password: None,
        });
    }
    let generated_password = root.password.is_none().then(|| secrets::generate("", 24));
    let password = root
        .password
        .as_deref()
        .or(generated_password.as_deref())
        .expect("one is set");
    let user = tdb
        .insert_user(NewUser {
            username: "root",
            email: "admin@example.com",
            name: "Administrator",
            is_admin: true,
            password_digest: Some(secrets::hash_password(password)?),
            projects_limit: 100_000,
        })
        .await
        .context("creating root")?;
    if let Some(token) = root.token {
        create_token(
            &tdb,
            user.id,
            "initial root token",
            &token,
            &ROOT_TOKEN_SCOPES.map(String::from),
            None,
        )
        .await?;
    }
    Ok(Bootstrapped {
        tenant,
        created_root: true,
        generated_password,
    })
}

pub const ROOT_TOKEN_SCOPES: [&str; 5] = ["api", "read_api", "read_user", "sudo", "admin_mode"];

pub async fn create_token(
    tdb: &TenantDb,
    user_id: i64,
    name: &str,
    secret: &str,
    scopes: &[String],
    expires_at: Option<String>,
) -> anyhow::Result<crate::model::tokens::TokenRow> {
    let digest = secrets::digest(secret);
    let token = NewToken {
        user_id,
        name,
        digest: &digest,
        scopes,
        impersonation: false,
        expires_at,
    };
    Ok(tdb.insert_token(token, None).await?)
}
