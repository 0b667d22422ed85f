//! Label writes. A project's label names are unique case-insensitively: GitLab answers a
//! second one, or a rename onto a taken name, with 409 "Label already exists".

use super::Refusal;
use crate::model::labels::LabelRow;
use crate::store::{self, TenantDb};

const EXISTS: &str = "Label already exists";

/// A label to create; the name and colour are already in GitLab's form (`http` checks them).
pub struct NewLabel<'a> {
    pub name: &'a str,
    pub color: &'a str,
    pub description: Option<&'a str>,
    pub priority: Option<i64>,
}

/// What an update changes; `None` keeps a field, `Some(None)` clears it.
pub struct LabelChanges {
    pub name: Option<String>,
    pub color: Option<String>,
    pub description: Option<Option<String>>,
    pub priority: Option<Option<i64>>,
}

fn exists_or_store(error: store::Error) -> Refusal {
    match error.is_conflict() {
        true => Refusal::Conflict(EXISTS.into()),
        false => Refusal::Store(error),
    }
}

async fn name_taken(db: &TenantDb, project_id: i64, name: &str) -> Result<bool, Refusal> {
    Ok(db
        .project_label(project_id, name)
        .await?
        .is_some_and(|l| l.name.eq_ignore_ascii_case(name)))
}

pub async fn create(
    db: &TenantDb,
    project_id: i64,
    new: NewLabel<'_>,
) -> Result<LabelRow, Refusal> {
    // The unique index settles a race; the lookup first answers without a failed insert.
    if name_taken(db, project_id, new.name).await? {
        return Err(Refusal::Conflict(EXISTS.into()));
    }
    db.create_label(
        project_id,
        new.name,
        new.color,
        new.description,
        new.priority,
    )
    .await
    .map_err(exists_or_store)
}

pub async fn update(
    db: &TenantDb,
    mut label: LabelRow,
    changes: LabelChanges,
) -> Result<LabelRow, Refusal> {
    if let Some(name) = changes.name {
        if !name.eq_ignore_ascii_case(&label.name)
            && name_taken(db, label.project_id, &name).await?
        {
            return Err(Refusal::Conflict(EXISTS.into()));
        }
        label.name = name;
    }
    if let Some(color) = changes.color {
        label.color = color;
    }
    if let Some(description) = changes.description {
        label.description = description;
    }
    if let Some(priority) = changes.priority {
        label.priority = priority;
    }
    db.update_label(&label).await.map_err(exists_or_store)?;
    Ok(label)
}

pub async fn delete(db: &TenantDb, label: &LabelRow) -> Result<(), Refusal> {
    db.delete_label(label.id).await?;
    Ok(())
}
