//! The HTTP listener: hyper serving the router, with what `axum::serve` does not bound. A
//! client has `--http-header-timeout-seconds` to send a request's head (a half-sent request
//! was otherwise held for as long as the client liked), and the connections open at once are
//! capped in all and per client address (`connection_caps`; trusted proxies exempt). On
//! shutdown the listener stops accepting and in-flight requests finish (`shutdown`).

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tower::ServiceExt;

use crate::connection_caps::ConnectionCaps;

pub struct Listening {
    pub caps: ConnectionCaps,
    pub header_timeout: Duration,
    /// How long requests in flight may take to finish once `shutdown` resolved.
    pub shutdown_patience: Duration,
}

/// Serves `app` on `listener` until `shutdown` resolves, then waits (a while) for open
/// connections' requests to finish.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    listening: Listening,
    shutdown: impl Future<Output = ()>,
) {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(listening.header_timeout);
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (socket, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors, most likely: pause rather than spin.
                    tracing::warn!(%error, "accepting an HTTP connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some(admitted) = listening.caps.admit(peer.ip()) else {
            metrics::counter!("http_connections_refused_total").increment(1);
            continue;
        };
        let _ = socket.set_nodelay(true);
        let service = app
            .clone()
            .map_request(move |request: hyper::Request<Incoming>| {
                let mut request = request.map(Body::new);
                request
                    .extensions_mut()
                    .insert(ConnectInfo::<SocketAddr>(peer));
                request
            });
        let connection = builder.serve_connection_with_upgrades(
            TokioIo::new(socket),
            TowerToHyperService::new(service),
        );
        let connection = graceful.watch(connection.into_owned());
        tokio::spawn(async move {
            let _admitted = admitted;
            if let Err(error) = connection.await {
                tracing::trace!(%error, "HTTP connection ended with an error");
            }
        });
    }
    drop(listener);
    // Requests finish; a connection that never does is not waited for past this.
    let _ = tokio::time::timeout(listening.shutdown_patience, graceful.shutdown()).await;
}
