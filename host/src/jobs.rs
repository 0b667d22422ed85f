//! Background work on the store's job queue (`jobs`, migration 0025), so that it outlives the
//! process that asked for it: every process's workers claim due jobs of any tenant, renew
//! their lease while a job runs and end it; a job whose process died is claimed again by any
//! process once its lease runs out.
//!
//! Taken from the anchors: river's and Oban's leased rows, claimed with `FOR UPDATE SKIP
//! LOCKED` so that processes never wait for each other, and their retries with a growing
//! backoff up to a maximum of attempts; GitLab's Sidekiq reliable fetch, where a job a dead
//! worker held goes back to the queue rather than being lost; and Sidekiq's rule that every
//! job be idempotent, since a job may run again after a crash. A job's own failures (an
//! import from a URL that does not answer) are its outcome, recorded where GitLab shows them
//! (`import_status`); only what stops a job from recording anything (the database gone) is
//! retried.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, Semaphore};

use crate::context::ApiContext;
use crate::model::jobs::{JobRow, NewJob};
use crate::store::TenantDb;
use crate::store::jobs::JobOutcome;

/// A piece of background work and what it needs, by id: rows are read when it runs, so a
/// job that waited sees the project as it is then.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Job {
    /// Fetches `url` into the project's repository: an import, or a pull mirror's update.
    /// The URL may hold credentials: a job's arguments are cleared when it ends.
    Fetch { project_id: i64, url: String },
    /// Copies a fork's source repository into the fork.
    ForkCopy {
        source_id: i64,
        fork_id: i64,
        branches: Option<Vec<String>>,
    },
    /// `git gc` on the project's repository, then its statistics.
    Housekeeping { project_id: i64 },
    /// Whether git can merge a merge request as its branches stand now.
    MergeabilityCheck {
        project_id: i64,
        merge_request_id: i64,
    },
    /// Deletes a project marked for deletion whose adjourned period has passed (if it is
    /// still marked), then its repositories and files.
    PurgeMarkedProject { project_id: i64 },
    /// Deletes a tenant whose deletion is due: its rows, then its repositories and files.
    /// Queued in the default tenant, since the tenant's own jobs go with its rows.
    PurgeTenant { tenant_id: i64 },
}

impl Job {
    fn kind(&self) -> &'static str {
        match self {
            Job::Fetch { .. } => "fetch",
            Job::ForkCopy { .. } => "fork_copy",
            Job::Housekeeping { .. } => "housekeeping",
            Job::MergeabilityCheck { .. } => "mergeability_check",
            Job::PurgeMarkedProject { .. } => "purge_marked_project",
            Job::PurgeTenant { .. } => "purge_tenant",
        }
    }

    /// What makes two jobs the same work: one of them waiting is enough.
    fn unique_key(&self) -> String {
        match self {
            Job::Fetch { project_id, .. }
            | Job::Housekeeping { project_id }
            | Job::PurgeMarkedProject { project_id } => project_id.to_string(),
            Job::ForkCopy { fork_id, .. } => fork_id.to_string(),
            Job::MergeabilityCheck {
                merge_request_id, ..
            } => merge_request_id.to_string(),
            Job::PurgeTenant { tenant_id } => tenant_id.to_string(),
        }
    }
}

/// Attempts before a job is given up (each one a failure to record any outcome).
const MAX_ATTEMPTS: i64 = 5;
/// How often idle workers look for jobs other processes queued (a job queued here wakes
/// them at once).
const POLL: Duration = Duration::from_secs(1);
/// Jobs one process runs at once.
const WORKERS: usize = 4;
/// How long ended jobs are kept for the record.
const KEEP_ENDED_MS: i64 = 7 * 24 * 60 * 60 * 1000;

/// The process's side of the queue: the wake-up for its workers and their slots.
pub struct JobQueue {
    wake: Notify,
    slots: Arc<Semaphore>,
    /// Names this process in `locked_by`, so that only it renews and ends its leases.
    worker: String,
    /// How long a claimed job is this process's without renewal (`--job-lease-seconds`);
    /// renewed every third of it.
    lease: Duration,
}

impl JobQueue {
    pub fn new(lease: Duration) -> Self {
        JobQueue {
            lease,
            wake: Notify::new(),
            slots: Arc::new(Semaphore::new(WORKERS)),
            worker: format!(
                "{}-{}-{:08x}",
                hostname(),
                std::process::id(),
                rand::random::<u32>()
            ),
        }
    }
}

impl JobQueue {
    /// Has an idle worker look for due jobs now.
    pub fn wake(&self) {
        self.wake.notify_one();
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .unwrap_or_else(|_| "host".into())
}

/// Queues `job` in the tenant `db` belongs to, and wakes this process's workers. Queuing
/// work that is queued already is a no-op.
pub async fn enqueue(ctx: &ApiContext, db: &TenantDb, job: &Job) -> crate::store::Result<()> {
    queue(db, job).await?;
    ctx.jobs.wake();
    Ok(())
}

/// Queues `job` from a process that runs no workers (a command): the serving processes hear
/// of it through the announcements, or find it at their next look.
pub async fn queue(db: &TenantDb, job: &Job) -> crate::store::Result<()> {
    let args = serde_json::to_string(job).expect("a job serialises");
    db.enqueue_job(&NewJob {
        kind: job.kind(),
        unique_key: &job.unique_key(),
        args: &args,
        max_attempts: MAX_ATTEMPTS,
    })
    .await?;
    Ok(())
}

/// The workers: claims due jobs while slots are free, runs each in its own task with its
/// lease renewed, and prunes old ended jobs now and then. Runs for the process's life.
pub async fn run(ctx: ApiContext) {
    let queue = &ctx.jobs;
    let mut last_prune = std::time::Instant::now();
    loop {
        // A stopping process claims nothing more; what it runs, stopping waits for.
        if ctx.stopping.is_stopping() {
            return;
        }
        let free = queue.slots.available_permits();
        if free > 0 {
            match ctx
                .db
                .claim_jobs(&queue.worker, free as i64, queue.lease.as_millis() as i64)
                .await
            {
                Ok(claimed) => {
                    for job in claimed {
                        let permit = queue.slots.clone().acquire_owned().await.expect("open");
                        let ctx = ctx.clone();
                        let in_progress = ctx.stopping.hold();
                        tokio::spawn(async move {
                            attempt(&ctx, job).await;
                            drop(in_progress);
                            drop(permit);
                            ctx.jobs.wake();
                        });
                    }
                }
                Err(error) => tracing::warn!(%error, "could not claim jobs"),
            }
        }
        if last_prune.elapsed() > Duration::from_secs(3600) {
            last_prune = std::time::Instant::now();
            if let Err(error) = ctx
                .db
                .prune_jobs(crate::model::now_ms() - KEEP_ENDED_MS)
                .await
            {
                tracing::warn!(%error, "could not prune ended jobs");
            }
        }
        tokio::select! {
            _ = tokio::time::timeout(POLL, queue.wake.notified()) => {}
            () = ctx.stopping.started() => {}
        }
    }
}

/// One attempt at `row`, with its lease renewed until it ends; then the queue is told how
/// it went.
async fn attempt(ctx: &ApiContext, row: JobRow) {
    let worker = ctx.jobs.worker.as_str();
    let error_text;
    let outcome = match serde_json::from_str::<Job>(&row.args) {
        // Written by another version and unreadable by this one: no retry can help.
        Err(error) => {
            error_text = format!("unreadable job arguments: {error}");
            JobOutcome::Failed { error: &error_text }
        }
        Ok(job) => match leased(ctx, &row, perform(ctx, &row, job)).await {
            // Another worker holds it now: this attempt's outcome does not count.
            None => {
                tracing::warn!(
                    job = row.id,
                    kind = row.kind,
                    "a job's lease was lost; it runs elsewhere"
                );
                return;
            }
            Some(Ok(())) => JobOutcome::Done,
            Some(Err(error)) => {
                error_text = format!("{error:#}");
                tracing::warn!(
                    job = row.id,
                    kind = row.kind,
                    attempt = row.attempts,
                    error = error_text,
                    "a job failed"
                );
                if row.attempts >= row.max_attempts {
                    JobOutcome::Failed { error: &error_text }
                } else {
                    JobOutcome::Retry {
                        at: crate::model::now_ms() + backoff_ms(row.attempts),
                        error: &error_text,
                    }
                }
            }
        },
    };
    if let Err(error) = ctx.db.end_job_attempt(&row, worker, outcome).await {
        // The lease runs out and the job runs again: every job is idempotent.
        tracing::warn!(%error, job = row.id, "could not record a job's end");
    }
}

/// Runs `work` while renewing `row`'s lease every third of the lease time; `None` when the
/// lease was lost to another worker before `work` ended.
async fn leased<T>(ctx: &ApiContext, row: &JobRow, work: impl Future<Output = T>) -> Option<T> {
    let (worker, lease) = (ctx.jobs.worker.as_str(), ctx.jobs.lease);
    let renew = async {
        let mut every = tokio::time::interval(lease / 3);
        every.tick().await;
        loop {
            every.tick().await;
            match ctx
                .db
                .renew_job_lease(row, worker, lease.as_millis() as i64)
                .await
            {
                Ok(true) => {}
                Ok(false) => return,
                Err(error) => tracing::warn!(%error, job = row.id, "could not renew a job's lease"),
            }
        }
    };
    tokio::select! {
        result = work => Some(result),
        () = renew => None,
    }
}

/// The wait before attempt `attempts + 1`: 2^attempts seconds plus up to a second of jitter,
/// so that jobs failing together do not come back together.
fn backoff_ms(attempts: i64) -> i64 {
    let base = 1000 * (1i64 << attempts.clamp(0, 12));
    base + rand::random::<u16>() as i64 % 1000
}

/// Runs the work `job` names, in the tenant `row` belongs to.
async fn perform(ctx: &ApiContext, row: &JobRow, job: Job) -> anyhow::Result<()> {
    let db = ctx.db.tenant(row.tenant_id);
    let data_dir = &ctx.config.storage.data_dir;
    match job {
        Job::Fetch { project_id, url } => {
            crate::services::imports::fetch(ctx, &db, project_id, &url).await
        }
        Job::ForkCopy {
            source_id,
            fork_id,
            branches,
        } => {
            crate::services::project_forks::copy(
                &db,
                data_dir,
                source_id,
                fork_id,
                branches.as_deref(),
            )
            .await
        }
        Job::Housekeeping { project_id } => {
            crate::services::projects::housekeeping(&db, data_dir, project_id).await
        }
        Job::MergeabilityCheck {
            project_id,
            merge_request_id,
        } => {
            let repo = crate::git::Repository::project(data_dir, row.tenant_id, project_id);
            crate::services::merge_requests::check_mergeability(&db, &repo, merge_request_id).await
        }
        Job::PurgeMarkedProject { project_id } => {
            crate::services::project_deletion::purge_marked(&db, data_dir, project_id).await
        }
        Job::PurgeTenant { tenant_id } => {
            crate::services::tenant_deletion::purge(&ctx.db, data_dir, tenant_id).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_keep_their_arguments_through_the_queue() {
        let job = Job::ForkCopy {
            source_id: 3,
            fork_id: 9,
            branches: Some(vec!["main".into()]),
        };
        let text = serde_json::to_string(&job).unwrap();
        assert_eq!(
            text,
            r#"{"kind":"fork_copy","source_id":3,"fork_id":9,"branches":["main"]}"#
        );
        assert_eq!(serde_json::from_str::<Job>(&text).unwrap(), job);
        assert_eq!(job.unique_key(), "9");
    }

    #[test]
    fn retries_wait_longer_each_time() {
        assert!((2000..3000).contains(&backoff_ms(1)));
        assert!((16000..17000).contains(&backoff_ms(4)));
        assert!(backoff_ms(100) < 5_000_000);
    }

    #[tokio::test]
    async fn a_lease_is_one_workers_until_it_runs_out() {
        let dir = tempfile::tempdir().unwrap();
        let world = crate::test_support::tenant(dir.path()).await;
        let (db, tenant) = (&world.db, &world.tenant);
        let job = NewJob {
            kind: "housekeeping",
            unique_key: "7",
            args: r#"{"kind":"housekeeping","project_id":7}"#,
            max_attempts: MAX_ATTEMPTS,
        };
        assert!(tenant.enqueue_job(&job).await.unwrap().is_some());
        // The same work queued again while it waits is the same job.
        assert_eq!(tenant.enqueue_job(&job).await.unwrap(), None);

        let [held] = db
            .claim_jobs("a", 10, 60_000)
            .await
            .unwrap()
            .try_into()
            .unwrap();
        assert_eq!((held.kind.as_str(), held.attempts), ("housekeeping", 1));
        assert!(db.claim_jobs("b", 10, 60_000).await.unwrap().is_empty());
        assert!(!db.renew_job_lease(&held, "b", 60_000).await.unwrap());
        assert!(db.renew_job_lease(&held, "a", 60_000).await.unwrap());

        // Worker a dies: its lease runs out (here, at once) and b takes the job over.
        assert!(db.renew_job_lease(&held, "a", -1).await.unwrap());
        let [taken] = db
            .claim_jobs("b", 10, 60_000)
            .await
            .unwrap()
            .try_into()
            .unwrap();
        assert_eq!((taken.id, taken.attempts), (held.id, 2));
        // a's late outcome no longer counts; b's does.
        assert!(
            !db.end_job_attempt(&held, "a", JobOutcome::Done)
                .await
                .unwrap()
        );
        let retry = JobOutcome::Retry {
            at: crate::model::now_ms() + 60_000,
            error: "database gone",
        };
        assert!(db.end_job_attempt(&taken, "b", retry).await.unwrap());
        // Waiting for its retry, it is not due.
        assert!(db.claim_jobs("c", 10, 60_000).await.unwrap().is_empty());
        // Still queued, so queuing it again is still a no-op.
        assert_eq!(tenant.enqueue_job(&job).await.unwrap(), None);
    }

    #[tokio::test]
    async fn an_ended_job_frees_its_key_and_is_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let world = crate::test_support::tenant(dir.path()).await;
        let (db, tenant) = (&world.db, &world.tenant);
        let job = NewJob {
            kind: "fetch",
            unique_key: "3",
            args: r#"{"kind":"fetch","project_id":3,"url":"https://user:secret@example.com/r.git"}"#,
            max_attempts: 1,
        };
        tenant.enqueue_job(&job).await.unwrap();
        let [held] = db
            .claim_jobs("a", 1, 60_000)
            .await
            .unwrap()
            .try_into()
            .unwrap();
        let failed = JobOutcome::Failed {
            error: "unreadable",
        };
        assert!(db.end_job_attempt(&held, "a", failed).await.unwrap());
        assert!(db.claim_jobs("a", 1, 60_000).await.unwrap().is_empty());
        // Ended, the key is free for new work (the e2e test checks the URL is gone), and
        // the ended row is pruned once old.
        assert!(tenant.enqueue_job(&job).await.unwrap().is_some());
        assert_eq!(db.prune_jobs(crate::model::now_ms() + 1).await.unwrap(), 1);
    }
}
