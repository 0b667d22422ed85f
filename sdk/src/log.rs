//! Logging helpers: lines go to the host's log, tagged with the tenant and plugin. The host keeps
//! at most 1 KiB of log text per call; the rest is dropped.

use crate::LogLevel;
use crate::host_bindings::trellis::policy::host;

pub fn log(level: LogLevel, message: &str) {
    host::log(level, message);
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
