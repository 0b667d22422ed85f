//! A signed-in user's OAuth applications at `/profile/applications` (and GitLab's newer
//! `/user_settings/applications`, `/-/user_settings/applications`): register, list, edit,
//! renew the secret, delete. The secret is shown once, when it is made. Registering is
//! refused when the `user_oauth_applications` setting is off, except for administrators.

use crate::http::routes::Router;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use maud::{Markup, html};
use serde_json::Value;

use super::layout::{self, csrf_field, errors};
use super::session::Session;
use super::{Web, WebError, WebResult, found};
use crate::auth::oauth::registration::{self, FieldErrors, normalize_uris};
use crate::auth::oauth::scopes;
use crate::context::ApiContext;
use crate::model::oauth::ApplicationRow;
use crate::services::oauth;
use crate::settings::keys;
use crate::store::oauth::ApplicationFields;

const BASES: &[&str] = &[
    "/profile/applications",
    "/user_settings/applications",
    "/-/user_settings/applications",
];

pub fn router() -> Router<ApiContext> {
    let mut router = Router::new();
    for base in BASES {
        router = router
            .route(base, get(list).post(create))
            .route(&format!("{base}/{{id}}"), get(show).post(change))
            .route(&format!("{base}/{{id}}/renew"), post(renew));
    }
    router.route(
        "/oauth/authorized_applications/{id}",
        post(revoke_authorization).delete(revoke_authorization),
    )
}

/// The base path this request came in on, so links stay on it.
fn base(web: &Web) -> &'static str {
    BASES
        .iter()
        .rev()
        .find(|b| web.origin.path.starts_with(*b))
        .copied()
        .unwrap_or(BASES[0])
}

/// The form's values (`doorkeeper_application[...]`, as GitLab names them).
struct Form {
    name: String,
    redirect_uri: String,
    scopes: String,
    confidential: bool,
}

impl Form {
    fn read(web: &Web) -> Form {
        let text = |name: &str| {
            web.nested("doorkeeper_application", name)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let scopes = match web.nested("doorkeeper_application", "scopes") {
            Some(Value::Array(list)) => list
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" "),
            Some(Value::String(s)) => s.clone(),
            _ => String::new(),
        };
        Form {
            name: text("name").trim().to_string(),
            redirect_uri: normalize_uris(&text("redirect_uri")),
            scopes,
            confidential: matches!(text("confidential").as_str(), "1" | "true" | "on"),
        }
    }

    fn of(app: &ApplicationRow) -> Form {
        Form {
            name: app.name.clone(),
            redirect_uri: app.redirect_uri.clone(),
            scopes: app.scopes.clone(),
            confidential: app.confidential,
        }
    }

    fn fields(&self) -> ApplicationFields<'_> {
        ApplicationFields {
            name: &self.name,
            redirect_uri: &self.redirect_uri,
            scopes: &self.scopes,
            confidential: self.confidential,
        }
    }
}

/// Field errors as sentences: `Redirect URI is forbidden by the server.`
fn sentences(errors: &FieldErrors) -> Vec<String> {
    let label = |field: &str| match field {
        "redirect_uri" => "Redirect URI",
        "scopes" => "Scopes",
        _ => "Name",
    };
    errors
        .iter()
        .flat_map(|(field, list)| {
            list.as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(move |message| format!("{} {message}", label(field)))
        })
        .collect()
}

fn form_markup(action: &str, csrf: &str, form: &Form, submit: &str) -> Markup {
    let chosen = scopes::parse(&form.scopes);
    html! {
        form method="post" action=(action) {
            (csrf_field(csrf))
            label for="doorkeeper_application_name" { "Name" }
            input type="text" id="doorkeeper_application_name" name="doorkeeper_application[name]"
                value=(form.name) required;
            label for="doorkeeper_application_redirect_uri" { "Redirect URI (one per line)" }
            textarea id="doorkeeper_application_redirect_uri" name="doorkeeper_application[redirect_uri]"
                rows="3" required { (form.redirect_uri) }
            input type="hidden" name="doorkeeper_application[confidential]" value="0";
            label {
                input type="checkbox" id="doorkeeper_application_confidential"
                    name="doorkeeper_application[confidential]" value="1" checked[form.confidential];
                " Confidential (the application can keep its secret; mobile and single-page apps cannot)"
            }
            fieldset {
                legend { strong { "Scopes" } }
                @for scope in scopes::all() {
                    label style="font-weight:normal" {
                        input type="checkbox" id={ "doorkeeper_application_scopes_" (scope) }
                            name="doorkeeper_application[scopes][]" value=(scope)
                            checked[chosen.iter().any(|s| s == scope)];
                        " " code { (scope) }
                    }
                }
            }
            button type="submit" { (submit) }
        }
    }
}

fn may_register(web: &Web, session: &Session) -> bool {
    web.settings.get(keys::USER_OAUTH_APPLICATIONS) || session.user.is_admin
}

/// What the list page shows besides the form.
struct Listing {
    own: Vec<ApplicationRow>,
    authorized: Vec<ApplicationRow>,
}

impl Listing {
    async fn load(web: &Web, session: &Session) -> crate::store::Result<Listing> {
        let db = &web.tenant.db;
        Ok(Listing {
            own: db.applications_of(Some(session.user.id)).await?,
            authorized: db.authorized_applications(session.user.id).await?,
        })
    }
}

fn list_page(
    web: &Web,
    session: &Session,
    listing: &Listing,
    form: &Form,
    problems: &[String],
    status: StatusCode,
) -> Response {
    let base = base(web);
    let apps = &listing.own;
    let body = html! {
        @if may_register(web, session) {
            h2 { "Add new application" }
            (errors(problems))
            (form_markup(base, &session.csrf, form, "Save application"))
        } @else {
            p role="note" { "Registering applications is turned off on this instance." }
        }
        h2 { "Your applications (" (apps.len()) ")" }
        @if apps.is_empty() {
            p { "You have no applications." }
        } @else {
            table {
                thead { tr { th { "Name" } th { "Callback URL" } th { "Scopes" } th {} } }
                tbody {
                    @for app in apps {
                        tr {
                            td { a href={ (base) "/" (app.id) } { (app.name) } }
                            td { @for uri in app.redirect_uris() { div { (uri) } } }
                            td { (app.scopes) }
                            td {
                                form method="post" action={ (base) "/" (app.id) } {
                                    (csrf_field(&session.csrf))
                                    input type="hidden" name="_method" value="delete";
                                    button type="submit" aria-label={ "Destroy " (app.name) } { "Destroy" }
                                }
                            }
                        }
                    }
                }
            }
        }
        h2 { "Authorized applications (" (listing.authorized.len()) ")" }
        @if listing.authorized.is_empty() {
            p { "You have not authorized any applications." }
        } @else {
            table {
                thead { tr { th { "Name" } th { "Scopes" } th {} } }
                tbody {
                    @for app in &listing.authorized {
                        tr {
                            td { (app.name) }
                            td { (app.scopes) }
                            td {
                                form method="post" action={ "/oauth/authorized_applications/" (app.id) } {
                                    (csrf_field(&session.csrf))
                                    input type="hidden" name="_method" value="delete";
                                    button type="submit" aria-label={ "Revoke " (app.name) } { "Revoke" }
                                }
                            }
                        }
                    }
                }
            }
        }
        (layout::sign_out(&session.csrf))
    };
    layout::page(status, "Applications", Some(&session.user), body)
}

async fn list(web: Web) -> WebResult {
    let session = web.require_session()?;
    let listing = Listing::load(&web, session).await?;
    let empty = Form {
        name: String::new(),
        redirect_uri: String::new(),
        scopes: String::new(),
        confidential: true,
    };
    Ok(list_page(
        &web,
        session,
        &listing,
        &empty,
        &[],
        StatusCode::OK,
    ))
}

async fn create(web: Web) -> WebResult {
    let session = web.require_session()?;
    web.check_csrf()?;
    if !may_register(&web, session) {
        return Err(WebError::new(
            StatusCode::FORBIDDEN,
            "Registering applications is turned off on this instance.",
        ));
    }
    let form = Form::read(&web);
    if let Err(problems) = registration::validate(&form.fields()) {
        let listing = Listing::load(&web, session).await?;
        return Ok(list_page(
            &web,
            session,
            &listing,
            &form,
            &sentences(&problems),
            StatusCode::UNPROCESSABLE_ENTITY,
        ));
    }
    let (app, secret) =
        oauth::create_application(&web.tenant.db, Some(session.user.id), &form.fields()).await?;
    Ok(fresh_secret_page(
        &web,
        session,
        &app,
        &secret,
        StatusCode::CREATED,
    ))
}

/// An application with the secret just made: the only time the secret is shown.
fn fresh_secret_page(
    web: &Web,
    session: &Session,
    app: &ApplicationRow,
    secret: &str,
    status: StatusCode,
) -> Response {
    show_page(web, session, app, Some(secret), &[], status)
}

/// One application: its id, the secret when it was just made, and the edit form.
fn show_page(
    web: &Web,
    session: &Session,
    app: &ApplicationRow,
    secret: Option<&str>,
    problems: &[String],
    status: StatusCode,
) -> Response {
    let base = base(web);
    let action = format!("{base}/{}", app.id);
    let body = html! {
        dl {
            dt { "Application ID" }
            dd { code.secret id="application_id" { (app.uid) } }
            dt { "Secret" }
            dd {
                @if let Some(secret) = secret {
                    code.secret id="client_secret" { (secret) }
                    p role="note" { "This is the only time the secret is shown. Copy it now." }
                } @else {
                    "Hidden. Renew it to get a new one."
                }
            }
            dt { "Callback URL" }
            dd { @for uri in app.redirect_uris() { div { code { (uri) } } } }
            dt { "Confidential" }
            dd { @if app.confidential { "Yes" } @else { "No" } }
            dt { "Scopes" }
            dd { (app.scopes) }
        }
        form method="post" action={ (action) "/renew" } {
            (csrf_field(&session.csrf))
            button type="submit" { "Renew secret" }
        }
        h2 { "Edit application" }
        (errors(problems))
        (form_markup(&action, &session.csrf, &Form::of(app), "Save application"))
        form method="post" action=(action) {
            (csrf_field(&session.csrf))
            input type="hidden" name="_method" value="delete";
            button type="submit" { "Destroy" }
        }
        p { a href=(base) { "Back to applications" } }
    };
    layout::page(
        status,
        &format!("Application: {}", app.name),
        Some(&session.user),
        body,
    )
}

/// The application `id` if the signed-in user owns it (404 otherwise, nothing revealed).
async fn owned(web: &Web, session: &Session, id: &str) -> Result<ApplicationRow, WebError> {
    let id: i64 = id.parse().map_err(|_| WebError::not_found())?;
    web.tenant
        .db
        .application_by_id(id)
        .await?
        .filter(|app| app.owner_id == Some(session.user.id))
        .ok_or_else(WebError::not_found)
}

async fn show(Path(id): Path<String>, web: Web) -> WebResult {
    let session = web.require_session()?;
    let app = owned(&web, session, &id).await?;
    Ok(show_page(&web, session, &app, None, &[], StatusCode::OK))
}

/// Update (`_method=put`/`patch`, or none) or delete (`_method=delete`).
async fn change(Path(id): Path<String>, web: Web) -> WebResult {
    let session = web.require_session()?;
    web.check_csrf()?;
    let app = owned(&web, session, &id).await?;
    if web.field("_method").eq_ignore_ascii_case("delete") {
        oauth::delete_application(&web.tenant.db, &app).await?;
        return Ok(found(base(&web)));
    }
    let form = Form::read(&web);
    if let Err(problems) = registration::validate(&form.fields()) {
        return Ok(show_page(
            &web,
            session,
            &app,
            None,
            &sentences(&problems),
            StatusCode::UNPROCESSABLE_ENTITY,
        ));
    }
    oauth::update_application(&web.tenant.db, &app, &form.fields()).await?;
    Ok(found(&format!("{}/{}", base(&web), app.id)))
}

async fn renew(Path(id): Path<String>, web: Web) -> WebResult {
    let session = web.require_session()?;
    web.check_csrf()?;
    let app = owned(&web, session, &id).await?;
    let secret = oauth::renew_application_secret(&web.tenant.db, &app).await?;
    Ok(fresh_secret_page(
        &web,
        session,
        &app,
        &secret,
        StatusCode::OK,
    ))
}

/// Revokes the signed-in user's authorization of an application (all their tokens for it), so
/// the consent page asks again next time.
async fn revoke_authorization(Path(id): Path<String>, web: Web) -> WebResult {
    let session = web.require_session()?;
    web.check_csrf()?;
    let id: i64 = id.parse().map_err(|_| WebError::not_found())?;
    if !oauth::revoke_authorization(&web.tenant.db, id, session.user.id).await? {
        return Err(WebError::not_found());
    }
    Ok(found(BASES[0]))
}
