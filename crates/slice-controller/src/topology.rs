//! The switch graph: switches, their ports, and the links between them learned from LLDP.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::time::Instant;

use openflow::Version;
use slice_core::PortId;

/// Physical ports only: reserved numbers (LOCAL, CONTROLLER, ...) are not places hosts
/// or links can be.
pub fn is_physical(port_no: u32) -> bool {
    port_no != 0 && port_no < openflow::port::MAX
}

/// One port of a switch as the switch described it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortState {
    pub name: String,
    pub live: bool,
}

#[derive(Debug, Clone)]
struct Switch {
    version: Version,
    ports: BTreeMap<u32, PortState>,
}

/// One step of a path through a switch: where the packet enters and where it leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Hop {
    pub dpid: u64,
    pub in_port: u32,
    pub out_port: u32,
}

/// A directed link: LLDP sent out of `src` arrived at `dst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Link {
    pub src: PortId,
    pub dst: PortId,
}

/// When LLDP last confirmed a link: by the clock and by the round of probes.
#[derive(Debug, Clone, Copy)]
struct Confirmed {
    at: Instant,
    round: u64,
}

/// The network as the controller knows it.
#[derive(Debug, Default)]
pub struct Topology {
    switches: BTreeMap<u64, Switch>,
    /// Directed links by their source port, with when they were last confirmed.
    links: BTreeMap<PortId, (PortId, Confirmed)>,
    /// How many rounds of LLDP probes have gone out.
    probe_round: u64,
    /// Neighbours of each switch, sorted so that path search is deterministic:
    /// (neighbour dpid, our out port, their in port).
    adjacency: HashMap<u64, BTreeSet<(u64, u32, u32)>>,
    /// Ports that are the destination end of some link, so edge tests cost one lookup.
    link_ends: HashMap<PortId, usize>,
}

impl Topology {
    pub fn add_switch(&mut self, dpid: u64, version: Version, ports: BTreeMap<u32, PortState>) {
        self.switches.insert(dpid, Switch { version, ports });
    }

    /// Forgets a switch and every link that touches it; returns the links removed.
    pub fn remove_switch(&mut self, dpid: u64) -> Vec<Link> {
        self.switches.remove(&dpid);
        let doomed: Vec<Link> = self
            .links()
            .filter(|link| link.src.dpid == dpid || link.dst.dpid == dpid)
            .collect();
        for link in &doomed {
            self.remove_link(link.src);
        }
        doomed
    }

    pub fn has_switch(&self, dpid: u64) -> bool {
        self.switches.contains_key(&dpid)
    }

    pub fn switch_version(&self, dpid: u64) -> Option<Version> {
        self.switches.get(&dpid).map(|switch| switch.version)
    }

    pub fn dpids(&self) -> impl Iterator<Item = u64> + '_ {
        self.switches.keys().copied()
    }

    /// The live ports of a switch.
    pub fn live_ports(&self, dpid: u64) -> impl Iterator<Item = u32> + '_ {
        self.switches
            .get(&dpid)
            .into_iter()
            .flat_map(|switch| switch.ports.iter())
            .filter(|(_, state)| state.live)
            .map(|(port_no, _)| *port_no)
    }

    pub fn ports(&self, dpid: u64) -> impl Iterator<Item = (u32, &PortState)> + '_ {
        self.switches
            .get(&dpid)
            .into_iter()
            .flat_map(|switch| switch.ports.iter())
            .map(|(port_no, state)| (*port_no, state))
    }

    /// Records a port's new state; a port that goes down loses its links, returned.
    pub fn update_port(&mut self, port: PortId, state: Option<PortState>) -> Vec<Link> {
        let Some(switch) = self.switches.get_mut(&port.dpid) else {
            return Vec::new();
        };
        let live = state.as_ref().is_some_and(|state| state.live);
        match state {
            Some(state) => {
                switch.ports.insert(port.port_no, state);
            }
            None => {
                switch.ports.remove(&port.port_no);
            }
        }
        if live {
            return Vec::new();
        }
        let doomed: Vec<Link> = self
            .links()
            .filter(|link| link.src == port || link.dst == port)
            .collect();
        for link in &doomed {
            self.remove_link(link.src);
        }
        doomed
    }

    pub fn has_port(&self, port: PortId) -> bool {
        self.switches
            .get(&port.dpid)
            .is_some_and(|switch| switch.ports.contains_key(&port.port_no))
    }

    pub fn port_count(&self, dpid: u64) -> usize {
        self.switches
            .get(&dpid)
            .map_or(0, |switch| switch.ports.len())
    }

    pub fn is_live(&self, port: PortId) -> bool {
        self.switches
            .get(&port.dpid)
            .and_then(|switch| switch.ports.get(&port.port_no))
            .is_some_and(|state| state.live)
    }

    /// Records that LLDP from `src` arrived at `dst`. Returns true for a new link, and the
    /// link it replaced when `src` used to lead elsewhere.
    pub fn link_seen(&mut self, src: PortId, dst: PortId, now: Instant) -> (bool, Option<Link>) {
        // A port known to be down carries nothing: LLDP "through" it is a frame that was
        // in flight when it went down, and must not bring the link back.
        if !self.is_live(src) || !self.is_live(dst) || src == dst {
            return (false, None);
        }
        let confirmed = Confirmed {
            at: now,
            round: self.probe_round,
        };
        if let Some((known, seen)) = self.links.get_mut(&src) {
            if *known == dst {
                *seen = confirmed;
                return (false, None);
            }
        }
        let replaced = self.remove_link(src).map(|old| Link { src, dst: old });
        self.links.insert(src, (dst, confirmed));
        self.adjacency
            .entry(src.dpid)
            .or_default()
            .insert((dst.dpid, src.port_no, dst.port_no));
        *self.link_ends.entry(dst).or_default() += 1;
        (true, replaced)
    }

    /// Marks the start of a new round of LLDP probes.
    pub fn start_probe_round(&mut self) {
        self.probe_round += 1;
    }

    /// Forgets links not confirmed since `oldest` that also missed the answers to
    /// `missed_rounds` whole rounds of probes; returns them.
    ///
    /// Both conditions, because either alone misleads: the clock runs on while this
    /// process stalls (a stall would expire every link at once), and rounds follow the
    /// ticks, which can come early after a stall.
    pub fn expire_links(&mut self, oldest: Instant, missed_rounds: u64) -> Vec<Link> {
        // The current round's probes are still under way; the rounds between the one
        // that last confirmed a link and the current one went unanswered.
        let answered_since = self.probe_round.saturating_sub(missed_rounds);
        let stale: Vec<PortId> = self
            .links
            .iter()
            .filter(|(_, (_, seen))| seen.at < oldest && seen.round < answered_since)
            .map(|(src, _)| *src)
            .collect();
        stale
            .into_iter()
            .filter_map(|src| self.remove_link(src).map(|dst| Link { src, dst }))
            .collect()
    }

    fn remove_link(&mut self, src: PortId) -> Option<PortId> {
        let (dst, _) = self.links.remove(&src)?;
        if let Some(neighbours) = self.adjacency.get_mut(&src.dpid) {
            neighbours.remove(&(dst.dpid, src.port_no, dst.port_no));
        }
        if let Some(count) = self.link_ends.get_mut(&dst) {
            *count -= 1;
            if *count == 0 {
                self.link_ends.remove(&dst);
            }
        }
        Some(dst)
    }

    /// Where the link that leaves by `src` arrives, if LLDP found one.
    pub fn link_from(&self, src: PortId) -> Option<PortId> {
        self.links.get(&src).map(|(dst, _)| *dst)
    }

    pub fn links(&self) -> impl Iterator<Item = Link> + '_ {
        self.links.iter().map(|(src, (dst, _))| Link {
            src: *src,
            dst: *dst,
        })
    }

    /// True for a live port that leads to a host rather than to another switch.
    pub fn is_edge(&self, port: PortId) -> bool {
        self.is_live(port) && !self.links.contains_key(&port) && !self.link_ends.contains_key(&port)
    }

    /// The live edge ports of every switch.
    pub fn edge_ports(&self) -> impl Iterator<Item = PortId> + '_ {
        self.switches.keys().flat_map(move |dpid| {
            self.live_ports(*dpid)
                .map(move |port_no| PortId::new(*dpid, port_no))
                .filter(|port| self.is_edge(*port))
        })
    }

    /// The shortest path (fewest switches) from a host behind `from` to a host behind `to`,
    /// as the hops through each switch. Ties go to the lowest neighbour dpid, then the
    /// lowest port, so the same graph always gives the same path.
    pub fn shortest_path(&self, from: PortId, to: PortId) -> Option<Vec<Hop>> {
        if !self.is_live(from) || !self.is_live(to) {
            return None;
        }
        if from.dpid == to.dpid {
            return Some(vec![Hop {
                dpid: from.dpid,
                in_port: from.port_no,
                out_port: to.port_no,
            }]);
        }
        // Breadth-first search; `parent` maps a switch to (previous switch, its out port,
        // our in port).
        let mut parent: HashMap<u64, (u64, u32, u32)> = HashMap::new();
        let mut queue = VecDeque::from([from.dpid]);
        parent.insert(from.dpid, (from.dpid, 0, 0));
        while let Some(dpid) = queue.pop_front() {
            if dpid == to.dpid {
                break;
            }
            for &(next, out_port, in_port) in self.adjacency.get(&dpid).into_iter().flatten() {
                if parent.contains_key(&next) {
                    continue;
                }
                parent.insert(next, (dpid, out_port, in_port));
                queue.push_back(next);
            }
        }
        parent.get(&to.dpid)?;
        // Walk back from the destination, then reverse into hop order.
        let mut hops = Vec::new();
        let mut dpid = to.dpid;
        let mut out_port = to.port_no;
        while dpid != from.dpid {
            let (previous, previous_out, in_port) = parent[&dpid];
            hops.push(Hop {
                dpid,
                in_port,
                out_port,
            });
            dpid = previous;
            out_port = previous_out;
        }
        hops.push(Hop {
            dpid: from.dpid,
            in_port: from.port_no,
            out_port,
        });
        hops.reverse();
        Some(hops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ports(numbers: &[u32]) -> BTreeMap<u32, PortState> {
        numbers
            .iter()
            .map(|n| {
                (
                    *n,
                    PortState {
                        name: format!("eth{n}"),
                        live: true,
                    },
                )
            })
            .collect()
    }

    fn p(dpid: u64, port_no: u32) -> PortId {
        PortId::new(dpid, port_no)
    }

    /// Both directions of a cable, as LLDP would find them.
    fn cable(topology: &mut Topology, a: PortId, b: PortId) {
        let now = Instant::now();
        topology.link_seen(a, b, now);
        topology.link_seen(b, a, now);
    }

    /// s1 - s2 - s3 in a line; hosts on port 1 of each; links on ports 2 and 3.
    fn line() -> Topology {
        let mut topology = Topology::default();
        for dpid in 1..=3 {
            topology.add_switch(dpid, Version::Of13, ports(&[1, 2, 3]));
        }
        cable(&mut topology, p(1, 2), p(2, 2));
        cable(&mut topology, p(2, 3), p(3, 2));
        topology
    }

    fn hop(dpid: u64, in_port: u32, out_port: u32) -> Hop {
        Hop {
            dpid,
            in_port,
            out_port,
        }
    }

    #[test]
    fn a_path_on_one_switch_is_one_hop() {
        let topology = line();
        assert_eq!(
            topology.shortest_path(p(1, 1), p(1, 3)),
            Some(vec![hop(1, 1, 3)])
        );
    }

    #[test]
    fn a_path_crosses_the_line_hop_by_hop() {
        let topology = line();
        assert_eq!(
            topology.shortest_path(p(1, 1), p(3, 1)),
            Some(vec![hop(1, 1, 2), hop(2, 2, 3), hop(3, 2, 1)])
        );
        assert_eq!(
            topology.shortest_path(p(3, 1), p(1, 1)),
            Some(vec![hop(3, 1, 2), hop(2, 3, 2), hop(1, 2, 1)])
        );
    }

    #[test]
    fn edge_ports_are_live_ports_without_links() {
        let topology = line();
        let edges: Vec<PortId> = topology.edge_ports().collect();
        assert_eq!(edges, vec![p(1, 1), p(1, 3), p(2, 1), p(3, 1), p(3, 3)]);
        assert!(!topology.is_edge(p(2, 2)));
    }

    #[test]
    fn ties_break_to_the_lowest_dpid_then_port() {
        // A square: 1 - 2 - 4 and 1 - 3 - 4, plus a second cable 1 - 2 on higher ports.
        let mut topology = Topology::default();
        for dpid in 1..=4 {
            topology.add_switch(dpid, Version::Of13, ports(&[1, 2, 3, 4]));
        }
        cable(&mut topology, p(1, 3), p(3, 2));
        cable(&mut topology, p(1, 4), p(2, 4));
        cable(&mut topology, p(1, 2), p(2, 2));
        cable(&mut topology, p(2, 3), p(4, 2));
        cable(&mut topology, p(3, 3), p(4, 3));
        let path = topology.shortest_path(p(1, 1), p(4, 1)).unwrap();
        assert_eq!(path, vec![hop(1, 1, 2), hop(2, 2, 3), hop(4, 2, 1)]);
        for _ in 0..10 {
            assert_eq!(topology.shortest_path(p(1, 1), p(4, 1)).unwrap(), path);
        }
    }

    #[test]
    fn a_port_going_down_removes_its_links_and_paths_go_around() {
        let mut topology = Topology::default();
        for dpid in 1..=3 {
            topology.add_switch(dpid, Version::Of13, ports(&[1, 2, 3]));
        }
        // A triangle.
        cable(&mut topology, p(1, 2), p(2, 2));
        cable(&mut topology, p(2, 3), p(3, 3));
        cable(&mut topology, p(1, 3), p(3, 2));
        assert_eq!(topology.shortest_path(p(1, 1), p(2, 1)).unwrap().len(), 2);
        let removed = topology.update_port(
            p(1, 2),
            Some(PortState {
                name: "eth2".into(),
                live: false,
            }),
        );
        assert_eq!(removed.len(), 2, "both directions of the cable");
        assert_eq!(
            topology.shortest_path(p(1, 1), p(2, 1)),
            Some(vec![hop(1, 1, 3), hop(3, 2, 3), hop(2, 3, 1)])
        );
    }

    #[test]
    fn no_path_between_islands_or_from_a_dead_port() {
        let mut topology = line();
        topology.add_switch(9, Version::Of10, ports(&[1]));
        assert_eq!(topology.shortest_path(p(1, 1), p(9, 1)), None);
        assert_eq!(topology.shortest_path(p(1, 7), p(2, 1)), None);
    }

    #[test]
    fn lldp_through_a_dead_port_makes_no_link() {
        let mut topology = line();
        let down = PortState {
            name: "eth2".into(),
            live: false,
        };
        let removed = topology.update_port(p(2, 2), Some(down));
        assert_eq!(removed.len(), 2, "both directions of the link go");
        let now = Instant::now();
        assert_eq!(topology.link_seen(p(1, 2), p(2, 2), now), (false, None));
        assert_eq!(topology.link_seen(p(2, 2), p(1, 2), now), (false, None));
        assert_eq!(topology.links().count(), 2);
    }

    #[test]
    fn links_expire_unless_seen_again() {
        let mut topology = line();
        let later = Instant::now() + std::time::Duration::from_secs(5);
        for _ in 0..2 {
            topology.start_probe_round();
        }
        topology.link_seen(p(1, 2), p(2, 2), later);
        assert!(
            topology.expire_links(later, 2).is_empty(),
            "old by the clock, but only one round missed"
        );
        topology.start_probe_round();
        let expired = topology.expire_links(later, 2);
        assert_eq!(expired.len(), 3);
        assert_eq!(
            topology.links().collect::<Vec<_>>(),
            vec![Link {
                src: p(1, 2),
                dst: p(2, 2)
            }]
        );
        assert!(!topology.is_edge(p(1, 2)));
        assert!(
            !topology.is_edge(p(2, 2)),
            "the far end of a one-way link is no edge"
        );
    }

    #[test]
    fn removing_a_switch_removes_its_links() {
        let mut topology = line();
        let removed = topology.remove_switch(2);
        assert_eq!(removed.len(), 4);
        assert_eq!(topology.links().count(), 0);
        assert!(
            topology.is_edge(p(1, 2)),
            "an orphaned link port becomes an edge"
        );
    }

    #[test]
    fn a_link_whose_source_moves_replaces_the_old_one() {
        let mut topology = line();
        let (new, replaced) = topology.link_seen(p(1, 2), p(3, 3), Instant::now());
        assert!(new);
        assert_eq!(
            replaced,
            Some(Link {
                src: p(1, 2),
                dst: p(2, 2)
            })
        );
    }
}
