//! Users' lifecycle: creating an account (`POST /users` and the console's new-user form), the
//! state transitions an administrator may make (block, unblock, deactivate, activate) and
//! deleting a user with what hangs off it.

use chrono::{Duration, NaiveDate};

use super::Refusal;
use super::TakenOn;
use super::notify;
use crate::auth::secrets;
use crate::context::ApiContext;
use crate::events::EventKind;
use crate::model::keys::EmailRow;
use crate::model::now_ms;
use crate::model::states::UserState;
use crate::model::users::UserRow;
use crate::settings::Settings;
use crate::settings::keys::{self, BoolSetting};
use crate::store::TenantDb;
use crate::store::user_admin::{Contributions, StatusRow, UserChanges, UserDeletion};
use crate::store::users::NewUser;
use crate::tenants::Tenant;

/// Users active within this many days cannot be deactivated.
pub const DEACTIVATION_INACTIVE_DAYS: i64 = 180;
const LDAP_BLOCKED: &str = "LDAP blocked users cannot be modified by the API";
const LDAP_UNBLOCK: &str = "LDAP blocked users cannot be unblocked by the API";

/// `POST /users/:id/<action>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateAction {
    Block,
    Unblock,
    Deactivate,
    Activate,
}

/// What an allowed state action does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The user moves to `state`, recorded as `event`; GitLab answers `true`.
    Changed { state: UserState, event: EventKind },
    /// Nothing changes; GitLab answers this body (`null`, `true` or `false`).
    Unchanged(Option<bool>),
}

/// The user a state action is about, as far as the rules look at it.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    pub state: UserState,
    /// The administrator acting on their own account.
    pub is_actor: bool,
    /// `YYYY-MM-DD`.
    pub last_activity_on: Option<&'a str>,
}

/// GitLab's rules between the states: directory-sync (`ldap_blocked`) users are never
/// changed, an administrator cannot block themselves, blocked users are neither deactivated
/// nor activated, deactivated ones are not unblocked, and recently active users are not
/// deactivated. Repeating an action changes nothing.
pub fn transition(
    action: StateAction,
    subject: Subject<'_>,
    today: NaiveDate,
) -> Result<Outcome, Refusal> {
    use Outcome::{Changed, Unchanged};
    let state = subject.state;
    match action {
        StateAction::Block if subject.is_actor => Err(Refusal::forbidden_because(
            "The API initiating user cannot be blocked by the API",
        )),
        StateAction::Block => match state {
            UserState::LdapBlocked => Err(Refusal::forbidden_because(LDAP_BLOCKED)),
            UserState::Blocked => Ok(Unchanged(None)),
            _ => Ok(Changed {
                state: UserState::Blocked,
                event: EventKind::UserBlocked,
            }),
        },
        StateAction::Unblock => match state {
            UserState::LdapBlocked => Err(Refusal::forbidden_because(LDAP_UNBLOCK)),
            UserState::Deactivated => Err(Refusal::forbidden_because(
                "Deactivated users cannot be unblocked by the API",
            )),
            UserState::Blocked => Ok(Changed {
                state: UserState::Active,
                event: EventKind::UserUnblocked,
            }),
            _ => Ok(Unchanged(Some(false))),
        },
        StateAction::Deactivate => match state {
            UserState::Blocked | UserState::LdapBlocked => Err(Refusal::forbidden_because(
                "A blocked user cannot be deactivated by the API",
            )),
            UserState::Deactivated => Ok(Unchanged(Some(true))),
            _ if recently_active(subject.last_activity_on, today) => {
                Err(Refusal::forbidden_because(format!(
                    "The user you are trying to deactivate has been active in the past {DEACTIVATION_INACTIVE_DAYS} days and cannot be deactivated"
                )))
            }
            _ => Ok(Changed {
                state: UserState::Deactivated,
                event: EventKind::UserDeactivated,
            }),
        },
        StateAction::Activate => match state {
            UserState::Blocked | UserState::LdapBlocked => Err(Refusal::forbidden_because(
                "A blocked user must be unblocked to be activated",
            )),
            UserState::Deactivated => Ok(Changed {
                state: UserState::Active,
                event: EventKind::UserActivated,
            }),
            _ => Ok(Unchanged(Some(true))),
        },
    }
}

/// Whether the last activity lies within the deactivation window before `today`.
fn recently_active(last_activity_on: Option<&str>, today: NaiveDate) -> bool {
    let threshold = (today - Duration::days(DEACTIVATION_INACTIVE_DAYS))
        .format("%Y-%m-%d")
        .to_string();
    last_activity_on.is_some_and(|day| day > threshold.as_str())
}

/// Applies `action` to `user` as administrator `actor`, when the rules allow it.
pub async fn change_state(
    db: &TenantDb,
    user: &UserRow,
    action: StateAction,
    actor: i64,
    today: NaiveDate,
) -> Result<Outcome, Refusal> {
    let subject = Subject {
        state: user.state,
        is_actor: user.id == actor,
        last_activity_on: user.last_activity_on.as_deref(),
    };
    let outcome = transition(action, subject, today)?;
    if let Outcome::Changed { state, event } = outcome {
        db.set_user_state(user.id, state, event, Some(actor))
            .await?;
    }
    Ok(outcome)
}

/// Deletes `user` as `actor` in one transaction. A user who is the only owner of a group is
/// kept (409) unless `hard`, which deletes those groups and the user's issues too; otherwise
/// the issues and notes pass to the ghost user. Returns the ids of the deleted projects,
/// whose repositories and files the caller removes.
pub async fn delete(
    db: &TenantDb,
    user: &UserRow,
    hard: bool,
    actor: i64,
) -> Result<Vec<i64>, Refusal> {
    let sole_owner_of = db.solely_owned_groups(user.id).await?;
    if !sole_owner_of.is_empty() && !hard {
        return Err(Refusal::Conflict(
            "User cannot be removed while is the sole-owner of a group".into(),
        ));
    }
    let mut groups = Vec::new();
    for group_id in sole_owner_of {
        groups.extend(db.namespace_by_id(group_id).await?);
    }
    let deletion = UserDeletion {
        groups: &groups,
        contributions: if hard {
            Contributions::Delete
        } else {
            Contributions::Reassign
        },
    };
    let (_, projects) = db.delete_user(user.id, &deletion, actor).await?;
    Ok(projects)
}

/// The unique indexes a user write can run into, and the field each reports.
pub const USER_UNIQUES: &[(&str, &str, &str)] = &[
    ("users", "username_lower", "username"),
    ("users", "email_lower", "email"),
    ("identities", "extern_uid", "extern_uid"),
    // a personal namespace's path is the username; a top-level group may hold it already
    ("namespaces", "path_lower", "username"),
];

/// A new user's password: given, mailed as a reset link, or random (the user resets it).
pub enum FirstPassword {
    Given(String),
    Reset,
    Random,
}

/// An account to create: what `POST /users` requires, and the profile fields it was given
/// (validated, `avatar_path` included) with an identity of an external provider.
pub struct NewAccount {
    pub email: String,
    pub name: String,
    pub username: String,
    pub password: FirstPassword,
    pub skip_confirmation: bool,
    pub projects_limit: Option<i64>,
    pub admin: bool,
    /// Whether `external` is given: when not, the instance's default applies.
    pub external_given: bool,
    pub profile: UserChanges,
    pub identity: Option<(String, String)>,
}

/// A created user and the mails that tell them ([`Created::send_mails`], once whatever the
/// caller stores with the user has been stored).
pub struct Created {
    pub user: UserRow,
    confirmation: Option<String>,
    reset: Option<String>,
}

/// An email that is another user's secondary email is taken (`owner` may hold it).
pub async fn check_not_secondary(
    db: &TenantDb,
    email: &str,
    owner: Option<i64>,
) -> Result<(), Refusal> {
    match db.secondary_email_owner(email).await? {
        Some(user_id) if Some(user_id) != owner => {
            Err(Refusal::invalid("email", "has already been taken"))
        }
        _ => Ok(()),
    }
}

/// A `password_*_required` setting, the character test it asks for, and GitLab's message.
type PasswordRule = (BoolSetting, fn(char) -> bool, &'static str);

pub const MIN_PASSWORD_LENGTH: usize = 8;
const MAX_PASSWORD_LENGTH: usize = 128;

/// Checks a new password against the length limits and the `password_*_required` settings,
/// and returns its bcrypt digest.
pub fn hash_new_password(settings: &Settings, password: &str) -> Result<String, Refusal> {
    let length = password.chars().count();
    let mut problems = Vec::new();
    if length < MIN_PASSWORD_LENGTH {
        problems.push(format!(
            "is too short (minimum is {MIN_PASSWORD_LENGTH} characters)"
        ));
    }
    if length > MAX_PASSWORD_LENGTH {
        problems.push(format!(
            "is too long (maximum is {MAX_PASSWORD_LENGTH} characters)"
        ));
    }
    let rules: [PasswordRule; 4] = [
        (
            keys::PASSWORD_NUMBER_REQUIRED,
            |c| c.is_ascii_digit(),
            "requires at least one number",
        ),
        (
            keys::PASSWORD_SYMBOL_REQUIRED,
            |c| !c.is_alphanumeric() && !c.is_whitespace(),
            "requires at least one symbol character",
        ),
        (
            keys::PASSWORD_UPPERCASE_REQUIRED,
            char::is_uppercase,
            "requires at least one uppercase letter",
        ),
        (
            keys::PASSWORD_LOWERCASE_REQUIRED,
            char::is_lowercase,
            "requires at least one lowercase letter",
        ),
    ];
    for (setting, test, message) in rules {
        if settings.get(setting) && !password.chars().any(test) {
            problems.push(message.to_string());
        }
    }
    if !problems.is_empty() {
        let fields = problems.into_iter().map(|p| ("password", p)).collect();
        return Err(Refusal::Fields(fields));
    }
    Ok(secrets::hash_password(password)?)
}

/// Creates the account with GitLab's rules: the password rules of the instance (a reset or
/// random password stores an unguessable digest), `user_default_external` unless `external`
/// is given, `default_projects_limit`, a confirmation unless skipped; usernames and emails
/// unique (secondary emails included).
pub async fn create(
    db: &TenantDb,
    settings: &Settings,
    admin_id: i64,
    account: NewAccount,
) -> Result<Created, Refusal> {
    super::quotas::check_new_user(db).await?;
    let NewAccount {
        email,
        name,
        username,
        password,
        skip_confirmation,
        projects_limit,
        admin,
        external_given,
        mut profile,
        identity,
    } = account;
    check_not_secondary(db, &email, None).await?;
    let digest = match &password {
        FirstPassword::Given(password) => hash_new_password(settings, password)?,
        FirstPassword::Reset | FirstPassword::Random => {
            secrets::hash_password(&secrets::generate("", 32))?
        }
    };
    if !external_given && settings.get(keys::USER_DEFAULT_EXTERNAL) {
        profile.set("external", true);
    }
    let confirmation = if skip_confirmation {
        profile.set("confirmed_at", now_ms());
        None
    } else {
        let (token, digest) = notify::confirmation_token();
        profile.set("confirmation_token_digest", digest);
        Some(token)
    };
    let reset = matches!(password, FirstPassword::Reset).then(|| secrets::generate("", 20));
    if let Some(token) = &reset {
        profile.set("reset_password_token_digest", secrets::digest(token));
        profile.set("reset_password_sent_at", now_ms());
    }
    let projects_limit = projects_limit.unwrap_or_else(|| {
        settings
            .get(keys::DEFAULT_PROJECTS_LIMIT)
            .unwrap_or(100_000)
    });
    let new_user = NewUser {
        username: &username,
        email: &email,
        name: &name,
        is_admin: admin,
        password_digest: Some(digest),
        projects_limit,
    };
    let identity = identity
        .as_ref()
        .map(|(provider, uid)| (provider.as_str(), uid.as_str()));
    let user = db
        .create_user(new_user, &profile, identity, Some(admin_id))
        .await
        .taken_on(USER_UNIQUES)?;
    Ok(Created {
        user,
        confirmation,
        reset,
    })
}

impl Created {
    /// The confirmation instructions, and the link to set a first password when asked for.
    pub async fn send_mails(&self, ctx: &ApiContext, tenant: &Tenant) {
        let user = &self.user;
        if let Some(token) = &self.confirmation {
            notify::send_confirmation(ctx, tenant, &user.name, &user.email, token).await;
        }
        if let Some(token) = &self.reset {
            let base = &tenant.base_url;
            let link = format!("{base}/users/password/edit?reset_password_token={token}");
            notify::send(ctx, &user.email, "Account was created for you", format!(
                "Hello {},\n\nAn administrator created an account for you on {base}.\nYour username is {}.\n\nSet your password here: {link}\n",
                user.name, user.username
            ))
            .await;
        }
    }
}

/// A user just created that must go again (what was to be stored with it failed): nothing
/// refers to it yet, so a hard delete leaves no ghost behind.
pub async fn undo_create(db: &TenantDb, user_id: i64, admin_id: i64) -> Result<(), Refusal> {
    let nothing = UserDeletion {
        groups: &[],
        contributions: Contributions::Delete,
    };
    db.delete_user(user_id, &nothing, admin_id).await?;
    Ok(())
}

/// Applies an administrator's or the user's own changes (and an external identity, when
/// given) as `actor`; a username or email another user has is GitLab's "has already been
/// taken".
pub async fn update(
    db: &TenantDb,
    user_id: i64,
    changes: &UserChanges,
    identity: Option<(&str, &str)>,
    actor: i64,
) -> Result<UserRow, Refusal> {
    db.update_user(user_id, changes, identity, actor)
        .await
        .taken_on(USER_UNIQUES)?
        .ok_or(Refusal::NotFound("User"))
}

/// Unlinks a user's identity at `provider`.
pub async fn remove_identity(db: &TenantDb, user_id: i64, provider: &str) -> Result<(), Refusal> {
    match db.delete_identity(user_id, provider).await? {
        true => Ok(()),
        false => Err(Refusal::NotFound("Identity")),
    }
}

/// Replaces a user's status; `None` clears it.
pub async fn set_status(
    db: &TenantDb,
    user_id: i64,
    status: Option<&StatusRow>,
) -> Result<(), Refusal> {
    db.set_user_status(user_id, status).await?;
    Ok(())
}

/// Adds a secondary email, unconfirmed when `confirmation_digest` is given. An address any
/// user has is GitLab's "has already been taken".
pub async fn add_email(
    db: &TenantDb,
    owner_id: i64,
    email: &str,
    confirmation_digest: Option<&str>,
) -> Result<EmailRow, Refusal> {
    db.insert_email(owner_id, email, confirmation_digest)
        .await
        .taken_on(&[("emails", "email_lower", "email")])?
        .ok_or_else(|| Refusal::invalid("email", "has already been taken"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 6, 30).unwrap()
    }

    fn subject(state: &str) -> Subject<'static> {
        Subject {
            state: UserState::parse(state).unwrap(),
            is_actor: false,
            last_activity_on: None,
        }
    }

    fn changed(state: &str, event: EventKind) -> Outcome {
        let state = UserState::parse(state).unwrap();
        Outcome::Changed { state, event }
    }

    fn refused(result: Result<Outcome, Refusal>) -> Option<String> {
        match result {
            Err(Refusal::Forbidden(reason)) => reason,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn block_and_unblock() {
        let t = today();
        assert_eq!(
            transition(StateAction::Block, subject("active"), t).unwrap(),
            changed("blocked", EventKind::UserBlocked)
        );
        assert_eq!(
            transition(StateAction::Block, subject("deactivated"), t).unwrap(),
            changed("blocked", EventKind::UserBlocked)
        );
        assert_eq!(
            transition(StateAction::Block, subject("blocked"), t).unwrap(),
            Outcome::Unchanged(None)
        );
        assert_eq!(
            transition(StateAction::Unblock, subject("blocked"), t).unwrap(),
            changed("active", EventKind::UserUnblocked)
        );
        assert_eq!(
            transition(StateAction::Unblock, subject("active"), t).unwrap(),
            Outcome::Unchanged(Some(false))
        );
        assert!(refused(transition(StateAction::Unblock, subject("deactivated"), t)).is_some());
    }

    #[test]
    fn ldap_blocked_users_are_never_changed() {
        for action in [
            StateAction::Block,
            StateAction::Unblock,
            StateAction::Deactivate,
            StateAction::Activate,
        ] {
            assert!(refused(transition(action, subject("ldap_blocked"), today())).is_some());
        }
    }

    #[test]
    fn an_administrator_cannot_block_themselves() {
        let me = Subject {
            is_actor: true,
            ..subject("active")
        };
        assert_eq!(
            refused(transition(StateAction::Block, me, today())).as_deref(),
            Some("The API initiating user cannot be blocked by the API")
        );
        // The other actions are not about oneself.
        assert!(transition(StateAction::Unblock, me, today()).is_ok());
    }

    #[test]
    fn deactivation_needs_180_days_without_activity() {
        let t = today();
        let recent = Subject {
            last_activity_on: Some("2026-06-01"),
            ..subject("active")
        };
        assert!(refused(transition(StateAction::Deactivate, recent, t)).is_some());
        let edge = Subject {
            last_activity_on: Some("2026-01-01"),
            ..subject("active")
        };
        // 2026-06-30 minus 180 days is 2026-01-01: not after it, so inactive long enough.
        assert_eq!(
            transition(StateAction::Deactivate, edge, t).unwrap(),
            changed("deactivated", EventKind::UserDeactivated)
        );
        assert_eq!(
            transition(StateAction::Deactivate, subject("active"), t).unwrap(),
            changed("deactivated", EventKind::UserDeactivated)
        );
        assert_eq!(
            transition(StateAction::Deactivate, subject("deactivated"), t).unwrap(),
            Outcome::Unchanged(Some(true))
        );
        assert!(refused(transition(StateAction::Deactivate, subject("blocked"), t)).is_some());
    }

    #[test]
    fn activation() {
        let t = today();
        assert_eq!(
            transition(StateAction::Activate, subject("deactivated"), t).unwrap(),
            changed("active", EventKind::UserActivated)
        );
        assert_eq!(
            transition(StateAction::Activate, subject("active"), t).unwrap(),
            Outcome::Unchanged(Some(true))
        );
        assert!(refused(transition(StateAction::Activate, subject("blocked"), t)).is_some());
    }
}
