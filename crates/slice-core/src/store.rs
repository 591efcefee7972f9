//! The contract every store of slices keeps, whatever holds the data: the interface the
//! REST application and the `slice` tool read and write through, and that the controller
//! follows ([`MembershipSource`]).
//!
//! Two backends implement it: `slice-store` (sled, on local disk) and `slice-etcd` (etcd,
//! shared by a cluster). The store contract tests in `crates/slice-store-contract` are
//! written once against [`SliceStore`] and run against every backend.
//!
//! # Why the interface is synchronous
//!
//! Every write returns only once it is durable, so a write waits: for an fsync on one
//! disk, for a quorum in a cluster. The tool is a plain program with no runtime, and the
//! controller hears of changes through a callback on the writer's thread. A blocking
//! interface serves both, stays object safe (`Arc<dyn SliceStore>`) without boxing a
//! future per call, and ties slice-core to no async runtime. A backend whose client is
//! async (etcd's is built on Tokio) blocks on a runtime of its own inside each call. The
//! REST application, whose workers must not block, hands its writes to the store's own
//! writer when it has one ([`SliceWrite::queue`]: a callback tells the outcome) and to
//! actix's blocking pool otherwise.
//!
//! Reads are called on the REST application's async workers, so they must not wait on a
//! peer: a backend answers them from memory or local disk (a cluster backend, from a
//! local copy that a watch keeps current), or the application has to move them to the
//! blocking pool first.

use crate::{
    BindingError, Change, DeclaredFabric, MacAddress, Plan, PlanError, Port, PortId, Slice,
    SliceError, SliceName,
};

/// A failure of the backend itself, for the log: the message names the cause.
pub type BackendError = Box<dyn std::error::Error + Send + Sync>;

/// Why a store operation failed. Whatever the variant, a failed write changed nothing
/// (with the one exception stated on [`StoreError::Unavailable`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The request broke the slice contract; the message is the specification's (HTTP 404
    /// or 409).
    #[error(transparent)]
    Slice(#[from] SliceError),
    /// A declared state to apply cannot be: it names something twice, or it needs more
    /// than the backend can do at once (HTTP 400).
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The write would add a port or MAC address that can never match a frame (HTTP 400).
    #[error(transparent)]
    Unbindable(#[from] BindingError),
    /// The backend cannot serve the request now, and retrying later may succeed: a
    /// cluster without a quorum, a database another process holds, a store that can make
    /// nothing durable any more and whose daemon is stopping (HTTP 503). A write
    /// refused before it was sent changed nothing; one whose answer was lost on the way
    /// (a cluster that lost its quorum meanwhile) may have been applied, and the backend
    /// says so in the message.
    #[error(transparent)]
    Unavailable(BackendError),
    /// The backend failed: a disk, a damaged record (HTTP 500).
    #[error(transparent)]
    Failed(BackendError),
}

/// A store of slices in whole: the three roles below, and the change stream the
/// controller follows. `Arc<dyn SliceStore>` is what the REST application, the `slice`
/// tool and the daemon hold. Every method may be called from any thread, concurrently.
///
/// The roles are separate traits so that code needing one asks for that one alone
/// (`&dyn SliceRead` for a report, `impl SliceWrite` for [`Write::perform`]), and a test
/// double for it implements only that; a store implements all of them, then this trait,
/// whose one method has a default.
pub trait SliceStore:
    SliceRead + SliceWrite + SessionRevocations + FabricDeclarations + MembershipSource + Send + Sync
{
    /// Whether the store can serve and take writes now, as far as a cheap check can tell:
    /// asked by readiness probes (`GET /readyz`, the systemd watchdog), so it must cost
    /// little, change nothing a read can see, and end within about a second; it may block
    /// (callers run it on a thread they can spare). `Unavailable` or `Failed` says why
    /// not. The default has nothing to check.
    fn probe(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

/// The reads of slices, ports and MAC addresses.
///
/// Reads check the parts of their path in the specification's order: the slice, then the
/// port, then the MAC address; the first one missing is the error.
pub trait SliceRead: Send + Sync {
    /// Runs `look` once on the names of all slices, in creation order, without copying
    /// the list; an `Ok` means it ran. Writers may wait while it runs: keep it short.
    /// An iterator rather than a slice, so that a backend may keep the names in whatever
    /// order-keeping structure makes its deletes cheap.
    fn read_slices(
        &self,
        look: &mut dyn FnMut(&mut dyn Iterator<Item = &SliceName>),
    ) -> Result<(), StoreError>;

    /// A number that changes whenever anything the reads can see does (slices, ports or
    /// MAC addresses): an answer worked out from reads made after this number was taken
    /// is current for as long as the number stays the same. It changes once the change
    /// is visible to reads and before the write that made it returns. Cheap, so that
    /// cached encodings of answers can be checked on every request.
    fn content_version(&self) -> Result<u64, StoreError>;

    /// The names of all slices, in creation order.
    fn slices(&self) -> Result<Vec<SliceName>, StoreError> {
        let mut names = Vec::new();
        self.read_slices(&mut |list| names = list.cloned().collect())?;
        Ok(names)
    }

    /// Fails with `SliceNotFound` unless the slice exists.
    fn check_slice(&self, slice: &SliceName) -> Result<(), StoreError>;

    /// The ports of a slice, in the order they were added.
    fn ports(&self, slice: &SliceName) -> Result<Vec<PortId>, StoreError>;

    /// Fails with the first of `SliceNotFound`, `PortNotFound` that applies.
    fn check_port(&self, slice: &SliceName, port: PortId) -> Result<(), StoreError>;

    /// The MAC addresses of a port of a slice, in the order they were added.
    fn macs(&self, slice: &SliceName, port: PortId) -> Result<Vec<MacAddress>, StoreError>;

    /// Fails with the first of `SliceNotFound`, `PortNotFound`, `MacNotFound` that applies.
    fn check_mac(&self, slice: &SliceName, port: PortId, mac: MacAddress)
        -> Result<(), StoreError>;
}

/// The writes of slices, ports and MAC addresses.
///
/// Writes check the parts of their path in the specification's order (the slice, then the
/// port, then the MAC address) before the check that makes them conflict. A write is
/// atomic and durable when it returns `Ok`; once it has, every later read (in any process
/// using the same data) sees it, and the listeners have been told of it (see
/// [`MembershipSource`]). A failed write changes nothing and is told to nobody.
pub trait SliceWrite: Send + Sync {
    /// Fails with `SliceExists` when a slice of that name exists.
    fn create_slice(&self, slice: &SliceName) -> Result<(), StoreError>;

    /// Deletes a slice with all its ports and MAC addresses and returns what it held. A
    /// slice created again under the name starts empty and lists last.
    fn delete_slice(&self, slice: &SliceName) -> Result<Slice, StoreError>;

    /// Adds an empty port at the end of the slice's ports; fails with `SliceNotFound`,
    /// then `PortExists`.
    fn add_port(&self, slice: &SliceName, port: PortId) -> Result<(), StoreError>;

    /// Removes a port and its MAC addresses from a slice and returns what it held; fails
    /// with `SliceNotFound`, then `PortNotFound`.
    fn delete_port(&self, slice: &SliceName, port: PortId) -> Result<Port, StoreError>;

    /// Adds a MAC address at the end of a port's, adding the port to the slice first when
    /// it is not there (spec rule 4.1); fails with `SliceNotFound`, then `MacExists`.
    /// Returns true when the port was created.
    fn add_mac(&self, slice: &SliceName, port: PortId, mac: MacAddress)
        -> Result<bool, StoreError>;

    /// Removes a MAC address from a port, which stays in the slice; fails with
    /// `SliceNotFound`, then `PortNotFound`, then `MacNotFound`.
    fn delete_mac(
        &self,
        slice: &SliceName,
        port: PortId,
        mac: MacAddress,
    ) -> Result<(), StoreError>;

    /// Makes the slices equal to `declared` (every slice, with its ports and their MAC
    /// addresses) in one atomic write, and returns the [`Plan`] it carried out: all of it
    /// or, on an error, nothing. What both hold stays in place; what is new comes in the
    /// declared order; an empty plan writes nothing. The listeners hear its changes in
    /// the plan's order.
    fn apply(&self, declared: &[Slice]) -> Result<Plan, StoreError>;

    /// The store's own queue of writes, when it has one: a caller that must not block (an
    /// async worker) hands its write there and is told of the outcome, instead of parking
    /// a thread on the blocking methods above. `None` (the default) means the store has no
    /// writer of its own; such a caller then runs [`Write::perform`] on a thread it can
    /// spare.
    fn queue(&self) -> Option<&dyn WriteQueue> {
        None
    }
}

/// The list of ended login sessions, kept with the slices so that every instance serving
/// the same data refuses a session one of them ended, also after a restart.
pub trait SessionRevocations: Send + Sync {
    /// Records that the login session `id`, valid until `expires_at`, was ended; durable
    /// when it returns, like any write. Times are seconds since the epoch, `now` the
    /// current one. The list is bounded by [`MAX_REVOKED_SESSIONS`]: entries past their
    /// expiry may be dropped, and a full list of live entries is replaced by a cut-off
    /// that ends every session issued until `now`, which never lets a revoked session
    /// back in.
    fn revoke_session(&self, id: &[u8], expires_at: u64, now: u64) -> Result<(), StoreError>;

    /// Whether the session `id`, issued at `issued_at`, was ended (revoked, or issued
    /// before a cut-off). Every instance serving the same data gives the same answer once
    /// the revocation has returned.
    fn session_revoked(&self, id: &[u8], issued_at: u64) -> Result<bool, StoreError>;
}

/// The fabric an operator declared through the API, kept with the slices so that every
/// instance serving the same data forms links on the same cables, also after a restart.
pub trait FabricDeclarations: Send + Sync {
    /// The declaration in force; empty when none was made (or the last one was empty).
    /// Read from memory or local disk, like the slice reads.
    fn declared_fabric(&self) -> Result<DeclaredFabric, StoreError>;

    /// Replaces the declaration with `fabric` (empty ends it): durable when it returns,
    /// and told to the listeners as [`Change::FabricDeclared`], like any write. The same
    /// declaration again writes nothing and tells nobody.
    fn declare_fabric(&self, fabric: &DeclaredFabric) -> Result<(), StoreError>;
}

/// A store's writer, which takes writes without waiting for them (see [`SliceWrite::queue`]).
pub trait WriteQueue: Send + Sync {
    /// Queues `write` and returns at once. `done` is called exactly once, on another
    /// thread, with what the blocking method of the same write would have returned, and
    /// under the same contract: an `Ok` means durable and told to the listeners. It must be
    /// quick (send on a channel and return): later writes wait while it runs.
    fn submit(&self, write: Write, done: WriteDone);
}

/// Told the outcome of a queued write.
pub type WriteDone = Box<dyn FnOnce(Result<Written, StoreError>) + Send>;

/// One write of [`SliceWrite`], as data: what a queue carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    /// [`SliceWrite::create_slice`].
    CreateSlice(SliceName),
    /// [`SliceWrite::delete_slice`].
    DeleteSlice(SliceName),
    /// [`SliceWrite::add_port`].
    AddPort(SliceName, PortId),
    /// [`SliceWrite::delete_port`].
    DeletePort(SliceName, PortId),
    /// [`SliceWrite::add_mac`].
    AddMac(SliceName, PortId, MacAddress),
    /// [`SliceWrite::delete_mac`].
    DeleteMac(SliceName, PortId, MacAddress),
    /// [`SliceWrite::apply`] of a declared state.
    Apply(Vec<Slice>),
}

/// What a [`Write`] returned, by kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// `CreateSlice`, `AddPort`, `DeleteMac`.
    Done,
    /// `DeleteSlice`: what the slice held.
    Slice(Slice),
    /// `DeletePort`: what the port held.
    Port(Port),
    /// `AddMac`: whether the port was created with it.
    MacAdded {
        /// True when the port was not in the slice before.
        port_created: bool,
    },
    /// `Apply`: the plan carried out.
    Plan(Plan),
}

impl Write {
    /// Carries the write out through `store`'s blocking methods, on the calling thread.
    /// Any store will do, `&dyn SliceStore` included.
    /// A write that [`Write::check_bindings`] refuses changes nothing.
    pub fn perform<S: SliceWrite + ?Sized>(self, store: &S) -> Result<Written, StoreError> {
        self.check_bindings()?;
        Ok(match self {
            Write::CreateSlice(slice) => store.create_slice(&slice).map(|()| Written::Done)?,
            Write::DeleteSlice(slice) => Written::Slice(store.delete_slice(&slice)?),
            Write::AddPort(slice, port) => store.add_port(&slice, port).map(|()| Written::Done)?,
            Write::DeletePort(slice, port) => Written::Port(store.delete_port(&slice, port)?),
            Write::AddMac(slice, port, mac) => Written::MacAdded {
                port_created: store.add_mac(&slice, port, mac)?,
            },
            Write::DeleteMac(slice, port, mac) => store
                .delete_mac(&slice, port, mac)
                .map(|()| Written::Done)?,
            Write::Apply(declared) => Written::Plan(store.apply(&declared)?),
        })
    }
}

/// The most revoked sessions a store keeps before it cuts every session off instead. Each
/// costs a login and a logout, so only a client that can log in at will reaches it, and
/// then all it achieves is a new login for everyone.
pub const MAX_REVOKED_SESSIONS: usize = 10_000;

/// Told every committed change, on the writer's thread, in commit order.
pub type ChangeListener = Box<dyn Fn(&Change) + Send + Sync>;

/// What the controller needs of a store: the slices as they are, and every committed
/// change after that.
pub trait MembershipSource {
    /// Registers `listener` for every change committed from now on, each told once, in
    /// commit order, once it is durable. It must be quick (send on a channel and return):
    /// it may run while the store keeps deliveries in order.
    fn subscribe(&self, listener: ChangeListener);

    /// Every slice with its ports and MAC addresses, in order. Subscribe first: a change
    /// between the two is then told as well as seen in the snapshot, and applying it twice
    /// is harmless, where the other order could lose it.
    fn snapshot(&self) -> Result<Vec<Slice>, StoreError>;
}
