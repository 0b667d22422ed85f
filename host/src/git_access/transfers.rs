//! What bounds a git transfer once it is allowed: a slot of its tenant's ([`slots`]), an overall
//! deadline (`--git-timeout-seconds`) and an idle timeout (`--git-idle-timeout-seconds`: no
//! byte moved either way). The HTTP request timeout stops applying once a response streams,
//! and an SSH channel has none, so without these a client that never finishes its request
//! held its git process, and its slot, for ever. Both transports mark each byte moved on the
//! transfer's [`Clock`] and stop git when [`Clock::expired`] resolves.

use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, ReadBuf};
// tokio's clock, so that tests can run it paused.
use tokio::time::Instant;

use super::slots::Slots;
use crate::config::ServeConfig;

pub struct Transfers {
    /// Fetches and archives, shared between client addresses.
    pub fetches: Slots<IpAddr>,
    /// Pushes, shared between users.
    pub pushes: Slots<i64>,
    deadline: Duration,
    idle: Duration,
}

impl Transfers {
    pub fn new(config: &ServeConfig) -> Transfers {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let wait = Duration::from_secs(config.upload_pack_queue_seconds);
        let fetches = config.max_upload_packs_per_tenant.unwrap_or(cores * 2);
        let pushes = config.max_pushes_per_tenant.unwrap_or(cores * 2);
        Transfers {
            // One address may hold half of its tenant's fetch slots at the most.
            fetches: Slots::new(fetches, (fetches / 2).max(1), wait),
            pushes: Slots::new(pushes, config.max_pushes_per_user, wait),
            deadline: Duration::from_secs(config.git_timeout_seconds),
            idle: Duration::from_secs(config.git_idle_timeout_seconds),
        }
    }

    /// The clock of a transfer starting now.
    pub fn clock(&self) -> Arc<Clock> {
        Arc::new(Clock {
            started: Instant::now(),
            last_moved_ms: AtomicU64::new(0),
            deadline: self.deadline,
            idle: self.idle,
        })
    }
}

/// When a transfer started and last moved a byte.
pub struct Clock {
    started: Instant,
    /// Milliseconds from `started` to the last byte moved.
    last_moved_ms: AtomicU64,
    deadline: Duration,
    idle: Duration,
}

impl Clock {
    /// Something moved now.
    pub fn mark(&self) {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_moved_ms.fetch_max(now, Ordering::Relaxed);
    }

    /// Resolves once the transfer has run past its deadline or moved nothing for the idle
    /// time.
    pub async fn expired(self: Arc<Self>) {
        loop {
            let last_moved =
                self.started + Duration::from_millis(self.last_moved_ms.load(Ordering::Relaxed));
            let until = (last_moved + self.idle).min(self.started + self.deadline);
            if Instant::now() >= until {
                metrics::counter!("git_transfers_stopped_total").increment(1);
                return;
            }
            tokio::time::sleep_until(until).await;
        }
    }
}

/// A reader that marks its transfer's clock on every byte it reads.
pub struct Marked<R> {
    inner: R,
    clock: Arc<Clock>,
}

impl<R> Marked<R> {
    pub fn new(inner: R, clock: Arc<Clock>) -> Marked<R> {
        Marked { inner, clock }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Marked<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.clock.mark();
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(deadline_ms: u64, idle_ms: u64) -> Arc<Clock> {
        Arc::new(Clock {
            started: Instant::now(),
            last_moved_ms: AtomicU64::new(0),
            deadline: Duration::from_millis(deadline_ms),
            idle: Duration::from_millis(idle_ms),
        })
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_transfer_expires_and_a_moving_one_only_at_its_deadline() {
        let idle = clock(10_000, 100);
        let started = Instant::now();
        idle.clone().expired().await;
        assert_eq!(started.elapsed(), Duration::from_millis(100));

        let moving = clock(1_000, 100);
        let marker = {
            let moving = moving.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    moving.mark();
                }
            })
        };
        let started = Instant::now();
        moving.expired().await;
        marker.abort();
        assert_eq!(started.elapsed(), Duration::from_millis(1_000));
    }
}
