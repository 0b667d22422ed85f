//! User statuses: `GET/PUT /user/status` and `GET /users/:id_or_username/status`.

use crate::http::json::Json;
use axum::extract::Path;
use chrono::Duration;

use super::user_by_key;
use crate::http::error::{ApiError, ApiResult};
use crate::http::params::{FromParams, Params};
use crate::http::request::Api;
use crate::model::now_ms;
use crate::services::users;
use crate::store::user_admin::StatusRow;
use crate::views::timestamp_opt;
use crate::views::user_status::UserStatusView;

const DEFAULT_EMOJI: &str = "speech_balloon";
const MAX_MESSAGE: usize = 100;
const CLEAR_AFTER: &[(&str, i64)] = &[
    ("30_minutes", 30),
    ("3_hours", 180),
    ("8_hours", 480),
    ("1_day", 1440),
    ("3_days", 4320),
    ("7_days", 10080),
    ("30_days", 43200),
];

fn view(status: Option<&StatusRow>) -> UserStatusView {
    let live = status.filter(|s| s.clear_status_at.is_none_or(|at| at > now_ms()));
    match live {
        Some(s) => UserStatusView {
            emoji: Some(s.emoji.clone()),
            message: Some(s.message.clone()),
            availability: s.availability.clone(),
            message_html: Some(message_html(&s.message)),
            clear_status_at: timestamp_opt(s.clear_status_at),
        },
        None => UserStatusView::not_set(),
    }
}

/// The message as HTML: escaped text, known `:emoji:` codes as GitLab's `gl-emoji` element.
fn message_html(message: &str) -> String {
    let escaped = message
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;");
    let mut out = String::new();
    let mut rest = escaped.as_str();
    while let Some(start) = rest.find(':') {
        let after = &rest[start + 1..];
        match after
            .find(':')
            .and_then(|end| emojis::get_by_shortcode(&after[..end]).map(|e| (end, e)))
        {
            Some((end, emoji)) => {
                let name = &after[..end];
                out.push_str(&rest[..start]);
                out.push_str(&format!(
                    "<gl-emoji title=\"{}\" data-name=\"{name}\" data-unicode-version=\"{}\">{}</gl-emoji>",
                    emoji.name(),
                    unicode_version(emoji),
                    emoji.as_str()
                ));
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(&rest[..=start]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn unicode_version(emoji: &emojis::Emoji) -> String {
    let version = emoji.unicode_version();
    format!("{}.{}", version.major(), version.minor())
}

pub async fn show_own(api: Api) -> ApiResult<Json<UserStatusView>> {
    let caller = api.user()?;
    Ok(Json(view(
        api.db().user_status(caller.user.id).await?.as_ref(),
    )))
}

pub async fn show_for(Path(id): Path<String>, api: Api) -> ApiResult<Json<UserStatusView>> {
    let user = user_by_key(&api, &id).await?;
    Ok(Json(view(api.db().user_status(user.id).await?.as_ref())))
}

/// `PUT /user/status`: blank values mean "not set".
pub(super) struct SetStatus {
    emoji: Option<String>,
    message: Option<String>,
    availability: String,
    /// Minutes until the status clears itself.
    clear_after: Option<i64>,
}

impl FromParams for SetStatus {
    fn from_params(p: &Params) -> ApiResult<Self> {
        let emoji = p.string("emoji")?.filter(|e| !e.is_empty());
        let message = p.string("message")?.filter(|m| !m.is_empty());
        let availability = p
            .one_of("availability", &["not_set", "busy"])?
            .unwrap_or_else(|| "not_set".into());
        let clear_after = match p.string("clear_status_after")?.filter(|s| !s.is_empty()) {
            None => None,
            Some(key) => Some(
                CLEAR_AFTER
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, minutes)| *minutes)
                    .ok_or_else(|| {
                        ApiError::InvalidParam(
                            "clear_status_after does not have a valid value".into(),
                        )
                    })?,
            ),
        };
        if let Some(emoji) = &emoji
            && emojis::get_by_shortcode(emoji).is_none()
        {
            return Err(ApiError::field("emoji", "does not exist"));
        }
        if message
            .as_ref()
            .is_some_and(|m| m.chars().count() > MAX_MESSAGE)
        {
            return Err(ApiError::field(
                "message",
                format!("is too long (maximum is {MAX_MESSAGE} characters)"),
            ));
        }
        Ok(SetStatus {
            emoji,
            message,
            availability,
            clear_after,
        })
    }
}

pub async fn update(api: Api) -> ApiResult<Json<UserStatusView>> {
    let caller = api.user()?;
    let SetStatus {
        emoji,
        message,
        availability,
        clear_after,
    } = api.input()?;
    let status = if emoji.is_none() && message.is_none() && availability == "not_set" {
        None
    } else {
        Some(StatusRow {
            emoji: emoji.unwrap_or_else(|| DEFAULT_EMOJI.into()),
            message: message.unwrap_or_default(),
            availability,
            clear_status_at: clear_after
                .map(|minutes| now_ms() + Duration::minutes(minutes).num_milliseconds()),
        })
    };
    users::set_status(api.db(), caller.user.id, status.as_ref()).await?;
    Ok(Json(view(status.as_ref())))
}

#[cfg(test)]
mod tests {
    use super::message_html;

    #[test]
    fn html_is_escaped_and_emoji_wrapped() {
        assert_eq!(
            message_html("<b>hi</b> :coffee: 10:30"),
            "&lt;b&gt;hi&lt;/b&gt; <gl-emoji title=\"hot beverage\" data-name=\"coffee\" data-unicode-version=\"6.0\">☕</gl-emoji> 10:30"
        );
    }
}
