//! The one way the store writes a caller's chosen columns: a [`Changes`] set for one table,
//! each column at most once, which an insert or an update turns into SQL.
//!
//! The API decides which columns a request changes (often from tables of parameter names),
//! so a change set holds column names as `&'static str`. Each table lists the columns a
//! change may set ([`Table::COLUMNS`]); setting any other is a bug and panics, so a name
//! interpolated into SQL is always one of that list. A change set of one table cannot be
//! passed to another table's write.

use std::fmt;
use std::marker::PhantomData;

use super::sql::{Arg, Sql};

/// A table a [`Changes`] set writes.
pub trait Table {
    const NAME: &'static str;
    /// The columns a change may set, comma-separated: all but the keys and the columns every
    /// write of the table fills itself (such as `updated_at`).
    const COLUMNS: &'static str;
}

/// Column values for an insert or an update of `T`, in the order first set.
pub struct Changes<T: Table> {
    columns: Vec<(&'static str, Arg)>,
    table: PhantomData<T>,
}

impl<T: Table> Default for Changes<T> {
    fn default() -> Self {
        Changes {
            columns: Vec::new(),
            table: PhantomData,
        }
    }
}

impl<T: Table> fmt::Debug for Changes<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.columns).finish()
    }
}

impl<T: Table> Changes<T> {
    /// Sets `column` (replacing an earlier value of it).
    pub fn set(&mut self, column: &'static str, value: impl Into<Arg>) {
        assert!(
            T::COLUMNS.split(", ").any(|c| c == column),
            "{column} is not a column a change may set"
        );
        self.columns.retain(|(c, _)| *c != column);
        self.columns.push((column, value.into()));
    }

    pub fn get(&self, column: &str) -> Option<&Arg> {
        self.columns
            .iter()
            .find(|(c, _)| *c == column)
            .map(|(_, v)| v)
    }

    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// The columns set, in order.
    pub fn iter(&self) -> impl Iterator<Item = &(&'static str, Arg)> {
        self.columns.iter()
    }

    /// Appends `, column = $n` for each column set (after an update's first assignment).
    pub(crate) fn push_assignments(&self, sql: &mut Sql) {
        for (column, value) in &self.columns {
            sql.push(&format!(", {column} = ")).bind(value.clone());
        }
    }

    /// Appends `, column` for each column set (after an insert's first column).
    pub(crate) fn push_columns(&self, sql: &mut Sql) {
        for (column, _) in &self.columns {
            sql.push(", ").push(column);
        }
    }

    /// Appends `, $n` for each column set, in [`Changes::push_columns`]'s order.
    pub(crate) fn push_values(&self, sql: &mut Sql) {
        for (_, value) in &self.columns {
            sql.push(", ").bind(value.clone());
        }
    }

    /// `INSERT INTO table (<keys>, created_at, updated_at, <columns set>) VALUES (...)`, the
    /// timestamps `now`; the caller may append a `RETURNING` clause.
    pub(crate) fn insert_sql(&self, keys: &[(&str, i64)], now: i64) -> Sql {
        let names: Vec<&str> = keys.iter().map(|(name, _)| *name).collect();
        let mut sql = Sql::new(&format!(
            "INSERT INTO {} ({}, created_at, updated_at",
            T::NAME,
            names.join(", ")
        ));
        self.push_columns(&mut sql);
        sql.push(") VALUES (");
        for (_, key) in keys {
            sql.bind(*key).push(", ");
        }
        sql.bind(now).push(", ").bind(now);
        self.push_values(&mut sql);
        sql.push(")");
        sql
    }

    /// `UPDATE table SET updated_at = now, <columns set> WHERE <keys>`.
    pub(crate) fn update_sql(&self, keys: &[(&str, i64)], now: i64) -> Sql {
        let mut sql = Sql::new(&format!("UPDATE {} SET updated_at = ", T::NAME));
        sql.bind(now);
        self.push_assignments(&mut sql);
        for (i, (name, key)) in keys.iter().enumerate() {
            let joint = if i == 0 { " WHERE " } else { " AND " };
            sql.push(&format!("{joint}{name} = ")).bind(*key);
        }
        sql
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Things;

    impl Table for Things {
        const NAME: &'static str = "things";
        const COLUMNS: &'static str = "name, size";
    }

    #[test]
    fn a_column_is_set_once_with_its_last_value() {
        let mut changes = Changes::<Things>::default();
        changes.set("name", "a");
        changes.set("size", 1);
        changes.set("name", "b");
        let mut sql = Sql::new("UPDATE things SET updated_at = 0");
        changes.push_assignments(&mut sql);
        assert_eq!(
            sql.text(),
            "UPDATE things SET updated_at = 0, size = $1, name = $2"
        );
    }

    #[test]
    #[should_panic(expected = "not a column")]
    fn an_unlisted_column_is_refused() {
        Changes::<Things>::default().set("id", 1);
    }
}
