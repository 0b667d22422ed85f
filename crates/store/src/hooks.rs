//! A project's webhooks, its push rule and its uploads. Their boolean columns are listed once
//! in `model::hooks` ([`HOOK_FLAGS`], [`PUSH_RULE_FLAGS`]); the column lists and the rows'
//! `FromRow` impls here follow those lists.

use sqlx::any::AnyRow;
use sqlx::{AssertSqlSafe, FromRow, Row};

use super::changes::{Changes, Table};
use super::sql::Sql;
use super::window::Window;
use super::{TenantDb, ids::next_id, now_ms};
use crate::model::hooks::{
    DeliveryState, HOOK_FLAGS, HookRow, PUSH_RULE_FLAGS, PUSH_RULE_REGEXES, PushRuleRow,
};

/// Reads the named BIGINT 0/1 columns.
fn read_flags<N: Copy>(
    row: &AnyRow,
    names: impl IntoIterator<Item = N>,
    name_of: impl Fn(N) -> &'static str,
) -> sqlx::Result<Vec<(&'static str, bool)>> {
    names
        .into_iter()
        .map(|n| {
            let name = name_of(n);
            Ok((name, row.try_get::<i64, _>(name)? != 0))
        })
        .collect()
}

impl FromRow<'_, AnyRow> for HookRow {
    fn from_row(row: &AnyRow) -> sqlx::Result<Self> {
        Ok(HookRow {
            id: row.try_get("id")?,
            project_id: row.try_get("project_id")?,
            url: row.try_get("url")?,
            token: row.try_get("token")?,
            push_events_branch_filter: row.try_get("push_events_branch_filter")?,
            branch_filter_strategy: row.try_get("branch_filter_strategy")?,
            flags: read_flags(row, HOOK_FLAGS.iter(), |(name, _)| *name)?,
            formatter: row.try_get("formatter")?,
            instance_url: row.try_get("instance_url")?,
            uuid: row.try_get("uuid")?,
            delivery: DeliveryState {
                recent_failures: row.try_get("recent_failures")?,
                backoff_count: row.try_get("backoff_count")?,
                disabled_until: row.try_get("disabled_until")?,
            },
            created_at: row.try_get("created_at")?,
        })
    }
}

pub(super) fn hook_columns() -> String {
    let mut columns = "id, project_id, url, token, push_events_branch_filter, \
         branch_filter_strategy, formatter, instance_url, uuid, recent_failures, backoff_count, \
         disabled_until, created_at"
        .to_string();
    for (name, _) in HOOK_FLAGS {
        columns.push_str(", ");
        columns.push_str(name);
    }
    columns
}

impl FromRow<'_, AnyRow> for PushRuleRow {
    fn from_row(row: &AnyRow) -> sqlx::Result<Self> {
        Ok(PushRuleRow {
            id: row.try_get("id")?,
            project_id: row.try_get("project_id")?,
            regexes: PUSH_RULE_REGEXES
                .iter()
                .map(|name| Ok((*name, row.try_get::<Option<String>, _>(*name)?)))
                .collect::<sqlx::Result<_>>()?,
            flags: read_flags(row, PUSH_RULE_FLAGS.iter(), |name| *name)?,
            max_file_size: row.try_get("max_file_size")?,
            created_at: row.try_get("created_at")?,
        })
    }
}

fn push_rule_columns() -> String {
    let mut columns = "id, project_id, max_file_size, created_at".to_string();
    for name in PUSH_RULE_REGEXES.iter().chain(PUSH_RULE_FLAGS) {
        columns.push_str(", ");
        columns.push_str(name);
    }
    columns
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct UploadRow {
    pub id: i64,
    pub secret: String,
    pub filename: String,
}

const UPLOAD_COLUMNS: &str = "id, secret, filename";

/// The `project_hooks` table, for a hook's [`Changes`].
pub struct ProjectHooks;

impl Table for ProjectHooks {
    const NAME: &'static str = "project_hooks";
    const COLUMNS: &'static str = "url, token, push_events_branch_filter, branch_filter_strategy, \
         formatter, instance_url, uuid, push_events, issues_events, \
         confidential_issues_events, merge_requests_events, tag_push_events, note_events, \
         confidential_note_events, job_events, pipeline_events, wiki_page_events, \
         deployment_events, releases_events, enable_ssl_verification";
}

/// The `push_rules` table, for a push rule's [`Changes`].
pub struct PushRules;

impl Table for PushRules {
    const NAME: &'static str = "push_rules";
    const COLUMNS: &'static str = "max_file_size, commit_message_regex, commit_message_negative_regex, \
         branch_name_regex, author_email_regex, file_name_regex, deny_delete_tag, \
         member_check, prevent_secrets, commit_committer_check, reject_unsigned_commits";
}

/// Every setting of a hook: hooks are written whole.
fn hook_changes(hook: &HookRow) -> Changes<ProjectHooks> {
    let mut changes = Changes::default();
    changes.set("url", hook.url.clone());
    changes.set("token", hook.token.clone());
    changes.set(
        "push_events_branch_filter",
        hook.push_events_branch_filter.clone(),
    );
    changes.set(
        "branch_filter_strategy",
        hook.branch_filter_strategy.clone(),
    );
    changes.set("formatter", hook.formatter.clone());
    changes.set("instance_url", hook.instance_url.clone());
    changes.set("uuid", hook.uuid.clone());
    for (name, on) in &hook.flags {
        changes.set(name, *on);
    }
    changes
}

/// Every setting of a push rule: push rules are written whole.
fn push_rule_changes(rule: &PushRuleRow) -> Changes<PushRules> {
    let mut changes = Changes::default();
    changes.set("max_file_size", rule.max_file_size);
    for (name, re) in &rule.regexes {
        changes.set(name, re.clone());
    }
    for (name, on) in &rule.flags {
        changes.set(name, *on);
    }
    changes
}

/// `INSERT INTO table (tenant_id, id, project_id, created_at, updated_at, <changes>) VALUES
/// (...) RETURNING returning`.
fn insert_sql<T: Table>(
    tenant_id: i64,
    id: i64,
    project_id: i64,
    changes: &Changes<T>,
    returning: &str,
) -> Sql {
    let keys = [
        ("tenant_id", tenant_id),
        ("id", id),
        ("project_id", project_id),
    ];
    let mut sql = changes.insert_sql(&keys, now_ms());
    sql.push(&format!(" RETURNING {returning}"));
    sql
}

/// `UPDATE table SET updated_at, <changes> WHERE tenant_id AND project_id AND id`.
fn update_sql<T: Table>(
    tenant_id: i64,
    project_id: i64,
    id: i64,
    changes: &Changes<T>,
    returning: &str,
) -> Sql {
    let keys = [
        ("tenant_id", tenant_id),
        ("project_id", project_id),
        ("id", id),
    ];
    let mut sql = changes.update_sql(&keys, now_ms());
    sql.push(&format!(" RETURNING {returning}"));
    sql
}

impl TenantDb {
    // ---- hooks --------------------------------------------------------------

    pub async fn list_hooks(
        &self,
        project_id: i64,
        window: &Window,
    ) -> crate::Result<Vec<HookRow>> {
        let scope = self.of_project(project_id);
        self.page(&hook_columns(), "project_hooks", scope, window, "")
            .await
    }

    pub async fn count_hooks(&self, project_id: i64, cap: i64) -> crate::Result<i64> {
        let scope = self.of_project(project_id);
        self.count_up_to("project_hooks", scope, cap).await
    }

    /// `WHERE` the tenant's rows of one project.
    fn of_project(&self, project_id: i64) -> impl FnOnce(&mut Sql) {
        let tenant_id = self.tenant_id();
        move |sql| {
            sql.push(" WHERE tenant_id = ")
                .bind(tenant_id)
                .push(" AND project_id = ")
                .bind(project_id);
        }
    }

    pub async fn hook(&self, project_id: i64, id: i64) -> crate::Result<Option<HookRow>> {
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {} FROM project_hooks WHERE tenant_id = $1 AND project_id = $2 AND id = $3",
                hook_columns()
            )))
            .bind(project_id)
            .bind(id)
            .fetch_optional(self.reader())
            .await?)
    }

    pub async fn insert_hook(&self, hook: &HookRow) -> crate::Result<HookRow> {
        let mut tx = self.writer().begin().await?;
        let id = next_id(&mut *tx, self.tenant_id(), "project_hooks").await?;
        let sql = insert_sql(
            self.tenant_id(),
            id,
            hook.project_id,
            &hook_changes(hook),
            &hook_columns(),
        );
        let row = sql.query_as().fetch_one(&mut *tx).await?;
        tx.commit().await?;
        Ok(row)
    }

    /// Writes every setting of `hook` (found by its id and project); `None` if it is gone.
    pub async fn update_hook(&self, hook: &HookRow) -> crate::Result<Option<HookRow>> {
        let sql = update_sql(
            self.tenant_id(),
            hook.project_id,
            hook.id,
            &hook_changes(hook),
            &hook_columns(),
        );
        Ok(sql.query_as().fetch_optional(self.writer()).await?)
    }

    pub async fn delete_hook(&self, project_id: i64, id: i64) -> crate::Result<bool> {
        let done = self
            .query("DELETE FROM project_hooks WHERE tenant_id = $1 AND project_id = $2 AND id = $3")
            .bind(project_id)
            .bind(id)
            .execute(self.writer())
            .await?;
        Ok(done.rows_affected() == 1)
    }

    // ---- push rules ---------------------------------------------------------

    pub async fn push_rule(&self, project_id: i64) -> crate::Result<Option<PushRuleRow>> {
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {} FROM push_rules WHERE tenant_id = $1 AND project_id = $2",
                push_rule_columns()
            )))
            .bind(project_id)
            .fetch_optional(self.reader())
            .await?)
    }

    /// Adds the project's push rule; a second one fails on `push_rules_project_id_unique`.
    pub async fn insert_push_rule(&self, rule: &PushRuleRow) -> crate::Result<PushRuleRow> {
        let mut tx = self.writer().begin().await?;
        let id = next_id(&mut *tx, self.tenant_id(), "push_rules").await?;
        let sql = insert_sql(
            self.tenant_id(),
            id,
            rule.project_id,
            &push_rule_changes(rule),
            &push_rule_columns(),
        );
        let row = sql.query_as().fetch_one(&mut *tx).await?;
        tx.commit().await?;
        Ok(row)
    }

    pub async fn update_push_rule(&self, rule: &PushRuleRow) -> crate::Result<Option<PushRuleRow>> {
        let sql = update_sql(
            self.tenant_id(),
            rule.project_id,
            rule.id,
            &push_rule_changes(rule),
            &push_rule_columns(),
        );
        Ok(sql.query_as().fetch_optional(self.writer()).await?)
    }

    pub async fn delete_push_rule(&self, project_id: i64) -> crate::Result<bool> {
        let done = self
            .query("DELETE FROM push_rules WHERE tenant_id = $1 AND project_id = $2")
            .bind(project_id)
            .execute(self.writer())
            .await?;
        Ok(done.rows_affected() == 1)
    }

    // ---- uploads ------------------------------------------------------------

    pub async fn insert_upload(
        &self,
        project_id: i64,
        uploaded_by_id: i64,
        secret: &str,
        filename: &str,
        size: i64,
        content_type: Option<&str>,
    ) -> crate::Result<UploadRow> {
        let mut tx = self.writer().begin().await?;
        let id = next_id(&mut *tx, self.tenant_id(), "uploads").await?;
        let row = self
            .query_as(AssertSqlSafe(format!(
                "INSERT INTO uploads (tenant_id, id, project_id, uploaded_by_id, secret, filename, \
             size, content_type, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
             RETURNING {UPLOAD_COLUMNS}"
            )))
            .bind(id)
            .bind(project_id)
            .bind(uploaded_by_id)
            .bind(secret)
            .bind(filename)
            .bind(size)
            .bind(content_type)
            .bind(now_ms())
            .fetch_one(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(row)
    }

    pub async fn upload(
        &self,
        project_id: i64,
        secret: &str,
        filename: &str,
    ) -> crate::Result<Option<UploadRow>> {
        Ok(self
            .query_as(AssertSqlSafe(format!(
                "SELECT {UPLOAD_COLUMNS} FROM uploads WHERE tenant_id = $1 AND project_id = $2 \
             AND secret = $3 AND filename = $4"
            )))
            .bind(project_id)
            .bind(secret)
            .bind(filename)
            .fetch_optional(self.reader())
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Changes::set` refuses a column its table does not list: every flag and regex of the
    /// model's lists must be one.
    #[test]
    fn every_setting_is_a_writable_column() {
        assert_eq!(hook_changes(&HookRow::defaults(1)).iter().count(), 20);
        assert_eq!(
            push_rule_changes(&PushRuleRow::defaults(1)).iter().count(),
            11
        );
    }
}
