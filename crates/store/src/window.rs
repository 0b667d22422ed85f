//! The ordering and slice of a list query: offset pages or keyset (`id_after`/`id_before`).

use super::sql::Sql;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Asc,
    Desc,
}

impl Direction {
    fn sql(self) -> &'static str {
        match self {
            Direction::Asc => "ASC",
            Direction::Desc => "DESC",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Window {
    /// A column from the caller's allow-list, never user text.
    pub order_by: &'static str,
    pub direction: Direction,
    /// Rows to fetch: one more than a page, so the caller learns whether a next page exists.
    pub limit: i64,
    pub offset: i64,
    pub id_after: Option<i64>,
    pub id_before: Option<i64>,
}

impl Window {
    /// The first `limit` rows by ascending id: a fixed slice, not a page a client asked for.
    pub fn first_by_id(limit: i64) -> Window {
        Window {
            order_by: "id",
            direction: Direction::Asc,
            limit,
            offset: 0,
            id_after: None,
            id_before: None,
        }
    }

    /// Appends the keyset bounds (as `AND` terms: the query already has its `WHERE`), the
    /// ordering with `id` as tie-breaker, and the limit and offset, for a query whose table
    /// has the alias `prefix` (like `"i."`; empty for none).
    pub fn apply_on(&self, sql: &mut Sql, prefix: &str) {
        let order = format!("{prefix}{}", self.order_by);
        self.apply_to(sql, &order, &format!("{prefix}id"));
    }

    /// The same, naming the columns that stand for the order column and `id` (a query that
    /// walks another table's copies of them, like `issue_labels`).
    pub fn apply_to(&self, sql: &mut Sql, order: &str, id: &str) {
        if let Some(after) = self.id_after {
            sql.push(&format!(" AND {id} > ")).bind(after);
        }
        if let Some(before) = self.id_before {
            sql.push(&format!(" AND {id} < ")).bind(before);
        }
        let direction = self.direction.sql();
        sql.push(&format!(" ORDER BY {order} {direction}"));
        if self.order_by != "id" {
            sql.push(&format!(", {id} {direction}"));
        }
        sql.push(" LIMIT ").bind(self.limit);
        if self.offset > 0 {
            sql.push(" OFFSET ").bind(self.offset);
        }
    }
}
