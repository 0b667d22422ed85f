//! The job queue's SQL (`jobs`, migration 0025). What each kind does, and when to retry, is
//! the server's (`host/src/jobs`). Claiming spans tenants (every worker serves them all), so
//! it and the calls about a claimed job are methods of [`Db`]; enqueueing is a tenant's.

use sqlx::AssertSqlSafe;

use super::ids::next_ids;
use super::{Db, Engine, TenantDb, now_ms};
use crate::invalidation::Invalidation;
use crate::model::jobs::{JobRow, NewJob};

const JOB_COLUMNS: &str = "tenant_id, id, kind, args, attempts, max_attempts";

impl TenantDb {
    /// Queues `job` to run as soon as a worker is free; `None` when a job of the same kind
    /// and key is queued already (or running), which then stands for this one.
    pub async fn enqueue_job(&self, job: &NewJob<'_>) -> crate::Result<Option<i64>> {
        let id = next_ids(self.writer(), self.tenant_id(), "jobs", 1).await?;
        let now = now_ms();
        let inserted = self
            .query(
                "INSERT INTO jobs (tenant_id, id, kind, unique_key, args, max_attempts, run_at, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT DO NOTHING",
            )
            .bind(id)
            .bind(job.kind)
            .bind(job.unique_key)
            .bind(job.args)
            .bind(job.max_attempts)
            .bind(now)
            .execute(self.writer())
            .await?;
        let queued = inserted.rows_affected() == 1;
        if queued {
            self.announce(Invalidation::JobQueued).await;
        }
        Ok(queued.then_some(id))
    }
}

impl Db {
    /// Leases up to `limit` due jobs to `worker` until `lease_ms` from now: queued jobs whose
    /// time has come and whose lease, if any, ran out (their worker died). On PostgreSQL
    /// concurrent claims skip each other's rows (`FOR UPDATE SKIP LOCKED`); SQLite's single
    /// writer serialises them.
    pub async fn claim_jobs(
        &self,
        worker: &str,
        limit: i64,
        lease_ms: i64,
    ) -> crate::Result<Vec<JobRow>> {
        let now = now_ms();
        let lock = match self.engine() {
            Engine::Postgres => " FOR UPDATE SKIP LOCKED",
            Engine::Sqlite => "",
        };
        let statement = format!(
            "UPDATE jobs SET lease_until = $1, locked_by = $2, attempts = attempts + 1 \
             WHERE (tenant_id, id) IN (SELECT tenant_id, id FROM jobs \
               WHERE state = 'queued' AND run_at <= $3 AND (lease_until IS NULL OR lease_until < $3) \
               ORDER BY run_at, id LIMIT $4{lock}) \
             RETURNING {JOB_COLUMNS}"
        );
        Ok(sqlx::query_as(AssertSqlSafe(statement))
            .bind(now + lease_ms)
            .bind(worker)
            .bind(now)
            .bind(limit)
            .fetch_all(self.writer())
            .await?)
    }

    /// Extends `worker`'s lease on a running job; false when the lease is no longer its
    /// own (it ran out and another worker took the job).
    pub async fn renew_job_lease(
        &self,
        job: &JobRow,
        worker: &str,
        lease_ms: i64,
    ) -> crate::Result<bool> {
        let done = sqlx::query(
            "UPDATE jobs SET lease_until = $1 WHERE tenant_id = $2 AND id = $3 \
             AND locked_by = $4 AND state = 'queued'",
        )
        .bind(now_ms() + lease_ms)
        .bind(job.tenant_id)
        .bind(job.id)
        .bind(worker)
        .execute(self.writer())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Ends `worker`'s attempt at `job`: `done`, `failed` for good, or queued again at
    /// `retry_at` with `error` recorded. An ended job's arguments are cleared: they may hold
    /// credentials (an import URL's). False when the job was no longer `worker`'s.
    pub async fn end_job_attempt(
        &self,
        job: &JobRow,
        worker: &str,
        outcome: JobOutcome<'_>,
    ) -> crate::Result<bool> {
        let now = now_ms();
        let (state, run_at, error) = match outcome {
            JobOutcome::Done => ("done", None, None),
            JobOutcome::Failed { error } => ("failed", None, Some(error)),
            JobOutcome::Retry { at, error } => ("queued", Some(at), Some(error)),
        };
        let done = sqlx::query(
            "UPDATE jobs SET state = $1, run_at = COALESCE($2, run_at), last_error = COALESCE($3, last_error), \
             lease_until = NULL, locked_by = NULL, finished_at = CASE WHEN $1 = 'queued' THEN NULL ELSE $4 END, \
             args = CASE WHEN $1 = 'queued' THEN args ELSE '{}' END \
             WHERE tenant_id = $5 AND id = $6 AND locked_by = $7 AND state = 'queued'",
        )
        .bind(state)
        .bind(run_at)
        .bind(error)
        .bind(now)
        .bind(job.tenant_id)
        .bind(job.id)
        .bind(worker)
        .execute(self.writer())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Deletes jobs that ended (done or failed) before `before` (ms).
    pub async fn prune_jobs(&self, before: i64) -> crate::Result<u64> {
        let done = sqlx::query("DELETE FROM jobs WHERE state <> 'queued' AND finished_at < $1")
            .bind(before)
            .execute(self.writer())
            .await?;
        Ok(done.rows_affected())
    }
}

/// How an attempt at a job ended.
pub enum JobOutcome<'a> {
    Done,
    Failed { error: &'a str },
    Retry { at: i64, error: &'a str },
}
