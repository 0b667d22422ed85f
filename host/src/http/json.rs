//! The JSON answer every endpoint renders: axum's `Json` with a buffer sized for a typical
//! view. axum's starts at 128 bytes and grows through a `BytesMut` writer; a GitLab view is
//! several hundred bytes to kilobytes, and the regrowth and the writer's many small writes
//! were about a twentieth of `GET /user`'s CPU in a profile.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::error::ApiError;

/// Bytes reserved before serializing: one user or project view fits.
const INITIAL_CAPACITY: usize = 2048;

/// A value answered as `application/json`.
pub struct Json<T>(pub T);

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        let mut body = Vec::with_capacity(INITIAL_CAPACITY);
        match serde_json::to_writer(&mut body, &self.0) {
            Ok(()) => (
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )],
                body,
            )
                .into_response(),
            Err(error) => ApiError::Internal(error.into()).into_response(),
        }
    }
}
