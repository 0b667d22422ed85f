//! The tenant's spam check (if one is bound) as a write from this request runs it: issues and
//! merge requests give the service a [`RequestSpamCheck`].

use std::future::Future;

use crate::api::access::ProjectCtx;
use crate::http::request::Api;
use crate::model::users::UserRow;
use crate::plugins::spam::{SpamProject, SpammableKind};
use crate::services::Refusal;
use crate::services::issues::{SpamCheck, SpamText};
use crate::services::spam::{self, Spammable};

/// The spam check of a write of `kind` in `project` by `author`, from this request.
pub struct RequestSpamCheck<'a> {
    api: &'a Api,
    project: &'a ProjectCtx,
    author: &'a UserRow,
    kind: SpammableKind,
    /// GitLab's class name for the spam log (`Issue`, `MergeRequest`).
    noteable_type: &'static str,
}

impl<'a> RequestSpamCheck<'a> {
    pub fn issue(api: &'a Api, project: &'a ProjectCtx, author: &'a UserRow) -> Self {
        RequestSpamCheck {
            api,
            project,
            author,
            kind: SpammableKind::Issue,
            noteable_type: "Issue",
        }
    }

    pub fn merge_request(api: &'a Api, project: &'a ProjectCtx, author: &'a UserRow) -> Self {
        RequestSpamCheck {
            api,
            project,
            author,
            kind: SpammableKind::MergeRequest,
            noteable_type: "MergeRequest",
        }
    }
}

impl SpamCheck for RequestSpamCheck<'_> {
    fn check(&self, text: SpamText<'_>) -> impl Future<Output = Result<bool, Refusal>> + Send {
        let project = &self.project;
        let spammable = Spammable {
            kind: self.kind,
            noteable_type: self.noteable_type,
            title: text.title,
            description: text.description,
            is_update: text.is_update,
            confidential: text.confidential,
            project: Some(SpamProject {
                id: project.project.id,
                path: format!("{}/{}", project.namespace.full_path, project.project.path),
                visibility: project.project.visibility.to_string(),
            }),
        };
        async move {
            let origin = spam::Origin {
                ip: self.api.client_ip,
                user_agent: self.api.user_agent.as_deref(),
            };
            let outcome = spam::check(&self.api.scope(), &origin, self.author, &spammable).await?;
            Ok(outcome.is_some())
        }
    }
}
