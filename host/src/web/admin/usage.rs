//! `/admin/usage`: the tenant's quotas, which its operator sets (`trellis tenant quota`),
//! beside what the tenant uses of them; read-only here.

use axum::http::StatusCode;
use axum::routing::get;
use maud::html;

use super::{Admin, Section, page};
use crate::context::ApiContext;
use crate::http::routes::Router;
use crate::tenants::quotas::describe;
use crate::web::WebResult;

pub fn router() -> Router<ApiContext> {
    Router::new().route("/admin/usage", get(usage))
}

async fn usage(admin: Admin) -> WebResult {
    let usage = admin.web.tenant.db.quota_usage().await?;
    let body = html! {
        p { "The limits this instance's operator has set, and what the instance uses of them. Only the operator can change them." }
        table {
            thead { tr { th scope="col" { "Quota" } th scope="col" { "Usage" } } }
            tbody {
                @for (quota, shown) in describe(&usage) {
                    tr { th scope="row" { (quota) } td { (shown) } }
                }
            }
        }
    };
    Ok(page(
        &admin,
        StatusCode::OK,
        Section::Usage,
        &[],
        "Usage quotas",
        body,
    ))
}
