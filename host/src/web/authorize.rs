//! `/oauth/authorize`: checks the request (Doorkeeper's pre-authorization), asks the signed-in
//! user for consent, and redirects back with a code (`response_type=code`) or a token in the
//! fragment (`response_type=token`). Every pre-authorization error renders a page, as GitLab's
//! `Oauth::AuthorizationsController#new` does: anyone may register an application with any
//! redirect URI, so redirecting an error to it before the user has seen the consent page would
//! make this server an open redirector (RFC 9700 4.11.2). Only the user's own Deny redirects
//! (`access_denied`, with `state`).

use crate::http::routes::Router;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use axum::routing::get;
use maud::html;
use url::Url;

use super::layout::{self, csrf_field};
use super::{Web, WebError, WebResult, found};
use crate::auth::oauth::error::{Kind, OAuthError};
use crate::auth::oauth::issue::{TOKEN_TYPE, expires_in};
use crate::auth::oauth::{pkce, redirect, scopes};
use crate::context::ApiContext;
use crate::model::oauth::ApplicationRow;
use crate::services::oauth;
use crate::settings::keys;

pub fn router() -> Router<ApiContext> {
    Router::new().route("/oauth/authorize", get(show).post(decide).delete(decide))
}

/// A checked authorization request.
struct PreAuth {
    app: ApplicationRow,
    redirect_uri: String,
    implicit: bool,
    state: Option<String>,
    scopes: Vec<String>,
    code_challenge: Option<String>,
    code_challenge_method: Option<String>,
    /// OpenID Connect: echoed in the ID token.
    nonce: Option<String>,
}

/// `redirect_uri` with `pairs` added to its query, or set as its fragment.
fn redirect_with(redirect_uri: &str, pairs: &[(&str, String)], fragment: bool) -> String {
    let Ok(mut url) = Url::parse(redirect_uri) else {
        return redirect_uri.to_string();
    };
    if fragment {
        let encoded = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())))
            .finish();
        url.set_fragment(Some(&encoded));
    } else {
        url.query_pairs_mut()
            .extend_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())));
    }
    url.to_string()
}

fn error_redirect(
    redirect_uri: &str,
    error: &OAuthError,
    state: &Option<String>,
    fragment: bool,
) -> String {
    let mut pairs = vec![
        ("error", error.kind.code().to_string()),
        ("error_description", error.description.clone()),
    ];
    if let Some(state) = state {
        pairs.push(("state", state.clone()));
    }
    redirect_with(redirect_uri, &pairs, fragment)
}

async fn pre_authorize(web: &Web) -> Result<PreAuth, OAuthError> {
    let client_id = web.field("client_id");
    if client_id.is_empty() {
        return Err(OAuthError::missing("client_id"));
    }
    let app = web
        .tenant
        .db
        .application_by_uid(&client_id)
        .await?
        .ok_or_else(|| OAuthError::new(Kind::InvalidClient))?;
    let redirect_uri = web.field("redirect_uri");
    if redirect_uri.is_empty() || !redirect::any_matches(&redirect_uri, app.redirect_uris()) {
        return Err(OAuthError::new(Kind::InvalidRedirectUri));
    }
    let state = Some(web.field("state")).filter(|s| !s.is_empty());
    let response_type = web.field("response_type");
    let implicit = response_type == "token";
    if response_type.is_empty() {
        return Err(OAuthError::missing("response_type"));
    }
    let supported = response_type == "code"
        || (implicit && web.settings.get(keys::OAUTH_IMPLICIT_GRANT_ENABLED));
    if !supported {
        return Err(OAuthError::new(Kind::UnsupportedResponseType));
    }
    let asked = web.field("scope");
    let scopes = scopes::requested(Some(&asked), &app.scope_list())
        .ok_or_else(|| OAuthError::new(Kind::InvalidScope))?;
    let code_challenge = Some(web.field("code_challenge")).filter(|s| !s.is_empty());
    let mut code_challenge_method = None;
    if let Some(challenge) = &code_challenge {
        let method = Some(web.field("code_challenge_method"))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "plain".to_string());
        if !pkce::METHODS.contains(&method.as_str()) {
            return Err(OAuthError::new(Kind::InvalidRequest)
                .describe("The code_challenge_method must be one of plain, S256."));
        }
        // A challenge has a verifier's shape (an S256 challenge is 43 base64url characters).
        if !pkce::is_valid_verifier(challenge) {
            return Err(
                OAuthError::new(Kind::InvalidRequest).describe("The code_challenge is invalid.")
            );
        }
        code_challenge_method = Some(method);
    }
    Ok(PreAuth {
        app,
        redirect_uri,
        implicit,
        state,
        scopes,
        code_challenge,
        code_challenge_method,
        nonce: Some(web.field("nonce")).filter(|s| !s.is_empty()),
    })
}

/// The error page: never a redirect to the client (see the module's comment).
fn error_page(error: OAuthError, web: &Web) -> Response {
    layout::page(
        StatusCode::BAD_REQUEST,
        "An error has occurred",
        web.session.as_ref().map(|s| &s.user),
        html! {
            p role="alert" { (error.description) }
            p { "Error code: " code { (error.kind.code()) } }
        },
    )
}

async fn show(web: Web) -> WebResult {
    let session = web.require_session()?;
    let pre = match pre_authorize(&web).await {
        Ok(pre) => pre,
        Err(error) => return Ok(error_page(error, &web)),
    };
    let scope_refs: Vec<&str> = pre.scopes.iter().map(String::as_str).collect();
    let approved = web
        .tenant
        .db
        .has_matching_token(pre.app.id, session.user.id, &scope_refs)
        .await?;
    if approved {
        return approve(&web, &pre).await;
    }
    let hidden = [
        ("client_id", pre.app.uid.clone()),
        ("redirect_uri", pre.redirect_uri.clone()),
        ("state", pre.state.clone().unwrap_or_default()),
        (
            "response_type",
            if pre.implicit { "token" } else { "code" }.to_string(),
        ),
        ("scope", pre.scopes.join(" ")),
        (
            "code_challenge",
            pre.code_challenge.clone().unwrap_or_default(),
        ),
        (
            "code_challenge_method",
            pre.code_challenge_method.clone().unwrap_or_default(),
        ),
        ("nonce", pre.nonce.clone().unwrap_or_default()),
    ];
    let fields = html! {
        (csrf_field(&session.csrf))
        @for (name, value) in &hidden {
            input type="hidden" name=(name) value=(value);
        }
    };
    let body = html! {
        p {
            "An application called " strong { (pre.app.name) }
            " is requesting access to your account " strong { (session.user.username) } "."
        }
        p { "It asks for these scopes:" }
        ul { @for scope in &pre.scopes { li { code { (scope) } } } }
        p { "You will be redirected to " code { (pre.redirect_uri) } "." }
        form method="post" action="/oauth/authorize" {
            (fields)
            button type="submit" name="commit" value="Authorize" { "Authorize" }
        }
        form method="post" action="/oauth/authorize" {
            (fields)
            input type="hidden" name="_method" value="delete";
            button type="submit" name="commit" value="Deny" { "Deny" }
        }
    };
    Ok(layout::page(
        StatusCode::OK,
        &format!("Authorize {}", pre.app.name),
        Some(&session.user),
        body,
    ))
}

/// The Authorize or Deny button (Deny as `DELETE`, or a POST with `_method=delete`).
async fn decide(web: Web) -> WebResult {
    web.require_session()?;
    web.check_csrf()?;
    let pre = match pre_authorize(&web).await {
        Ok(pre) => pre,
        Err(error) => return Ok(error_page(error, &web)),
    };
    let deny = web.method == Method::DELETE || web.field("_method").eq_ignore_ascii_case("delete");
    if deny {
        let error = OAuthError::new(Kind::AccessDenied);
        return Ok(found(&error_redirect(
            &pre.redirect_uri,
            &error,
            &pre.state,
            pre.implicit,
        )));
    }
    approve(&web, &pre).await
}

/// Issues the code (or, in the implicit flow, the token) and redirects back to the client.
async fn approve(web: &Web, pre: &PreAuth) -> WebResult {
    let session = web.session.as_ref().ok_or_else(WebError::not_found)?;
    let db = &web.tenant.db;
    let scopes = pre.scopes.join(" ");
    let mut pairs: Vec<(&str, String)> = Vec::new();
    if pre.implicit {
        let issued = oauth::issue_token(db, pre.app.id, session.user.id, &scopes).await?;
        pairs.push(("access_token", issued.secrets.access));
        pairs.push(("token_type", TOKEN_TYPE.to_string()));
        pairs.push((
            "expires_in",
            expires_in(&issued.row).unwrap_or_default().to_string(),
        ));
        pairs.push(("scope", scopes.clone()));
    } else {
        let consent = oauth::Consent {
            application_id: pre.app.id,
            user_id: session.user.id,
            redirect_uri: &pre.redirect_uri,
            scopes: &scopes,
            code_challenge: pre.code_challenge.as_deref(),
            code_challenge_method: pre.code_challenge_method.as_deref(),
            nonce: pre.nonce.as_deref(),
        };
        pairs.push(("code", oauth::issue_code(db, &consent).await?));
    }
    if let Some(state) = &pre.state {
        pairs.push(("state", state.clone()));
    }
    Ok(found(&redirect_with(
        &pre.redirect_uri,
        &pairs,
        pre.implicit,
    )))
}
