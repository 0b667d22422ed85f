//! What a merge request changes: its commits, its diff (as `changes`, paginated `diffs` and
//! `raw_diffs`) and the versions of its diff, read from the repository at the MR's diff
//! references (the latest version).

use axum::extract::Path;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::{SingleExtras, load, merge_settings, render, repository};
use crate::api::repository::page;
use crate::git::commits::{Commit, LogQuery};
use crate::git::refs::Revision;
use crate::http::error::ApiError;
use crate::http::error::ApiResult;
use crate::http::json::Json;
use crate::http::request::Api;
use crate::model::merge_requests::MergeRequestRow;
use crate::policy::merge_requests::MergeRequestCtx;
use crate::services::diffs::{self, Presentation};
use crate::services::merge_requests::{self, issue_references};
use crate::store::issue_notes::NoteOrder;
use crate::views::issue::IssueView;
use crate::views::merge_request::{MergeRefView, MergeRequestView, version};
use crate::views::repository::{DiffView, RepoViews, diff};

/// GitLab lists at most this many commits of a merge request.
const MAX_COMMITS: i64 = 1_000;

/// The commits of `mr`'s latest version (the source's the target lacks), newest first.
async fn commits_of(api: &Api, mr: &MergeRequestRow) -> ApiResult<Vec<Commit>> {
    let (Some(head), Some(base)) = (&mr.head_sha, &mr.base_sha) else {
        return Ok(Vec::new());
    };
    let revision = Revision::parse(head);
    let query = LogQuery {
        revision: revision.as_ref(),
        exclude: Some(base),
        limit: MAX_COMMITS,
        ..LogQuery::default()
    };
    Ok(repository(api, mr.project_id).log(&query).await?)
}

/// `GET .../commits`: the source's commits the target lacks, newest first.
pub async fn commits(Path((id, iid)): Path<(String, String)>, api: Api) -> ApiResult<Response> {
    let ctx = load(&api, &id, &iid).await?;
    let mr = &ctx.mr;
    let commits = commits_of(&api, mr).await?;
    let web_url = format!(
        "{}/{}/{}",
        api.tenant.base_url, ctx.project.namespace.full_path, ctx.project.project.path
    );
    let views = RepoViews {
        web_url: &web_url,
        project_id: mr.project_id,
    };
    page(&api, commits.iter().map(|c| views.commit(c)).collect())
}

async fn read_diffs(
    api: &Api,
    mr: &crate::model::merge_requests::MergeRequestRow,
) -> ApiResult<Vec<DiffView>> {
    let (Some(base), Some(head)) = (&mr.base_sha, &mr.head_sha) else {
        return Ok(Vec::new());
    };
    let repo = repository(api, mr.project_id);
    let diffs = diffs::read(
        &repo,
        &api.settings,
        Some(base),
        head,
        Presentation::Expanded,
    )
    .await?;
    Ok(diffs.files.iter().map(diff).collect())
}

/// `GET .../changes` (deprecated in GitLab, still used): the MR with its `changes`.
pub async fn changes(
    Path((id, iid)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<serde_json::Value>> {
    let ctx = load(&api, &id, &iid).await?;
    let view: MergeRequestView =
        render(&api, &ctx, &ctx.mr, false, SingleExtras::default()).await?;
    let files = read_diffs(&api, &ctx.mr).await?;
    let mut body = serde_json::to_value(view).map_err(anyhow::Error::from)?;
    body["changes"] = serde_json::to_value(files).map_err(anyhow::Error::from)?;
    body["overflow"] = serde_json::Value::Bool(false);
    Ok(Json(body))
}

/// `GET .../diffs`: the files of the latest diff, paginated.
pub async fn diffs(Path((id, iid)): Path<(String, String)>, api: Api) -> ApiResult<Response> {
    let ctx = load(&api, &id, &iid).await?;
    let files = read_diffs(&api, &ctx.mr).await?;
    page(&api, files)
}

/// `GET .../raw_diffs`: the latest diff as `git diff` writes it.
pub async fn raw_diffs(Path((id, iid)): Path<(String, String)>, api: Api) -> ApiResult<Response> {
    let ctx = load(&api, &id, &iid).await?;
    let patch = match (&ctx.mr.base_sha, &ctx.mr.head_sha) {
        (Some(base), Some(head)) => {
            repository(&api, ctx.mr.project_id)
                .patch(base, head)
                .await?
        }
        _ => Vec::new(),
    };
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], patch).into_response())
}

/// `GET .../versions`: every version of the diff, newest first.
pub async fn versions(Path((id, iid)): Path<(String, String)>, api: Api) -> ApiResult<Response> {
    let ctx = load(&api, &id, &iid).await?;
    let rows = api.db().merge_request_versions(ctx.mr.id).await?;
    page(&api, rows.iter().map(version).collect())
}

/// `GET .../closes_issues`: the issues merging the MR into the default branch closes, as the
/// caller may see them (confidential ones for Reporters, their authors and assignees).
pub async fn closes_issues(
    Path((id, iid)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Response> {
    let ctx = load(&api, &id, &iid).await?;
    let ids = api.db().closing_issue_ids(ctx.mr.id).await?;
    issues_page(&api, &ctx, ids).await
}

/// GitLab reads at most this many of an MR's references to its project's issues.
const MAX_RELATED_ISSUES: usize = 100;

/// `GET .../related_issues`: the project's issues the MR's title, description, visible notes
/// and commit messages refer to (`#N`), as GitLab's `MergeRequest#related_issues`.
pub async fn related_issues(
    Path((id, iid)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Response> {
    let ctx = load(&api, &id, &iid).await?;
    let mr = &ctx.mr;
    let mut texts = vec![mr.title.clone(), mr.description.clone().unwrap_or_default()];
    let order = NoteOrder {
        updated: false,
        ascending: true,
    };
    let notes = api.db().merge_request_notes(mr.id, order, 1_000, 0).await?;
    let reporter = crate::policy::issues::is_reporter(&ctx.project);
    texts.extend(
        notes
            .into_iter()
            .filter(|n| !n.system && (!n.internal || reporter))
            .map(|n| n.body),
    );
    texts.extend(commits_of(&api, mr).await?.into_iter().map(|c| c.message));
    let mut ids = Vec::new();
    for iid in issue_references(&texts.join("\n"))
        .into_iter()
        .take(MAX_RELATED_ISSUES)
    {
        if let Some(issue) = api.db().issue_by_iid(mr.project_id, iid).await? {
            ids.push(issue.id);
        }
    }
    issues_page(&api, &ctx, ids).await
}

/// Issues `ids` of the MR's project as the caller may see them (the issues feature, and a
/// confidential issue only for reporters, its author and assignees), in the list form.
async fn issues_page(api: &Api, ctx: &MergeRequestCtx, ids: Vec<i64>) -> ApiResult<Response> {
    if !crate::policy::issues::issues_readable(&ctx.project) {
        return page(api, Vec::<IssueView>::new());
    }
    let mut rows = api.db().issues_by_ids(&ids).await?;
    if !crate::policy::issues::is_reporter(&ctx.project) {
        let caller = api.caller.as_ref().map(|c| c.user.id);
        let assigned = api
            .db()
            .assignees_of_issues(&ids)
            .await?
            .into_iter()
            .filter(|a| Some(a.user.id) == caller)
            .map(|a| a.issue_id)
            .collect::<Vec<_>>();
        rows.retain(|i| !i.confidential || Some(i.author_id) == caller || assigned.contains(&i.id));
    }
    let batch = crate::api::issues::batch(api, &rows, false).await?;
    let shape = crate::api::issues::shape(api, false)?;
    let views = crate::api::issues::views(api);
    let shown = rows.iter().map(|i| views.issue(i, &batch, shape)).collect();
    page(api, shown)
}

/// `GET .../merge_ref`: the merge the MR would make now, written to
/// `refs/merge-requests/<iid>/merge` (GitLab's `MergeabilityCheckService` with a recheck), or
/// 400 when it cannot be merged.
pub async fn merge_ref(
    Path((id, iid)): Path<(String, String)>,
    api: Api,
) -> ApiResult<Json<MergeRefView>> {
    let ctx = load(&api, &id, &iid).await?;
    let repo = repository(&api, ctx.mr.project_id);
    let full_path = format!(
        "{}/{}",
        ctx.project.namespace.full_path, ctx.project.project.path
    );
    let settings = merge_settings(&ctx);
    match merge_requests::write_merge_ref(api.db(), &repo, &ctx.mr, &settings, &full_path).await? {
        Some(commit_id) => Ok(Json(MergeRefView { commit_id })),
        None => Err(ApiError::Rejected("Merge request is not mergeable".into())),
    }
}
