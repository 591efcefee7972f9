//! The random scenario's model of what the lab has done (the slices with their ports and
//! MAC addresses, the cables cut), the operations that change it, and the pairs of hosts
//! that must talk in it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use anyhow::Context;

use crate::e2e::net::{Port, Topo};

/// What the lab has done to the network and the slices.
#[derive(Debug, Clone)]
pub(super) struct Model {
    pub(super) topo: Topo,
    /// Slice name to its ports, each with the hosts whose MAC address it holds.
    pub(super) slices: BTreeMap<String, BTreeMap<Port, BTreeSet<u8>>>,
    /// Indices into `topo.links` of the cables cut.
    pub(super) cut: BTreeSet<usize>,
}

impl Model {
    pub(super) fn new(topo: Topo) -> Model {
        Model {
            topo,
            slices: BTreeMap::new(),
            cut: BTreeSet::new(),
        }
    }

    pub(super) fn hosts(&self) -> Vec<u8> {
        self.topo.hosts.keys().copied().collect()
    }

    pub(super) fn port_of(&self, host: u8) -> Port {
        self.topo.hosts[&host]
    }

    /// Whether `host`'s MAC address is held, in `slice`, at the port it is plugged into.
    pub(super) fn bound_in(&self, slice: &BTreeMap<Port, BTreeSet<u8>>, host: u8) -> bool {
        slice
            .get(&self.port_of(host))
            .is_some_and(|macs| macs.contains(&host))
    }

    /// The switches joined to `dpid` by cables that are up.
    fn reachable_switches(&self, dpid: u64) -> BTreeSet<u64> {
        let mut seen = BTreeSet::from([dpid]);
        let mut frontier = vec![dpid];
        while let Some(at) = frontier.pop() {
            for (index, (a, b)) in self.topo.links.iter().enumerate() {
                if self.cut.contains(&index) {
                    continue;
                }
                let next = if a.dpid == at {
                    b.dpid
                } else if b.dpid == at {
                    a.dpid
                } else {
                    continue;
                };
                if seen.insert(next) {
                    frontier.push(next);
                }
            }
        }
        seen
    }

    /// The ordered pairs of hosts that must talk.
    pub(super) fn expected(&self) -> BTreeSet<(u8, u8)> {
        let hosts = self.hosts();
        let mut pairs = BTreeSet::new();
        for &a in &hosts {
            let joined = self.reachable_switches(self.port_of(a).dpid);
            for &b in &hosts {
                if a == b || !joined.contains(&self.port_of(b).dpid) {
                    continue;
                }
                if self
                    .slices
                    .values()
                    .any(|slice| self.bound_in(slice, a) && self.bound_in(slice, b))
                {
                    pairs.insert((a, b));
                }
            }
        }
        pairs
    }

    /// The links the controller must know: both directions of every cable that is up.
    pub(super) fn live_links(&self) -> BTreeSet<(String, String)> {
        let mut links = BTreeSet::new();
        for (index, (a, b)) in self.topo.links.iter().enumerate() {
            if !self.cut.contains(&index) {
                links.insert((a.slice_name(), b.slice_name()));
                links.insert((b.slice_name(), a.slice_name()));
            }
        }
        links
    }

    /// Records what `op` did.
    pub(super) fn apply(&mut self, op: &Op) -> anyhow::Result<()> {
        fn slice<'s>(
            slices: &'s mut BTreeMap<String, BTreeMap<Port, BTreeSet<u8>>>,
            name: &str,
        ) -> anyhow::Result<&'s mut BTreeMap<Port, BTreeSet<u8>>> {
            slices
                .get_mut(name)
                .with_context(|| format!("the model has no slice {name}"))
        }
        match op {
            Op::CreateSlice(name) => {
                self.slices.insert(name.clone(), BTreeMap::new());
            }
            Op::DeleteSlice(name) => {
                self.slices.remove(name);
            }
            Op::AddPort { slice: name, port } => {
                slice(&mut self.slices, name)?.insert(*port, BTreeSet::new());
            }
            Op::DeletePort { slice: name, port } => {
                slice(&mut self.slices, name)?.remove(port);
            }
            // Adding a MAC address adds its port when the slice lacks it.
            Op::Bind {
                slice: name,
                host,
                port,
            } => {
                slice(&mut self.slices, name)?
                    .entry(*port)
                    .or_default()
                    .insert(*host);
            }
            Op::Unbind {
                slice: name,
                host,
                port,
            } => {
                if let Some(held) = slice(&mut self.slices, name)?.get_mut(port) {
                    held.remove(host);
                }
            }
            Op::CutCable(index) => {
                self.cut.insert(*index);
            }
            Op::RestoreCable(index) => {
                self.cut.remove(index);
            }
            Op::RestartController { .. } | Op::KillMaster => {}
        }
        Ok(())
    }

    /// The slices, as the failure message shows them.
    pub(super) fn describe(&self) -> String {
        if self.slices.is_empty() {
            return "no slices".into();
        }
        self.slices
            .iter()
            .map(|(name, ports)| {
                let ports: Vec<String> = ports
                    .iter()
                    .map(|(port, macs)| {
                        let macs: Vec<String> = macs.iter().map(|h| format!("h{h}")).collect();
                        format!("{}[{}]", port.slice_name(), macs.join(","))
                    })
                    .collect();
                format!("{name}: {}", ports.join(" "))
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// One random operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Op {
    CreateSlice(String),
    DeleteSlice(String),
    AddPort {
        slice: String,
        port: Port,
    },
    DeletePort {
        slice: String,
        port: Port,
    },
    /// `host`'s MAC address at `port`: its own port, or another host's (the wrong port:
    /// the host is elsewhere, so the binding must let it talk to nobody).
    Bind {
        slice: String,
        host: u8,
        port: Port,
    },
    Unbind {
        slice: String,
        host: u8,
        port: Port,
    },
    CutCable(usize),
    RestoreCable(usize),
    /// Stop the controller (SIGKILL when `crash`, else SIGTERM) and start it again on the
    /// same data directory and ports.
    RestartController {
        crash: bool,
    },
    /// `kill -9` of the master of a cluster, then its restart. Drawn only in `random-cluster` (see `draw`); `random` runs one sliced.
    KillMaster,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::CreateSlice(name) => write!(f, "create slice {name}"),
            Op::DeleteSlice(name) => write!(f, "delete slice {name}"),
            Op::AddPort { slice, port } => write!(f, "add port {} to {slice}", port.slice_name()),
            Op::DeletePort { slice, port } => {
                write!(f, "delete port {} from {slice}", port.slice_name())
            }
            Op::Bind { slice, host, port } => {
                write!(f, "bind h{host} at {} in {slice}", port.slice_name())
            }
            Op::Unbind { slice, host, port } => {
                write!(f, "unbind h{host} at {} in {slice}", port.slice_name())
            }
            Op::CutCable(_) | Op::RestoreCable(_) => write!(f, "{self:?}"),
            Op::RestartController { crash: true } => write!(f, "kill -9 sliced and restart it"),
            Op::RestartController { crash: false } => write!(f, "stop sliced and restart it"),
            Op::KillMaster => write!(f, "kill -9 the master and restart it"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::e2e::topologies::MESH4X2;

    fn model() -> Model {
        Model::new(MESH4X2.parse().unwrap())
    }

    fn bind(model: &mut Model, slice: &str, host: u8, port: Port) {
        model
            .slices
            .entry(slice.into())
            .or_default()
            .entry(port)
            .or_default()
            .insert(host);
    }

    #[test]
    fn hosts_bound_at_their_own_ports_in_one_slice_talk_both_ways() {
        let mut model = model();
        assert!(model.expected().is_empty());
        let (p1, p4) = (model.port_of(1), model.port_of(4));
        bind(&mut model, "a", 1, p1);
        assert!(model.expected().is_empty(), "one member talks to nobody");
        bind(&mut model, "a", 4, p4);
        assert_eq!(model.expected(), BTreeSet::from([(1, 4), (4, 1)]));
        // In two different slices they do not.
        let mut apart = Model::new(model.topo.clone());
        bind(&mut apart, "a", 1, p1);
        bind(&mut apart, "b", 4, p4);
        assert!(apart.expected().is_empty());
    }

    #[test]
    fn a_binding_at_the_wrong_port_lets_nobody_talk() {
        let mut model = model();
        let (p1, p3) = (model.port_of(1), model.port_of(3));
        bind(&mut model, "a", 1, p1);
        // h2's MAC address at h3's port: h2 is not there, h3 is not bound.
        bind(&mut model, "a", 2, p3);
        assert!(model.expected().is_empty());
    }

    #[test]
    fn a_switch_cut_off_by_its_cables_reaches_nobody() {
        let mut model = model();
        for host in [1, 3] {
            let port = model.port_of(host);
            bind(&mut model, "a", host, port);
        }
        // Every cable of s1 (indices 0, 1, 2 of MESH4X2) cut: h1 on s1 is alone.
        model.cut.extend([0, 1]);
        assert_eq!(model.expected().len(), 2, "one cable of s1 is still up");
        model.cut.insert(2);
        assert!(model.expected().is_empty());
        assert_eq!(model.live_links().len(), 6);
    }
}
