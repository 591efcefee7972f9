//! Durable storage of slices, their ports and the ports' MAC addresses, on sled.
//!
//! Every write returns only once it is on disk. One writer thread carries out every write:
//! those that queue up while one flush runs share the next one, applied as one atomic sled
//! batch (group commit, see the writer module). Reads are answered from an in-memory copy
//! of what is committed (the model module), so they read no disk and never wait for a
//! flush.
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

mod fabric;
mod holder;
mod integrity;
mod job;
mod journal;
mod keys;
mod log_lock;
mod model;
mod permissions;
mod private_file;
mod seal;
mod sessions;
mod writer;

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, OnceLock};
use std::thread::JoinHandle;

use parking_lot::RwLock;
use std::time::{Duration, Instant};

use slice_core::{Change, ChangeListener, MembershipSource, StoreError};
use slice_core::{
    DeclaredFabric, FabricDeclarations, SessionRevocations, SliceRead, SliceStore, SliceWrite,
};
use slice_core::{MacAddress, Plan, PlanError, Port, PortId, Slice, SliceError, SliceName};
use slice_core::{Write, WriteDone, WriteQueue, Written};

pub use crate::holder::LockHolder;
use crate::job::{Job, Op, Reply};
use crate::keys::Key;
use crate::model::Model;
pub use crate::permissions::{
    check_daemon_socket, check_private_dir, check_secret_file, effective_uid, make_private_dir,
    NotPrivate, Tightened,
};
pub use crate::private_file::write_private_durably;
pub use crate::writer::CommitObserver;
pub use slice_secret::{read_secret_file, SecretFileError};

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
    /// The database directory or its files could not be made owner-only, or another
    /// user may have written them; nothing was opened.
    #[error(transparent)]
    NotPrivate(#[from] NotPrivate),
    /// The database file could not be made durable.
    #[error("cannot sync the database to disk: {0}")]
    Sync(std::io::Error),
    /// A flush failed, this write's or an earlier one's: the store takes no more changes.
    #[error("the database could not be flushed ({0}); it takes no more changes")]
    Failed(String),
    /// sled's log file is no longer the file at its path (removed, or replaced): fsyncs
    /// still succeed, on a file no restart opens.
    #[error("sled's log file {0}: what is written now would be gone at the next start")]
    LogGone(String),
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
///
/// Reads are answered from an in-memory copy of what is committed ([`model`]); every
/// write goes to one writer thread ([`writer`]) and returns once it is on disk.
pub struct Store {
    inner: Arc<Inner>,
    /// The writer's queue; `None` only while the store is dropped.
    jobs: Option<mpsc::Sender<Job>>,
    writer: Option<JoinHandle<()>>,
    /// The permissions that opening took away from what was there before.
    tightened: Vec<Tightened>,
    /// What this open did that the operator should hear of.
    notices: Vec<Notice>,
}

/// What opening did that its caller should tell the operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// The database was not closed cleanly, and sled dropped `bytes` written bytes from
    /// the end of its log: what a crash left unfinished, never acknowledged (each write
    /// is acknowledged after the fsync that covers it), or damage there that nothing can
    /// tell from that.
    Dropped { path: PathBuf, bytes: u64 },
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Notice::Dropped { path, bytes } => write!(
                f,
                "the database {} was not closed cleanly: sled dropped {bytes} written bytes \
                 from the end of its log (a write the crash cut short, never acknowledged, \
                 or damage there)",
                path.display()
            ),
        }
    }
}

/// What the store's callers and its writer thread share.
pub(crate) struct Inner {
    db: sled::Db,
    tree: sled::Tree,
    /// The revoked login sessions (see the sessions module), opened once: the session
    /// check reads it on every guarded request.
    revoked_sessions: sled::Tree,
    /// The declared fabric's record (see the fabric module).
    fabric_tree: sled::Tree,
    /// The declared fabric as committed: only the writer changes it, after its flush.
    fabric: RwLock<DeclaredFabric>,
    /// Where a write too large for one batch is kept until it is whole (see the journal
    /// module).
    journal: sled::Tree,
    /// sled's log file, for the fsync that its own flush leaves out: on Linux sled 0.34
    /// ends a flush with `sync_file_range`, which neither empties the drive's write
    /// cache nor records a grown file's new size. fsync acts on the file, not on the
    /// descriptor, so a read-only handle of our own is enough.
    log_file: std::fs::File,
    /// Where sled's log file is linked: an fsync of a file removed from the disk succeeds,
    /// so each commit checks that `log_file` is still the file there.
    log_path: PathBuf,
    /// What is committed, for every read; only the writer thread changes it, after the
    /// flush that makes the change durable.
    model: RwLock<Model>,
    /// [`SliceRead::content_version`]: counts the writer's changes to `model`, each
    /// counted while the writer still holds the model's lock. An atomic of its own, so
    /// that checking a cached answer takes no lock.
    content_version: AtomicU64,
    listeners: RwLock<Vec<Listener>>,
    observer: OnceLock<Arc<dyn CommitObserver>>,
    /// Why a flush failed, once one has: from then on the store refuses changes.
    failure: OnceLock<String>,
    failure_hooks: RwLock<Vec<FailureHook>>,
    #[cfg(test)]
    sync_probe: tests::SyncProbe,
    /// Records a clean close once every sled handle above is dropped (fields drop in
    /// order): this must stay the last field.
    seal: seal::Seal,
}

impl Store {
    /// Opens (creating when missing) the database in the directory `path`, owner-only:
    /// sled creates its files with the process's umask, and a database made by an earlier
    /// release may be readable by all. What was loosened before is logged and kept for
    /// [`Store::tightened`].
    pub fn open(path: &Path) -> Result<Self, Error> {
        let tightened = if path.is_dir() {
            let mut tightened = permissions::tighten_tree(path)?;
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
                .map_err(|source| Error::Io {
                    path: path.to_owned(),
                    source,
                })?;
            permissions::check_directory(path, "the database directory")?;
            Vec::new()
        };
        for change in &tightened {
            log::warn!("{change}");
        }
        let marked = integrity::is_marked(path)?;
        // Read before sled's open, which writes to a log it cannot recover.
        let unmarked_log_written = !marked && integrity::log_was_written(path)?;
        let dropped = if marked {
            integrity::check_before_open(path)?
        } else {
            0
        };
        let notices: Vec<Notice> = (dropped > 0)
            .then(|| Notice::Dropped {
                path: path.to_owned(),
                bytes: dropped,
            })
            .into_iter()
            .collect();
        for notice in &notices {
            log::warn!("{notice}");
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
        permissions::tighten_tree(path)?;
        let log_path = path.join(SLED_LOG_FILE);
        let log_file = std::fs::File::open(&log_path).map_err(Error::Sync)?;
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
        let journal = db.open_tree(journal::TREE)?;
        let sync = || {
            db.flush()?;
            log_file.sync_data().map_err(Error::Sync)
        };
        if journal::replay(&tree, &journal, sync)? {
            log::warn!("finished a large write that a stop had interrupted");
        }
        let model = Model::load(&tree)?;
        let revoked_sessions = db.open_tree(sessions::TREE)?;
        let fabric_tree = db.open_tree(fabric::TREE)?;
        let declared = fabric::load(&fabric_tree)?;
        let inner = Arc::new(Inner {
            db,
            tree,
            journal,
            revoked_sessions,
            fabric_tree,
            fabric: RwLock::new(declared),
            log_file,
            log_path,
            model: RwLock::new(model),
            content_version: AtomicU64::new(0),
            listeners: RwLock::new(Vec::new()),
            observer: OnceLock::new(),
            failure: OnceLock::new(),
            failure_hooks: RwLock::new(Vec::new()),
            #[cfg(test)]
            sync_probe: tests::SyncProbe::default(),
            seal: seal::Seal::new(path),
        });
        let (jobs, queue) = mpsc::channel();
        let writer = {
            let inner = Arc::clone(&inner);
            std::thread::Builder::new()
                .name("slice-store-writer".into())
                .spawn(move || writer::run(&inner, queue))
                .map_err(|source| Error::Io {
                    path: path.to_owned(),
                    source,
                })?
        };
        Ok(Self {
            inner,
            jobs: Some(jobs),
            writer: Some(writer),
            tightened,
            notices,
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
    /// the change is on disk and before its writer returns. It runs on the store's writer
    /// thread, and every later write waits for it, so it must be quick: send on a channel
    /// and return.
    pub(crate) fn subscribe(&self, listener: impl Fn(&Change) + Send + Sync + 'static) {
        self.inner.listeners.write().push(Box::new(listener));
    }

    /// Tells `observer` the size and duration of every group commit (for metrics), from
    /// now on; a second observer is ignored.
    pub fn observe_commits(&self, observer: Arc<dyn CommitObserver>) {
        let _ = self.inner.observer.set(observer);
    }

    /// Registers a function called once, with the reason, when a flush fails. sled then
    /// holds changes that are applied but not on disk (no reader sees them), and the store
    /// refuses every later write; a process serving its contents should stop.
    pub fn on_failure(&self, hook: impl Fn(&str) + Send + Sync + 'static) {
        self.inner.failure_hooks.write().push(Box::new(hook));
    }

    /// The permissions that opening took away from files and directories that were there
    /// before; empty when everything was owner-only already.
    pub fn tightened(&self) -> &[Tightened] {
        &self.tightened
    }

    /// What the caller should tell the operator about this open (the log notes it too).
    pub fn notices(&self) -> &[Notice] {
        &self.notices
    }

    /// Why a flush failed, if one has.
    pub fn failure(&self) -> Option<&str> {
        self.inner.failure.get().map(String::as_str)
    }

    /// Whether the directory `path` holds a database to open: sled's log, or the marker
    /// of one this store made (whose missing log opening then reports as damage). A
    /// directory without either would be opened as a new, empty database.
    pub fn exists_in(path: &Path) -> bool {
        [SLED_LOG_FILE, integrity::FORMAT_MARKER]
            .iter()
            .any(|name| path.join(name).exists())
    }

    /// The store's readiness, without writing: a write and its fsync once a second would
    /// cost every probe a disk flush (and wait behind a large apply), while what makes
    /// writes fail here is already known without one: a failed flush (a full or failing
    /// disk) is latched, the writer thread must be running, and sled's log file must still
    /// be linked (a database directory removed under a running daemon accepts writes
    /// that no restart would find).
    fn probe(&self) -> Result<(), Error> {
        self.inner.refuse_if_failed()?;
        if !self
            .writer
            .as_ref()
            .is_some_and(|writer| !writer.is_finished())
        {
            return Err(writer_gone());
        }
        // Known now, so final now: a write must not succeed where readiness fails.
        self.inner
            .log_still_linked()
            .map_err(|err| Error::Failed(self.inner.fail(&err)))
    }

    // ---- reads: from the committed model, never from sled --------------------------------

    /// Fails with `SliceNotFound` unless the slice exists.
    pub(crate) fn check_slice(&self, slice: &SliceName) -> Result<(), Error> {
        Ok(self.inner.model.read().slice(slice).map(drop)?)
    }

    /// The ports of a slice, in the order they were added.
    pub(crate) fn ports(&self, slice: &SliceName) -> Result<Vec<PortId>, Error> {
        let model = self.inner.model.read();
        Ok(model.slice(slice)?.ports.keys().copied().collect())
    }

    /// Fails with `SliceNotFound` or `PortNotFound` unless the port is in the slice.
    pub(crate) fn check_port(&self, slice: &SliceName, port: PortId) -> Result<(), Error> {
        Ok(self.inner.model.read().port(slice, port).map(drop)?)
    }

    /// The MAC addresses of a port of a slice, in the order they were added.
    pub(crate) fn macs(&self, slice: &SliceName, port: PortId) -> Result<Vec<MacAddress>, Error> {
        let model = self.inner.model.read();
        Ok(model.port(slice, port)?.macs.keys().copied().collect())
    }

    /// Fails with the first of `SliceNotFound`, `PortNotFound`, `MacNotFound` that applies.
    pub(crate) fn check_mac(
        &self,
        slice: &SliceName,
        port: PortId,
        mac: MacAddress,
    ) -> Result<(), Error> {
        Ok(self
            .inner
            .model
            .read()
            .check_mac(slice, port, mac)
            .map(drop)?)
    }

    /// Every slice with its ports and MAC addresses, in order.
    pub(crate) fn snapshot(&self) -> Result<Vec<Slice>, Error> {
        Ok(self.inner.model.read().snapshot())
    }

    // ---- writes: each returns once the change is on disk --------------------------------

    /// Fails with `SliceExists` when the slice exists.
    pub(crate) fn create_slice(&self, slice: &SliceName) -> Result<(), Error> {
        self.run(Op::Write(Write::CreateSlice(slice.clone())))
            .map(drop)
    }

    /// Deletes a slice with all its ports and MAC addresses and returns what it held.
    pub(crate) fn delete_slice(&self, slice: &SliceName) -> Result<Slice, Error> {
        match self.run(Op::Write(Write::DeleteSlice(slice.clone())))? {
            Written::Slice(removed) => Ok(removed),
            other => Err(unexpected(other)),
        }
    }

    pub(crate) fn add_port(&self, slice: &SliceName, port: PortId) -> Result<(), Error> {
        self.run(Op::Write(Write::AddPort(slice.clone(), port)))
            .map(drop)
    }

    /// Removes a port and its MAC addresses from a slice and returns what it held.
    pub(crate) fn delete_port(&self, slice: &SliceName, port: PortId) -> Result<Port, Error> {
        match self.run(Op::Write(Write::DeletePort(slice.clone(), port)))? {
            Written::Port(removed) => Ok(removed),
            other => Err(unexpected(other)),
        }
    }

    /// Adds a MAC address to a port of a slice, adding the port to the slice first when it
    /// is not there. Returns true when the port was created.
    pub(crate) fn add_mac(
        &self,
        slice: &SliceName,
        port: PortId,
        mac: MacAddress,
    ) -> Result<bool, Error> {
        match self.run(Op::Write(Write::AddMac(slice.clone(), port, mac)))? {
            Written::MacAdded { port_created } => Ok(port_created),
            other => Err(unexpected(other)),
        }
    }

    pub(crate) fn delete_mac(
        &self,
        slice: &SliceName,
        port: PortId,
        mac: MacAddress,
    ) -> Result<(), Error> {
        self.run(Op::Write(Write::DeleteMac(slice.clone(), port, mac)))
            .map(drop)
    }

    /// Makes the store equal to `declared` in one atomic batch and one flush, and
    /// returns the plan it carried out; the listeners then hear its changes in order.
    /// An empty plan writes nothing.
    pub(crate) fn apply(&self, declared: &[Slice]) -> Result<Plan, Error> {
        match self.run(Op::Write(Write::Apply(declared.to_vec())))? {
            Written::Plan(plan) => Ok(plan),
            other => Err(unexpected(other)),
        }
    }

    /// Flushes everything written so far to disk. Refused once a flush has failed: a
    /// second fsync may succeed without the lost pages (see the writer module).
    pub fn flush(&self) -> Result<(), Error> {
        self.run(Op::Flush).map(drop)
    }

    // ---- internals ---------------------------------------------------------------------

    /// Hands `op` to the writer thread and waits for its answer.
    fn run(&self, op: Op) -> Result<Written, Error> {
        let (answer, answered) = mpsc::sync_channel(1);
        self.submit(
            op,
            Box::new(move |result| {
                let _ = answer.send(result);
            }),
        );
        answered.recv().unwrap_or_else(|_| Err(writer_gone()))
    }

    /// Hands `op` to the writer thread; `reply` hears how it went.
    fn submit(&self, op: Op, reply: Reply) {
        #[cfg(test)]
        self.inner.sync_probe.submitted();
        let Some(jobs) = &self.jobs else {
            return reply(Err(writer_gone()));
        };
        if let Err(mpsc::SendError(job)) = jobs.send(Job { op, reply }) {
            (job.reply)(Err(writer_gone()));
        }
    }
}

impl Drop for Store {
    /// Lets the writer finish the jobs it holds, then waits for it, so that a process
    /// that drops its store before it exits has every answered write on disk.
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(writer) = self.writer.take() {
            // A reply run on the writer thread may hold the last reference to the store;
            // the thread cannot wait for itself, and ends by itself once it returns.
            if writer.thread().id() != std::thread::current().id() {
                let _ = writer.join();
            }
        }
    }
}

impl Inner {
    /// Makes everything sled has applied durable: its flush, then the fdatasync that
    /// its flush leaves out.
    fn sync(&self) -> Result<(), Error> {
        self.db.flush()?;
        #[cfg(test)]
        self.sync_probe.before_fdatasync()?;
        self.log_file.sync_data().map_err(Error::Sync)?;
        // After the fsync: a removal racing it is caught here, before anything is
        // acknowledged.
        self.log_still_linked()?;
        #[cfg(test)]
        self.sync_probe.synced();
        Ok(())
    }

    /// Whether the log file this store syncs is still the one at its path. Once it was
    /// removed or replaced, its fsyncs still succeed, but on a file no restart opens: no
    /// write is durable any more, and that is final (the caller's failure is latched).
    fn log_still_linked(&self) -> Result<(), Error> {
        use std::os::unix::fs::MetadataExt;
        let gone = Error::LogGone;
        let open = self
            .log_file
            .metadata()
            .map_err(|err| gone(format!("cannot be looked at ({err})")))?;
        if open.nlink() == 0 {
            return Err(gone("was removed from the disk".to_owned()));
        }
        match std::fs::metadata(&self.log_path) {
            Ok(linked) if linked.dev() == open.dev() && linked.ino() == open.ino() => Ok(()),
            Ok(_) => Err(gone("was replaced on the disk by another file".to_owned())),
            Err(err) => Err(gone(format!("is not at its path any more ({err})"))),
        }
    }

    /// Told of every chunk of a large write (see the journal module); tests stop a write
    /// there as a crash would.
    fn chunk_written(&self) -> Result<(), Error> {
        #[cfg(test)]
        self.sync_probe.chunk_written()?;
        Ok(())
    }

    /// Records that a flush failed, so that nothing more is written or told, and lets the
    /// failure hooks know once. Returns the reason, for the other writers of its round.
    fn fail(&self, err: &Error) -> String {
        // What sled holds now may never have reached the disk: no record of a clean close.
        self.seal.spoil();
        let reason = err.to_string();
        if self.failure.set(reason.clone()).is_ok() {
            let hooks = self.failure_hooks.read();
            for hook in hooks.iter() {
                hook(&reason);
            }
        }
        reason
    }

    fn refuse_if_failed(&self) -> Result<(), Error> {
        match self.failure.get() {
            Some(reason) => Err(Error::Failed(reason.clone())),
            None => Ok(()),
        }
    }
}

fn writer_gone() -> Error {
    Error::Failed("the store's writer thread has stopped".into())
}

/// The writer answers each kind of write with its own kind of result; another one would
/// be a bug in this crate, reported rather than panicked on.
fn unexpected(written: Written) -> Error {
    Error::Failed(format!("the store's writer answered {written:?}"))
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
            // Nothing can be made durable any more; the daemon is stopping (fail-stop, as
            // PostgreSQL does after a failed fsync): 503, as for any server going away.
            failed @ (Error::Failed(_) | Error::LogGone(_)) => {
                StoreError::Unavailable(Box::new(failed))
            }
            other => StoreError::Failed(Box::new(other)),
        }
    }
}

/// The store as slice-http, slice-cli and the controller use it: the methods above, with
/// their errors widened to the interface's.
impl SliceRead for Store {
    fn read_slices(
        &self,
        look: &mut dyn FnMut(&mut dyn Iterator<Item = &SliceName>),
    ) -> Result<(), StoreError> {
        // Under the model's read lock: the writer waits while `look` runs.
        look(&mut self.inner.model.read().names());
        Ok(())
    }

    fn content_version(&self) -> Result<u64, StoreError> {
        // Acquire pairs with the writer's Release: whoever sees a count also sees the
        // model that count was taken after (the model's lock orders the rest).
        Ok(self.inner.content_version.load(Ordering::Acquire))
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
}

impl SliceWrite for Store {
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

    fn apply(&self, declared: &[Slice]) -> Result<Plan, StoreError> {
        Ok(Store::apply(self, declared)?)
    }

    fn queue(&self) -> Option<&dyn WriteQueue> {
        Some(self)
    }
}

impl SessionRevocations for Store {
    fn revoke_session(&self, id: &[u8], expires_at: u64, now: u64) -> Result<(), StoreError> {
        Ok(Store::revoke_session(self, id, expires_at, now)?)
    }

    fn session_revoked(&self, id: &[u8], issued_at: u64) -> Result<bool, StoreError> {
        Ok(Store::session_revoked(self, id, issued_at)?)
    }
}

impl FabricDeclarations for Store {
    fn declared_fabric(&self) -> Result<DeclaredFabric, StoreError> {
        Ok(Store::declared_fabric(self))
    }

    fn declare_fabric(&self, fabric: &DeclaredFabric) -> Result<(), StoreError> {
        Ok(Store::declare_fabric(self, fabric)?)
    }
}

impl SliceStore for Store {
    fn probe(&self) -> Result<(), StoreError> {
        Ok(Store::probe(self)?)
    }
}

/// The REST application hands its writes to the writer thread here, without parking a
/// thread of its own until they are durable.
impl WriteQueue for Store {
    fn submit(&self, write: Write, done: WriteDone) {
        Store::submit(
            self,
            Op::Write(write),
            Box::new(move |result| done(result.map_err(StoreError::from))),
        );
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
