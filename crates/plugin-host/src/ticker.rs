//! The engine's epoch, advanced while plugin code may be running.
//!
//! Every call's wall-time limit is enforced at epoch ticks (`call::store`): at each tick past
//! its deadline the call traps. Ticking every [`EPOCH_TICK`] with no call in flight only costs
//! the process: an idle server woke a thousand times a second and spent 3.3% of a core on it
//! (`tests/bench/idle`). So the ticker sleeps while no call runs, and a call wakes it for as
//! long as it holds a [`Running`] (`registry::invoke_blocking` holds one around each call).

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use wasmtime::{Engine, EngineWeak};

/// How often the epoch advances while a call runs: the granularity of wall-time limits.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(1);

/// How often an idle ticker checks whether its engine is gone.
const IDLE_CHECK: Duration = Duration::from_secs(1);

/// Counts the calls in flight and wakes the ticker thread for them.
pub(crate) struct Ticker {
    calls: Mutex<usize>,
    resumed: Condvar,
}

/// One call in flight; the ticker keeps ticking until every one is dropped.
pub(crate) struct Running(Arc<Ticker>);

impl Drop for Running {
    fn drop(&mut self) {
        *self.0.calls.lock().unwrap_or_else(PoisonError::into_inner) -= 1;
    }
}

impl Ticker {
    /// Starts the ticker thread of `engine`; it ends once the engine is dropped.
    pub(crate) fn start(engine: &Engine) -> Arc<Ticker> {
        let ticker = Arc::new(Ticker {
            calls: Mutex::new(0),
            resumed: Condvar::new(),
        });
        let weak = engine.weak();
        let thread = ticker.clone();
        std::thread::Builder::new()
            .name("plugin-epoch".into())
            .spawn(move || thread.run(weak))
            .expect("starting the plugin epoch thread");
        ticker
    }

    /// Marks a call as running until the returned guard is dropped.
    pub(crate) fn running(self: &Arc<Self>) -> Running {
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        *calls += 1;
        if *calls == 1 {
            self.resumed.notify_one();
        }
        Running(self.clone())
    }

    /// Waits while no call runs; while any does, advances the epoch once per [`EPOCH_TICK`]
    /// of real time since the ticking began, catching up after a sleep that overran (a busy
    /// machine), so that a deadline of N ticks stays N milliseconds.
    fn run(&self, engine: EngineWeak) {
        loop {
            let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
            while *calls == 0 {
                calls = self
                    .resumed
                    .wait_timeout(calls, IDLE_CHECK)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
                if engine.upgrade().is_none() {
                    return;
                }
            }
            drop(calls);
            let began = Instant::now();
            let mut ticks: u128 = 0;
            while self.in_flight() > 0 {
                let Some(engine) = engine.upgrade() else {
                    return;
                };
                let due = began.elapsed().as_micros() / EPOCH_TICK.as_micros();
                while ticks < due {
                    engine.increment_epoch();
                    ticks += 1;
                }
                drop(engine);
                std::thread::sleep(EPOCH_TICK);
            }
        }
    }

    fn in_flight(&self) -> usize {
        *self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    /// A core module exporting `spin`, a loop that never ends: `(loop (br 0))`.
    const SPIN: &[u8] = &[
        0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
        0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type: [] -> []
        0x03, 0x02, 0x01, 0x00, // one function of that type
        0x07, 0x08, 0x01, 0x04, b's', b'p', b'i', b'n', 0x00, 0x00, // export "spin"
        0x0a, 0x09, 0x01, 0x07, 0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b, // loop br 0 end end
    ];

    #[test]
    fn the_epoch_stands_still_until_a_call_runs() {
        let engine = Engine::new(wasmtime::Config::new().epoch_interruption(true)).unwrap();
        let ticker = Ticker::start(&engine);
        let module = wasmtime::Module::new(&engine, SPIN).unwrap();
        let ticks = Arc::new(AtomicU64::new(0));
        let seen = ticks.clone();
        // Spins until the first tick past its deadline, which traps it.
        let spinning = std::thread::spawn(move || {
            let mut store = wasmtime::Store::new(&engine, ());
            store.set_epoch_deadline(1);
            store.epoch_deadline_callback(move |_| {
                seen.fetch_add(1, Ordering::SeqCst);
                Err(wasmtime::Trap::Interrupt.into())
            });
            let instance = wasmtime::Instance::new(&mut store, &module, &[]).unwrap();
            let spin = instance
                .get_typed_func::<(), ()>(&mut store, "spin")
                .unwrap();
            spin.call(&mut store, ()).unwrap_err()
        });
        // Thirty ticks' time with no call marked running: no tick.
        std::thread::sleep(EPOCH_TICK * 30);
        assert_eq!(ticks.load(Ordering::SeqCst), 0, "the idle ticker ticked");
        let running = ticker.running();
        let trap = spinning.join().unwrap();
        assert_eq!(
            trap.downcast_ref::<wasmtime::Trap>(),
            Some(&wasmtime::Trap::Interrupt)
        );
        assert_eq!(ticks.load(Ordering::SeqCst), 1);
        drop(running);
        assert_eq!(ticker.in_flight(), 0);
    }
}
