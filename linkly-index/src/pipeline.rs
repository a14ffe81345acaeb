//! The sync's preparing stage: items worked on by threads that live for the whole sync, handed
//! to one consumer in their order, with a bounded amount of work in flight.
//!
//! Each worker takes the next item as soon as it finishes one (a slow file holds up one thread
//! only), so the cores never wait for a batch's slowest file; the consumer (the thread that
//! writes the store and the full-text index) takes results in item order as they complete. The
//! items taken but not yet consumed may cost at most `window` (bytes of files, say), so the
//! memory in flight stays bounded whatever the corpus. The threads' thread-locals (the
//! analysis' memory of words) live as long as the sync.

use std::sync::{Condvar, Mutex};

struct State<T, U> {
    items: Vec<Option<T>>,
    costs: Vec<u64>,
    results: Vec<Option<U>>,
    /// The next item a worker takes.
    next_take: usize,
    /// The next result the consumer takes.
    next_out: usize,
    /// The cost of the items taken and not yet consumed.
    in_flight: u64,
    /// The consumer stopped (an error): workers take nothing more.
    stopped: bool,
    /// Threads waiting on `changed`: a change wakes them only when there are some (a wake-up
    /// is a system call, and a sync makes two changes per file).
    waiting: usize,
}

struct Shared<T, U> {
    state: Mutex<State<T, U>>,
    changed: Condvar,
    window: u64,
}

impl<T, U> Shared<T, U> {
    fn lock(&self) -> std::sync::MutexGuard<'_, State<T, U>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'a>(
        &self,
        mut guard: std::sync::MutexGuard<'a, State<T, U>>,
        timeout: Option<std::time::Duration>,
    ) -> (std::sync::MutexGuard<'a, State<T, U>>, bool) {
        guard.waiting += 1;
        let (mut guard, timed_out) = match timeout {
            None => (
                self.changed.wait(guard).unwrap_or_else(|e| e.into_inner()),
                false,
            ),
            Some(t) => {
                let (g, w) = self
                    .changed
                    .wait_timeout(guard, t)
                    .unwrap_or_else(|e| e.into_inner());
                (g, w.timed_out())
            }
        };
        guard.waiting -= 1;
        (guard, timed_out)
    }

    /// Wakes the waiting threads, if any, after a change made under `guard` (released here).
    fn changed(&self, guard: std::sync::MutexGuard<'_, State<T, U>>) {
        let waiting = guard.waiting > 0;
        drop(guard);
        if waiting {
            self.changed.notify_all();
        }
    }

    /// The next item for a worker, waiting while the window is full; `None` when all are
    /// taken or the consumer stopped.
    fn take(&self) -> Option<(usize, T)> {
        let mut s = self.lock();
        loop {
            if s.stopped || s.next_take == s.items.len() {
                return None;
            }
            // One item always goes, however large, when nothing else is in flight.
            let i = s.next_take;
            if s.next_take == s.next_out || s.in_flight + s.costs[i] <= self.window {
                s.next_take += 1;
                s.in_flight += s.costs[i];
                let item = s.items[i].take()?;
                return Some((i, item));
            }
            s = self.wait(s, None).0;
        }
    }

    fn put(&self, i: usize, result: U) {
        let mut s = self.lock();
        s.results[i] = Some(result);
        self.changed(s);
    }
}

/// How long the consumer waits for the next result before it is told it is idle.
const IDLE: std::time::Duration = std::time::Duration::from_millis(50);

/// Runs `work` on every item on `workers` threads, and `consume` on each result in item order
/// on the calling thread, with at most `window` of `cost` taken and not yet consumed. `idle`
/// runs on the calling thread when the next result has kept it waiting for a moment (once per
/// wait): the time to write what it gathered. The first error of either stops the workers
/// and is returned.
pub(crate) fn ordered<T, U, E>(
    items: Vec<T>,
    workers: usize,
    window: u64,
    cost: impl Fn(&T) -> u64,
    work: impl Fn(T) -> U + Sync,
    mut consume: impl FnMut(U) -> Result<(), E>,
    mut idle: impl FnMut() -> Result<(), E>,
) -> Result<(), E>
where
    T: Send,
    U: Send,
{
    let n = items.len();
    let costs: Vec<u64> = items.iter().map(&cost).collect();
    let shared = Shared {
        state: Mutex::new(State {
            items: items.into_iter().map(Some).collect(),
            costs,
            results: (0..n).map(|_| None).collect(),
            next_take: 0,
            next_out: 0,
            in_flight: 0,
            stopped: false,
            waiting: 0,
        }),
        changed: Condvar::new(),
        window,
    };
    let worker = || {
        while let Some((i, item)) = shared.take() {
            shared.put(i, work(item));
        }
    };
    std::thread::scope(|s| {
        for _ in 0..workers.max(1) {
            s.spawn(worker);
        }
        let mut result = Ok(());
        let mut state = shared.lock();
        let mut told_idle = false;
        while state.next_out < n {
            let i = state.next_out;
            let Some(u) = state.results[i].take() else {
                if told_idle {
                    state = shared.wait(state, None).0;
                    continue;
                }
                let (guard, timed_out) = shared.wait(state, Some(IDLE));
                state = guard;
                if timed_out && state.results[i].is_none() {
                    told_idle = true;
                    drop(state);
                    if let Err(e) = idle() {
                        result = Err(e);
                        break;
                    }
                    state = shared.lock();
                }
                continue;
            };
            told_idle = false;
            state.next_out += 1;
            state.in_flight -= state.costs[i];
            shared.changed(state);
            if let Err(e) = consume(u) {
                result = Err(e);
                break;
            }
            state = shared.lock();
        }
        if result.is_err() {
            let mut state = shared.lock();
            state.stopped = true;
            shared.changed(state);
        }
        result
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn results_come_in_order_within_the_window() {
        let in_flight = AtomicU64::new(0);
        let peak = AtomicU64::new(0);
        let mut seen = Vec::new();
        let items: Vec<u64> = (0..500).collect();
        ordered(
            items,
            4,
            10,
            |_| 1,
            |i| {
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                // Later items finish first now and then.
                if i % 7 == 0 {
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
                i * 2
            },
            |u| {
                in_flight.fetch_sub(1, Ordering::SeqCst);
                seen.push(u);
                Ok::<(), ()>(())
            },
            || Ok(()),
        )
        .unwrap();
        assert_eq!(seen, (0..500).map(|i| i * 2).collect::<Vec<_>>());
        // The one being consumed no longer counts: ten taken, one more in the consumer's hands.
        assert!(peak.load(Ordering::SeqCst) <= 11, "{peak:?}");
    }

    #[test]
    fn an_item_larger_than_the_window_still_goes_and_an_error_stops() {
        let done = AtomicU64::new(0);
        let r = ordered(
            vec![100u64, 1, 1, 1, 1, 1, 1, 1],
            2,
            10,
            |&c| c,
            |c| {
                done.fetch_add(1, Ordering::SeqCst);
                c
            },
            |c| if c == 1 { Err("stop") } else { Ok(()) },
            || Ok(()),
        );
        assert_eq!(r, Err("stop"));
        assert!(
            done.load(Ordering::SeqCst) >= 2,
            "the large item and the failing one ran"
        );
        assert_eq!(
            ordered(
                Vec::<u64>::new(),
                2,
                1,
                |_| 1,
                |c| c,
                |_| Err("none"),
                || Err("idle")
            ),
            Ok(())
        );
    }

    #[test]
    fn a_slow_item_makes_the_consumer_idle_once() {
        let mut idle = 0;
        let mut seen = Vec::new();
        ordered(
            vec![0u64, 150, 0],
            1,
            100,
            |_| 1,
            |ms| {
                std::thread::sleep(std::time::Duration::from_millis(ms));
                ms
            },
            |u| {
                seen.push(u);
                Ok::<(), ()>(())
            },
            || {
                idle += 1;
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(seen, [0, 150, 0]);
        assert_eq!(idle, 1, "told once while the slow one ran");
    }
}
