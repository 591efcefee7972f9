//! Drop flows for pairs that share no slice: installed at the ingress, remembered
//! until their hard timeout, lifted when a slice allows the pair.

use super::*;

impl Engine {
    pub(super) fn install_drop(&mut self, src: Host, dst: Host, now: Instant) {
        self.send(
            src.port.dpid,
            Command::FlowAdd {
                rule: Rule {
                    in_port: src.port.port_no,
                    eth_src: src.mac,
                    eth_dst: dst.mac,
                },
                out_port: None,
                priority: DROP_PRIORITY,
                idle_timeout: 0,
                hard_timeout: self.config.drop_timeout,
                notify_removal: false,
                cookie: FlowKind::Drop.cookie(),
            },
        );
        let drop = InstalledDrop {
            ingress: src.port,
            expires: now + Duration::from_secs(self.config.drop_timeout.into()),
        };
        let key = (src.mac, dst.mac);
        if self.drops.contains_key(&key) {
            self.forget_drop(key);
        }
        let held = self.drops_per_switch.entry(src.port.dpid).or_default();
        if *held < self.config.max_drops_per_switch {
            *held += 1;
            self.drops.insert(key, drop);
        }
    }

    /// Forgets a drop entry (not the flow), keeping the per-switch count true.
    pub(super) fn forget_drop(&mut self, key: HostPair) -> Option<InstalledDrop> {
        let drop = self.drops.remove(&key)?;
        if let Some(held) = self.drops_per_switch.get_mut(&drop.ingress.dpid) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                self.drops_per_switch.remove(&drop.ingress.dpid);
            }
        }
        Some(drop)
    }

    /// Forgets the drop entries whose flows the switches have removed by their hard
    /// timeout (drop flows ask for no FLOW_REMOVED, so no message says so).
    pub(super) fn expire_drops(&mut self, now: Instant) {
        let expired: Vec<HostPair> = self
            .drops
            .iter()
            .filter(|(_, drop)| drop.expires <= now)
            .map(|(key, _)| *key)
            .collect();
        for key in expired {
            self.forget_drop(key);
        }
    }

    /// Removes the drop flows (and entries) involving `mac`, so that its next packet is
    /// judged afresh.
    pub(super) fn lift_drops_of(&mut self, mac: MacAddress) {
        let keys: Vec<HostPair> = self
            .drops
            .keys()
            .filter(|(src, dst)| *src == mac || *dst == mac)
            .copied()
            .collect();
        for key in keys {
            self.lift_drop(key);
        }
    }

    pub(super) fn lift_drop(&mut self, key: HostPair) {
        let Some(drop) = self.forget_drop(key) else {
            return;
        };
        if self.topology.has_switch(drop.ingress.dpid) {
            self.send(
                drop.ingress.dpid,
                Command::FlowDelete {
                    rule: Rule {
                        in_port: drop.ingress.port_no,
                        eth_src: key.0,
                        eth_dst: key.1,
                    },
                    priority: DROP_PRIORITY,
                },
            );
        }
    }

    /// How many drop flows the engine remembers, over all switches.
    pub fn remembered_drops(&self) -> usize {
        self.drops.len()
    }
}

/// What the controller refused from one switch since it connected, by cause.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Dropped {
    /// LLDP probes without a proof (an old-style or hand-made frame).
    pub lldp_unsigned: u64,
    /// LLDP probes whose proof does not verify.
    pub lldp_forged: u64,
    /// Genuine probes too old to count (a replay).
    pub lldp_stale: u64,
    /// LLDP arriving at, or claiming to come from, a port where a host spoke.
    pub lldp_at_host_port: u64,
    /// Genuine probes between ports where no link may form: off the declared fabric, or
    /// past the discovery window between ends that were never a link.
    pub lldp_off_fabric: u64,
    /// Link-local control frames (STP, LACP, 802.1X, CDP...): never forwarded, never
    /// taken as a host.
    pub link_control_frames: u64,
    /// Hosts not learned because their port or switch held its maximum.
    pub hosts_refused: u64,
    /// Frames carrying the MAC of a host bound in a slice at another port that is up:
    /// not learned, so the bound host keeps its place.
    pub hosts_spoofed: u64,
    /// Hosts forgotten after being idle.
    pub hosts_aged_out: u64,
    /// Ports a PORT_STATUS added beyond the maximum.
    pub ports_refused: u64,
    /// PACKET_INs over the switch's rate, dropped by its connection.
    pub packet_ins_rate_limited: u64,
    /// FLOW_MODs the switch refused because its table was full.
    pub flow_mods_table_full: u64,
    /// Bundles of the pipeline the switch refused for another reason than a full
    /// table: it kept the table it had.
    pub bundles_refused: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum DropCause {
    UnsignedLldp,
    ForgedLldp,
    StaleLldp,
    LldpAtHostPort,
    LldpOffFabric,
    LinkControl,
    HostRefused,
    HostSpoofed,
    HostAgedOut,
    PortRefused,
    PacketInRateLimited,
    TableFull,
    BundleRefused,
}

impl DropCause {
    pub(super) fn describe(self) -> &'static str {
        match self {
            Self::UnsignedLldp => "dropped LLDP without a proof",
            Self::ForgedLldp => "dropped LLDP with a forged proof",
            Self::StaleLldp => "dropped a stale (replayed) LLDP probe",
            Self::LldpAtHostPort => "dropped LLDP at or from a port where a host spoke",
            Self::LldpOffFabric => {
                "dropped genuine LLDP between ports where no link may form (not declared, \
                 or past the discovery window)"
            }
            Self::LinkControl => "dropped link-local control frames (STP, LACP, CDP...)",
            Self::HostRefused => "did not learn a host: port or switch at its host limit",
            Self::HostSpoofed => "ignored a frame with a MAC bound at another live port",
            Self::HostAgedOut => "forgot an idle host",
            Self::PortRefused => "ignored a port beyond the per-switch port limit",
            Self::PacketInRateLimited => "dropped PACKET_INs over the rate limit",
            Self::BundleRefused => {
                "refused a bundle of the pipeline: its table stays as it was, to be filled \
                 again later"
            }
            Self::TableFull => {
                "a flow table is full: entries refused, to be retried (traffic they would \
                 carry is dropped meanwhile)"
            }
        }
    }
}
