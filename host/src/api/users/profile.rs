//! The profile parameters shared by `POST /users` and `PUT /users/:id`: each parameter's
//! column and type, GitLab's validations, and the instance's password rules.

use crate::http::error::{ApiError, ApiResult};
use crate::http::params::{FromParams, Params};
use crate::store::user_admin::UserChanges;

/// Free-text profile fields stored as '' when cleared.
const TEXT_FIELDS: &[&str] = &[
    "bio",
    "location",
    "skype",
    "linkedin",
    "twitter",
    "discord",
    "website_url",
    "organization",
    "job_title",
];
/// Free-text fields stored as NULL when cleared.
const NULLABLE_FIELDS: &[&str] = &["pronouns", "note"];
const INT_FIELDS: &[&str] = &[
    "theme_id",
    "color_scheme_id",
    "projects_limit",
    "shared_runners_minutes_limit",
    "extra_shared_runners_minutes_limit",
];
/// Boolean parameters and their columns.
const BOOL_FIELDS: &[(&str, &str)] = &[
    ("admin", "is_admin"),
    ("can_create_group", "can_create_group"),
    ("external", "external"),
    ("private_profile", "private_profile"),
];

/// Parsed profile parameters, ready to store once `public_email` is checked
/// (`Profile::own_public_email`).
pub struct Profile {
    pub changes: UserChanges,
    pub identity: Option<(String, String)>,
    /// `public_email` when given (`Some(None)` clears it).
    public_email: Option<Option<String>>,
}

impl Profile {
    /// Sets `public_email`, which may only be one of `owned_emails` (the primary and
    /// confirmed secondary emails, known once the user is looked up).
    pub fn own_public_email(&mut self, owned_emails: &[String]) -> ApiResult<()> {
        let Some(value) = self.public_email.take() else {
            return Ok(());
        };
        if let Some(email) = &value
            && !owned_emails
                .iter()
                .any(|own| own.eq_ignore_ascii_case(email))
        {
            return Err(ApiError::field("public_email", "is not an email you own"));
        }
        self.changes.set("public_email", value);
        Ok(())
    }
}

/// Every optional profile parameter present in the request.
impl FromParams for Profile {
    fn from_params(p: &Params) -> ApiResult<Self> {
        profile(p)
    }
}

fn profile(p: &Params) -> ApiResult<Profile> {
    let mut changes = UserChanges::default();
    for &name in TEXT_FIELDS {
        if p.has(name) {
            let value = p.string(name)?.unwrap_or_default();
            check_length(name, &value, 255)?;
            changes.set(static_column(name), value);
        }
    }
    for &name in NULLABLE_FIELDS {
        if p.has(name) {
            changes.set(
                static_column(name),
                p.string(name)?.filter(|s| !s.is_empty()),
            );
        }
    }
    for &name in INT_FIELDS {
        if let Some(value) = p.int(name)? {
            if value < 0 && name != "extra_shared_runners_minutes_limit" {
                return Err(ApiError::field(name, "must be greater than or equal to 0"));
            }
            changes.set(static_column(name), value);
        }
    }
    for &(name, column) in BOOL_FIELDS {
        if p.has(name) {
            // GitLab: private_profile null becomes false.
            changes.set(column, p.bool(name)?.unwrap_or(false));
        }
    }
    let public_email = match p.has("public_email") {
        true => Some(p.string("public_email")?.filter(|s| !s.is_empty())),
        false => None,
    };
    if let Some(name) = p.string("name")? {
        if name.trim().is_empty() {
            return Err(ApiError::field("name", "can't be blank"));
        }
        check_length("name", &name, 255)?;
        changes.set("name", name);
    }
    if let Some(username) = p.string("username")? {
        validate_username(&username)?;
        changes.set("username", username.clone());
        changes.set("username_lower", username.to_lowercase());
    }
    if let Some(email) = p.string("email")? {
        validate_email("email", &email)?;
        changes.set("email", email.clone());
        changes.set("email_lower", email.to_lowercase());
    }
    let identity = match (p.string("extern_uid")?, p.string("provider")?) {
        (Some(uid), Some(provider)) if !uid.is_empty() && !provider.is_empty() => {
            Some((provider, uid))
        }
        (None, None) => None,
        _ => {
            return Err(ApiError::InvalidParam(
                "extern_uid, provider provide all or none of parameters".into(),
            ));
        }
    };
    Ok(Profile {
        changes,
        identity,
        public_email,
    })
}

fn static_column(name: &str) -> &'static str {
    TEXT_FIELDS
        .iter()
        .chain(NULLABLE_FIELDS)
        .chain(INT_FIELDS)
        .find(|f| **f == name)
        .copied()
        .expect("a known field")
}

fn check_length(field: &str, value: &str, max: usize) -> ApiResult<()> {
    if value.chars().count() > max {
        return Err(ApiError::field(
            field,
            format!("is too long (maximum is {max} characters)"),
        ));
    }
    Ok(())
}

pub fn validate_username(username: &str) -> ApiResult<()> {
    let message = "can contain only letters, digits, '_', '-' and '.'. Cannot start with '-' or end in '.', '.git' or '.atom'.";
    let valid_chars = username
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    let lower = username.to_ascii_lowercase();
    if username.is_empty() {
        return Err(ApiError::field("username", "can't be blank"));
    }
    if !valid_chars
        || username.starts_with('-')
        || username.ends_with('.')
        || lower.ends_with(".git")
        || lower.ends_with(".atom")
    {
        return Err(ApiError::field("username", message));
    }
    check_length("username", username, 255)
}

/// Devise's rule (shared with secondary emails and GPG user ids): see `keys::is_valid_email`.
pub fn validate_email(field: &str, email: &str) -> ApiResult<()> {
    if crate::keys::is_valid_email(email) {
        Ok(())
    } else {
        Err(ApiError::field(field, "is invalid"))
    }
}
