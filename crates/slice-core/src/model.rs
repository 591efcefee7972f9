//! The tree that describes one slice: its ports in the order they were added, and each
//! port's MAC addresses in the order they were added.

use crate::{MacAddress, PortId, SliceName};

/// A slice with everything it holds, as a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    /// The slice's name, unique in a store.
    pub name: SliceName,
    /// The slice's ports, in the order they were added, each once.
    pub ports: Vec<Port>,
}

/// A port of a slice with the host MAC addresses the slice admits behind it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Port {
    /// The switch port.
    pub id: PortId,
    /// The MAC addresses admitted behind it, in the order they were added, each once.
    pub macs: Vec<MacAddress>,
}

impl Slice {
    /// A slice that holds no port yet.
    pub fn empty(name: SliceName) -> Self {
        Self {
            name,
            ports: Vec::new(),
        }
    }
}
