//! The domain model of sliced, with no I/O, so that other programs can embed it.
//!
//! A *slice* is a named group of switch ports; each port of a slice holds a set of host
//! MAC addresses. Two hosts may talk when some slice holds both of them. This crate defines
//! the identifiers ([`SliceName`], [`PortId`], [`MacAddress`]), the tree that describes a
//! slice ([`Slice`], [`Port`]), the errors of the slice contract ([`SliceError`]), the
//! errors of malformed identifiers ([`ParseError`]), the refusal of a port or MAC address
//! that can never match a frame ([`BindingError`]) and an in-memory membership index
//! ([`Membership`]) that answers "may these two hosts talk?" without touching storage.
//! `wire` holds the JSON bodies of the REST API, shared by the daemon and the tool.
//! [`SliceStore`] is the interface of a store of slices, whichever backend keeps them, by
//! role ([`SliceRead`], [`SliceWrite`], [`SessionRevocations`], [`FabricDeclarations`],
//! [`MembershipSource`]),
//! with its error [`StoreError`]; the controller needs only its [`MembershipSource`] part.
//! `fabric` is the operator's declaration of the cables between switches ([`DeclaredFabric`]).
//! `audit` is the audit trail's vocabulary, in which the daemon and the tool tell writes.
//!
//! # Features
//!
//! Both are on by default.
//!
//! - `serde`: `Serialize` and `Deserialize` for the identifiers (as their canonical text),
//!   [`Plan`], [`Step`] and [`Leadership`].
//! - `wire` (implies `serde`): the `wire` module of REST bodies.
//!
//! ```
//! use slice_core::{MacAddress, PortId, SliceName};
//!
//! let slice: SliceName = "tenant-a".parse()?;
//! let port: PortId = "0x00AB:3".parse()?;
//! let mac: MacAddress = "00:1B:21:3A:4F:0C".parse()?;
//! assert_eq!(port.to_string(), "0xab:3");
//! assert_eq!(mac.to_string(), "00:1b:21:3a:4f:0c");
//! assert_eq!(slice.as_str(), "tenant-a");
//! # Ok::<(), slice_core::ParseError>(())
//! ```

#![warn(missing_docs)]

pub mod audit;
mod binding;
mod change;
pub mod cluster;
mod error;
pub mod fabric;
mod ids;
mod membership;
mod model;
pub mod plan;
mod store;
#[cfg(feature = "wire")]
pub mod wire;

pub use binding::{BindingError, MAX_SWITCH_PORT};
pub use change::Change;
pub use cluster::Leadership;
pub use error::{ParseError, SliceError};
pub use fabric::DeclaredFabric;
pub use ids::{MacAddress, PortId, SliceName, SLICE_NAME_MAX_LEN};
pub use membership::{Host, Membership};
pub use model::{Port, Slice};
pub use plan::{Plan, PlanError, Step};
pub use store::{
    BackendError, ChangeListener, FabricDeclarations, MembershipSource, SessionRevocations,
    SliceRead, SliceStore, SliceWrite, StoreError, Write, WriteDone, WriteQueue, Written,
    MAX_REVOKED_SESSIONS,
};
