use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;

fn name(text: &str) -> SliceName {
    text.parse().unwrap()
}

fn mac(last: u8) -> MacAddress {
    MacAddress::new([0, 0, 0, 0, 0, last])
}

fn open() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    (dir, store)
}

/// Opens the database again in this process after dropping the previous `Store`. sled
/// lets go of its file lock only when its last background task has dropped the file,
/// which can be a moment after the `Db` is gone; a new process never sees this.
pub(crate) fn reopen(path: &std::path::Path) -> Store {
    reopen_result(path).unwrap()
}

// The slice contract itself (orders, errors, cascades, the change stream, durability) is
// tested once for every backend, in tests/contract.rs; what follows is sled's alone.

#[test]
fn a_deleted_slice_leaves_no_record_behind() {
    let (_dir, store) = open();
    let s = name("s");
    store.create_slice(&s).unwrap();
    store.add_mac(&s, PortId::new(1, 1), mac(1)).unwrap();
    store.add_mac(&s, PortId::new(2, 2), mac(2)).unwrap();
    store.delete_port(&s, PortId::new(2, 2)).unwrap();
    assert_eq!(
        store.inner.tree.len(),
        1 + 2 + 2 + 2,
        "schema, slice, port and MAC records"
    );
    store.delete_slice(&s).unwrap();
    store.create_slice(&s).unwrap();
    assert_eq!(
        store.inner.tree.len(),
        1 + 2,
        "schema record and the two slice records"
    );
}

#[test]
fn through_the_interface_errors_keep_their_messages_and_say_what_kind_they_are() {
    let (dir, store) = open();
    let store: &dyn SliceStore = &store;
    match store.delete_slice(&name("missing")) {
        Err(StoreError::Slice(SliceError::SliceNotFound(missing))) => {
            assert_eq!(missing, name("missing"))
        }
        other => panic!("expected a contract error, got {other:?}"),
    }
    let locked = Error::Locked(dir.path().to_owned());
    let message = locked.to_string();
    match StoreError::from(locked) {
        StoreError::Unavailable(err) => assert_eq!(err.to_string(), message),
        other => panic!("a held database is unavailable, not {other:?}"),
    }
    // A store that can make nothing durable any more is a server going away (503).
    let failed = Error::Failed("injected".into());
    let message = failed.to_string();
    match StoreError::from(failed) {
        StoreError::Unavailable(err) => assert_eq!(err.to_string(), message),
        other => panic!("a failed store is unavailable, not {other:?}"),
    }
    let broken = Error::Corrupt("injected".into());
    let message = broken.to_string();
    match StoreError::from(broken) {
        StoreError::Failed(err) => assert_eq!(err.to_string(), message),
        other => panic!("a damaged record is a failure, not {other:?}"),
    }
}

#[test]
fn a_second_open_of_a_held_database_says_locked() {
    let (dir, _store) = open();
    match Store::open(dir.path()) {
        Err(Error::Locked(path)) => assert_eq!(path, dir.path()),
        Err(other) => panic!("expected Locked, got {other}"),
        Ok(_) => panic!("a held database opened twice"),
    }
}

/// Counts the store's fdatasyncs, fails the next one on request, and holds them while a
/// test lines writers up behind one: a disk that fails or stalls cannot be had without
/// root, and the flush path is the store's own.
#[derive(Default)]
pub(super) struct SyncProbe {
    fail_next: std::sync::atomic::AtomicBool,
    syncs: Arc<std::sync::atomic::AtomicU64>,
    held: parking_lot::Mutex<bool>,
    released: parking_lot::Condvar,
    /// Flushes that have reached the hold.
    waiting: std::sync::atomic::AtomicU64,
    /// Jobs handed to the writer.
    submitted: std::sync::atomic::AtomicU64,
    /// Chunks of a large write that may still be written before the writer stops as if
    /// the process had died (`None`: all of them).
    chunks_before_crash: parking_lot::Mutex<Option<usize>>,
}

impl SyncProbe {
    pub(super) fn before_fdatasync(&self) -> Result<(), Error> {
        {
            let mut held = self.held.lock();
            if *held {
                self.waiting.fetch_add(1, Ordering::SeqCst);
                while *held {
                    self.released.wait(&mut held);
                }
            }
        }
        if self.fail_next.swap(false, Ordering::SeqCst) {
            return Err(Error::Sync(std::io::Error::other(
                "injected fdatasync failure",
            )));
        }
        Ok(())
    }

    pub(super) fn chunk_written(&self) -> Result<(), Error> {
        let mut left = self.chunks_before_crash.lock();
        match left.as_mut() {
            Some(0) => Err(Error::Sync(std::io::Error::other("injected crash"))),
            Some(left) => {
                *left -= 1;
                Ok(())
            }
            None => Ok(()),
        }
    }

    pub(super) fn synced(&self) {
        self.syncs.fetch_add(1, Ordering::SeqCst);
    }

    pub(super) fn submitted(&self) {
        self.submitted.fetch_add(1, Ordering::SeqCst);
    }

    fn hold(&self) {
        *self.held.lock() = true;
    }

    fn release(&self) {
        *self.held.lock() = false;
        self.released.notify_all();
    }
}

/// Waits until `ready` holds; ten seconds is far beyond what any step here takes, so
/// running out is a failure, not a slow machine.
fn wait_until(what: &str, ready: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ready() {
        assert!(Instant::now() < deadline, "gave up waiting until {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Starts `count` writers, each running `write` on the store, and returns once every one
/// has handed its job to the writer thread (which the test holds in its first flush).
fn writers_behind_a_held_flush<T: Send + 'static>(
    store: &Arc<Store>,
    count: usize,
    write: impl Fn(&Store, usize) -> T + Send + Sync + 'static,
) -> Vec<std::thread::JoinHandle<T>> {
    let write = Arc::new(write);
    let submitted = store.inner.sync_probe.submitted.load(Ordering::SeqCst);
    let threads = (0..count)
        .map(|i| {
            let (store, write) = (store.clone(), write.clone());
            std::thread::spawn(move || write(&store, i))
        })
        .collect();
    wait_until("every writer has queued its job", || {
        store.inner.sync_probe.submitted.load(Ordering::SeqCst) >= submitted + count as u64
    });
    threads
}

/// Holds the store's next flush and starts one writer running `write`, returning once
/// that writer's flush is held: every job queued from then on waits behind it.
fn a_write_held_in_its_flush<T: Send + 'static>(
    store: &Arc<Store>,
    write: impl Fn(&Store, usize) -> T + Send + Sync + 'static,
) -> std::thread::JoinHandle<T> {
    let probe = &store.inner.sync_probe;
    let held = probe.waiting.load(Ordering::SeqCst);
    probe.hold();
    let writer = writers_behind_a_held_flush(store, 1, write);
    wait_until("the flush is held", || {
        probe.waiting.load(Ordering::SeqCst) == held + 1
    });
    writer.into_iter().next().unwrap()
}

#[test]
fn writes_queued_during_a_flush_share_the_next_one() {
    const WRITERS: usize = 32;
    let (_dir, store) = open();
    let store = Arc::new(store);
    let probe = &store.inner.sync_probe;
    let syncs = probe.syncs.load(Ordering::SeqCst);
    let first = a_write_held_in_its_flush(&store, |store, _| store.create_slice(&name("first")));
    let rest = writers_behind_a_held_flush(&store, WRITERS - 1, |store, i| {
        store.create_slice(&name(&format!("s{i}")))
    });
    probe.release();
    for writer in std::iter::once(first).chain(rest) {
        writer.join().unwrap().unwrap();
    }
    assert_eq!(
        probe.syncs.load(Ordering::SeqCst) - syncs,
        2,
        "one flush for the first write, one for the {} queued behind it",
        WRITERS - 1
    );
    assert_eq!(store.slices().unwrap().len(), WRITERS);
}

#[test]
fn of_racing_creates_queued_together_exactly_one_wins() {
    const RACERS: usize = 16;
    let (_dir, store) = open();
    let store = Arc::new(store);
    let probe = &store.inner.sync_probe;
    let blocker =
        a_write_held_in_its_flush(&store, |store, _| store.create_slice(&name("blocker")));
    // All of them reach the writer in one round: each must see the one before it.
    let racers = writers_behind_a_held_flush(&store, RACERS, |store, _| {
        store.create_slice(&name("contested"))
    });
    probe.release();
    blocker.join().unwrap().unwrap();
    let results: Vec<_> = racers.into_iter().map(|r| r.join().unwrap()).collect();
    let winners = results.iter().filter(|result| result.is_ok()).count();
    assert_eq!(winners, 1, "{results:?}");
    for result in results.iter().filter(|result| result.is_err()) {
        assert!(
            matches!(result, Err(Error::Slice(SliceError::SliceExists(_)))),
            "{result:?}"
        );
    }
    assert_eq!(
        store.slices().unwrap(),
        [name("blocker"), name("contested")]
    );
}

#[test]
fn a_write_is_seen_by_no_reader_and_told_to_no_listener_before_its_flush() {
    let (_dir, store) = open();
    let store = Arc::new(store);
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = heard.clone();
    store.subscribe(move |change| sink.lock().unwrap().push(change.clone()));
    let probe = &store.inner.sync_probe;
    probe.hold();
    let writer = writers_behind_a_held_flush(&store, 1, |store, _| {
        store.add_mac(&name("s"), PortId::new(1, 1), mac(1))
    });
    // The slice does not exist: the add fails without a flush.
    assert!(matches!(
        writer.into_iter().next().unwrap().join().unwrap(),
        Err(Error::Slice(SliceError::SliceNotFound(_)))
    ));
    let creator = a_write_held_in_its_flush(&store, |store, _| store.create_slice(&name("s")));
    // Applied to sled, not yet on disk: invisible.
    assert!(matches!(
        store.check_slice(&name("s")),
        Err(Error::Slice(SliceError::SliceNotFound(_)))
    ));
    assert!(store.slices().unwrap().is_empty());
    assert!(heard.lock().unwrap().is_empty());
    probe.release();
    creator.join().unwrap().unwrap();
    store.check_slice(&name("s")).unwrap();
    assert_eq!(*heard.lock().unwrap(), [Change::SliceCreated(name("s"))]);
}

#[test]
fn the_model_loaded_at_open_is_what_was_committed() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    for slice in ["a", "b", "c"] {
        store.create_slice(&name(slice)).unwrap();
    }
    for last in [3, 1, 2] {
        store
            .add_mac(&name("b"), PortId::new(2, 1), mac(last))
            .unwrap();
    }
    store.add_port(&name("b"), PortId::new(1, 1)).unwrap();
    store
        .add_mac(&name("c"), PortId::new(1, 1), mac(9))
        .unwrap();
    store
        .delete_mac(&name("b"), PortId::new(2, 1), mac(1))
        .unwrap();
    store.delete_slice(&name("a")).unwrap();
    store.create_slice(&name("a")).unwrap();
    let before = store.snapshot().unwrap();
    drop(store);
    let store = reopen(dir.path());
    assert_eq!(store.snapshot().unwrap(), before);
    assert_eq!(store.slices().unwrap(), [name("b"), name("c"), name("a")]);
    assert_eq!(
        store.macs(&name("b"), PortId::new(2, 1)).unwrap(),
        [mac(3), mac(2)]
    );
    assert_eq!(store.inner.model.read().bindings(), 3);
}

#[test]
fn listeners_hear_a_change_only_after_the_fdatasync_that_covers_it() {
    let (_dir, store) = open();
    let syncs = store.inner.sync_probe.syncs.clone();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = heard.clone();
    store.subscribe(move |change| {
        sink.lock()
            .unwrap()
            .push((change.clone(), syncs.load(Ordering::SeqCst)))
    });
    let s = name("s");
    let before_create = store.inner.sync_probe.syncs.load(Ordering::SeqCst);
    store.create_slice(&s).unwrap();
    let before_add = store.inner.sync_probe.syncs.load(Ordering::SeqCst);
    store.add_port(&s, PortId::new(1, 1)).unwrap();
    let heard = heard.lock().unwrap();
    assert_eq!(heard.len(), 2);
    assert_eq!(heard[0].0, Change::SliceCreated(s.clone()));
    assert!(heard[0].1 > before_create, "told before its fdatasync");
    assert!(heard[1].1 > before_add, "told before its fdatasync");
}

#[test]
fn a_failed_flush_is_never_told_and_the_store_refuses_every_later_write() {
    let (_dir, store) = open();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = heard.clone();
    store.subscribe(move |change| sink.lock().unwrap().push(change.clone()));
    let failures = Arc::new(Mutex::new(Vec::new()));
    let hook_sink = failures.clone();
    store.on_failure(move |reason| hook_sink.lock().unwrap().push(reason.to_owned()));

    store.create_slice(&name("kept")).unwrap();
    store
        .inner
        .sync_probe
        .fail_next
        .store(true, Ordering::SeqCst);
    match store.create_slice(&name("lost")) {
        Err(Error::Failed(reason)) => assert!(reason.contains("injected"), "{reason}"),
        other => panic!("expected the fdatasync error, got {other:?}"),
    }
    // The probe fails only once: a retry would succeed, and must not be made.
    for refused in [
        store.create_slice(&name("later")),
        store.add_port(&name("kept"), PortId::new(1, 1)),
        store.flush(),
    ] {
        match refused {
            Err(Error::Failed(reason)) => assert!(reason.contains("injected"), "{reason}"),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
    assert_eq!(*heard.lock().unwrap(), [Change::SliceCreated(name("kept"))]);
    let failures = failures.lock().unwrap();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].contains("injected fdatasync failure"));
    assert!(store.failure().is_some());
}

#[test]
fn writers_sharing_a_failed_flush_all_fail_and_none_is_told() {
    const WRITERS: usize = 16;
    let (_dir, store) = open();
    let store = Arc::new(store);
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = heard.clone();
    store.subscribe(move |change| sink.lock().unwrap().push(change.clone()));
    store
        .inner
        .sync_probe
        .fail_next
        .store(true, Ordering::SeqCst);
    let start = Arc::new(std::sync::Barrier::new(WRITERS));
    let writers: Vec<_> = (0..WRITERS)
        .map(|i| {
            let (store, start) = (store.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                store.create_slice(&name(&format!("s{i}")))
            })
        })
        .collect();
    for writer in writers {
        assert!(writer.join().unwrap().is_err());
    }
    assert!(heard.lock().unwrap().is_empty());
}

#[test]
fn a_write_whose_flush_failed_is_never_seen_and_nothing_after_it_is_applied() {
    let (_dir, store) = open();
    store.create_slice(&name("kept")).unwrap();
    store
        .inner
        .sync_probe
        .fail_next
        .store(true, Ordering::SeqCst);
    assert!(store.create_slice(&name("lost")).is_err());
    // sled holds it (applied before the flush), but no read shows it.
    assert!(store.inner.tree.len() > 3);
    assert_eq!(store.slices().unwrap(), [name("kept")]);
    assert!(store.check_slice(&name("lost")).is_err());
    let records = store.inner.tree.len();
    assert!(matches!(
        store.create_slice(&name("later")),
        Err(Error::Failed(_))
    ));
    assert!(matches!(
        store.revoke_session(b"session", 200, 100),
        Err(Error::Failed(_))
    ));
    assert_eq!(
        store.inner.tree.len(),
        records,
        "a refused write changed sled"
    );
    assert!(!store.session_revoked(b"session", 50).unwrap());
}

#[test]
fn a_revocation_on_a_failed_store_is_refused_and_changes_nothing() {
    let (_dir, store) = open();
    store
        .inner
        .sync_probe
        .fail_next
        .store(true, Ordering::SeqCst);
    assert!(store.create_slice(&name("lost")).is_err());
    match store.revoke_session(b"session", 200, 100) {
        Err(Error::Failed(reason)) => assert!(reason.contains("injected"), "{reason}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(!store.session_revoked(b"session", 50).unwrap());
}

#[test]
fn a_revocation_is_made_durable_by_the_group_commit() {
    let (_dir, store) = open();
    let failures = Arc::new(Mutex::new(Vec::new()));
    let sink = failures.clone();
    store.on_failure(move |reason| sink.lock().unwrap().push(reason.to_owned()));
    let syncs = store.inner.sync_probe.syncs.load(Ordering::SeqCst);
    store.revoke_session(b"session", 200, 100).unwrap();
    assert!(store.inner.sync_probe.syncs.load(Ordering::SeqCst) > syncs);
    // Its failed flush fails the store like any other write's.
    store
        .inner
        .sync_probe
        .fail_next
        .store(true, Ordering::SeqCst);
    assert!(store.revoke_session(b"other", 200, 100).is_err());
    assert_eq!(failures.lock().unwrap().len(), 1);
    assert!(matches!(
        store.create_slice(&name("later")),
        Err(Error::Failed(_))
    ));
}

#[test]
fn a_new_database_is_marked_and_a_marked_one_reopens_with_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    {
        let store = Store::open(&store_dir).unwrap();
        store.create_slice(&name("kept")).unwrap();
    }
    assert!(store_dir.join(integrity::FORMAT_MARKER).is_file());
    // No snapshot yet: this open checks the first segment header, and leaves nothing.
    let store = reopen(&store_dir);
    assert_eq!(store.slices().unwrap(), [name("kept")]);
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "{left:?}");
}

/// Closes the store at `dir` and removes sled's snapshots, as a database that sled has not
/// snapshotted yet looks; sled then rebuilds from the log alone.
fn without_snapshots(dir: &std::path::Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("snap.")
        {
            std::fs::remove_file(path).unwrap();
        }
    }
}

#[test]
fn a_sound_database_closed_cleanly_without_a_snapshot_opens_without_a_scratch_copy() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    drop(Store::open(&store_dir).unwrap());
    drop(reopen(&store_dir));
    without_snapshots(&store_dir);
    let before = integrity::SCRATCH_COPIES.with(std::cell::Cell::get);
    let store = reopen(&store_dir);
    assert_eq!(integrity::SCRATCH_COPIES.with(std::cell::Cell::get), before);
    assert!(store.slices().unwrap().is_empty());
}

#[test]
fn a_scratch_copy_left_by_an_interrupted_check_goes_at_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    drop(Store::open(&store_dir).unwrap());
    let leftover = dir.path().join(".sliced-check-store-crashed");
    std::fs::create_dir(&leftover).unwrap();
    std::fs::write(leftover.join("db"), [1u8; 4096]).unwrap();
    let unrelated = dir.path().join(".sliced-check-other-store-x");
    std::fs::create_dir(&unrelated).unwrap();
    drop(reopen(&store_dir));
    assert!(!leftover.exists(), "the leftover copy is still there");
    assert!(unrelated.exists(), "another store's copy was removed");
}

#[test]
fn a_database_from_before_the_marker_is_migrated_on_first_open() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        store.create_slice(&name("old")).unwrap();
    }
    std::fs::remove_file(dir.path().join(integrity::FORMAT_MARKER)).unwrap();
    let store = reopen(dir.path());
    assert_eq!(store.slices().unwrap(), [name("old")]);
    assert!(dir.path().join(integrity::FORMAT_MARKER).is_file());
}

/// Closed cleanly, the log differs from its record; not closed cleanly (no record), the
/// trial on a scratch copy finds no data. Either way the files stay as they were.
#[test]
fn a_marked_database_sled_finds_empty_is_damaged_and_left_as_it_was() {
    use std::io::{Seek, Write};
    for (closed_cleanly, expected) in [(true, "changed since"), (false, "sled finds none")] {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            store.create_slice(&name("blue")).unwrap();
        }
        drop(reopen(dir.path()));
        // The open above wrote a snapshot; without one sled rebuilds from the log alone.
        without_snapshots(dir.path());
        if !closed_cleanly {
            std::fs::remove_file(dir.path().join(seal::SEAL_FILE)).unwrap();
        }
        let log_path = dir.path().join(SLED_LOG_FILE);
        let mut log = std::fs::OpenOptions::new()
            .write(true)
            .open(&log_path)
            .unwrap();
        log.seek(std::io::SeekFrom::Start(0)).unwrap();
        log.write_all(&[0xa5; 64]).unwrap();
        drop(log);
        let before = std::fs::read(&log_path).unwrap();
        match reopen_result(dir.path()) {
            Err(Error::Damaged { path, detail }) => {
                assert_eq!(path, dir.path());
                assert!(detail.contains(expected), "{detail}");
            }
            other => panic!("expected damage, got {:?}", other.map(|_| ())),
        }
        assert!(std::fs::read(&log_path).unwrap() == before, "rewritten");
    }
}

#[test]
fn a_marker_of_another_format_is_damage() {
    let dir = tempfile::tempdir().unwrap();
    drop(Store::open(dir.path()).unwrap());
    std::fs::write(
        dir.path().join(integrity::FORMAT_MARKER),
        "something else\n",
    )
    .unwrap();
    assert!(matches!(
        reopen_result(dir.path()),
        Err(Error::Damaged { .. })
    ));
}

/// [`reopen`] for an open that may fail for another reason than the lock.
fn reopen_result(path: &std::path::Path) -> Result<Store, Error> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match Store::open(path) {
            Err(Error::Locked(_)) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            opened => return opened,
        }
    }
}

/// A declared state of `count` slices named `<prefix><n>`, each with a port and a MAC
/// address: six records a slice to write, eight to remove.
fn declared(prefix: &str, count: u16) -> Vec<slice_core::Slice> {
    (0..count)
        .map(|n| {
            let [high, low] = n.to_be_bytes();
            slice_core::Slice {
                name: name(&format!("{prefix}{n}")),
                ports: vec![slice_core::Port {
                    id: PortId::new(1, u32::from(n) + 1),
                    macs: vec![MacAddress::new([2, 0, 0, 0, high, low])],
                }],
            }
        })
        .collect()
}

#[test]
fn an_apply_larger_than_a_batch_is_whole_after_a_stop_in_its_middle() {
    let dir = tempfile::tempdir().unwrap();
    let before = declared("old", 600);
    let after = declared("new", 700);
    {
        let store = Store::open(dir.path()).unwrap();
        store.apply(&before).unwrap();
        assert_eq!(store.snapshot().unwrap(), before);
        // Records of the plan: 8 for each slice removed, 6 for each made.
        const { assert!(600 * 8 + 700 * 6 > 2 * journal::ONE_BATCH_MAX) };
        *store.inner.sync_probe.chunks_before_crash.lock() = Some(1);
        assert!(store.apply(&after).is_err());
        // Nothing of it is seen, though sled holds part of it.
        assert_eq!(store.snapshot().unwrap(), before);
    }
    let store = reopen(dir.path());
    assert_eq!(store.snapshot().unwrap(), after);
    let records = store.inner.tree.len();
    drop(store);
    // The journal is gone: a second open finds the same records and replays nothing.
    let store = reopen(dir.path());
    assert_eq!(store.snapshot().unwrap(), after);
    assert_eq!(store.inner.tree.len(), records);
}

#[test]
fn an_apply_that_empties_a_large_store_leaves_no_record_behind() {
    let (_dir, store) = open();
    let empty_records = store.inner.tree.len();
    store.apply(&declared("s", 700)).unwrap();
    store.apply(&[]).unwrap();
    assert!(store.snapshot().unwrap().is_empty());
    assert_eq!(store.inner.tree.len(), empty_records);
}

#[test]
fn the_probe_fails_after_a_failed_flush_or_with_the_log_file_removed_and_writes_nothing() {
    let (dir, store) = open();
    store.create_slice(&name("kept")).unwrap();
    let version = store.inner.content_version.load(Ordering::SeqCst);
    let syncs = store.inner.sync_probe.syncs.load(Ordering::SeqCst);
    SliceStore::probe(&store).unwrap();
    assert_eq!(store.inner.sync_probe.syncs.load(Ordering::SeqCst), syncs);
    assert_eq!(store.inner.content_version.load(Ordering::SeqCst), version);

    std::fs::remove_file(dir.path().join(SLED_LOG_FILE)).unwrap();
    let removed = SliceStore::probe(&store).unwrap_err().to_string();
    assert!(removed.contains("removed"), "{removed}");

    let (_dir, store) = open();
    store
        .inner
        .sync_probe
        .fail_next
        .store(true, Ordering::SeqCst);
    assert!(store.create_slice(&name("lost")).is_err());
    match SliceStore::probe(&store) {
        Err(StoreError::Unavailable(reason)) => {
            assert!(reason.to_string().contains("injected"), "{reason}");
        }
        other => panic!("expected the latched failure, got {other:?}"),
    }
}

/// An fsync of a file removed from the disk succeeds: without the check after it, this
/// write was acknowledged and gone at the next start.
#[test]
fn a_write_after_the_log_was_removed_or_replaced_is_refused_and_so_is_every_later_one() {
    for replace in [false, true] {
        let (dir, store) = open();
        let failures = Arc::new(Mutex::new(Vec::new()));
        let sink = failures.clone();
        store.on_failure(move |reason| sink.lock().unwrap().push(reason.to_owned()));
        store.create_slice(&name("kept")).unwrap();
        let log = dir.path().join(SLED_LOG_FILE);
        std::fs::remove_file(&log).unwrap();
        if replace {
            std::fs::write(&log, b"").unwrap();
        }
        for refused in [
            store.create_slice(&name("lost")),
            store.add_port(&name("kept"), PortId::new(1, 1)),
        ] {
            match refused {
                Err(Error::Failed(reason)) => assert!(reason.contains("log file"), "{reason}"),
                other => panic!("replace {replace}: expected a refusal, got {other:?}"),
            }
        }
        assert_eq!(store.slices().unwrap(), [name("kept")]);
        assert_eq!(failures.lock().unwrap().len(), 1, "replace {replace}");
    }
}

/// Readiness and writes agree: once the probe has seen the log gone, no write is taken,
/// and the failure hook (which stops the daemon) has run.
#[test]
fn a_probe_that_finds_the_log_gone_makes_the_store_refuse_writes() {
    let (dir, store) = open();
    let failures = Arc::new(Mutex::new(Vec::new()));
    let sink = failures.clone();
    store.on_failure(move |reason| sink.lock().unwrap().push(reason.to_owned()));
    std::fs::remove_file(dir.path().join(SLED_LOG_FILE)).unwrap();
    assert!(matches!(
        SliceStore::probe(&store),
        Err(StoreError::Unavailable(_))
    ));
    assert_eq!(failures.lock().unwrap().len(), 1);
    let syncs = store.inner.sync_probe.syncs.load(Ordering::SeqCst);
    assert!(matches!(
        store.create_slice(&name("lost")),
        Err(Error::Failed(_))
    ));
    assert_eq!(store.inner.sync_probe.syncs.load(Ordering::SeqCst), syncs);
}

#[test]
fn a_clean_close_is_recorded_and_the_next_open_needs_no_scratch_copy() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    {
        let store = Store::open(&store_dir).unwrap();
        store.create_slice(&name("kept")).unwrap();
    }
    assert!(store_dir.join(seal::SEAL_FILE).is_file());
    let before = integrity::SCRATCH_COPIES.with(std::cell::Cell::get);
    let store = reopen(&store_dir);
    assert_eq!(integrity::SCRATCH_COPIES.with(std::cell::Cell::get), before);
    // Open, the record is gone: a crash now must not leave one the log no longer matches.
    assert!(!store_dir.join(seal::SEAL_FILE).exists());
    assert_eq!(store.slices().unwrap(), [name("kept")]);
}

#[test]
fn a_store_that_failed_or_did_not_close_leaves_no_record_and_is_tried_on_a_copy_first() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        store.create_slice(&name("kept")).unwrap();
        store
            .inner
            .sync_probe
            .fail_next
            .store(true, Ordering::SeqCst);
        assert!(store.create_slice(&name("lost")).is_err());
    }
    assert!(!dir.path().join(seal::SEAL_FILE).exists());
    let before = integrity::SCRATCH_COPIES.with(std::cell::Cell::get);
    let store = reopen(dir.path());
    assert_eq!(
        integrity::SCRATCH_COPIES.with(std::cell::Cell::get),
        before + 1
    );
    assert_eq!(store.slices().unwrap()[0], name("kept"));
}

#[test]
fn a_directory_holds_a_database_once_one_was_opened_there() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    assert!(!Store::exists_in(&path));
    std::fs::create_dir(&path).unwrap();
    assert!(
        !Store::exists_in(&path),
        "an empty directory is no database"
    );
    drop(Store::open(&path).unwrap());
    assert!(Store::exists_in(&path));
}
