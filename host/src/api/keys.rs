//! SSH keys (`/user/keys`, `/users/:user_id/keys`) and GPG keys (`/user/gpg_keys`,
//! `/users/:user_id/gpg_keys`). Keys are parsed with real parsers (`crate::keys`); a
//! fingerprint is unique in the tenant.

use crate::http::json::Json;
use crate::http::routes::Doc;
use crate::http::routes::Router;
use axum::extract::Path;
use axum::http::Method;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Serialize;

use crate::context::ApiContext;
use chrono::{DateTime, Utc};

use crate::http::error::{ApiError, ApiResult};
use crate::http::pagination::{COUNT_CAP, Page, PageRequest};
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::model::keys::{GpgKeyRow, SshKeyRow};
use crate::model::users::UserRow;
use crate::services::{self, keys::SshKeyRequest};
use crate::settings::keys::IntSetting;
use crate::store::keys::Owned;
use crate::store::window::Direction;
use crate::views::keys::{GpgKeyView, SshKeyView};

const USAGE_TYPES: &[&str] = &["auth", "signing", "auth_and_signing"];

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route(
            "/api/v4/user/keys",
            get(own_ssh_keys).post(create_own_ssh_key),
        )
        .doc(Method::GET, Doc::new().answers_list::<SshKeyView>())
        .doc(
            Method::POST,
            Doc::new().input::<CreateSshKey>().answers::<SshKeyView>(),
        )
        .route(
            "/api/v4/user/keys/{key_id}",
            get(own_ssh_key).delete(delete_own_ssh_key),
        )
        .doc(Method::GET, Doc::new().answers::<SshKeyView>())
        .route(
            "/api/v4/users/{user_id}/keys",
            get(user_ssh_keys).post(create_user_ssh_key),
        )
        .doc(Method::GET, Doc::new().answers_list::<SshKeyView>())
        .doc(
            Method::POST,
            Doc::new().input::<CreateSshKey>().answers::<SshKeyView>(),
        )
        .route(
            "/api/v4/users/{user_id}/keys/{key_id}",
            get(user_ssh_key).delete(delete_user_ssh_key),
        )
        .doc(Method::GET, Doc::new().answers::<SshKeyView>())
        .route(
            "/api/v4/user/gpg_keys",
            get(own_gpg_keys).post(create_own_gpg_key),
        )
        .doc(Method::GET, Doc::new().answers_list::<GpgKeyView>())
        .doc(
            Method::POST,
            Doc::new().input::<CreateGpgKey>().answers::<GpgKeyView>(),
        )
        .route(
            "/api/v4/user/gpg_keys/{key_id}",
            get(own_gpg_key).delete(delete_own_gpg_key),
        )
        .doc(Method::GET, Doc::new().answers::<GpgKeyView>())
        .route(
            "/api/v4/users/{user_id}/gpg_keys",
            get(user_gpg_keys).post(create_user_gpg_key),
        )
        .doc(Method::GET, Doc::new().answers_list::<GpgKeyView>())
        .doc(
            Method::POST,
            Doc::new().input::<CreateGpgKey>().answers::<GpgKeyView>(),
        )
        .route(
            "/api/v4/users/{user_id}/gpg_keys/{key_id}",
            get(user_gpg_key).delete(delete_user_gpg_key),
        )
        .doc(Method::GET, Doc::new().answers::<GpgKeyView>())
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

/// `POST .../keys`.
struct CreateSshKey {
    key: String,
    title: String,
    usage_type: String,
    expires_at: Option<DateTime<Utc>>,
}

impl FromParams for CreateSshKey {
    fn from_params(params: &Params) -> ApiResult<Self> {
        Ok(CreateSshKey {
            key: params.required_string("key")?,
            title: params.required_string("title")?,
            usage_type: params
                .one_of("usage_type", USAGE_TYPES)?
                .unwrap_or_else(|| "auth_and_signing".into()),
            expires_at: params.datetime("expires_at")?,
        })
    }
}

async fn create_ssh_key(api: &Api, owner: &UserRow, input: CreateSshKey) -> ApiResult<Response> {
    let request = SshKeyRequest {
        title: &input.title,
        key: &input.key,
        usage_type: &input.usage_type,
        expires_at: input.expires_at,
    };
    // An unset restriction (null) is no restriction.
    let restriction = |setting: IntSetting| api.settings.get(setting).unwrap_or(0);
    let actor = api.user()?.user.id;
    let row = services::keys::add_ssh_key(api.db(), owner.id, &request, restriction, actor).await?;
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
    create_ssh_key(&api, &owner, api.input()?).await
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
    api.admin()?;
    let input = api.input()?;
    let owner = named_user(&api, &user_id).await?;
    create_ssh_key(&api, &owner, input).await
}

async fn delete_user_ssh_key(
    Path((user_id, key_id)): Path<(String, String)>,
    api: Api,
) -> ApiResult<StatusCode> {
    let owner = admin_target(&api, &user_id).await?;
    delete_ssh_key(&api, &owner, &key_id).await
}

// ---- GPG keys ---------------------------------------------------------------

/// `POST .../gpg_keys`.
struct CreateGpgKey {
    key: String,
}

impl FromParams for CreateGpgKey {
    fn from_params(params: &Params) -> ApiResult<Self> {
        Ok(CreateGpgKey {
            key: params.required_string("key")?,
        })
    }
}

async fn create_gpg_key(api: &Api, owner: &UserRow, input: CreateGpgKey) -> ApiResult<Response> {
    let actor = api.user()?.user.id;
    let row = services::keys::add_gpg_key(api.db(), owner.id, &input.key, actor).await?;
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
    create_gpg_key(&api, &owner, api.input()?).await
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
    api.admin()?;
    let input = api.input()?;
    let owner = named_user(&api, &user_id).await?;
    create_gpg_key(&api, &owner, input).await
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
