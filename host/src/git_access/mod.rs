//! May this caller run this git service on this project, over this transport? The one
//! decision smart HTTP (`git_http`) and SSH (`ssh`) share, so both apply exactly GitLab's
//! `Gitlab::GitAccess` rules: the credential's abilities, the instance's
//! `enabled_git_access_protocol`, the project's visibility (`policy::project`), the
//! repository feature and the caller's level ([`rules`]), then the repository's existence.
//! Each transport renders the refusal its own way (an HTTP status, or a message on SSH's
//! stderr).

pub(crate) mod rules;
pub mod slots;
pub mod transfers;

use std::net::IpAddr;
use std::sync::Arc;

use crate::auth::Caller;
use crate::context::ApiContext;
use crate::git::Repository;
use crate::git::smart_http::Service;
use crate::model::namespaces::NamespaceRow;
use crate::model::projects::ProjectRow;
use crate::model::states::UserState;
use crate::model::users::UserRow;
use crate::policy::{self, Scope};
use crate::services::Refusal;
use crate::services::protected_branches::{Actor, DefaultBranchProtection};
use crate::services::push::{Push, PushContext, PushOrigin};
use crate::settings::Settings;
use crate::settings::keys;
use crate::tenants::Tenant;

/// GitLab's answer for a project the caller may not see, or that does not exist.
pub const NOT_FOUND: &str =
    "The project you were looking for could not be found or you don't have permission to view it.";
/// GitLab's answer for a project whose repository has not been created.
pub const NO_REPOSITORY: &str = "A repository for this project does not exist yet.";

/// GitLab's refusal of a git command to a signed-in user who is not active
/// (`Gitlab::Auth::UserAccessDeniedReason`); `None` for an active user. `base_url` is where
/// a deactivated user signs in again.
pub fn inactive_account(user: &UserRow, base_url: &str) -> Option<String> {
    Some(match user.state {
        _ if user.can_use_api() => return None,
        UserState::BlockedPendingApproval => {
            "Your account is pending approval from your administrator and hence blocked.".into()
        }
        UserState::Deactivated => format!(
            "Your account has been deactivated by your administrator. Please log back in from a web browser to reactivate your account at {base_url}"
        ),
        _ => "Your account has been blocked.".into(),
    })
}

/// A namespace and project path as both transports accept it: two or more segments of
/// letters, digits, `_`, `-` and `.`, none empty, none `.` or `..`.
pub fn plain_project_path(path: &str) -> bool {
    path.contains('/')
        && path.split('/').all(|segment| {
            !segment.is_empty()
                && segment != "."
                && segment != ".."
                && segment
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
        })
}

/// The transport a git client came over (GitLab's protocol names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Http,
    Ssh,
}

impl Transport {
    /// The value of `enabled_git_access_protocol` that allows only this transport.
    fn setting_value(self) -> &'static str {
        match self {
            Transport::Http => "http",
            Transport::Ssh => "ssh",
        }
    }

    /// Whether the tenant's `enabled_git_access_protocol` (null or "": both) allows it.
    fn enabled(self, setting: Option<&str>) -> bool {
        match setting {
            None | Some("") => true,
            Some(only) => only == self.setting_value(),
        }
    }

    /// GitLab's refusal when the transport is turned off.
    fn disabled_message(self) -> String {
        format!(
            "Git access over {} is not allowed",
            self.setting_value().to_ascii_uppercase()
        )
    }
}

/// What the credential itself allows (a token's scopes; a password or an SSH key: both).
#[derive(Debug, Clone, Copy)]
pub struct Abilities {
    pub download: bool,
    pub push: bool,
}

/// Why a git request is refused.
#[derive(Debug)]
pub enum Denied {
    /// Nobody signed in, and someone might be allowed: HTTP asks for credentials.
    CredentialsNeeded,
    /// The project is not there for this caller ([`NOT_FOUND`]).
    NotFound,
    /// Refused with GitLab's message.
    Forbidden(String),
    /// The project exists but its repository does not ([`NO_REPOSITORY`]).
    NoRepository,
    Failed(Refusal),
}

/// A git client's request over either transport: the tenant it reached, who it signed in as
/// (nobody when anonymous), the tenant's settings, and the address it came from.
pub struct GitClient {
    pub ctx: ApiContext,
    pub tenant: Tenant,
    pub settings: Arc<Settings>,
    pub caller: Option<Caller>,
    pub client_ip: IpAddr,
}

impl GitClient {
    pub fn scope(&self) -> Scope<'_> {
        Scope {
            ctx: &self.ctx,
            tenant: &self.tenant,
            caller: self.caller.as_ref(),
            settings: &self.settings,
        }
    }
}

/// An allowed request: the project and its repository.
pub struct Allowed {
    pub project: ProjectRow,
    pub repo: Repository,
    /// The project's namespace (its group's default branch protection applies to a push).
    pub namespace: NamespaceRow,
    /// The caller's level in the project, and whether they administer the instance.
    pub actor: Actor,
    /// The old path the client named, when the project has moved from it.
    pub moved: Option<MovedFrom>,
}

/// The old path a git client named, and the transport it came over (its new remote's kind).
pub struct MovedFrom {
    pub path: String,
    pub transport: Transport,
}

impl Allowed {
    /// The push session of a `receive-pack` that the scope's caller runs here: every
    /// transport runs git with its `receive_options()` and calls its `finish()` once git has
    /// exited, so the pre-receive checks and what follows a push are the same over HTTP and
    /// SSH. `None` for an anonymous caller, who is never allowed to push.
    pub fn start_push(&self, scope: &Scope<'_>) -> Option<Push> {
        let caller = scope.caller?;
        Some(self.push_by(scope, &caller.user, PushOrigin::Git))
    }

    /// The push session of `pusher`'s changes here; `via_api` for the repository API's own
    /// commits, branches and tags, which GitLab decides with a few allowances of its own.
    pub fn push_by(&self, scope: &Scope<'_>, pusher: &UserRow, origin: PushOrigin) -> Push {
        let context = PushContext {
            db: scope.db().clone(),
            repo: self.repo.clone(),
            default_branch_protection: DefaultBranchProtection::of(scope.settings, &self.namespace),
            pusher_avatar: scope.user_links().avatar_url(pusher),
            pusher: pusher.clone(),
            actor: self.actor,
            project: self.project.clone(),
            origin,
            notice: self.moved_notice(scope),
        };
        scope.ctx.pushes.start(context, scope.settings)
    }
}

impl Allowed {
    /// GitLab's `Checks::ContainerMoved` message for a push to an old path: where the
    /// project is now, and the remote to use.
    fn moved_notice(&self, scope: &Scope<'_>) -> Option<String> {
        let moved = self.moved.as_ref()?;
        let old_path = &moved.path;
        let full_path = format!("{}/{}", self.namespace.full_path, self.project.path);
        let url = match moved.transport {
            Transport::Ssh => scope.ssh_url(&full_path),
            Transport::Http => format!("{}/{full_path}.git", scope.tenant.base_url),
        };
        Some(format!(
            "Project '{old_path}' was moved to '{full_path}'.\n\nPlease update your Git remote:\n\n  git remote set-url origin {url}\n"
        ))
    }
}

/// Decides whether the scope's caller (signed in with a credential allowing `abilities`, or
/// anonymous when `None`) may run `service` on the project at `path` over `transport`.
pub async fn authorize(
    scope: &Scope<'_>,
    transport: Transport,
    abilities: Option<Abilities>,
    path: &str,
    service: Service,
) -> Result<Allowed, Denied> {
    let anonymous = abilities.is_none();
    match abilities {
        Some(Abilities { download, push }) => {
            rules::credential_allows(service, download, push)
                .map_err(|message| Denied::Forbidden(message.into()))?;
        }
        // Pushing always needs credentials.
        None if service == Service::ReceivePack => return Err(Denied::CredentialsNeeded),
        None => {}
    }
    let protocol = scope.settings.get(keys::ENABLED_GIT_ACCESS_PROTOCOL);
    if !transport.enabled(protocol.as_deref()) {
        return Err(Denied::Forbidden(transport.disabled_message()));
    }
    let (project_ctx, moved) = match policy::project(scope, path).await {
        Ok(found) => (found.ctx, found.moved),
        // Anonymous callers are asked for credentials rather than told it does not exist.
        Err(Refusal::NotFound(_)) if anonymous => return Err(Denied::CredentialsNeeded),
        Err(Refusal::NotFound(_)) => return Err(Denied::NotFound),
        Err(error) => return Err(Denied::Failed(error)),
    };
    if let Err(message) = rules::project_allows(&project_ctx, service) {
        // A visitor without credentials may be someone who has them.
        return Err(if anonymous {
            Denied::CredentialsNeeded
        } else {
            Denied::Forbidden(message.into())
        });
    }
    let actor = Actor {
        level: project_ctx.level(),
        admin: project_ctx.admin,
    };
    let (project, namespace) = (project_ctx.project, project_ctx.namespace);
    let repo = Repository::project(
        &scope.ctx.config.storage.data_dir,
        scope.tenant.id,
        project.id,
    );
    if !repo.exists().await {
        return Err(Denied::NoRepository);
    }
    Ok(Allowed {
        project,
        repo,
        namespace,
        actor,
        moved: moved.then(|| MovedFrom {
            path: path.to_string(),
            transport,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_setting_allows_one_or_both() {
        for transport in [Transport::Http, Transport::Ssh] {
            assert!(transport.enabled(None));
            assert!(transport.enabled(Some("")));
        }
        assert!(Transport::Ssh.enabled(Some("ssh")));
        assert!(!Transport::Ssh.enabled(Some("http")));
        assert!(!Transport::Http.enabled(Some("ssh")));
        assert_eq!(
            Transport::Ssh.disabled_message(),
            "Git access over SSH is not allowed"
        );
    }
}
