//! Projects shared with groups (`project_group_links`): the group's members (direct or
//! inherited from the group's ancestors) get the lower of their group level and the share's
//! `group_access` in the project.

use super::sql::Sql;
use super::{TenantDb, ids::next_id, now_ms};
use crate::model::project_shares::ShareRow;

/// Live shares (`l`) joined with their group (`g`), for `tenant_id`.
fn push_live_shares(sql: &mut Sql, tenant_id: i64, today: &str) {
    sql.push(
        "SELECT l.id, l.project_id, l.group_id, l.group_access, l.expires_at, g.name AS group_name, \
         g.full_path AS group_full_path FROM project_group_links l JOIN namespaces g \
         ON g.tenant_id = l.tenant_id AND g.id = l.group_id WHERE l.tenant_id = ",
    )
    .bind(tenant_id)
    .push(" AND (l.expires_at IS NULL OR l.expires_at > ")
    .bind(today)
    .push(")");
}

impl TenantDb {
    /// The live shares of the given projects, by group name.
    pub async fn shares_of(
        &self,
        project_ids: &[i64],
        today: &str,
    ) -> crate::Result<Vec<ShareRow>> {
        if project_ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = Sql::new("");
        push_live_shares(&mut sql, self.tenant_id(), today);
        sql.push(" AND l.project_id IN (")
            .bind_list(project_ids.iter().copied())
            .push(") ORDER BY g.name, g.id");
        Ok(sql.query_as().fetch_all(self.reader()).await?)
    }

    /// Shares a project with a group; `None` when it already is.
    pub async fn add_share(
        &self,
        project_id: i64,
        group_id: i64,
        group_access: i64,
        expires_at: Option<&str>,
    ) -> crate::Result<Option<i64>> {
        let mut tx = self.writer().begin().await?;
        let id = next_id(&mut *tx, self.tenant_id(), "project_group_links").await?;
        let done = self.query(
            "INSERT INTO project_group_links (tenant_id, id, project_id, group_id, group_access, expires_at, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (tenant_id, project_id, group_id) DO NOTHING",
        )
        .bind(id)
        .bind(project_id)
        .bind(group_id)
        .bind(group_access)
        .bind(expires_at)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return Ok(None);
        }
        tx.commit().await?;
        Ok(Some(id))
    }

    pub async fn remove_share(&self, project_id: i64, group_id: i64) -> crate::Result<bool> {
        let done = self.query(
            "DELETE FROM project_group_links WHERE tenant_id = $1 AND project_id = $2 AND group_id = $3",
        )
        .bind(project_id)
        .bind(group_id)
        .execute(self.writer())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// `(project_id, level)`: the best level `user_id` reaches in each of `project_ids`
    /// through the groups the projects are shared with.
    pub async fn shared_levels(
        &self,
        user_id: i64,
        project_ids: &[i64],
        today: &str,
    ) -> crate::Result<Vec<(i64, i64)>> {
        if project_ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = self.sql(
            "SELECT l.project_id, MAX(CASE WHEN l.group_access < m.access_level THEN l.group_access \
             ELSE m.access_level END) FROM project_group_links l \
             JOIN namespaces g ON g.tenant_id = l.tenant_id AND g.id = l.group_id \
             JOIN namespaces a ON a.tenant_id = g.tenant_id AND g.traversal LIKE a.traversal || '%' \
             JOIN members m ON m.tenant_id = a.tenant_id AND m.source_type = 'Namespace' AND m.source_id = a.id \
             WHERE l.tenant_id = ",
        );
        sql.push(" AND m.user_id = ")
            .bind(user_id)
            .push(" AND l.project_id IN (")
            .bind_list(project_ids.iter().copied())
            .push(") AND (l.expires_at IS NULL OR l.expires_at > ")
            .bind(today)
            .push(") AND (m.expires_at IS NULL OR m.expires_at > ")
            .bind(today)
            .push(") GROUP BY l.project_id");
        Ok(sql.query_as().fetch_all(self.reader()).await?)
    }
}
