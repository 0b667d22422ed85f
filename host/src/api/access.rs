//! The REST API's door to `policy`: a project or group the caller may not see is
//! `404 ... Not Found`, and a moved project's old path answers as GitLab's `find_project!`.

use axum::http::Method;

use crate::http::error::{ApiError, ApiResult};
use crate::http::request::Api;
pub use crate::model::today;
use crate::policy;
pub use crate::policy::{GroupCtx, ProjectCtx};
use crate::store::projects::Viewer;

pub fn viewer(api: &Api) -> Viewer {
    api.scope().viewer()
}

/// The project named by `key` (id or URL-encoded full path) if the caller may see it, else
/// `404 Project Not Found`. At a moved project's old path, as GitLab's `find_project!`: a
/// read is redirected to the same request at the project's id, a write is refused (405).
pub async fn project(api: &Api, key: &str) -> ApiResult<ProjectCtx> {
    let found = policy::project(&api.scope(), key).await?;
    if !found.moved {
        return Ok(found.ctx);
    }
    if !matches!(api.method, Method::GET | Method::HEAD) {
        return Err(ApiError::WriteToMovedProject);
    }
    match path_with_id(&api.origin.path, key.trim(), found.ctx.project.id) {
        Some(path) => Err(ApiError::Moved(api.origin.with_path(&path))),
        // Named elsewhere than in the path (a parameter): answered in place.
        None => Ok(found.ctx),
    }
}

/// `path` with its segment that names `key` replaced by the project id `id`.
fn path_with_id(path: &str, key: &str, id: i64) -> Option<String> {
    let mut segments: Vec<String> = path.split('/').map(str::to_string).collect();
    let named = segments
        .iter_mut()
        .find(|segment| percent_encoding::percent_decode_str(segment).decode_utf8_lossy() == key)?;
    *named = id.to_string();
    Some(segments.join("/"))
}

/// The group named by `key` (id or URL-encoded full path) if the caller may see it, else
/// `404 Group Not Found`.
pub async fn group(api: &Api, key: &str) -> ApiResult<GroupCtx> {
    Ok(policy::group(&api.scope(), key).await?)
}

/// The projects the external authorization service refuses the caller, which lists leave out.
pub async fn refused_projects(api: &Api) -> ApiResult<Vec<i64>> {
    Ok(policy::refused_projects(&api.scope()).await?)
}

#[cfg(test)]
mod tests {
    use super::path_with_id;

    #[test]
    fn the_segment_naming_the_project_becomes_its_id() {
        assert_eq!(
            path_with_id("/api/v4/projects/grp%2Fold/issues", "grp/old", 7).as_deref(),
            Some("/api/v4/projects/7/issues")
        );
        // Lower-case escapes, and a path named in a query parameter instead.
        assert_eq!(
            path_with_id("/api/v4/projects/grp%2fold", "grp/old", 7).as_deref(),
            Some("/api/v4/projects/7")
        );
        assert_eq!(path_with_id("/api/v4/search", "grp/old", 7), None);
    }
}
