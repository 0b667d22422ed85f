//! The database half of `trellis tenant export` and `import`: one tenant's rows out of every
//! table that has a `tenant_id`, as JSON lines any engine reads, and their loading into
//! another deployment under a new tenant.
//!
//! Ids inside a tenant are the tenant's own (`id_sequences`), so its rows keep them: only
//! `tenant_id` changes on the way in, and every reference between the rows, and every id a
//! client stored, stays valid.

use std::io::{BufRead, Write};
use std::path::Path;

use anyhow::{Context, bail};
use futures_util::TryStreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::{AssertSqlSafe, Executor, Row};

use crate::invalidation::Invalidation;
use crate::schema::{self, ColumnDump, quote};
use crate::tenants::{TenantRow, insert_tenant_row};
use crate::{Db, Engine};

/// Bind parameters one insert may carry (SQLite's limit is 32,766, PostgreSQL's 65,535).
const MAX_BIND_PARAMETERS: usize = 30_000;
const MAX_BATCH_ROWS: usize = 100;

/// One table of a tenant's rows: `file` holds one JSON array a line, the row's values in the
/// order of `columns` (`tenant_id` left out).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TenantTable {
    pub name: String,
    pub file: String,
    pub columns: Vec<ColumnDump>,
    pub rows: u64,
}

/// Decides what becomes of each row on its way out or in: it may change the values, and
/// drops the row by answering `false`.
pub trait RowFilter {
    fn filter(
        &mut self,
        table: &str,
        columns: &[ColumnDump],
        row: &mut [Value],
    ) -> anyhow::Result<bool>;
}

impl Db {
    /// Writes the rows of tenant `tenant_id` into `dir`, one file a table, as one consistent
    /// snapshot while the server runs; tables in `skipped` are left out whole.
    pub async fn export_tenant_rows(
        &self,
        tenant_id: i64,
        dir: &Path,
        skipped: &[&str],
        filter: &mut dyn RowFilter,
    ) -> anyhow::Result<Vec<TenantTable>> {
        let mut tx = self.reader().begin().await?;
        if self.engine == Engine::Postgres {
            // Every table read below sees the one snapshot taken by the first query; on
            // SQLite (WAL) a read transaction is such a snapshot already.
            tx.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                .await?;
        }
        let mut tables = Vec::new();
        for name in schema::tables_in_order(&mut tx, self.engine).await? {
            if skipped.contains(&name.as_str()) {
                continue;
            }
            let mut columns = schema::columns(&mut tx, self.engine, &name).await?;
            let Some(tenant_column) = columns.iter().position(|c| c.name == "tenant_id") else {
                continue;
            };
            columns.remove(tenant_column);
            let keys = schema::primary_key(&mut tx, self.engine, &name).await?;
            let selected: Vec<String> = columns.iter().map(|c| quote(&c.name)).collect();
            let sql = format!(
                "SELECT {} FROM {} WHERE tenant_id = $1 ORDER BY {}",
                selected.join(", "),
                quote(&name),
                keys.join(", ")
            );
            let file = format!("{:03}_{name}.jsonl", tables.len());
            let mut out = std::io::BufWriter::new(
                std::fs::File::create(dir.join(&file))
                    .with_context(|| format!("creating {file}"))?,
            );
            let mut rows = 0u64;
            let mut stream = sqlx::query(AssertSqlSafe(sql))
                .bind(tenant_id)
                .fetch(&mut *tx);
            while let Some(row) = stream.try_next().await? {
                let mut values = columns
                    .iter()
                    .enumerate()
                    .map(|(index, column)| read_value(&row, index, column))
                    .collect::<Result<Vec<_>, sqlx::Error>>()
                    .with_context(|| format!("reading a row of {name}"))?;
                if filter.filter(&name, &columns, &mut values)? {
                    serde_json::to_writer(&mut out, &values)?;
                    out.write_all(b"\n")?;
                    rows += 1;
                }
            }
            drop(stream);
            out.flush()?;
            tables.push(TenantTable {
                name,
                file,
                columns,
                rows,
            });
        }
        tx.commit().await?;
        Ok(tables)
    }

    /// Makes a tenant answering `host` and loads the rows of `tables` (files in `dir`) into
    /// it, in one transaction: either all of it is there, or nothing (not even the tenant).
    /// `before_commit` runs last inside the transaction (the caller puts the tenant's files
    /// in place); its failure takes the rows back.
    pub async fn import_tenant_rows(
        &self,
        host: &str,
        dir: &Path,
        tables: &[TenantTable],
        filter: &mut dyn RowFilter,
        before_commit: impl AsyncFnOnce(&TenantRow) -> anyhow::Result<()>,
    ) -> anyhow::Result<TenantRow> {
        // The first statement writes, so SQLite takes the write lock at once (waiting for a
        // running server's write under `busy_timeout`) rather than failing to upgrade later.
        let mut tx = self.writer().begin().await?;
        let tenant = insert_tenant_row(&mut *tx, host).await?;
        let order = schema::tables_in_order(&mut tx, self.engine).await?;
        if let Some(unknown) = tables.iter().find(|t| !order.contains(&t.name)) {
            bail!(
                "the archive has a table this deployment does not: {}",
                unknown.name
            );
        }
        for name in &order {
            let Some(table) = tables.iter().find(|t| &t.name == name) else {
                continue;
            };
            let present = schema::columns(&mut tx, self.engine, name).await?;
            let columns = table
                .columns
                .iter()
                .map(|column| {
                    present
                        .iter()
                        .find(|p| p.name == column.name)
                        .cloned()
                        .with_context(|| {
                            format!("{name}.{} is not in this deployment's schema", column.name)
                        })
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let batch_rows = (MAX_BIND_PARAMETERS / columns.len().max(1)).clamp(1, MAX_BATCH_ROWS);
            let file = std::fs::File::open(dir.join(&table.file))
                .with_context(|| format!("reading {}", table.file))?;
            let mut batch: Vec<Vec<Value>> = Vec::with_capacity(batch_rows);
            for line in std::io::BufReader::new(file).lines() {
                let mut values: Vec<Value> = serde_json::from_str(&line?)
                    .with_context(|| format!("a row of {name} that is not a JSON array"))?;
                if values.len() != columns.len() {
                    bail!(
                        "a row of {name} has {} values for {} columns",
                        values.len(),
                        columns.len()
                    );
                }
                if filter.filter(name, &columns, &mut values)? {
                    batch.push(values);
                }
                if batch.len() == batch_rows {
                    insert_rows(&mut tx, tenant.id, name, &columns, &mut batch).await?;
                }
            }
            insert_rows(&mut tx, tenant.id, name, &columns, &mut batch).await?;
        }
        before_commit(&tenant).await?;
        tx.commit().await?;
        self.announce(Invalidation::Tenants).await;
        Ok(tenant)
    }
}

/// Column `index` of `row` as JSON: a number, a string or null.
fn read_value(
    row: &sqlx::any::AnyRow,
    index: usize,
    column: &ColumnDump,
) -> Result<Value, sqlx::Error> {
    Ok(if column.is_integer() {
        row.try_get::<Option<i64>, _>(index)?
            .map_or(Value::Null, Value::from)
    } else {
        row.try_get::<Option<String>, _>(index)?
            .map_or(Value::Null, Value::from)
    })
}

/// Inserts the rows of `batch` into `table` of tenant `tenant_id` in one statement, and
/// empties it.
async fn insert_rows(
    tx: &mut schema::Tx<'_>,
    tenant_id: i64,
    table: &str,
    columns: &[ColumnDump],
    batch: &mut Vec<Vec<Value>>,
) -> anyhow::Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = columns.iter().map(|c| quote(&c.name)).collect();
    let mut next_parameter = 0;
    let tuples: Vec<String> = batch
        .iter()
        .map(|_| {
            let parameters: Vec<String> = columns
                .iter()
                .map(|_| {
                    next_parameter += 1;
                    format!("${next_parameter}")
                })
                .collect();
            format!("({tenant_id}, {})", parameters.join(", "))
        })
        .collect();
    let sql = format!(
        "INSERT INTO {} (tenant_id, {}) VALUES {}",
        quote(table),
        names.join(", "),
        tuples.join(", ")
    );
    let mut query = sqlx::query(AssertSqlSafe(sql));
    for row in batch.iter() {
        for (value, column) in row.iter().zip(columns) {
            query = match (value, column.is_integer()) {
                (Value::Null, true) => query.bind(None::<i64>),
                (Value::Null, false) => query.bind(None::<String>),
                (Value::Number(number), true) => {
                    query.bind(number.as_i64().with_context(|| {
                        format!("{table}.{} holds {number}, not an integer", column.name)
                    })?)
                }
                (Value::String(text), false) => query.bind(text.clone()),
                (other, _) => bail!(
                    "{table}.{} holds {other}, which is not a {}",
                    column.name,
                    column.data_type
                ),
            };
        }
    }
    query
        .execute(&mut **tx)
        .await
        .with_context(|| format!("loading the rows of {table}"))?;
    batch.clear();
    Ok(())
}
