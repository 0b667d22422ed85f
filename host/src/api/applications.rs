//! GitLab's admin applications API: `GET/POST /applications`, `DELETE /applications/:id`,
//! `POST /applications/:id/renew-secret`. It manages instance-wide applications (no owner);
//! users register their own on the web pages.

use crate::http::json::Json;
use crate::http::routes::Doc;
use crate::http::routes::Router;
use axum::extract::Path;
use axum::http::Method;
use axum::http::StatusCode;
use axum::routing::{delete, get, post};

use crate::auth::oauth::registration::{self, normalize_uris};
use crate::context::ApiContext;
use crate::http::error::{ApiError, ApiResult};
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::model::oauth::ApplicationRow;
use crate::services::oauth;
use crate::store::oauth::ApplicationFields;
use crate::views::application::ApplicationView;

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/api/v4/applications", get(list).post(create))
        .doc(Method::GET, Doc::new().answers_list::<ApplicationView>())
        .doc(
            Method::POST,
            Doc::new()
                .input::<CreateApplication>()
                .answers::<ApplicationView>(),
        )
        .route("/api/v4/applications/{id}", delete(remove))
        .route("/api/v4/applications/{id}/renew-secret", post(renew))
        .doc(Method::POST, Doc::new().answers::<ApplicationView>())
}

async fn list(api: Api) -> ApiResult<Json<Vec<ApplicationView>>> {
    api.admin()?;
    let apps = api.db().applications_of(None).await?;
    Ok(Json(
        apps.iter().map(|a| ApplicationView::new(a, None)).collect(),
    ))
}

/// `POST /applications`: redirect URIs one per line (or space-separated), scopes
/// space-separated; confidential unless told otherwise.
struct CreateApplication {
    name: String,
    redirect_uri: String,
    scopes: String,
    confidential: bool,
}

impl FromParams for CreateApplication {
    fn from_params(p: &Params) -> ApiResult<Self> {
        Ok(CreateApplication {
            name: p.required_string("name")?,
            redirect_uri: normalize_uris(&p.required_string("redirect_uri")?),
            scopes: p.required_string("scopes")?,
            confidential: p.bool("confidential")?.unwrap_or(true),
        })
    }
}

async fn create(api: Api) -> ApiResult<(StatusCode, Json<ApplicationView>)> {
    api.admin()?;
    let CreateApplication {
        name,
        redirect_uri,
        scopes,
        confidential,
    } = api.input()?;
    let fields = ApplicationFields {
        name: &name,
        redirect_uri: &redirect_uri,
        scopes: &scopes,
        confidential,
    };
    registration::validate(&fields).map_err(ApiError::Validation)?;
    let (app, secret) = oauth::create_application(api.db(), None, &fields).await?;
    Ok((
        StatusCode::CREATED,
        Json(ApplicationView::new(&app, Some(secret))),
    ))
}

/// An instance-wide application by id, or 404.
async fn instance_application(api: &Api, id: &str) -> ApiResult<ApplicationRow> {
    let id: i64 = id.parse().map_err(|_| ApiError::NotFound("Application"))?;
    api.db()
        .application_by_id(id)
        .await?
        .filter(|app| app.owner_id.is_none())
        .ok_or(ApiError::NotFound("Application"))
}

async fn remove(Path(id): Path<String>, api: Api) -> ApiResult<StatusCode> {
    api.admin()?;
    let app = instance_application(&api, &id).await?;
    oauth::delete_application(api.db(), &app).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn renew(Path(id): Path<String>, api: Api) -> ApiResult<(StatusCode, Json<ApplicationView>)> {
    api.admin()?;
    let app = instance_application(&api, &id).await?;
    let secret = oauth::renew_application_secret(api.db(), &app).await?;
    Ok((
        StatusCode::CREATED,
        Json(ApplicationView::new(&app, Some(secret))),
    ))
}
