//! May this caller run this service on this project? GitLab's `Gitlab::GitAccess` rules, on top
//! of the project visibility `policy::project` has already checked: the credential's
//! abilities first, then the repository feature, then the caller's level.

use crate::access_level::AccessLevel;
use crate::git::smart_http::Service;
use crate::model::feature_access::FeatureAccess;
use crate::model::visibility::Visibility;
use crate::policy::ProjectCtx;

/// Why a request is refused with 403, in GitLab's words (git shows them as `remote: ...`).
const AUTH_DOWNLOAD: &str = "You are not allowed to download code.";
const AUTH_UPLOAD: &str = "You are not allowed to upload code.";
const DOWNLOAD: &str = "You are not allowed to download code from this project.";
const PUSH: &str = "You are not allowed to push code to this project.";
const ARCHIVED: &str = "You are not allowed to push code to an archived project.";

/// The credential's own limit (a token's scopes): `Err` with GitLab's message when it does not
/// cover `service`.
pub fn credential_allows(service: Service, download: bool, push: bool) -> Result<(), &'static str> {
    match service {
        Service::UploadPack if !download => Err(AUTH_DOWNLOAD),
        Service::ReceivePack if !push => Err(AUTH_UPLOAD),
        _ => Ok(()),
    }
}

/// Whether the caller may read the repository: the repository feature (`disabled`: nobody;
/// `private`: members, Reporter and up in a private project), then Reporter and up, or anyone
/// who may see a public or internal project (Guest included).
fn may_download(ctx: &ProjectCtx) -> bool {
    let private = ctx.project.visibility == Visibility::Private;
    let feature = ctx
        .project
        .feature_access(&ctx.project.settings_json(), "repository_access_level");
    let member_minimum = if private {
        AccessLevel::Reporter
    } else {
        AccessLevel::Guest
    };
    match feature {
        FeatureAccess::Disabled => false,
        FeatureAccess::Private => ctx.admin || ctx.level() >= member_minimum,
        FeatureAccess::Enabled | FeatureAccess::Public => {
            ctx.admin || !private || ctx.level() >= AccessLevel::Reporter
        }
    }
}

/// The caller's right to run `service` on the project it may see: `Err` with GitLab's
/// message otherwise.
pub fn project_allows(ctx: &ProjectCtx, service: Service) -> Result<(), &'static str> {
    match service {
        Service::UploadPack if !may_download(ctx) => Err(DOWNLOAD),
        Service::UploadPack => Ok(()),
        Service::ReceivePack if ctx.project.archived => Err(ARCHIVED),
        Service::ReceivePack
            if may_download(ctx) && (ctx.admin || ctx.level() >= AccessLevel::Developer) =>
        {
            Ok(())
        }
        Service::ReceivePack => Err(PUSH),
    }
}
