//! One process at a time migrates a database and makes its default tenant.
//!
//! A server and a command started together on a fresh database (`trellis serve` beside
//! `trellis tenant create`, as a container's entrypoint may run them) would otherwise both
//! apply the same migration, and one of them fail with "duplicate column" (SQLite has no
//! migration lock), or both find no `root` and one fail creating it (either engine). Measured
//! before this lock: four such starts in five failed one of the two processes.
//!
//! SQLite: an exclusive lock on `<database file>.lock`, which the kernel drops if the process
//! dies. PostgreSQL: a session advisory lock on a connection of its own (not one of the pool's,
//! which the migration needs), dropped with that connection.

use std::path::PathBuf;
use std::str::FromStr;

use anyhow::Context;
use sqlx::Connection;
use sqlx::postgres::PgConnection;
use sqlx::sqlite::SqliteConnectOptions;

/// The advisory lock key on PostgreSQL ("trellis" in ASCII, so that it tells what holds it).
const ADVISORY_KEY: i64 = 0x0074_7265_6c6c_6973;

/// What serializes the startup of processes sharing one database.
#[derive(Debug, Clone)]
pub(super) enum LockTarget {
    File(PathBuf),
    Postgres(String),
    /// An in-memory database: no other process can share it.
    Nothing,
}

impl LockTarget {
    /// The lock for a `sqlite:` URL: a file beside the database's.
    pub(super) fn sqlite(url: &str) -> anyhow::Result<LockTarget> {
        let options = SqliteConnectOptions::from_str(url)?;
        let file = options.get_filename();
        if url.contains(":memory:") || file.as_os_str().is_empty() || file == ":memory:" {
            return Ok(LockTarget::Nothing);
        }
        let mut lock = file.as_os_str().to_owned();
        lock.push(".lock");
        Ok(LockTarget::File(lock.into()))
    }

    /// Waits for the lock; it is held until the guard is dropped.
    pub(super) async fn acquire(&self) -> anyhow::Result<StartupLock> {
        let mut lock = StartupLock {
            _file: None,
            _session: None,
        };
        match self {
            LockTarget::File(path) => {
                let path = path.clone();
                let file = tokio::task::spawn_blocking(move || {
                    let file = std::fs::OpenOptions::new()
                        .create(true)
                        .truncate(false)
                        .write(true)
                        .open(&path)
                        .with_context(|| format!("opening {}", path.display()))?;
                    file.lock()
                        .with_context(|| format!("locking {}", path.display()))?;
                    anyhow::Ok(file)
                })
                .await??;
                lock._file = Some(file);
            }
            LockTarget::Postgres(url) => {
                let mut connection = PgConnection::connect(url)
                    .await
                    .context("connecting to PostgreSQL for the startup lock")?;
                sqlx::query("SELECT pg_advisory_lock($1)")
                    .bind(ADVISORY_KEY)
                    .execute(&mut connection)
                    .await
                    .context("taking the startup lock")?;
                lock._session = Some(connection);
            }
            LockTarget::Nothing => {}
        }
        Ok(lock)
    }
}

/// Held while this process migrates and bootstraps; released when dropped.
pub struct StartupLock {
    /// The file lock goes with the open file.
    _file: Option<std::fs::File>,
    /// The advisory lock goes with the session.
    _session: Option<PgConnection>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_file_is_locked_beside_itself_and_memory_not_at_all() {
        let target = LockTarget::sqlite("sqlite:///data/trellis.db?mode=rwc").unwrap();
        assert!(
            matches!(&target, LockTarget::File(p) if p == &PathBuf::from("/data/trellis.db.lock")),
            "{target:?}"
        );
        assert!(matches!(
            LockTarget::sqlite("sqlite::memory:").unwrap(),
            LockTarget::Nothing
        ));
    }

    #[tokio::test]
    async fn a_second_holder_waits_for_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let target = LockTarget::File(dir.path().join("trellis.db.lock"));
        let first = target.acquire().await.unwrap();
        let waiting = tokio::spawn({
            let target = target.clone();
            async move { target.acquire().await.map(|_| ()) }
        });
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert!(
            !waiting.is_finished(),
            "the second lock was taken beside the first"
        );
        drop(first);
        tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("the second lock once the first is dropped")
            .unwrap()
            .unwrap();
    }
}
