//! Switches and their ports coming and going, the probes sent out of them, and what
//! is counted against each.

use super::*;

impl Engine {
    /// A signed probe out of `port`, sent at `now`.
    pub(super) fn probe(&mut self, port: PortId, now: Instant) {
        let proof = self.config.probe_key.sign(port.dpid, port.port_no, now);
        self.guard.probe_sent(port, proof.nonce, now);
        self.send(
            port.dpid,
            Command::Discovery {
                port_no: port.port_no,
                proof,
            },
        );
    }

    /// The probe the engine would send out of `from` at `now`, as it arrives elsewhere.
    pub fn probe_from(&self, from: PortId, now: Instant) -> Probe {
        Probe {
            dpid: from.dpid,
            port_no: from.port_no,
            proof: Some(self.config.probe_key.sign(from.dpid, from.port_no, now)),
        }
    }

    /// Counts a drop for `dpid` and logs it, at most once per switch and cause per
    /// [`crate::limits::LOG_EVERY`].
    pub(super) fn count_drop(&mut self, dpid: u64, cause: DropCause, count: u64, now: Instant) {
        let Some(dropped) = self.dropped.get_mut(&dpid) else {
            return;
        };
        let counter = match cause {
            DropCause::UnsignedLldp => &mut dropped.lldp_unsigned,
            DropCause::ForgedLldp => &mut dropped.lldp_forged,
            DropCause::StaleLldp => &mut dropped.lldp_stale,
            DropCause::LldpAtHostPort => &mut dropped.lldp_at_host_port,
            DropCause::LldpOffFabric => &mut dropped.lldp_off_fabric,
            DropCause::LinkControl => &mut dropped.link_control_frames,
            DropCause::HostRefused => &mut dropped.hosts_refused,
            DropCause::HostSpoofed => &mut dropped.hosts_spoofed,
            DropCause::HostAgedOut => &mut dropped.hosts_aged_out,
            DropCause::PortRefused => &mut dropped.ports_refused,
            DropCause::PacketInRateLimited => &mut dropped.packet_ins_rate_limited,
            DropCause::TableFull => &mut dropped.flow_mods_table_full,
            DropCause::BundleRefused => &mut dropped.bundles_refused,
        };
        *counter += count;
        let total = *counter;
        let log = self.drop_logs.entry((dpid, cause)).or_default();
        if let Some(since) = log.note(count, now) {
            log::warn!(
                "switch {dpid:#x}: {} ({since} since the last report, {total} in all)",
                cause.describe()
            );
        }
    }

    /// The connection of `dpid` refused `count` PACKET_INs over its rate.
    pub fn packet_ins_rate_limited(&mut self, dpid: u64, count: u64, now: Instant) {
        self.metrics.packet_ins.rate_limited.inc_by(count);
        self.count_drop(dpid, DropCause::PacketInRateLimited, count, now);
    }

    /// Whether the table-miss flow of `dpid` passes a meter that drops PACKET_INs over
    /// the rate in the switch itself (OpenFlow 1.3 switches with meters).
    pub fn set_packet_in_meter(&mut self, dpid: u64, metered: bool) {
        if !self.topology.has_switch(dpid) {
            return;
        }
        let changed = if metered {
            self.packet_in_meters.insert(dpid)
        } else {
            self.packet_in_meters.remove(&dpid)
        };
        if changed {
            self.pipeline_meter_changed(dpid);
        }
    }

    /// How long after a link went a genuine probe between its two ends wins over the
    /// host traffic seen there meanwhile: two rounds of LLDP (the link's maximum age,
    /// twice), enough for the neighbour's probes to arrive.
    pub(super) fn link_return_grace(&self) -> Duration {
        self.config.link_max_age.max(MIN_PROBE_AGE) * 2
    }

    /// Links at the ports of `dpid` may form for [`EngineConfig::discovery_window`].
    pub(super) fn open_discovery_window(&mut self, dpid: u64, now: Instant) {
        self.guard
            .open_window(dpid, now, now + self.config.discovery_window);
    }

    pub(super) fn link_went(&mut self, link: &Link, now: Instant) {
        let until = now + self.link_return_grace();
        self.guard.link_went(link, until);
    }

    pub fn switch_connected(
        &mut self,
        dpid: u64,
        profile: SwitchProfile,
        ports: BTreeMap<u32, PortState>,
        now: Instant,
    ) {
        if self.topology.has_switch(dpid) {
            // A reconnect: forget what the old connection taught us.
            self.switch_disconnected_at(dpid, now);
        }
        log::info!(
            "switch {dpid:#x} connected (OpenFlow version {:#04x})",
            profile.protocol
        );
        self.topology.add_switch(dpid, profile.protocol, ports);
        self.proactive.switch_connected(dpid, profile.pipeline);
        self.probe_rounds.switch_connected(dpid);
        self.settle_pipeline(dpid, now);
        self.open_discovery_window(dpid, now);
        self.update_mode();
        self.notices.push(Notice::SwitchUp { dpid });
        self.dropped.insert(dpid, Dropped::default());
        // In a cluster the role comes first, so that the switch takes what follows from
        // its master only.
        self.request_role(dpid);
        // No flush: what the switch holds is read back and judged (`flows_read`), so
        // that a restart of the controller drops no established traffic. Adding the
        // table-miss flow again replaces an identical one.
        if profile.needs_table_miss_flow {
            self.table_miss_switches.insert(dpid);
            self.send(dpid, Command::TableMiss);
        }
        self.reconcile(dpid);
        let live: Vec<u32> = self.topology.live_ports(dpid).collect();
        for port_no in live {
            self.probe(PortId::new(dpid, port_no), now);
        }
    }

    pub fn switch_disconnected(&mut self, dpid: u64) {
        self.switch_disconnected_at(dpid, Instant::now());
    }

    /// Like [`Engine::switch_disconnected`], with the engine's clock.
    pub fn switch_disconnected_at(&mut self, dpid: u64, now: Instant) {
        if !self.topology.has_switch(dpid) {
            return;
        }
        log::info!("switch {dpid:#x} disconnected");
        let removed_links = self.topology.remove_switch(dpid);
        for link in &removed_links {
            // The neighbour's end is an edge port now, until the switch is back.
            self.link_went(link, now);
            self.notices.push(Notice::link_down(link));
        }
        for mac in self.hosts.at(|port| port.dpid == dpid) {
            self.notices.push(Notice::HostForgotten { mac });
        }
        self.hosts.remove_at(|port| port.dpid == dpid);
        self.guard.switch_gone(dpid);
        self.holds_gone(dpid, None, now);
        self.dropped.remove(&dpid);
        self.packet_in_meters.remove(&dpid);
        self.role_refused.remove(&dpid);
        if self.switch_roles.remove(&dpid).is_some() {
            self.switch_roles_version += 1;
        }
        self.drop_logs.retain(|(switch, _), _| *switch != dpid);
        self.drops.retain(|_, drop| drop.ingress.dpid != dpid);
        self.drops_per_switch.remove(&dpid);
        self.table_miss_switches.remove(&dpid);
        self.read_back.remove(&dpid);
        self.read_asked.remove(&dpid);
        self.proactive.switch_gone(dpid);
        self.probe_rounds.switch_gone(dpid);
        self.update_mode();
        self.delete_paths_where(|path| path.hops.iter().any(|hop| hop.dpid == dpid));
        self.delete_adopted_where(|_, flow| flow.dpid == dpid);
        self.notices.push(Notice::SwitchDown { dpid });
    }

    pub fn port_changed(&mut self, port: PortId, state: Option<PortState>, now: Instant) {
        let new_port = state.is_some() && !self.topology.has_port(port);
        if new_port && self.topology.port_count(port.dpid) >= self.config.max_ports_per_switch {
            self.count_drop(port.dpid, DropCause::PortRefused, 1, now);
            return;
        }
        let live = state.as_ref().is_some_and(|state| state.live);
        let was_live = self.topology.is_live(port);
        let deleted = state.is_none();
        let removed_links = self.topology.update_port(port, state);
        self.proactive.changed();
        if live && !was_live {
            self.probe(port, now);
        }
        if deleted {
            self.guard.port_deleted(port);
        }
        if !live {
            // Down: whatever is plugged in next starts unclassified (but only the cable
            // it had, or the operator's word, makes it a link end again: see
            // `Engine::probe_received`).
            self.guard.port_gone(port);
            for mac in self.hosts.at(|at| at == port) {
                self.notices.push(Notice::HostForgotten { mac });
            }
            self.hosts.remove_at(|at| at == port);
            self.delete_paths_where(|path| path.uses_port(port));
            self.delete_adopted_where(|_, flow| flow.uses_port(port));
        }
        self.links_removed(&removed_links, now);
        self.links_flapped(&removed_links, link_health::PORT_DOWN_PENALTY, now);
        if deleted {
            self.holds_gone(port.dpid, Some(port.port_no), now);
        }
    }
}
