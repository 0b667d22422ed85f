//! Storage: one SQL code path over sqlx's `Any` driver for SQLite (the embedded default) and
//! PostgreSQL. Timestamps are stored as milliseconds since the epoch (BIGINT) and dates as
//! `YYYY-MM-DD` text, booleans as BIGINT 0/1 (read through [`Flag`]), so the same statements and the same row types serve both engines.
//!
//! Tenant data is reached only through [`TenantDb`], whose tenant id is fixed when it is made:
//! every query in the resource modules filters on it (`TenantDb::query*` and `TenantDb::sql`
//! bind it as `$1`), and nothing outside `store` sees a pool.
//!
//! Store calls fail with [`Error`], which tells unique-key conflicts apart. The store runs no
//! git and calls nothing above it (it is a crate of its own, which the server depends on): work
//! that spans the database and repositories is ordered in the server's `services`.

/// What every enum of `stored_names!` is: a closed set of names, for code that handles any of
/// them (parameters that take one, schemas that list them).
pub trait StoredName: Copy + 'static {
    fn name(self) -> &'static str;
}

/// A closed set of names stored in a text column: the enum, its names, and how rows decode it
/// and events serialize and read it back. Variants are listed narrowest or earliest first,
/// which their order follows.
macro_rules! stored_names {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            pub fn parse(text: &str) -> Option<$name> {
                match text {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl crate::StoredName for $name {
            fn name(self) -> &'static str {
                self.as_str()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                $name::parse(&text).ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        concat!("unknown ", stringify!($name), " {:?}"),
                        text
                    ))
                })
            }
        }

        impl sqlx::Type<sqlx::Any> for $name {
            fn type_info() -> sqlx::any::AnyTypeInfo {
                <String as sqlx::Type<sqlx::Any>>::type_info()
            }

            fn compatible(ty: &sqlx::any::AnyTypeInfo) -> bool {
                <String as sqlx::Type<sqlx::Any>>::compatible(ty)
            }
        }

        impl<'r> sqlx::Decode<'r, sqlx::Any> for $name {
            fn decode(value: sqlx::any::AnyValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
                let text = <&str as sqlx::Decode<sqlx::Any>>::decode(value)?;
                $name::parse(text).ok_or_else(|| {
                    format!(concat!("unknown ", stringify!($name), " {:?}"), text).into()
                })
            }
        }
    };
}

pub mod access_level;
pub mod backup;
pub mod changes;
pub mod error;
pub mod events;
pub mod hooks;
pub mod ids;
pub mod invalidation;
pub mod issue_filter;
pub mod issue_notes;
pub mod issue_search;
pub mod issues;
pub mod jobs;
pub mod keys;
pub mod labels;
pub mod listing;
pub mod members;
pub mod merge_request_filter;
pub mod merge_request_notes;
pub mod merge_requests;
pub mod milestones;
pub mod model;
pub mod namespaces;
pub mod noteables;
pub mod oauth;
mod outbox;
pub mod plugins;
pub mod project_shares;
pub mod project_state;
pub mod projects;
pub mod protected_branches;
pub mod protected_tags;
pub mod push_checks;
pub mod rate_limits;
mod redirects;
mod schema;
pub mod sessions;
pub mod settings;
pub mod sql;
mod startup_lock;
pub mod tenant_rows;
pub mod tenants;
pub mod tokens;
pub mod user_admin;
pub mod users;
pub mod webhooks;
pub mod window;

pub use error::{Error, Result};
pub use startup_lock::StartupLock;

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context;
use sqlx::any::{AnyArguments, AnyConnectOptions, AnyPoolOptions, AnyRow};
use sqlx::query::{Query, QueryAs, QueryScalar};
use sqlx::{Any, AnyPool, AssertSqlSafe, Executor, SqlSafeStr};

// The stored forms every resource module here uses (`super::now_ms`, `super::Flag`).
use crate::model::{Flag, now_ms};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

impl Engine {
    /// The engine behind a connection (inside a transaction, where no `TenantDb` is at hand).
    pub(crate) fn of(connection: &sqlx::AnyConnection) -> Engine {
        match connection.backend_name() {
            "PostgreSQL" => Engine::Postgres,
            _ => Engine::Sqlite,
        }
    }
}

/// The database: a read pool and a write pool. On SQLite the write pool has one connection,
/// so writers queue in-process instead of failing with SQLITE_BUSY; on PostgreSQL both are
/// the same pool.
#[derive(Clone)]
pub struct Db {
    read: AnyPool,
    write: AnyPool,
    engine: Engine,
    auth_generations: Arc<AuthGenerations>,
    /// Where committed changes are announced to the other processes (none on SQLite).
    bus: Option<Arc<dyn invalidation::Bus>>,
    /// This process's mark on its announcements.
    origin: u64,
    /// The PostgreSQL database's URL, for the connection that listens for announcements.
    postgres_url: Option<Arc<str>>,
    /// Statements sent through the pools, for tests that count what a page costs.
    statements: Arc<AtomicU64>,
}

/// How many tenants share one generation counter: a write in one tenant drops the cached
/// tokens of the few others on its stripe, never of the whole process.
const AUTH_STRIPES: usize = 64;

/// Generation counters of what the token cache holds (users, their identities, personal and
/// OAuth access tokens), one per stripe of tenants. The store advances a tenant's counter
/// after each committed write to those rows ([`TenantDb::auth_changed`]); a cache entry is
/// valid only while the counter it was read under is unchanged. Advancing *after* the commit
/// matters: a lookup that ran during the write may have read the old row, and it was tagged
/// with the older generation, so it is dropped.
struct AuthGenerations([AtomicU64; AUTH_STRIPES]);

impl AuthGenerations {
    fn stripe(&self, tenant_id: i64) -> &AtomicU64 {
        &self.0[tenant_id.rem_euclid(AUTH_STRIPES as i64) as usize]
    }
}

impl Default for AuthGenerations {
    fn default() -> Self {
        AuthGenerations(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

pub struct DbOptions<'a> {
    pub database_url: Option<&'a str>,
    pub data_dir: &'a Path,
    pub max_connections: u32,
}

/// The database `options` name: `--database-url`, or the SQLite file in the data directory
/// (created if missing).
fn database_url(options: &DbOptions<'_>) -> anyhow::Result<String> {
    match options.database_url {
        Some(url) if is_postgres(url) || url.starts_with("sqlite:") => Ok(url.to_string()),
        Some(url) => {
            anyhow::bail!("unsupported database URL {url:?}: use postgres://... or sqlite:...")
        }
        None => {
            std::fs::create_dir_all(options.data_dir).with_context(|| {
                format!("creating data directory {}", options.data_dir.display())
            })?;
            let path = options.data_dir.join("trellis.db");
            Ok(format!("sqlite://{}?mode=rwc", path.display()))
        }
    }
}

fn is_postgres(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// Waits until no other process is opening, migrating or bootstrapping the database `options`
/// name, and keeps the others waiting until the guard is dropped (`store/startup_lock.rs`).
pub async fn startup_lock(options: &DbOptions<'_>) -> anyhow::Result<StartupLock> {
    let url = database_url(options)?;
    let target = if is_postgres(&url) {
        startup_lock::LockTarget::Postgres(url)
    } else {
        startup_lock::LockTarget::sqlite(&url)?
    };
    target.acquire().await
}

/// A mark that tells this process's announcements from others' (`invalidation`).
fn process_origin() -> u64 {
    use std::hash::BuildHasher;
    std::hash::RandomState::new().hash_one((std::process::id(), now_ms()))
}

/// How often the WAL is copied back into the SQLite database file.
const CHECKPOINT_INTERVAL: Duration = Duration::from_millis(250);

/// Checkpoints the SQLite WAL from a reader connection every [`CHECKPOINT_INTERVAL`] until
/// the pool closes. SQLite's automatic checkpoint runs inside the commit that crosses its
/// threshold, and its copying and fsync then hold up every write queued behind the single
/// writer (creates/s on a 100,000-issue database: ~900 with it, ~1,100 with this). A passive
/// checkpoint waits for nobody; the writer keeps a far higher automatic threshold as a backstop.
fn spawn_checkpointer(read: AnyPool) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(CHECKPOINT_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if read.is_closed() {
                break;
            }
            if let Err(error) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
                .execute(&read)
                .await
            {
                tracing::warn!(%error, "SQLite checkpoint failed");
            }
        }
    });
}

impl Db {
    pub async fn connect(options: DbOptions<'_>) -> anyhow::Result<Db> {
        sqlx::any::install_default_drivers();
        let url = database_url(&options)?;
        if is_postgres(&url) {
            let pool = AnyPoolOptions::new()
                .max_connections(options.max_connections)
                .acquire_timeout(Duration::from_secs(10))
                .connect(&url)
                .await
                .context("connecting to PostgreSQL")?;
            return Ok(Db {
                read: pool.clone(),
                bus: Some(Arc::new(invalidation::PgNotify(pool.clone()))),
                write: pool,
                engine: Engine::Postgres,
                auth_generations: Arc::default(),
                origin: process_origin(),
                postgres_url: Some(url.into()),
                statements: Arc::default(),
            });
        }
        Self::connect_sqlite(&url, options.max_connections).await
    }

    async fn connect_sqlite(url: &str, max_connections: u32) -> anyhow::Result<Db> {
        let connect_options = AnyConnectOptions::from_str(url)?;
        let pool = |max: u32, writer: bool| {
            AnyPoolOptions::new()
                .max_connections(max)
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
                // An embedded database has no server that could drop a connection, and the
                // ping would cost every acquire a round trip to the connection's thread.
                .test_before_acquire(false)
                .after_connect(move |conn, _meta| {
                    Box::pin(async move {
                        // WAL lets readers run beside the single writer; NORMAL sync is safe with
                        // WAL. Reading the file through a memory map (up to 256 MiB) shares the
                        // kernel's page cache between connections instead of a read() per page.
                        conn.execute(
                            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
                             PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 10000; \
                             PRAGMA mmap_size = 268435456;",
                        )
                        .await?;
                        if writer {
                            // A backstop only: the checkpointer below keeps the WAL short.
                            conn.execute(
                                "PRAGMA wal_autocheckpoint = 10000; \
                                 PRAGMA journal_size_limit = 67108864;",
                            )
                            .await?;
                        }
                        Ok(())
                    })
                })
                .connect_with(connect_options.clone())
        };
        let write = pool(1, true).await.context("opening the SQLite database")?;
        let read = pool(max_connections.max(2), false)
            .await
            .context("opening the SQLite database")?;
        spawn_checkpointer(read.clone());
        Ok(Db {
            read,
            write,
            engine: Engine::Sqlite,
            auth_generations: Arc::default(),
            bus: None,
            origin: process_origin(),
            postgres_url: None,
            statements: Arc::default(),
        })
    }

    pub async fn migrate(&self) -> anyhow::Result<()> {
        sqlx::migrate!("./migrations")
            .run(&self.write)
            .await
            .context("running migrations")?;
        issue_search::prepare(&self.write, self.engine).await
    }

    pub fn engine(&self) -> Engine {
        self.engine
    }

    pub fn tenant(&self, tenant_id: i64) -> TenantDb {
        TenantDb {
            db: self.clone(),
            tenant_id,
        }
    }

    /// The read pool, for one statement: every statement is sent through it or the write pool
    /// (a transaction begun on the write pool as a whole), and taking either counts one.
    pub(crate) fn reader(&self) -> &AnyPool {
        self.statements.fetch_add(1, Ordering::Relaxed);
        &self.read
    }

    /// The write pool, for one statement or one transaction. Taking it invalidates nothing: a
    /// write that changes what a cache holds says so after it commits
    /// ([`TenantDb::auth_changed`]).
    pub(crate) fn writer(&self) -> &AnyPool {
        self.statements.fetch_add(1, Ordering::Relaxed);
        &self.write
    }

    /// How many statements (a transaction counting as one) this database has been sent since it
    /// was opened: what a test compares to tell that a page's cost does not grow with its
    /// length. One relaxed atomic add per statement keeps it on in production.
    pub fn statement_count(&self) -> u64 {
        self.statements.load(Ordering::Relaxed)
    }

    pub async fn close(&self) {
        self.read.close().await;
        self.write.close().await;
    }
}

/// The only way to reach one tenant's rows.
#[derive(Clone)]
pub struct TenantDb {
    db: Db,
    tenant_id: i64,
}

impl TenantDb {
    pub fn tenant_id(&self) -> i64 {
        self.tenant_id
    }

    /// [`Db::statement_count`] of the database this tenant is in (all tenants' statements).
    pub fn statement_count(&self) -> u64 {
        self.db.statement_count()
    }

    pub fn engine(&self) -> Engine {
        self.db.engine()
    }

    pub(crate) fn reader(&self) -> &AnyPool {
        self.db.reader()
    }

    pub(crate) fn writer(&self) -> &AnyPool {
        self.db.writer()
    }

    /// Publishes that this tenant's users, identities or access tokens changed: called by the
    /// store after such a write has committed (never before, never on a read), so the token
    /// caches of this process and of the others drop what they read earlier.
    pub(crate) async fn auth_changed(&self) {
        self.db.auth_changed_elsewhere(self.tenant_id);
        self.db
            .announce(invalidation::Invalidation::Auth {
                tenant_id: self.tenant_id,
            })
            .await;
    }

    /// Like [`TenantDb::auth_changed`] for this process only, after a write that records use
    /// (a token's `last_used_at`, a user's `last_activity_on`): another process's cached copy
    /// is only older, which costs it at most one more such write (a no-op on the row), so the
    /// others are not told and keep their caches.
    pub(crate) fn usage_recorded(&self) {
        self.db.auth_changed_elsewhere(self.tenant_id);
    }

    /// Announces `change` of this tenant's rows, committed, to the other processes.
    pub(crate) async fn announce(&self, change: invalidation::Invalidation) {
        self.db.announce(change).await;
    }

    /// Stamps the time on the tenant's tokens or users and then tells the token cache: `sql`
    /// takes the time as `$1`, the tenant as `$2` and `keys` from `$3`. The rows it changed.
    pub(crate) async fn stamp_auth(&self, sql: &'static str, keys: &[i64]) -> crate::Result<u64> {
        let mut query = sqlx::query(sql).bind(now_ms()).bind(self.tenant_id);
        for key in keys {
            query = query.bind(*key);
        }
        let done = query.execute(self.writer()).await?;
        self.auth_changed().await;
        Ok(done.rows_affected())
    }

    /// The tenant's row `id` of `table` (selecting `columns`), if there is one.
    pub(crate) async fn find_by_id<T>(
        &self,
        table: &str,
        columns: &str,
        id: i64,
    ) -> crate::Result<Option<T>>
    where
        T: for<'r> sqlx::FromRow<'r, AnyRow> + Send + Unpin,
    {
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {columns} FROM {table} WHERE tenant_id = $1 AND id = $2"
            )))
            .bind(id)
            .fetch_optional(self.reader())
            .await?)
    }

    /// The generation of this tenant's users and tokens, which the token cache tags entries
    /// with (read it *before* reading the rows).
    pub fn auth_generation(&self) -> u64 {
        self.db
            .auth_generations
            .stripe(self.tenant_id)
            .load(Ordering::Acquire)
    }

    /// A [`Sql`](sql::Sql) starting with `text`, which ends in `tenant_id = `, and this
    /// tenant's id bound there.
    pub(crate) fn sql(&self, text: &str) -> sql::Sql {
        let mut sql = sql::Sql::new(text);
        sql.bind(self.tenant_id);
        sql
    }

    /// `sqlx::query(sql)` with `$1` bound to this tenant's id: the tenant's statements filter
    /// on `tenant_id = $1`, and their own parameters start at `$2`.
    pub(crate) fn query<'q>(&self, sql: impl SqlSafeStr) -> Query<'q, Any, AnyArguments> {
        sqlx::query(sql).bind(self.tenant_id)
    }

    /// [`TenantDb::query`] reading rows of `T`.
    pub(crate) fn query_as<'q, T>(&self, sql: impl SqlSafeStr) -> QueryAs<'q, Any, T, AnyArguments>
    where
        T: for<'r> sqlx::FromRow<'r, AnyRow>,
    {
        sqlx::query_as(sql).bind(self.tenant_id)
    }

    /// [`TenantDb::query`] reading one column of `T`.
    pub(crate) fn query_scalar<'q, T>(
        &self,
        sql: impl SqlSafeStr,
    ) -> QueryScalar<'q, Any, T, AnyArguments>
    where
        (T,): for<'r> sqlx::FromRow<'r, AnyRow>,
    {
        sqlx::query_scalar(sql).bind(self.tenant_id)
    }

    /// The tenant's rows of `select` (`SELECT columns FROM table`) whose `key` is one of
    /// `ids`, then `tail` (an `ORDER BY`, or nothing): the one query a page of views makes to
    /// load each kind of related row.
    pub(crate) async fn rows_with_keys<T>(
        &self,
        select: &str,
        key: &str,
        ids: &[i64],
        tail: &str,
    ) -> crate::Result<Vec<T>>
    where
        T: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin,
    {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = sql::Sql::new(select);
        sql.push(" WHERE tenant_id = ")
            .bind(self.tenant_id)
            .push(&format!(" AND {key} IN ("))
            .bind_list(ids.iter().copied())
            .push(")")
            .push(tail);
        Ok(sql.query_as().fetch_all(self.reader()).await?)
    }
}

/// The row `id` of `table` (selecting `columns`), inside a transaction that just wrote it.
pub(crate) async fn row_by_id<'c, E, T>(
    executor: E,
    table: &str,
    columns: &str,
    tenant_id: i64,
    id: i64,
) -> crate::Result<T>
where
    E: Executor<'c, Database = Any>,
    T: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin,
{
    select_by_id(executor, table, columns, tenant_id, id, "").await
}

/// The row `id` of `table` (selecting `columns`), read inside `tx` before a change to it; on
/// PostgreSQL the row stays locked (`FOR UPDATE`) until the transaction ends, so the "before"
/// of the change's event is what the change replaced. SQLite's single writer already
/// serialises writes.
pub(crate) async fn locked_row<T>(
    tx: &mut sqlx::Transaction<'_, Any>,
    engine: Engine,
    table: &str,
    columns: &str,
    tenant_id: i64,
    id: i64,
) -> crate::Result<T>
where
    T: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin,
{
    let lock = match engine {
        Engine::Postgres => " FOR UPDATE",
        Engine::Sqlite => "",
    };
    select_by_id(&mut **tx, table, columns, tenant_id, id, lock).await
}

async fn select_by_id<'c, E, T>(
    executor: E,
    table: &str,
    columns: &str,
    tenant_id: i64,
    id: i64,
    lock: &str,
) -> crate::Result<T>
where
    E: Executor<'c, Database = Any>,
    T: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin,
{
    Ok(sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {columns} FROM {table} WHERE tenant_id = $1 AND id = $2{lock}"
    )))
    .bind(tenant_id)
    .bind(id)
    .fetch_one(executor)
    .await?)
}

/// The row of `table` (selecting `columns`) whose `key` columns hold the given values, as it
/// stands inside `tx`: what an event's `before` shows. `None` when there is no such row.
pub(crate) async fn row_in<T>(
    tx: &mut sqlx::Transaction<'_, Any>,
    table: &str,
    columns: &str,
    tenant_id: i64,
    key: &[(&str, sql::Arg)],
) -> crate::Result<Option<T>>
where
    T: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin,
{
    let mut sql = sql::Sql::new(&format!("SELECT {columns} FROM {table} WHERE tenant_id = "));
    sql.bind(tenant_id);
    for (column, value) in key {
        sql.push(&format!(" AND {column} = ")).bind(value.clone());
    }
    Ok(sql.query_as().fetch_optional(&mut **tx).await?)
}

impl Db {
    pub async fn ping(&self) -> crate::Result<()> {
        Ok(sqlx::query("SELECT 1")
            .execute(self.reader())
            .await
            .map(|_| ())?)
    }
}
