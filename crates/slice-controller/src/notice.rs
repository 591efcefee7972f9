//! What changed in the network, told to whoever follows it (`GET /events`).
//!
//! The engine records a [`Notice`] where the change happens and the engine task hands
//! them on after each event it handles; nothing waits for a reader.

use serde::Serialize;
use slice_core::{MacAddress, PortId};

use crate::topology::Link;

/// One change of the network as this instance sees it. Serialized, each is its fields
/// alone; [`Notice::kind`] names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Notice {
    SwitchUp {
        dpid: u64,
    },
    SwitchDown {
        dpid: u64,
    },
    LinkUp {
        src: PortId,
        dst: PortId,
    },
    LinkDown {
        src: PortId,
        dst: PortId,
    },
    HostLearned {
        mac: MacAddress,
        port: PortId,
    },
    HostMoved {
        mac: MacAddress,
        from: PortId,
        to: PortId,
    },
    HostForgotten {
        mac: MacAddress,
    },
    PathInstalled {
        src: MacAddress,
        dst: MacAddress,
    },
    PathDeleted {
        src: MacAddress,
        dst: MacAddress,
    },
    /// The data-plane verification's outcome changed (`crate::verification`).
    Verification {
        proven: bool,
        pairs_checked: u64,
        leaks: usize,
        black_holes: usize,
        loops: usize,
    },
}

impl Notice {
    /// The event type, one word.
    pub fn kind(&self) -> &'static str {
        match self {
            Notice::SwitchUp { .. } => "switch_up",
            Notice::SwitchDown { .. } => "switch_down",
            Notice::LinkUp { .. } => "link_up",
            Notice::LinkDown { .. } => "link_down",
            Notice::HostLearned { .. } => "host_learned",
            Notice::HostMoved { .. } => "host_moved",
            Notice::HostForgotten { .. } => "host_forgotten",
            Notice::PathInstalled { .. } => "path_installed",
            Notice::PathDeleted { .. } => "path_deleted",
            Notice::Verification { .. } => "verification",
        }
    }

    pub(crate) fn link_down(link: &Link) -> Self {
        Notice::LinkDown {
            src: link.src,
            dst: link.dst,
        }
    }
}
