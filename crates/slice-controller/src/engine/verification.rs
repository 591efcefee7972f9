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
