//! PACKET_INs: probes to the link guard, frames to learning, flooding within slices
//! and routing between hosts that share one.

use super::*;

impl Engine {
    pub fn packet_in(&mut self, dpid: u64, in_port: u32, frame: Frame, now: Instant) {
        // Links found that waited for their plan may be due: every event with a time
        // looks, so a busy network needs no timer for it.
        self.handle_timeout(now);
        // Only the master acts on traffic (a slave gets none from a switch that knows
        // its role, but an EQUAL one might).
        let counted = &self.metrics.packet_ins;
        if !self.may_write(dpid) {
            counted.ignored.inc();
            return;
        }
        let at = PortId::new(dpid, in_port);
        if let Some(probe) = frame.probe {
            counted.lldp.inc();
            self.probe_received(probe, at, now);
            return;
        }
        // Hosts live on edge ports only.
        if !self.topology.is_edge(at) {
            counted.ignored.inc();
            self.arrived_over_a_link(at, &frame, now);
            return;
        }
        let src = Host {
            port: at,
            mac: frame.src,
        };
        let bound = self.membership.is_member(&src);
        let class = link_guard::classify(frame.src, frame.dst, bound);
        self.guard.saw(at, class);
        if class == FrameClass::LinkControl {
            // Bridges never forward these, and they teach no host.
            self.count_drop(dpid, DropCause::LinkControl, 1, now);
        }
        if matches!(class, FrameClass::NoSender | FrameClass::LinkControl)
            || !self.learn(src, bound, now)
        {
            self.metrics.packet_ins.ignored.inc();
            return;
        }
        // For the operator's eyes only: nothing decides by it.
        if let Some(address) = crate::sender_address::sender_address(&frame.data, frame.src) {
            self.hosts.announced(&frame.src, address);
        }
        if bound && self.proactive.is_active() {
            // Its admission entry is not in place (not yet, or refused by a full table):
            // the pipeline fails closed, and the controller forwards nothing for it.
            self.metrics.packet_ins.ignored.inc();
            return;
        }
        let destination = if link_guard::is_group(frame.dst) {
            None
        } else {
            // On the pipeline a bound host is never learned from traffic: its binding
            // says where it is.
            self.hosts.get(&frame.dst).or_else(|| {
                self.proactive
                    .bound_ports(&frame.dst)
                    .and_then(|ports| ports.first().copied())
            })
        };
        match destination {
            None => {
                self.metrics.packet_ins.flooded.inc();
                self.flood_within_slices(src, frame.data);
            }
            Some(port) => {
                let dst = Host {
                    port,
                    mac: frame.dst,
                };
                self.route(src, dst, frame.data, now);
            }
        }
    }

    /// A frame that arrived at a link end and reached the controller. Without the
    /// pipeline that is the tail of a flow being set up or torn down. On the pipeline
    /// transit sends here what it did not admit: a bound MAC arriving where its frames
    /// never take it (someone on that link sends in its name), counted as spoofed; or a
    /// unicast frame from an address bound nowhere, which no switch of the pipeline
    /// forwards over a link: a host is at the other end, so the link was faked (probes
    /// relayed between two hosts) and goes, with no grace to come back, and both its ends
    /// are host ports until they go down (even while their switches settle).
    fn arrived_over_a_link(&mut self, at: PortId, frame: &Frame, now: Instant) {
        if !self.proactive.is_active() {
            return;
        }
        if self.proactive.bound_ports(&frame.src).is_some() {
            self.count_drop(at.dpid, DropCause::HostSpoofed, 1, now);
            return;
        }
        if link_guard::classify(frame.src, frame.dst, false) != FrameClass::Host {
            return;
        }
        let contradicted = self.topology.remove_links_at(at);
        for link in &contradicted {
            log::warn!(
                "link {} -> {} withdrawn: {} sent unicast over it from {at}, so a host is \
                 behind that port, not a switch",
                link.src,
                link.dst,
                frame.src
            );
            self.link_disowned(link);
        }
        for end in contradicted.iter().flat_map(|link| [link.src, link.dst]) {
            self.guard.saw(end, FrameClass::Host);
        }
    }

    /// `link`, removed from the topology, was never a cable (host traffic over it, or a
    /// declared fabric without it): it goes with everything routed over it, and nothing
    /// of it is remembered to bring it back.
    pub(super) fn link_disowned(&mut self, link: &Link) {
        self.guard.link_contradicted(link);
        self.proactive.changed();
        self.notices.push(Notice::link_down(link));
        self.delete_paths_where(|path| path.uses_link(link));
        self.delete_adopted_where(|_, flow| flow.uses_link(link));
    }

    /// A link exists only where a probe the controller signed within the link's maximum
    /// age arrives, and neither end has carried a host ([`LinkGuard`]): a host can
    /// neither forge a probe nor relay a genuine one into a link. An end that heard
    /// only chatter takes [`PROBES_OVER_CHATTER`] genuine probes.
    pub(super) fn probe_received(&mut self, probe: Probe, at: PortId, now: Instant) {
        let from = PortId::new(probe.dpid, probe.port_no);
        // When the probe says it left (its proof is checked below: a forged one goes).
        let sent = probe.proof.map_or(now, |proof| {
            let age = self.config.probe_key.age(&proof, now);
            now.checked_sub(age).unwrap_or(now)
        });
        let permit = if self.config.fabric.is_unreadable() {
            // Fail closed: the links there stay, and none forms until it is declared anew.
            if self.topology.link_from(from) == Some(at) {
                Permit::Known
            } else {
                Permit::Refused
            }
        } else if self.config.fabric.is_declared() {
            if self.config.fabric.allows(from, at) {
                Permit::Declared
            } else {
                Permit::Refused
            }
        } else {
            self.guard.permit(from, at, sent)
        };
        // On the pipeline a bound host's frames never reach the controller, so no traffic
        // shows it at its port: its binding does.
        let bound_end = self.proactive.is_active()
            && (self.proactive.binds_port(at) || self.proactive.binds_port(from));
        let standing = if permit == Permit::Declared {
            // The operator's word that a cable is there outweighs what hosts seemed to say.
            Standing::Clear
        } else if bound_end {
            Standing::HostPort
        } else {
            self.guard.standing(from, at, now)
        };
        let refused = if standing == Standing::HostPort {
            Some(DropCause::LldpAtHostPort)
        } else {
            // Within the age limit that port's round trip earned (`tick.rs`).
            match probe
                .proof
                .map(|proof| self.probe_verdict(from, &proof, now))
            {
                None => Some(DropCause::UnsignedLldp),
                Some(Verdict::Forged) => Some(DropCause::ForgedLldp),
                Some(Verdict::Stale) => Some(DropCause::StaleLldp),
                Some(Verdict::Genuine) => None,
            }
        };
        if refused == Some(DropCause::StaleLldp) {
            // Late, but over this very link: the cable is there and the switches slow.
            // (To play probes back here one must hold its far end, which a relay that
            // keeps the link alive with timely probes holds anyway.)
            self.topology.link_heard_late(from, at, now);
        }
        // Signed within a discovery window, a probe proves its cable though it comes past
        // its port's age limit, up to the ceiling of any probe's age: a network that
        // answers late (a cold start of hundreds of switches) is found as fast as it
        // answers. Never later: a host that kept a probe from the window must not make a
        // link with it long after (so the window closes for relays at most a ceiling
        // after it closes for senders).
        let discovering = !self.config.fabric.is_declared()
            && !self.config.fabric.is_unreadable()
            && self.guard.sent_in_window(from, at, sent)
            && now.saturating_duration_since(sent) <= self.health.ceiling();
        let refused = refused.filter(|cause| !(*cause == DropCause::StaleLldp && discovering));
        if let Some(cause) = refused {
            self.count_drop(at.dpid, cause, 1, now);
            return;
        }
        if permit == Permit::Refused {
            // A genuine probe, where no cable was declared, or where the window of both
            // switches has closed and no link ever was: two hosts handing each other
            // probes, or a cable plugged in since (the operator declares it, or
            // reconnects a switch).
            log::debug!("probe from {from} at {at}: no link may form there");
            self.guard.refused_probe(from, at, now);
            self.count_drop(at.dpid, DropCause::LldpOffFabric, 1, now);
            return;
        }
        if let Some(delay) = probe
            .proof
            .and_then(|proof| self.guard.probe_delay(from, proof.nonce, now))
        {
            log::debug!("probe {from} -> {at} took {} us", delay.as_micros());
        }
        if standing == Standing::Chatter {
            let nonce = probe.proof.map_or(0, |proof| proof.nonce);
            let max_age = self.config.link_max_age.max(MIN_PROBE_AGE);
            let counted = self.guard.count_probe(from, at, nonce, max_age);
            if counted < PROBES_OVER_CHATTER {
                log::debug!(
                    "probe {counted} of {PROBES_OVER_CHATTER} from {from} at {at}, where \
                     only chatter was heard"
                );
                return;
            }
        }
        if self.topology.is_held(from) || self.topology.is_held(at) {
            log::debug!("probe from {from} at {at}: the link is held out for flapping");
            return;
        }
        for end in self.guard.link_made(from, at) {
            // A link end: what was learned there was passing traffic or chatter.
            for mac in self.hosts.at(|port| port == end) {
                self.forget_host(mac);
            }
        }
        let (new, replaced) = self.topology.link_seen(from, at, now);
        if let Some(old) = replaced {
            self.links_removed(&[old], now);
        }
        if new {
            self.proactive.link_found(now);
            log::info!("link discovered: {from} -> {at}");
            self.notices.push(Notice::LinkUp { src: from, dst: at });
        }
    }

    /// Learns (or refreshes) a host, `bound` in a slice at its port or not; false when its
    /// port or switch is full.
    pub(super) fn learn(&mut self, host: Host, bound: bool, now: Instant) -> bool {
        let limits = HostLimits {
            per_port: self.config.max_hosts_per_port,
            per_switch: self.config.max_hosts_per_switch,
        };
        let impostor = !bound
            && self.proactive.is_active()
            && self.proactive.bound_ports(&host.mac).is_some_and(|ports| {
                ports
                    .iter()
                    .any(|port| *port != host.port && self.topology.is_live(*port))
            });
        if impostor {
            // The pipeline carries the bound host's frames without the controller, so
            // the host table does not know where it is; its binding does.
            self.count_drop(host.port.dpid, DropCause::HostSpoofed, 1, now);
            return false;
        }
        if let Some(home) = self.hosts.get(&host.mac) {
            let bound_at_home = self.membership.is_member(&Host {
                port: home,
                mac: host.mac,
            });
            if home != host.port && bound_at_home && self.topology.is_live(home) {
                // An operator bound this MAC to a port that is still up: a frame with it
                // elsewhere is an impostor, not a move.
                self.count_drop(host.port.dpid, DropCause::HostSpoofed, 1, now);
                return false;
            }
        }
        match self.hosts.learn(host.mac, host.port, now, bound, limits) {
            Learned::Moved(old) => {
                self.proactive.heard(&host.mac);
                log::info!("host {} moved from {old} to {}", host.mac, host.port);
                self.notices.push(Notice::HostMoved {
                    mac: host.mac,
                    from: old,
                    to: host.port,
                });
                self.delete_paths_where(|path| {
                    path.src.mac == host.mac || path.dst.mac == host.mac
                });
                self.delete_adopted_where(|pair, _| pair.0 == host.mac || pair.1 == host.mac);
                // Drops were judged at the old port; the host's peers are judged anew.
                self.lift_drops_of(host.mac);
            }
            Learned::Known => {}
            Learned::New => {
                self.proactive.heard(&host.mac);
                log::debug!("host {} learned at {}", host.mac, host.port);
                self.notices.push(Notice::HostLearned {
                    mac: host.mac,
                    port: host.port,
                });
            }
            Learned::Refused => {
                self.count_drop(host.port.dpid, DropCause::HostRefused, 1, now);
                return false;
            }
        }
        true
    }

    pub(super) fn forget_host(&mut self, mac: MacAddress) {
        if self.hosts.get(&mac).is_some() {
            self.notices.push(Notice::HostForgotten { mac });
        }
        self.hosts.remove(&mac);
        self.proactive.heard(&mac);
        self.lift_drops_of(mac);
        self.delete_paths_where(|path| path.src.mac == mac || path.dst.mac == mac);
        self.delete_adopted_where(|pair, _| pair.0 == mac || pair.1 == mac);
    }

    pub(super) fn may_talk(&self, a: &Host, b: &Host) -> bool {
        !self.config.slicing || self.membership.shares_slice(a, b)
    }

    /// Broadcast and unknown destinations: to the edge ports of the other members of the
    /// sender's slices (every other edge port without slicing), never over links.
    pub(super) fn flood_within_slices(&mut self, src: Host, data: Bytes) {
        let targets: Vec<PortId> = if self.config.slicing {
            self.membership
                .peer_ports(&src)
                .into_iter()
                .filter(|port| self.topology.is_edge(*port))
                .collect()
        } else {
            self.topology
                .edge_ports()
                .filter(|port| *port != src.port)
                .collect()
        };
        // One message per switch: targets come sorted by switch, then port.
        let mut by_switch: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
        for port in targets {
            by_switch.entry(port.dpid).or_default().push(port.port_no);
        }
        for (dpid, out_ports) in by_switch {
            let data = data.clone();
            let command = match out_ports.as_slice() {
                [out_port] => Command::PacketOut {
                    out_port: *out_port,
                    data,
                },
                _ => Command::Flood { out_ports, data },
            };
            self.send(dpid, command);
        }
    }

    pub(super) fn route(&mut self, src: Host, dst: Host, data: Bytes, now: Instant) {
        let counted = &self.metrics;
        if !self.may_talk(&src, &dst) {
            counted.packet_ins.dropped_no_slice.inc();
            counted.flow_setups.inc();
            self.install_drop(src, dst, now);
            return;
        }
        let Some(hops) = self.topology.shortest_path(src.port, dst.port) else {
            counted.packet_ins.ignored.inc();
            log::debug!("no path from {} to {}", src.port, dst.port);
            return;
        };
        counted.packet_ins.routed.inc();
        counted.flow_setups.inc();
        self.supersede_adopted((src.mac, dst.mac), &hops);
        let cookie = FlowKind::path(src.port, dst.port).cookie();
        // Downstream first, so that the packet finds its flows at every switch.
        for (index, hop) in hops.iter().enumerate().rev() {
            self.send(
                hop.dpid,
                Command::FlowAdd {
                    rule: Rule {
                        in_port: hop.in_port,
                        eth_src: src.mac,
                        eth_dst: dst.mac,
                    },
                    out_port: Some(hop.out_port),
                    priority: PATH_PRIORITY,
                    idle_timeout: self.config.idle_timeout,
                    hard_timeout: 0,
                    notify_removal: index == 0,
                    cookie,
                },
            );
        }
        // The triggering packet leaves at the last switch, so it never races the flows.
        if let Some(last) = hops.last() {
            self.send(
                last.dpid,
                Command::PacketOut {
                    out_port: last.out_port,
                    data,
                },
            );
        }
        self.route_generation += 1;
        let path = InstalledPath {
            src,
            dst,
            hops,
            generation: self.route_generation,
        };
        let known = self
            .paths
            .get(&(src.mac, dst.mac))
            .is_some_and(|old| old.hops == path.hops && old.src == src);
        if !known {
            log::info!("Creating path: {}", path.describe());
            self.notices.push(Notice::PathInstalled {
                src: src.mac,
                dst: dst.mac,
            });
        }
        self.paths.insert((src.mac, dst.mac), path);
    }
}
