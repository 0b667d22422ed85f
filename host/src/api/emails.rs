//! Secondary emails: `/user/emails` and the administrator's `/users/:user_id/emails`. An
//! address is unique in the tenant, among secondary emails and users' primary emails alike.

use crate::http::json::Json;
use crate::http::routes::Doc;
use crate::http::routes::Router;
use axum::extract::Path;
use axum::http::Method;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get};

use super::keys::{admin_target, list_owned, named_user, path_id};
use crate::api::users::validate_email;
use crate::context::ApiContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::model::keys::EmailRow;
use crate::model::users::UserRow;
use crate::services::{notify, users};
use crate::views::keys::EmailView;

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route(
            "/api/v4/user/emails",
            get(own_emails).post(create_own_email),
        )
        .doc(Method::GET, Doc::new().answers_list::<EmailView>())
        .doc(
            Method::POST,
            Doc::new().input::<CreateEmail>().answers::<EmailView>(),
        )
        .route(
            "/api/v4/user/emails/{email_id}",
            get(own_email).delete(delete_own_email),
        )
        .doc(Method::GET, Doc::new().answers::<EmailView>())
        .route(
            "/api/v4/users/{user_id}/emails",
            get(user_emails).post(create_user_email),
        )
        .doc(Method::GET, Doc::new().answers_list::<EmailView>())
        .doc(
            Method::POST,
            Doc::new().input::<CreateUserEmail>().answers::<EmailView>(),
        )
        .route(
            "/api/v4/users/{user_id}/emails/{email_id}",
            delete(delete_user_email),
        )
}

/// `POST /user/emails`.
struct CreateEmail {
    email: String,
}

impl FromParams for CreateEmail {
    fn from_params(params: &Params) -> ApiResult<Self> {
        Ok(CreateEmail {
            email: params.required_string("email")?,
        })
    }
}

/// `POST /users/:user_id/emails`: an administrator may skip the confirmation.
struct CreateUserEmail {
    email: String,
    skip_confirmation: bool,
}

impl FromParams for CreateUserEmail {
    fn from_params(params: &Params) -> ApiResult<Self> {
        Ok(CreateUserEmail {
            email: params.required_string("email")?,
            skip_confirmation: params.bool("skip_confirmation")?.unwrap_or(false),
        })
    }
}

async fn create_email(
    api: &Api,
    owner: &UserRow,
    email: &str,
    confirmed: bool,
) -> ApiResult<Response> {
    let email = email.trim();
    if email.is_empty() {
        return Err(ApiError::field("email", "can't be blank"));
    }
    validate_email("email", email)?;
    let token = (!confirmed).then(notify::confirmation_token);
    let digest = token.as_ref().map(|(_, digest)| digest.as_str());
    let row = users::add_email(api.db(), owner.id, email, digest).await?;
    if let Some((token, _)) = token {
        notify::send_confirmation(&api.ctx, &api.tenant, &owner.name, &row.email, &token).await;
    }
    Ok((StatusCode::CREATED, Json(EmailView::new(&row))).into_response())
}

async fn delete_email(api: &Api, owner: &UserRow, email_id: &str) -> ApiResult<StatusCode> {
    let id = path_id(email_id, "email_id")?;
    if api
        .db()
        .delete_owned::<EmailRow>(owner.id, id, api.user()?.user.id)
        .await?
    {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound("Email"))
    }
}

async fn own_emails(api: Api) -> ApiResult<Response> {
    let owner = api.user()?.user.clone();
    list_owned(&api, owner.id, EmailView::new).await
}

async fn create_own_email(api: Api) -> ApiResult<Response> {
    let owner = api.user()?.user.clone();
    let input: CreateEmail = api.input()?;
    create_email(&api, &owner, &input.email, false).await
}

async fn own_email(Path(email_id): Path<String>, api: Api) -> ApiResult<Json<EmailView>> {
    let owner = api.user()?.user.clone();
    let id = path_id(&email_id, "email_id")?;
    let row = api
        .db()
        .owned::<EmailRow>(owner.id, id)
        .await?
        .ok_or(ApiError::NotFound("Email"))?;
    Ok(Json(EmailView::new(&row)))
}

async fn delete_own_email(Path(email_id): Path<String>, api: Api) -> ApiResult<StatusCode> {
    let owner = api.user()?.user.clone();
    delete_email(&api, &owner, &email_id).await
}

async fn user_emails(Path(user_id): Path<String>, api: Api) -> ApiResult<Response> {
    let owner = admin_target(&api, &user_id).await?;
    list_owned(&api, owner.id, EmailView::new).await
}

async fn create_user_email(Path(user_id): Path<String>, api: Api) -> ApiResult<Response> {
    api.admin()?;
    let input: CreateUserEmail = api.input()?;
    let owner = named_user(&api, &user_id).await?;
    create_email(&api, &owner, &input.email, input.skip_confirmation).await
}

async fn delete_user_email(
    Path((user_id, email_id)): Path<(String, String)>,
    api: Api,
) -> ApiResult<StatusCode> {
    let owner = admin_target(&api, &user_id).await?;
    delete_email(&api, &owner, &email_id).await
}
