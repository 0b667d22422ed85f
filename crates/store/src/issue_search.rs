//! The substring index behind the issue lists' `search=`: engine-specific, so it is set up
//! here after the portable migrations rather than by one of them (`sqlx::migrate!` runs the
//! same files on both engines). Every step is idempotent and runs at each start.
//!
//! - SQLite: an FTS5 table `issue_search` with the `trigram` tokenizer (it answers substring
//!   matches of 3 or more characters, case-insensitively), kept in step with `issues` by
//!   triggers, so every write path (create, update, move, the project's cascade, the
//!   benchmark's bulk seed) keeps it without code of its own. Its rowid is
//!   `tenant_id * 2^40 + id` (issue ids are per tenant), so a query stays inside its tenant by
//!   a rowid range and a trigger finds its row by key; the implicit rowid of `issues` would not
//!   do, as `VACUUM` may renumber it.
//! - PostgreSQL: `pg_trgm` GIN indexes on `lower(title)` and `lower(description)`, which the
//!   list's `LOWER(...) LIKE '%term%'` uses for rare terms (each search is planned with its
//!   term; a common term walks the list's own index instead). Without the extension (not installable
//!   by the database user) the search still works, as a scan.

use anyhow::Context;
use sqlx::{AnyPool, Executor};

use super::Engine;

/// Issue ids stay below this within a tenant (2^40); see the module comment.
pub const ROWID_TENANT_STRIDE: i64 = 1 << 40;

/// Terms shorter than this are matched by a scan: trigrams cannot answer them.
pub const MIN_INDEXED_CHARS: usize = 3;

pub async fn prepare(pool: &AnyPool, engine: Engine) -> anyhow::Result<()> {
    match engine {
        Engine::Sqlite => prepare_sqlite(pool).await,
        Engine::Postgres => {
            prepare_postgres(pool).await;
            Ok(())
        }
    }
}

async fn prepare_sqlite(pool: &AnyPool) -> anyhow::Result<()> {
    let stride = ROWID_TENANT_STRIDE;
    let mut tx = pool.begin().await?;
    let exists: Option<i64> = sqlx::query_scalar(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'issue_search'",
    )
    .fetch_optional(&mut *tx)
    .await?;
    if exists.is_some() {
        return Ok(());
    }
    for statement in [
        "CREATE VIRTUAL TABLE issue_search USING fts5(title, description, tokenize = 'trigram')"
            .to_string(),
        format!(
            "INSERT INTO issue_search (rowid, title, description) \
             SELECT tenant_id * {stride} + id, title, description FROM issues"
        ),
        format!(
            "CREATE TRIGGER issue_search_insert AFTER INSERT ON issues BEGIN \
             INSERT INTO issue_search (rowid, title, description) \
             VALUES (NEW.tenant_id * {stride} + NEW.id, NEW.title, NEW.description); END"
        ),
        format!(
            "CREATE TRIGGER issue_search_update AFTER UPDATE OF title, description ON issues BEGIN \
             UPDATE issue_search SET title = NEW.title, description = NEW.description \
             WHERE rowid = NEW.tenant_id * {stride} + NEW.id; END"
        ),
        format!(
            "CREATE TRIGGER issue_search_delete AFTER DELETE ON issues BEGIN \
             DELETE FROM issue_search WHERE rowid = OLD.tenant_id * {stride} + OLD.id; END"
        ),
    ] {
        tx.execute(sqlx::AssertSqlSafe(statement))
            .await
            .context("setting up the issue search index (SQLite FTS5)")?;
    }
    tx.commit().await?;
    Ok(())
}

async fn prepare_postgres(pool: &AnyPool) {
    let statements = [
        "CREATE EXTENSION IF NOT EXISTS pg_trgm",
        "CREATE INDEX IF NOT EXISTS issues_title_trgm ON issues USING gin (lower(title) gin_trgm_ops)",
        "CREATE INDEX IF NOT EXISTS issues_description_trgm ON issues \
         USING gin (lower(description) gin_trgm_ops)",
        // New entries wait in a pending list of at most 64 kB, merged into the index in bulk:
        // merging each create's trigrams one by one cost about a tenth of the creates'
        // throughput, and every search reads the pending list, so it stays this small.
        "ALTER INDEX issues_title_trgm SET (fastupdate = on, gin_pending_list_limit = 64)",
        "ALTER INDEX issues_description_trgm SET (fastupdate = on, gin_pending_list_limit = 64)",
    ];
    for statement in statements {
        if let Err(error) = pool.execute(statement).await {
            tracing::warn!(%error, "issue search runs without a trigram index: {statement}");
            return;
        }
    }
}
