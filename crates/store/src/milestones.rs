//! Project milestones (per-project `iid`, state active/closed).

use super::changes::{Changes, Table};
use super::{TenantDb, ids::next_id, now_ms, row_by_id};
use crate::model::milestones::MilestoneRow;
use crate::model::states::MilestoneState;

pub const MILESTONE_COLUMNS: &str = "id, project_id, iid, title, description, state, due_date, start_date, \
    closed_at, created_at, updated_at";

#[derive(Debug, Default)]
pub struct MilestoneFilter {
    pub project_id: i64,
    pub state: Option<MilestoneState>,
    pub iids: Vec<i64>,
    pub title: Option<String>,
    pub search: Option<String>,
}

/// The `milestones` table, for [`MilestoneChanges`].
pub struct Milestones;

impl Table for Milestones {
    const NAME: &'static str = "milestones";
    const COLUMNS: &'static str = "title, description, state, due_date, start_date, closed_at";
}

/// Column values for an insert or update of a milestone.
pub type MilestoneChanges = Changes<Milestones>;

impl TenantDb {
    pub async fn list_milestones(
        &self,
        filter: &MilestoneFilter,
    ) -> crate::Result<Vec<MilestoneRow>> {
        let mut sql = self.sql(&format!(
            "SELECT {MILESTONE_COLUMNS} FROM milestones WHERE tenant_id = "
        ));
        sql.push(" AND project_id = ").bind(filter.project_id);
        if let Some(state) = filter.state {
            sql.push(" AND state = ").bind(state.as_str());
        }
        if !filter.iids.is_empty() {
            sql.push(" AND iid IN (")
                .bind_list(filter.iids.iter().copied())
                .push(")");
        }
        if let Some(title) = &filter.title {
            sql.push(" AND title = ").bind(title);
        }
        if let Some(search) = &filter.search {
            let pattern = format!("%{}%", super::sql::escape_like(&search.to_lowercase()));
            sql.push(" AND (LOWER(title) LIKE ")
                .bind(pattern.clone())
                .push(" ESCAPE '\\' OR LOWER(COALESCE(description, '')) LIKE ")
                .bind(pattern)
                .push(" ESCAPE '\\')");
        }
        sql.push(" ORDER BY due_date IS NULL, due_date, id DESC");
        Ok(sql.query_as().fetch_all(self.reader()).await?)
    }

    pub async fn milestone_by_id(&self, id: i64) -> crate::Result<Option<MilestoneRow>> {
        self.find_by_id("milestones", MILESTONE_COLUMNS, id).await
    }

    pub async fn milestones_by_ids(&self, ids: &[i64]) -> crate::Result<Vec<MilestoneRow>> {
        let select = format!("SELECT {MILESTONE_COLUMNS} FROM milestones");
        self.rows_with_keys(&select, "id", ids, "").await
    }

    pub async fn create_milestone(
        &self,
        project_id: i64,
        changes: &MilestoneChanges,
    ) -> crate::Result<MilestoneRow> {
        let tenant_id = self.tenant_id();
        let mut tx = self.writer().begin().await?;
        let id = next_id(&mut *tx, tenant_id, "milestones").await?;
        let iid = next_id(&mut *tx, tenant_id, &format!("milestone_iid:{project_id}")).await?;
        let keys = [
            ("tenant_id", tenant_id),
            ("id", id),
            ("project_id", project_id),
            ("iid", iid),
        ];
        let sql = changes.insert_sql(&keys, now_ms());
        sql.query().execute(&mut *tx).await?;
        let row = row_by_id(&mut *tx, "milestones", MILESTONE_COLUMNS, tenant_id, id).await?;
        tx.commit().await?;
        Ok(row)
    }

    pub async fn update_milestone(&self, id: i64, changes: &MilestoneChanges) -> crate::Result<()> {
        let keys = [("tenant_id", self.tenant_id()), ("id", id)];
        let sql = changes.update_sql(&keys, now_ms());
        Ok(sql.query().execute(self.writer()).await.map(|_| ())?)
    }

    /// Deletes a milestone; its issues lose it.
    pub async fn delete_milestone(&self, id: i64) -> crate::Result<()> {
        let mut tx = self.writer().begin().await?;
        self.query(
            "UPDATE issues SET milestone_id = NULL WHERE tenant_id = $1 AND milestone_id = $2",
        )
        .bind(id)
        .execute(&mut *tx)
        .await?;
        self.query("DELETE FROM milestones WHERE tenant_id = $1 AND id = $2")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        Ok(tx.commit().await?)
    }
}
