//! The project settings of the catalog (`model::project_settings`) as the full project view
//! shows them, with a schema built from the same catalog: a setting added there is shown, and
//! documented with its kind, without a field here.

use serde::Serialize;
use serde_json::{Map, Value, json};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{Schema, Type};
use utoipa::{PartialSchema, ToSchema};

use super::catalog_schema::{Property, object, one_of, typed};
use crate::model::feature_access::FeatureAccess;
use crate::model::project_settings::{DEPRECATED_FLAGS, Kind, PROJECT_SETTINGS, setting};
use crate::model::projects::ProjectRow;
use crate::store::StoredName;

/// Catalog settings not shown under their own name: the template settings are only read when
/// a project is created, `public_builds` is shown as `public_jobs`, `repository_storage`
/// only to administrators, `build_git_strategy` only to maintainers, and
/// `approvals_before_merge` and `requirements_access_level` are GitLab EE's keys.
const NOT_SHOWN: &[&str] = &[
    "use_custom_template",
    "template_name",
    "template_project_id",
    "group_with_project_templates_id",
    "public_builds",
    "approvals_before_merge",
    "requirements_access_level",
    ADMIN_ONLY,
    MAINTAINER_ONLY,
];

/// The names GitLab shows settings under besides (or instead of) their own: (shown as, setting).
const RENAMED: &[(&str, &str)] = &[
    ("public_jobs", "public_builds"),
    (
        "printing_merge_requests_link_enabled",
        "printing_merge_request_link_enabled",
    ),
];

const ADMIN_ONLY: &str = "repository_storage";
const MAINTAINER_ONLY: &str = "build_git_strategy";

/// The access levels kept in columns rather than in the settings (`issues_access_level` is
/// filtered on), which the deprecated flags also read.
const COLUMN_LEVELS: [&str; 2] = ["issues_access_level", "merge_requests_access_level"];

#[derive(Clone, Serialize)]
#[serde(transparent)]
pub struct ProjectSettingsView(Map<String, Value>);

impl ProjectSettingsView {
    pub fn of(project: &ProjectRow, admin: bool, maintainer: bool) -> ProjectSettingsView {
        let settings = project.settings_json();
        let value = |key: &str| match key {
            "issues_access_level" | "merge_requests_access_level" => {
                json!(project.feature_access(&settings, key))
            }
            _ => setting(&settings, key),
        };
        let mut shown = Map::new();
        for (key, _, _) in shown_settings() {
            shown.insert(key.to_string(), value(key));
        }
        for (name, key) in RENAMED {
            shown.insert(name.to_string(), value(key));
        }
        for key in COLUMN_LEVELS {
            shown.insert(key.to_string(), value(key));
        }
        for (flag, level) in DEPRECATED_FLAGS {
            let enabled = project.feature_access(&settings, level) != FeatureAccess::Disabled;
            shown.insert(flag.to_string(), json!(enabled));
        }
        if admin {
            shown.insert(ADMIN_ONLY.to_string(), value(ADMIN_ONLY));
        }
        if maintainer {
            shown.insert(MAINTAINER_ONLY.to_string(), value(MAINTAINER_ONLY));
        }
        ProjectSettingsView(shown)
    }
}

fn shown_settings() -> impl Iterator<Item = &'static (&'static str, Kind, &'static str)> {
    PROJECT_SETTINGS
        .iter()
        .filter(|(key, _, _)| !NOT_SHOWN.contains(key))
}

fn kind_of(key: &str) -> Kind {
    PROJECT_SETTINGS
        .iter()
        .find(|(k, _, _)| *k == key)
        .map_or(Kind::Str, |(_, kind, _)| *kind)
}

fn schema_of(kind: Kind) -> Schema {
    match kind {
        Kind::Bool => typed(Type::Boolean, false),
        Kind::Int => typed(Type::Integer, false),
        Kind::OptInt => typed(Type::Integer, true),
        Kind::Str => typed(Type::String, true),
        Kind::Access => levels(FeatureAccess::NOT_PUBLIC),
        Kind::PublicAccess => levels(FeatureAccess::ALL),
        Kind::Enum(values) => one_of(values),
    }
}

fn levels(levels: &[FeatureAccess]) -> Schema {
    one_of(&levels.iter().map(|l| l.name()).collect::<Vec<_>>())
}

impl PartialSchema for ProjectSettingsView {
    fn schema() -> RefOr<Schema> {
        let settings =
            shown_settings().map(|(key, kind, _)| Property::always(key, schema_of(*kind)));
        let renamed = RENAMED
            .iter()
            .map(|(name, key)| Property::always(name, schema_of(kind_of(key))));
        let columns = COLUMN_LEVELS
            .iter()
            .map(|key| Property::always(key, levels(FeatureAccess::NOT_PUBLIC)));
        let flags = DEPRECATED_FLAGS
            .iter()
            .map(|(flag, _)| Property::always(flag, typed(Type::Boolean, false)));
        let conditional = [ADMIN_ONLY, MAINTAINER_ONLY].map(|name| Property {
            name,
            schema: schema_of(kind_of(name)),
            required: false,
        });
        object(
            settings
                .chain(renamed)
                .chain(columns)
                .chain(flags)
                .chain(conditional),
        )
    }
}

impl ToSchema for ProjectSettingsView {}
