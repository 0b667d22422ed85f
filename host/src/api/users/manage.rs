//! Administration of users: `POST /users`, `PUT /users/:id`, `DELETE /users/:id` and
//! `DELETE /users/:id/identities/:provider`. Everything is validated before anything is
//! written, so a refused request leaves no row and no file behind.

use crate::http::json::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::avatar::{self, AvatarChange};
use super::profile::Profile;
use super::{admin_view, user_by_id};
use crate::http::error::{ApiError, ApiResult};
use crate::http::params::{FromParams, Params, flag_input};
use crate::http::request::Api;
use crate::model::now_ms;
use crate::services::notify;
use crate::services::project_deletion;
use crate::services::users::{self, FirstPassword, NewAccount};
use crate::store::user_admin::UserChanges;

/// `POST /users`: what the request must give besides the profile fields (`Profile`), read
/// into the service's account (its profile filled in by the handler). The console's new-user
/// form is read with the same rules.
impl FromParams for NewAccount {
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
        Ok(NewAccount {
            email,
            name,
            username,
            password,
            skip_confirmation: p.bool("skip_confirmation")?.unwrap_or(false),
            projects_limit: p.int("projects_limit")?,
            admin: p.bool("admin")?.unwrap_or(false),
            external_given: p.has("external"),
            profile: UserChanges::default(),
            identity: None,
        })
    }
}

/// The account `params` ask for, with its profile fields (the public email may only be the
/// account's own).
pub fn account_from(params: &Params) -> ApiResult<NewAccount> {
    let mut account = NewAccount::from_params(params)?;
    let mut profile = Profile::from_params(params)?;
    profile.own_public_email(std::slice::from_ref(&account.email))?;
    account.profile = profile.changes;
    account.identity = profile.identity;
    Ok(account)
}

pub async fn create(api: Api) -> ApiResult<Response> {
    let admin_id = api.admin()?.user.id;
    let mut account = account_from(&api.params)?;
    let avatar = api.input::<AvatarChange>()?;
    if let AvatarChange::Set(_, name) = &avatar {
        account.profile.set("avatar_path", name.clone());
    }
    let created = users::create(api.db(), &api.settings, admin_id, account).await?;
    let user = &created.user;
    if let AvatarChange::Set(file, name) = &avatar
        && let Err(error) = avatar::store(&api, avatar::USER, user.id, file, name).await
    {
        users::undo_create(api.db(), user.id, admin_id).await?;
        return Err(error);
    }
    created.send_mails(&api.ctx, &api.tenant).await;
    Ok((StatusCode::CREATED, Json(admin_view(&api, user).await?)).into_response())
}

/// `PUT /users/:id`: what the request may change besides the profile fields (`Profile`,
/// whose `public_email` is checked once the user's own emails are known).
pub(super) struct UpdateUser {
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
        users::check_not_secondary(api.db(), email, Some(user.id)).await?;
    }
    if let Some(password) = password {
        profile.changes.set(
            "password_digest",
            users::hash_new_password(&api.settings, &password)?,
        );
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
    let actor = api.user()?.user.id;
    let updated = users::update(api.db(), user.id, &profile.changes, identity, actor).await?;
    match &avatar {
        AvatarChange::Set(file, name) => {
            avatar::store(&api, avatar::USER, user.id, file, name).await?
        }
        AvatarChange::Remove => avatar::remove(&api, avatar::USER, user.id).await?,
        AvatarChange::Keep => {}
    }
    if let Some(token) = confirmation {
        notify::send_confirmation(&api.ctx, &api.tenant, &updated.name, &updated.email, &token)
            .await;
    }
    Ok(Json(admin_view(&api, &updated).await?).into_response())
}

flag_input!(
    /// `DELETE /users/:id`: `hard_delete` also deletes the user's contributions and the
    /// groups they alone own.
    pub(super) DeleteUser,
    "hard_delete",
    false
);

pub async fn remove(Path(id): Path<String>, api: Api) -> ApiResult<StatusCode> {
    let admin_id = api.admin()?.user.id;
    let DeleteUser(hard_delete) = api.input()?;
    let user = user_by_id(&api, &id).await?;
    let projects = users::delete(api.db(), &user, hard_delete, admin_id).await?;
    // Files go only once the rows are gone for good.
    project_deletion::remove_files_of(&api.ctx.config.storage.data_dir, api.tenant.id, &projects)
        .await;
    avatar::remove(&api, avatar::USER, user.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn remove_identity(
    Path((id, provider)): Path<(String, String)>,
    api: Api,
) -> ApiResult<StatusCode> {
    api.admin()?;
    let user = user_by_id(&api, &id).await?;
    users::remove_identity(api.db(), user.id, &provider).await?;
    Ok(StatusCode::NO_CONTENT)
}
