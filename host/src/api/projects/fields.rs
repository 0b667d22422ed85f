//! The create/edit parameters of projects: every one of the spec's table is read, checked
//! and turned into column values (the filtered ones) or `settings` JSON entries (the rest).

use serde_json::{Map, Value, json};

use crate::http::error::{ApiError, ApiResult};
use crate::http::params::{Audience, FromParamsIn, Params};
use crate::http::request::Api;
use crate::model::feature_access::FeatureAccess;
use crate::model::project_names::{NAME_MESSAGE, PATH_MESSAGE, valid_name, valid_path};
use crate::model::project_settings::{
    DEPRECATED_FLAGS, Kind, PROJECT_SETTINGS, default_expiration_policy,
};
use crate::model::visibility::Visibility;
use crate::services::project_placement as placement;
use crate::settings::keys::{self, VisibilitySetting};
use crate::store::projects::ProjectChanges;

/// GitLab's `Project` validates its description to this many characters.
const DESCRIPTION_MAX: usize = 2000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `POST /projects` and `POST /projects/user/:user_id`
    Create,
    /// `PUT /projects/:id`
    Edit,
}

/// What the parameters ask for, checked but not yet applied: the input of project create and
/// edit.
pub struct Fields {
    pub changes: ProjectChanges,
    pub name: Option<String>,
    pub path: Option<String>,
    pub visibility: Option<Visibility>,
    pub initialize_with_readme: bool,
    /// `import_url` when not blank (checked against the outbound policy before use).
    pub import_url: Option<String>,
    /// Create: `namespace_id` or `namespace` (an id or a full path) when not blank.
    pub namespace: Option<String>,
    /// The settings entries given, in the order they apply (`merge_settings`).
    settings: Map<String, Value>,
    /// `container_expiration_policy_attributes`, checked, to merge over the current policy.
    expiration_policy: Option<Map<String, Value>>,
}

impl Fields {
    /// Merges the settings the request gives into `settings` (the project's current ones, or
    /// an empty object for a new project).
    pub fn merge_settings(&self, settings: &mut Map<String, Value>) {
        settings.extend(self.settings.clone());
        let Some(attributes) = &self.expiration_policy else {
            return;
        };
        let mut policy = match settings.remove("container_expiration_policy") {
            Some(Value::Object(policy)) => policy,
            _ => match default_expiration_policy() {
                Value::Object(policy) => policy,
                _ => Map::new(),
            },
        };
        policy.extend(attributes.clone());
        settings.insert("container_expiration_policy".into(), Value::Object(policy));
    }
}

/// `repository_storage` and `mirror_user_id` are read for administrators only, as GitLab does.
impl FromParamsIn<(Mode, Audience)> for Fields {
    fn from_params_in(p: &Params, (mode, audience): (Mode, Audience)) -> ApiResult<Self> {
        read(p, mode, audience.admin)
    }
}

fn read(p: &Params, mode: Mode, admin: bool) -> ApiResult<Fields> {
    let mut settings = Map::new();
    let mut changes = ProjectChanges::default();
    let name = p.string("name")?.map(|s| s.trim().to_string());
    let path = p.string("path")?.map(|s| s.trim().to_string());
    let visibility = p.one_of_named("visibility", Visibility::ALL)?;
    // `"description": null` clears it, as in GitLab.
    match p.string_at_most("description", DESCRIPTION_MAX)? {
        Some(description) => changes.set("description", description),
        None if p.has("description") => changes.set("description", None::<String>),
        None => {}
    }
    if let Some(branch) = p.string("default_branch")?
        && !branch.is_empty()
    {
        changes.set("default_branch", branch);
    }
    if let Some(url) = p.string("import_url")? {
        changes.set("import_url", url);
    }
    let tags = match p.string_list("topics")? {
        Some(tags) => Some(tags),
        None => p.string_list("tag_list")?,
    };
    if let Some(tags) = tags {
        let mut unique: Vec<String> = Vec::new();
        for tag in tags {
            if !unique.contains(&tag) {
                unique.push(tag);
            }
        }
        changes.set("tag_list", json!(unique).to_string());
    }
    // Deprecated booleans first, so that an explicit access level wins over them.
    for (flag, level) in DEPRECATED_FLAGS {
        if let Some(enabled) = p.bool(flag)? {
            let value = if enabled {
                FeatureAccess::Enabled
            } else {
                FeatureAccess::Disabled
            };
            set_level(&mut changes, &mut settings, level, value);
        }
    }
    for level in ["issues_access_level", "merge_requests_access_level"] {
        if let Some(value) = p.one_of_named(level, FeatureAccess::NOT_PUBLIC)? {
            set_level(&mut changes, &mut settings, level, value);
        }
    }
    for (key, kind, _) in PROJECT_SETTINGS {
        if !p.has(key) {
            continue;
        }
        if matches!(*key, "repository_storage" | "mirror_user_id") && !admin {
            // admin-only: ignored for everyone else, as GitLab does
            continue;
        }
        let value = match kind {
            Kind::Bool => p.bool(key)?.map(Value::from),
            Kind::Int => p.int(key)?.map(Value::from),
            Kind::OptInt => p.int(key)?.map(Value::from),
            Kind::Str => p.string(key)?.map(Value::from),
            Kind::Access => stored_level(p.one_of_named(key, FeatureAccess::NOT_PUBLIC)?),
            Kind::PublicAccess => stored_level(p.one_of_named(key, FeatureAccess::ALL)?),
            Kind::Enum(allowed) => p.one_of(key, allowed)?.map(Value::from),
        };
        if let Some(value) = value {
            settings.insert(key.to_string(), value);
        }
    }
    let expiration_policy = match p.object("container_expiration_policy_attributes")? {
        Some(attributes) => Some(expiration_policy(attributes)?),
        None => None,
    };
    let initialize_with_readme = match mode {
        Mode::Create => p.bool("initialize_with_readme")?.unwrap_or(false),
        Mode::Edit => false,
    };
    if let Some(name) = &name {
        if name.is_empty() {
            return Err(ApiError::field("name", "can't be blank"));
        }
        if !valid_name(name) {
            return Err(ApiError::field("name", NAME_MESSAGE));
        }
        if name.chars().count() > 255 {
            return Err(ApiError::field(
                "name",
                "is too long (maximum is 255 characters)",
            ));
        }
    }
    if let Some(path) = &path {
        if path.is_empty() {
            return Err(ApiError::field("path", "can't be blank"));
        }
        if !valid_path(path) {
            return Err(ApiError::field("path", PATH_MESSAGE));
        }
        if path.chars().count() > 255 {
            return Err(ApiError::field(
                "path",
                "is too long (maximum is 255 characters)",
            ));
        }
    }
    if let Some(visibility) = visibility {
        changes.set("visibility", visibility.as_str());
        changes.set("visibility_level", visibility.level());
    }
    let import_url = p.string("import_url")?.filter(|u| !u.trim().is_empty());
    let namespace = match mode {
        Mode::Create => p
            .string("namespace_id")?
            .or(p.string("namespace")?)
            .filter(|s| !s.trim().is_empty()),
        Mode::Edit => None,
    };
    Ok(Fields {
        changes,
        name,
        path,
        visibility,
        initialize_with_readme,
        import_url,
        namespace,
        settings,
        expiration_policy,
    })
}

/// `container_expiration_policy_attributes`, each value checked and coerced as GitLab does;
/// `name_regex` also sets `name_regex_delete`.
fn expiration_policy(attributes: &Map<String, Value>) -> ApiResult<Map<String, Value>> {
    let mut policy = Map::new();
    for (key, value) in attributes {
        let value = match key.as_str() {
            "cadence" | "older_than" | "name_regex" | "name_regex_delete" | "name_regex_keep" => {
                match value {
                    Value::String(_) | Value::Null => value.clone(),
                    Value::Number(n) => Value::from(n.to_string()),
                    _ => return Err(ApiError::invalid("container_expiration_policy_attributes")),
                }
            }
            "keep_n" => match value {
                Value::Number(_) | Value::Null => value.clone(),
                Value::String(s) => s.parse::<i64>().map(Value::from).map_err(|_| {
                    ApiError::invalid("container_expiration_policy_attributes[keep_n]")
                })?,
                _ => {
                    return Err(ApiError::invalid(
                        "container_expiration_policy_attributes[keep_n]",
                    ));
                }
            },
            "enabled" => match value {
                Value::Bool(_) => value.clone(),
                Value::String(s) => crate::http::params::parse_bool(s)
                    .map(Value::from)
                    .ok_or_else(|| {
                        ApiError::invalid("container_expiration_policy_attributes[enabled]")
                    })?,
                _ => {
                    return Err(ApiError::invalid(
                        "container_expiration_policy_attributes[enabled]",
                    ));
                }
            },
            _ => continue,
        };
        if key == "name_regex" {
            policy.insert("name_regex_delete".into(), value.clone());
        }
        policy.insert(key.clone(), value);
    }
    Ok(policy)
}

/// An access level as the settings keep it: by name.
fn stored_level(value: Option<FeatureAccess>) -> Option<Value> {
    value.map(|level| Value::from(level.as_str()))
}

/// Issues and merge requests levels are columns (lists filter on them); the rest are settings.
fn set_level(
    changes: &mut ProjectChanges,
    settings: &mut Map<String, Value>,
    level: &str,
    value: FeatureAccess,
) {
    match level {
        "issues_access_level" => changes.set("issues_access_level", value.as_str()),
        "merge_requests_access_level" => changes.set("merge_requests_access_level", value.as_str()),
        _ => {
            settings.insert(level.to_string(), Value::from(value.as_str()));
        }
    }
}

/// The instance's restriction on a visibility, for non-admins: the 400 GitLab answers.
pub fn check_visibility_allowed(api: &Api, visibility: Visibility) -> ApiResult<()> {
    let admin = api.caller.as_ref().is_some_and(|c| c.is_admin());
    Ok(placement::check_visibility_allowed(
        admin,
        visibility,
        restricted(api, visibility),
    )?)
}

/// Whether `restricted_visibility_levels` names `visibility`.
pub fn restricted(api: &Api, visibility: Visibility) -> bool {
    api.settings
        .get(keys::RESTRICTED_VISIBILITY_LEVELS)
        .contains(&visibility)
}

/// The instance default for new projects or groups (private when the setting names none),
/// stepped down past restricted levels.
pub fn default_visibility(api: &Api, setting: VisibilitySetting) -> Visibility {
    let configured = api.settings.get(setting).unwrap_or(Visibility::Private);
    if !restricted(api, configured) || api.caller.as_ref().is_some_and(|c| c.is_admin()) {
        return configured;
    }
    Visibility::ALL
        .iter()
        .copied()
        .find(|candidate| !restricted(api, *candidate))
        .unwrap_or(Visibility::Private)
}
