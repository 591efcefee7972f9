//! What the data-plane verification ([`crate::verification`]) asks of the engine: which
//! switches this instance answers for, and what a read-back made it write.

use super::*;

impl Engine {
    /// The connected switches this instance writes to, whose tables it verifies (none on
    /// a cluster's standby).
    pub fn verified_switches(&self) -> Vec<u64> {
        self.topology
            .dpids()
            .filter(|dpid| self.may_write(*dpid))
            .collect()
    }

    /// Whether this instance reads back and repairs `dpid`'s table.
    pub fn verifies(&self, dpid: u64) -> bool {
        self.topology.has_switch(dpid) && self.may_write(dpid)
    }

    /// Where each bound MAC is served, as the pipeline serves it: at its one bound live
    /// edge port, or, bound at several, at the one it was heard at. From the slices and
    /// the topology, not from what was learned: on the pipeline a bound host's frames
    /// never reach the controller, so after a restart nothing is learned of it, and a
    /// verification judging learned hosts only would prove nothing of it.
    pub fn served_hosts(&self) -> Vec<(MacAddress, PortId)> {
        let mut bound_at: BTreeMap<MacAddress, Vec<PortId>> = BTreeMap::new();
        for host in self.membership.members() {
            if self.topology.is_edge(host.port) {
                bound_at.entry(host.mac).or_default().push(host.port);
            }
        }
        bound_at
            .into_iter()
            .filter_map(|(mac, ports)| match ports.as_slice() {
                [port] => Some((mac, *port)),
                _ => self
                    .hosts
                    .get(&mac)
                    .filter(|heard| ports.contains(heard))
                    .map(|heard| (mac, heard)),
            })
            .collect()
    }

    /// The live ports of `dpid`: where its floods go.
    pub fn live_ports(&self, dpid: u64) -> Vec<u32> {
        self.topology.live_ports(dpid).collect()
    }

    /// Whether this instance is a cluster member that is not the master: it writes to no
    /// switch, so it reads none back either.
    pub fn is_standby(&self) -> bool {
        self.leadership
            .as_ref()
            .is_some_and(|leadership| !leadership.is_master())
    }

    /// Whether `dpid` waits for the retry of a write its full table refused: reading it
    /// back now would write the refused entries again at once, past the retry's wait.
    pub fn refilling(&self, dpid: u64) -> bool {
        self.proactive.refilling(dpid)
    }

    /// The pipeline changes queued for `dpid`, the pipeline brought up to date first:
    /// what a read-back that found the table wrong makes the engine write.
    pub fn pipeline_changes_queued(&mut self, dpid: u64) -> usize {
        self.sync_pipeline();
        self.outbox
            .iter()
            .filter(|(to, _)| *to == dpid)
            .map(|(_, command)| match command {
                Command::Pipeline(changes) => changes.len(),
                _ => 0,
            })
            .sum()
    }
}
