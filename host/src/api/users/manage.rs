//! Administration of users: `POST /users`, `PUT /users/:id`, `DELETE /users/:id` and
//! `DELETE /users/:id/identities/:provider`. Everything is validated before anything is
//! written, so a refused request leaves no row and no file behind.

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::avatar::{self, AvatarChange};
use super::profile::{Profile, hash_new_password};
use super::{admin_view, user_by_id};
use crate::api::notify;
use crate::auth::secrets;
use crate::http::error::{ApiError, ApiResult, OnConstraint};
use crate::http::params::{FromParams, Params, flag_input};
use crate::http::request::Api;
use crate::model::now_ms;
use crate::services::users;
use crate::settings::keys;
use crate::store::user_admin::{Contributions, UserDeletion};
use crate::store::users::NewUser;

/// The unique indexes a user write can run into, and the field each reports.
const USER_UNIQUES: &[(&str, &str, &str)] = &[
    ("users", "username_lower", "username"),
    ("users", "email_lower", "email"),
    ("identities", "extern_uid", "extern_uid"),
    // a personal namespace's path is the username; a top-level group may hold it already
    ("namespaces", "path_lower", "username"),
];

/// `POST /users`: what the request must give besides the profile fields (`Profile`).
struct CreateUser {
    email: String,
    name: String,
    username: String,
    /// How the first password is set.
    password: FirstPassword,
    skip_confirmation: bool,
    projects_limit: Option<i64>,
    admin: bool,
    /// Whether `external` is given: when not, the instance's default applies.
    external_given: bool,
}

/// A new user's password: given, mailed as a reset link, or random (the user resets it).
enum FirstPassword {
    Given(String),
    Reset,
    Random,
}

impl FromParams for CreateUser {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let email = p.required_string("email")?;
        let name = p.required_string("name")?;
        let username = p.required_string("username")?;
        let password = p.string("password")?;
        let reset_password = p.bool("reset_password")?.unwrap_or(false);
        let force_random = p.bool("force_random_password")?.unwrap_or(false);
        let password = match password {
            _ if reset_password => FirstPassword::Reset,
            _ if force_random => FirstPassword::Random,
            Some(password) => FirstPassword::Given(password),
            None => return Err(ApiError::InvalidParam(
                "password, reset_password, force_random_password are missing, at least one parameter must be provided".into(),
            )),
        };
        Ok(CreateUser {
            email,
            name,
            username,
            password,
            skip_confirmation: p.bool("skip_confirmation")?.unwrap_or(false),
            projects_limit: p.int("projects_limit")?,
            admin: p.bool("admin")?.unwrap_or(false),
            external_given: p.has("external"),
        })
    }
}

pub async fn create(api: Api) -> ApiResult<Response> {
    let admin_id = api.admin()?.user.id;
    let CreateUser {
        email,
        name,
        username,
        password,
        skip_confirmation,
        projects_limit,
        admin,
        external_given,
    } = api.input()?;
    let mut profile: Profile = api.input()?;
    let avatar = api.input::<AvatarChange>()?;
    profile.own_public_email(std::slice::from_ref(&email))?;
    check_not_secondary(&api, &email, None).await?;
    let digest = match &password {
        FirstPassword::Given(password) => hash_new_password(&api, password)?,
        FirstPassword::Reset | FirstPassword::Random => {
            secrets::hash_password(&secrets::generate("", 32)).map_err(ApiError::Internal)?
        }
    };
    if let AvatarChange::Set(_, name) = &avatar {
        profile.changes.set("avatar_path", name.clone());
    }
    if !external_given && api.settings.get(keys::USER_DEFAULT_EXTERNAL) {
        profile.changes.set("external", true);
    }
    let confirmation = if skip_confirmation {
        profile.changes.set("confirmed_at", now_ms());
        None
    } else {
        let (token, digest) = notify::confirmation_token();
        profile.changes.set("confirmation_token_digest", digest);
        Some(token)
    };
    let reset_token = matches!(password, FirstPassword::Reset).then(|| secrets::generate("", 20));
    if let Some(token) = &reset_token {
        profile
            .changes
            .set("reset_password_token_digest", secrets::digest(token));
        profile.changes.set("reset_password_sent_at", now_ms());
    }
    let projects_limit = match projects_limit {
        Some(limit) => limit,
        None => api
            .settings
            .get(keys::DEFAULT_PROJECTS_LIMIT)
            .unwrap_or(100_000),
    };
    let new_user = NewUser {
        username: &username,
        email: &email,
        name: &name,
        is_admin: admin,
        password_digest: Some(digest),
        projects_limit,
    };
    let identity = profile
        .identity
        .as_ref()
        .map(|(provider, uid)| (provider.as_str(), uid.as_str()));
    let user = api
        .db()
        .create_user(new_user, &profile.changes, identity, Some(admin_id))
        .await
        .on_constraints(USER_UNIQUES)?;
    if let AvatarChange::Set(file, name) = &avatar
        && let Err(error) = avatar::store(&api, avatar::USER, user.id, file, name).await
    {
        // Nothing refers to the new user yet: a hard delete leaves no ghost behind.
        let nothing = UserDeletion {
            groups: &[],
            contributions: Contributions::Delete,
        };
        api.db().delete_user(user.id, &nothing, admin_id).await?;
        return Err(error);
    }
    if let Some(token) = confirmation {
        notify::send_confirmation(&api, &user.name, &user.email, &token).await?;
    }
    if let Some(token) = reset_token {
        let link = format!(
            "{}/users/password/edit?reset_password_token={token}",
            api.tenant.base_url
        );
        notify::send(&api, &user.email, "Account was created for you", format!(
            "Hello {},\n\nAn administrator created an account for you on {}.\nYour username is {}.\n\nSet your password here: {link}\n",
            user.name, api.tenant.base_url, user.username
        ))
        .await?;
    }
    Ok((StatusCode::CREATED, Json(admin_view(&api, &user).await?)).into_response())
}

/// `PUT /users/:id`: what the request may change besides the profile fields (`Profile`,
/// whose `public_email` is checked once the user's own emails are known).
struct UpdateUser {
    email: Option<String>,
    password: Option<String>,
    skip_reconfirmation: bool,
}

impl FromParams for UpdateUser {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(UpdateUser {
            email: p.string("email")?,
            password: p.string("password")?,
            skip_reconfirmation: p.bool("skip_reconfirmation")?.unwrap_or(false),
        })
    }
}

pub async fn update(Path(id): Path<String>, api: Api) -> ApiResult<Response> {
    api.admin()?;
    let UpdateUser {
        email: new_email,
        password,
        skip_reconfirmation,
    } = api.input()?;
    let mut profile: Profile = api.input()?;
    let avatar = api.input::<AvatarChange>()?;
    let user = user_by_id(&api, &id).await?;
    let mut owned = api.db().confirmed_secondary_emails(user.id).await?;
    owned.push(new_email.clone().unwrap_or_else(|| user.email.clone()));
    profile.own_public_email(&owned)?;
    if let Some(email) = &new_email {
        check_not_secondary(&api, email, Some(user.id)).await?;
    }
    if let Some(password) = password {
        profile
            .changes
            .set("password_digest", hash_new_password(&api, &password)?);
        // An administrator's new password must be replaced by the user at the next sign-in.
        profile.changes.set("password_expires_at", now_ms());
    }
    let reconfirm = new_email
        .as_deref()
        .is_some_and(|e| !e.eq_ignore_ascii_case(&user.email))
        && !skip_reconfirmation;
    let confirmation = reconfirm
        .then(notify::confirmation_token)
        .map(|(token, digest)| {
            profile.changes.set("confirmation_token_digest", digest);
            profile.changes.set("confirmed_at", None::<i64>);
            token
        });
    match &avatar {
        AvatarChange::Set(_, name) => profile.changes.set("avatar_path", name.clone()),
        AvatarChange::Remove => profile.changes.set("avatar_path", None::<String>),
        AvatarChange::Keep => {}
    }
    let identity = profile
        .identity
        .as_ref()
        .map(|(provider, uid)| (provider.as_str(), uid.as_str()));
    let updated = api
        .db()
        .update_user(user.id, &profile.changes, identity, api.user()?.user.id)
        .await
        .on_constraints(USER_UNIQUES)?
        .ok_or(ApiError::NotFound("User"))?;
    match &avatar {
        AvatarChange::Set(file, name) => {
            avatar::store(&api, avatar::USER, user.id, file, name).await?
        }
        AvatarChange::Remove => avatar::remove(&api, avatar::USER, user.id).await?,
        AvatarChange::Keep => {}
    }
    if let Some(token) = confirmation {
        notify::send_confirmation(&api, &updated.name, &updated.email, &token).await?;
    }
    Ok(Json(admin_view(&api, &updated).await?).into_response())
}

flag_input!(
    /// `DELETE /users/:id`: `hard_delete` also deletes the user's contributions and the
    /// groups they alone own.
    DeleteUser,
    "hard_delete",
    false
);

pub async fn remove(Path(id): Path<String>, api: Api) -> ApiResult<StatusCode> {
    let admin_id = api.admin()?.user.id;
    let DeleteUser(hard_delete) = api.input()?;
    let user = user_by_id(&api, &id).await?;
    let projects = users::delete(api.db(), &user, hard_delete, admin_id).await?;
    // Files go only once the rows are gone for good.
    crate::api::projects::delete::remove_files_of(&api, &projects).await;
    avatar::remove(&api, avatar::USER, user.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn remove_identity(
    Path((id, provider)): Path<(String, String)>,
    api: Api,
) -> ApiResult<StatusCode> {
    api.admin()?;
    let user = user_by_id(&api, &id).await?;
    if api.db().delete_identity(user.id, &provider).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound("Identity"))
    }
}

/// Primary emails are unique through an index; another user's secondary emails are checked here.
async fn check_not_secondary(api: &Api, email: &str, owner: Option<i64>) -> ApiResult<()> {
    match api.db().secondary_email_owner(email).await? {
        Some(user_id) if Some(user_id) != owner => {
            Err(ApiError::field("email", "has already been taken"))
        }
        _ => Ok(()),
    }
}
