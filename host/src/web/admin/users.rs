//! The console's user pages: the list with search and state filters (`/admin/users`), one
//! user (`/admin/users/:id`), and blocking, unblocking, deactivating and activating them with
//! GitLab's rules and messages (`services::users`, as `POST /users/:id/block` and its kin).

use axum::extract::Path;
use axum::http::StatusCode;
use axum::routing::{get, post};
use chrono::{TimeZone, Utc};
use maud::{Markup, html};

use super::{Admin, Section, alert, notice, page};
use crate::context::ApiContext;
use crate::http::routes::Router;
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
        .route("/admin/users", get(list))
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

fn state_badge(state: &str) -> Markup {
    let class = match state {
        "active" => "badge ok",
        "deactivated" => "badge warn",
        _ => "badge bad",
    };
    html! { span class=(class) { (state) } }
}

/// The list's filter: all users, or the active or blocked ones.
fn filter_of(admin: &Admin) -> (UserFilter, String, &'static str) {
    let search = admin.web.field("search").trim().to_string();
    let state = match admin.web.field("filter").as_str() {
        "active" => "active",
        "blocked" => "blocked",
        _ => "all",
    };
    let filter = UserFilter {
        search: (!search.is_empty()).then(|| search.clone()),
        search_emails: true,
        active: state == "active",
        blocked: state == "blocked",
        ..UserFilter::default()
    };
    (filter, search, state)
}

async fn list(admin: Admin) -> WebResult {
    let (filter, search, state) = filter_of(&admin);
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
                @for (key, label) in [("all", "All"), ("active", "Active"), ("blocked", "Blocked")] {
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
                            td { (state_badge(&user.state)) }
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
        p.hint { "New users are created with " code { "POST /api/v4/users" } " (python-gitlab: " code { "gl.users.create" } ")." }
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
                    dt { "State" } dd id="user-state" { (state_badge(&user.state)) }
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
                    @for (name, action, _) in ACTIONS.into_iter().filter(|(_, action, _)| offered(&user.state, *action)) {
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
    let crumbs = [("/admin/users", "Users")];
    Ok(page(
        admin,
        status,
        Section::Users,
        &crumbs,
        &user.name,
        body,
    ))
}

/// The actions worth offering in a state (GitLab shows Block or Unblock, Deactivate or
/// Activate); the rules are checked on submit whatever is offered.
fn offered(state: &str, action: StateAction) -> bool {
    match state {
        "active" => matches!(action, StateAction::Block | StateAction::Deactivate),
        "blocked" => action == StateAction::Unblock,
        "deactivated" => matches!(action, StateAction::Block | StateAction::Activate),
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
        .map(|(_, _, flash)| Ok(*flash));
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
