//! Deleting a tenant: `trellis tenant delete` suspends it and schedules its purge after a
//! grace period (during which `trellis tenant resume` takes it back); once due, a job deletes
//! its rows in one transaction, then its repositories and uploaded files.

use std::path::Path;
use std::time::Duration;

use crate::context::ApiContext;
use crate::jobs::{self, Job};
use crate::model::now_ms;
use crate::services::projects::UPLOADS_DIR;
use anyhow::Context;

use crate::store::Db;
use crate::store::tenants::DEFAULT_TENANT_HOST;

const SWEEP_INTERVAL: Duration = Duration::from_secs(60);

/// Queues, every minute, the purge of every tenant whose deletion is due (every process runs
/// this; a purge already queued is not queued twice).
pub async fn sweep_loop(ctx: ApiContext) {
    let mut interval = tokio::time::interval(SWEEP_INTERVAL);
    loop {
        interval.tick().await;
        if let Err(error) = queue_due(&ctx.db).await {
            tracing::warn!(
                error = format!("{error:#}"),
                "could not queue the deletion of tenants"
            );
        }
    }
}

/// Queues the purge of every tenant whose deletion is due now.
pub async fn queue_due(db: &Db) -> anyhow::Result<()> {
    let default_tenant = db
        .find_tenant(DEFAULT_TENANT_HOST)
        .await?
        .context("no default tenant")?;
    let default_tenant = db.tenant(default_tenant.id);
    for tenant_id in db.tenants_due_for_deletion(now_ms()).await? {
        jobs::queue(&default_tenant, &Job::PurgeTenant { tenant_id }).await?;
    }
    Ok(())
}

/// Purges tenant `tenant_id` if its deletion is due, and removes its files whenever it has
/// been purged: run again after a crash, it finishes what the first run started.
pub async fn purge(db: &Db, data_dir: &Path, tenant_id: i64) -> anyhow::Result<()> {
    db.purge_tenant(tenant_id).await?;
    let purged = db
        .tenant_by_id(tenant_id)
        .await?
        .is_some_and(|tenant| tenant.deleted_at.is_some());
    if purged {
        let repositories = crate::git::root(data_dir, tenant_id);
        let uploads = data_dir.join(UPLOADS_DIR).join(tenant_id.to_string());
        for path in [repositories, uploads] {
            match tokio::fs::remove_dir_all(&path).await {
                Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                    return Err(
                        anyhow::Error::new(error).context(format!("removing {}", path.display()))
                    );
                }
                _ => {}
            }
        }
    }
    Ok(())
}
