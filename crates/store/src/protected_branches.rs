//! Protected branches and their access levels. Each change and its domain event are written
//! in one transaction.

use sqlx::{Any, AssertSqlSafe, Transaction};

use super::ids::{next_id, next_ids};
use super::sql::{Arg, Sql};
use super::{Result, TenantDb, now_ms, outbox};
use crate::events::{Event, EventKind};
use crate::model::protected_branches::{AccessLevelRow, ProtectedBranch, ProtectedBranchRow};

const BRANCH_COLUMNS: &str = "id, project_id, name, allow_force_push, code_owner_approval_required";
const LEVEL_COLUMNS: &str = "id, protected_branch_id, kind, access_level";

/// A protected branch to create. `levels` are `(kind, access_level)` pairs.
pub struct NewProtectedBranch<'a> {
    pub name: &'a str,
    pub allow_force_push: bool,
    pub code_owner_approval_required: bool,
    pub levels: Vec<(&'static str, i64)>,
}

/// What a PATCH changes: flags when given, access levels added, changed (`(id, level)`) and
/// removed (ids of this branch's levels; others are ignored).
#[derive(Default)]
pub struct ProtectedBranchUpdate {
    pub allow_force_push: Option<bool>,
    pub code_owner_approval_required: Option<bool>,
    pub add: Vec<(&'static str, i64)>,
    pub change: Vec<(i64, i64)>,
    pub remove: Vec<i64>,
}

impl TenantDb {
    /// A project's protected branches with their levels, oldest first.
    pub async fn protected_branches(&self, project_id: i64) -> crate::Result<Vec<ProtectedBranch>> {
        let rows: Vec<ProtectedBranchRow> = self
            .query_as(AssertSqlSafe(format!(
                "SELECT {BRANCH_COLUMNS} FROM protected_branches WHERE tenant_id = $1 \
                 AND project_id = $2 ORDER BY id"
            )))
            .bind(project_id)
            .fetch_all(self.reader())
            .await?;
        self.with_levels(rows).await
    }

    /// The protected branch named exactly `name` (a pattern is named by its pattern).
    pub async fn protected_branch(
        &self,
        project_id: i64,
        name: &str,
    ) -> crate::Result<Option<ProtectedBranch>> {
        let row: Option<ProtectedBranchRow> = self
            .query_as(AssertSqlSafe(format!(
                "SELECT {BRANCH_COLUMNS} FROM protected_branches WHERE tenant_id = $1 \
                 AND project_id = $2 AND name = $3"
            )))
            .bind(project_id)
            .bind(name)
            .fetch_optional(self.reader())
            .await?;
        Ok(self.with_levels(row.into_iter().collect()).await?.pop())
    }

    async fn with_levels(
        &self,
        rows: Vec<ProtectedBranchRow>,
    ) -> crate::Result<Vec<ProtectedBranch>> {
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        let levels: Vec<AccessLevelRow> = self
            .rows_with_keys(
                &format!("SELECT {LEVEL_COLUMNS} FROM protected_branch_access_levels"),
                "protected_branch_id",
                &ids,
                " ORDER BY id",
            )
            .await?;
        Ok(rows
            .into_iter()
            .map(|row| ProtectedBranch {
                access_levels: levels
                    .iter()
                    .filter(|l| l.protected_branch_id == row.id)
                    .cloned()
                    .collect(),
                row,
            })
            .collect())
    }

    /// Protects `new.name` in a project as `actor` (none when the server does it, as for the
    /// default branch protection). A taken name fails with the unique index's conflict.
    pub async fn create_protected_branch(
        &self,
        project_id: i64,
        new: &NewProtectedBranch<'_>,
        actor: Option<i64>,
    ) -> Result<ProtectedBranch> {
        let mut tx = self.writer().begin().await?;
        let id = next_id(&mut *tx, self.tenant_id(), "protected_branches").await?;
        let now = now_ms();
        self.query(
            "INSERT INTO protected_branches (tenant_id, id, project_id, name, allow_force_push, \
             code_owner_approval_required, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7)",
        )
        .bind(id)
        .bind(project_id)
        .bind(new.name)
        .bind(new.allow_force_push as i64)
        .bind(new.code_owner_approval_required as i64)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        insert_levels(&mut tx, self.tenant_id(), id, &new.levels).await?;
        let after = branch_in(&mut tx, self.tenant_id(), id).await?;
        let event = Event::new(EventKind::ProtectedBranchCreated, actor, id)
            .in_project(project_id)
            .after(&after);
        outbox::record(&mut tx, self.tenant_id(), &[event]).await?;
        tx.commit().await?;
        Ok(after)
    }

    /// Applies `update` to the protected branch `id` as `actor`.
    pub async fn update_protected_branch(
        &self,
        id: i64,
        update: &ProtectedBranchUpdate,
        actor: i64,
    ) -> Result<ProtectedBranch> {
        let mut tx = self.writer().begin().await?;
        let tenant = self.tenant_id();
        let before = branch_in(&mut tx, tenant, id).await?;
        let mut sql = Sql::new("UPDATE protected_branches SET updated_at = ");
        sql.bind(now_ms());
        if let Some(allow) = update.allow_force_push {
            sql.push(", allow_force_push = ").bind(allow as i64);
        }
        if let Some(required) = update.code_owner_approval_required {
            sql.push(", code_owner_approval_required = ")
                .bind(required as i64);
        }
        sql.push(" WHERE tenant_id = ")
            .bind(tenant)
            .push(" AND id = ")
            .bind(id);
        sql.query().execute(&mut *tx).await?;
        for (level_id, level) in &update.change {
            self.query(
                "UPDATE protected_branch_access_levels SET access_level = $3 \
                 WHERE tenant_id = $1 AND protected_branch_id = $2 AND id = $4",
            )
            .bind(id)
            .bind(*level)
            .bind(*level_id)
            .execute(&mut *tx)
            .await?;
        }
        if !update.remove.is_empty() {
            let mut remove =
                Sql::new("DELETE FROM protected_branch_access_levels WHERE tenant_id = ");
            remove
                .bind(tenant)
                .push(" AND protected_branch_id = ")
                .bind(id)
                .push(" AND id IN (")
                .bind_list(update.remove.iter().copied())
                .push(")");
            remove.query().execute(&mut *tx).await?;
        }
        insert_levels(&mut tx, tenant, id, &update.add).await?;
        let after = branch_in(&mut tx, tenant, id).await?;
        let event = Event::new(EventKind::ProtectedBranchUpdated, Some(actor), id)
            .in_project(after.row.project_id)
            .before(&before)
            .after(&after);
        outbox::record(&mut tx, tenant, &[event]).await?;
        tx.commit().await?;
        Ok(after)
    }

    /// Unprotects: removes the protected branch `id` and its levels.
    pub async fn delete_protected_branch(&self, id: i64, actor: i64) -> Result<()> {
        let mut tx = self.writer().begin().await?;
        let before = branch_in(&mut tx, self.tenant_id(), id).await?;
        self.query("DELETE FROM protected_branches WHERE tenant_id = $1 AND id = $2")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        let event = Event::new(EventKind::ProtectedBranchDestroyed, Some(actor), id)
            .in_project(before.row.project_id)
            .before(&before);
        outbox::record(&mut tx, self.tenant_id(), &[event]).await?;
        tx.commit().await?;
        Ok(())
    }
}

async fn insert_levels(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    branch_id: i64,
    levels: &[(&'static str, i64)],
) -> crate::Result<()> {
    if levels.is_empty() {
        return Ok(());
    }
    let first = next_ids(
        &mut **tx,
        tenant_id,
        "protected_branch_access_levels",
        levels.len() as i64,
    )
    .await?;
    let mut sql = Sql::new(
        "INSERT INTO protected_branch_access_levels (tenant_id, id, protected_branch_id, kind, access_level) VALUES ",
    );
    for (n, (kind, level)) in levels.iter().enumerate() {
        sql.push_row(
            n == 0,
            [
                Arg::from(tenant_id),
                Arg::from(first + n as i64),
                Arg::from(branch_id),
                Arg::from(*kind),
                Arg::from(*level),
            ],
        );
    }
    Ok(sql.query().execute(&mut **tx).await.map(|_| ())?)
}

/// The protected branch `id` with its levels, read inside `tx`.
async fn branch_in(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    id: i64,
) -> crate::Result<ProtectedBranch> {
    let row: ProtectedBranchRow = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {BRANCH_COLUMNS} FROM protected_branches WHERE tenant_id = $1 AND id = $2"
    )))
    .bind(tenant_id)
    .bind(id)
    .fetch_one(&mut **tx)
    .await?;
    let access_levels = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {LEVEL_COLUMNS} FROM protected_branch_access_levels WHERE tenant_id = $1 \
         AND protected_branch_id = $2 ORDER BY id"
    )))
    .bind(tenant_id)
    .bind(id)
    .fetch_all(&mut **tx)
    .await?;
    Ok(ProtectedBranch { row, access_levels })
}
