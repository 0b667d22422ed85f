//! Services: the layer between the API handlers and the store for work that spans the
//! database and the repositories on disk. Handlers parse requests and render answers; a
//! service decides the order of the steps and cleans up after one that fails; the store runs
//! SQL only and calls nothing above it.

pub mod projects;
mod readme;
