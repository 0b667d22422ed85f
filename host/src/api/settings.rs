//! `GET` and `PUT /application/settings`, administrators only. The reading, validating and
//! writing is `services::settings` (which the admin console's settings pages call too).

use crate::http::json::Json;
use crate::http::routes::Doc;
use crate::http::routes::Router;
use axum::http::Method;
use axum::routing::get;

use crate::context::ApiContext;
use crate::http::error::ApiResult;
use crate::http::request::Api;
use crate::services::settings as service;
use crate::settings::validate::SettingsUpdate;
use crate::views;
use crate::views::settings::SettingsView;

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/api/v4/application/settings", get(show).put(update))
        .doc(Method::GET, Doc::new().answers::<SettingsView>())
        .doc(
            Method::PUT,
            Doc::new()
                .input::<SettingsUpdate>()
                .answers::<SettingsView>(),
        )
}

async fn show(api: Api) -> ApiResult<Json<SettingsView>> {
    api.admin()?;
    let settings = service::current(&api.tenant).await?;
    Ok(Json(views::settings::settings(&settings)))
}

async fn update(api: Api) -> ApiResult<Json<SettingsView>> {
    api.admin()?;
    let update: SettingsUpdate = api.input()?;
    let fresh = service::update(&api.ctx, &api.tenant, &update).await?;
    Ok(Json(views::settings::settings(&fresh)))
}
