//! GitLab's `Application` and `ApplicationWithSecret` entities (admin applications API).

use serde::Serialize;

use crate::model::oauth::ApplicationRow;

#[derive(Serialize, utoipa::ToSchema)]
pub struct ApplicationView {
    pub id: i64,
    pub application_id: String,
    pub application_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    pub callback_url: String,
    pub confidential: bool,
}

impl ApplicationView {
    pub fn new(app: &ApplicationRow, secret: Option<String>) -> Self {
        ApplicationView {
            id: app.id,
            application_id: app.uid.clone(),
            application_name: app.name.clone(),
            secret,
            callback_url: app.redirect_uri.clone(),
            confidential: app.confidential,
        }
    }
}
