//! Per-call limits: a binding's own (within the operator's maxima) or the defaults.

use serde::{Deserialize, Serialize};

/// Defaults: 100 ms wall time, no fuel limit, 64 MiB of memory.
pub(crate) const DEFAULT_TIMEOUT_MS: u64 = 100;
pub(crate) const DEFAULT_MEMORY_BYTES: u64 = 64 * 1024 * 1024;
/// The largest input a hook passes (title and description...): the longest title and
/// description the API accepts (255 and 1,000,000 characters, the server's
/// api/issues/write.rs) at four bytes a character, so whatever the API accepts is checked
/// whole. Longer text (from callers without those limits) is cut to fit, never skipped.
pub(crate) const MAX_INPUT_BYTES: usize = 4 * (255 + 1_000_000);
/// The largest text a plugin may answer with (a verdict's reason, a log line set aside).
pub(crate) const MAX_OUTPUT_BYTES: usize = 64 * 1024;
/// Blob content a push-rules plugin may read per call (`push-scan.read-blob`), each read
/// being at most 1 MiB (`git::push_scan::MAX_BLOB_READ`).
pub(crate) const MAX_BLOB_BYTES_PER_CALL: usize = 16 * 1024 * 1024;
/// Log text a plugin may write per call; the rest is dropped.
pub(crate) const MAX_LOG_BYTES: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Wall time of one call, enforced by epoch interruption.
    pub timeout_ms: u64,
    /// Fuel (roughly, WebAssembly instructions) per call; `None`: no limit.
    pub fuel: Option<u64>,
    /// Linear memory of one instance.
    pub memory_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout_ms: DEFAULT_TIMEOUT_MS,
            fuel: None,
            memory_bytes: DEFAULT_MEMORY_BYTES,
        }
    }
}

/// The operator's ceilings (`trellis serve --plugin-max-*`).
#[derive(Debug, Clone, Copy)]
pub struct Maxima {
    pub timeout_ms: u64,
    pub fuel: Option<u64>,
    pub memory_bytes: u64,
    /// Plugin instances one tenant may run at once.
    pub tenant_instances: usize,
}

impl Maxima {
    /// The defaults, lowered to the maxima.
    pub fn defaults(&self) -> Limits {
        let d = Limits::default();
        Limits {
            timeout_ms: d.timeout_ms.min(self.timeout_ms),
            fuel: self.fuel,
            memory_bytes: d.memory_bytes.min(self.memory_bytes),
        }
    }

    /// Checks requested limits; the error names the first one above its maximum.
    pub fn check(&self, limits: &Limits) -> Result<(), String> {
        if limits.timeout_ms == 0 || limits.timeout_ms > self.timeout_ms {
            return Err(format!(
                "timeout_ms must be between 1 and {}",
                self.timeout_ms
            ));
        }
        if limits.memory_bytes < 1024 * 1024 || limits.memory_bytes > self.memory_bytes {
            return Err(format!(
                "memory_bytes must be between 1048576 and {}",
                self.memory_bytes
            ));
        }
        match (limits.fuel, self.fuel) {
            (Some(0), _) => Err("fuel must be greater than 0".into()),
            (Some(f), Some(max)) if f > max => Err(format!("fuel must be at most {max}")),
            (None, Some(max)) => Err(format!("fuel is required and must be at most {max}")),
            _ => Ok(()),
        }
    }
}

/// The ceilings as the operator gave them, before they are brought into range (the server's
/// command line converts into this).
#[derive(Debug, Clone, Copy)]
pub struct MaximaArgs {
    pub timeout_ms: u64,
    pub fuel: Option<u64>,
    pub memory_bytes: u64,
    /// `None`: half the cores.
    pub tenant_instances: Option<usize>,
}

impl From<MaximaArgs> for Maxima {
    fn from(args: MaximaArgs) -> Self {
        Maxima {
            timeout_ms: args.timeout_ms.max(1),
            fuel: args.fuel,
            memory_bytes: args.memory_bytes.max(1024 * 1024),
            tenant_instances: args.tenant_instances.unwrap_or_else(half_the_cores).max(1),
        }
    }
}

/// Half the cores this process may use: a plugin that loops runs a core flat out until its
/// deadline, so a tenant with this many slots cannot take the whole machine.
fn half_the_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get() / 2)
}

impl Default for Maxima {
    /// The `trellis serve` defaults.
    fn default() -> Self {
        Maxima {
            timeout_ms: 1000,
            fuel: None,
            memory_bytes: 256 * 1024 * 1024,
            tenant_instances: half_the_cores().max(1),
        }
    }
}
