//! The switch graph: switches, their ports, and the links between them learned from LLDP.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

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

/// When LLDP last confirmed a link, by the clock and by the round of probes: since when
/// its silence counts.
#[derive(Debug, Clone, Copy)]
struct Confirmed {
    at: Instant,
    round: u64,
}

/// How many probe rounds after a silent link's last confirmation its neighbours must have
/// been confirmed for its silence to be its own ([`Topology::neighbours_heard_since`]):
/// two, so that probes of its own round that came in a moment after it, across a tick,
/// do not count.
const NEIGHBOURS_LATER_BY: u64 = 2;

/// Whether more than half of `answers` are true; false when there are none.
fn most(answers: impl Iterator<Item = bool>) -> bool {
    let (yes, all) = answers.fold((0usize, 0usize), |(yes, all), answer| {
        (yes + usize::from(answer), all + 1)
    });
    yes * 2 > all
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
    /// Breadth-first trees already grown, reused until the graph changes.
    trees: PathTrees,
    /// Ports of existing switches held out of use ([`Topology::hold`]); a port or switch
    /// that goes takes its own.
    held: BTreeSet<PortId>,
}

impl Topology {
    pub fn add_switch(&mut self, dpid: u64, version: Version, ports: BTreeMap<u32, PortState>) {
        self.switches.insert(dpid, Switch { version, ports });
        self.trees.forget();
    }

    /// Forgets a switch and every link that touches it; returns the links removed.
    pub fn remove_switch(&mut self, dpid: u64) -> Vec<Link> {
        self.switches.remove(&dpid);
        self.held.retain(|port| port.dpid != dpid);
        self.trees.forget();
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
                self.held.remove(&port);
            }
        }
        if live {
            return Vec::new();
        }
        self.remove_links_at(port)
    }

    /// Forgets both links that have an end at `port`; returns them.
    pub fn remove_links_at(&mut self, port: PortId) -> Vec<Link> {
        let doomed: Vec<Link> = self
            .links()
            .filter(|link| link.src == port || link.dst == port)
            .collect();
        for link in &doomed {
            self.remove_link(link.src);
        }
        doomed
    }

    /// Forgets the links `refused` picks, in both directions; returns them.
    pub fn remove_links_where(&mut self, mut refused: impl FnMut(&Link) -> bool) -> Vec<Link> {
        let doomed: Vec<Link> = self.links().filter(|link| refused(link)).collect();
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
        self.trees.forget();
        (true, replaced)
    }

    /// Marks the start of a new round of LLDP probes.
    pub fn start_probe_round(&mut self) {
        self.probe_round += 1;
    }

    /// The round of probes under way.
    pub fn probe_round(&self) -> u64 {
        self.probe_round
    }

    /// Forgets links not confirmed for their age limit by `now` that also missed the
    /// answers to `missed_rounds` whole rounds of probes; returns them, each with when it
    /// was last confirmed. `max_age` gives a link's limit from its source port and
    /// whether its silence is its own ([`Topology::neighbours_heard_since`]);
    /// `worked_past` says whether both switches of a link have worked past the probes of
    /// a round, so that the missing ones are lost, not waiting: every missed round but
    /// the last must be.
    ///
    /// Both conditions, because either alone misleads: the clock runs on while this
    /// process stalls (a stall would expire every link at once), and rounds follow the
    /// ticks, which can come early after a stall.
    pub fn expire_links(
        &mut self,
        now: Instant,
        missed_rounds: u64,
        max_age: impl Fn(PortId, bool) -> Duration,
        worked_past: impl Fn(Link, u64) -> bool,
    ) -> Vec<(Link, Instant)> {
        // The current round's probes are still under way; the rounds between the one
        // that last confirmed a link and the current one went unanswered.
        let answered_since = self.probe_round.saturating_sub(missed_rounds);
        let stale: Vec<(PortId, Instant)> = self
            .links
            .iter()
            .filter(|(src, (dst, seen))| {
                seen.round < answered_since && {
                    let own = self.neighbours_heard_since(**src, *dst, seen.round);
                    let link = Link {
                        src: **src,
                        dst: *dst,
                    };
                    // The last missed round may still be under way at a receiver that
                    // answered before the sender sent it; the ones before it are lost.
                    let lost = seen.round + missed_rounds.saturating_sub(1);
                    now.saturating_duration_since(seen.at) > max_age(**src, own)
                        && worked_past(link, lost)
                }
            })
            .map(|(src, (_, seen))| (*src, seen.at))
            .collect();
        stale
            .into_iter()
            .filter_map(|(src, seen)| {
                let dst = self.remove_link(src)?;
                Some((Link { src, dst }, seen))
            })
            .collect()
    }

    /// Whether the silence of the link `src` -> `dst` since the probe round `round` is
    /// its own: most of the other links out of its sending switch, and most of the
    /// other links into its receiving switch, were confirmed [`NEIGHBOURS_LATER_BY`]
    /// rounds later or more. Its probes go out in the same writes as the first and come
    /// in on the same connection as the second, so when those get through and it does
    /// not, its cable is what is missing. When most of them are silent too, one of the
    /// switches (or the Open vSwitch under both) is stalled or drowning, and a single
    /// probe that got through proves nothing: at k=16 one did, right before a 4 s stall
    /// of Open vSwitch's main loop, and 630 links expired in one tick. A switch with no
    /// other link has no such evidence: false.
    pub fn neighbours_heard_since(&self, src: PortId, dst: PortId, round: u64) -> bool {
        let later = |seen: &Confirmed| seen.round >= round.saturating_add(NEIGHBOURS_LATER_BY);
        let out_of = |dpid: u64| {
            self.links
                .range(PortId::new(dpid, 0)..=PortId::new(dpid, u32::MAX))
        };
        let sent_alongside = out_of(src.dpid)
            .filter(|(port, _)| **port != src)
            .map(|(_, (_, seen))| later(seen));
        // The links into `dst`'s switch are the ones back from its own links' far ends.
        let received_alongside = out_of(dst.dpid)
            .filter(|(port, _)| **port != dst)
            .filter_map(|(port, (far, _))| {
                let (back_to, seen) = self.links.get(far)?;
                (back_to == port).then(|| later(seen))
            });
        most(sent_alongside) && most(received_alongside)
    }
    /// A genuine probe from `src` arrived at `dst` too late to confirm a link: if it is
    /// the link LLDP found there, it is confirmed all the same (it never makes one).
    pub fn link_heard_late(&mut self, src: PortId, dst: PortId, now: Instant) {
        if !self.is_live(src) || !self.is_live(dst) {
            return;
        }
        if let Some((known, seen)) = self.links.get_mut(&src) {
            if *known == dst {
                *seen = Confirmed {
                    at: now,
                    round: self.probe_round,
                };
            }
        }
    }

    fn remove_link(&mut self, src: PortId) -> Option<PortId> {
        let (dst, _) = self.links.remove(&src)?;
        self.trees.forget();
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
        self.is_live(port)
            && !self.links.contains_key(&port)
            && !self.link_ends.contains_key(&port)
            && !self.held.contains(&port)
    }

    /// Holds `port`, an end of a link held out for flapping, out of use: neither a link
    /// end nor an edge, so nothing is forwarded to it and no host is learned there.
    pub fn hold(&mut self, port: PortId) {
        if self.has_port(port) {
            self.held.insert(port);
        }
    }

    /// Whether `port` is held out of use.
    pub fn is_held(&self, port: PortId) -> bool {
        self.held.contains(&port)
    }

    /// Lets `port` be a link end or an edge again.
    pub fn release(&mut self, port: PortId) {
        self.held.remove(&port);
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
    ///
    /// The search is one breadth-first tree per source switch, grown over the whole graph
    /// the first time and reused for every destination until the graph changes, which is
    /// why a query takes `&mut self`.
    pub fn shortest_path(&mut self, from: PortId, to: PortId) -> Option<Vec<Hop>> {
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
        let Self {
            switches,
            adjacency,
            trees,
            ..
        } = self;
        let graph = trees
            .graph
            .get_or_insert_with(|| IndexedGraph::new(switches, adjacency));
        let (source, target) = (graph.index(from.dpid)?, graph.index(to.dpid)?);
        let (graph, parents) = trees.tree(source)?;
        // Walk back from the destination, then reverse into hop order.
        let mut hops = Vec::new();
        let mut at = target;
        let mut out_port = to.port_no;
        while at != source {
            let step = parents[at as usize];
            if step.previous == UNREACHED {
                return None;
            }
            hops.push(Hop {
                dpid: graph.dpids[at as usize],
                in_port: step.in_port,
                out_port,
            });
            at = step.previous;
            out_port = step.out_port;
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

/// How many tree entries (one per switch per cached source, 12 bytes each) the path
/// cache may hold: 12 MiB. That keeps a tree for every edge switch of a k=16 fat-tree
/// (128 of 320 switches) and 1,048 sources of a 1,000-switch network, while a network of
/// a million switches still gets one.
const PATH_TREE_ENTRIES: usize = 1 << 20;

/// A tree's mark for a switch the search did not reach.
const UNREACHED: u32 = u32::MAX;

/// How the search reached a switch: from `previous` (an index), leaving it by
/// `out_port`, arriving by `in_port`.
#[derive(Debug, Clone, Copy)]
struct Step {
    previous: u32,
    out_port: u32,
    in_port: u32,
}

/// The adjacency as indices into the sorted dpids, each switch's neighbours in the
/// adjacency index's order, so that a search on it breaks ties exactly as one on the
/// index would, without hashing a dpid per visit.
#[derive(Debug)]
struct IndexedGraph {
    dpids: Vec<u64>,
    /// Switch `i`'s neighbours are `neighbours[first[i]..first[i + 1]]`.
    first: Vec<usize>,
    neighbours: Vec<(u32, u32, u32)>,
}

impl IndexedGraph {
    fn new(
        switches: &BTreeMap<u64, Switch>,
        adjacency: &HashMap<u64, BTreeSet<(u64, u32, u32)>>,
    ) -> Self {
        let dpids: Vec<u64> = switches.keys().copied().collect();
        let mut first = Vec::with_capacity(dpids.len() + 1);
        let mut neighbours = Vec::new();
        for dpid in &dpids {
            first.push(neighbours.len());
            for &(next, out_port, in_port) in adjacency.get(dpid).into_iter().flatten() {
                // Links join known switches only (a switch leaves with its links).
                if let Ok(next) = dpids.binary_search(&next) {
                    neighbours.push((index_u32(next), out_port, in_port));
                }
            }
        }
        first.push(neighbours.len());
        Self {
            dpids,
            first,
            neighbours,
        }
    }

    fn index(&self, dpid: u64) -> Option<u32> {
        self.dpids.binary_search(&dpid).ok().map(index_u32)
    }

    /// Every switch's step from `source` in breadth-first order.
    fn search(&self, source: u32) -> Vec<Step> {
        let unreached = Step {
            previous: UNREACHED,
            out_port: 0,
            in_port: 0,
        };
        let mut parents = vec![unreached; self.dpids.len()];
        parents[source as usize].previous = source;
        let mut queue = Vec::with_capacity(self.dpids.len());
        queue.push(source);
        let mut head = 0;
        while let Some(&at) = queue.get(head) {
            head += 1;
            let at_index = at as usize;
            for &(next, out_port, in_port) in
                &self.neighbours[self.first[at_index]..self.first[at_index + 1]]
            {
                let step = &mut parents[next as usize];
                if step.previous != UNREACHED {
                    continue;
                }
                *step = Step {
                    previous: at,
                    out_port,
                    in_port,
                };
                queue.push(next);
            }
        }
        parents
    }
}

/// Indices fit in u32: a switch costs a connection and a task, so there are never four
/// billion of them; saturating keeps this total all the same.
fn index_u32(index: usize) -> u32 {
    u32::try_from(index).unwrap_or(UNREACHED - 1)
}

/// The shortest-path trees grown since the graph last changed, by source, least
/// recently used first out once [`PATH_TREE_ENTRIES`] would be exceeded.
#[derive(Debug)]
struct PathTrees {
    /// Built by the first search after a change.
    graph: Option<IndexedGraph>,
    /// By source index: the tree and when it was last used.
    trees: Vec<Option<(Vec<Step>, u64)>>,
    cached: usize,
    uses: u64,
    /// Tree entries allowed; [`PATH_TREE_ENTRIES`] but for the tests.
    entries: usize,
    /// Trees grown, for the tests to tell a reuse from a new search.
    searches: u64,
}

impl Default for PathTrees {
    fn default() -> Self {
        Self {
            graph: None,
            trees: Vec::new(),
            cached: 0,
            uses: 0,
            entries: PATH_TREE_ENTRIES,
            searches: 0,
        }
    }
}

impl PathTrees {
    /// The graph changed: every tree may be wrong.
    fn forget(&mut self) {
        if self.graph.is_some() {
            self.graph = None;
            self.trees.clear();
            self.cached = 0;
        }
    }

    fn max_sources(&self, switches: usize) -> usize {
        (self.entries / switches.max(1)).max(1)
    }

    /// The graph and the tree grown from `source` on it, grown now unless cached; None
    /// without a graph.
    fn tree(&mut self, source: u32) -> Option<(&IndexedGraph, &[Step])> {
        let graph = self.graph.as_ref()?;
        let switches = graph.dpids.len();
        self.trees.resize_with(switches, || None);
        self.uses += 1;
        let source_index = source as usize;
        if self.trees[source_index].is_none() {
            if self.cached >= self.max_sources(switches) {
                let oldest = self
                    .trees
                    .iter()
                    .enumerate()
                    .filter_map(|(index, tree)| tree.as_ref().map(|(_, used)| (*used, index)))
                    .min();
                if let Some((_, index)) = oldest {
                    self.trees[index] = None;
                    self.cached -= 1;
                }
            }
            self.searches += 1;
            self.trees[source_index] = Some((graph.search(source), 0));
            self.cached += 1;
        }
        let (parents, used) = self.trees[source_index].as_mut()?;
        *used = self.uses;
        Some((graph, parents))
    }
}

#[cfg(test)]
mod tests;
