//! SSH keys (`/user/keys`, `/users/:user_id/keys`) and GPG keys (`/user/gpg_keys`,
//! `/users/:user_id/gpg_keys`). Keys are parsed with real parsers (`crate::keys`); a
//! fingerprint is unique in the tenant.

use crate::http::routes::Router;
use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Serialize;

use crate::context::ApiContext;
use crate::http::error::{ApiError, ApiResult, OnConstraint};
use crate::http::pagination::{COUNT_CAP, Page, PageRequest};
use crate::http::request::Api;
use crate::keys::{self, SSH_KEY_MAX_LEN};
use crate::model::keys::{GpgKeyRow, SshKeyRow};
use crate::model::users::UserRow;
use crate::store::keys::{NewGpgKey, NewSshKey, Owned};
use crate::store::window::Direction;
use crate::views::keys::{GpgKeyView, SshKeyView};

const USAGE_TYPES: &[&str] = &["auth", "signing", "auth_and_signing"];

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route(
            "/api/v4/user/keys",
            get(own_ssh_keys).post(create_own_ssh_key),
        )
        .route(
            "/api/v4/user/keys/{key_id}",
            get(own_ssh_key).delete(delete_own_ssh_key),
        )
        .route(
            "/api/v4/users/{user_id}/keys",
            get(user_ssh_keys).post(create_user_ssh_key),
        )
        .route(
            "/api/v4/users/{user_id}/keys/{key_id}",
            get(user_ssh_key).delete(delete_user_ssh_key),
        )
        .route(
            "/api/v4/user/gpg_keys",
            get(own_gpg_keys).post(create_own_gpg_key),
        )
        .route(
            "/api/v4/user/gpg_keys/{key_id}",
            get(own_gpg_key).delete(delete_own_gpg_key),
        )
        .route(
            "/api/v4/users/{user_id}/gpg_keys",
            get(user_gpg_keys).post(create_user_gpg_key),
        )
        .route(
            "/api/v4/users/{user_id}/gpg_keys/{key_id}",
            get(user_gpg_key).delete(delete_user_gpg_key),
        )
}

// ---- shared by keys and emails ----------------------------------------------

/// A path id declared as an integer: anything else is 400 `x is invalid`, as Grape answers.
pub(super) fn path_id(value: &str, name: &str) -> ApiResult<i64> {
    value.parse().map_err(|_| ApiError::invalid(name))
}

/// The user a `/users/:user_id/...` route names (id or username), or 404 User Not Found.
pub(super) async fn named_user(api: &Api, user_id: &str) -> ApiResult<UserRow> {
    api.db()
        .user_by_id_or_username(user_id)
        .await?
        .ok_or(ApiError::NotFound("User"))
}

/// For administrator routes: 401/403 first, then the user.
pub(super) async fn admin_target(api: &Api, user_id: &str) -> ApiResult<UserRow> {
    api.admin()?;
    named_user(api, user_id).await
}

/// One page of `user_id`'s rows of `T`, oldest first, with GitLab's pagination headers.
pub(super) async fn list_owned<T: Owned, V: Serialize>(
    api: &Api,
    user_id: i64,
    view: impl Fn(&T) -> V,
) -> ApiResult<Response> {
    let request = PageRequest::from_params(&api.params)?;
    let window = request.window(&api.params, "id", Direction::Asc)?;
    let rows = api.db().list_owned::<T>(user_id, &window).await?;
    let total = if request.keyset {
        None
    } else {
        Some(api.db().count_owned::<T>(user_id, COUNT_CAP + 1).await?)
    };
    Ok(Page { rows, total }.respond(&request, &api.origin, T::id, view))
}

fn created<V: Serialize>(view: V) -> Response {
    (StatusCode::CREATED, Json(view)).into_response()
}

// ---- SSH keys ---------------------------------------------------------------

/// The host GitLab names in a publishable key's comment: the tenant's host.
fn key_host(api: &Api) -> String {
    url::Url::parse(&api.tenant.base_url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_else(|| api.origin.host_name())
}

fn ssh_view(api: &Api, owner: &UserRow) -> impl Fn(&SshKeyRow) -> SshKeyView {
    let host = key_host(api);
    let name = owner.name.clone();
    move |row| SshKeyView::new(row, &name, &host)
}

async fn create_ssh_key(api: &Api, owner: &UserRow) -> ApiResult<Response> {
    let text = api.params.required_string("key")?;
    let title = api.params.required_string("title")?;
    let usage_type = api
        .params
        .one_of("usage_type", USAGE_TYPES)?
        .unwrap_or_else(|| "auth_and_signing".into());
    let expires_at = api.params.datetime("expires_at")?;
    let title = title.trim();
    if title.is_empty() {
        return Err(ApiError::field("title", "can't be blank"));
    }
    if title.chars().count() > 255 {
        return Err(ApiError::field(
            "title",
            "is too long (maximum is 255 characters)",
        ));
    }
    if text.trim().is_empty() {
        return Err(ApiError::field("key", "can't be blank"));
    }
    if text.len() > SSH_KEY_MAX_LEN {
        return Err(ApiError::field(
            "key",
            format!("is too long (maximum is {SSH_KEY_MAX_LEN} characters)"),
        ));
    }
    let key = keys::parse_ssh_key(&text).ok_or_else(|| ApiError::field("key", "is invalid"))?;
    // An unset restriction (null) is no restriction.
    key.check_restrictions(|setting| api.settings.get(setting).unwrap_or(0))
        .map_err(|message| ApiError::field("key", message))?;
    if expires_at.is_some_and(|at| at <= chrono::Utc::now()) {
        return Err(ApiError::field("key", "has expired"));
    }
    let key_type = key.key_type.label().to_ascii_lowercase();
    let row = api
        .db()
        .insert_ssh_key(
            NewSshKey {
                user_id: owner.id,
                title,
                public_key: &key.text,
                key_type: &key_type,
                bits: key.bits,
                fingerprint: &key.fingerprint_md5,
                fingerprint_sha256: &key.fingerprint_sha256,
                usage_type: &usage_type,
                expires_at: expires_at.map(|at| at.timestamp_millis()),
            },
            api.user()?.user.id,
        )
        .await
        .on_constraint("ssh_keys", "fingerprint_sha256", "fingerprint")?;
    Ok(created(ssh_view(api, owner)(&row)))
}

async fn show_ssh_key(api: &Api, owner: &UserRow, key_id: &str) -> ApiResult<Response> {
    let id = path_id(key_id, "key_id")?;
    let row = api
        .db()
        .owned::<SshKeyRow>(owner.id, id)
        .await?
        .ok_or(ApiError::NotFound("Key"))?;
    Ok(Json(ssh_view(api, owner)(&row)).into_response())
}

async fn delete_ssh_key(api: &Api, owner: &UserRow, key_id: &str) -> ApiResult<StatusCode> {
    let id = path_id(key_id, "key_id")?;
    if api
        .db()
        .delete_owned::<SshKeyRow>(owner.id, id, api.user()?.user.id)
        .await?
    {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound("Key"))
    }
}

async fn own_ssh_keys(api: Api) -> ApiResult<Response> {
    let owner = api.user()?.user.clone();
    list_owned(&api, owner.id, ssh_view(&api, &owner)).await
}

async fn create_own_ssh_key(api: Api) -> ApiResult<Response> {
    let owner = api.user()?.user.clone();
    create_ssh_key(&api, &owner).await
}

async fn own_ssh_key(Path(key_id): Path<String>, api: Api) -> ApiResult<Response> {
    let owner = api.user()?.user.clone();
    show_ssh_key(&api, &owner, &key_id).await
}

async fn delete_own_ssh_key(Path(key_id): Path<String>, api: Api) -> ApiResult<StatusCode> {
    let owner = api.user()?.user.clone();
    delete_ssh_key(&api, &owner, &key_id).await
}

/// Public: anyone, signed in or not, may list a user's SSH keys.
async fn user_ssh_keys(Path(user_id): Path<String>, api: Api) -> ApiResult<Response> {
    let owner = named_user(&api, &user_id).await?;
    list_owned(&api, owner.id, ssh_view(&api, &owner)).await
}

async fn user_ssh_key(
    Path((user_id, key_id)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Response> {
    let owner = named_user(&api, &user_id).await?;
    show_ssh_key(&api, &owner, &key_id).await
}

async fn create_user_ssh_key(Path(user_id): Path<String>, api: Api) -> ApiResult<Response> {
    let owner = admin_target(&api, &user_id).await?;
    create_ssh_key(&api, &owner).await
}

async fn delete_user_ssh_key(
    Path((user_id, key_id)): Path<(String, String)>,
    api: Api,
) -> ApiResult<StatusCode> {
    let owner = admin_target(&api, &user_id).await?;
    delete_ssh_key(&api, &owner, &key_id).await
}

// ---- GPG keys ---------------------------------------------------------------

async fn create_gpg_key(api: &Api, owner: &UserRow) -> ApiResult<Response> {
    let text = api.params.required_string("key")?;
    let key = keys::parse_gpg_key(&text)
        .ok_or_else(|| ApiError::field("key", keys::gpg_key_invalid_message()))?;
    let row = api
        .db()
        .insert_gpg_key(
            NewGpgKey {
                user_id: owner.id,
                public_key: &key.text,
                fingerprint: &key.fingerprint,
                primary_keyid: &key.primary_keyid,
                emails: &key.emails,
            },
            api.user()?.user.id,
        )
        .await
        .on_constraint("gpg_keys", "fingerprint", "fingerprint")?;
    Ok(created(GpgKeyView::new(&row)))
}

async fn show_gpg_key(api: &Api, owner: &UserRow, key_id: &str) -> ApiResult<Response> {
    let id = path_id(key_id, "key_id")?;
    let row = api
        .db()
        .owned::<GpgKeyRow>(owner.id, id)
        .await?
        .ok_or(ApiError::NotFound("GPG Key"))?;
    Ok(Json(GpgKeyView::new(&row)).into_response())
}

async fn delete_gpg_key(api: &Api, owner: &UserRow, key_id: &str) -> ApiResult<StatusCode> {
    let id = path_id(key_id, "key_id")?;
    if api
        .db()
        .delete_owned::<GpgKeyRow>(owner.id, id, api.user()?.user.id)
        .await?
    {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound("GPG Key"))
    }
}

async fn own_gpg_keys(api: Api) -> ApiResult<Response> {
    let owner = api.user()?.user.clone();
    list_owned(&api, owner.id, GpgKeyView::new).await
}

async fn create_own_gpg_key(api: Api) -> ApiResult<Response> {
    let owner = api.user()?.user.clone();
    create_gpg_key(&api, &owner).await
}

async fn own_gpg_key(Path(key_id): Path<String>, api: Api) -> ApiResult<Response> {
    let owner = api.user()?.user.clone();
    show_gpg_key(&api, &owner, &key_id).await
}

async fn delete_own_gpg_key(Path(key_id): Path<String>, api: Api) -> ApiResult<StatusCode> {
    let owner = api.user()?.user.clone();
    delete_gpg_key(&api, &owner, &key_id).await
}

async fn user_gpg_keys(Path(user_id): Path<String>, api: Api) -> ApiResult<Response> {
    let owner = admin_target(&api, &user_id).await?;
    list_owned(&api, owner.id, GpgKeyView::new).await
}

async fn create_user_gpg_key(Path(user_id): Path<String>, api: Api) -> ApiResult<Response> {
    let owner = admin_target(&api, &user_id).await?;
    create_gpg_key(&api, &owner).await
}

async fn user_gpg_key(
    Path((user_id, key_id)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Response> {
    let owner = admin_target(&api, &user_id).await?;
    show_gpg_key(&api, &owner, &key_id).await
}

async fn delete_user_gpg_key(
    Path((user_id, key_id)): Path<(String, String)>,
    api: Api,
) -> ApiResult<StatusCode> {
    let owner = admin_target(&api, &user_id).await?;
    delete_gpg_key(&api, &owner, &key_id).await
}
