//! The page-and-count pair behind every list endpoint: the same rows (`FROM table` and a
//! `WHERE` clause written once, `scope`) read one window at a time, and counted no further
//! than a cap (GitLab reports exact totals only up to 10,000).

use sqlx::FromRow;
use sqlx::any::AnyRow;

use super::TenantDb;
use super::sql::Sql;
use super::window::Window;

impl TenantDb {
    /// One window of `SELECT columns FROM from` where `scope`; `alias` prefixes the window's
    /// columns (`"p."` for `projects p`, `""` without an alias).
    pub(crate) async fn page<T>(
        &self,
        columns: &str,
        from: &str,
        scope: impl FnOnce(&mut Sql),
        window: &Window,
        alias: &str,
    ) -> crate::Result<Vec<T>>
    where
        T: for<'r> FromRow<'r, AnyRow> + Send + Unpin,
    {
        let mut sql = Sql::new(&format!("SELECT {columns} FROM {from}"));
        scope(&mut sql);
        window.apply_on(&mut sql, alias);
        Ok(sql.query_as().fetch_all(self.reader()).await?)
    }

    /// How many rows of `from` match `scope`, counting no further than `cap`.
    pub(crate) async fn count_up_to(
        &self,
        from: &str,
        scope: impl FnOnce(&mut Sql),
        cap: i64,
    ) -> crate::Result<i64> {
        let mut sql = Sql::new(&format!("SELECT 1 FROM {from}"));
        scope(&mut sql);
        Ok(sql
            .count_capped(cap)
            .query_scalar()
            .fetch_one(self.reader())
            .await?)
    }
}
