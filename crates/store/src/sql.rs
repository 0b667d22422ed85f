//! A small SQL builder for queries whose shape depends on the request (filters, ordering,
//! pagination). sqlx's `QueryBuilder<Any>` writes `?` placeholders, which PostgreSQL rejects;
//! this one writes `$1, $2, ...`, which both engines accept (sqlx binds SQLite's `$N` by number).

use sqlx::any::{AnyArguments, AnyRow};
use sqlx::query::{Query, QueryAs, QueryScalar};
use sqlx::{Any, AssertSqlSafe, FromRow};

#[derive(Debug, Clone)]
pub enum Arg {
    Int(i64),
    Text(String),
    Bool(bool),
    Float(f64),
    NullInt,
    NullText,
}

impl From<i64> for Arg {
    fn from(v: i64) -> Self {
        Arg::Int(v)
    }
}
impl From<bool> for Arg {
    fn from(v: bool) -> Self {
        Arg::Bool(v)
    }
}
impl From<f64> for Arg {
    fn from(v: f64) -> Self {
        Arg::Float(v)
    }
}
impl From<String> for Arg {
    fn from(v: String) -> Self {
        Arg::Text(v)
    }
}
impl From<&str> for Arg {
    fn from(v: &str) -> Self {
        Arg::Text(v.to_string())
    }
}
impl From<&String> for Arg {
    fn from(v: &String) -> Self {
        Arg::Text(v.clone())
    }
}
impl From<Option<i64>> for Arg {
    fn from(v: Option<i64>) -> Self {
        v.map_or(Arg::NullInt, Arg::Int)
    }
}
impl From<Option<String>> for Arg {
    fn from(v: Option<String>) -> Self {
        v.map_or(Arg::NullText, Arg::Text)
    }
}
impl From<Option<&str>> for Arg {
    fn from(v: Option<&str>) -> Self {
        v.map_or(Arg::NullText, |s| Arg::Text(s.to_string()))
    }
}

/// Binds every argument to any of sqlx's query kinds (they share `bind` but no trait).
macro_rules! bind_all {
    ($query:expr, $args:expr) => {
        $args.iter().fold($query, |q, arg| match arg {
            Arg::Int(v) => q.bind(*v),
            Arg::Text(v) => q.bind(v.clone()),
            Arg::Bool(v) => q.bind(i64::from(*v)),
            Arg::Float(v) => q.bind(*v),
            Arg::NullInt => q.bind(None::<i64>),
            Arg::NullText => q.bind(None::<String>),
        })
    };
}

#[derive(Debug, Default, Clone)]
pub struct Sql {
    text: String,
    args: Vec<Arg>,
    /// Sent unprepared, so the database plans it with its arguments (see [`Sql::plan_per_call`]).
    plan_per_call: bool,
}

impl Sql {
    pub fn new(text: &str) -> Self {
        Sql {
            text: text.to_string(),
            ..Sql::default()
        }
    }

    /// Plans this query with each call's arguments instead of caching one plan for all: for a
    /// `LIKE` pattern, whose best plan depends on how common the term is. PostgreSQL's cached
    /// plan for `%term%` walks the trigram index, which for a term in most rows visits them all.
    pub fn plan_per_call(&mut self) -> &mut Self {
        self.plan_per_call = true;
        self
    }

    pub fn push(&mut self, text: &str) -> &mut Self {
        self.text.push_str(text);
        self
    }

    /// Appends a placeholder for `value`.
    pub fn bind(&mut self, value: impl Into<Arg>) -> &mut Self {
        self.args.push(value.into());
        self.text.push('$');
        self.text.push_str(&self.args.len().to_string());
        self
    }

    /// Appends `$a, $b, ...` for a list (callers guard against an empty list).
    pub fn bind_list<T: Into<Arg>>(&mut self, values: impl IntoIterator<Item = T>) -> &mut Self {
        for (i, value) in values.into_iter().enumerate() {
            if i > 0 {
                self.text.push_str(", ");
            }
            self.bind(value);
        }
        self
    }

    /// Appends one row `($a, $b, ...)` of a multi-row `VALUES` list, after `, ` unless it is
    /// the list's first.
    pub fn push_row(&mut self, first: bool, values: impl IntoIterator<Item = Arg>) -> &mut Self {
        self.push(if first { "(" } else { ", (" });
        self.bind_list(values);
        self.push(")")
    }

    /// Keeps the rows (`id`, a column) that carry every one of `attributes` as custom
    /// attributes in `table` (`user_custom_attributes`, `project_custom_attributes`), whose
    /// `owner` column names them.
    pub fn push_custom_attributes(
        &mut self,
        id: &str,
        table: &str,
        owner: &str,
        tenant_id: i64,
        attributes: &[(String, String)],
    ) -> &mut Self {
        for (key, value) in attributes {
            self.push(&format!(
                " AND {id} IN (SELECT {owner} FROM {table} WHERE tenant_id = "
            ))
            .bind(tenant_id)
            .push(" AND key = ")
            .bind(key.as_str())
            .push(" AND value = ")
            .bind(value.as_str())
            .push(")");
        }
        self
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// `SELECT COUNT(*)` over this query, stopping at `cap` rows: lists report exact totals
    /// only up to GitLab's 10,000, so counting further is wasted work.
    pub fn count_capped(&self, cap: i64) -> Sql {
        let mut counted = Sql {
            text: format!("SELECT COUNT(*) FROM ({}", self.text),
            ..self.clone()
        };
        counted.push(" LIMIT ").bind(cap).push(") capped");
        counted
    }

    /// `EXPLAIN ANALYZE` of this query: what PostgreSQL did to answer it.
    #[cfg(test)]
    pub fn explained(&self) -> Sql {
        Sql {
            text: format!("EXPLAIN ANALYZE {}", self.text),
            ..self.clone()
        }
    }

    pub fn query(&self) -> Query<'_, Any, AnyArguments> {
        bind_all!(sqlx::query(AssertSqlSafe(self.text.as_str())), &self.args)
            .persistent(!self.plan_per_call)
    }

    pub fn query_as<T>(&self) -> QueryAs<'_, Any, T, AnyArguments>
    where
        T: for<'r> FromRow<'r, AnyRow>,
    {
        bind_all!(
            sqlx::query_as(AssertSqlSafe(self.text.as_str())),
            &self.args
        )
        .persistent(!self.plan_per_call)
    }

    pub fn query_scalar<T>(&self) -> QueryScalar<'_, Any, T, AnyArguments>
    where
        (T,): for<'r> FromRow<'r, AnyRow>,
    {
        bind_all!(
            sqlx::query_scalar(AssertSqlSafe(self.text.as_str())),
            &self.args
        )
        .persistent(!self.plan_per_call)
    }
}

/// `s` with the wildcards of `LIKE` (and the escape character) escaped, for patterns matched
/// with `ESCAPE '\'`.
pub fn escape_like(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered() {
        let mut sql = Sql::new("SELECT 1 WHERE a = ");
        sql.bind(1)
            .push(" AND b IN (")
            .bind_list(["x", "y"])
            .push(")");
        assert_eq!(sql.text(), "SELECT 1 WHERE a = $1 AND b IN ($2, $3)");
    }
}
