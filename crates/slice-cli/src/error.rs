//! Why a `slice` command failed. Whatever the variant, nothing was changed.

use std::path::PathBuf;

use slice_core::{BindingError, ParseError, PlanError, SliceError, StoreError};

use crate::access::Account;
use crate::http::HttpError;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The command broke the slice contract; the message is the specification's.
    #[error(transparent)]
    Slice(#[from] SliceError),
    /// A declared state cannot be applied (it names something twice, or is too large).
    #[error(transparent)]
    Plan(PlanError),
    /// A port or MAC address that can never match a frame; refused before anything is
    /// sent or opened, so that both modes say the same.
    #[error(transparent)]
    Unbindable(#[from] BindingError),
    /// A file of slices is wrong where it says; nothing was changed.
    #[error(transparent)]
    File(#[from] crate::declare::FileError),
    /// `slice apply` would delete more than half of the slices, and `--prune` was not
    /// given; nothing was changed.
    #[error(
        "{}: nothing was changed. Check the file (slice apply -f {file} --dry-run shows the \
         plan), and pass --prune if that is meant",
        crate::declare::describe_deletion(file, *declared, *deleted, *current)
    )]
    Prune {
        file: String,
        declared: usize,
        deleted: usize,
        current: usize,
    },
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    /// An argument is not a valid slice name, port name or MAC address.
    #[error(transparent)]
    Invalid(#[from] ParseError),
    /// The daemon refused the request for a reason that is not a slice-contract error.
    #[error("sliced refused the request (HTTP {status}): {message}")]
    Refused { status: u16, message: String },
    /// The data directory does not exist and cannot be made.
    #[error("cannot create the data directory {}: {source}", path.display())]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The data directory, or a file in it, may have been written by another user; it
    /// was left as it was.
    #[error(transparent)]
    NotPrivate(slice_store::NotPrivate),
    /// This user may not enter `path`, most likely the data directory of the daemon's
    /// user, or may not use the data directory without a daemon; nothing was tried there.
    #[error(
        "permission denied: {} {}, and this command runs as {me}. Run slice as the user \
         sliced runs as, the owner of the data directory{}, or name a data directory of \
         your own with --db",
        path.display(),
        crate::access::owner_text(owner),
        crate::access::sudo_hint(owner)
    )]
    PermissionDenied {
        path: PathBuf,
        owner: Option<Account>,
        me: Account,
    },
    /// Root found another user's data directory and no daemon on it: opening the
    /// database would leave files of root's that the owner cannot open.
    #[error(
        "the data directory {} belongs to {owner}, not to root that runs this command, and \
         no sliced answers on its socket: a database opened here would get files its owner \
         cannot open. Run slice as its owner (sudo -u {} slice ...)",
        path.display(),
        owner.sudo_name()
    )]
    ForeignDataDir { path: PathBuf, owner: Account },
    /// A command that reads or removes found no database in the data directory, and
    /// created none: most likely the daemon keeps its data elsewhere.
    #[error(
        "no database in {} (is the daemon's data directory elsewhere? see --db / SLICED_DB)",
        .0.display()
    )]
    NoDatabase(PathBuf),
    /// The database is damaged: it was left as it was, and nothing is read from it.
    #[error(transparent)]
    Corrupt(StoreError),
    /// The database could not be opened or failed while in use; `place` names it (a
    /// path, or the etcd cluster and prefix).
    #[error("cannot use the database {place}: {source}")]
    Store { place: String, source: StoreError },
    /// No daemon answers and the database is held by another process, past the wait.
    #[error(
        "cannot reach the slice database: no sliced answers on {} ({connect}), and the \
         database {} stays in use by another process (a sliced starting up or stopping, \
         or another slice command); try again",
        socket.display(), store.display()
    )]
    Unavailable {
        socket: PathBuf,
        store: PathBuf,
        connect: std::io::Error,
    },
    /// A command that shows what the running daemon sees found none on the socket.
    #[error(
        "no sliced answers on {} ({source}): the network views and the status come from a \
         running daemon; start it, or name its data directory with --db",
        socket.display()
    )]
    NoDaemon {
        socket: PathBuf,
        source: std::io::Error,
    },
    /// `slice verify`: the daemon's tables show violations of the slices (each printed).
    #[error("isolation not proven: {leaks} leaks, {black_holes} black holes, {loops} loops")]
    NotProven {
        leaks: usize,
        black_holes: usize,
        loops: usize,
    },
    /// `slice verify`: the daemon has no verification to show (off, not yet, a standby).
    #[error("no verification to show: {0}")]
    NotVerified(String),
    /// `slice status`: the daemon answered that it is not ready (what it said was printed).
    #[error("sliced is not ready (HTTP {status}): {reason}")]
    NotReady { status: u16, reason: String },
    /// A daemon accepted the connection but the exchange failed.
    #[error("the sliced on {} did not answer properly: {source}", socket.display())]
    Daemon { socket: PathBuf, source: HttpError },
    /// The daemon answered something that is not what its API promises.
    #[error("the sliced on {} sent an unexpected answer to {request}: {detail}", socket.display())]
    Protocol {
        socket: PathBuf,
        request: String,
        detail: String,
    },
    /// The etcd settings cannot be used as given; nothing was sent.
    #[error(transparent)]
    EtcdAccess(slice_etcd::AccessError),
    /// The audit trail of a write the tool makes itself cannot be written; the write was
    /// not made.
    #[error("cannot write the audit trail {}: {source}", path.display())]
    Audit {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The write was made, but its audit entry could not be written.
    #[error(
        "the change was made, but its audit entry could not be written to {}: {source}",
        path.display()
    )]
    Unaudited {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A daemon answers on the data directory's socket, but it serves another store than
    /// the one the command names; nothing was sent to it.
    #[error(
        "the sliced on {} serves {serves}, not {named}: name its store (or none) with \
         --etcd and --etcd-prefix, or another data directory with --db",
        socket.display()
    )]
    OtherStore {
        socket: PathBuf,
        serves: String,
        named: String,
    },
    /// A file the command writes (a completion script) could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Standard output could not be written.
    #[error("cannot write the output: {0}")]
    Output(std::io::Error),
}
