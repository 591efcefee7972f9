//! The switch-control core of sliced: a routing switch with slice isolation.
//!
//! [`engine`] holds every decision (topology, hosts, paths, slicing) as plain synchronous
//! code. The server module (OpenFlow over TCP) feeds it events and carries its commands
//! to the switches.

pub mod engine;
pub mod topology;

pub use engine::{Command, Engine, EngineConfig, Frame, HostView, PathView, Rule, SwitchView};
pub use topology::{Hop, Link, PortState, Topology};
