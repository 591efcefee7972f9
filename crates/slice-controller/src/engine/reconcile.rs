//! Reconciling with what a switch holds: its flow table read back and judged, path
//! flows adopted and followed until they are known to lead somewhere.

use super::*;

/// A path flow found in a switch and kept: tracked so that whatever would withdraw a
/// path the engine installed (the pair forbidden, a port down, a link or the switch
/// gone, the ingress flow expired, a new path for the pair) withdraws it too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct AdoptedFlow {
    pub(super) dpid: u64,
    pub(super) in_port: u32,
    pub(super) out_port: u32,
    /// The bound ports whose hosts the flow was set up for (None without slicing).
    pub(super) endpoints: Option<(PortId, PortId)>,
}

impl AdoptedFlow {
    pub(super) fn uses_port(&self, port: PortId) -> bool {
        (self.dpid == port.dpid && (self.in_port == port.port_no || self.out_port == port.port_no))
            || self
                .endpoints
                .is_some_and(|(src, dst)| src == port || dst == port)
    }

    pub(super) fn uses_link(&self, link: &Link) -> bool {
        PortId::new(self.dpid, self.out_port) == link.src
            || PortId::new(self.dpid, self.in_port) == link.dst
    }
}

/// How far the adopted flows of a pair lead, from the port of its source to the port of
/// its destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Chain {
    /// All the way (or the engine cannot tell the ends: without slicing).
    Whole,
    /// Not there: a switch read back holds no flow where the chain enters it, a flow
    /// leaves by a port that is down, or the chain goes round in a loop.
    Broken,
    /// Into a switch not read back yet, or over a link LLDP has not found (yet).
    Unknown,
}

/// What a read-back decides for one flow.
pub(super) enum Judgement {
    Keep,
    /// An entry of the pipeline: kept, and the sync that follows the read-back diffs it
    /// against what the switch should hold.
    Hold(crate::pipeline::Entry),
    Adopt(HostPair, AdoptedFlow),
    Delete,
}

impl Engine {
    /// Reads the flow table of `dpid` back, to keep what the engine's state allows and
    /// delete the rest when the answer comes ([`Engine::flows_read`]): what every
    /// connect does, and what an instance that takes over a switch asks for.
    pub fn reconcile(&mut self, dpid: u64) {
        // A standby judges nothing: the master reconciles, and a new master does so as
        // it takes over.
        if self.topology.has_switch(dpid) && self.may_write(dpid) {
            // Until the answer comes, what was read there before may be out of date.
            self.read_back.remove(&dpid);
            // A request while one is pending is answered by that one's reply.
            self.read_asked.entry(dpid).or_insert(self.route_generation);
            self.send(dpid, Command::ReadFlows);
        }
    }

    /// The flow table of `dpid`, read back: keeps the engine's table-miss flow and the
    /// path flows of pairs that may still talk (tracked from now on as if the engine had
    /// installed them), and deletes, each exactly, every other flow: foreign ones (any
    /// cookie not ours, any table), drop flows (the next packet is judged afresh), path
    /// flows whose pair the slices no longer allow. A table that could not be read
    /// whole is flushed instead.
    pub fn flows_read(&mut self, dpid: u64, read: FlowsRead, now: Instant) {
        // A read that arrives after this instance was deposed is the next master's.
        if !self.topology.has_switch(dpid) || !self.may_write(dpid) {
            return;
        }
        // This read supersedes what an earlier one adopted here.
        for flows in self.adopted.values_mut() {
            flows.retain(|flow| flow.dpid != dpid);
        }
        self.adopted.retain(|_, flows| !flows.is_empty());
        self.read_back.insert(dpid);
        let asked = self.read_asked.remove(&dpid);
        if !read.complete && read.entries.len() <= MAX_FLOWS_READ && self.proactive.has_judged(dpid)
        {
            // A switch whose pipeline was judged whole since it connected, read again (to
            // verify it) and not answering in time: a loaded one. Its table stays as last
            // judged until the next read; flushing it would black-hole every host and
            // rewrite thousands of entries into a switch already late.
            log::warn!(
                "switch {dpid:#x}: its flow table could not be read whole; kept as last \
                 judged, and read again at the next verification"
            );
            return;
        }
        // The session never hands over more; the engine's own bound does not rely on it.
        if !read.complete || read.entries.len() > MAX_FLOWS_READ {
            log::warn!(
                "switch {dpid:#x}: its flow table could not be read whole (more than \
                 {MAX_FLOWS_READ} flows, or the request refused); deleting every flow instead"
            );
            self.flush(dpid);
            return;
        }
        let named: HashSet<MacAddress> = read
            .entries
            .iter()
            .flat_map(|entry| [entry.eth_src, entry.eth_dst])
            .flatten()
            .collect();
        let bound_ports = self.bound_ports(&named);
        let total = read.entries.len();
        let mut deleted = 0;
        let check_by = now + self.adoption_grace();
        let mut pipeline = std::collections::BTreeSet::new();
        let held_paths: HashSet<(u32, MacAddress, MacAddress)> = read
            .entries
            .iter()
            .filter(|entry| {
                matches!(
                    FlowKind::of_cookie(entry.cookie),
                    Some(FlowKind::Path { .. })
                )
            })
            .filter_map(|entry| Some((entry.in_port?, entry.eth_src?, entry.eth_dst?)))
            .collect();
        for entry in read.entries {
            match self.judge(dpid, &entry, &bound_ports) {
                Judgement::Keep => {}
                Judgement::Hold(held) => {
                    pipeline.insert(held);
                }
                Judgement::Adopt(key, flow) => {
                    self.adopted.entry(key).or_default().push(flow);
                    self.adopted_unchecked.entry(key).or_insert(check_by);
                }
                Judgement::Delete => {
                    deleted += 1;
                    if FlowKind::of_cookie(entry.cookie) == Some(FlowKind::Drop) {
                        self.forget_drop_read_back(dpid, &entry);
                    }
                    self.send(dpid, Command::FlowDeleteExact(entry.handle));
                }
            }
        }
        self.proactive.holds(dpid, pipeline);
        if let Some(asked) = asked {
            self.withdraw_paths_not_held(dpid, asked, &held_paths);
        }
        log::info!(
            "switch {dpid:#x}: flow table read back: {} of {total} flows kept, {deleted} deleted",
            total - deleted
        );
    }

    /// The paths installed before the read-back of `dpid` was asked for whose flow there
    /// it lacks: the switch refused it (a full table) or lost it, and the path is a black
    /// hole (packets that reach that hop miss over a link, where the controller ignores
    /// them). Withdrawn, the pair's next packet sets up a new path.
    fn withdraw_paths_not_held(
        &mut self,
        dpid: u64,
        asked: u64,
        held: &HashSet<(u32, MacAddress, MacAddress)>,
    ) {
        let lost: Vec<HostPair> = self
            .paths
            .iter()
            .filter(|(_, path)| path.generation <= asked)
            .filter(|((src, dst), path)| {
                path.hops
                    .iter()
                    .any(|hop| hop.dpid == dpid && !held.contains(&(hop.in_port, *src, *dst)))
            })
            .map(|(key, _)| *key)
            .collect();
        for key in lost {
            log::info!(
                "switch {dpid:#x} lacks a flow of the path {} -> {}: withdrawing it",
                key.0,
                key.1
            );
            self.delete_path(key);
        }
    }

    /// What the engine does with one flow of a read-back of `dpid`.
    pub(super) fn judge(
        &self,
        dpid: u64,
        entry: &FlowEntry,
        bound_ports: &HashMap<MacAddress, Vec<PortId>>,
    ) -> Judgement {
        let only_table = entry.table_id == 0;
        match FlowKind::of_cookie(entry.cookie) {
            Some(FlowKind::TableMiss) => {
                let ours = only_table
                    && entry.priority == 0
                    && entry.in_port.is_none()
                    && entry.eth_src.is_none()
                    && entry.eth_dst.is_none()
                    && !entry.other_fields
                    && entry.action == FlowAction::Output(openflow::port::CONTROLLER);
                if ours {
                    Judgement::Keep
                } else {
                    Judgement::Delete
                }
            }
            // The network runs the pipeline: nothing else of it forwards.
            Some(FlowKind::Path { .. }) if self.proactive.is_active() => Judgement::Delete,
            Some(FlowKind::Pipeline) => match &entry.pipeline {
                Some(held) if self.proactive.is_active() => Judgement::Hold(held.clone()),
                _ => Judgement::Delete,
            },
            Some(FlowKind::Path { endpoints }) => {
                let (Some(in_port), Some(src), Some(dst), FlowAction::Output(out_port)) =
                    (entry.in_port, entry.eth_src, entry.eth_dst, entry.action)
                else {
                    return Judgement::Delete;
                };
                let shaped = only_table
                    && entry.priority == PATH_PRIORITY
                    && !entry.other_fields
                    && is_physical(in_port)
                    && is_physical(out_port);
                if !shaped {
                    return Judgement::Delete;
                }
                let key = (src, dst);
                if let Some(path) = self.paths.get(&key) {
                    // The engine's own path for the pair (perhaps installed since the
                    // read was asked for): its hops stay, anything else of the pair goes.
                    let on_path = path
                        .hops
                        .iter()
                        .any(|hop| hop.dpid == dpid && hop.in_port == in_port);
                    return if on_path {
                        Judgement::Keep
                    } else {
                        Judgement::Delete
                    };
                }
                let endpoints = if self.config.slicing {
                    match self.allowed_endpoints(src, dst, endpoints, bound_ports) {
                        Some(found) => Some(found),
                        None => return Judgement::Delete,
                    }
                } else {
                    None
                };
                Judgement::Adopt(
                    key,
                    AdoptedFlow {
                        dpid,
                        in_port,
                        out_port,
                        endpoints,
                    },
                )
            }
            Some(FlowKind::Drop) | None => Judgement::Delete,
        }
    }

    /// The ports `src` and `dst` are bound at, in a slice they share, whose hash is
    /// `endpoints`: where a path flow with that cookie may still lead.
    pub(super) fn allowed_endpoints(
        &self,
        src: MacAddress,
        dst: MacAddress,
        endpoints: u32,
        bound_ports: &HashMap<MacAddress, Vec<PortId>>,
    ) -> Option<(PortId, PortId)> {
        let src_ports = bound_ports.get(&src)?;
        let dst_ports = bound_ports.get(&dst)?;
        src_ports.iter().find_map(|src_port| {
            dst_ports.iter().find_map(|dst_port| {
                let shared = endpoint_hash(*src_port, *dst_port) == endpoints
                    && self.membership.shares_slice(
                        &Host {
                            port: *src_port,
                            mac: src,
                        },
                        &Host {
                            port: *dst_port,
                            mac: dst,
                        },
                    );
                shared.then_some((*src_port, *dst_port))
            })
        })
    }

    /// Each of the `named` MAC addresses that is bound in a slice, with the ports it is
    /// bound at: built once per read-back, so that judging a flow is a lookup rather than
    /// a scan. Only the addresses the read flows name are kept: with a million bindings,
    /// a map of them all took over a third of a second to build (on this 2-core machine),
    /// under the engine's lock, at every switch's connect, where the filtered scan takes
    /// about 20 ms; an empty table (a new switch) needs no scan at all.
    pub(super) fn bound_ports(
        &self,
        named: &HashSet<MacAddress>,
    ) -> HashMap<MacAddress, Vec<PortId>> {
        let mut ports: HashMap<MacAddress, Vec<PortId>> = HashMap::new();
        if named.is_empty() {
            return ports;
        }
        for host in self.membership.members() {
            if named.contains(&host.mac) {
                ports.entry(host.mac).or_default().push(host.port);
            }
        }
        ports
    }

    /// A drop flow a read-back deleted: forget its entry if it is the one remembered.
    pub(super) fn forget_drop_read_back(&mut self, dpid: u64, entry: &FlowEntry) {
        let (Some(in_port), Some(src), Some(dst)) = (entry.in_port, entry.eth_src, entry.eth_dst)
        else {
            return;
        };
        let key = (src, dst);
        if self
            .drops
            .get(&key)
            .is_some_and(|drop| drop.ingress == PortId::new(dpid, in_port))
        {
            self.forget_drop(key);
        }
    }

    /// Deletes every flow of `dpid` and forgets what the engine knew to be there.
    pub(super) fn flush(&mut self, dpid: u64) {
        self.send(dpid, Command::ClearFlows);
        self.proactive.holds(dpid, Default::default());
        if self.table_miss_switches.contains(&dpid) {
            self.send(dpid, Command::TableMiss);
        }
        let drops_here: Vec<HostPair> = self
            .drops
            .iter()
            .filter(|(_, drop)| drop.ingress.dpid == dpid)
            .map(|(key, _)| *key)
            .collect();
        for key in drops_here {
            self.forget_drop(key);
        }
        self.delete_paths_where(|path| path.hops.iter().any(|hop| hop.dpid == dpid));
    }

    /// How long adopted flows may lead into a switch not read back yet, or over a link
    /// not discovered yet: the grace a link that went gets to come back, two rounds of
    /// LLDP, which is also enough for a read-back to be answered.
    pub(super) fn adoption_grace(&self) -> Duration {
        self.link_return_grace()
    }

    /// Follows the adopted flows of a pair from its source's port: see [`Chain`].
    pub(super) fn adopted_chain(&self, flows: &[AdoptedFlow]) -> Chain {
        let Some((src, dst)) = flows.first().and_then(|flow| flow.endpoints) else {
            return Chain::Whole;
        };
        if flows.iter().any(|flow| flow.endpoints != Some((src, dst))) {
            // Flows of one pair set up for different ends: leftovers of several paths.
            return Chain::Broken;
        }
        let mut at = src;
        let mut visited = HashSet::new();
        loop {
            if !visited.insert(at.dpid) {
                return Chain::Broken;
            }
            let Some(flow) = flows
                .iter()
                .find(|flow| flow.dpid == at.dpid && flow.in_port == at.port_no)
            else {
                return if self.read_back.contains(&at.dpid) {
                    Chain::Broken
                } else {
                    Chain::Unknown
                };
            };
            let out = PortId::new(flow.dpid, flow.out_port);
            if out == dst {
                return Chain::Whole;
            }
            if self.topology.has_port(out) && !self.topology.is_live(out) {
                return Chain::Broken;
            }
            match self.topology.link_from(out) {
                Some(next) => at = next,
                None => return Chain::Unknown,
            }
        }
    }

    /// Withdraws the adopted pairs whose flows do not lead all the way, or not yet by
    /// their deadline, so that their next packet misses at the ingress and is routed;
    /// the pairs found whole need no more checking.
    pub(super) fn check_adopted(&mut self, now: Instant) {
        let pending: Vec<(HostPair, Instant)> = self
            .adopted_unchecked
            .iter()
            .map(|(pair, by)| (*pair, *by))
            .collect();
        for (pair, by) in pending {
            let chain = match self.adopted.get(&pair) {
                Some(flows) => self.adopted_chain(flows),
                None => {
                    self.adopted_unchecked.remove(&pair);
                    continue;
                }
            };
            match chain {
                Chain::Whole => {
                    self.adopted_unchecked.remove(&pair);
                }
                Chain::Broken => {
                    log::info!(
                        "adopted flows of {} -> {} do not reach the destination",
                        pair.0,
                        pair.1
                    );
                    self.delete_adopted(pair);
                }
                Chain::Unknown if now >= by => {
                    log::info!(
                        "adopted flows of {} -> {} not seen to reach the destination in time",
                        pair.0,
                        pair.1
                    );
                    self.delete_adopted(pair);
                }
                Chain::Unknown => {}
            }
        }
    }

    /// A new path for `pair` along `hops`: its adopted flows elsewhere go; those at a
    /// hop's switch and input port are replaced by the hop's flow (same match and
    /// priority), so deleting them would delete the new flow.
    pub(super) fn supersede_adopted(&mut self, pair: HostPair, hops: &[Hop]) {
        self.adopted_unchecked.remove(&pair);
        let Some(flows) = self.adopted.remove(&pair) else {
            return;
        };
        for flow in flows {
            let replaced = hops
                .iter()
                .any(|hop| hop.dpid == flow.dpid && hop.in_port == flow.in_port);
            if !replaced {
                self.delete_adopted_flow(pair, &flow);
            }
        }
    }

    pub(super) fn delete_adopted_where(
        &mut self,
        doomed: impl Fn(&HostPair, &AdoptedFlow) -> bool,
    ) {
        let keys: Vec<HostPair> = self
            .adopted
            .iter()
            .filter(|(key, flows)| flows.iter().any(|flow| doomed(key, flow)))
            .map(|(key, _)| *key)
            .collect();
        for key in keys {
            self.delete_adopted(key);
        }
    }

    /// Withdraws every adopted flow of `pair`, as [`Self::delete_path`] does a path.
    pub(super) fn delete_adopted(&mut self, pair: HostPair) {
        self.adopted_unchecked.remove(&pair);
        let Some(flows) = self.adopted.remove(&pair) else {
            return;
        };
        log::info!(
            "Deleting {} adopted flows of {} -> {}",
            flows.len(),
            pair.0,
            pair.1
        );
        for flow in flows {
            self.delete_adopted_flow(pair, &flow);
        }
    }

    pub(super) fn delete_adopted_flow(&mut self, pair: HostPair, flow: &AdoptedFlow) {
        if self.topology.has_switch(flow.dpid) {
            self.send(
                flow.dpid,
                Command::FlowDelete {
                    rule: Rule {
                        in_port: flow.in_port,
                        eth_src: pair.0,
                        eth_dst: pair.1,
                    },
                    priority: PATH_PRIORITY,
                },
            );
        }
    }

    /// How many flows the engine adopted from read-backs and still tracks.
    pub fn adopted_flows(&self) -> usize {
        self.adopted.values().map(Vec::len).sum()
    }
}

#[cfg(test)]
mod tests;
