//! The input of creating and editing a project hook (`POST|PUT /projects/:id/hooks`) or a
//! system hook (`POST|PUT /hooks`), and how it applies to the stored row: both take the same
//! URL, toggles, formatter and token; project hooks add the push branch filter.

use crate::http::error::{ApiError, ApiResult};
use crate::http::params::{FromParamsIn, Params};
use crate::http::request::Api;
use crate::model::hooks::{
    BRANCH_FILTER_STRATEGIES, HOOK_FLAGS, HookRow, SYSTEM_HOOK_FLAGS, SystemHookRow,
};
use crate::model::webhooks::HookKind;
use crate::outbound::{AddressPolicy, Unresolved};
use crate::webhooks::dispatch::uuid_v4;
use crate::webhooks::{branch_filter, format};

/// A hook's settings as a request gives them: `url` is required, the rest change only when
/// given.
pub struct HookInput {
    url: String,
    /// The toggles given, of the kind's list (`HOOK_FLAGS`, `SYSTEM_HOOK_FLAGS`).
    flags: Vec<(String, bool)>,
    /// Project hooks: `push_events_branch_filter` ("" clears it) and its strategy.
    branch_filter: Option<String>,
    branch_filter_strategy: Option<String>,
    formatter: Option<String>,
    /// The secret token in clear ("" clears it); stored encrypted.
    token: Option<String>,
}

/// The kind of hook decides which toggles are read, and whether the branch filter is.
impl FromParamsIn<HookKind> for HookInput {
    fn from_params_in(p: &Params, kind: HookKind) -> ApiResult<Self> {
        let url = p.required_string("url")?;
        let toggles = match kind {
            HookKind::Project => HOOK_FLAGS,
            HookKind::System => SYSTEM_HOOK_FLAGS,
        };
        let mut flags = Vec::new();
        for (name, _) in toggles {
            let mut given = p.bool(name)?;
            // GitLab's older name for the wiki toggle.
            if *name == "wiki_page_events" && given.is_none() {
                given = p.bool("wiki_events")?;
            }
            if let Some(on) = given {
                flags.push((name.to_string(), on));
            }
        }
        let (branch_filter, branch_filter_strategy) = match kind {
            HookKind::Project => (
                p.string("push_events_branch_filter")?,
                p.one_of("branch_filter_strategy", BRANCH_FILTER_STRATEGIES)?,
            ),
            HookKind::System => (None, None),
        };
        Ok(HookInput {
            url,
            flags,
            branch_filter,
            branch_filter_strategy,
            formatter: p.one_of("formatter", format::FORMATTERS)?,
            token: p.string("token")?,
        })
    }
}

/// The columns project and system hooks share, which the input sets the same way on both.
struct Shared<'a> {
    url: &'a mut String,
    token: &'a mut Option<String>,
    flags: &'a mut Vec<(&'static str, bool)>,
    formatter: &'a mut String,
    instance_url: &'a mut String,
    uuid: &'a mut String,
}

trait HasShared {
    fn shared(&mut self) -> Shared<'_>;
}

/// The two rows name their shared columns alike.
macro_rules! has_shared {
    ($($row:ty),*) => {$(
        impl HasShared for $row {
            fn shared(&mut self) -> Shared<'_> {
                Shared {
                    url: &mut self.url,
                    token: &mut self.token,
                    flags: &mut self.flags,
                    formatter: &mut self.formatter,
                    instance_url: &mut self.instance_url,
                    uuid: &mut self.uuid,
                }
            }
        }
    )*};
}
has_shared!(HookRow, SystemHookRow);

/// A hook target must be an absolute http(s) URL that is not local (unless `policy`, the
/// settings for project or system hooks, allows it). Like GitLab, any URL problem is 422
/// "Invalid url given"; a host that does not resolve (yet) passes, since delivery checks
/// again.
pub async fn check_url(policy: &AddressPolicy, url: &str) -> ApiResult<()> {
    let invalid = || ApiError::Unprocessable("Invalid url given".into());
    let parsed = url::Url::parse(url.trim()).map_err(|_| invalid())?;
    policy
        .check(&parsed, &["http", "https"], Unresolved::Allow)
        .await
        .map_err(|_| invalid())?;
    Ok(())
}

impl HookInput {
    /// Sets a project hook's settings; the branch filter must suit its strategy.
    pub async fn apply_to_project_hook(self, api: &Api, hook: &mut HookRow) -> ApiResult<()> {
        let policy = AddressPolicy::for_hooks_and_services(
            &api.ctx.config.outbound_allow_networks,
            &*api.settings,
        );
        if let Some(filter) = &self.branch_filter {
            hook.push_events_branch_filter = Some(filter.clone()).filter(|f| !f.is_empty());
        }
        if let Some(strategy) = &self.branch_filter_strategy {
            hook.branch_filter_strategy = strategy.clone();
        }
        let filter = hook.push_events_branch_filter.clone().unwrap_or_default();
        let strategy = hook.branch_filter_strategy.clone();
        self.apply(api, &policy, hook.shared()).await?;
        branch_filter::check(&strategy, &filter)
            .map_err(|message| ApiError::field("push_events_branch_filter", message))
    }

    /// Sets a system hook's settings.
    pub async fn apply_to_system_hook(self, api: &Api, hook: &mut SystemHookRow) -> ApiResult<()> {
        let policy = AddressPolicy::for_system_hooks(
            &api.ctx.config.outbound_allow_networks,
            &*api.settings,
        );
        self.apply(api, &policy, hook.shared()).await
    }

    /// The URL (checked against `policy`), the toggles given, the formatter and the token.
    /// The hook remembers the tenant's URL as this request sees it, for its payloads' links
    /// and `X-Gitlab-Instance`.
    async fn apply(self, api: &Api, policy: &AddressPolicy, hook: Shared<'_>) -> ApiResult<()> {
        check_url(policy, &self.url).await?;
        let url = self.url.trim().to_string();
        // As GitLab's `WebHook#reset_token`: a new URL without a new token drops the old
        // token, so that whoever may edit a hook cannot send its secret to their own receiver.
        if url != *hook.url && self.token.is_none() {
            *hook.token = None;
        }
        *hook.url = url;
        for (name, on) in hook.flags.iter_mut() {
            if let Some((_, given)) = self.flags.iter().find(|(n, _)| n == name) {
                *on = *given;
            }
        }
        if let Some(formatter) = self.formatter {
            *hook.formatter = formatter;
        }
        if let Some(token) = self.token {
            *hook.token = (!token.is_empty()).then(|| api.ctx.secret_key.encrypt(&token));
        }
        *hook.instance_url = api.tenant.base_url.clone();
        if hook.uuid.is_empty() {
            *hook.uuid = uuid_v4();
        }
        Ok(())
    }
}
