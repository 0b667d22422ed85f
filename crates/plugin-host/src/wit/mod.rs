//! Host bindings per WIT package version, laid out like zed's `extension_host`: `since_v0_1`
//! serves every plugin built against `trellis:policy@0.1.x`, `since_v0_2` the push-rules world
//! of `trellis:policy@0.2.x` (batched input, blobs on demand). A breaking WIT change becomes a
//! module beside them, and plugins built against older versions keep running through theirs.

pub(crate) mod since_v0_1;
pub(crate) mod since_v0_2;

use wasmtime::Engine;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, HasData};

use crate::call::CallState;

/// What every version's host interfaces see of a call: its state, borrowed mutably.
struct Data;
impl HasData for Data {
    type Data<'a> = &'a mut CallState;
}

/// The behaviours a plugin can implement, one WIT world each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum World {
    SpamCheck,
    ExternalAuthorization,
    PushRules,
    WebhookFormatter,
}

impl World {
    pub const ALL: [World; 4] = [
        World::SpamCheck,
        World::ExternalAuthorization,
        World::PushRules,
        World::WebhookFormatter,
    ];

    /// The exported interface that identifies the world.
    pub fn interface(self) -> &'static str {
        match self {
            World::SpamCheck => "spam-check",
            World::ExternalAuthorization => "external-authorization",
            World::PushRules => "push-rules",
            World::WebhookFormatter => "webhook-formatter",
        }
    }

    /// The WIT world's name (`trellis:policy/<world>`).
    pub fn world_name(self) -> &'static str {
        match self {
            World::SpamCheck => "spam-check-plugin",
            World::ExternalAuthorization => "external-authorization-plugin",
            World::PushRules => "push-rules-plugin",
            World::WebhookFormatter => "webhook-formatter-plugin",
        }
    }

    pub fn from_interface(name: &str) -> Option<World> {
        World::ALL.into_iter().find(|w| w.interface() == name)
    }
}

/// The versions of the WIT package this host serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiVersion {
    V0_1,
    V0_2,
}

impl ApiVersion {
    /// A plugin's package version, if this host has bindings for it (same major; for 0.x the
    /// same minor, as semver reads 0.x versions).
    fn of(version: &str) -> Option<ApiVersion> {
        let mut parts = version.split('.');
        match (parts.next(), parts.next()) {
            (Some("0"), Some("1")) => Some(ApiVersion::V0_1),
            (Some("0"), Some("2")) => Some(ApiVersion::V0_2),
            _ => None,
        }
    }

    /// Whether this host calls `world` as built against this version. The 0.1 push-rules
    /// world was never called by any host and is not served (its input was one list of every
    /// commit); 0.2 defines the push-rules world only.
    pub fn serves(self, world: World) -> Result<(), String> {
        match (self, world) {
            (ApiVersion::V0_1, World::PushRules) => Err(
                "the plugin implements the push-rules world of trellis:policy@0.1, which no \
                 Trellis host ever called and this one does not serve: build it against 0.2 \
                 (trellis-sdk's push-rules feature)"
                    .into(),
            ),
            (ApiVersion::V0_2, world) if world != World::PushRules => Err(format!(
                "trellis:policy@0.2 defines only the push-rules world, not {}",
                world.interface()
            )),
            _ => Ok(()),
        }
    }
}

/// What a component is, judged from its exports.
#[derive(Debug, Clone)]
pub struct Target {
    pub world: World,
    pub api: ApiVersion,
    /// The package version the plugin was built against, e.g. `0.1.0`.
    pub package_version: String,
}

/// Finds the `trellis:policy` world a component implements (the reason is shown to the
/// administrator when there is none).
pub(crate) fn target(engine: &Engine, component: &Component) -> Result<Target, String> {
    let ty = component.component_type();
    let mut seen = Vec::new();
    for (name, item) in ty.exports(engine) {
        let Some(rest) = name.strip_prefix("trellis:policy/") else {
            seen.push(name.to_string());
            continue;
        };
        let (interface, version) = rest.split_once('@').unwrap_or((rest, ""));
        let Some(world) = World::from_interface(interface) else {
            continue;
        };
        if !matches!(item.ty, ComponentItem::ComponentInstance(_)) {
            continue;
        }
        let api = ApiVersion::of(version).ok_or_else(|| {
            format!(
                "the plugin was built against trellis:policy@{version}, which this server does \
                 not support (it serves 0.1.x, and 0.2.x for push rules)"
            )
        })?;
        api.serves(world)?;
        return Ok(Target {
            world,
            api,
            package_version: version.to_string(),
        });
    }
    let known = World::ALL.map(|w| format!("trellis:policy/{}", w.interface()));
    Err(format!(
        "the component does not export a known trellis:policy interface ({}); it exports: {}",
        known.join(", "),
        if seen.is_empty() {
            "nothing".to_string()
        } else {
            seen.join(", ")
        }
    ))
}
