//! Durable storage of slices, their ports and the ports' MAC addresses, on sled.
//!
//! Every write is one atomic sled batch and returns only once it is on disk. Concurrent
//! writers share their flushes: while one fsync runs, later writers queue behind it and the
//! next fsync covers all of them (group commit). Readers never wait for writers.
//!
//! Listeners subscribed through [`MembershipSource`] hear of every committed change, in
//! commit order, once it is on disk; the controller keeps its membership index current
//! that way. A flush that fails is final: the changes it covered are never told, the
//! writers waiting on it get an error, and the store refuses every later write (see
//! [`Store::on_failure`]).
//!
//! The REST application and the `slice` tool use a `Store` through slice-core's
//! [`SliceStore`] interface only, as every store backend offers it; this crate's own
//! [`Error`] becomes that interface's [`StoreError`] there. What is sled's alone (opening,
//! waiting for a database another process holds, the final flush, the failure hook) is
//! on `Store` itself, for the `sliced` binary and the tool, which open the store.
//!
//! ```
//! use slice_core::SliceStore;
//! use slice_store::Store;
//! let dir = tempfile::tempdir()?;
//! let store: &dyn SliceStore = &Store::open(dir.path())?;
//! let slice = "blue".parse()?;
//! store.create_slice(&slice)?;
//! store.add_mac(&slice, "0x1:1".parse()?, "00:00:00:00:00:01".parse()?)?;
//! assert_eq!(store.ports(&slice)?, vec!["0x1:1".parse()?]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod commit;
mod holder;
mod integrity;
mod keys;
mod permissions;
mod private_file;
mod sessions;

use std::collections::{HashMap, VecDeque};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use parking_lot::{Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use slice_core::{Change, ChangeListener, MembershipSource, SliceStore, StoreError};
use slice_core::{MacAddress, Plan, PlanError, Port, PortId, Slice, SliceError, SliceName, Step};

pub use crate::commit::CommitObserver;
use crate::commit::{CommitError, GroupCommit};
pub use crate::holder::LockHolder;
use crate::keys::{Key, Tag};
pub use crate::permissions::{make_private_dir, Tightened};
pub use crate::private_file::write_private_durably;

/// Why an operation of the sled store failed. Through [`SliceStore`] it is a
/// [`StoreError`]: a contract error stays one, `Locked` is `Unavailable`, the rest `Failed`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request broke the slice contract; nothing was changed.
    #[error(transparent)]
    Slice(#[from] SliceError),
    /// A declared state to apply names something twice; nothing was changed.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// Another process has the database open (sled admits one process at a time).
    #[error("the database at {} is in use by another process", .0.display())]
    Locked(PathBuf),
    /// The database holds something this version cannot read.
    #[error("the database is corrupt or of another version: {0}")]
    Corrupt(String),
    /// The database cannot be read back as it was written; nothing was changed in it.
    #[error("the database {} is corrupt: {detail}", path.display())]
    Damaged { path: PathBuf, detail: String },
    #[error("database error: {0}")]
    Db(#[from] sled::Error),
    /// A file of the store's own, beside sled's, could not be read or written.
    #[error("cannot use {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The database directory or its files could not be made owner-only.
    #[error("cannot make the database {} owner-only: {source}", path.display())]
    Permissions {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The database file could not be made durable.
    #[error("cannot sync the database to disk: {0}")]
    Sync(std::io::Error),
    /// A flush failed, this write's or an earlier one's: the store takes no more changes.
    #[error("the database could not be flushed ({0}); it takes no more changes")]
    Failed(String),
}

/// How long to keep trying to open a database that another process holds: a `slice`
/// command holds it for well under this, a daemon starting up holds it before it listens,
/// and one stopping stops listening before it lets go.
pub const LOCKED_WAIT: Duration = Duration::from_secs(3);

const LOCKED_RETRY_PAUSE: Duration = Duration::from_millis(100);

/// What [`Store::open_waiting`] came to.
pub enum Opened<T> {
    /// The database, opened by this process.
    Store(Box<Store>),
    /// The look elsewhere found what it looked for, such as a daemon that answers.
    Elsewhere(T),
}

type Listener = Box<dyn Fn(&Change) + Send + Sync>;
type FailureHook = Box<dyn Fn(&str) + Send + Sync>;

const SCHEMA_VERSION: &[u8] = b"1";
/// The sled tree that holds everything.
const TREE: &str = "slices";
/// The file in sled's directory that holds its log (sled 0.34 layout).
const SLED_LOG_FILE: &str = "db";

/// The slice database. Cheap to share behind an `Arc`; all methods take `&self`.
pub struct Store {
    db: sled::Db,
    tree: sled::Tree,
    /// The revoked login sessions (see the sessions module), opened once: the session
    /// check reads it on every guarded request.
    revoked_sessions: sled::Tree,
    /// sled's log file, for the fsync that its own flush leaves out: on Linux sled 0.34
    /// ends a flush with `sync_file_range`, which neither empties the drive's write
    /// cache nor records a grown file's new size. fsync acts on the file, not on the
    /// descriptor, so a read-only handle of our own is enough.
    log_file: std::fs::File,
    /// Serialises the check-then-write of each change. It is held for the in-memory part
    /// of a write only, never across a flush, so it does not serialise fsyncs.
    write_lock: Mutex<()>,
    commit: GroupCommit,
    /// Changes applied but not yet told to the listeners, by ticket: a change is told
    /// only once the flush covering its ticket succeeded.
    untold: Mutex<VecDeque<(u64, Change)>>,
    listeners: RwLock<Vec<Listener>>,
    /// Why a flush failed, once one has: from then on the store refuses changes.
    failure: OnceLock<String>,
    failure_hooks: RwLock<Vec<FailureHook>>,
    /// The permissions that opening took away from what was there before.
    tightened: Vec<Tightened>,
    #[cfg(test)]
    sync_probe: tests::SyncProbe,
    /// The slice names in creation order: the answer to the most frequent read, kept in
    /// memory so that listing slices costs no scan. Changed only under `write_lock`,
    /// together with the tree.
    slice_names: RwLock<SliceNames>,
}

struct SliceNames {
    names: Vec<SliceName>,
    /// Changes whenever `names` does, so a reader can tell that a copy is current.
    version: u64,
}

impl Store {
    /// Opens (creating when missing) the database in the directory `path`, owner-only:
    /// sled creates its files with the process's umask, and a database made by an earlier
    /// release may be readable by all. What was loosened before is logged and kept for
    /// [`Store::tightened`].
    pub fn open(path: &Path) -> Result<Self, Error> {
        let permissions = |source| Error::Permissions {
            path: path.to_owned(),
            source,
        };
        let tightened = if path.is_dir() {
            let mut tightened = permissions::tighten_tree(path).map_err(permissions)?;
            // sled writes its snapshots with the umask's permissions, inside a directory
            // that is owner-only: only files others could reach are worth a report.
            if tightened.first().is_some_and(|change| change.path != path) {
                tightened.clear();
            }
            tightened
        } else {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(path)
                .map_err(permissions)?;
            Vec::new()
        };
        for change in &tightened {
            log::warn!("{change}");
        }
        let marked = integrity::is_marked(path)?;
        // Read before sled's open, which writes to a log it cannot recover.
        let unmarked_log_written = !marked && integrity::log_was_written(path)?;
        if marked {
            integrity::check_before_open(path)?;
        }
        let db = sled::Config::new()
            .path(path)
            .open()
            .map_err(|err| match err {
                sled::Error::Io(io) if is_lock_conflict(&io) => Error::Locked(path.to_owned()),
                other => integrity::sled_damage(path, other),
            })?;
        if marked {
            integrity::verify(&db, path)?;
        } else if unmarked_log_written && !db.was_recovered() {
            // Made by an earlier release, which left no marker, and unreadable to sled.
            return Err(Error::Damaged {
                path: path.to_owned(),
                detail: "its log holds data, but sled finds none".to_owned(),
            });
        }
        // What sled has just created, with the umask's permissions.
        permissions::tighten_tree(path).map_err(permissions)?;
        let log_file = std::fs::File::open(path.join(SLED_LOG_FILE)).map_err(Error::Sync)?;
        let tree = db.open_tree(TREE)?;
        match tree.get(Key::meta("schema"))? {
            Some(version) if version.as_ref() != SCHEMA_VERSION => {
                return Err(Error::Corrupt(format!(
                    "schema version {:?}, expected {:?}",
                    String::from_utf8_lossy(&version),
                    String::from_utf8_lossy(SCHEMA_VERSION)
                )));
            }
            Some(_) => {}
            None => {
                tree.insert(Key::meta("schema"), SCHEMA_VERSION)?;
                db.flush()?;
                log_file.sync_data().map_err(Error::Sync)?;
            }
        }
        if !marked {
            // A new database, or one from a release that left no marker (migrated here).
            integrity::mark(path)?;
        }
        let slice_names = tree
            .scan_prefix(Key::tag(Tag::SliceOrder))
            .values()
            .map(|value| decode_name(&value?))
            .collect::<Result<Vec<_>, _>>()?;
        let revoked_sessions = db.open_tree(sessions::TREE)?;
        Ok(Self {
            db,
            tree,
            revoked_sessions,
            log_file,
            write_lock: Mutex::new(()),
            commit: GroupCommit::default(),
            untold: Mutex::new(VecDeque::new()),
            listeners: RwLock::new(Vec::new()),
            failure: OnceLock::new(),
            failure_hooks: RwLock::new(Vec::new()),
            tightened,
            #[cfg(test)]
            sync_probe: tests::SyncProbe::default(),
            slice_names: RwLock::new(SliceNames {
                names: slice_names,
                version: 0,
            }),
        })
    }

    /// Opens the database like [`Store::open`], but while another process holds it, keeps
    /// trying for up to `wait`. Before each try, `look_elsewhere` may end the wait with its
    /// own answer: the tool looks for a daemon to send its command to, the daemon for
    /// another daemon already serving. Past the wait, the error is `Locked`.
    pub fn open_waiting<T>(
        path: &Path,
        wait: Duration,
        mut look_elsewhere: impl FnMut() -> Option<T>,
    ) -> Result<Opened<T>, Error> {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(found) = look_elsewhere() {
                return Ok(Opened::Elsewhere(found));
            }
            match Self::open(path) {
                Err(Error::Locked(_)) if Instant::now() < deadline => {
                    std::thread::sleep(LOCKED_RETRY_PAUSE);
                }
                opened => return opened.map(|store| Opened::Store(Box::new(store))),
            }
        }
    }

    /// The process holding the database in `path`, when the system can tell.
    pub fn lock_holder(path: &Path) -> Option<LockHolder> {
        holder::lock_holder(&path.join(SLED_LOG_FILE))
    }

    /// Registers a function called with every committed change, in commit order, once
    /// the change is on disk and before its writer returns. It may run on another
    /// writer's thread, while a lock that keeps deliveries in order is held, so it must be
    /// quick: send on a channel and return.
    pub(crate) fn subscribe(&self, listener: impl Fn(&Change) + Send + Sync + 'static) {
        self.listeners.write().push(Box::new(listener));
    }

    /// Tells `observer` the size and duration of every group commit (for metrics), from
    /// now on; a second observer is ignored.
    pub fn observe_commits(&self, observer: Arc<dyn CommitObserver>) {
        self.commit.observe(observer);
    }

    /// Registers a function called once, with the reason, when a flush fails. The store
    /// then holds changes that are applied in memory but not on disk, and refuses every
    /// later write; a process serving its contents should stop.
    pub fn on_failure(&self, hook: impl Fn(&str) + Send + Sync + 'static) {
        self.failure_hooks.write().push(Box::new(hook));
    }

    /// The permissions that opening took away from files and directories that were there
    /// before; empty when everything was owner-only already.
    pub fn tightened(&self) -> &[Tightened] {
        &self.tightened
    }

    /// Why a flush failed, if one has.
    pub fn failure(&self) -> Option<&str> {
        self.failure.get().map(String::as_str)
    }

    // ---- reads -------------------------------------------------------------------------

    /// Runs `look` on the slice names in creation order and their version, under the
    /// list's read lock: writers wait while it runs.
    fn with_slices<R>(&self, look: impl FnOnce(&[SliceName], u64) -> R) -> R {
        let list = self.slice_names.read();
        look(&list.names, list.version)
    }

    /// Fails with `SliceNotFound` unless the slice exists.
    pub(crate) fn check_slice(&self, slice: &SliceName) -> Result<(), Error> {
        self.slice_id(slice).map(drop)
    }

    /// The ports of a slice, in the order they were added.
    pub(crate) fn ports(&self, slice: &SliceName) -> Result<Vec<PortId>, Error> {
        let id = self.slice_id(slice)?;
        self.tree
            .scan_prefix(Key::tag(Tag::PortOrder).id(id))
            .values()
            .map(|value| keys::decode_port(&value?).ok_or_else(|| corrupt("port record")))
            .collect()
    }

    /// Fails with `SliceNotFound` or `PortNotFound` unless the port is in the slice.
    pub(crate) fn check_port(&self, slice: &SliceName, port: PortId) -> Result<(), Error> {
        let id = self.slice_id(slice)?;
        self.port_seq(id, port).map(drop)
    }

    /// The MAC addresses of a port of a slice, in the order they were added.
    pub(crate) fn macs(&self, slice: &SliceName, port: PortId) -> Result<Vec<MacAddress>, Error> {
        let id = self.slice_id(slice)?;
        self.port_seq(id, port)?;
        self.macs_of(id, port)
    }

    /// Fails with the first of `SliceNotFound`, `PortNotFound`, `MacNotFound` that applies.
    pub(crate) fn check_mac(
        &self,
        slice: &SliceName,
        port: PortId,
        mac: MacAddress,
    ) -> Result<(), Error> {
        let id = self.slice_id(slice)?;
        self.port_seq(id, port)?;
        match self
            .tree
            .get(Key::tag(Tag::MacIndex).id(id).port(port).mac(mac))?
        {
            Some(_) => Ok(()),
            None => Err(SliceError::MacNotFound(mac).into()),
        }
    }

    /// Every slice with its ports and MAC addresses, in order.
    pub(crate) fn snapshot(&self) -> Result<Vec<Slice>, Error> {
        let mut slices = Vec::new();
        for entry in self.tree.scan_prefix(Key::tag(Tag::SliceOrder)) {
            let (key, value) = entry?;
            let id = keys::id_after_tag(&key).ok_or_else(|| corrupt("slice order key"))?;
            slices.push(self.load_slice(id, decode_name(&value)?)?);
        }
        Ok(slices)
    }

    // ---- writes: each returns once the change is on disk --------------------------------

    /// Fails with `SliceExists` when the slice exists.
    pub(crate) fn create_slice(&self, slice: &SliceName) -> Result<(), Error> {
        self.write(|store| {
            let name_key = Key::tag(Tag::SliceName).name(slice);
            if store.tree.get(name_key)?.is_some() {
                return Err(SliceError::SliceExists(slice.clone()).into());
            }
            let id = store.db.generate_id()?;
            let mut batch = sled::Batch::default();
            batch.insert(name_key.as_ref(), &id.to_be_bytes()[..]);
            batch.insert(
                Key::tag(Tag::SliceOrder).id(id).as_ref(),
                slice.as_str().as_bytes(),
            );
            Ok((batch, Change::SliceCreated(slice.clone()), ()))
        })
    }

    /// Deletes a slice with all its ports and MAC addresses and returns what it held.
    pub(crate) fn delete_slice(&self, slice: &SliceName) -> Result<Slice, Error> {
        self.write(|store| {
            let id = store.slice_id(slice)?;
            let mut batch = sled::Batch::default();
            batch.remove(Key::tag(Tag::SliceName).name(slice).as_ref());
            batch.remove(Key::tag(Tag::SliceOrder).id(id).as_ref());
            for tag in [Tag::PortIndex, Tag::PortOrder, Tag::MacIndex, Tag::MacOrder] {
                for key in store.tree.scan_prefix(Key::tag(tag).id(id)).keys() {
                    batch.remove(key?);
                }
            }
            let removed = store.load_slice(id, slice.clone())?;
            Ok((batch, Change::SliceDeleted(removed.clone()), removed))
        })
    }

    pub(crate) fn add_port(&self, slice: &SliceName, port: PortId) -> Result<(), Error> {
        self.write(|store| {
            let id = store.slice_id(slice)?;
            let index_key = Key::tag(Tag::PortIndex).id(id).port(port);
            if store.tree.get(index_key)?.is_some() {
                return Err(SliceError::PortExists(port).into());
            }
            let mut batch = sled::Batch::default();
            store.insert_port(&mut batch, id, port)?;
            let change = Change::PortAdded {
                slice: slice.clone(),
                port,
            };
            Ok((batch, change, ()))
        })
    }

    /// Removes a port and its MAC addresses from a slice and returns what it held.
    pub(crate) fn delete_port(&self, slice: &SliceName, port: PortId) -> Result<Port, Error> {
        self.write(|store| {
            let id = store.slice_id(slice)?;
            let seq = store.port_seq(id, port)?;
            let macs = store.macs_of(id, port)?;
            let mut batch = sled::Batch::default();
            batch.remove(Key::tag(Tag::PortIndex).id(id).port(port).as_ref());
            batch.remove(Key::tag(Tag::PortOrder).id(id).seq(seq).as_ref());
            for tag in [Tag::MacIndex, Tag::MacOrder] {
                for key in store
                    .tree
                    .scan_prefix(Key::tag(tag).id(id).port(port))
                    .keys()
                {
                    batch.remove(key?);
                }
            }
            let removed = Port { id: port, macs };
            let change = Change::PortDeleted {
                slice: slice.clone(),
                port: removed.clone(),
            };
            Ok((batch, change, removed))
        })
    }

    /// Adds a MAC address to a port of a slice, adding the port to the slice first when it
    /// is not there. Returns true when the port was created.
    pub(crate) fn add_mac(
        &self,
        slice: &SliceName,
        port: PortId,
        mac: MacAddress,
    ) -> Result<bool, Error> {
        self.write(|store| {
            let id = store.slice_id(slice)?;
            let mut batch = sled::Batch::default();
            let port_created = store.port_seq(id, port).is_err();
            if port_created {
                store.insert_port(&mut batch, id, port)?;
            } else if store
                .tree
                .get(Key::tag(Tag::MacIndex).id(id).port(port).mac(mac))?
                .is_some()
            {
                return Err(SliceError::MacExists(mac).into());
            }
            let seq = store.db.generate_id()?;
            batch.insert(
                Key::tag(Tag::MacIndex).id(id).port(port).mac(mac).as_ref(),
                &seq.to_be_bytes()[..],
            );
            batch.insert(
                Key::tag(Tag::MacOrder).id(id).port(port).seq(seq).as_ref(),
                &mac.octets()[..],
            );
            let change = Change::MacAdded {
                slice: slice.clone(),
                port,
                mac,
            };
            Ok((batch, change, port_created))
        })
    }

    pub(crate) fn delete_mac(
        &self,
        slice: &SliceName,
        port: PortId,
        mac: MacAddress,
    ) -> Result<(), Error> {
        self.write(|store| {
            let id = store.slice_id(slice)?;
            store.port_seq(id, port)?;
            let index_key = Key::tag(Tag::MacIndex).id(id).port(port).mac(mac);
            let seq = match store.tree.get(index_key)? {
                Some(seq) => keys::decode_u64(&seq).ok_or_else(|| corrupt("MAC record"))?,
                None => return Err(SliceError::MacNotFound(mac).into()),
            };
            let mut batch = sled::Batch::default();
            batch.remove(index_key.as_ref());
            batch.remove(Key::tag(Tag::MacOrder).id(id).port(port).seq(seq).as_ref());
            let change = Change::MacDeleted {
                slice: slice.clone(),
                port,
                mac,
            };
            Ok((batch, change, ()))
        })
    }

    /// Makes the store equal to `declared` in one atomic batch and one flush, and
    /// returns the plan it carried out; the listeners then hear its changes in order.
    /// An empty plan writes nothing.
    pub(crate) fn apply(&self, declared: &[Slice]) -> Result<Plan, Error> {
        let ((plan, wrote), ticket) = self.apply_locked(|store| {
            let current = store.snapshot()?;
            let plan = Plan::between(&current, declared)?;
            if plan.is_empty() {
                return Ok(((plan, false), Vec::new()));
            }
            let batch = store.batch_for(&plan)?;
            store.tree.apply_batch(batch)?;
            let changes = plan.changes(&current);
            for change in &changes {
                store.track_slice_names(change);
            }
            Ok(((plan, true), changes))
        })?;
        if wrote {
            self.make_durable(ticket)?;
        }
        Ok(plan)
    }

    /// The one batch that carries out `plan` on the tree as it is (under the write lock).
    fn batch_for(&self, plan: &Plan) -> Result<sled::Batch, Error> {
        let mut batch = sled::Batch::default();
        // Slices the plan creates have no record in the tree yet.
        let mut created: HashMap<&SliceName, u64> = HashMap::new();
        let id_of = |created: &HashMap<&SliceName, u64>, slice: &SliceName| match created.get(slice)
        {
            Some(id) => Ok(*id),
            None => self.slice_id(slice),
        };
        for step in &plan.steps {
            match step {
                Step::DeleteSlice { slice } => {
                    let id = self.slice_id(slice)?;
                    batch.remove(Key::tag(Tag::SliceName).name(slice).as_ref());
                    batch.remove(Key::tag(Tag::SliceOrder).id(id).as_ref());
                    for tag in [Tag::PortIndex, Tag::PortOrder, Tag::MacIndex, Tag::MacOrder] {
                        for key in self.tree.scan_prefix(Key::tag(tag).id(id)).keys() {
                            batch.remove(key?);
                        }
                    }
                }
                Step::DeletePort { slice, port } => {
                    let id = self.slice_id(slice)?;
                    let seq = self.port_seq(id, *port)?;
                    batch.remove(Key::tag(Tag::PortIndex).id(id).port(*port).as_ref());
                    batch.remove(Key::tag(Tag::PortOrder).id(id).seq(seq).as_ref());
                    for tag in [Tag::MacIndex, Tag::MacOrder] {
                        for key in self
                            .tree
                            .scan_prefix(Key::tag(tag).id(id).port(*port))
                            .keys()
                        {
                            batch.remove(key?);
                        }
                    }
                }
                Step::DeleteMac { slice, port, mac } => {
                    let id = self.slice_id(slice)?;
                    let index_key = Key::tag(Tag::MacIndex).id(id).port(*port).mac(*mac);
                    let seq = match self.tree.get(index_key)? {
                        Some(seq) => keys::decode_u64(&seq).ok_or_else(|| corrupt("MAC record"))?,
                        None => return Err(SliceError::MacNotFound(*mac).into()),
                    };
                    batch.remove(index_key.as_ref());
                    batch.remove(Key::tag(Tag::MacOrder).id(id).port(*port).seq(seq).as_ref());
                }
                Step::CreateSlice { slice } => {
                    let id = self.db.generate_id()?;
                    batch.insert(
                        Key::tag(Tag::SliceName).name(slice).as_ref(),
                        &id.to_be_bytes()[..],
                    );
                    batch.insert(
                        Key::tag(Tag::SliceOrder).id(id).as_ref(),
                        slice.as_str().as_bytes(),
                    );
                    created.insert(slice, id);
                }
                Step::AddPort { slice, port } => {
                    let id = id_of(&created, slice)?;
                    self.insert_port(&mut batch, id, *port)?;
                }
                Step::AddMac { slice, port, mac } => {
                    let id = id_of(&created, slice)?;
                    let seq = self.db.generate_id()?;
                    batch.insert(
                        Key::tag(Tag::MacIndex)
                            .id(id)
                            .port(*port)
                            .mac(*mac)
                            .as_ref(),
                        &seq.to_be_bytes()[..],
                    );
                    batch.insert(
                        Key::tag(Tag::MacOrder).id(id).port(*port).seq(seq).as_ref(),
                        &mac.octets()[..],
                    );
                }
            }
        }
        Ok(batch)
    }

    /// Flushes everything written so far to disk. Refused once a flush has failed: a
    /// second fsync may succeed without the lost pages (see the commit module).
    pub fn flush(&self) -> Result<(), Error> {
        self.refuse_if_failed()?;
        // A ticket of its own, so that the flush counts in the group commit: its failure
        // fails the writers waiting on it too.
        self.make_durable(self.commit.applied())
    }

    // ---- internals ---------------------------------------------------------------------

    /// Runs one write: `plan` reads what it needs and returns a batch, the change it makes
    /// and the caller's result; the batch is applied atomically under the write lock, and
    /// once a flush has covered it the listeners hear of the change and the call returns.
    fn write<F, T>(&self, plan: F) -> Result<T, Error>
    where
        F: FnOnce(&Self) -> Result<(sled::Batch, Change, T), Error>,
    {
        let (output, ticket) = self.apply_locked(|store| {
            let (batch, change, output) = plan(store)?;
            store.tree.apply_batch(batch)?;
            store.track_slice_names(&change);
            Ok((output, vec![change]))
        })?;
        self.make_durable(ticket)?;
        Ok(output)
    }

    /// The in-memory half of every write: under the write lock, refuses when a flush has
    /// failed, runs `apply` (which applies one atomic sled batch) and takes the ticket that
    /// the caller then waits on with [`Store::make_durable`]. The changes returned by
    /// `apply` are queued for the listeners, in order.
    fn apply_locked<T>(
        &self,
        apply: impl FnOnce(&Self) -> Result<(T, Vec<Change>), Error>,
    ) -> Result<(T, u64), Error> {
        let _guard = self.write_lock.lock();
        self.refuse_if_failed()?;
        let (output, changes) = apply(self)?;
        // Ticket and queue under the write lock, so that both follow commit order.
        let ticket = self.commit.applied();
        if !changes.is_empty() {
            let mut untold = self.lock_untold();
            untold.extend(changes.into_iter().map(|change| (ticket, change)));
        }
        Ok((output, ticket))
    }

    /// Returns once the write with `ticket` is on disk and its change, with every earlier
    /// one, has been told to the listeners.
    fn make_durable(&self, ticket: u64) -> Result<(), Error> {
        match self.commit.wait_durable(ticket, || self.sync()) {
            Ok(()) => {
                self.tell_durable_changes();
                Ok(())
            }
            Err(CommitError::Flush(err)) => Err(self.fail(err)),
            Err(CommitError::Failed) => Err(self.failed_error()),
        }
    }

    /// Makes everything sled has applied durable: its flush, then the fdatasync that
    /// its flush leaves out.
    fn sync(&self) -> Result<(), Error> {
        self.db.flush()?;
        #[cfg(test)]
        self.sync_probe.before_fdatasync()?;
        self.log_file.sync_data().map_err(Error::Sync)?;
        #[cfg(test)]
        self.sync_probe.synced();
        Ok(())
    }

    /// Tells the listeners every change that the last flush made durable, oldest first.
    /// The queue stays locked while they run, so that a writer returning after this finds
    /// its change told, by itself or by whoever held the queue.
    fn tell_durable_changes(&self) {
        let mut untold = self.lock_untold();
        let durable = self.commit.durable();
        let listeners = self.listeners.read();
        while untold.front().is_some_and(|(ticket, _)| *ticket <= durable) {
            if let Some((_, change)) = untold.pop_front() {
                for listener in listeners.iter() {
                    listener(&change);
                }
            }
        }
    }

    /// Records that a flush failed, so that nothing more is written or told, and lets
    /// the failure hooks know once. Returns the error for the writer that saw it.
    fn fail(&self, err: Error) -> Error {
        let reason = err.to_string();
        if self.failure.set(reason.clone()).is_ok() {
            // The changes waiting in the queue are not on disk: nobody must act on them.
            self.lock_untold().clear();
            let hooks = self.failure_hooks.read();
            for hook in hooks.iter() {
                hook(&reason);
            }
        }
        err
    }

    /// Refuses once a flush has failed. The group commit's own flag counts too: it is set
    /// before the failed flush's leader gets back here to record `failure`, and a writer
    /// that slipped into that gap would apply a change that GETs see and then get an error.
    fn refuse_if_failed(&self) -> Result<(), Error> {
        if self.failure.get().is_some() || self.commit.failed() {
            return Err(self.failed_error());
        }
        Ok(())
    }

    fn failed_error(&self) -> Error {
        // The leader of a failed flush records the reason just after waking its followers.
        let reason = self
            .failure
            .get()
            .map_or("a flush covering this write failed", String::as_str);
        Error::Failed(reason.to_owned())
    }

    fn lock_untold(&self) -> MutexGuard<'_, VecDeque<(u64, Change)>> {
        self.untold.lock()
    }

    /// Keeps the in-memory slice list in step with a change just applied to the tree.
    fn track_slice_names(&self, change: &Change) {
        let edit = |apply: &mut dyn FnMut(&mut Vec<SliceName>)| {
            let mut list = self.slice_names.write();
            apply(&mut list.names);
            list.version += 1;
        };
        match change {
            Change::SliceCreated(name) => edit(&mut |names| names.push(name.clone())),
            Change::SliceDeleted(slice) => edit(&mut |names| names.retain(|n| *n != slice.name)),
            _ => {}
        }
    }

    fn slice_id(&self, slice: &SliceName) -> Result<u64, Error> {
        match self.tree.get(Key::tag(Tag::SliceName).name(slice))? {
            Some(id) => keys::decode_u64(&id).ok_or_else(|| corrupt("slice record")),
            None => Err(SliceError::SliceNotFound(slice.clone()).into()),
        }
    }

    fn port_seq(&self, id: u64, port: PortId) -> Result<u64, Error> {
        match self.tree.get(Key::tag(Tag::PortIndex).id(id).port(port))? {
            Some(seq) => keys::decode_u64(&seq).ok_or_else(|| corrupt("port record")),
            None => Err(SliceError::PortNotFound(port).into()),
        }
    }

    fn insert_port(&self, batch: &mut sled::Batch, id: u64, port: PortId) -> Result<(), Error> {
        let seq = self.db.generate_id()?;
        batch.insert(
            Key::tag(Tag::PortIndex).id(id).port(port).as_ref(),
            &seq.to_be_bytes()[..],
        );
        batch.insert(
            Key::tag(Tag::PortOrder).id(id).seq(seq).as_ref(),
            &keys::encode_port(port)[..],
        );
        Ok(())
    }

    fn macs_of(&self, id: u64, port: PortId) -> Result<Vec<MacAddress>, Error> {
        self.tree
            .scan_prefix(Key::tag(Tag::MacOrder).id(id).port(port))
            .values()
            .map(|value| {
                let value = value?;
                let octets: [u8; 6] = value
                    .as_ref()
                    .try_into()
                    .map_err(|_| corrupt("MAC record"))?;
                Ok(MacAddress::new(octets))
            })
            .collect()
    }

    fn load_slice(&self, id: u64, name: SliceName) -> Result<Slice, Error> {
        let mut ports = Vec::new();
        for value in self
            .tree
            .scan_prefix(Key::tag(Tag::PortOrder).id(id))
            .values()
        {
            let port = keys::decode_port(&value?).ok_or_else(|| corrupt("port record"))?;
            ports.push(Port {
                id: port,
                macs: self.macs_of(id, port)?,
            });
        }
        Ok(Slice { name, ports })
    }
}

/// sled 0.34 reports a lock held by another process as an `Other` io error whose text
/// starts "could not acquire lock" (config.rs, `try_lock`); the text is the only mark.
fn is_lock_conflict(err: &std::io::Error) -> bool {
    err.kind() == std::io::ErrorKind::WouldBlock
        || err.to_string().starts_with("could not acquire lock")
}

fn decode_name(bytes: &[u8]) -> Result<SliceName, Error> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| corrupt("slice name"))
}

fn corrupt(what: &str) -> Error {
    Error::Corrupt(format!("malformed {what}"))
}

impl From<Error> for StoreError {
    fn from(err: Error) -> Self {
        match err {
            Error::Slice(err) => StoreError::Slice(err),
            Error::Plan(err) => StoreError::Plan(err),
            locked @ Error::Locked(_) => StoreError::Unavailable(Box::new(locked)),
            other => StoreError::Failed(Box::new(other)),
        }
    }
}

/// The store as slice-http, slice-cli and the controller use it: the methods above, with
/// their errors widened to the interface's.
impl SliceStore for Store {
    fn read_slices(&self, look: &mut dyn FnMut(&[SliceName], u64)) -> Result<(), StoreError> {
        self.with_slices(look);
        Ok(())
    }

    fn slices_version(&self) -> Result<u64, StoreError> {
        Ok(self.with_slices(|_, version| version))
    }

    fn check_slice(&self, slice: &SliceName) -> Result<(), StoreError> {
        Ok(Store::check_slice(self, slice)?)
    }

    fn ports(&self, slice: &SliceName) -> Result<Vec<PortId>, StoreError> {
        Ok(Store::ports(self, slice)?)
    }

    fn check_port(&self, slice: &SliceName, port: PortId) -> Result<(), StoreError> {
        Ok(Store::check_port(self, slice, port)?)
    }

    fn macs(&self, slice: &SliceName, port: PortId) -> Result<Vec<MacAddress>, StoreError> {
        Ok(Store::macs(self, slice, port)?)
    }

    fn check_mac(
        &self,
        slice: &SliceName,
        port: PortId,
        mac: MacAddress,
    ) -> Result<(), StoreError> {
        Ok(Store::check_mac(self, slice, port, mac)?)
    }

    fn create_slice(&self, slice: &SliceName) -> Result<(), StoreError> {
        Ok(Store::create_slice(self, slice)?)
    }

    fn delete_slice(&self, slice: &SliceName) -> Result<Slice, StoreError> {
        Ok(Store::delete_slice(self, slice)?)
    }

    fn add_port(&self, slice: &SliceName, port: PortId) -> Result<(), StoreError> {
        Ok(Store::add_port(self, slice, port)?)
    }

    fn delete_port(&self, slice: &SliceName, port: PortId) -> Result<Port, StoreError> {
        Ok(Store::delete_port(self, slice, port)?)
    }

    fn add_mac(
        &self,
        slice: &SliceName,
        port: PortId,
        mac: MacAddress,
    ) -> Result<bool, StoreError> {
        Ok(Store::add_mac(self, slice, port, mac)?)
    }

    fn delete_mac(
        &self,
        slice: &SliceName,
        port: PortId,
        mac: MacAddress,
    ) -> Result<(), StoreError> {
        Ok(Store::delete_mac(self, slice, port, mac)?)
    }

    fn revoke_session(&self, id: &[u8], expires_at: u64, now: u64) -> Result<(), StoreError> {
        Ok(Store::revoke_session(self, id, expires_at, now)?)
    }

    fn apply(&self, declared: &[Slice]) -> Result<Plan, StoreError> {
        Ok(Store::apply(self, declared)?)
    }

    fn session_revoked(&self, id: &[u8], issued_at: u64) -> Result<bool, StoreError> {
        Ok(Store::session_revoked(self, id, issued_at)?)
    }
}

/// The controller follows the slices through this part of the interface.
impl MembershipSource for Store {
    fn subscribe(&self, listener: ChangeListener) {
        Store::subscribe(self, listener);
    }

    fn snapshot(&self) -> Result<Vec<Slice>, StoreError> {
        Ok(Store::snapshot(self)?)
    }
}

#[cfg(test)]
mod tests;
