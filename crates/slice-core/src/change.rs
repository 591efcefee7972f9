//! A committed change of slice membership, as a store tells it to whoever follows the
//! slices (see [`crate::MembershipSource`]), and its application to a [`Membership`].

use crate::{DeclaredFabric, Host, MacAddress, Membership, Port, PortId, Slice, SliceName};

/// A committed change of slice membership, as a store tells it to its listeners.
///
/// Non-exhaustive so that a store may later tell of a new kind of record without breaking
/// its listeners: a listener outside this crate keeps a wildcard arm, and the safe choice
/// there is to rebuild its view from a [`crate::MembershipSource::snapshot`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// An empty slice of this name was created.
    SliceCreated(SliceName),
    /// The slice and everything it held, as it was just before the delete.
    SliceDeleted(Slice),
    /// An empty port was added at the end of a slice's ports.
    PortAdded {
        /// The slice that gained the port.
        slice: SliceName,
        /// The port added.
        port: PortId,
    },
    /// The port and the MAC addresses it held.
    PortDeleted {
        /// The slice that lost the port.
        slice: SliceName,
        /// The port as it was just before the delete, with its MAC addresses.
        port: Port,
    },
    /// A MAC address was admitted behind a port of a slice.
    MacAdded {
        /// The slice that gained the host.
        slice: SliceName,
        /// The port the host sits behind.
        port: PortId,
        /// The host's address.
        mac: MacAddress,
    },
    /// A MAC address was removed from a port of a slice; the port stays.
    MacDeleted {
        /// The slice that lost the host.
        slice: SliceName,
        /// The port the host sat behind.
        port: PortId,
        /// The host's address.
        mac: MacAddress,
    },
    /// The operator declared the fabric anew through the store (see
    /// [`crate::FabricDeclarations`]): this one replaces any before it, and an empty one
    /// ends the declaration. It changes no membership.
    FabricDeclared(DeclaredFabric),
}

impl Change {
    /// Whether the change can only let more hosts talk (it adds), rather than fewer.
    pub fn grows(&self) -> bool {
        matches!(
            self,
            Change::SliceCreated(_) | Change::PortAdded { .. } | Change::MacAdded { .. }
        )
    }
}

impl Membership {
    /// The hosts whose slices `change` may alter, as this index holds them: called
    /// before the change is applied, since a delete names what the store held, and the
    /// index is what the network was told.
    pub fn hosts_touched_by(&self, change: &Change) -> Vec<Host> {
        match change {
            Change::MacAdded { port, mac, .. } | Change::MacDeleted { port, mac, .. } => {
                vec![Host {
                    port: *port,
                    mac: *mac,
                }]
            }
            Change::SliceDeleted(slice) => self.hosts_in(&slice.name, None),
            Change::PortDeleted { slice, port } => self.hosts_in(slice, Some(port.id)),
            Change::SliceCreated(_) | Change::PortAdded { .. } | Change::FabricDeclared(_) => {
                Vec::new()
            }
        }
    }

    /// Applies a committed change. Applying one twice is harmless: the index holds sets.
    pub fn apply(&mut self, change: &Change) {
        match change {
            Change::SliceCreated(name) => self.add_slice(name),
            Change::SliceDeleted(slice) => self.remove_slice(&slice.name),
            Change::PortAdded { slice, port } => self.add_port(slice, *port),
            Change::PortDeleted { slice, port } => self.remove_port(slice, port.id),
            Change::MacAdded { slice, port, mac } => self.add_mac(slice, *port, *mac),
            Change::MacDeleted { slice, port, mac } => self.remove_mac(slice, *port, *mac),
            Change::FabricDeclared(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Host;

    fn name(text: &str) -> SliceName {
        text.parse().unwrap()
    }

    #[test]
    fn applying_changes_builds_the_membership_and_twice_changes_nothing() {
        let (blue, port) = (name("blue"), PortId::new(1, 1));
        let mac = MacAddress::new([0, 0, 0, 0, 0, 1]);
        let host = Host { port, mac };
        let mut index = Membership::default();
        let changes = [
            Change::SliceCreated(blue.clone()),
            Change::PortAdded {
                slice: blue.clone(),
                port,
            },
            Change::MacAdded {
                slice: blue.clone(),
                port,
                mac,
            },
        ];
        for change in changes.iter().chain(&changes) {
            index.apply(change);
        }
        assert_eq!(index.slices_of(&host), std::slice::from_ref(&blue));
        let deleted = Change::MacDeleted {
            slice: blue.clone(),
            port,
            mac,
        };
        assert!(!deleted.grows() && changes.iter().all(Change::grows));
        index.apply(&deleted);
        index.apply(&deleted);
        assert!(!index.is_member(&host));
    }
}
