//! Logging helpers: lines go to the host's log, tagged with the tenant and plugin. The host keeps
//! at most 1 KiB of log text per call; the rest is dropped. Built natively (a plugin's unit
//! tests) they print to stderr.

use crate::LogLevel;

pub fn log(level: LogLevel, message: &str) {
    #[cfg(target_arch = "wasm32")]
    crate::host_bindings::trellis::policy::host::log(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("[{level:?}] {message}");
}

pub fn debug(message: &str) {
    log(LogLevel::Debug, message);
}

pub fn info(message: &str) {
    log(LogLevel::Info, message);
}

pub fn warn(message: &str) {
    log(LogLevel::Warn, message);
}

pub fn error(message: &str) {
    log(LogLevel::Error, message);
}
