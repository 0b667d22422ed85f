//! What changes a project outside its edit form: repository statistics, import (fork and
//! mirror) status, the fork relation, and the mark for delayed deletion.

use sqlx::{Any, AssertSqlSafe, Transaction};

use super::projects::{PROJECT_COLUMNS, project_event, project_in};
use super::sql::Sql;
use super::{Result, TenantDb, now_ms, outbox};
use crate::events::{Event, EventKind};
use crate::model::projects::ProjectRow;
use crate::model::states::ImportStatus;

/// Recounts a source project's `forks_count` inside a transaction.
pub(super) async fn count_forks(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    source: i64,
) -> crate::Result<()> {
    sqlx::query(
        "UPDATE projects SET forks_count = (SELECT COUNT(*) FROM projects f WHERE f.tenant_id = $1 \
         AND f.forked_from_id = $2) WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant_id)
    .bind(source)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Before the projects `ids` are deleted in `tx`: their forks lose the relation. Returns
/// the projects they were forked from, whose fork counts [`count_forks`] redoes afterwards.
pub(super) async fn unlink_projects(
    tx: &mut Transaction<'_, Any>,
    tenant_id: i64,
    ids: &[i64],
) -> crate::Result<Vec<i64>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut sources = Sql::new("SELECT DISTINCT forked_from_id FROM projects WHERE tenant_id = ");
    sources
        .bind(tenant_id)
        .push(" AND forked_from_id IS NOT NULL AND id IN (")
        .bind_list(ids.iter().copied())
        .push(")");
    let sources: Vec<i64> = sources.query_scalar().fetch_all(&mut **tx).await?;
    let mut unlink = Sql::new("UPDATE projects SET forked_from_id = NULL WHERE tenant_id = ");
    unlink
        .bind(tenant_id)
        .push(" AND forked_from_id IN (")
        .bind_list(ids.iter().copied())
        .push(")");
    unlink.query().execute(&mut **tx).await?;
    Ok(sources.into_iter().filter(|s| !ids.contains(s)).collect())
}

impl TenantDb {
    /// Records an accepted push: the project's `last_activity_at` and the push's events
    /// (one per updated branch or tag), in one transaction.
    pub async fn record_push(&self, id: i64, events: &[Event]) -> Result<()> {
        let mut tx = self.writer().begin().await?;
        self.query("UPDATE projects SET last_activity_at = $3 WHERE tenant_id = $1 AND id = $2")
            .bind(id)
            .bind(now_ms())
            .execute(&mut *tx)
            .await?;
        outbox::record(&mut tx, self.tenant_id(), events).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Stores what the repository holds now (sizes in bytes).
    pub async fn set_repository_statistics(
        &self,
        id: i64,
        commit_count: i64,
        size: i64,
        languages: &str,
    ) -> Result<()> {
        self.query(
            "UPDATE projects SET commit_count = $3, repository_size = $4, \
             storage_size = $4 + wiki_size + packages_size, repository_languages = $5 \
             WHERE tenant_id = $1 AND id = $2",
        )
        .bind(id)
        .bind(commit_count)
        .bind(size)
        .bind(languages)
        .execute(self.writer())
        .await?;
        Ok(())
    }

    /// `import_status` and its error.
    pub async fn set_import_status(
        &self,
        id: i64,
        status: ImportStatus,
        error: Option<&str>,
    ) -> crate::Result<()> {
        self.query(
            "UPDATE projects SET import_status = $3, import_error = $4 WHERE tenant_id = $1 AND id = $2",
        )
        .bind(id)
        .bind(status.as_str())
        .bind(error)
        .execute(self.writer())
        .await?;
        Ok(())
    }

    /// Sets (or with `None` removes) the fork relation and recounts the sources' forks.
    /// `false` when nothing changed.
    pub async fn set_forked_from(&self, id: i64, source: Option<i64>) -> crate::Result<bool> {
        let mut tx = self.writer().begin().await?;
        let previous: Option<Option<i64>> = self
            .query_scalar("SELECT forked_from_id FROM projects WHERE tenant_id = $1 AND id = $2")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(previous) = previous else {
            return Ok(false);
        };
        if previous == source {
            return Ok(false);
        }
        self.query("UPDATE projects SET forked_from_id = $3 WHERE tenant_id = $1 AND id = $2")
            .bind(id)
            .bind(source)
            .execute(&mut *tx)
            .await?;
        for project in previous.into_iter().chain(source) {
            count_forks(&mut tx, self.tenant_id(), project).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Marks a project for deletion (archived, path and name suffixed so they are free again),
    /// or with `None` restores it (`name`/`path` are the restored ones), as `actor`.
    pub async fn set_deletion_mark(
        &self,
        id: i64,
        mark: Option<i64>,
        name: &str,
        path: &str,
        actor: i64,
    ) -> crate::Result<Option<ProjectRow>> {
        let mut tx = self.writer().begin().await?;
        let Some(before) = project_in(&mut tx, self.tenant_id(), id).await? else {
            return Ok(None);
        };
        let after: ProjectRow = self.query_as(AssertSqlSafe(format!(
            "UPDATE projects SET marked_for_deletion_at = $3, archived = $4, name = $5, name_lower = $6, \
             path = $7, path_lower = $8, updated_at = $9 WHERE tenant_id = $1 AND id = $2 RETURNING {PROJECT_COLUMNS}"
        )))
        .bind(id)
        .bind(mark)
        .bind(i64::from(mark.is_some()))
        .bind(name)
        .bind(name.to_lowercase())
        .bind(path)
        .bind(path.to_lowercase())
        .bind(now_ms())
        .fetch_one(&mut *tx)
        .await?;
        let kind = if mark.is_some() {
            EventKind::ProjectMarkedForDeletion
        } else {
            EventKind::ProjectRestored
        };
        let event = project_event(kind, Some(actor), &before, &after);
        outbox::commit(tx, self.tenant_id(), &[event]).await?;
        Ok(Some(after))
    }

    /// Ids of projects marked for deletion before `before` (milliseconds).
    pub async fn marked_before(&self, before: i64) -> crate::Result<Vec<i64>> {
        Ok(self.query_scalar(
            "SELECT id FROM projects WHERE tenant_id = $1 AND marked_for_deletion_at IS NOT NULL \
             AND marked_for_deletion_at < $2 ORDER BY id LIMIT 100",
        )
        .bind(before)
        .fetch_all(self.reader())
        .await?)
    }
}
