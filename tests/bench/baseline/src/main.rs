//! The ceiling for `tests/bench/run`: the same stack as Trellis (axum on tokio, JSON body)
//! with no tenant lookup, no token check and no database. Trellis' `GET /api/v4/user` is
//! compared against this handler in one run, so the ratio is independent of the machine.

use axum::{Json, Router, routing::get};

#[tokio::main]
async fn main() {
    let listen = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8090".to_string());
    let body = serde_json::json!({
        "id": 1, "username": "root", "name": "Administrator", "state": "active",
        "avatar_url": null, "web_url": "http://localhost/root",
    });
    let app = Router::new().route(
        "/api/v4/user",
        get(move || async move { Json(body.clone()) }),
    );
    let listener = tokio::net::TcpListener::bind(&listen).await.expect("bind");
    axum::serve(listener, app).await.expect("serve");
}
