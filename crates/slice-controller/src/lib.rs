//! The switch-control core of sliced: a routing switch with slice isolation.
//!
//! [`engine`] holds every decision (topology, hosts, paths, slicing) as plain synchronous
//! code. [`session`] is one switch's OpenFlow protocol as a state machine without I/O;
//! the two share the words of [`protocol`] and name nothing of each other.
//! [`server`] is the I/O around them: it runs a session per switch connection over plain
//! TCP or [`tls`], feeds the engine their events and carries its commands back.

mod config;
pub mod cookie;

pub mod engine;
mod hosts;
pub mod limits;
pub mod meter;
pub mod metrics;
pub mod notice;
pub mod pipeline;
pub mod probe;
pub mod protocol;
mod sender_address;
pub mod server;
pub mod session;
pub mod tls;
pub mod topology;
pub mod verification;

pub use config::ControllerConfig;
pub use engine::{
    Command, Dropped, Engine, EngineConfig, FlowAction, FlowEntry, FlowHandle, FlowsRead, Frame,
    HostView, PathView, Role, Rule, SwitchProfile, SwitchView, MAX_FLOWS_READ,
};
pub use metrics::ControllerMetrics;
pub use notice::Notice;
pub use probe::{ProbeKey, ProbeKeyError, Verdict};
pub use server::{ClusterLink, Controller, ControllerHandle, Listeners, StartError};
pub use session::{CloseReason, RoleRefusal, SessionConfig, SwitchEvent, SwitchSession};
pub use slice_core::fabric::{DeclaredFabric, FabricConflict, FabricEntry, FabricEntryError};
pub use tls::{TlsError, TlsFiles};
pub use topology::{Hop, Link, PortState, Topology};
pub use verification::{VerificationHandle, VerificationView};
