//! What operators see: switches, links, hosts and paths, as plain data.

use super::*;

impl Engine {
    pub fn switches(&self) -> Vec<SwitchView> {
        self.topology
            .dpids()
            .map(|dpid| SwitchView {
                dpid,
                name: format!("{dpid:#x}"),
                version: self
                    .topology
                    .switch_version(dpid)
                    .map(u8::from)
                    .unwrap_or_default(),
                ports: self
                    .topology
                    .ports(dpid)
                    .map(|(port_no, state)| PortView {
                        port_no,
                        name: state.name.clone(),
                        live: state.live,
                    })
                    .collect(),
                packet_in_meter: self.packet_in_meters.contains(&dpid),
                pipeline_entries: self.proactive.entries_held(dpid),
                dropped: self.dropped.get(&dpid).cloned().unwrap_or_default(),
            })
            .collect()
    }

    /// The slice membership the engine judges traffic by.
    pub fn membership(&self) -> &Membership {
        &self.membership
    }

    pub fn links(&self) -> Vec<Link> {
        self.topology.links().collect()
    }

    /// Where links may form: the declared fabric and which of its cables are not up both
    /// ways, or the discovery window when nothing is declared.
    pub fn fabric(&self) -> FabricView {
        let declared = self.config.fabric.entries();
        let up = |a: PortId, b: PortId| {
            self.topology.link_from(a) == Some(b) && self.topology.link_from(b) == Some(a)
        };
        let down = declared
            .iter()
            .filter_map(|entry| match entry {
                FabricEntry::Cable(a, b) if !up(*a, *b) => Some(entry.to_string()),
                _ => None,
            })
            .collect();
        let discovered = !self.config.fabric.is_declared();
        let refused = self
            .guard
            .refused_pairs()
            .into_iter()
            .map(|(src, dst)| Link { src, dst })
            .collect();
        FabricView {
            mode: if self.config.fabric.is_unreadable() {
                "unreadable"
            } else if discovered {
                "discovered"
            } else {
                "declared"
            },
            source: match (discovered, self.fabric_in_settings) {
                (true, _) => None,
                (false, true) => Some("settings"),
                (false, false) => Some("api"),
            },
            declared: declared.iter().map(ToString::to_string).collect(),
            down,
            refused,
            discovery_window_secs: discovered.then_some(self.config.discovery_window.as_secs()),
        }
    }

    /// The hosts the controller heard, and on the pipeline also the bound hosts it
    /// serves (whose frames it never sees): each at the one live edge port it is bound at.
    pub fn hosts(&self) -> Vec<HostView> {
        let mut hosts: Vec<HostView> = self
            .hosts
            .iter()
            .map(|(mac, port)| HostView {
                mac,
                port,
                ip_addresses: self.hosts.addresses(&mac).to_vec(),
            })
            .collect();
        let heard: HashSet<MacAddress> = hosts.iter().map(|host| host.mac).collect();
        hosts.extend(
            self.proactive
                .served_at()
                .filter(|(mac, _)| !heard.contains(mac))
                .map(|(mac, port)| HostView {
                    mac,
                    port,
                    ip_addresses: Vec::new(),
                }),
        );
        hosts.sort_by_key(|host| (host.port, host.mac));
        hosts
    }

    pub fn paths(&self) -> Vec<PathView> {
        let mut paths: Vec<PathView> = self
            .paths
            .values()
            .map(|path| PathView {
                src: path.src.mac,
                dst: path.dst.mac,
                hops: path
                    .hops
                    .iter()
                    .flat_map(|hop| {
                        [
                            PortId::new(hop.dpid, hop.in_port),
                            PortId::new(hop.dpid, hop.out_port),
                        ]
                    })
                    .collect(),
                adopted: false,
            })
            .collect();
        // Flows kept from a read-back serve their pair too, until a path of the engine's
        // own supersedes them; a flow table gives no hop order, so theirs go by switch.
        paths.extend(
            self.adopted
                .iter()
                .filter(|(pair, _)| !self.paths.contains_key(pair))
                .map(|(&(src, dst), flows)| {
                    let mut flows: Vec<&AdoptedFlow> = flows.iter().collect();
                    flows.sort_by_key(|flow| (flow.dpid, flow.in_port, flow.out_port));
                    PathView {
                        src,
                        dst,
                        hops: flows
                            .iter()
                            .flat_map(|flow| {
                                [
                                    PortId::new(flow.dpid, flow.in_port),
                                    PortId::new(flow.dpid, flow.out_port),
                                ]
                            })
                            .collect(),
                        adopted: true,
                    }
                }),
        );
        paths.sort_by_key(|path| (path.src, path.dst));
        paths
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SwitchView {
    pub dpid: u64,
    pub name: String,
    pub version: u8,
    pub ports: Vec<PortView>,
    /// Whether the switch drops PACKET_INs over the rate itself, with a meter on its
    /// table-miss flow (1.3 switches with meters), on top of the controller's limits.
    pub packet_in_meter: bool,
    /// How many entries of the proactive pipeline the switch holds, as far as the
    /// controller knows; null where the network runs per-pair flows, or before the
    /// switch's table was read back.
    pub pipeline_entries: Option<usize>,
    pub dropped: Dropped,
}

/// `GET /topology/fabric`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct FabricView {
    /// "declared": links form on the declared entries only; "discovered": within the
    /// discovery window of a switch, and where a link was; "unreadable": the store holds
    /// a declaration that cannot be read, so the links there stay and none forms.
    pub mode: &'static str,
    /// Where the declaration comes from: "settings" (`--fabric`, `controller.fabric`) or
    /// "api" (`PUT /topology/fabric`, kept in the store); null while links are discovered.
    pub source: Option<&'static str>,
    /// The operator's cables (`0x1:10-0x2:10`) and fabric ports (`0x1:10`).
    pub declared: Vec<String>,
    /// Declared cables whose link is not up both ways: unplugged, miscabled, or a switch
    /// not connected.
    pub down: Vec<String>,
    /// Where genuine probes arrived lately (two rounds of LLDP) but no link may form: a
    /// cable plugged in between running switches, waiting to be declared, or two hosts
    /// relaying probes.
    pub refused: Vec<Link>,
    /// Without a declaration, how long after connecting a switch discovers its links.
    pub discovery_window_secs: Option<u64>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct PortView {
    pub port_no: u32,
    pub name: String,
    pub live: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HostView {
    pub mac: MacAddress,
    pub port: PortId,
    /// What the host announced in ARP and neighbour discovery, most recent first: its
    /// own unverified claim, for display only.
    pub ip_addresses: Vec<std::net::IpAddr>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct PathView {
    pub src: MacAddress,
    pub dst: MacAddress,
    /// In order along the path; for adopted flows, by switch.
    pub hops: Vec<PortId>,
    /// Kept from the switches' flow tables at a (re)connect or takeover rather than set
    /// up by this instance: shown only when true, so a path's shape is as it always was.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub adopted: bool,
}

impl Serialize for Link {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut link = serializer.serialize_struct("Link", 2)?;
        link.serialize_field("src", &self.src)?;
        link.serialize_field("dst", &self.dst)?;
        link.end()
    }
}
