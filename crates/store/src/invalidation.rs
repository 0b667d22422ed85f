//! What a process tells the others sharing the database after a write commits, so that their
//! caches drop what it changed at once rather than when their entries expire.
//!
//! The store announces each change after its commit ([`Db::announce`]) on a bus: PostgreSQL's
//! `NOTIFY` by default, Redis when the server is given one. A process that follows the bus
//! applies what it hears to its own caches; one that may have missed messages (its connection
//! to the bus dropped) hears [`Heard::MayHaveMissed`] and drops everything, and the caches'
//! own expiry remains the fallback for a message lost with a process that died between its
//! commit and its announcement.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::time::Duration;

use sqlx::AnyPool;
use tokio::sync::mpsc;

use crate::Db;

/// The PostgreSQL channel the announcements go through (and the stem of the Redis one).
pub const CHANNEL: &str = "trellis_invalidations";

/// A committed change other processes cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invalidation {
    /// A tenant's users, identities or access tokens (the token cache).
    Auth { tenant_id: i64 },
    /// A tenant's application settings.
    Settings { tenant_id: i64 },
    /// The tenants and their host names.
    Tenants,
    /// A tenant's plugin bindings.
    PluginBindings { tenant_id: i64 },
    /// A job was queued: idle workers look for it now rather than at their next poll.
    JobQueued,
}

impl Invalidation {
    fn encode(self) -> String {
        match self {
            Invalidation::Auth { tenant_id } => format!("auth {tenant_id}"),
            Invalidation::Settings { tenant_id } => format!("settings {tenant_id}"),
            Invalidation::Tenants => "tenants".into(),
            Invalidation::PluginBindings { tenant_id } => format!("plugins {tenant_id}"),
            Invalidation::JobQueued => "jobs".into(),
        }
    }

    fn decode(text: &str) -> Option<Invalidation> {
        let mut words = text.split(' ');
        let kind = words.next()?;
        let tenant_id = words.next().and_then(|id| id.parse().ok());
        Some(match (kind, tenant_id) {
            ("auth", Some(tenant_id)) => Invalidation::Auth { tenant_id },
            ("settings", Some(tenant_id)) => Invalidation::Settings { tenant_id },
            ("tenants", None) => Invalidation::Tenants,
            ("plugins", Some(tenant_id)) => Invalidation::PluginBindings { tenant_id },
            ("jobs", None) => Invalidation::JobQueued,
            _ => return None,
        })
    }
}

/// What a follower hears.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heard {
    Change(Invalidation),
    /// The connection to the bus was (re)established: announcements made meanwhile are lost.
    MayHaveMissed,
}

/// A message as sent on the bus: the sending process's mark, so that it skips its own (it
/// applied them before announcing), then the change.
pub fn message(origin: u64, change: Invalidation) -> String {
    format!("{origin:016x} {}", change.encode())
}

/// What `message` from a process other than `own_origin` says; `None` for this process's
/// own messages and for ones this version does not know.
pub fn parse(own_origin: u64, message: &str) -> Option<Invalidation> {
    let (origin, change) = message.split_once(' ')?;
    if u64::from_str_radix(origin, 16).ok()? == own_origin {
        return None;
    }
    Invalidation::decode(change)
}

/// A message on its way to the bus.
pub type Publishing<'a> = Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send + 'a>>;

/// Where announcements go.
pub trait Bus: Send + Sync {
    fn publish<'a>(&'a self, message: &'a str) -> Publishing<'a>;
}

/// PostgreSQL's `NOTIFY`, delivered to every session listening on [`CHANNEL`].
pub(crate) struct PgNotify(pub(crate) AnyPool);

impl Bus for PgNotify {
    fn publish<'a>(&'a self, message: &'a str) -> Publishing<'a> {
        Box::pin(async move {
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(CHANNEL)
                .bind(message)
                .execute(&self.0)
                .await?;
            Ok(())
        })
    }
}

/// How long a follower waits before connecting again after its connection failed.
const RECONNECT_DELAY: Duration = Duration::from_secs(1);

impl Db {
    /// Announces `change`, which this process has applied already, to the others; a failure
    /// is logged (the others' caches expire in time).
    pub(crate) async fn announce(&self, change: Invalidation) {
        let Some(bus) = &self.bus else { return };
        if let Err(error) = bus.publish(&message(self.origin, change)).await {
            tracing::warn!(%error, ?change, "could not announce a change to the other processes");
        }
    }

    /// This process's mark on the messages it sends.
    pub fn origin(&self) -> u64 {
        self.origin
    }

    /// Sends announcements through `bus` instead (Redis rather than PostgreSQL).
    pub fn announce_through(mut self, bus: std::sync::Arc<dyn Bus>) -> Db {
        self.bus = Some(bus);
        self
    }

    /// Applies a change to users or tokens that another process announced: the token cache
    /// drops the tenant's entries.
    pub fn auth_changed_elsewhere(&self, tenant_id: i64) {
        self.auth_generations
            .stripe(tenant_id)
            .fetch_add(1, Ordering::Release);
    }

    /// After announcements may have been missed: the token cache drops every entry.
    pub fn any_auth_may_have_changed(&self) {
        for stripe in &self.auth_generations.0 {
            stripe.fetch_add(1, Ordering::Release);
        }
    }

    /// Follows the announcements other processes make through PostgreSQL (`None` on SQLite,
    /// where one process serves the database). A task listens for the life of the process,
    /// connecting again whenever its connection drops.
    pub fn follow_postgres(&self) -> Option<mpsc::Receiver<Heard>> {
        let url = self.postgres_url.clone()?;
        let origin = self.origin;
        let (sender, receiver) = mpsc::channel(1024);
        tokio::spawn(async move {
            loop {
                let mut listener = match sqlx::postgres::PgListener::connect(&url).await {
                    Ok(listener) => listener,
                    Err(error) => {
                        tracing::warn!(%error, "could not listen for other processes' changes");
                        tokio::time::sleep(RECONNECT_DELAY).await;
                        continue;
                    }
                };
                if let Err(error) = listener.listen(CHANNEL).await {
                    tracing::warn!(%error, "could not listen for other processes' changes");
                    tokio::time::sleep(RECONNECT_DELAY).await;
                    continue;
                }
                if sender.send(Heard::MayHaveMissed).await.is_err() {
                    return;
                }
                // `try_recv` answers `None` when the connection dropped: connect again, then
                // say that what was sent meanwhile is lost (after connecting, so that nothing
                // reloaded on hearing it predates a change this follower misses).
                loop {
                    let heard = match listener.try_recv().await {
                        Ok(Some(notification)) => match parse(origin, notification.payload()) {
                            Some(change) => Heard::Change(change),
                            None => continue,
                        },
                        Ok(None) => break,
                        Err(error) => {
                            tracing::warn!(%error, "lost the connection that listens for changes");
                            tokio::time::sleep(RECONNECT_DELAY).await;
                            break;
                        }
                    };
                    if sender.send(heard).await.is_err() {
                        return;
                    }
                }
            }
        });
        Some(receiver)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_and_a_process_skips_its_own() {
        for change in [
            Invalidation::Auth { tenant_id: 7 },
            Invalidation::Settings { tenant_id: 1 },
            Invalidation::Tenants,
            Invalidation::PluginBindings { tenant_id: 12 },
            Invalidation::JobQueued,
        ] {
            let sent = message(0xabc, change);
            assert_eq!(parse(0xdef, &sent), Some(change), "{sent}");
            assert_eq!(parse(0xabc, &sent), None, "{sent}");
        }
        assert_eq!(parse(1, "0000000000000002 auth"), None);
        assert_eq!(parse(1, "0000000000000002 reboot 3"), None);
        assert_eq!(parse(1, "nonsense"), None);
    }
}
