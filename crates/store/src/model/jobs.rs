//! Rows of the job queue (`crate::jobs`).

/// A job as a worker claimed it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct JobRow {
    pub tenant_id: i64,
    pub id: i64,
    pub kind: String,
    pub args: String,
    /// Attempts so far, this one included.
    pub attempts: i64,
    pub max_attempts: i64,
}

/// A job to enqueue.
pub struct NewJob<'a> {
    pub kind: &'a str,
    /// One queued job per tenant, kind and key: enqueueing it again while it waits is a no-op.
    pub unique_key: &'a str,
    /// JSON arguments, read by the kind's handler.
    pub args: &'a str,
    pub max_attempts: i64,
}
