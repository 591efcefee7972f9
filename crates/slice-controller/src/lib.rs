//! The switch-control core of sliced: a routing switch with slice isolation.
//!
//! [`engine`] holds every decision (topology, hosts, paths, slicing) as plain synchronous
//! code. [`server`] speaks OpenFlow over TCP: it feeds the engine events and carries its
//! commands to the switches, over plain TCP or [`tls`].

pub mod engine;
mod hosts;
pub mod limits;
pub mod meter;
pub mod probe;
pub mod server;
pub mod tls;
pub mod topology;

pub use engine::{
    Command, Dropped, Engine, EngineConfig, Frame, HostView, PathView, Rule, SwitchProfile,
    SwitchView,
};
pub use probe::{ProbeKey, ProbeKeyError, Verdict};
pub use server::{Controller, ControllerConfig, ControllerHandle, Listeners, StartError};
pub use tls::{TlsError, TlsFiles};
pub use topology::{Hop, Link, PortState, Topology};
