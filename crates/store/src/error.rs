//! What a store call fails with. A unique index refusing a row is told apart from every other
//! database failure, since callers answer it ("has already been taken") instead of failing.

use sqlx::error::{DatabaseError, ErrorKind};

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A unique index refused the row. Unique indexes are named `<table>_<column>_unique`;
    /// [`Error::conflicts_on`] tells which one.
    #[error("unique key conflict: {0}")]
    Conflict(Box<dyn DatabaseError>),
    #[error(transparent)]
    Sql(sqlx::Error),
}

impl From<sqlx::Error> for Error {
    fn from(error: sqlx::Error) -> Self {
        match error {
            sqlx::Error::Database(db) if db.kind() == ErrorKind::UniqueViolation => {
                Error::Conflict(db)
            }
            other => Error::Sql(other),
        }
    }
}

impl Error {
    /// Whether a unique index refused the row.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Conflict(_))
    }

    /// Whether the pool was closed under the call: the server is shutting down.
    pub fn is_pool_closed(&self) -> bool {
        matches!(self, Error::Sql(sqlx::Error::PoolClosed))
    }

    /// Whether the unique index `<table>_<column>_unique` refused the row.
    pub fn conflicts_on(&self, table: &str, column: &str) -> bool {
        let Error::Conflict(db) = self else {
            return false;
        };
        // PostgreSQL names the index; SQLite lists the columns ("UNIQUE constraint failed: t.a, t.b").
        db.constraint() == Some(&format!("{table}_{column}_unique"))
            || db.message().contains(&format!("{table}.{column}"))
    }

    /// The label of the first of `indexes` (`(table, column, label)` each) whose unique index
    /// refused the row.
    pub fn conflict_label<'a>(&self, indexes: &[(&str, &str, &'a str)]) -> Option<&'a str> {
        indexes
            .iter()
            .find(|(table, column, _)| self.conflicts_on(table, column))
            .map(|(_, _, label)| *label)
    }
}
