//! What the writer thread is asked to do, and how it answers: the vocabulary that the
//! store's methods, the session revocations and the writer share. A leaf, so that the
//! modules that hand work to the writer and the writer itself need not import each other.

use slice_core::{DeclaredFabric, Write, Written};

use crate::Error;

/// What the writer is asked to do.
pub(crate) enum Op {
    Write(Write),
    /// Record a logged-out session (see the `sessions` module).
    Revoke {
        id: Vec<u8>,
        expires_at: u64,
        now: u64,
    },
    /// Replace the declared fabric (see the `fabric` module).
    DeclareFabric(DeclaredFabric),
    /// Make everything so far durable, with a flush of its own even when nothing waits.
    Flush,
}

/// Told the outcome of a job, once, on the writer thread.
pub(crate) type Reply = Box<dyn FnOnce(Result<Written, Error>) + Send>;

pub(crate) struct Job {
    pub(crate) op: Op,
    pub(crate) reply: Reply,
}
