//! Stopping gracefully, so that a process can leave a balanced service without failing a
//! request: on SIGTERM (or Ctrl-C) the process at once reports not ready (`/-/readiness`
//! answers 503, which takes it out of the load balancer's rotation), keeps serving for the
//! blackout (`--shutdown-blackout-seconds`) while the balancer notices, then stops accepting
//! HTTP and SSH connections and lets what is in flight finish: requests (pushes and clones over
//! HTTP among them), SSH sessions and running jobs, for `--shutdown-timeout-seconds` at the
//! most. A job still running then is left to its lease, which another process takes over.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::watch;

/// Whether the process is stopping, and the work it waits for before it exits.
#[derive(Clone)]
pub struct Stopping {
    stopping: Arc<watch::Sender<bool>>,
    in_progress: Arc<AtomicUsize>,
}

impl Default for Stopping {
    fn default() -> Self {
        Stopping {
            stopping: Arc::new(watch::Sender::new(false)),
            in_progress: Arc::default(),
        }
    }
}

impl Stopping {
    pub fn begin(&self) {
        self.stopping.send_replace(true);
    }

    pub fn is_stopping(&self) -> bool {
        *self.stopping.borrow()
    }

    /// Resolves once the process starts stopping.
    pub async fn started(&self) {
        let mut receiver = self.stopping.subscribe();
        let _ = receiver.wait_for(|stopping| *stopping).await;
    }

    /// Counts a piece of work (an SSH session, a job) that stopping waits for while the
    /// returned guard lives.
    pub fn hold(&self) -> InProgress {
        self.in_progress.fetch_add(1, Ordering::SeqCst);
        InProgress(self.in_progress.clone())
    }

    /// Waits until no work is held, or `patience` has passed; how many pieces are left.
    pub async fn drained(&self, patience: Duration) -> usize {
        let deadline = tokio::time::Instant::now() + patience;
        loop {
            let left = self.in_progress.load(Ordering::SeqCst);
            if left == 0 || tokio::time::Instant::now() >= deadline {
                return left;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A piece of work stopping waits for, counted while it lives.
pub struct InProgress(Arc<AtomicUsize>);

impl Drop for InProgress {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Resolves on SIGTERM or Ctrl-C.
pub async fn signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let terminate = async {
        if let Ok(mut signal) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            signal.recv().await;
        }
    };
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
}
