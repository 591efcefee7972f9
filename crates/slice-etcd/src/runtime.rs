//! The Tokio runtime each store and election owns, and the blocking calls on it: the
//! client is async (tonic), its callers are not, and every request waits at most
//! [`REQUEST_TIMEOUT`].

use std::future::Future;
use std::sync::Arc;

use etcd_client::ConnectOptions;
use tokio::runtime::Runtime;

use crate::access::Access;
use crate::connection::{self, Connection, REQUEST_TIMEOUT};
use crate::error::Error;

/// A runtime shut down without waiting on its tasks when dropped: `Runtime`'s own drop
/// waits for the watch task and panics inside another runtime (the daemon opens the
/// store, and may drop it on a failed open, on actix's).
pub(crate) struct OwnedRuntime(Option<Runtime>);

impl OwnedRuntime {
    /// A runtime of one worker for the client's calls.
    pub(crate) fn new(name: &str) -> Result<Self, Error> {
        Ok(Self(Some(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name(name)
                .enable_all()
                .build()
                .map_err(Error::Runtime)?,
        )))
    }

    pub(crate) fn get(&self) -> Result<&Runtime, Error> {
        self.0.as_ref().ok_or(Error::Stopped)
    }
}

impl Drop for OwnedRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// Runs `work` on `runtime` and waits for it, for at most [`REQUEST_TIMEOUT`]. Works from
/// any thread, also one that runs another runtime (where `block_on` would panic).
pub(crate) fn run<T: Send + 'static>(
    runtime: &Runtime,
    work: impl Future<Output = Result<T, etcd_client::Error>> + Send + 'static,
) -> Result<Result<T, etcd_client::Error>, Error> {
    let (answer, answered) = std::sync::mpsc::sync_channel(1);
    runtime.spawn(async move {
        let outcome = tokio::time::timeout(REQUEST_TIMEOUT, work).await;
        // The caller may have given up; then nobody needs the answer.
        let _ = answer.send(outcome);
    });
    match answered.recv() {
        Ok(Ok(outcome)) => Ok(outcome),
        Ok(Err(_elapsed)) => Err(Error::Timeout),
        Err(_) => Err(Error::Stopped),
    }
}

/// A connection to `endpoints` as `access` says, made on `runtime`.
pub(crate) fn connect(
    runtime: &Runtime,
    endpoints: &[String],
    access: &Access,
) -> Result<Arc<Connection>, Error> {
    let options = access.tls_options(endpoints, connect_options())?;
    let credentials = access.credentials()?;
    let endpoints = endpoints.to_vec();
    Ok(run(runtime, async move {
        Connection::new(&endpoints, options, credentials).await
    })??)
}

/// How every client of this crate connects: bounded, and refusing a member without a
/// leader.
fn connect_options() -> ConnectOptions {
    ConnectOptions::new()
        .with_connect_timeout(connection::PROBE_TIMEOUT)
        .with_timeout(connection::ATTEMPT_TIMEOUT)
        .with_keep_alive(REQUEST_TIMEOUT, REQUEST_TIMEOUT)
        // A member cut off from its leader refuses instead of serving stale data.
        .with_require_leader(true)
}
