//! Services: the domain layer between the API handlers and the store. Handlers parse
//! requests into typed inputs and render answers; a service decides who may do what, the
//! order of the steps (and cleans up after one that fails), the system notes and policy hooks
//! of a change; the store runs SQL only and calls nothing above it.

pub mod issues;
pub mod projects;
mod readme;
pub mod system_notes;
