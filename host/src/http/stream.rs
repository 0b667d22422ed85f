//! Response bodies that stream: a process's output or a stored file goes out in 64 KiB
//! pieces, so serving a large archive, blob or upload costs the server one buffer, not the
//! file's size.

use std::path::Path;

use axum::body::{Body, Bytes};
use futures_util::Stream;
use tokio::io::AsyncReadExt;

/// A reader's bytes as a response body stream, in 64 KiB pieces. A read error ends the
/// stream (the client sees a short body).
pub fn stream_body<R>(reader: R) -> impl Stream<Item = std::io::Result<Bytes>> + Send
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
{
    futures_util::stream::unfold(reader, |mut out| async move {
        let mut buf = vec![0u8; 64 * 1024];
        match out.read(&mut buf).await {
            Ok(0) | Err(_) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok(Bytes::from(buf)), out))
            }
        }
    })
}

/// A stored file as a streamed body with its length, or `None` when it cannot be opened.
pub async fn stored_file(path: &Path) -> Option<(Body, u64)> {
    let file = tokio::fs::File::open(path).await.ok()?;
    let length = file.metadata().await.ok()?.len();
    Some((Body::from_stream(stream_body(file)), length))
}
