//! Webhook and system hook delivery, from the outbox to the receiver.
//!
//! ```text
//! domain_events ──dispatch──▶ webhook_deliveries ──send──▶ formatter ──▶ receiver
//!   (outbox)     cursor moved     (one per event      claim, lease   (plugin)   POST, 10 s
//!                in the same tx    and hook)                                     │
//!                                      ▲                                         ▼
//!                                      └── retry 1 s, 2 s, 4 s...  ◀── webhook_logs, hook state
//! ```
//!
//! - [`dispatch`]: per tenant, reads new outbox events, matches hooks (project hooks by project,
//!   toggle, branch filter and state; system hooks by toggle), builds GitLab's standard payload
//!   ([`payload`], rendered by `views::webhook_payload`) and queues one delivery per hook, in the
//!   transaction that moves the tenant's cursor.
//! - [`send`]: claims each hook's oldest due delivery (one in flight per hook across processes,
//!   so a hook receives its events in order and a slow receiver holds up only its own hook),
//!   formats it ([`format`], the `webhook-formatter` world), sends it with GitLab's headers
//!   under the outbound policy, and writes the log entry, the delivery's fate and the hook's
//!   auto-disabling state ([`rules`]) in one transaction. A process that dies mid-delivery
//!   leaves a lease that expires: the delivery is sent again, with the same `Idempotency-Key`.

pub mod branch_filter;
pub mod dispatch;
pub mod format;
pub mod payload;
pub mod rules;
pub mod send;

use tokio::sync::Notify;

use crate::context::ApiContext;

/// Wakes the sender: deliveries were queued, or a hook's delivery finished.
static WAKE: Notify = Notify::const_new();

pub fn wake() {
    WAKE.notify_one();
}

/// Starts the dispatcher and the sender for the life of the process.
pub fn start(ctx: &ApiContext) {
    tokio::spawn(dispatch::run(ctx.clone()));
    tokio::spawn(send::run(ctx.clone()));
}
