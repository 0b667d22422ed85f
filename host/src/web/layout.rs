//! The page frame and shared pieces. maud escapes every interpolated value.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};

use crate::model::users::UserRow;

/// The one stylesheet of every page (inlined: the pages' CSP allows no other source).
const STYLE: &str = include_str!("style.css");

/// A complete HTML page.
pub fn page(status: StatusCode, title: &str, user: Option<&UserRow>, body: Markup) -> Response {
    page_with_cookies(status, title, user, body, &[])
}

pub fn page_with_cookies(
    status: StatusCode,
    title: &str,
    user: Option<&UserRow>,
    body: Markup,
    cookies: &[String],
) -> Response {
    let header = html! {
        nav aria-label="Account" {
            @if let Some(user) = user {
                "Signed in as " strong { (user.username) }
            }
        }
    };
    let main = html! {
        h1 { (title) }
        (body)
    };
    document(status, title, "plain", header, main, cookies)
}

/// An HTML document with the stylesheet: `header` and `main` in a body of class `class`.
pub fn document(
    status: StatusCode,
    title: &str,
    class: &str,
    header: Markup,
    main: Markup,
    cookies: &[String],
) -> Response {
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Trellis" }
                style { (maud::PreEscaped(STYLE)) }
            }
            body class=(class) {
                a.skip href="#main" { "Skip to content" }
                header { (header) }
                main id="main" tabindex="-1" { (main) }
            }
        }
    };
    let mut response = (status, markup.into_string()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    for cookie in cookies {
        if let Ok(value) = HeaderValue::from_str(cookie) {
            headers.append(header::SET_COOKIE, value);
        }
    }
    response
}

pub fn message_body(message: &str) -> Markup {
    html! { p role="alert" { (message) } }
}

/// A hidden CSRF field.
pub fn csrf_field(token: &str) -> Markup {
    html! { input type="hidden" name="authenticity_token" value=(token); }
}

/// Error messages for a form, worded `Field message`.
pub fn errors(list: &[String]) -> Markup {
    html! {
        @if !list.is_empty() {
            div.error role="alert" {
                p { "The form contains the following errors:" }
                ul { @for e in list { li { (e) } } }
            }
        }
    }
}

/// A sign-out button (a POST form with the session's CSRF token).
pub fn sign_out(csrf: &str) -> Markup {
    html! {
        form method="post" action="/users/sign_out" {
            (csrf_field(csrf))
            button type="submit" { "Sign out" }
        }
    }
}
