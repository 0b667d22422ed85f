//! The Users API: lists and profiles, administration (create, update, delete, states,
//! identities), statuses, activities and memberships, and avatars.

mod activity;
pub mod avatar;
mod manage;
mod profile;
mod read;
mod states;
mod status;

pub use manage::account_from;
pub use profile::validate_email;

use crate::http::pagination::PageRequest;
use crate::http::routes::Doc;
use crate::http::routes::Router;
use crate::views::user::{UserAdminDetail, UserPublic, UserSummary};
use crate::views::user_admin::{ActivityView, MembershipView, UserStateAnswer};
use crate::views::user_status::{UserCounts, UserStatusView};
use axum::http::Method;
use axum::routing::{delete, get, post};

use crate::context::ApiContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::params::flag_input;
use crate::http::request::Api;
use crate::model::users::UserRow;

pub fn router() -> Router<ApiContext> {
    let answers_state = || Doc::new().answers::<UserStateAnswer>();
    let answers_status = || Doc::new().answers::<UserStatusView>();
    Router::new()
        .route("/api/v4/users", get(read::list).post(manage::create))
        .doc(
            Method::GET,
            Doc::new()
                .input::<read::UserListQuery>()
                .input::<read::AdminUserFilters>()
                .input::<UserShape>()
                .input::<PageRequest>()
                .answers_list::<UserSummary>(),
        )
        .doc(
            Method::POST,
            Doc::new()
                .reads(manage::account_from)
                .input::<avatar::AvatarChange>()
                .input::<UserShape>()
                .answers::<UserAdminDetail>(),
        )
        .route(
            "/api/v4/users/{id}",
            get(read::show).put(manage::update).delete(manage::remove),
        )
        .doc(
            Method::GET,
            Doc::new().input::<UserShape>().answers::<UserPublic>(),
        )
        .doc(
            Method::PUT,
            Doc::new()
                .input::<manage::UpdateUser>()
                .input::<profile::Profile>()
                .input::<avatar::AvatarChange>()
                .input::<UserShape>()
                .answers::<UserAdminDetail>(),
        )
        .doc(Method::DELETE, Doc::new().input::<manage::DeleteUser>())
        .route(
            "/api/v4/users/{id}/identities/{provider}",
            delete(manage::remove_identity),
        )
        .route("/api/v4/users/{id}/block", post(states::block))
        .doc(Method::POST, answers_state())
        .route("/api/v4/users/{id}/unblock", post(states::unblock))
        .doc(Method::POST, answers_state())
        .route("/api/v4/users/{id}/deactivate", post(states::deactivate))
        .doc(Method::POST, answers_state())
        .route("/api/v4/users/{id}/activate", post(states::activate))
        .doc(Method::POST, answers_state())
        .route("/api/v4/users/{id}/status", get(status::show_for))
        .doc(Method::GET, answers_status())
        .route(
            "/api/v4/user/status",
            get(status::show_own).put(status::update),
        )
        .doc(Method::GET, answers_status())
        .doc(Method::PUT, answers_status().input::<status::SetStatus>())
        .route("/api/v4/user_counts", get(read::counts))
        .doc(Method::GET, Doc::new().answers::<UserCounts>())
        .route("/api/v4/user/activities", get(activity::activities))
        .doc(
            Method::GET,
            Doc::new()
                .input::<activity::ActivityQuery>()
                .input::<PageRequest>()
                .answers_list::<ActivityView>(),
        )
        .route("/api/v4/users/{id}/memberships", get(activity::memberships))
        .doc(
            Method::GET,
            Doc::new()
                .input::<activity::MembershipQuery>()
                .input::<PageRequest>()
                .answers_list::<MembershipView>(),
        )
        .route("/api/v4/users/{id}/projects", get(read::projects))
        .doc(
            Method::GET,
            crate::api::projects::list_doc(crate::api::projects::ListKind::UserProjects),
        )
        .route(
            "/api/v4/users/{id}/starred_projects",
            get(read::starred_projects),
        )
        .doc(
            Method::GET,
            crate::api::projects::list_doc(crate::api::projects::ListKind::Starred),
        )
        .route(
            "/uploads/-/system/user/avatar/{id}/{filename}",
            get(avatar::serve),
        )
}

/// A user named by numeric id in the path, or 404.
async fn user_by_id(api: &Api, id: &str) -> ApiResult<UserRow> {
    let id: i64 = id.parse().map_err(|_| ApiError::NotFound("User"))?;
    api.db()
        .user_by_id(id)
        .await?
        .filter(|u| u.user_type == "human")
        .ok_or(ApiError::NotFound("User"))
}

/// A user named by id or username, or 404.
async fn user_by_key(api: &Api, key: &str) -> ApiResult<UserRow> {
    api.db()
        .user_by_id_or_username(key)
        .await?
        .filter(|u| u.user_type == "human")
        .ok_or(ApiError::NotFound("User"))
}

flag_input!(
    /// `with_custom_attributes`: whether an administrator's view of a user lists them.
    UserShape,
    "with_custom_attributes",
    false
);

/// The administrator's view of one user, with identities and (when asked) custom attributes.
async fn admin_view(api: &Api, user: &UserRow) -> ApiResult<UserAdminDetail> {
    let UserShape(with_custom_attributes) = api.input()?;
    let identities = api.db().identities_of(&[user.id]).await?;
    let attributes = match with_custom_attributes {
        true => Some(api.db().custom_attributes_of(&[user.id]).await?),
        false => None,
    };
    Ok(api
        .user_views()
        .admin_detail(user, &identities, attributes.as_deref()))
}
