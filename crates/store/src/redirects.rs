//! The old full paths of moved and renamed projects (GitLab's `redirect_routes`). A move
//! records the paths it leaves in the move's own transaction; a project or namespace that
//! takes a path again releases it, and a deleted project's paths go with it.

use super::sql::{Arg, Sql};
use super::{TenantDb, now_ms};

type Tx<'t> = sqlx::Transaction<'t, sqlx::Any>;

/// Records the current path of each project `filter` (on `p`, the project, and `n`, its
/// namespace; `$3` is `value`) selects, which a move is about to leave. The WHERE clause also
/// keeps SQLite from reading ON CONFLICT as part of the join.
async fn record_moves(
    tx: &mut Tx<'_>,
    tenant_id: i64,
    filter: &'static str,
    value: impl Into<Arg>,
) -> crate::Result<()> {
    let mut sql = Sql::new(
        "INSERT INTO redirect_routes (tenant_id, path_lower, project_id, created_at) \
         SELECT p.tenant_id, n.full_path_lower || '/' || p.path_lower, p.id, ",
    );
    sql.bind(now_ms())
        .push(
            " FROM projects p JOIN namespaces n ON n.tenant_id = p.tenant_id AND n.id = p.namespace_id \
             WHERE p.tenant_id = ",
        )
        .bind(tenant_id)
        .push(" AND ")
        .push(filter)
        .bind(value.into())
        .push(
            " ON CONFLICT (tenant_id, path_lower) DO UPDATE SET project_id = excluded.project_id, \
             created_at = excluded.created_at",
        );
    Ok(sql.query().execute(&mut **tx).await.map(|_| ())?)
}

/// Records the project's current path, which a move is about to leave.
pub(super) async fn record_project_move(
    tx: &mut Tx<'_>,
    tenant_id: i64,
    project_id: i64,
) -> crate::Result<()> {
    record_moves(tx, tenant_id, "p.id = ", project_id).await
}

/// Records the current paths of every project in the namespace whose traversal is
/// `traversal` and in its descendants, which a rename of that namespace is about to leave.
pub(super) async fn record_subtree_move(
    tx: &mut Tx<'_>,
    tenant_id: i64,
    traversal: &str,
) -> crate::Result<()> {
    record_moves(tx, tenant_id, "n.traversal LIKE ", format!("{traversal}%")).await
}

/// Releases the path the project now has (after its creation or a move).
pub(super) async fn release_project_path(
    tx: &mut Tx<'_>,
    tenant_id: i64,
    project_id: i64,
) -> crate::Result<()> {
    let full_path: String = sqlx::query_scalar(
        "SELECT n.full_path_lower || '/' || p.path_lower FROM projects p \
         JOIN namespaces n ON n.tenant_id = p.tenant_id AND n.id = p.namespace_id \
         WHERE p.tenant_id = $1 AND p.id = $2",
    )
    .bind(tenant_id)
    .bind(project_id)
    .fetch_one(&mut **tx)
    .await?;
    release_path(tx, tenant_id, &full_path).await
}

/// Releases `full_path` and every path below it, now that a project or namespace is there.
pub(super) async fn release_path(
    tx: &mut Tx<'_>,
    tenant_id: i64,
    full_path: &str,
) -> crate::Result<()> {
    let path = full_path.to_lowercase();
    let below = format!("{path}/");
    // A prefix compared by SUBSTR, since `_` in a path would be a LIKE wildcard.
    Ok(sqlx::query(
        "DELETE FROM redirect_routes WHERE tenant_id = $1 \
         AND (path_lower = $2 OR SUBSTR(path_lower, 1, CAST($3 AS INTEGER)) = $4)",
    )
    .bind(tenant_id)
    .bind(&path)
    .bind(below.chars().count() as i64)
    .bind(&below)
    .execute(&mut **tx)
    .await
    .map(|_| ())?)
}

impl TenantDb {
    /// The project that left `full_path` (case-insensitively), if one did and no project or
    /// namespace has taken the path since.
    pub async fn project_moved_from(&self, full_path: &str) -> crate::Result<Option<i64>> {
        Ok(self
            .query_scalar(
                "SELECT project_id FROM redirect_routes WHERE tenant_id = $1 AND path_lower = $2",
            )
            .bind(full_path.to_lowercase())
            .fetch_optional(self.reader())
            .await?)
    }
}
