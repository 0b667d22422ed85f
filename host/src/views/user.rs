//! The user representations, each a superset of the one before: summary (embedded
//! everywhere), public (a single user), current user (`GET /user`), and the admin view.

use serde::Serialize;

use super::project::CustomAttribute;
use super::{timestamp, timestamp_opt};

use crate::links::UserLinks;
use crate::model::states::UserState;
use crate::model::user_admin::IdentityRow;
use crate::model::users::UserRow;
use crate::policy::Scope;

#[derive(Clone, Serialize, utoipa::ToSchema)]
pub struct UserSummary {
    pub id: i64,
    pub username: String,
    pub name: String,
    #[schema(value_type = String)]
    pub state: UserState,
    pub locked: bool,
    pub avatar_url: Option<String>,
    pub web_url: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct UserPublic {
    #[serde(flatten)]
    pub summary: UserSummary,
    pub created_at: String,
    pub bio: String,
    pub location: String,
    pub public_email: Option<String>,
    pub skype: String,
    pub linkedin: String,
    pub twitter: String,
    pub discord: String,
    pub website_url: String,
    pub organization: String,
    pub job_title: String,
    pub pronouns: Option<String>,
    pub bot: bool,
    pub work_information: Option<String>,
}

/// CE's identity: `saml_provider_id` is GitLab EE's (group SAML).
#[derive(Serialize, utoipa::ToSchema)]
pub struct Identity {
    pub provider: String,
    pub extern_uid: String,
}

/// What a user sees of themselves, and the base of the admin view. The CI minute limits
/// (`shared_runners_minutes_limit`, `extra_...`) are GitLab EE's additions and not shown.
#[derive(Serialize, utoipa::ToSchema)]
pub struct UserSelf {
    #[serde(flatten)]
    pub public: UserPublic,
    pub last_sign_in_at: Option<String>,
    pub confirmed_at: Option<String>,
    pub last_activity_on: Option<String>,
    pub email: String,
    pub theme_id: i64,
    pub color_scheme_id: i64,
    pub projects_limit: i64,
    pub current_sign_in_at: Option<String>,
    pub identities: Vec<Identity>,
    pub can_create_group: bool,
    pub can_create_project: bool,
    pub two_factor_enabled: bool,
    pub external: bool,
    pub private_profile: bool,
    pub commit_email: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct UserAdmin {
    #[serde(flatten)]
    pub user: UserSelf,
    pub is_admin: bool,
    pub note: Option<String>,
    pub current_sign_in_ip: Option<String>,
    pub last_sign_in_ip: Option<String>,
}

/// What administrators are answered about one user: the admin view, with the user's custom
/// attributes when they ask for them (`with_custom_attributes`).
#[derive(Serialize, utoipa::ToSchema)]
pub struct UserAdminDetail {
    #[serde(flatten)]
    pub user: UserAdmin,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom_attributes: Option<Vec<CustomAttribute>>,
}

/// Builds the views of users for one tenant, from its user URLs (its base URL, and whether
/// users without an uploaded avatar get an avatar-service (Gravatar) URL,
/// `avatar_service_enabled`).
pub struct UserViews<'a>(pub UserLinks<'a>);

impl<'a> UserViews<'a> {
    /// The user representations for the scope's tenant and its avatar setting.
    pub fn of(scope: &Scope<'a>) -> UserViews<'a> {
        UserViews(scope.user_links())
    }
}

impl UserViews<'_> {
    pub fn summary(&self, user: &UserRow) -> UserSummary {
        UserSummary {
            id: user.id,
            username: user.username.clone(),
            name: user.name.clone(),
            state: user.state,
            locked: user.is_locked(crate::model::now_ms()),
            avatar_url: self.avatar_url(user),
            web_url: self.0.web_url(user),
        }
    }

    pub fn avatar_url(&self, user: &UserRow) -> Option<String> {
        self.0.avatar_url(user)
    }

    pub fn public(&self, user: &UserRow) -> UserPublic {
        UserPublic {
            summary: self.summary(user),
            created_at: timestamp(user.created_at),
            bio: user.bio.clone(),
            location: user.location.clone(),
            public_email: user.public_email.clone(),
            skype: user.skype.clone(),
            linkedin: user.linkedin.clone(),
            twitter: user.twitter.clone(),
            discord: user.discord.clone(),
            website_url: user.website_url.clone(),
            organization: user.organization.clone(),
            job_title: user.job_title.clone(),
            pronouns: user.pronouns.clone(),
            bot: user.user_type != "human",
            work_information: work_information(user),
        }
    }

    pub fn own(&self, user: &UserRow, identities: &[IdentityRow]) -> UserSelf {
        UserSelf {
            public: self.public(user),
            last_sign_in_at: timestamp_opt(user.last_sign_in_at),
            confirmed_at: timestamp_opt(user.confirmed_at),
            last_activity_on: user.last_activity_on.clone(),
            email: user.email.clone(),
            theme_id: user.theme_id,
            color_scheme_id: user.color_scheme_id,
            projects_limit: user.projects_limit,
            current_sign_in_at: timestamp_opt(user.current_sign_in_at),
            identities: identities
                .iter()
                .filter(|i| i.user_id == user.id)
                .map(|i| Identity {
                    provider: i.provider.clone(),
                    extern_uid: i.extern_uid.clone(),
                })
                .collect(),
            can_create_group: user.can_create_group,
            can_create_project: user.projects_limit > 0 && !user.external,
            two_factor_enabled: user.two_factor_enabled,
            external: user.external,
            private_profile: user.private_profile,
            commit_email: user.email.clone(),
        }
    }

    pub fn admin(&self, user: &UserRow, identities: &[IdentityRow]) -> UserAdmin {
        UserAdmin {
            user: self.own(user, identities),
            is_admin: user.is_admin,
            note: user.note.clone(),
            current_sign_in_ip: user.current_sign_in_ip.clone(),
            last_sign_in_ip: user.last_sign_in_ip.clone(),
        }
    }

    /// The admin view of `user` with its custom attributes among `attributes`
    /// (`(user_id, key, value)`, as loaded for a page of users), when they were asked for.
    pub fn admin_detail(
        &self,
        user: &UserRow,
        identities: &[IdentityRow],
        attributes: Option<&[(i64, String, String)]>,
    ) -> UserAdminDetail {
        UserAdminDetail {
            user: self.admin(user, identities),
            custom_attributes: attributes.map(|all| {
                all.iter()
                    .filter(|(user_id, _, _)| *user_id == user.id)
                    .map(|(_, key, value)| CustomAttribute {
                        key: key.clone(),
                        value: value.clone(),
                    })
                    .collect()
            }),
        }
    }
}

/// GitLab joins job title and organization: "Engineer at Acme".
fn work_information(user: &UserRow) -> Option<String> {
    match (user.job_title.is_empty(), user.organization.is_empty()) {
        (true, true) => None,
        (false, true) => Some(user.job_title.clone()),
        (true, false) => Some(user.organization.clone()),
        (false, false) => Some(format!("{} at {}", user.job_title, user.organization)),
    }
}
