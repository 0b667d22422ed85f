//! Protected tags. Each change and its domain event are written in one transaction.

use sqlx::AssertSqlSafe;

use super::ids::next_id;
use super::{Result, TenantDb, now_ms, outbox};
use crate::events::{Event, EventKind};
use crate::model::protected_tags::ProtectedTagRow;

const TAG_COLUMNS: &str = "id, project_id, name, create_access_level";

impl TenantDb {
    /// A project's protected tags, oldest first.
    pub async fn protected_tags(&self, project_id: i64) -> crate::Result<Vec<ProtectedTagRow>> {
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {TAG_COLUMNS} FROM protected_tags WHERE tenant_id = $1 AND project_id = $2 \
             ORDER BY id"
            )))
            .bind(project_id)
            .fetch_all(self.reader())
            .await?)
    }

    /// The protected tag named exactly `name` (a pattern is named by its pattern).
    pub async fn protected_tag(
        &self,
        project_id: i64,
        name: &str,
    ) -> crate::Result<Option<ProtectedTagRow>> {
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {TAG_COLUMNS} FROM protected_tags WHERE tenant_id = $1 AND project_id = $2 \
             AND name = $3"
            )))
            .bind(project_id)
            .bind(name)
            .fetch_optional(self.reader())
            .await?)
    }

    /// Protects the tag `name` in a project as `actor`. A taken name fails with the unique
    /// index's conflict.
    pub async fn create_protected_tag(
        &self,
        project_id: i64,
        name: &str,
        create_access_level: i64,
        actor: i64,
    ) -> Result<ProtectedTagRow> {
        let mut tx = self.writer().begin().await?;
        let id = next_id(&mut *tx, self.tenant_id(), "protected_tags").await?;
        self.query(
            "INSERT INTO protected_tags (tenant_id, id, project_id, name, create_access_level, \
             created_at) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(id)
        .bind(project_id)
        .bind(name)
        .bind(create_access_level)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        let after = ProtectedTagRow {
            id,
            project_id,
            name: name.to_string(),
            create_access_level,
        };
        let event = Event::new(EventKind::ProtectedTagCreated, Some(actor), id)
            .in_project(project_id)
            .after(&after);
        outbox::record(&mut tx, self.tenant_id(), &[event]).await?;
        tx.commit().await?;
        Ok(after)
    }

    /// Unprotects: removes the protected tag `tag`.
    pub async fn delete_protected_tag(&self, tag: &ProtectedTagRow, actor: i64) -> Result<()> {
        let mut tx = self.writer().begin().await?;
        self.query("DELETE FROM protected_tags WHERE tenant_id = $1 AND id = $2")
            .bind(tag.id)
            .execute(&mut *tx)
            .await?;
        let event = Event::new(EventKind::ProtectedTagDestroyed, Some(actor), tag.id)
            .in_project(tag.project_id)
            .before(tag);
        outbox::record(&mut tx, self.tenant_id(), &[event]).await?;
        tx.commit().await?;
        Ok(())
    }
}
