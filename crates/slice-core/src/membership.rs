//! Which hosts belong to which slices, kept in memory so that a packet can be judged
//! without reading storage.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

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
    /// The ports each member MAC is bound at, so that a change to one MAC is judged
    /// without a scan of every host.
    ports_of_mac: HashMap<MacAddress, Vec<PortId>>,
    /// How many members are in exactly each set of slices (sorted): the sets are few
    /// where the hosts are many, and what names a set depends on them alone.
    members_of_set: HashMap<Vec<SliceName>, usize>,
    /// Taken from [`SETS_GENERATIONS`] each time a set of slices gained its first member
    /// or lost its last: two memberships with the same value have the same sets.
    sets_generation: u64,
}

/// Gives back the room of a map that lost most of its entries (a declared state that
/// dropped every slice), which a map keeps otherwise. Only once it is a quarter full, and
/// to half full, so each entry removed pays for a constant share of the rehash.
fn release_room<K: std::hash::Hash + Eq, V>(map: &mut HashMap<K, V>) {
    if map.capacity() > 4 * map.len() + 64 {
        map.shrink_to(2 * map.len());
    }
}

/// Where every membership takes its next [`Membership::sets_generation`], so that no
/// two histories share one (0 is the empty membership's, which has no sets).
static SETS_GENERATIONS: AtomicU64 = AtomicU64::new(1);

/// `slices` in their canonical order.
fn sorted(slices: &[SliceName]) -> Vec<SliceName> {
    let mut sorted = slices.to_vec();
    sorted.sort_unstable();
    sorted
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
        if !macs.insert(mac) {
            return;
        }
        let host = Host { port, mac };
        let slices = self.slices_of_host.entry(host).or_default();
        let before = sorted(slices);
        slices.push(slice.clone());
        let after = sorted(slices);
        if before.is_empty() {
            self.ports_of_mac.entry(mac).or_default().push(port);
        }
        self.count_set(before, after);
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
        let Some(slices) = self.slices_of_host.get_mut(&host) else {
            return;
        };
        let before = sorted(slices);
        slices.retain(|s| s != slice);
        let after = sorted(slices);
        if slices.is_empty() {
            self.slices_of_host.remove(&host);
            release_room(&mut self.slices_of_host);
            if let Some(ports) = self.ports_of_mac.get_mut(&host.mac) {
                ports.retain(|port| *port != host.port);
                if ports.is_empty() {
                    self.ports_of_mac.remove(&host.mac);
                    release_room(&mut self.ports_of_mac);
                }
            }
        }
        self.count_set(before, after);
    }

    /// A member moved from the set `before` to `after` (either empty: none).
    fn count_set(&mut self, before: Vec<SliceName>, after: Vec<SliceName>) {
        if !before.is_empty() {
            if let Some(count) = self.members_of_set.get_mut(&before) {
                *count -= 1;
                if *count == 0 {
                    self.members_of_set.remove(&before);
                    self.sets_generation = SETS_GENERATIONS.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        if !after.is_empty() {
            let count = self.members_of_set.entry(after).or_insert_with(|| {
                self.sets_generation = SETS_GENERATIONS.fetch_add(1, Ordering::Relaxed);
                0
            });
            *count += 1;
        }
    }

    /// The hosts `slice` holds, at `port` only or at every port.
    pub(crate) fn hosts_in(&self, slice: &SliceName, port: Option<PortId>) -> Vec<Host> {
        let Some(ports) = self.slices.get(slice) else {
            return Vec::new();
        };
        (ports.iter())
            .filter(|(at, _)| !port.is_some_and(|port| port != **at))
            .flat_map(|(port, macs)| {
                macs.iter().map(|mac| Host {
                    port: *port,
                    mac: *mac,
                })
            })
            .collect()
    }

    /// The ports `mac` is bound at by some slice, in no particular order.
    pub fn ports_of(&self, mac: &MacAddress) -> &[PortId] {
        self.ports_of_mac.get(mac).map_or(&[], Vec::as_slice)
    }

    /// Whether some slice binds a MAC at `port`.
    pub fn binds_at(&self, port: PortId) -> bool {
        (self.slices.values()).any(|ports| ports.get(&port).is_some_and(|macs| !macs.is_empty()))
    }

    /// Every set of slices some member is in exactly, each once and sorted.
    pub fn slice_sets(&self) -> impl Iterator<Item = &[SliceName]> {
        self.members_of_set.keys().map(Vec::as_slice)
    }

    /// Changes whenever [`Membership::slice_sets`] gains or loses a set (and only then),
    /// to a value no other membership had: what depends on the sets alone and was made
    /// at the same value is still right.
    pub fn sets_generation(&self) -> u64 {
        self.sets_generation
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
    fn the_ports_of_a_mac_and_the_sets_of_slices_follow_every_change() {
        let (a, b) = (host(1, 1, 1), host(2, 1, 2));
        let moved = Host {
            port: PortId::new(3, 3),
            mac: a.mac,
        };
        let mut index = index_with(&[("red", &[a, b, moved]), ("blue", &[b])]);
        let mut ports = index.ports_of(&a.mac).to_vec();
        ports.sort();
        assert_eq!(ports, vec![a.port, moved.port]);
        let sets = |index: &Membership| {
            let mut sets: Vec<Vec<SliceName>> = index.slice_sets().map(<[_]>::to_vec).collect();
            sets.sort();
            sets
        };
        assert_eq!(
            sets(&index),
            vec![vec![name("blue"), name("red")], vec![name("red")]]
        );
        let generation = index.sets_generation();
        // One more member of a set that has some: no set comes or goes.
        index.add_mac(&name("red"), PortId::new(4, 4), b.mac);
        assert_eq!(index.sets_generation(), generation);
        assert!(index.binds_at(PortId::new(4, 4)));
        index.remove_mac(&name("blue"), b.port, b.mac);
        assert_ne!(index.sets_generation(), generation);
        assert_eq!(sets(&index), vec![vec![name("red")]]);
        index.remove_port(&name("red"), moved.port);
        assert_eq!(index.ports_of(&a.mac), &[a.port]);
        assert!(!index.binds_at(moved.port));
        index.remove_slice(&name("red"));
        assert!(index.ports_of(&a.mac).is_empty());
        assert_eq!(index.slice_sets().count(), 0);
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
