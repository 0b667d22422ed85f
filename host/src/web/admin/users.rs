//! The console's user pages: the list with search and state filters (`/admin/users`), one
//! user (`/admin/users/:id`), and blocking, unblocking, deactivating and activating them with
//! GitLab's rules and messages (`services::users`, as `POST /users/:id/block` and its kin).
//! A new user (`/admin/users/new`) is read and created as `POST /users` does it
//! (`services::users::create`), confirmed, with a reset link mailed when no password is set,
//! as GitLab's Admin Area does; refusals show next to their fields.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use chrono::{TimeZone, Utc};
use maud::{Markup, html};

use super::{Admin, Section, alert, field_error, field_errors, notice, page};
use crate::api::users::account_from;
use crate::context::ApiContext;
use crate::http::error::ApiError;
use crate::http::params::Params;
use crate::http::routes::Router;
use crate::model::states::UserState;
use crate::model::users::UserRow;
use crate::services::Refusal;
use crate::services::users::{self, Outcome, StateAction};
use crate::store::user_admin::UserFilter;
use crate::store::window::{Direction, Window};
use crate::web::layout::csrf_field;
use crate::web::{WebError, WebResult, found};

const PER_PAGE: i64 = 20;

pub fn router() -> Router<ApiContext> {
    Router::new()
        .route("/admin/users", get(list).post(create))
        .route("/admin/users/new", get(new_user))
        .route("/admin/users/{id}", get(show))
        .route("/admin/users/{id}/{action}", post(change_state))
}

/// The actions, with GitLab's flash after each.
const ACTIONS: [(&str, StateAction, &str); 4] = [
    ("block", StateAction::Block, "Successfully blocked"),
    ("unblock", StateAction::Unblock, "Successfully unblocked"),
    (
        "deactivate",
        StateAction::Deactivate,
        "Successfully deactivated",
    ),
    ("activate", StateAction::Activate, "Successfully activated"),
];

fn when(ms: Option<i64>) -> String {
    ms.and_then(|ms| Utc.timestamp_millis_opt(ms).single())
        .map_or_else(
            || "Never".into(),
            |t| t.format("%Y-%m-%d %H:%M UTC").to_string(),
        )
}

fn state_badge(state: UserState) -> Markup {
    let class = match state {
        UserState::Active => "badge ok",
        UserState::Deactivated => "badge warn",
        _ => "badge bad",
    };
    html! { span class=(class) { (state.as_str()) } }
}

/// The list's filter: all users (`None`), or the active or blocked ones.
fn filter_of(admin: &Admin) -> (UserFilter, String, Option<UserState>) {
    let search = admin.web.field("search").trim().to_string();
    let state = UserState::parse(&admin.web.field("filter"))
        .filter(|state| matches!(state, UserState::Active | UserState::Blocked));
    let filter = UserFilter {
        search: (!search.is_empty()).then(|| search.clone()),
        search_emails: true,
        active: state == Some(UserState::Active),
        blocked: state == Some(UserState::Blocked),
        ..UserFilter::default()
    };
    (filter, search, state)
}

async fn list(admin: Admin) -> WebResult {
    let (filter, search, state) = filter_of(&admin);
    let state = state.map_or("all", UserState::as_str);
    let page_number = admin.web.field("page").parse::<i64>().unwrap_or(1).max(1);
    let window = Window {
        order_by: "id",
        direction: Direction::Desc,
        limit: PER_PAGE + 1,
        offset: (page_number - 1) * PER_PAGE,
        id_after: None,
        id_before: None,
    };
    let mut rows = admin.web.tenant.db.list_users(&filter, &window).await?;
    let more = rows.len() as i64 > PER_PAGE;
    rows.truncate(PER_PAGE as usize);
    let link = |filter: &str, page: i64| {
        form_urlencoded::Serializer::new("/admin/users?".to_string())
            .append_pair("search", &search)
            .append_pair("filter", filter)
            .append_pair("page", &page.to_string())
            .finish()
    };
    let body = html! {
        form.search method="get" action="/admin/users" role="search" {
            label for="user_search" {
                "Search by name, username or email"
                input type="search" id="user_search" name="search" value=(search);
            }
            input type="hidden" name="filter" value=(state);
            button type="submit" { "Search" }
        }
        nav aria-label="Filter users" {
            ul.row-actions style="list-style:none;padding:0" {
                @for (key, label) in [("all", "All"), (UserState::Active.as_str(), "Active"), (UserState::Blocked.as_str(), "Blocked")] {
                    li { a href=(link(key, 1)) aria-current=[(key == state).then_some("page")] { (label) } }
                }
            }
        }
        div.table-wrap {
            table {
                thead { tr {
                    th scope="col" { "Name" } th scope="col" { "Username" }
                    th scope="col" class="hide-narrow" { "Email" } th scope="col" { "State" }
                    th scope="col" class="hide-narrow" { "Last activity" }
                } }
                tbody {
                    @for user in &rows {
                        tr {
                            td { a href={ "/admin/users/" (user.id) } { (user.name) }
                                 @if user.is_admin { " " span.badge { "Admin" } } }
                            td { (user.username) }
                            td class="hide-narrow" { (user.email) }
                            td { (state_badge(user.state)) }
                            td class="hide-narrow" { (user.last_activity_on.as_deref().unwrap_or("Never")) }
                        }
                    }
                }
            }
        }
        @if rows.is_empty() { p { "No users match." } }
        nav.row-actions aria-label="Pages" {
            @if page_number > 1 { a href=(link(state, page_number - 1)) { "Previous page" } }
            @if more { a href=(link(state, page_number + 1)) { "Next page" } }
        }
        p { a.button href="/admin/users/new" { "New user" } }
    };
    Ok(page(
        &admin,
        StatusCode::OK,
        Section::Users,
        &[],
        "Users",
        body,
    ))
}

async fn user_of(admin: &Admin, id: &str) -> Result<UserRow, WebError> {
    let id: i64 = id.parse().map_err(|_| WebError::not_found())?;
    admin
        .web
        .tenant
        .db
        .user_by_id(id)
        .await?
        .filter(|user| user.user_type == "human")
        .ok_or_else(WebError::not_found)
}

fn user_page(
    admin: &Admin,
    status: StatusCode,
    user: &UserRow,
    message: Option<Result<&str, &str>>,
) -> WebResult {
    let body = html! {
        @match message {
            Some(Ok(text)) => { (notice(text)) }
            Some(Err(text)) => { (alert(text)) }
            None => {}
        }
        div.grid {
            section.card aria-labelledby="account-heading" {
                h2 id="account-heading" { "Account" }
                dl.facts {
                    dt { "Username" } dd { (user.username) }
                    dt { "Email" } dd { (user.email) }
                    dt { "State" } dd id="user-state" { (state_badge(user.state)) }
                    dt { "Administrator" } dd { @if user.is_admin { "Yes" } @else { "No" } }
                    dt { "External" } dd { @if user.external { "Yes" } @else { "No" } }
                    dt { "Created" } dd { (when(Some(user.created_at))) }
                    dt { "Last sign-in" } dd { (when(user.last_sign_in_at)) }
                    dt { "Last activity" } dd { (user.last_activity_on.as_deref().unwrap_or("Never")) }
                }
            }
            section.card aria-labelledby="state-heading" {
                h2 id="state-heading" { "Access" }
                p.hint { "Blocking signs the user out and stops their tokens; a blocked user cannot be deactivated or activated until unblocked. Only users inactive for "
                    (users::DEACTIVATION_INACTIVE_DAYS) " days can be deactivated." }
                div.row-actions {
                    @for (name, action, _) in ACTIONS.into_iter().filter(|(_, action, _)| offered(user.state, *action)) {
                        form method="post" action={ "/admin/users/" (user.id) "/" (name) } {
                            (csrf_field(admin.csrf()))
                            @let class = if action == StateAction::Block { "danger" } else { "secondary" };
                            button type="submit" class=(class) { (capitalized(name)) }
                        }
                    }
                }
            }
        }
    };
    Ok(user_subpage(admin, status, &user.name, body))
}

/// The actions worth offering in a state (GitLab shows Block or Unblock, Deactivate or
/// Activate); the rules are checked on submit whatever is offered.
fn offered(state: UserState, action: StateAction) -> bool {
    match state {
        UserState::Active => matches!(action, StateAction::Block | StateAction::Deactivate),
        UserState::Blocked => action == StateAction::Unblock,
        UserState::Deactivated => matches!(action, StateAction::Block | StateAction::Activate),
        _ => true,
    }
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

async fn show(Path(id): Path<String>, admin: Admin) -> WebResult {
    let user = user_of(&admin, &id).await?;
    let done = admin.web.field("done");
    let message = ACTIONS
        .iter()
        .find(|(name, _, _)| *name == done)
        .map(|(_, _, flash)| Ok(*flash))
        .or_else(|| (done == "created").then_some(Ok("User was successfully created.")));
    user_page(&admin, StatusCode::OK, &user, message)
}

async fn change_state(Path((id, action)): Path<(String, String)>, admin: Admin) -> WebResult {
    admin.web.check_csrf()?;
    let (name, action, _) = ACTIONS
        .iter()
        .find(|(name, _, _)| *name == action)
        .copied()
        .ok_or_else(WebError::not_found)?;
    let user = user_of(&admin, &id).await?;
    let today = Utc::now().date_naive();
    match users::change_state(&admin.web.tenant.db, &user, action, admin.user().id, today).await {
        Ok(Outcome::Changed { .. }) => Ok(found(&format!("/admin/users/{}?done={name}", user.id))),
        Ok(Outcome::Unchanged(_)) => {
            let text = format!("Nothing to change: the user is {}.", user.state);
            user_page(&admin, StatusCode::OK, &user, Some(Ok(&text)))
        }
        Err(Refusal::Forbidden(reason)) => {
            let text = reason.unwrap_or_else(|| "You may not do that.".into());
            user_page(&admin, StatusCode::FORBIDDEN, &user, Some(Err(&text)))
        }
        Err(other) => Err(other.into()),
    }
}

/// The new-user form as submitted (the password is never shown again).
#[derive(Default)]
struct NewUserForm {
    name: String,
    username: String,
    email: String,
    password: String,
    admin: bool,
    external: bool,
}

/// The form's text fields: name, label, input type, autocomplete.
const NEW_USER_FIELDS: [(&str, &str, &str, &str); 4] = [
    ("name", "Name", "text", "name"),
    ("username", "Username", "text", "username"),
    ("email", "Email", "email", "email"),
    ("password", "Password", "password", "new-password"),
];

impl NewUserForm {
    fn read(admin: &Admin) -> NewUserForm {
        let web = &admin.web;
        NewUserForm {
            name: web.field("name"),
            username: web.field("username"),
            email: web.field("email"),
            password: web.field("password"),
            admin: web.field("access_level") == "admin",
            external: web.field("external") == "true",
        }
    }

    fn value(&self, name: &str) -> &str {
        match name {
            "name" => &self.name,
            "username" => &self.username,
            "email" => &self.email,
            _ => "",
        }
    }

    /// The parameters `POST /users` would get: confirmed at once, and without a password a
    /// reset link (GitLab's Admin Area creates users so).
    fn params(&self) -> Params {
        let mut values = serde_json::Map::new();
        for (name, value) in [
            ("name", &self.name),
            ("username", &self.username),
            ("email", &self.email),
        ] {
            values.insert(name.into(), value.trim().into());
        }
        values.insert("admin".into(), self.admin.into());
        values.insert("external".into(), self.external.into());
        values.insert("skip_confirmation".into(), true.into());
        if self.password.is_empty() {
            values.insert("reset_password".into(), true.into());
        } else {
            values.insert("password".into(), self.password.clone().into());
        }
        Params::from_json_object(values)
    }
}

fn new_user_page(
    admin: &Admin,
    status: StatusCode,
    form: &NewUserForm,
    errors: &[(String, String)],
) -> WebResult {
    let error = |name: &str| {
        errors
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, message)| message.as_str())
    };
    let body = html! {
        @if !errors.is_empty() { (alert("The user was not created: see the fields below.")) }
        form method="post" action="/admin/users" {
            (csrf_field(admin.csrf()))
            div.grid {
                @for (name, text, kind, autocomplete) in NEW_USER_FIELDS {
                    @let id = format!("user_{name}");
                    @let error_id = format!("{id}_error");
                    @let error = error(name);
                    div.setting {
                        label for=(id) { (text) }
                        @if name == "password" {
                            p.hint id="user_password_hint" { "Leave blank to mail the user a link to set one." }
                        }
                        @let described = match (name == "password", error) {
                            (true, Some(_)) => Some(format!("user_password_hint {error_id}")),
                            (true, None) => Some("user_password_hint".to_string()),
                            (false, Some(_)) => Some(error_id.clone()),
                            (false, None) => None,
                        };
                        input type=(kind) id=(id) name=(name) value=(form.value(name))
                            autocomplete=(autocomplete) required[name != "password"]
                            aria-describedby=[described] aria-invalid=[error.map(|_| "true")];
                        (field_error(&error_id, error))
                    }
                }
                fieldset.setting {
                    legend { "Access level" }
                    label.inline { input type="radio" name="access_level" value="regular" checked[!form.admin]; "Regular" }
                    label.inline { input type="radio" name="access_level" value="admin" checked[form.admin]; "Administrator" }
                }
                div.setting {
                    label.inline for="user_external" {
                        input type="checkbox" id="user_external" name="external" value="true" checked[form.external];
                        "External (sees only the projects they are a member of)"
                    }
                }
            }
            button type="submit" { "Create user" }
        }
    };
    Ok(user_subpage(admin, status, "New user", body))
}

async fn new_user(admin: Admin) -> WebResult {
    new_user_page(&admin, StatusCode::OK, &NewUserForm::default(), &[])
}

async fn create(admin: Admin) -> WebResult {
    admin.web.check_csrf()?;
    let form = NewUserForm::read(&admin);
    let web = &admin.web;
    let created = async {
        let account = account_from(&form.params())?;
        let created =
            users::create(&web.tenant.db, &web.settings, admin.user().id, account).await?;
        created.send_mails(admin.ctx(), &web.tenant).await;
        Ok::<_, ApiError>(created.user)
    }
    .await;
    match created {
        Ok(user) => Ok(found(&format!("/admin/users/{}?done=created", user.id))),
        Err(error) => new_user_page(
            &admin,
            StatusCode::UNPROCESSABLE_ENTITY,
            &form,
            &field_errors(error)?,
        ),
    }
}

/// A page below the users list, with the list as its breadcrumb.
fn user_subpage(admin: &Admin, status: StatusCode, title: &str, body: Markup) -> Response {
    page(
        admin,
        status,
        Section::Users,
        &[("/admin/users", "Users")],
        title,
        body,
    )
}
