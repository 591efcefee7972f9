//! A store of slices kept in etcd, so that several `sliced` share one set of slices.
//!
//! [`EtcdStore`] implements slice-core's `SliceStore`. Every write is one etcd
//! transaction: its compares are the specification's checks in their order (the slice,
//! then the port, then the MAC address) together with the conflict check, so that of two
//! instances racing to create one slice exactly one succeeds, and a cascade deletes in the
//! same transaction. A failed compare reads what it needs to name the error in the same
//! transaction, so the error is the one that held at that revision.
//!
//! Reads never wait on etcd: each instance keeps a copy of the store (`mirror`) that a
//! watch (`watch`) keeps current from the revision of the snapshot it started from. The
//! watch resumes from the last applied revision after a disconnect, and when that revision has
//! been compacted it reads a new snapshot and tells the listeners the difference. A write
//! returns only once the copy has applied the write's revision, so the writer reads its
//! own write and the listeners have heard of it, as the store contract asks.
//!
//! The client is async (tonic); every call blocks on a Tokio runtime the store owns
//! (`runtime`), and every request to etcd is bounded by [`REQUEST_TIMEOUT`], so that a
//! cluster without a quorum answers `StoreError::Unavailable` promptly instead of hanging
//! a request.
//! The key layout is in `keys`. Keys under the prefix that sliced did not write are
//! skipped and counted, never served: the copy serves only records whose slice (and port)
//! keys exist (`records`), and what sliced creates starts without what another writer
//! left under it (`leftovers`).
//!
//! The parts: `store` (the `SliceStore`), `txn` (the transactions it writes with),
//! `watch` (the copy kept current), `fabric` (the declared fabric, at one key), `error`,
//! `runtime`, `connection` (failover between members), `access` (TLS and credentials),
//! `session_key`, and [`election`] (the master election of a cluster, on the same
//! connection code).

mod access;
mod connection;
pub mod election;
mod error;
mod fabric;
mod keys;
mod leftovers;
mod mirror;
mod records;
mod runtime;
mod session_key;
mod store;
#[cfg(feature = "test-server")]
pub mod test_server;
mod txn;
mod watch;

pub use access::{Access, AccessError};
pub use connection::REQUEST_TIMEOUT;
pub use election::{
    ElectionConfig, EtcdHealth, MasterElection, MemberRecord, SwitchRole, DEFAULT_LEASE_TTL,
};
pub use error::Error;
pub use session_key::SESSION_KEY_LEN;
pub use store::{EtcdStore, DEFAULT_PREFIX};
