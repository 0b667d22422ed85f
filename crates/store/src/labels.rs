//! Project labels. Names match case-insensitively (`name_lower`); issues reach them through
//! `issue_labels`.

use sqlx::AssertSqlSafe;

use super::{TenantDb, ids::next_id, now_ms, row_by_id};
use crate::model::labels::{LabelCounts, LabelRow};

/// The color of labels created by naming them on an issue (GitLab's default).
pub const DEFAULT_LABEL_COLOR: &str = "#6699cc";

/// Which confidential issues a label's counts include: those the caller may see.
#[derive(Debug, Clone, Copy)]
pub enum ConfidentialIssues {
    /// All of them (Reporters and up, administrators).
    All,
    /// Those the user wrote or is assigned to.
    Involving(i64),
    /// None (anonymous callers).
    None,
}

pub const LABEL_COLUMNS: &str = "id, project_id, name, color, description, priority";

pub fn label_columns(alias: &str) -> String {
    LABEL_COLUMNS
        .split(", ")
        .map(|c| format!("{alias}.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ")
}

impl TenantDb {
    pub async fn project_labels(
        &self,
        project_id: i64,
        search: Option<&str>,
    ) -> crate::Result<Vec<LabelRow>> {
        let mut sql = self.sql(&format!(
            "SELECT {LABEL_COLUMNS} FROM labels WHERE tenant_id = "
        ));
        sql.push(" AND project_id = ").bind(project_id);
        if let Some(search) = search {
            sql.push(" AND name_lower LIKE ")
                .bind(format!(
                    "%{}%",
                    super::sql::escape_like(&search.to_lowercase())
                ))
                .push(" ESCAPE '\\'");
        }
        sql.push(" ORDER BY name_lower, id");
        Ok(sql.query_as().fetch_all(self.reader()).await?)
    }

    /// A project label by id or (case-insensitive) name.
    pub async fn project_label(
        &self,
        project_id: i64,
        key: &str,
    ) -> crate::Result<Option<LabelRow>> {
        let by_id = key.parse::<i64>().ok();
        Ok(self.query_as(AssertSqlSafe(format!(
            "SELECT {LABEL_COLUMNS} FROM labels WHERE tenant_id = $1 AND project_id = $2 \
             AND (name_lower = $3 OR id = $4) ORDER BY CASE WHEN name_lower = $3 THEN 0 ELSE 1 END LIMIT 1"
        )))
        .bind(project_id)
        .bind(key.to_lowercase())
        .bind(by_id.unwrap_or(-1))
        .fetch_optional(self.reader())
        .await?)
    }

    /// The label's live open and closed issues among those `confidential` lets the caller
    /// see, as GitLab counts them with the caller's `IssuesFinder`.
    pub async fn label_counts(
        &self,
        label_id: i64,
        confidential: ConfidentialIssues,
    ) -> crate::Result<LabelCounts> {
        let (all, user_id) = match confidential {
            ConfidentialIssues::All => (1, -1),
            ConfidentialIssues::Involving(user_id) => (0, user_id),
            ConfidentialIssues::None => (0, -1),
        };
        Ok(self.query_as(
            "SELECT COALESCE(SUM(CASE WHEN i.state = 'opened' THEN 1 ELSE 0 END), 0) AS open_issues_count, \
             COALESCE(SUM(CASE WHEN i.state = 'closed' THEN 1 ELSE 0 END), 0) AS closed_issues_count \
             FROM issue_labels il JOIN issues i ON i.tenant_id = il.tenant_id AND i.id = il.issue_id \
             WHERE il.tenant_id = $1 AND il.label_id = $2 AND i.deleted_at IS NULL \
             AND (i.confidential = 0 OR $3 = 1 OR i.author_id = $4 OR EXISTS (SELECT 1 FROM issue_assignees a \
             WHERE a.tenant_id = i.tenant_id AND a.issue_id = i.id AND a.user_id = $4))",
        )
        .bind(label_id)
        .bind(all)
        .bind(user_id)
        .fetch_one(self.reader())
        .await?)
    }

    pub async fn create_label(
        &self,
        project_id: i64,
        name: &str,
        color: &str,
        description: Option<&str>,
        priority: Option<i64>,
    ) -> crate::Result<LabelRow> {
        let mut tx = self.writer().begin().await?;
        let id = next_id(&mut *tx, self.tenant_id(), "labels").await?;
        let now = now_ms();
        self.query(
            "INSERT INTO labels (tenant_id, id, project_id, name, name_lower, color, description, priority, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)",
        )
        .bind(id)
        .bind(project_id)
        .bind(name)
        .bind(name.to_lowercase())
        .bind(color)
        .bind(description)
        .bind(priority)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let row = row_by_id(&mut *tx, "labels", LABEL_COLUMNS, self.tenant_id(), id).await?;
        tx.commit().await?;
        Ok(row)
    }

    pub async fn update_label(&self, label: &LabelRow) -> crate::Result<()> {
        Ok(self.query(
            "UPDATE labels SET name = $3, name_lower = $4, color = $5, description = $6, priority = $7, updated_at = $8 \
             WHERE tenant_id = $1 AND id = $2",
        )
        .bind(label.id)
        .bind(&label.name)
        .bind(label.name.to_lowercase())
        .bind(&label.color)
        .bind(label.description.as_deref())
        .bind(label.priority)
        .bind(now_ms())
        .execute(self.writer())
        .await
        .map(|_| ())?)
    }

    pub async fn delete_label(&self, label_id: i64) -> crate::Result<()> {
        Ok(self
            .query("DELETE FROM labels WHERE tenant_id = $1 AND id = $2")
            .bind(label_id)
            .execute(self.writer())
            .await
            .map(|_| ())?)
    }
}
