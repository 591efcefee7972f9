//! Which hosts belong to which slices, kept in memory so that a packet can be judged
//! without reading storage.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::{MacAddress, PortId, Slice, SliceName};

/// A host as the network sees it: a MAC address behind a switch port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Host {
    /// The switch port the host sits behind.
    pub port: PortId,
    /// The host's Ethernet address.
    pub mac: MacAddress,
}

/// An index of slice membership.
///
/// A host belongs to a slice when the slice holds the host's port and that port holds the
/// host's MAC address; a port with no MAC address admits nobody. Two hosts may talk when
/// some slice holds both.
///
/// ```
/// use slice_core::{Host, Membership, PortId, SliceName};
///
/// let mut index = Membership::default();
/// let slice: SliceName = "blue".parse()?;
/// let a = Host { port: PortId::new(1, 1), mac: "00:00:00:00:00:01".parse()? };
/// let b = Host { port: PortId::new(2, 1), mac: "00:00:00:00:00:02".parse()? };
/// index.add_slice(&slice);
/// index.add_mac(&slice, a.port, a.mac);
/// assert!(!index.shares_slice(&a, &b));
/// index.add_mac(&slice, b.port, b.mac);
/// assert!(index.shares_slice(&a, &b));
/// # Ok::<(), slice_core::ParseError>(())
/// ```
#[derive(Debug, Default, Clone)]
pub struct Membership {
    slices: HashMap<SliceName, HashMap<PortId, HashSet<MacAddress>>>,
    /// The reverse index, so that the slices of a host are found without a scan.
    slices_of_host: HashMap<Host, Vec<SliceName>>,
}

/// Gives back the room of a map that lost most of its entries (a declared state that
/// dropped every slice), which a map keeps otherwise. Only once it is a quarter full, and
/// to half full, so each entry removed pays for a constant share of the rehash.
fn release_room<K: std::hash::Hash + Eq, V>(map: &mut HashMap<K, V>) {
    if map.capacity() > 4 * map.len() + 64 {
        map.shrink_to(2 * map.len());
    }
}

impl Membership {
    /// Builds the index from a snapshot of every slice.
    pub fn from_slices<'a>(slices: impl IntoIterator<Item = &'a Slice>) -> Self {
        let mut index = Self::default();
        for slice in slices {
            index.add_slice(&slice.name);
            for port in &slice.ports {
                index.add_port(&slice.name, port.id);
                for mac in &port.macs {
                    index.add_mac(&slice.name, port.id, *mac);
                }
            }
        }
        index
    }

    /// Adds an empty slice; a slice already there keeps what it holds.
    pub fn add_slice(&mut self, slice: &SliceName) {
        self.slices.entry(slice.clone()).or_default();
    }

    /// Removes a slice and every host it held; an unknown slice is no change.
    pub fn remove_slice(&mut self, slice: &SliceName) {
        if let Some(ports) = self.slices.remove(slice) {
            for (port, macs) in ports {
                for mac in macs {
                    self.forget(Host { port, mac }, slice);
                }
            }
            release_room(&mut self.slices);
        }
    }

    /// Adds a port to a slice, creating the slice in the index when it is not there:
    /// change events may arrive for a slice the index has not seen yet.
    pub fn add_port(&mut self, slice: &SliceName, port: PortId) {
        self.slices
            .entry(slice.clone())
            .or_default()
            .entry(port)
            .or_default();
    }

    /// Removes a port and the hosts behind it from a slice; an unknown one is no change.
    pub fn remove_port(&mut self, slice: &SliceName, port: PortId) {
        let Some(macs) = self
            .slices
            .get_mut(slice)
            .and_then(|ports| ports.remove(&port))
        else {
            return;
        };
        for mac in macs {
            self.forget(Host { port, mac }, slice);
        }
    }

    /// Admits a MAC address behind a port of a slice, adding the slice and the port when
    /// they are not there, for the same reason as [`Membership::add_port`].
    pub fn add_mac(&mut self, slice: &SliceName, port: PortId, mac: MacAddress) {
        let macs = self
            .slices
            .entry(slice.clone())
            .or_default()
            .entry(port)
            .or_default();
        if macs.insert(mac) {
            self.slices_of_host
                .entry(Host { port, mac })
                .or_default()
                .push(slice.clone());
        }
    }

    /// Removes a MAC address from a port of a slice; the port stays. An unknown one is no
    /// change.
    pub fn remove_mac(&mut self, slice: &SliceName, port: PortId, mac: MacAddress) {
        let removed = self
            .slices
            .get_mut(slice)
            .and_then(|ports| ports.get_mut(&port))
            .is_some_and(|macs| macs.remove(&mac));
        if removed {
            self.forget(Host { port, mac }, slice);
        }
    }

    fn forget(&mut self, host: Host, slice: &SliceName) {
        if let Some(slices) = self.slices_of_host.get_mut(&host) {
            slices.retain(|s| s != slice);
            if slices.is_empty() {
                self.slices_of_host.remove(&host);
                release_room(&mut self.slices_of_host);
            }
        }
    }

    /// Every host some slice holds, each once, in no particular order.
    pub fn members(&self) -> impl Iterator<Item = &Host> {
        self.slices_of_host.keys()
    }

    /// The slices that hold `host`.
    pub fn slices_of(&self, host: &Host) -> &[SliceName] {
        self.slices_of_host.get(host).map_or(&[], Vec::as_slice)
    }

    /// True when `host` belongs to at least one slice.
    pub fn is_member(&self, host: &Host) -> bool {
        self.slices_of_host.contains_key(host)
    }

    /// True when some slice holds both hosts.
    pub fn shares_slice(&self, a: &Host, b: &Host) -> bool {
        self.slices_of(a).iter().any(|slice| {
            self.slices
                .get(slice)
                .and_then(|ports| ports.get(&b.port))
                .is_some_and(|macs| macs.contains(&b.mac))
        })
    }

    /// The ports behind which the other members of `host`'s slices live: where a broadcast
    /// from `host` may go. The host's own port is left out; it is sorted for determinism.
    pub fn peer_ports(&self, host: &Host) -> BTreeSet<PortId> {
        let mut ports = BTreeSet::new();
        for slice in self.slices_of(host) {
            if let Some(slice_ports) = self.slices.get(slice) {
                ports.extend(
                    slice_ports
                        .iter()
                        .filter(|(port, macs)| **port != host.port && !macs.is_empty())
                        .map(|(port, _)| *port),
                );
            }
        }
        ports
    }

    /// The number of slices in the index.
    pub fn slice_count(&self) -> usize {
        self.slices.len()
    }

    /// The ports bound to slices, a port counted once per slice that holds it.
    pub fn bound_port_count(&self) -> usize {
        self.slices.values().map(HashMap::len).sum()
    }

    /// The MAC addresses bound to slices' ports, counted once per slice and port.
    pub fn bound_mac_count(&self) -> usize {
        self.slices
            .values()
            .flat_map(HashMap::values)
            .map(HashSet::len)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Port;

    fn name(s: &str) -> SliceName {
        s.parse().unwrap()
    }

    fn host(dpid: u64, port_no: u32, last: u8) -> Host {
        Host {
            port: PortId::new(dpid, port_no),
            mac: MacAddress::new([0, 0, 0, 0, 0, last]),
        }
    }

    fn index_with(slices: &[(&str, &[Host])]) -> Membership {
        let slices: Vec<Slice> = slices
            .iter()
            .map(|(slice, hosts)| Slice {
                name: name(slice),
                ports: hosts
                    .iter()
                    .map(|h| Port {
                        id: h.port,
                        macs: vec![h.mac],
                    })
                    .collect(),
            })
            .collect();
        Membership::from_slices(&slices)
    }

    #[test]
    fn hosts_talk_only_within_a_common_slice() {
        let (a, b, c) = (host(1, 1, 1), host(2, 1, 2), host(3, 1, 3));
        let index = index_with(&[("red", &[a, b]), ("blue", &[c])]);
        assert!(index.shares_slice(&a, &b));
        assert!(index.shares_slice(&b, &a));
        assert!(!index.shares_slice(&a, &c));
        assert!(!index.shares_slice(&c, &b));
    }

    #[test]
    fn a_mac_on_another_port_is_another_host() {
        let a = host(1, 1, 1);
        let moved = Host {
            port: PortId::new(1, 2),
            mac: a.mac,
        };
        let index = index_with(&[("red", &[a, host(2, 1, 2)])]);
        assert!(index.is_member(&a));
        assert!(!index.is_member(&moved));
        assert!(!index.shares_slice(&moved, &host(2, 1, 2)));
    }

    #[test]
    fn a_port_without_macs_admits_nobody() {
        let slice = name("red");
        let mut index = Membership::default();
        index.add_port(&slice, PortId::new(1, 1));
        assert!(!index.is_member(&host(1, 1, 1)));
    }

    #[test]
    fn removals_cascade() {
        let (a, b, c) = (host(1, 1, 1), host(2, 1, 2), host(2, 1, 3));
        let mut index = index_with(&[("red", &[a, b, c])]);
        let red = name("red");
        index.remove_mac(&red, b.port, b.mac);
        assert!(!index.shares_slice(&a, &b));
        assert!(index.shares_slice(&a, &c));
        index.remove_port(&red, c.port);
        assert!(!index.shares_slice(&a, &c));
        assert!(index.is_member(&a));
        index.remove_slice(&red);
        assert!(!index.is_member(&a));
        assert_eq!(index.slice_count(), 0);
    }

    #[test]
    fn membership_in_two_slices_survives_leaving_one() {
        let (a, b) = (host(1, 1, 1), host(2, 1, 2));
        let mut index = index_with(&[("red", &[a, b]), ("blue", &[a, b])]);
        index.remove_slice(&name("red"));
        assert!(index.shares_slice(&a, &b));
        assert_eq!(index.slices_of(&a), &[name("blue")]);
    }

    #[test]
    fn peer_ports_are_the_other_members_ports() {
        let (a, b, c, d) = (host(1, 1, 1), host(2, 1, 2), host(3, 1, 3), host(4, 4, 4));
        let mut index = index_with(&[("red", &[a, b]), ("blue", &[a, c]), ("green", &[d])]);
        index.add_port(&name("red"), PortId::new(9, 9));
        let peers: Vec<PortId> = index.peer_ports(&a).into_iter().collect();
        assert_eq!(peers, vec![b.port, c.port]);
        assert!(index.peer_ports(&host(7, 7, 7)).is_empty());
    }

    #[test]
    fn members_are_every_bound_host_once() {
        let (a, b) = (host(1, 1, 1), host(2, 1, 2));
        let mut index = index_with(&[("blue", &[a, b]), ("red", &[a])]);
        let mut members: Vec<Host> = index.members().copied().collect();
        members.sort();
        assert_eq!(members, vec![a, b]);
        index.remove_slice(&name("blue"));
        assert_eq!(index.members().copied().collect::<Vec<_>>(), vec![a]);
    }
}
