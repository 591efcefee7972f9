//! OpenFlow 1.0 and 1.3 wire codec, in the style of smoltcp's `wire` modules, with
//! 1.4's bundles as 1.3 carries them (the ONF extension, see [`bundle`]).
//!
//! # Design
//!
//! Every wire structure has two faces:
//!
//! * a **view**, `Foo<T: AsRef<[u8]>>`, a zero-copy wrapper over bytes with
//!   `new_unchecked`, `new_checked` (which runs `check_len`), and a getter per field
//!   (plus a setter when `T: AsMut<[u8]>`). Message views span the whole message,
//!   header included, so their offsets are the specification's.
//! * a **repr**, a plain Rust value ([`FlowMod`], [`Match`], [`PortDesc`], ...) that
//!   `parse`s from a view and `emit`s into one, after the caller has sized the buffer
//!   with `buffer_len`.
//!
//! [`Message`] ties them together: [`Message::parse`] decodes one framed message (cut
//! from a stream with [`frame_len`]) and [`Message::emit`] appends one to a `Vec<u8>`.
//!
//! # Versions
//!
//! The reprs speak one vocabulary for both versions, with 1.3's 32-bit port numbers
//! (1.0's 16-bit ones are converted at the wire, see [`port`]). Where the layouts
//! differ, the views are separate (`FlowModV10`, `FlowModV13`, ...) and the reprs have
//! `parse_v10` / `parse_v13` and `emit_v10` / `emit_v13`. A field that one version
//! lacks is ignored when emitting for it and has a documented fixed value after parsing
//! it; a value that a version cannot express (a 32-bit port on 1.0, PORT_DESC on 1.0)
//! makes `emit` fail without writing anything. [`negotiate`] picks the version from a
//! peer's HELLO.
//!
//! # Types, not numbers
//!
//! The wire version is a [`Version`], and a field whose values the specification names
//! (a reason, an error type or code, an ARP operation) is an enum with an `Unknown` arm
//! for every other value, so that a peer's unexpected value decodes instead of failing
//! and encodes back unchanged. Reprs carry these types; views keep the raw integer
//! getters, and the conversions between the two (`From`) are the only place the numbers
//! are written.
//!
//! # Never panics on input
//!
//! Decoding never panics, whatever the bytes: every length read from the wire is
//! checked against the buffer before use, field reads and slices go through `get`
//! (so even a view built with `new_unchecked` over a short buffer reads zeros instead
//! of panicking), and no length arithmetic can overflow. Property tests feed arbitrary
//! bytes to every parser. The [`packet`] module holds the same style of codecs for the
//! Ethernet frames that PACKET_IN and PACKET_OUT carry.

#![warn(missing_docs)]

#[macro_use]
mod wire;

pub mod action;
pub mod bundle;
mod error;
pub mod error_msg;
pub mod features;
pub mod flow_match;
pub mod flow_mod;
pub mod flow_removed;
pub mod flow_stats;
pub mod header;
pub mod hello;
pub mod instruction;
mod message;
pub mod meter;
pub mod msg_type;
pub mod multipart;
pub mod packet;
pub mod packet_in;
pub mod packet_out;
pub mod port;
pub mod port_desc;
pub mod port_status;
pub mod role;
pub mod switch_config;
pub mod version;

pub use action::Action;
pub use bundle::{BundleAdd, BundleControl, BundleCtrlType, BundleFailedCode};
pub use error::Error;
pub use error_msg::ErrorType;
pub use features::FeaturesReply;
pub use flow_match::{Masked, Match};
pub use flow_mod::{FlowMod, FlowModCommand};
pub use flow_removed::{FlowRemoved, FlowRemovedReason};
pub use flow_stats::{FlowOutput, FlowStats, RawFlowDelete, StatsMatch};
pub use header::{frame_len, HeaderRepr};
pub use message::Message;
pub use meter::{MeterBand, MeterFeatures, MeterMod, MeterModCommand};
pub use packet_in::{PacketIn, PacketInReason};
pub use packet_out::PacketOut;
pub use port_desc::PortDesc;
pub use port_status::PortReason;
pub use role::{ControllerRole, NxRole, RoleMsg};
pub use version::{negotiate, Version};
