//! The pipeline judged by what it does: a small simulator walks frames through the
//! entries of every switch, and the hosts that receive them must be exactly the ones a
//! slice allows.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use slice_core::{Host, MacAddress, Membership, PortId, SliceName};

use super::*;

fn mac(n: u32) -> MacAddress {
    let [_, a, b, c] = n.to_be_bytes();
    MacAddress::new([0x02, 0, 0, a, b, c])
}

fn name(text: &str) -> SliceName {
    text.parse().unwrap()
}

/// A network to run frames through: the fabric and each switch's entries.
struct Simulated {
    fabric: Fabric,
    tables: BTreeMap<u64, BTreeSet<Entry>>,
}

/// Where a frame ended up.
#[derive(Debug, Default, PartialEq, Eq)]
struct Fate {
    /// Edge ports it left by.
    delivered: BTreeSet<PortId>,
    /// Ports where it went to the controller.
    to_controller: BTreeSet<PortId>,
}

impl Simulated {
    fn new(fabric: Fabric, membership: &Membership) -> Self {
        let tables = build(&fabric, membership);
        Simulated { fabric, tables }
    }

    /// The one entry of the highest priority in `table` of `dpid` that takes the frame;
    /// two of the same priority taking it would make the switch's choice undefined.
    fn lookup(&self, dpid: u64, table: u8, takes: impl Fn(&EntryMatch) -> bool) -> Option<&Entry> {
        let candidates: Vec<&Entry> = self.tables[&dpid]
            .iter()
            .filter(|entry| entry.table == table && takes(&entry.rule))
            .collect();
        let best = candidates.iter().map(|entry| entry.priority).max()?;
        let top: Vec<&&Entry> = candidates.iter().filter(|e| e.priority == best).collect();
        assert_eq!(top.len(), 1, "overlapping entries in {dpid:#x}: {top:?}");
        Some(top[0])
    }

    /// Sends a frame from `src` to `dst` into the network at `at`.
    fn send(&self, at: PortId, src: MacAddress, dst: MacAddress) -> Fate {
        let mut fate = Fate::default();
        let mut pending = vec![at];
        let mut hops = 0;
        while let Some(arrived) = pending.pop() {
            hops += 1;
            assert!(hops < 1000, "a loop: {src} -> {dst} from {at}");
            let admitted = self.lookup(arrived.dpid, ADMISSION_TABLE, |rule| match *rule {
                EntryMatch::HostAtPort { in_port, mac } => in_port == arrived.port_no && mac == src,
                EntryMatch::LinkPort { in_port } => in_port == arrived.port_no,
                // The simulator sends no LLDP.
                _ => false,
            });
            let admitted = match admitted.map(|entry| &entry.action) {
                Some(EntryAction::ToTransit) => {
                    self.lookup(arrived.dpid, TRANSIT_TABLE, |rule| match *rule {
                        EntryMatch::Sender { in_port, mac } => {
                            in_port == arrived.port_no && mac == src
                        }
                        _ => false,
                    })
                }
                _ => admitted,
            };
            let tag = match admitted.map(|entry| &entry.action) {
                Some(EntryAction::Tag(tag)) => *tag,
                // The table-miss flow of table 0.
                None if admitted.is_none() && !self.fabric.cables.contains_key(&arrived) => {
                    fate.to_controller.insert(arrived);
                    continue;
                }
                // A transit miss: the controller, which forwards nothing.
                None => {
                    fate.to_controller.insert(arrived);
                    continue;
                }
                Some(other) => panic!("admission ends in {other:?}"),
            };
            let group = dst.octets()[0] & 1 == 1;
            let forwarded = self.lookup(arrived.dpid, FORWARDING_TABLE, |rule| match *rule {
                EntryMatch::TaggedTo { tag: t, mac } => t == tag && mac == dst && !group,
                EntryMatch::TaggedToGroup { tag: t } => t == tag && group,
                _ => false,
            });
            let Some(EntryAction::Output(ports)) = forwarded.map(|entry| &entry.action) else {
                continue; // a forwarding miss: dropped
            };
            for &port_no in ports {
                if port_no == arrived.port_no {
                    continue; // a switch never sends a frame back where it came from
                }
                let out = PortId::new(arrived.dpid, port_no);
                match self.fabric.cables.get(&out) {
                    Some(far) => pending.push(*far),
                    None => {
                        assert!(fate.delivered.insert(out), "{out} got the frame twice");
                    }
                }
            }
        }
        fate
    }
}

/// Hosts in slices: (dpid, port, host number, slices).
type Binding<'a> = (u64, u32, u32, &'a [&'a str]);

fn membership(bindings: &[Binding]) -> Membership {
    let mut index = Membership::default();
    for (dpid, port_no, host, slices) in bindings {
        for slice in *slices {
            let slice = name(slice);
            index.add_slice(&slice);
            index.add_port(&slice, PortId::new(*dpid, *port_no));
            index.add_mac(&slice, PortId::new(*dpid, *port_no), mac(*host));
        }
    }
    index
}

/// Every bound host sends to every other and broadcasts; each frame must reach exactly
/// the hosts a slice allows, and never the controller.
fn assert_exactly_the_slices_reach(net: &Simulated, index: &Membership, others: &[Host]) {
    let hosts: Vec<Host> = index
        .members()
        .copied()
        .chain(others.iter().copied())
        .collect();
    for src in index.members() {
        for dst in &hosts {
            if dst == src {
                continue;
            }
            let fate = net.send(src.port, src.mac, dst.mac);
            // Two hosts behind one port meet before the switch (a hub, a bridge).
            let expected: BTreeSet<PortId> = if index.shares_slice(src, dst) && dst.port != src.port
            {
                BTreeSet::from([dst.port])
            } else {
                BTreeSet::new()
            };
            assert_eq!(fate.delivered, expected, "{src:?} -> {dst:?}");
            assert!(
                fate.to_controller.is_empty(),
                "{src:?} -> {dst:?}: {fate:?}"
            );
        }
        let fate = net.send(src.port, src.mac, MacAddress::new([0xff; 6]));
        let expected: BTreeSet<PortId> = index
            .members()
            .filter(|peer| peer.port != src.port && index.shares_slice(src, peer))
            .map(|peer| peer.port)
            .collect();
        assert_eq!(fate.delivered, expected, "broadcast from {src:?}");
    }
}

/// Mininet's `tree,depth=2,fanout=10`: switch 1 the root, its port i cabled to port 11
/// of switch i+1, whose ports 1..=10 hold the hosts.
fn mininet_tree() -> (Fabric, Vec<Host>) {
    let mut fabric = Fabric::default();
    fabric.add_switch(1, []);
    let mut hosts = Vec::new();
    for leaf in 0..10u32 {
        let dpid = u64::from(leaf) + 2;
        fabric.add_switch(dpid, 1..=10);
        fabric.add_link(PortId::new(1, leaf + 1), PortId::new(dpid, 11));
        fabric.add_link(PortId::new(dpid, 11), PortId::new(1, leaf + 1));
        for port_no in 1..=10 {
            hosts.push(Host {
                port: PortId::new(dpid, port_no),
                mac: mac(leaf * 10 + port_no),
            });
        }
    }
    (fabric, hosts)
}

#[test]
fn a_hundred_hosts_in_one_slice_take_about_two_entries_each_per_switch() {
    let (fabric, hosts) = mininet_tree();
    let slice = name("all");
    let mut index = Membership::default();
    index.add_slice(&slice);
    for host in &hosts {
        index.add_port(&slice, host.port);
        index.add_mac(&slice, host.port, host.mac);
    }
    let net = Simulated::new(fabric, &index);
    let sizes: BTreeMap<u64, usize> = net.tables.iter().map(|(d, t)| (*d, t.len())).collect();
    // The root: admission over links (each host over the link from its leaf) and
    // forwarding for each host, one flood entry, one for LLDP, two (LLDP and transit)
    // for each of its ten link ports, and the transit miss.
    assert_eq!(sizes[&1], 100 + 100 + 1 + 1 + 2 * 10 + 1);
    // A leaf: the other leaves' hosts over its one link port, the same forwarding and
    // flood, LLDP, its link port twice, the transit miss, admission at its host ports.
    for dpid in 2..=11 {
        assert_eq!(sizes[&dpid], 90 + 100 + 1 + 1 + 2 + 1 + 10, "leaf {dpid}");
    }
    assert_exactly_the_slices_reach(&net, &index, &[]);
}

#[test]
fn slices_stay_apart_a_host_in_two_reaches_both_and_unbound_hosts_nobody() {
    // A ring of four switches with a chord (two ways around), two host ports on each.
    let mut fabric = Fabric::default();
    for dpid in 1..=4 {
        fabric.add_switch(dpid, [1, 2]);
    }
    for (a, b) in [
        ((1, 3), (2, 4)),
        ((2, 3), (3, 4)),
        ((3, 3), (4, 4)),
        ((4, 3), (1, 4)),
        ((1, 5), (3, 5)),
    ] {
        let (a, b) = (PortId::new(a.0, a.1), PortId::new(b.0, b.1));
        fabric.add_link(a, b);
        fabric.add_link(b, a);
    }
    let index = membership(&[
        (1, 1, 1, &["red"]),
        (2, 1, 2, &["red"]),
        (3, 1, 3, &["blue"]),
        (4, 1, 4, &["blue"]),
        (4, 2, 5, &["red", "blue"]),
        // Two hosts of one slice behind one port, on the same switch as a third.
        (2, 2, 6, &["green"]),
        (2, 2, 7, &["green"]),
        (1, 2, 8, &["green"]),
    ]);
    let unbound = [Host {
        port: PortId::new(3, 2),
        mac: mac(9),
    }];
    let net = Simulated::new(fabric, &index);
    assert_exactly_the_slices_reach(&net, &index, &unbound);

    // The unbound host, and a bound MAC sent from another edge port, go to the
    // controller at the port they arrived at, and nowhere else.
    for (at, src) in [
        (PortId::new(3, 2), mac(9)),
        (PortId::new(3, 2), mac(1)),
        (PortId::new(2, 1), mac(5)),
    ] {
        for dst in [mac(2), MacAddress::new([0xff; 6])] {
            let fate = net.send(at, src, dst);
            assert_eq!(fate.delivered, BTreeSet::new(), "{src} at {at}");
            assert_eq!(fate.to_controller, BTreeSet::from([at]));
        }
    }
}

#[test]
fn over_a_link_a_mac_is_admitted_only_on_the_way_from_its_own_switch() {
    // A triangle; the spanning tree and every shortest path from switch 1 take its
    // direct cables, so its hosts' frames never arrive over the cable between 2 and 3.
    let mut fabric = Fabric::default();
    for dpid in 1..=3 {
        fabric.add_switch(dpid, [1]);
    }
    for (a, b) in [((1, 2), (2, 2)), ((1, 3), (3, 2)), ((2, 3), (3, 3))] {
        let (a, b) = (PortId::new(a.0, a.1), PortId::new(b.0, b.1));
        fabric.add_link(a, b);
        fabric.add_link(b, a);
    }
    let index = membership(&[
        (1, 1, 1, &["red"]),
        (2, 1, 2, &["red"]),
        (3, 1, 3, &["red"]),
    ]);
    let net = Simulated::new(fabric, &index);
    assert_exactly_the_slices_reach(&net, &index, &[]);
    let broadcast = MacAddress::new([0xff; 6]);

    // Host 1's frames where its switch's traffic arrives: delivered.
    for (at, dst) in [(PortId::new(3, 2), mac(3)), (PortId::new(2, 2), mac(2))] {
        let fate = net.send(at, mac(1), dst);
        assert_eq!(fate.delivered, BTreeSet::from([PortId::new(at.dpid, 1)]));
    }
    // Anyone on another link (a fake one, a tap), or on a link into its own switch,
    // sending in host 1's name reaches nobody: the controller hears of it.
    for at in [PortId::new(3, 3), PortId::new(2, 3), PortId::new(1, 2)] {
        for dst in [mac(2), mac(3), broadcast] {
            let fate = net.send(at, mac(1), dst);
            assert_eq!(fate.delivered, BTreeSet::new(), "{at} -> {dst}");
            assert_eq!(fate.to_controller, BTreeSet::from([at]), "{at} -> {dst}");
        }
    }
}

#[test]
fn entries_become_1_3_flow_mods_that_1_0_cannot_carry() {
    let admit = entry(
        ADMISSION_TABLE,
        ADMIT_AT_HOME_PRIORITY,
        EntryMatch::HostAtPort {
            in_port: 1,
            mac: mac(1),
        },
        EntryAction::Tag(7),
    );
    let flow_mod = admit.flow_mod(None);
    assert_eq!(flow_mod.write_metadata, Some(Masked::exact(7)));
    assert_eq!(flow_mod.goto_table, Some(FORWARDING_TABLE));
    assert_eq!(
        FlowKind::of_cookie(flow_mod.cookie),
        Some(FlowKind::Pipeline)
    );
    let flood = entry(
        FORWARDING_TABLE,
        FLOOD_PRIORITY,
        EntryMatch::TaggedToGroup { tag: 7 },
        EntryAction::Output(vec![1, 3]),
    );
    let discovery = entry(
        ADMISSION_TABLE,
        DISCOVERY_PRIORITY,
        EntryMatch::Discovery,
        EntryAction::ToController,
    );
    assert_eq!(discovery.flow_mod(Some(1)).meter_id, Some(1));
    // Probes at a link end have a meter of their own, which no host can send into; a
    // switch without meters gets neither.
    let link_probes = entry(
        ADMISSION_TABLE,
        LINK_DISCOVERY_PRIORITY,
        EntryMatch::LinkDiscovery { in_port: 2 },
        EntryAction::ToController,
    );
    let metered = link_probes.flow_mod(Some(1));
    assert_eq!(metered.meter_id, Some(crate::meter::LINK_PROBE_METER_ID));
    assert_eq!(
        (metered.r#match.in_port, metered.r#match.eth_type),
        (Some(2), Some(0x88cc))
    );
    assert_eq!(link_probes.flow_mod(None).meter_id, None);
    let transit_miss = entry(
        TRANSIT_TABLE,
        TRANSIT_MISS_PRIORITY,
        EntryMatch::TransitMiss,
        EntryAction::ToController,
    );
    assert_eq!(transit_miss.flow_mod(Some(1)).meter_id, Some(1));
    let link_port = entry(
        ADMISSION_TABLE,
        LINK_PORT_PRIORITY,
        EntryMatch::LinkPort { in_port: 2 },
        EntryAction::ToTransit,
    );
    assert_eq!(link_port.flow_mod(None).goto_table, Some(TRANSIT_TABLE));
    for (entry, fits_1_0) in [
        (admit, false),
        (flood, false),
        (discovery, true),
        (link_port, false),
    ] {
        let message = openflow::Message::FlowMod(entry.flow_mod(None));
        let mut out = Vec::new();
        message.emit(openflow::Version::Of13, 1, &mut out).unwrap();
        let (_, parsed) = openflow::Message::parse(&out).unwrap();
        assert_eq!(parsed, message);
        let on_1_0 = message.emit(openflow::Version::Of10, 1, &mut Vec::new());
        assert_eq!(on_1_0.is_ok(), fits_1_0, "{entry:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random graphs (connected or not, with loops) and random slices: every frame
    /// reaches exactly the hosts a slice allows.
    #[test]
    fn any_graph_and_any_slices_reach_exactly_the_allowed_hosts(
        switches in 1u64..6,
        cables in proptest::collection::vec((1u64..6, 1u64..6), 0..8),
        bindings in proptest::collection::vec((1u64..6, 1u32..3, 0usize..4), 0..10),
    ) {
        let mut fabric = Fabric::default();
        for dpid in 1..=switches {
            fabric.add_switch(dpid, [1, 2]);
        }
        let mut next_port: BTreeMap<u64, u32> = BTreeMap::new();
        for (a, b) in cables {
            if a == b || a > switches || b > switches {
                continue;
            }
            let mut port = |dpid: u64| {
                let n = next_port.entry(dpid).or_insert(10);
                *n += 1;
                PortId::new(dpid, *n)
            };
            let (a, b) = (port(a), port(b));
            fabric.add_link(a, b);
            fabric.add_link(b, a);
        }
        const SLICE_SETS: [&[&str]; 4] = [&["red"], &["blue"], &["red", "blue"], &["green"]];
        let mut index = Membership::default();
        for (n, (dpid, port_no, set)) in bindings.into_iter().enumerate() {
            if dpid > switches {
                continue;
            }
            let port = PortId::new(dpid, port_no);
            for slice in SLICE_SETS[set] {
                let slice = name(slice);
                index.add_slice(&slice);
                index.add_port(&slice, port);
                index.add_mac(&slice, port, mac(n as u32 + 1));
            }
        }
        // Unicast between parts the graph does not join cannot arrive: leave those out.
        let net = Simulated::new(fabric, &index);
        let connected = |a: &Host, b: &Host| {
            a.port.dpid == b.port.dpid || net.fabric.next_hops(b.port.dpid).contains_key(&a.port.dpid)
        };
        for src in index.members() {
            for dst in index.members() {
                if dst == src {
                    continue;
                }
                let fate = net.send(src.port, src.mac, dst.mac);
                let reaches = index.shares_slice(src, dst) && connected(src, dst) && dst.port != src.port;
                let expected: BTreeSet<PortId> = if reaches { BTreeSet::from([dst.port]) } else { BTreeSet::new() };
                prop_assert_eq!(fate.delivered, expected, "{:?} -> {:?}", src, dst);
            }
            let fate = net.send(src.port, src.mac, MacAddress::new([0xff; 6]));
            let expected: BTreeSet<PortId> = index
                .members()
                .filter(|peer| peer.port != src.port && index.shares_slice(src, peer) && connected(src, peer))
                .map(|peer| peer.port)
                .collect();
            prop_assert_eq!(fate.delivered, expected, "broadcast from {:?}", src);
        }
    }
}

#[test]
fn every_entry_reads_back_as_itself_and_foreign_flows_as_nothing() {
    let (fabric, _) = mininet_tree();
    let index = membership(&[
        (2, 1, 1, &["red"]),
        (3, 1, 11, &["red", "blue"]),
        (3, 2, 12, &["blue"]),
    ]);
    let tables = build(&fabric, &index);
    let mut kinds = std::collections::HashSet::new();
    for entry in tables.values().flatten() {
        kinds.insert(std::mem::discriminant(&entry.rule));
        // Through the wire, as a read-back would see it.
        let message = openflow::Message::FlowMod(entry.flow_mod(Some(1)));
        let mut out = Vec::new();
        message.emit(openflow::Version::Of13, 1, &mut out).unwrap();
        let Ok((_, openflow::Message::FlowMod(read))) = openflow::Message::parse(&out) else {
            panic!("not a FLOW_MOD");
        };
        assert_eq!(Entry::of_flow_mod(&read).as_ref(), Some(entry));
        let delete = entry.delete_flow_mod();
        assert_eq!(
            (delete.table_id, delete.priority, delete.r#match),
            (read.table_id, read.priority, read.r#match)
        );
    }
    assert_eq!(
        kinds.len(),
        8,
        "every kind of entry was built and read back"
    );

    let admit = tables[&2]
        .iter()
        .find(|e| matches!(e.rule, EntryMatch::HostAtPort { .. }))
        .unwrap();
    let mut foreign = admit.flow_mod(None);
    foreign.cookie = FlowKind::Drop.cookie();
    assert_eq!(Entry::of_flow_mod(&foreign), None, "another kind's cookie");
    let mut outputs = admit.flow_mod(None);
    outputs.actions = vec![openflow::Action::Output {
        port: 3,
        max_len: 0,
    }];
    assert_eq!(
        Entry::of_flow_mod(&outputs),
        None,
        "an admission that outputs"
    );
    let mut wider = admit.flow_mod(None);
    wider.r#match.eth_type = Some(0x0800);
    assert_eq!(
        Entry::of_flow_mod(&wider),
        None,
        "a field the pipeline never sets"
    );
}

#[test]
fn a_diff_adds_what_is_missing_replaces_what_changed_and_deletes_the_rest() {
    let guard = |in_port| {
        entry(
            ADMISSION_TABLE,
            LINK_PORT_PRIORITY,
            EntryMatch::LinkPort { in_port },
            EntryAction::ToTransit,
        )
    };
    let forward = |out| {
        entry(
            FORWARDING_TABLE,
            FORWARD_PRIORITY,
            EntryMatch::TaggedTo {
                tag: 1,
                mac: mac(1),
            },
            EntryAction::Output(vec![out]),
        )
    };
    let admit = |tag| {
        entry(
            ADMISSION_TABLE,
            ADMIT_AT_HOME_PRIORITY,
            EntryMatch::HostAtPort {
                in_port: 7,
                mac: mac(2),
            },
            EntryAction::Tag(tag),
        )
    };
    let held = BTreeSet::from([guard(1), guard(2), forward(3), admit(1)]);
    let wanted = BTreeSet::from([guard(1), guard(4), forward(5), admit(1)]);
    assert_eq!(
        diff(&held, &wanted),
        Diff {
            add: vec![forward(5), guard(4)],
            delete: vec![guard(2)],
        },
        "forwarding goes in before admission; a next hop is replaced in place"
    );
    assert_eq!(diff(&wanted, &wanted), Diff::default());

    // A sender whose tag changes is taken out first, so that it is never tagged the
    // old way while the forwarding entries of the tag's new meaning go in.
    let retagged = BTreeSet::from([guard(1), guard(4), forward(5), admit(2)]);
    assert_eq!(
        diff(&wanted, &retagged),
        Diff {
            add: vec![admit(2)],
            delete: vec![admit(1)],
        }
    );
}

#[test]
fn a_mac_bound_at_two_ports_is_served_only_where_it_was_heard() {
    // A line of three switches; MAC 1 is bound at switch 1 in red and at switch 3 in blue.
    let mut fabric = Fabric::default();
    for dpid in 1..=3 {
        fabric.add_switch(dpid, [1, 2]);
    }
    for (a, b) in [((1, 3), (2, 3)), ((2, 4), (3, 3))] {
        let (a, b) = (PortId::new(a.0, a.1), PortId::new(b.0, b.1));
        fabric.add_link(a, b);
        fabric.add_link(b, a);
    }
    let index = membership(&[
        (1, 1, 1, &["red"]),
        (3, 1, 1, &["blue"]),
        (1, 2, 2, &["red"]),
        (2, 1, 3, &["red"]),
        (3, 2, 4, &["blue"]),
        (2, 2, 5, &["blue"]),
    ]);
    let broadcast = MacAddress::new([0xff; 6]);
    let ports = |list: &[(u64, u32)]| -> BTreeSet<PortId> {
        list.iter().map(|(d, p)| PortId::new(*d, *p)).collect()
    };

    // Not heard yet: neither binding admits it, and nobody reaches it; its frames go to
    // the controller, which learns where it is.
    let net = Simulated::new(fabric.clone(), &index);
    for at in [PortId::new(1, 1), PortId::new(3, 1)] {
        let fate = net.send(at, mac(1), broadcast);
        assert_eq!(fate.delivered, BTreeSet::new());
        assert_eq!(fate.to_controller, BTreeSet::from([at]));
    }
    for (at, src) in [(PortId::new(1, 2), 2), (PortId::new(3, 2), 4)] {
        assert_eq!(net.send(at, mac(src), mac(1)).delivered, BTreeSet::new());
    }

    // Heard at switch 1: it is a red host there, and only there.
    fabric.heard(mac(1), PortId::new(1, 1));
    let net = Simulated::new(fabric, &index);
    let fate = net.send(PortId::new(1, 1), mac(1), broadcast);
    assert_eq!(fate.delivered, ports(&[(1, 2), (2, 1)]));
    for (dst, reached) in [(2, true), (3, true), (4, false), (5, false)] {
        let fate = net.send(PortId::new(1, 1), mac(1), mac(dst));
        assert_eq!(!fate.delivered.is_empty(), reached, "h1 -> {dst}: {fate:?}");
    }
    let fate = net.send(PortId::new(3, 1), mac(1), broadcast);
    assert_eq!(
        fate.delivered,
        BTreeSet::new(),
        "the other binding admits nothing"
    );
    assert_eq!(
        net.send(PortId::new(1, 2), mac(2), mac(1)).delivered,
        ports(&[(1, 1)])
    );
    assert_eq!(
        net.send(PortId::new(3, 2), mac(4), mac(1)).delivered,
        BTreeSet::new()
    );
}
