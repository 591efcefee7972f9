//! The watch that keeps each instance's copy of the store current: from the snapshot's
//! revision on, every revision applied in order; after a disconnect it resumes from the
//! last revision applied, and when etcd has compacted that one it reads a new snapshot.
//! The copy and the signal that it moved on are a [`SharedMirror`], which the store reads.

use std::sync::Arc;
use std::time::{Duration, Instant};

use etcd_client::{EventType, GetOptions, KeyValue, WatchOptions};
use parking_lot::{Condvar, Mutex};

use crate::connection::{Connection, Retry, REQUEST_TIMEOUT};
use crate::error::Error;
use crate::keys::Layout;
use crate::mirror::{self, Mirror, Snapshot};

/// How long the watch waits before it tries etcd again after losing it.
const RECONNECT_DELAY: Duration = Duration::from_millis(200);

/// The copy of the store and the signal that it has moved on: the watch writes it, the
/// store reads it and waits on it.
pub(crate) struct SharedMirror {
    mirror: Mutex<Mirror>,
    applied: Condvar,
}

impl SharedMirror {
    pub(crate) fn new(mirror: Mirror) -> Self {
        Self {
            mirror: Mutex::new(mirror),
            applied: Condvar::new(),
        }
    }

    /// Reads from the copy.
    pub(crate) fn read<T>(&self, look: impl FnOnce(&Mirror) -> T) -> T {
        look(&self.mirror.lock())
    }

    /// Changes the copy outside the watch: a listener joins.
    pub(crate) fn update<T>(&self, change: impl FnOnce(&mut Mirror) -> T) -> T {
        change(&mut self.mirror.lock())
    }

    /// Waits until the copy has applied `revision`, for at most [`REQUEST_TIMEOUT`].
    pub(crate) fn caught_up(&self, revision: i64) -> Result<(), Error> {
        let deadline = Instant::now() + REQUEST_TIMEOUT;
        let mut mirror = self.mirror.lock();
        while mirror.revision < revision {
            if self.applied.wait_until(&mut mirror, deadline).timed_out() {
                return Err(Error::NotSeen(revision));
            }
        }
        Ok(())
    }
}

/// Every record under the prefix, at one revision.
pub(crate) async fn read_snapshot(
    connection: &Arc<Connection>,
    layout: &Layout,
) -> Result<Snapshot, etcd_client::Error> {
    let response = connection
        .call(Retry::Always, |mut client| async move {
            client
                .get(layout.prefix(), Some(GetOptions::new().with_prefix()))
                .await
        })
        .await?;
    let revision = response.header().map_or(0, |header| header.revision());
    Ok(Snapshot {
        revision,
        kvs: response.kvs().to_vec(),
    })
}

/// How a watch ended.
enum WatchEnd {
    /// etcd no longer has the revision to resume from: read a snapshot instead.
    Compacted,
    /// The connection or the watch went away, or never came (`established` false): resume
    /// from the last revision.
    Lost { reason: String, established: bool },
}

/// Keeps the copy current for as long as the store lives.
pub(crate) async fn follow(connection: Arc<Connection>, layout: Layout, shared: Arc<SharedMirror>) {
    // While etcd stays away, one warning, not one per retry.
    let mut warned = false;
    loop {
        let from = shared.mirror.lock().revision + 1;
        match watch_from(&connection, &layout, &shared, from).await {
            WatchEnd::Compacted => {
                log::warn!(
                    "etcd compacted revision {from} before this instance saw it: \
                     re-reading the slices"
                );
                resynchronise(&connection, &layout, &shared).await;
            }
            WatchEnd::Lost {
                reason,
                established,
            } => {
                if established || !warned {
                    log::warn!("lost the watch on etcd ({reason}); resuming from revision {from}");
                    warned = true;
                } else {
                    log::debug!("etcd still unreachable ({reason})");
                }
                tokio::time::sleep(RECONNECT_DELAY).await;
            }
        }
    }
}

/// Applies every change from revision `from` on, until the watch ends.
async fn watch_from(
    connection: &Arc<Connection>,
    layout: &Layout,
    shared: &SharedMirror,
    from: i64,
) -> WatchEnd {
    let options = WatchOptions::new().with_prefix().with_start_revision(from);
    let started = connection.call(Retry::Always, |mut client| {
        let options = options.clone();
        async move { client.watch(layout.prefix(), Some(options)).await }
    });
    let epoch = connection.pinned().epoch;
    let mut stream = match tokio::time::timeout(REQUEST_TIMEOUT, started).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(err)) => return lost(err.to_string(), false),
        Err(_) => return lost(Error::Timeout.to_string(), false),
    };
    loop {
        let response = match stream.message().await {
            Ok(Some(response)) => response,
            Ok(None) => return lost("the watch stream ended".into(), true),
            Err(err) => {
                // The member went: the next watch starts on another.
                connection.stream_failed(epoch, &err).await;
                return lost(err.to_string(), true);
            }
        };
        if response.compact_revision() > 0 {
            return WatchEnd::Compacted;
        }
        if response.canceled() {
            return lost(format!("canceled: {}", response.cancel_reason()), true);
        }
        let mut mirror = shared.mirror.lock();
        let events = response.events();
        // The events of one transaction share its revision and arrive together.
        for revision in events.chunk_by(|a, b| mod_revision(a) == mod_revision(b)) {
            let Some(first) = revision.first() else {
                continue;
            };
            let batch: Vec<mirror::Event> = revision
                .iter()
                .filter_map(|event| {
                    let kv = event.kv()?;
                    Some(match event.event_type() {
                        EventType::Put => mirror::Event::Put(kv.into()),
                        EventType::Delete => mirror::Event::Delete(kv.key()),
                    })
                })
                .collect();
            mirror.apply_revision(layout, mod_revision(first), &batch);
        }
        drop(mirror);
        shared.applied.notify_all();
    }
}

fn lost(reason: String, established: bool) -> WatchEnd {
    WatchEnd::Lost {
        reason,
        established,
    }
}

fn mod_revision(event: &etcd_client::Event) -> i64 {
    event.kv().map_or(0, KeyValue::mod_revision)
}

/// Replaces the copy with a fresh snapshot, retrying until etcd answers.
async fn resynchronise(connection: &Arc<Connection>, layout: &Layout, shared: &SharedMirror) {
    loop {
        match tokio::time::timeout(REQUEST_TIMEOUT, read_snapshot(connection, layout)).await {
            Ok(Ok(snapshot)) => {
                let fresh = Mirror::from_snapshot(layout, snapshot);
                shared.mirror.lock().resynchronise(fresh);
                shared.applied.notify_all();
                return;
            }
            Ok(Err(err)) => log::warn!("cannot re-read the slices from etcd: {err}"),
            Err(_) => log::warn!("cannot re-read the slices from etcd: {}", Error::Timeout),
        }
        tokio::time::sleep(RECONNECT_DELAY).await;
    }
}
