//! In a cluster: the master election as the engine sees it, roles asked of switches
//! and confirmed or refused, and taking a switch over on becoming master.

use super::*;

impl Engine {
    /// This instance's place in the master election changed (in a cluster; a single
    /// instance never calls this). The first call makes the engine a cluster member:
    /// from then on it writes to switches only as master. Becoming master claims every
    /// connected switch with the new generation and takes it over; standing by asks
    /// every switch to make this instance its slave.
    pub fn set_leadership(&mut self, leadership: Leadership, now: Instant) {
        if self.leadership.as_ref() == Some(&leadership) {
            return;
        }
        self.recheck_asked = false;
        self.known_generation = self.known_generation.max(leadership.generation());
        match &leadership {
            Leadership::Master { generation } => {
                log::info!("became master of the network (generation {generation})");
            }
            Leadership::Standby { master, .. } => log::info!(
                "standing by; master is {}",
                master.as_deref().unwrap_or("not known")
            ),
        }
        let was_master = self.leadership.as_ref().is_some_and(Leadership::is_master);
        self.leadership = Some(leadership);
        // A new generation is a new claim: switches that refused the old one are asked
        // again.
        self.role_refused.clear();
        let dpids: Vec<u64> = self.topology.dpids().collect();
        for &dpid in &dpids {
            self.request_role(dpid);
        }
        if self.leadership.as_ref().is_some_and(Leadership::is_master) {
            for dpid in dpids {
                self.take_over_switch(dpid, now);
            }
        } else if was_master {
            // Whatever the engine was doing as master stops here; the next master
            // rebuilds it.
            self.delete_paths_quietly();
        }
    }

    /// Asks `dpid` for the role this instance has now (in a cluster). A standby that
    /// knows no generation yet asks nothing: 1.3 switches would refuse a SLAVE request
    /// without a current generation, and it writes nothing meanwhile anyway.
    pub(super) fn request_role(&mut self, dpid: u64) {
        let request = match &self.leadership {
            Some(Leadership::Master { generation }) => Some((Role::Master, *generation)),
            Some(Leadership::Standby { .. }) => self
                .known_generation
                .map(|generation| (Role::Slave, generation)),
            None => None,
        };
        if let Some((role, generation)) = request {
            self.send(dpid, Command::SetRole { role, generation });
        }
    }

    /// This instance just became master of a switch it already knew: it makes sure the
    /// switch sends it what misses the flow table, and learns the links at once instead
    /// of at the next tick.
    pub(super) fn take_over_switch(&mut self, dpid: u64, now: Instant) {
        if self.table_miss_switches.contains(&dpid) {
            self.send(dpid, Command::TableMiss);
        }
        // What the previous master installed stays where the slices still allow it.
        self.settle_pipeline(dpid, now);
        self.open_discovery_window(dpid, now);
        self.reconcile(dpid);
        let live: Vec<u32> = self.topology.live_ports(dpid).collect();
        for port_no in live {
            self.probe(PortId::new(dpid, port_no), now);
        }
    }

    /// Forgets the installed paths without deleting their flows: a deposed master must
    /// not write, and the flows are the next master's to keep or remove.
    pub(super) fn delete_paths_quietly(&mut self) {
        for &(src, dst) in self.paths.keys() {
            self.notices.push(Notice::PathDeleted { src, dst });
        }
        self.paths.clear();
        self.adopted.clear();
        self.adopted_unchecked.clear();
        self.read_back.clear();
        self.drops.clear();
        self.drops_per_switch.clear();
    }

    /// The switch confirmed the role it gives this instance.
    pub fn role_changed(&mut self, dpid: u64, role: Role) {
        if !self.topology.has_switch(dpid) {
            return;
        }
        log::info!(
            "switch {dpid:#x} confirms this instance as {}",
            role.describe()
        );
        if self.switch_roles.insert(dpid, role) != Some(role) {
            self.switch_roles_version += 1;
        }
    }

    /// The switch refused this instance's role request. Whatever the reason, this
    /// instance writes nothing to it until it wins a later election: a stale generation
    /// means a newer master claimed it than this instance knows of, and a switch that
    /// cannot give roles (a 1.0 switch without Open vSwitch's extension) cannot be
    /// shared safely by a cluster. The switch keeps the role it gave before: EQUAL on a
    /// new connection, SLAVE where this instance was its master (the newer master
    /// demoted it), which is what the cluster view shows. Returns whether to ask the
    /// election to read the current generation from etcd: after a stale refusal, once
    /// per change of leadership, so that a switch refusing on and on costs etcd nothing
    /// more; a newer generation found there is a new leadership, which asks again.
    pub fn role_refused(&mut self, dpid: u64, reason: RoleRefusal) -> bool {
        if !self.topology.has_switch(dpid) {
            return false;
        }
        if reason == RoleRefusal::Stale {
            log::warn!("switch {dpid:#x} refuses this instance's role request: {reason}");
        } else {
            log::error!(
                "switch {dpid:#x} refuses this instance's role request ({reason}): a cluster \
                 needs switches that give roles (OpenFlow 1.3, or Open vSwitch on 1.0); \
                 this instance writes nothing to it"
            );
        }
        self.role_refused.insert(dpid);
        let shown = match self.switch_roles.get(&dpid) {
            Some(Role::Master) => Role::Slave,
            Some(role) => *role,
            None => Role::Equal,
        };
        if self.switch_roles.insert(dpid, shown) != Some(shown) {
            self.switch_roles_version += 1;
        }
        reason == RoleRefusal::Stale && !std::mem::replace(&mut self.recheck_asked, true)
    }

    /// This instance's place in the election; None for a single instance.
    pub fn leadership(&self) -> Option<&Leadership> {
        self.leadership.as_ref()
    }

    /// The role each connected switch confirmed (in a cluster), and a number that
    /// changes whenever they do.
    pub fn switch_roles(&self) -> (&BTreeMap<u64, Role>, u64) {
        (&self.switch_roles, self.switch_roles_version)
    }
}
