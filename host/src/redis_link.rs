//! The optional Redis (`--redis-url`): rate-limit counters and the channel on which processes
//! announce what they changed (`store::invalidation`) move there from PostgreSQL.

use std::time::Duration;

use futures_util::StreamExt;
use redis::aio::ConnectionManager;
use tokio::sync::mpsc;

use crate::store::invalidation::{self, Bus, Heard, Publishing};
use crate::store::rate_limits::CounterHit;

/// How long a follower waits before subscribing again after its connection failed.
const RECONNECT_DELAY: Duration = Duration::from_secs(1);

#[derive(Clone)]
pub struct RedisLink {
    client: redis::Client,
    /// The announcements' channel, named after the database number: Redis's channels are
    /// shared by all its databases, and deployments sharing one Redis use different numbers.
    channel: String,
    /// One multiplexed connection for commands, reconnected by the client library.
    commands: ConnectionManager,
}

impl RedisLink {
    pub async fn connect(url: &str) -> anyhow::Result<RedisLink> {
        let client = redis::Client::open(url)?;
        let commands = client.get_connection_manager().await?;
        let channel = format!(
            "{}:{}",
            invalidation::CHANNEL,
            client.get_connection_info().redis.db
        );
        Ok(RedisLink {
            client,
            channel,
            commands,
        })
    }

    /// Adds one to every counter in `hits` (each expiring when its window ends) in one atomic
    /// round trip; the new counts, in order.
    pub async fn count(&self, tenant_id: i64, hits: &[CounterHit]) -> redis::RedisResult<Vec<i64>> {
        let mut pipe = redis::pipe();
        pipe.atomic();
        for hit in hits {
            let key = counter_key(tenant_id, &hit.key, hit.window_start);
            pipe.cmd("INCR").arg(&key);
            pipe.cmd("EXPIREAT").arg(&key).arg(hit.expires_at).ignore();
        }
        pipe.query_async(&mut self.commands.clone()).await
    }

    /// Bans `key` until `until` (Unix seconds).
    pub async fn ban(&self, tenant_id: i64, key: &str, until: i64) -> redis::RedisResult<()> {
        redis::cmd("SET")
            .arg(ban_key(tenant_id, key))
            .arg(1)
            .arg("EXAT")
            .arg(until)
            .query_async(&mut self.commands.clone())
            .await
    }

    pub async fn banned(&self, tenant_id: i64, key: &str) -> redis::RedisResult<bool> {
        redis::cmd("EXISTS")
            .arg(ban_key(tenant_id, key))
            .query_async(&mut self.commands.clone())
            .await
    }

    /// Follows the announcements made on Redis by processes other than `origin`, for the life
    /// of the process, subscribing again whenever the connection drops.
    pub fn follow(&self, origin: u64) -> mpsc::Receiver<Heard> {
        let client = self.client.clone();
        let channel = self.channel.clone();
        let (sender, receiver) = mpsc::channel(1024);
        tokio::spawn(async move {
            loop {
                let mut subscription = match client.get_async_pubsub().await {
                    Ok(subscription) => subscription,
                    Err(error) => {
                        tracing::warn!(%error, "could not subscribe to other processes' changes");
                        tokio::time::sleep(RECONNECT_DELAY).await;
                        continue;
                    }
                };
                if let Err(error) = subscription.subscribe(&channel).await {
                    tracing::warn!(%error, "could not subscribe to other processes' changes");
                    tokio::time::sleep(RECONNECT_DELAY).await;
                    continue;
                }
                // Subscribed again: what was announced while it was not is lost.
                if sender.send(Heard::MayHaveMissed).await.is_err() {
                    return;
                }
                let mut messages = subscription.into_on_message();
                while let Some(message) = messages.next().await {
                    let Ok(text) = message.get_payload::<String>() else {
                        continue;
                    };
                    let Some(change) = invalidation::parse(origin, &text) else {
                        continue;
                    };
                    if sender.send(Heard::Change(change)).await.is_err() {
                        return;
                    }
                }
                tracing::warn!("lost the Redis subscription to other processes' changes");
                tokio::time::sleep(RECONNECT_DELAY).await;
            }
        });
        receiver
    }
}

impl Bus for RedisLink {
    fn publish<'a>(&'a self, message: &'a str) -> Publishing<'a> {
        Box::pin(async move {
            redis::cmd("PUBLISH")
                .arg(&self.channel)
                .arg(message)
                .query_async::<i64>(&mut self.commands.clone())
                .await?;
            Ok(())
        })
    }
}

fn counter_key(tenant_id: i64, key: &str, window_start: i64) -> String {
    format!("trellis:rate:{tenant_id}:{window_start}:{key}")
}

fn ban_key(tenant_id: i64, key: &str) -> String {
    format!("trellis:ban:{tenant_id}:{key}")
}
