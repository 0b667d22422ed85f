//! What the live schema says about its tables, on either engine: the tables in the order
//! their foreign keys allow rows to be inserted, their columns and their primary keys. Copies
//! of rows (`backup`, `tenant_rows`) read it rather than a list kept by hand, so a table added
//! by a migration is copied without anyone remembering to.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::bail;
use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::Engine;

pub(crate) type Tx<'a> = sqlx::Transaction<'a, sqlx::Any>;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ColumnDump {
    pub name: String,
    /// PostgreSQL's `information_schema.columns.data_type` or SQLite's declared type: what
    /// the value in each JSON line is parsed as.
    pub data_type: String,
}

impl ColumnDump {
    /// Whether the column holds integers (every other column of the schema holds text).
    pub fn is_integer(&self) -> bool {
        self.data_type.to_ascii_lowercase().contains("int")
    }
}

/// The schema's tables (the migrations' bookkeeping aside), each after the tables its
/// foreign keys reference, ties by name.
pub(crate) async fn tables_in_order(
    tx: &mut Tx<'_>,
    engine: Engine,
) -> anyhow::Result<Vec<String>> {
    let (names_sql, references_sql) = match engine {
        Engine::Postgres => (
            "SELECT table_name::text FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' \
             AND table_name <> '_sqlx_migrations' ORDER BY table_name",
            "SELECT child.relname::text, parent.relname::text FROM pg_constraint k \
             JOIN pg_class child ON child.oid = k.conrelid \
             JOIN pg_class parent ON parent.oid = k.confrelid \
             WHERE k.contype = 'f' AND k.connamespace = current_schema()::regnamespace",
        ),
        Engine::Sqlite => (
            "SELECT name FROM sqlite_master WHERE type = 'table' \
             AND name NOT LIKE 'sqlite_%' AND name <> '_sqlx_migrations' ORDER BY name",
            "SELECT m.name, f.\"table\" FROM sqlite_master m \
             JOIN pragma_foreign_key_list(m.name) f WHERE m.type = 'table'",
        ),
    };
    let names: Vec<String> = sqlx::query_scalar(names_sql).fetch_all(&mut **tx).await?;
    let references: Vec<(String, String)> = sqlx::query(references_sql)
        .fetch_all(&mut **tx)
        .await?
        .into_iter()
        .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
        .collect::<Result<_, sqlx::Error>>()?;
    let mut parents: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (child, parent) in &references {
        if child != parent {
            parents.entry(child).or_default().insert(parent);
        }
    }
    let mut ordered: Vec<String> = Vec::with_capacity(names.len());
    let mut placed: BTreeSet<&str> = BTreeSet::new();
    while ordered.len() < names.len() {
        let ready = names.iter().find(|name| {
            !placed.contains(name.as_str())
                && parents
                    .get(name.as_str())
                    .is_none_or(|needed| needed.iter().all(|parent| placed.contains(parent)))
        });
        let Some(ready) = ready else {
            bail!("the tables' foreign keys form a cycle");
        };
        placed.insert(ready);
        ordered.push(ready.clone());
    }
    Ok(ordered)
}

/// The columns of `table` a row is written with (generated columns are recomputed).
pub(crate) async fn columns(
    tx: &mut Tx<'_>,
    engine: Engine,
    table: &str,
) -> anyhow::Result<Vec<ColumnDump>> {
    let sql = match engine {
        Engine::Postgres => {
            "SELECT column_name::text, data_type::text FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = $1 AND is_generated = 'NEVER' \
             ORDER BY ordinal_position"
        }
        Engine::Sqlite => "SELECT name, type FROM pragma_table_info($1) ORDER BY cid",
    };
    let rows = sqlx::query(sql).bind(table).fetch_all(&mut **tx).await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            Ok(ColumnDump {
                name: row.try_get(0)?,
                data_type: row.try_get(1)?,
            })
        })
        .collect::<Result<_, sqlx::Error>>()?)
}

/// The primary key's columns of `table`, quoted, in key order: rows are written in that
/// order, so a row referencing an earlier one of its own table (a subgroup's parent) follows it.
pub(crate) async fn primary_key(
    tx: &mut Tx<'_>,
    engine: Engine,
    table: &str,
) -> anyhow::Result<Vec<String>> {
    let sql = match engine {
        Engine::Postgres => {
            "SELECT a.attname::text FROM pg_index i \
             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) \
             WHERE i.indrelid = (quote_ident(current_schema()) || '.' || quote_ident($1))::regclass \
             AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)"
        }
        Engine::Sqlite => "SELECT name FROM pragma_table_info($1) WHERE pk > 0 ORDER BY pk",
    };
    let names: Vec<String> = sqlx::query_scalar(sql)
        .bind(table)
        .fetch_all(&mut **tx)
        .await?;
    Ok(names.iter().map(|name| quote(name)).collect())
}

/// `name` as a quoted SQL identifier.
pub(crate) fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
