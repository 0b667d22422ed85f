//! A project's webhooks, its push rule and its uploads. Their boolean columns are listed once
//! in `model::hooks` ([`HOOK_FLAGS`], [`PUSH_RULE_FLAGS`]); the column lists and the rows'
//! `FromRow` impls here follow those lists.

use sqlx::any::AnyRow;
use sqlx::{AssertSqlSafe, FromRow, Row};

use super::sql::{Arg, Sql};
use super::window::Window;
use super::{TenantDb, ids::next_id, now_ms};
use crate::model::hooks::{HOOK_FLAGS, HookRow, PUSH_RULE_FLAGS, PUSH_RULE_REGEXES, PushRuleRow};

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
            flags: read_flags(row, HOOK_FLAGS.iter(), |(name, _)| *name)?,
            created_at: row.try_get("created_at")?,
        })
    }
}

fn hook_columns() -> String {
    let mut columns =
        "id, project_id, url, token, push_events_branch_filter, created_at".to_string();
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
    pub project_id: i64,
    pub secret: String,
    pub filename: String,
    pub size: i64,
    pub content_type: Option<String>,
    pub created_at: i64,
}

const UPLOAD_COLUMNS: &str = "id, project_id, secret, filename, size, content_type, created_at";

/// Appends `pairs` as `name = $n, ...` (an UPDATE's SET list) or `$n, ...` (INSERT values).
fn push_values(sql: &mut Sql, update: bool, pairs: &[(&str, Arg)]) {
    for (i, (name, value)) in pairs.iter().enumerate() {
        if i > 0 {
            sql.push(", ");
        } else if update {
            sql.push(" ");
        }
        if update {
            sql.push(name).push(" = ");
        }
        sql.bind(value.clone());
    }
}

fn hook_values(hook: &HookRow) -> Vec<(&'static str, Arg)> {
    let mut values = vec![
        ("url", Arg::from(hook.url.clone())),
        ("token", Arg::from(hook.token.clone())),
        (
            "push_events_branch_filter",
            Arg::from(hook.push_events_branch_filter.clone()),
        ),
    ];
    values.extend(
        hook.flags
            .iter()
            .map(|(name, on)| (*name, Arg::from(i64::from(*on)))),
    );
    values
}

fn push_rule_values(rule: &PushRuleRow) -> Vec<(&'static str, Arg)> {
    let mut values = vec![("max_file_size", Arg::from(rule.max_file_size))];
    values.extend(
        rule.regexes
            .iter()
            .map(|(name, re)| (*name, Arg::from(re.clone()))),
    );
    values.extend(
        rule.flags
            .iter()
            .map(|(name, on)| (*name, Arg::from(i64::from(*on)))),
    );
    values
}

/// `INSERT INTO table (tenant_id, id, project_id, created_at, updated_at, <names>) VALUES (...)`.
fn insert_sql(
    table: &str,
    tenant_id: i64,
    id: i64,
    project_id: i64,
    values: &[(&str, Arg)],
    returning: &str,
) -> Sql {
    let names: Vec<&str> = values.iter().map(|(n, _)| *n).collect();
    let now = now_ms();
    let mut sql = Sql::new(&format!(
        "INSERT INTO {table} (tenant_id, id, project_id, created_at, updated_at, {}) VALUES (",
        names.join(", ")
    ));
    sql.bind(tenant_id)
        .push(", ")
        .bind(id)
        .push(", ")
        .bind(project_id)
        .push(", ")
        .bind(now)
        .push(", ")
        .bind(now)
        .push(", ");
    push_values(&mut sql, false, values);
    sql.push(&format!(") RETURNING {returning}"));
    sql
}

/// `UPDATE table SET <names>, updated_at WHERE tenant_id AND project_id AND id`.
fn update_sql(
    table: &str,
    tenant_id: i64,
    project_id: i64,
    id: i64,
    values: &[(&str, Arg)],
    returning: &str,
) -> Sql {
    let mut sql = Sql::new(&format!("UPDATE {table} SET"));
    push_values(&mut sql, true, values);
    sql.push(", updated_at = ")
        .bind(now_ms())
        .push(" WHERE tenant_id = ")
        .bind(tenant_id)
        .push(" AND project_id = ")
        .bind(project_id)
        .push(" AND id = ")
        .bind(id)
        .push(&format!(" RETURNING {returning}"));
    sql
}

impl TenantDb {
    // ---- hooks --------------------------------------------------------------

    pub async fn list_hooks(&self, project_id: i64, window: &Window) -> sqlx::Result<Vec<HookRow>> {
        let mut sql = Sql::new(&format!("SELECT {} FROM project_hooks", hook_columns()));
        sql.push(" WHERE tenant_id = ")
            .bind(self.tenant_id())
            .push(" AND project_id = ")
            .bind(project_id);
        window.apply(&mut sql);
        sql.query_as().fetch_all(self.reader()).await
    }

    pub async fn count_hooks(&self, project_id: i64, cap: i64) -> sqlx::Result<i64> {
        let mut sql = Sql::new("SELECT 1 FROM project_hooks");
        sql.push(" WHERE tenant_id = ")
            .bind(self.tenant_id())
            .push(" AND project_id = ")
            .bind(project_id);
        sql.count_capped(cap)
            .query_scalar()
            .fetch_one(self.reader())
            .await
    }

    pub async fn hook(&self, project_id: i64, id: i64) -> sqlx::Result<Option<HookRow>> {
        sqlx::query_as(AssertSqlSafe(format!(
            "SELECT {} FROM project_hooks WHERE tenant_id = $1 AND project_id = $2 AND id = $3",
            hook_columns()
        )))
        .bind(self.tenant_id())
        .bind(project_id)
        .bind(id)
        .fetch_optional(self.reader())
        .await
    }

    pub async fn insert_hook(&self, hook: &HookRow) -> sqlx::Result<HookRow> {
        let mut tx = self.writer().begin().await?;
        let id = next_id(&mut *tx, self.tenant_id(), "project_hooks").await?;
        let sql = insert_sql(
            "project_hooks",
            self.tenant_id(),
            id,
            hook.project_id,
            &hook_values(hook),
            &hook_columns(),
        );
        let row = sql.query_as().fetch_one(&mut *tx).await?;
        tx.commit().await?;
        Ok(row)
    }

    /// Writes every setting of `hook` (found by its id and project); `None` if it is gone.
    pub async fn update_hook(&self, hook: &HookRow) -> sqlx::Result<Option<HookRow>> {
        let sql = update_sql(
            "project_hooks",
            self.tenant_id(),
            hook.project_id,
            hook.id,
            &hook_values(hook),
            &hook_columns(),
        );
        sql.query_as().fetch_optional(self.writer()).await
    }

    pub async fn delete_hook(&self, project_id: i64, id: i64) -> sqlx::Result<bool> {
        let done = sqlx::query(
            "DELETE FROM project_hooks WHERE tenant_id = $1 AND project_id = $2 AND id = $3",
        )
        .bind(self.tenant_id())
        .bind(project_id)
        .bind(id)
        .execute(self.writer())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    // ---- push rules ---------------------------------------------------------

    pub async fn push_rule(&self, project_id: i64) -> sqlx::Result<Option<PushRuleRow>> {
        sqlx::query_as(AssertSqlSafe(format!(
            "SELECT {} FROM push_rules WHERE tenant_id = $1 AND project_id = $2",
            push_rule_columns()
        )))
        .bind(self.tenant_id())
        .bind(project_id)
        .fetch_optional(self.reader())
        .await
    }

    /// Adds the project's push rule; a second one fails on `push_rules_project_id_unique`.
    pub async fn insert_push_rule(&self, rule: &PushRuleRow) -> sqlx::Result<PushRuleRow> {
        let mut tx = self.writer().begin().await?;
        let id = next_id(&mut *tx, self.tenant_id(), "push_rules").await?;
        let sql = insert_sql(
            "push_rules",
            self.tenant_id(),
            id,
            rule.project_id,
            &push_rule_values(rule),
            &push_rule_columns(),
        );
        let row = sql.query_as().fetch_one(&mut *tx).await?;
        tx.commit().await?;
        Ok(row)
    }

    pub async fn update_push_rule(&self, rule: &PushRuleRow) -> sqlx::Result<Option<PushRuleRow>> {
        let sql = update_sql(
            "push_rules",
            self.tenant_id(),
            rule.project_id,
            rule.id,
            &push_rule_values(rule),
            &push_rule_columns(),
        );
        sql.query_as().fetch_optional(self.writer()).await
    }

    pub async fn delete_push_rule(&self, project_id: i64) -> sqlx::Result<bool> {
        let done = sqlx::query("DELETE FROM push_rules WHERE tenant_id = $1 AND project_id = $2")
            .bind(self.tenant_id())
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
    ) -> sqlx::Result<UploadRow> {
        let mut tx = self.writer().begin().await?;
        let id = next_id(&mut *tx, self.tenant_id(), "uploads").await?;
        let row = sqlx::query_as(AssertSqlSafe(format!(
            "INSERT INTO uploads (tenant_id, id, project_id, uploaded_by_id, secret, filename, \
             size, content_type, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
             RETURNING {UPLOAD_COLUMNS}"
        )))
        .bind(self.tenant_id())
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
    ) -> sqlx::Result<Option<UploadRow>> {
        sqlx::query_as(AssertSqlSafe(format!(
            "SELECT {UPLOAD_COLUMNS} FROM uploads WHERE tenant_id = $1 AND project_id = $2 \
             AND secret = $3 AND filename = $4"
        )))
        .bind(self.tenant_id())
        .bind(project_id)
        .bind(secret)
        .bind(filename)
        .fetch_optional(self.reader())
        .await
    }
}
