//! Group commit: writers that finish while a flush is running share the next flush.
//!
//! Each applied write takes a ticket. A writer waiting for durability either finds its
//! ticket already covered, or becomes the leader of the next flush (covering every ticket
//! issued before it starts), or sleeps until a leader finishes. With N concurrent writers
//! that costs about two fsyncs, not N.

use std::sync::{Condvar, Mutex, MutexGuard};

#[derive(Default)]
pub(crate) struct GroupCommit {
    state: Mutex<State>,
    flushed: Condvar,
}

#[derive(Default)]
struct State {
    /// Tickets handed out: every write up to this one has been applied in memory.
    applied: u64,
    /// Every write up to this ticket is on disk.
    durable: u64,
    flushing: bool,
}

impl GroupCommit {
    /// Records that a write was applied and returns its ticket.
    pub(crate) fn applied(&self) -> u64 {
        let mut state = self.lock();
        state.applied += 1;
        state.applied
    }

    /// Returns once the write with `ticket` is on disk, running `flush` as the leader when
    /// no flush that covers it is already under way.
    pub(crate) fn wait_durable<E>(
        &self,
        ticket: u64,
        flush: impl Fn() -> Result<(), E>,
    ) -> Result<(), E> {
        let mut state = self.lock();
        loop {
            if state.durable >= ticket {
                return Ok(());
            }
            if state.flushing {
                state = self
                    .flushed
                    .wait(state)
                    .unwrap_or_else(|poison| poison.into_inner());
                continue;
            }
            state.flushing = true;
            let target = state.applied;
            drop(state);
            let result = flush();
            state = self.lock();
            state.flushing = false;
            if result.is_ok() {
                state.durable = state.durable.max(target);
            }
            // Followers wake either to find themselves covered or, after a failed flush,
            // to lead a new attempt of their own.
            self.flushed.notify_all();
            result?;
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
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

    #[test]
    fn a_failed_flush_is_reported_and_retried_by_the_next_writer() {
        let commit = GroupCommit::default();
        let ticket = commit.applied();
        assert_eq!(
            commit.wait_durable(ticket, || Err("disk gone")),
            Err("disk gone")
        );
        assert_eq!(commit.wait_durable(ticket, || Ok::<_, &str>(())), Ok(()));
    }
}
