//! Group commit: writers that finish while a flush is running share the next flush.
//!
//! Each applied write takes a ticket. A writer waiting for durability either finds its
//! ticket already covered, or becomes the leader of the next flush (covering every ticket
//! issued before it starts), or sleeps until a leader finishes. With N concurrent writers
//! that costs about two fsyncs, not N.
//!
//! A failed flush is final. After a failed fsync the kernel may have dropped the dirty
//! pages and marked them clean, so a retry could report success for data that never
//! reached the disk (the fsync problem PostgreSQL met in 2018). Every write not yet
//! durable fails, and so does every later wait.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};

/// Told of every flush that made writes durable: how many writes it covered and how long
/// it took. Called by the flush's leader with no lock held, so it may take its time, but
/// every writer of the batch waits for it.
pub trait CommitObserver: Send + Sync {
    fn committed(&self, writes: u64, took: Duration);
}

#[derive(Default)]
pub(crate) struct GroupCommit {
    state: Mutex<State>,
    flushed: Condvar,
    observer: OnceLock<Arc<dyn CommitObserver>>,
}

#[derive(Default)]
struct State {
    /// Tickets handed out: every write up to this one has been applied in memory.
    applied: u64,
    /// Every write up to this ticket is on disk.
    durable: u64,
    flushing: bool,
    /// A flush failed: nothing after `durable` will ever be.
    failed: bool,
}

/// Why a write did not become durable.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum CommitError<E> {
    /// This writer led the flush, and it failed so.
    Flush(E),
    /// An earlier flush, or another writer's flush covering this write, failed.
    Failed,
}

impl GroupCommit {
    /// Records that a write was applied and returns its ticket.
    pub(crate) fn applied(&self) -> u64 {
        let mut state = self.lock();
        state.applied += 1;
        state.applied
    }

    /// Tells `observer` of every successful flush from now on; only the first observer set
    /// is kept.
    pub(crate) fn observe(&self, observer: Arc<dyn CommitObserver>) {
        let _ = self.observer.set(observer);
    }

    /// The highest ticket known to be on disk.
    pub(crate) fn durable(&self) -> u64 {
        self.lock().durable
    }

    /// Whether a flush has failed. Set before any waiter wakes, so a writer that checks it
    /// under the store's write lock never applies a change after the failure is known.
    pub(crate) fn failed(&self) -> bool {
        self.lock().failed
    }

    /// Returns once the write with `ticket` is on disk, running `flush` as the leader when
    /// no flush that covers it is already under way.
    pub(crate) fn wait_durable<E>(
        &self,
        ticket: u64,
        flush: impl Fn() -> Result<(), E>,
    ) -> Result<(), CommitError<E>> {
        let mut state = self.lock();
        loop {
            if state.durable >= ticket {
                return Ok(());
            }
            if state.failed {
                return Err(CommitError::Failed);
            }
            if state.flushing {
                self.flushed.wait(&mut state);
                continue;
            }
            state.flushing = true;
            let target = state.applied;
            let batch = target - state.durable;
            drop(state);
            let started = Instant::now();
            let result = flush();
            let took = started.elapsed();
            state = self.lock();
            state.flushing = false;
            match result {
                Ok(()) => state.durable = state.durable.max(target),
                Err(_) => state.failed = true,
            }
            // Followers wake to find themselves covered, or the commit failed.
            self.flushed.notify_all();
            if let (Ok(()), Some(observer)) = (&result, self.observer.get()) {
                drop(state);
                observer.committed(batch, took);
                state = self.lock();
            }
            result.map_err(CommitError::Flush)?;
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Barrier};
    use std::time::Duration;

    #[test]
    fn a_ticket_is_durable_after_one_flush() {
        let commit = GroupCommit::default();
        let flushes = AtomicU64::new(0);
        let ticket = commit.applied();
        commit
            .wait_durable(ticket, || {
                flushes.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ()>(())
            })
            .unwrap();
        // Already covered: no second flush.
        commit
            .wait_durable(ticket, || {
                flushes.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ()>(())
            })
            .unwrap();
        assert_eq!(flushes.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn concurrent_writers_share_flushes() {
        const WRITERS: usize = 32;
        let commit = Arc::new(GroupCommit::default());
        let flushes = Arc::new(AtomicU64::new(0));
        let start = Arc::new(Barrier::new(WRITERS));
        let threads: Vec<_> = (0..WRITERS)
            .map(|_| {
                let (commit, flushes, start) = (commit.clone(), flushes.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let ticket = commit.applied();
                    commit
                        .wait_durable(ticket, || {
                            flushes.fetch_add(1, Ordering::SeqCst);
                            // A slow disk, so that the others pile up behind the leader.
                            std::thread::sleep(Duration::from_millis(20));
                            Ok::<_, ()>(())
                        })
                        .unwrap();
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let flushes = flushes.load(Ordering::SeqCst);
        assert!(
            flushes < WRITERS as u64,
            "{flushes} flushes for {WRITERS} writers"
        );
    }

    #[derive(Default)]
    struct Tally(parking_lot::Mutex<Vec<u64>>);

    impl CommitObserver for Tally {
        fn committed(&self, writes: u64, _took: Duration) {
            self.0.lock().push(writes);
        }
    }

    #[test]
    fn the_observer_hears_each_flush_with_the_writes_it_covered() {
        let commit = GroupCommit::default();
        let tally = Arc::new(Tally::default());
        commit.observe(tally.clone());
        let first = commit.applied();
        commit.wait_durable(first, || Ok::<_, ()>(())).unwrap();
        // Two writes applied before the next flush share it.
        commit.applied();
        let third = commit.applied();
        commit.wait_durable(third, || Ok::<_, ()>(())).unwrap();
        let failed = commit.applied();
        let _ = commit.wait_durable(failed, || Err(()));
        assert_eq!(*tally.0.lock(), [1, 2]);
    }

    #[test]
    fn a_failed_flush_fails_its_writers_and_every_later_one_without_a_retry() {
        let commit = GroupCommit::default();
        let durable = commit.applied();
        assert_eq!(commit.wait_durable(durable, || Ok::<_, &str>(())), Ok(()));
        let lost = commit.applied();
        assert_eq!(
            commit.wait_durable(lost, || Err("disk gone")),
            Err(CommitError::Flush("disk gone"))
        );
        let flushes = AtomicU64::new(0);
        let flush = || {
            flushes.fetch_add(1, Ordering::SeqCst);
            Ok::<_, &str>(())
        };
        // A retry could succeed on pages the kernel dropped: none is made.
        assert_eq!(commit.wait_durable(lost, flush), Err(CommitError::Failed));
        let later = commit.applied();
        assert_eq!(commit.wait_durable(later, flush), Err(CommitError::Failed));
        assert_eq!(flushes.load(Ordering::SeqCst), 0);
        assert_eq!(commit.durable(), durable);
        // What was durable before the failure stays so.
        assert_eq!(commit.wait_durable(durable, flush), Ok(()));
    }
}
