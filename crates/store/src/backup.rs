//! The database half of `trellis backup`: a consistent copy taken while the server runs, and
//! its loading into an empty database.
//!
//! SQLite is copied whole with `VACUUM INTO` (one read transaction: a snapshot). PostgreSQL is
//! read in one `REPEATABLE READ` read-only transaction, every table into a JSON-lines file of
//! its own (`row_to_json`), listed with its columns and their types in dependency order; a
//! restore runs the migrations, inserts the rows in that order (`json_populate_recordset`,
//! which parses each column back to its type) and moves the sequences past them. No `pg_dump`
//! is needed on either side.

use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use futures_util::TryStreamExt;
use serde::{Deserialize, Serialize};
use sqlx::{AssertSqlSafe, Executor, Row};

pub use crate::schema::ColumnDump;
use crate::schema::{self, quote};
use crate::{Db, DbOptions, Engine};

/// The SQLite copy's file name in a backup's database directory.
pub const SQLITE_FILE: &str = "trellis.db";
/// The PostgreSQL tables' list (order, columns) in a backup's database directory.
pub const TABLES_FILE: &str = "tables.json";
/// Rows inserted by one statement on restore.
const INSERT_BATCH: usize = 500;

/// A table of a PostgreSQL backup: its rows are in `file`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TableDump {
    pub name: String,
    pub file: String,
    pub columns: Vec<ColumnDump>,
    pub rows: u64,
}

/// The newest migration this build knows: a backup of a newer schema does not load here.
pub fn newest_migration() -> i64 {
    sqlx::migrate!("./migrations")
        .iter()
        .map(|migration| migration.version)
        .max()
        .unwrap_or(0)
}

/// The SQLite file `options` name; none for PostgreSQL.
pub fn sqlite_file(options: &DbOptions<'_>) -> anyhow::Result<Option<PathBuf>> {
    let url = crate::database_url(options)?;
    if crate::is_postgres(&url) {
        return Ok(None);
    }
    let path = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .unwrap_or(&url);
    let path = path.split('?').next().unwrap_or(path);
    Ok(Some(PathBuf::from(path)))
}

impl Db {
    /// The newest migration applied (`_sqlx_migrations`), 0 before any.
    pub async fn schema_version(&self) -> anyhow::Result<i64> {
        let version: Option<i64> = sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations")
            .fetch_one(self.reader())
            .await
            .context("reading the schema version")?;
        Ok(version.unwrap_or(0))
    }

    /// Whether the database holds no deployment: no tenant table yet, or no tenant in it (a
    /// restore loads only into such a database).
    pub async fn holds_no_deployment(&self) -> anyhow::Result<bool> {
        let exists_sql = match self.engine {
            Engine::Sqlite => {
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'tenants'"
            }
            Engine::Postgres => {
                "SELECT COUNT(*) FROM information_schema.tables \
                 WHERE table_schema = current_schema() AND table_name = 'tenants'"
            }
        };
        let tables: i64 = sqlx::query_scalar(exists_sql)
            .fetch_one(self.reader())
            .await?;
        if tables == 0 {
            return Ok(true);
        }
        let tenants: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tenants")
            .fetch_one(self.reader())
            .await?;
        Ok(tenants == 0)
    }

    /// Every project's `(tenant, id)`, all tenants: a restore makes the repositories of these
    /// only (a project created while a backup ran has a repository in it but no row).
    pub async fn project_keys(&self) -> anyhow::Result<BTreeSet<(i64, i64)>> {
        let rows = sqlx::query("SELECT tenant_id, id FROM projects")
            .fetch_all(self.reader())
            .await?;
        Ok(rows
            .into_iter()
            .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
            .collect::<Result<_, sqlx::Error>>()?)
    }

    /// Writes a consistent copy of the database into `dir` (which exists and is empty): the
    /// files it wrote, relative to `dir`.
    pub async fn back_up(&self, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
        match self.engine {
            Engine::Sqlite => {
                let file = dir.join(SQLITE_FILE);
                let target = file
                    .to_str()
                    .context("the backup path is not UTF-8")?
                    .replace('\'', "''");
                sqlx::query(AssertSqlSafe(format!("VACUUM INTO '{target}'")))
                    .execute(self.reader())
                    .await
                    .context("copying the SQLite database (VACUUM INTO)")?;
                Ok(vec![PathBuf::from(SQLITE_FILE)])
            }
            Engine::Postgres => self.dump_postgres(dir).await,
        }
    }

    async fn dump_postgres(&self, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
        let mut tx = self.reader().begin().await?;
        // Every table read below sees the one snapshot taken by the first query.
        tx.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .await?;
        let order = schema::tables_in_order(&mut tx, Engine::Postgres).await?;
        let mut tables = Vec::with_capacity(order.len());
        let mut written = Vec::with_capacity(order.len() + 1);
        for (index, name) in order.iter().enumerate() {
            let columns = schema::columns(&mut tx, Engine::Postgres, name).await?;
            let keys = schema::primary_key(&mut tx, Engine::Postgres, name).await?;
            let order_by = if keys.is_empty() {
                String::new()
            } else {
                format!(" ORDER BY {}", keys.join(", "))
            };
            let file = format!("{index:03}_{name}.jsonl");
            let mut out = std::io::BufWriter::new(
                std::fs::File::create(dir.join(&file))
                    .with_context(|| format!("creating {file}"))?,
            );
            let sql = format!(
                "SELECT row_to_json(t)::text FROM (SELECT * FROM {}{order_by}) t",
                quote(name)
            );
            let mut rows = 0u64;
            let mut stream = sqlx::query_scalar::<_, String>(AssertSqlSafe(sql)).fetch(&mut *tx);
            while let Some(line) = stream.try_next().await? {
                out.write_all(line.as_bytes())?;
                out.write_all(b"\n")?;
                rows += 1;
            }
            drop(stream);
            out.flush()?;
            tables.push(TableDump {
                name: name.clone(),
                file: file.clone(),
                columns,
                rows,
            });
            written.push(PathBuf::from(file));
        }
        tx.commit().await?;
        std::fs::write(dir.join(TABLES_FILE), serde_json::to_vec_pretty(&tables)?)?;
        written.push(PathBuf::from(TABLES_FILE));
        Ok(written)
    }

    /// Loads the PostgreSQL backup in `dir` into this database, which [`Db::migrate`] has
    /// just made (and [`Db::holds_no_deployment`] found empty): the rows of every table in
    /// dependency order, then every sequence moved past the ids it holds; one transaction.
    pub async fn restore_postgres(&self, dir: &Path) -> anyhow::Result<u64> {
        if self.engine != Engine::Postgres {
            bail!("a PostgreSQL backup loads into PostgreSQL only");
        }
        let tables: Vec<TableDump> = serde_json::from_slice(
            &std::fs::read(dir.join(TABLES_FILE)).context("reading the table list")?,
        )?;
        let mut tx = self.writer().begin().await?;
        let mut rows = 0;
        for table in &tables {
            let present: BTreeSet<String> = schema::columns(&mut tx, Engine::Postgres, &table.name)
                .await?
                .into_iter()
                .map(|column| column.name)
                .collect();
            let columns: Vec<String> = table
                .columns
                .iter()
                .filter(|column| present.contains(&column.name))
                .map(|column| quote(&column.name))
                .collect();
            let columns = columns.join(", ");
            let sql = format!(
                "INSERT INTO {name} ({columns}) SELECT {columns} \
                 FROM json_populate_recordset(NULL::{name}, $1::json)",
                name = quote(&table.name)
            );
            let file = std::fs::File::open(dir.join(&table.file))
                .with_context(|| format!("reading {}", table.file))?;
            let mut batch = Vec::with_capacity(INSERT_BATCH);
            for line in std::io::BufReader::new(file).lines() {
                batch.push(line?);
                if batch.len() == INSERT_BATCH {
                    rows += insert_rows(&mut tx, &sql, &table.name, &mut batch).await?;
                }
            }
            rows += insert_rows(&mut tx, &sql, &table.name, &mut batch).await?;
        }
        reset_sequences(&mut tx).await?;
        tx.commit().await?;
        Ok(rows)
    }
}

/// Inserts the rows of `batch` (JSON objects, one a line) with `sql`, and empties it.
async fn insert_rows(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    sql: &str,
    table: &str,
    batch: &mut Vec<String>,
) -> anyhow::Result<u64> {
    if batch.is_empty() {
        return Ok(0);
    }
    let array = format!("[{}]", batch.join(","));
    sqlx::query(AssertSqlSafe(sql.to_string()))
        .bind(array)
        .execute(&mut **tx)
        .await
        .with_context(|| format!("loading the rows of {table}"))?;
    let count = batch.len() as u64;
    batch.clear();
    Ok(count)
}

/// Moves every sequence owned by a column (serial and identity columns) past the largest
/// value that column holds.
async fn reset_sequences(tx: &mut sqlx::Transaction<'_, sqlx::Any>) -> anyhow::Result<()> {
    let owned = sqlx::query(
        "SELECT table_name::text, column_name::text FROM information_schema.columns \
         WHERE table_schema = current_schema() \
         AND (column_default LIKE 'nextval(%' OR is_identity = 'YES')",
    )
    .fetch_all(&mut **tx)
    .await?;
    for row in owned {
        let table: String = row.try_get(0)?;
        let column: String = row.try_get(1)?;
        let sql = format!(
            "SELECT setval(pg_get_serial_sequence($1, $2), COALESCE(MAX({c}), 0) + 1, false) \
             FROM {t}",
            c = quote(&column),
            t = quote(&table)
        );
        sqlx::query(AssertSqlSafe(sql))
            .bind(quote(&table))
            .bind(column)
            .execute(&mut **tx)
            .await
            .with_context(|| format!("resetting the sequence of {table}"))?;
    }
    Ok(())
}
