use super::*;
use crate::cookie::FlowKind;
use openflow::Version;
use slice_core::{Port, Slice, SliceName};

/// A fixed probe secret, so that tests can compute the probes the engine must send.
pub(super) fn key() -> ProbeKey {
    ProbeKey::with_clock(b"engine test secret", *START, 1_700_000_000_000)
}

/// The made-up clock's start, shared so that expected probes can be computed.
static START: std::sync::LazyLock<Instant> = std::sync::LazyLock::new(Instant::now);

pub(super) fn config() -> EngineConfig {
    EngineConfig {
        probe_key: key(),
        ..EngineConfig::default()
    }
}

pub(super) fn p(dpid: u64, port_no: u32) -> PortId {
    PortId::new(dpid, port_no)
}

pub(super) fn mac(last: u8) -> MacAddress {
    MacAddress::new([0, 0, 0, 0, 0, last])
}

/// A switch that needs a table-miss flow (an OpenFlow 1.3 one), and one that does not.
const NEEDS_TABLE_MISS: SwitchProfile = SwitchProfile {
    needs_table_miss_flow: true,
    protocol: Version::Of13,
    pipeline: false,
};
const SENDS_MISSES: SwitchProfile = SwitchProfile {
    needs_table_miss_flow: false,
    protocol: Version::Of10,
    pipeline: false,
};

pub(super) const BROADCAST: MacAddress = MacAddress::new([0xff; 6]);

pub(super) fn name(text: &str) -> SliceName {
    text.parse().unwrap()
}

pub(super) fn ports(numbers: &[u32]) -> BTreeMap<u32, PortState> {
    numbers
        .iter()
        .map(|n| {
            (
                *n,
                PortState {
                    name: format!("eth{n}"),
                    live: true,
                },
            )
        })
        .collect()
}

/// Slices as (name, [(dpid, port, mac)]).
/// A host in a test slice: (dpid, port_no, last octet of the MAC).
pub(super) type TestHost = (u64, u32, u8);

pub(super) fn membership(slices: &[(&str, &[TestHost])]) -> Membership {
    let slices: Vec<Slice> = slices
        .iter()
        .map(|(slice, hosts)| Slice {
            name: name(slice),
            ports: hosts
                .iter()
                .map(|(dpid, port_no, last)| Port {
                    id: p(*dpid, *port_no),
                    macs: vec![mac(*last)],
                })
                .collect(),
        })
        .collect();
    Membership::from_slices(&slices)
}

/// Switches 1 - 2 - 3 in a line (links on ports 2 and 3), hosts on port 1 of each:
/// h1 (mac 1) on 0x1:1, h2 on 0x2:1, h3 on 0x3:1.
pub(super) fn line(config: EngineConfig, index: Membership) -> Engine {
    let mut engine = Engine::new(config, index);
    for dpid in 1..=3 {
        engine.switch_connected(dpid, NEEDS_TABLE_MISS, ports(&[1, 2, 3]), Instant::now());
    }
    let now = Instant::now();
    for (a, b) in [(p(1, 2), p(2, 2)), (p(2, 3), p(3, 2))] {
        let (from_a, from_b) = (engine.probe_from(a, now), engine.probe_from(b, now));
        engine.packet_in(b.dpid, b.port_no, discovery(from_a), now);
        engine.packet_in(a.dpid, a.port_no, discovery(from_b), now);
    }
    engine.take_commands();
    engine
}

pub(super) fn discovery(probe: Probe) -> Frame {
    Frame {
        dst: MacAddress::new([1, 0x80, 0xc2, 0, 0, 0xe]),
        src: mac(0xee),
        probe: Some(probe),
        data: Bytes::from_static(b"lldp"),
    }
}

pub(super) fn frame(src: u8, dst: MacAddress) -> Frame {
    Frame {
        dst,
        src: mac(src),
        probe: None,
        data: Bytes::from_static(b"payload"),
    }
}

pub(super) fn send(
    engine: &mut Engine,
    at: PortId,
    src: u8,
    dst: MacAddress,
) -> Vec<(u64, Command)> {
    engine.packet_in(at.dpid, at.port_no, frame(src, dst), Instant::now());
    engine.take_commands()
}

pub(super) fn flow_adds(commands: &[(u64, Command)]) -> Vec<(u64, u32, Option<u32>, u16)> {
    commands
        .iter()
        .filter_map(|(dpid, command)| match command {
            Command::FlowAdd {
                rule,
                out_port,
                priority,
                ..
            } => Some((*dpid, rule.in_port, *out_port, *priority)),
            _ => None,
        })
        .collect()
}

pub(super) fn flow_deletes(commands: &[(u64, Command)]) -> Vec<(u64, u32, MacAddress, MacAddress)> {
    commands
        .iter()
        .filter_map(|(dpid, command)| match command {
            Command::FlowDelete { rule, .. } => {
                Some((*dpid, rule.in_port, rule.eth_src, rule.eth_dst))
            }
            _ => None,
        })
        .collect()
}

pub(super) fn packet_outs(commands: &[(u64, Command)]) -> Vec<(u64, u32)> {
    commands
        .iter()
        .flat_map(|(dpid, command)| match command {
            Command::PacketOut { out_port, .. } => vec![(*dpid, *out_port)],
            Command::Flood { out_ports, .. } => {
                out_ports.iter().map(|port| (*dpid, *port)).collect()
            }
            _ => Vec::new(),
        })
        .collect()
}

#[test]
fn a_new_switch_is_read_back_not_cleared_given_a_table_miss_on_1_3_and_probed() {
    let key = key();
    let mut engine = Engine::new(config(), Membership::default());
    let now = Instant::now();
    engine.switch_connected(7, NEEDS_TABLE_MISS, ports(&[1, 2]), now);
    assert_eq!(
        engine.take_commands(),
        vec![
            (7, Command::TableMiss),
            (7, Command::ReadFlows),
            (
                7,
                Command::Discovery {
                    port_no: 1,
                    proof: key.sign(7, 1, now)
                }
            ),
            (
                7,
                Command::Discovery {
                    port_no: 2,
                    proof: key.sign(7, 2, now)
                }
            ),
        ]
    );
    engine.switch_connected(8, SENDS_MISSES, ports(&[1]), now);
    assert_eq!(
        engine.take_commands(),
        vec![
            (8, Command::ReadFlows),
            (
                8,
                Command::Discovery {
                    port_no: 1,
                    proof: key.sign(8, 1, now)
                }
            )
        ],
        "OpenFlow 1.0 sends misses to the controller by itself"
    );
}

#[test]
fn lldp_builds_the_link_graph() {
    let engine = line(EngineConfig::default(), Membership::default());
    let links: Vec<(PortId, PortId)> = engine.links().into_iter().map(|l| (l.src, l.dst)).collect();
    assert_eq!(
        links,
        vec![
            (p(1, 2), p(2, 2)),
            (p(2, 2), p(1, 2)),
            (p(2, 3), p(3, 2)),
            (p(3, 2), p(2, 3))
        ]
    );
}

#[test]
fn a_path_is_installed_hop_by_hop_between_slice_members() {
    let index = membership(&[("blue", &[(1, 1, 1), (3, 1, 3)])]);
    let mut engine = line(EngineConfig::default(), index);
    send(&mut engine, p(3, 1), 3, BROADCAST); // h3 makes itself known
    let commands = send(&mut engine, p(1, 1), 1, mac(3));
    assert_eq!(
        flow_adds(&commands),
        vec![
            (3, 2, Some(1), PATH_PRIORITY),
            (2, 2, Some(3), PATH_PRIORITY),
            (1, 1, Some(2), PATH_PRIORITY)
        ],
        "downstream first"
    );
    assert_eq!(
        packet_outs(&commands),
        vec![(3, 1)],
        "the packet leaves at the last switch"
    );
    assert_eq!(
        engine.paths(),
        vec![PathView {
            src: mac(1),
            dst: mac(3),
            hops: vec![p(1, 1), p(1, 2), p(2, 2), p(2, 3), p(3, 2), p(3, 1)],
            adopted: false,
        }]
    );
    let ingress_notifies = commands.iter().any(|(dpid, command)| {
        matches!(command, Command::FlowAdd { notify_removal: true, rule, .. } if *dpid == 1 && rule.in_port == 1)
    });
    assert!(
        ingress_notifies,
        "only the ingress flow reports its removal"
    );
}

#[test]
fn hosts_in_different_slices_are_dropped_at_the_ingress() {
    let index = membership(&[("blue", &[(1, 1, 1)]), ("red", &[(3, 1, 3)])]);
    let mut engine = line(EngineConfig::default(), index);
    send(&mut engine, p(3, 1), 3, BROADCAST);
    let commands = send(&mut engine, p(1, 1), 1, mac(3));
    assert_eq!(flow_adds(&commands), vec![(1, 1, None, DROP_PRIORITY)]);
    assert!(packet_outs(&commands).is_empty());
    assert!(engine.paths().is_empty());
}

#[test]
fn hosts_in_no_slice_reach_nobody() {
    let mut engine = line(EngineConfig::default(), Membership::default());
    assert!(packet_outs(&send(&mut engine, p(1, 1), 1, BROADCAST)).is_empty());
    send(&mut engine, p(3, 1), 3, BROADCAST);
    let commands = send(&mut engine, p(1, 1), 1, mac(3));
    assert!(packet_outs(&commands).is_empty());
    assert_eq!(flow_adds(&commands), vec![(1, 1, None, DROP_PRIORITY)]);
}

#[test]
fn a_broadcast_reaches_only_the_other_members_edge_ports() {
    // h1 and h3 in blue, h2 (0x2:1) in red, a blue port on 0x2:2 which is a link port.
    let index = membership(&[
        ("blue", &[(1, 1, 1), (3, 1, 3), (2, 2, 9)]),
        ("red", &[(2, 1, 2)]),
    ]);
    let mut engine = line(EngineConfig::default(), index);
    let commands = send(&mut engine, p(1, 1), 1, BROADCAST);
    assert_eq!(
        packet_outs(&commands),
        vec![(3, 1)],
        "not red's port, not a link port, not back"
    );
    // An unknown unicast destination is treated the same way.
    let commands = send(&mut engine, p(1, 1), 1, mac(0x42));
    assert_eq!(packet_outs(&commands), vec![(3, 1)]);
}

#[test]
fn a_broadcast_costs_one_message_per_switch_however_many_ports() {
    // h1 on 0x1:1; blue members on ports 2, 3 of 0x1 (beside it) and 1, 4, 5 of 0x3.
    let index = membership(&[(
        "blue",
        &[
            (1, 1, 1),
            (1, 2, 2),
            (1, 3, 3),
            (3, 1, 4),
            (3, 4, 5),
            (3, 5, 6),
        ],
    )]);
    let mut engine = Engine::new(config(), index);
    for dpid in 1..=3 {
        engine.switch_connected(
            dpid,
            NEEDS_TABLE_MISS,
            ports(&[1, 2, 3, 4, 5, 6]),
            Instant::now(),
        );
    }
    engine.take_commands();
    let commands = send(&mut engine, p(1, 1), 1, BROADCAST);
    let messages: Vec<u64> = commands.iter().map(|(dpid, _)| *dpid).collect();
    assert_eq!(messages, [1, 3], "one message for each switch with members");
    assert_eq!(
        packet_outs(&commands),
        vec![(1, 2), (1, 3), (3, 1), (3, 4), (3, 5)]
    );
}

#[test]
fn without_slicing_everyone_is_routed_and_broadcasts_reach_every_edge() {
    let config = EngineConfig {
        slicing: false,
        ..EngineConfig::default()
    };
    let mut engine = line(config, Membership::default());
    let commands = send(&mut engine, p(1, 1), 1, BROADCAST);
    assert_eq!(packet_outs(&commands), vec![(1, 3), (2, 1), (3, 1), (3, 3)]);
    let commands = send(&mut engine, p(3, 1), 3, mac(1));
    assert_eq!(flow_adds(&commands).len(), 3);
}

#[test]
fn removing_a_member_deletes_exactly_its_paths_flows() {
    let index = membership(&[("blue", &[(1, 1, 1), (3, 1, 3), (2, 1, 2)])]);
    let mut engine = line(EngineConfig::default(), index);
    send(&mut engine, p(3, 1), 3, BROADCAST);
    send(&mut engine, p(2, 1), 2, BROADCAST);
    send(&mut engine, p(1, 1), 1, mac(3));
    send(&mut engine, p(1, 1), 1, mac(2));
    send(&mut engine, p(3, 1), 3, mac(1));
    assert_eq!(engine.paths().len(), 3);

    engine.membership_changed(&Change::MacDeleted {
        slice: name("blue"),
        port: p(3, 1),
        mac: mac(3),
    });
    let mut deletes = flow_deletes(&engine.take_commands());
    deletes.sort();
    let mut expected = vec![
        (1, 1, mac(1), mac(3)),
        (2, 2, mac(1), mac(3)),
        (3, 2, mac(1), mac(3)),
        (3, 1, mac(3), mac(1)),
        (2, 3, mac(3), mac(1)),
        (1, 2, mac(3), mac(1)),
    ];
    expected.sort();
    assert_eq!(deletes, expected);
    assert_eq!(engine.paths().len(), 1, "h1 -> h2 stays");
}

#[test]
fn deleting_a_slice_or_a_port_withdraws_its_paths() {
    let index = membership(&[("blue", &[(1, 1, 1), (3, 1, 3)])]);
    let mut engine = line(EngineConfig::default(), index.clone());
    send(&mut engine, p(3, 1), 3, BROADCAST);
    send(&mut engine, p(1, 1), 1, mac(3));
    engine.membership_changed(&Change::PortDeleted {
        slice: name("blue"),
        port: Port {
            id: p(1, 1),
            macs: vec![mac(1)],
        },
    });
    assert_eq!(flow_deletes(&engine.take_commands()).len(), 3);
    assert!(engine.paths().is_empty());

    let mut engine = line(EngineConfig::default(), index);
    send(&mut engine, p(3, 1), 3, BROADCAST);
    send(&mut engine, p(1, 1), 1, mac(3));
    engine.membership_changed(&Change::SliceDeleted(Slice {
        name: name("blue"),
        ports: vec![],
    }));
    assert_eq!(flow_deletes(&engine.take_commands()).len(), 3);
}

#[test]
fn a_membership_that_allows_a_dropped_pair_lifts_the_drop_at_once() {
    let mut engine = line(
        EngineConfig::default(),
        membership(&[("blue", &[(1, 1, 1)])]),
    );
    send(&mut engine, p(3, 1), 3, BROADCAST);
    send(&mut engine, p(1, 1), 1, mac(3));
    engine.membership_changed(&Change::MacAdded {
        slice: name("blue"),
        port: p(3, 1),
        mac: mac(3),
    });
    let commands = engine.take_commands();
    assert_eq!(
        commands,
        vec![(
            1,
            Command::FlowDelete {
                rule: Rule {
                    in_port: 1,
                    eth_src: mac(1),
                    eth_dst: mac(3)
                },
                priority: DROP_PRIORITY
            }
        )]
    );
    let commands = send(&mut engine, p(1, 1), 1, mac(3));
    assert_eq!(flow_adds(&commands).len(), 3, "now routed");
}

#[test]
fn a_failed_link_withdraws_its_paths_and_new_packets_go_around() {
    // A triangle: 1-2 direct on ports 2, and 1-3-2 through ports 3.
    let index = membership(&[("blue", &[(1, 1, 1), (2, 1, 2)])]);
    let mut engine = Engine::new(EngineConfig::default(), index);
    for dpid in 1..=3 {
        engine.switch_connected(dpid, SENDS_MISSES, ports(&[1, 2, 3]), Instant::now());
    }
    let now = Instant::now();
    for (a, b) in [(p(1, 2), p(2, 2)), (p(1, 3), p(3, 2)), (p(3, 3), p(2, 3))] {
        let (from_a, from_b) = (engine.probe_from(a, now), engine.probe_from(b, now));
        engine.packet_in(b.dpid, b.port_no, discovery(from_a), now);
        engine.packet_in(a.dpid, a.port_no, discovery(from_b), now);
    }
    engine.take_commands();
    send(&mut engine, p(2, 1), 2, BROADCAST);
    let commands = send(&mut engine, p(1, 1), 1, mac(2));
    assert_eq!(flow_adds(&commands).len(), 2, "the direct link");

    engine.port_changed(
        p(1, 2),
        Some(PortState {
            name: "eth2".into(),
            live: false,
        }),
        Instant::now(),
    );
    let deletes = flow_deletes(&engine.take_commands());
    assert_eq!(deletes.len(), 2);
    assert!(engine.paths().is_empty());

    let commands = send(&mut engine, p(1, 1), 1, mac(2));
    assert_eq!(
        flow_adds(&commands),
        vec![
            (2, 3, Some(1), PATH_PRIORITY),
            (3, 2, Some(3), PATH_PRIORITY),
            (1, 1, Some(3), PATH_PRIORITY)
        ]
    );
}

#[test]
fn links_that_lldp_stops_confirming_expire_with_their_paths() {
    let index = membership(&[("blue", &[(1, 1, 1), (3, 1, 3)])]);
    let mut engine = line(EngineConfig::default(), index);
    send(&mut engine, p(3, 1), 3, BROADCAST);
    send(&mut engine, p(1, 1), 1, mac(3));
    let later = Instant::now() + Duration::from_secs(10);
    // Three whole rounds of probes go unanswered; the fourth tick finds them missed.
    for _ in 0..3 {
        engine.tick(later);
        assert_eq!(
            engine.links().len(),
            4,
            "not yet: the rounds are not all missed"
        );
    }
    engine.take_commands();
    engine.tick(later);
    let commands = engine.take_commands();
    assert_eq!(flow_deletes(&commands).len(), 3);
    assert!(engine.links().is_empty());
    assert!(commands
        .iter()
        .any(|(_, c)| matches!(c, Command::Discovery { .. })));
}

#[test]
fn a_stall_of_the_controller_alone_expires_no_link() {
    let index = membership(&[("blue", &[(1, 1, 1), (3, 1, 3)])]);
    let mut engine = line(EngineConfig::default(), index);
    send(&mut engine, p(3, 1), 3, BROADCAST);
    send(&mut engine, p(1, 1), 1, mac(3));
    engine.take_commands();
    // One tick, long after the last confirmation: the clock says stale, but no round
    // of probes has gone unanswered yet.
    engine.tick(Instant::now() + Duration::from_secs(60));
    assert_eq!(engine.links().len(), 4);
    assert!(flow_deletes(&engine.take_commands()).is_empty());
}

#[test]
fn rounds_missed_quickly_expire_nothing_until_the_clock_agrees() {
    let index = membership(&[]);
    let mut engine = line(EngineConfig::default(), index);
    // Ticks in a burst, as after a stall: many rounds, no time.
    for _ in 0..10 {
        engine.tick(Instant::now());
    }
    assert_eq!(engine.links().len(), 4);
}

#[test]
fn a_disconnected_switch_takes_its_paths_and_hosts_along() {
    let index = membership(&[("blue", &[(1, 1, 1), (3, 1, 3)])]);
    let mut engine = line(EngineConfig::default(), index);
    send(&mut engine, p(3, 1), 3, BROADCAST);
    send(&mut engine, p(1, 1), 1, mac(3));
    engine.switch_disconnected(2);
    let deletes = flow_deletes(&engine.take_commands());
    let mut deletes = deletes;
    deletes.sort();
    assert_eq!(
        deletes,
        vec![(1, 1, mac(1), mac(3)), (3, 2, mac(1), mac(3))],
        "no command to the switch that is gone"
    );
}

#[test]
fn an_idle_path_is_forgotten_when_its_ingress_flow_expires() {
    let index = membership(&[("blue", &[(1, 1, 1), (3, 1, 3)])]);
    let mut engine = line(EngineConfig::default(), index);
    send(&mut engine, p(3, 1), 3, BROADCAST);
    send(&mut engine, p(1, 1), 1, mac(3));
    engine.flow_removed(
        1,
        Rule {
            in_port: 1,
            eth_src: mac(1),
            eth_dst: mac(3),
        },
        PATH_PRIORITY,
    );
    assert!(engine.paths().is_empty());
    assert_eq!(
        flow_deletes(&engine.take_commands()).len(),
        3,
        "the other hops go too"
    );
}

#[test]
fn a_host_that_moves_loses_its_old_paths() {
    // Unbound hosts move freely (bound ones only when their port is down).
    let routing = EngineConfig {
        slicing: false,
        ..config()
    };
    let mut engine = line(routing, Membership::default());
    send(&mut engine, p(3, 1), 3, BROADCAST);
    send(&mut engine, p(1, 1), 1, mac(3));
    let commands = send(&mut engine, p(2, 1), 1, BROADCAST);
    assert_eq!(flow_deletes(&commands).len(), 3);
    assert_eq!(
        engine
            .hosts()
            .iter()
            .find(|h| h.mac == mac(1))
            .unwrap()
            .port,
        p(2, 1)
    );
}

#[test]
fn traffic_on_link_ports_is_not_mistaken_for_hosts() {
    let index = membership(&[("blue", &[(1, 1, 1), (3, 1, 3)])]);
    let mut engine = line(EngineConfig::default(), index);
    let commands = send(&mut engine, p(2, 2), 7, BROADCAST);
    assert!(commands.is_empty());
    assert!(engine.hosts().is_empty());
}

fn dropped(engine: &Engine, dpid: u64) -> Dropped {
    engine
        .switches()
        .into_iter()
        .find(|switch| switch.dpid == dpid)
        .unwrap()
        .dropped
}

/// Two switches, not cabled, each with host ports 1 and 2.
fn two_switches() -> Engine {
    let mut engine = Engine::new(config(), Membership::default());
    engine.switch_connected(1, NEEDS_TABLE_MISS, ports(&[1, 2]), Instant::now());
    engine.switch_connected(2, NEEDS_TABLE_MISS, ports(&[1, 2]), Instant::now());
    engine.take_commands();
    engine
}

#[test]
fn unsigned_forged_and_stale_probes_make_no_link() {
    let mut engine = two_switches();
    let now = Instant::now();
    let unsigned = Probe {
        dpid: 1,
        port_no: 1,
        proof: None,
    };
    engine.packet_in(2, 1, discovery(unsigned), now);
    let mut forged = engine.probe_from(p(1, 1), now);
    forged.port_no = 2;
    engine.packet_in(2, 1, discovery(forged), now);
    let other_key = ProbeKey::with_clock(b"a guess", *START, 1_700_000_000_000);
    let guessed = Probe {
        proof: Some(other_key.sign(1, 1, now)),
        ..unsigned
    };
    engine.packet_in(2, 1, discovery(guessed), now);
    // A genuine probe, replayed later than a link may go unconfirmed.
    let recorded = engine.probe_from(p(1, 1), now);
    let later = now + config().link_max_age + Duration::from_millis(1);
    engine.packet_in(2, 1, discovery(recorded), later);
    assert!(engine.links().is_empty());
    let counts = dropped(&engine, 2);
    assert_eq!(
        (counts.lldp_unsigned, counts.lldp_forged, counts.lldp_stale),
        (1, 2, 1)
    );
    // A fresh genuine probe does make the link.
    let genuine = engine.probe_from(p(1, 1), later);
    engine.packet_in(2, 1, discovery(genuine), later);
    assert_eq!(engine.links().len(), 1);
}

#[test]
fn genuine_probes_relayed_by_hosts_make_no_link_and_remove_no_host() {
    let mut engine = two_switches();
    let now = Instant::now();
    // Hosts on 0x1:1 and 0x2:1 have spoken to another host: both are host ports.
    send(&mut engine, p(1, 1), 1, mac(2));
    send(&mut engine, p(2, 1), 2, mac(1));
    let rounds = usize::from(PROBES_OVER_CHATTER) + 2;
    for round in 0..rounds {
        let at = now + Duration::from_secs(round as u64);
        let relayed = engine.probe_from(p(1, 1), at);
        engine.packet_in(2, 1, discovery(relayed), at);
        let back = engine.probe_from(p(2, 1), at);
        engine.packet_in(1, 1, discovery(back), at);
        // A silent port relaying a probe from a host port is refused too.
        engine.packet_in(2, 2, discovery(relayed), at);
    }
    assert!(engine.links().is_empty());
    assert_eq!(engine.hosts().len(), 2);
    assert_eq!(dropped(&engine, 2).lldp_at_host_port, 2 * rounds as u64);
    assert_eq!(dropped(&engine, 1).lldp_at_host_port, rounds as u64);
}

#[test]
fn a_bound_host_that_only_multicasts_still_makes_a_host_port() {
    let index = membership(&[("blue", &[(2, 1, 2)])]);
    let mut engine = Engine::new(config(), index);
    for dpid in [1, 2] {
        engine.switch_connected(dpid, NEEDS_TABLE_MISS, ports(&[1, 2]), Instant::now());
    }
    let now = Instant::now();
    // The slice's host at 0x2:1 sends an IPv6 router solicitation, nothing else.
    engine.packet_in(2, 1, frame(2, IPV6_ALL_ROUTERS), now);
    for round in 0..u64::from(PROBES_OVER_CHATTER) + 2 {
        let at = now + Duration::from_secs(round);
        let relayed = engine.probe_from(p(1, 1), at);
        engine.packet_in(2, 1, discovery(relayed), at);
    }
    assert!(engine.links().is_empty());
    assert_eq!(engine.hosts().len(), 1);
}

/// An IPv6 router solicitation's destination, and an MLDv2 report's.
const IPV6_ALL_ROUTERS: MacAddress = MacAddress::new([0x33, 0x33, 0, 0, 0, 2]);
const MLDV2_REPORTS: MacAddress = MacAddress::new([0x33, 0x33, 0, 0, 0, 0x16]);

/// Issue 23: the kernel's IPv6 stack on a switch-side veth (Mininet) sends router
/// solicitations and MLD reports into the neighbouring switch before its first probe.
#[test]
fn chatter_from_the_switches_own_interfaces_does_not_cost_a_cable() {
    let mut engine = two_switches();
    let now = Instant::now();
    // The veth behind 0x1:2 speaks into 0x2:2, and the one behind 0x2:2 into 0x1:2.
    engine.packet_in(2, 2, frame(0x12, IPV6_ALL_ROUTERS), now);
    engine.packet_in(2, 2, frame(0x12, MLDV2_REPORTS), now);
    engine.packet_in(1, 2, frame(0x22, MLDV2_REPORTS), now);
    engine.take_commands();
    let mut links_after = Vec::new();
    for round in 0..u64::from(PROBES_OVER_CHATTER) {
        let at = now + Duration::from_secs(round);
        let (from_1, from_2) = (
            engine.probe_from(p(1, 2), at),
            engine.probe_from(p(2, 2), at),
        );
        engine.packet_in(2, 2, discovery(from_1), at);
        // A recorded probe played again counts once.
        engine.packet_in(2, 2, discovery(from_1), at);
        engine.packet_in(1, 2, discovery(from_2), at);
        links_after.push(engine.links().len());
        // More chatter between the rounds changes nothing.
        engine.packet_in(2, 2, frame(0x12, IPV6_ALL_ROUTERS), at);
    }
    assert_eq!(links_after, [0, 0, 2], "both directions after three rounds");
    assert!(engine.hosts().is_empty(), "the veths were never hosts");
    assert_eq!(dropped(&engine, 1).lldp_at_host_port, 0);
    assert_eq!(dropped(&engine, 2).lldp_at_host_port, 0);
    // A genuine host plugged in elsewhere still makes its port a host port.
    send(&mut engine, p(2, 1), 7, mac(8));
    let relayed = engine.probe_from(p(1, 1), now + Duration::from_secs(3));
    engine.packet_in(2, 1, discovery(relayed), now + Duration::from_secs(3));
    assert_eq!(dropped(&engine, 2).lldp_at_host_port, 1);
}

#[test]
fn link_control_frames_teach_no_host_are_not_flooded_and_leave_the_port_clear() {
    // Without slicing every other edge port would get a flood.
    let unsliced = EngineConfig {
        slicing: false,
        ..config()
    };
    let mut engine = Engine::new(unsliced, Membership::default());
    for dpid in [1, 2] {
        engine.switch_connected(dpid, NEEDS_TABLE_MISS, ports(&[1, 2]), Instant::now());
    }
    engine.take_commands();
    let now = Instant::now();
    let stp = MacAddress::new([0x01, 0x80, 0xc2, 0, 0, 0]);
    let lacp = MacAddress::new([0x01, 0x80, 0xc2, 0, 0, 2]);
    let cdp = MacAddress::new([0x01, 0x00, 0x0c, 0xcc, 0xcc, 0xcc]);
    for dst in [stp, lacp, cdp] {
        engine.packet_in(2, 2, frame(0x12, dst), now);
    }
    assert!(engine.take_commands().is_empty(), "never forwarded");
    assert!(engine.hosts().is_empty());
    assert_eq!(dropped(&engine, 2).link_control_frames, 3);
    // The first genuine probe makes the link, as on a port that heard nothing.
    let probe = engine.probe_from(p(1, 2), now);
    engine.packet_in(2, 2, discovery(probe), now);
    assert_eq!(engine.links().len(), 1);
}

#[test]
fn a_host_port_that_goes_down_and_up_can_become_a_link() {
    let mut engine = two_switches();
    let now = Instant::now();
    send(&mut engine, p(2, 1), 2, BROADCAST);
    let probe = engine.probe_from(p(1, 1), now);
    engine.packet_in(2, 1, discovery(probe), now);
    assert!(engine.links().is_empty());
    for live in [false, true] {
        engine.port_changed(
            p(2, 1),
            Some(PortState {
                name: "eth1".into(),
                live,
            }),
            now,
        );
    }
    assert!(engine.hosts().is_empty(), "the host left with the port");
    let probe = engine.probe_from(p(1, 1), now);
    engine.packet_in(2, 1, discovery(probe), now);
    assert_eq!(engine.links().len(), 1, "re-cabled to a switch");
}

#[test]
fn a_mac_flood_learns_up_to_the_caps_but_bound_hosts_always() {
    let index = membership(&[("blue", &[(1, 1, 200)])]);
    let config = EngineConfig {
        max_hosts_per_port: 3,
        max_hosts_per_switch: 4,
        ..config()
    };
    let mut engine = Engine::new(config, index);
    engine.switch_connected(1, NEEDS_TABLE_MISS, ports(&[1, 2]), Instant::now());
    for last in 1..=10 {
        send(&mut engine, p(1, 1), last, BROADCAST);
        send(&mut engine, p(1, 2), 100 + last, BROADCAST);
    }
    assert_eq!(engine.hosts().len(), 4);
    assert_eq!(dropped(&engine, 1).hosts_refused, 16);
    send(&mut engine, p(1, 1), 200, BROADCAST);
    assert!(engine.hosts().iter().any(|host| host.mac == mac(200)));
}

#[test]
fn idle_hosts_age_out_but_bound_ones_stay() {
    let index = membership(&[("blue", &[(1, 1, 1), (3, 1, 3)])]);
    let mut engine = line(config(), index);
    let start = Instant::now();
    engine.packet_in(2, 1, frame(2, BROADCAST), start);
    engine.packet_in(1, 1, frame(1, BROADCAST), start);
    engine.packet_in(3, 1, frame(3, BROADCAST), start);
    engine.take_commands();
    let later = start + config().host_idle + Duration::from_secs(1);
    engine.tick(later);
    let hosts: Vec<MacAddress> = engine.hosts().iter().map(|host| host.mac).collect();
    assert_eq!(hosts, vec![mac(1), mac(3)], "bound hosts stay");
    assert_eq!(dropped(&engine, 2).hosts_aged_out, 1);
}

#[test]
fn a_port_beyond_the_limit_is_ignored() {
    let config = EngineConfig {
        max_ports_per_switch: 2,
        ..config()
    };
    let mut engine = Engine::new(config, Membership::default());
    engine.switch_connected(1, NEEDS_TABLE_MISS, ports(&[1, 2]), Instant::now());
    let up = PortState {
        name: "eth3".into(),
        live: true,
    };
    engine.port_changed(p(1, 3), Some(up), Instant::now());
    assert_eq!(engine.switches()[0].ports.len(), 2);
    assert_eq!(dropped(&engine, 1).ports_refused, 1);
}

fn packet_in_meter(engine: &Engine, dpid: u64) -> Option<bool> {
    engine
        .switches()
        .into_iter()
        .find(|switch| switch.dpid == dpid)
        .map(|switch| switch.packet_in_meter)
}

#[test]
fn the_packet_in_meter_is_shown_per_switch_until_it_reconnects() {
    let mut engine = two_switches();
    assert_eq!(packet_in_meter(&engine, 1), Some(false));
    engine.set_packet_in_meter(1, true);
    assert_eq!(packet_in_meter(&engine, 1), Some(true));
    assert_eq!(packet_in_meter(&engine, 2), Some(false));
    // A reconnect starts without a meter until its own setup says otherwise.
    engine.switch_connected(1, NEEDS_TABLE_MISS, ports(&[1, 2]), Instant::now());
    assert_eq!(packet_in_meter(&engine, 1), Some(false));
    // A late report for a switch that has gone is not kept.
    engine.switch_disconnected(2);
    engine.set_packet_in_meter(2, true);
    engine.switch_connected(2, NEEDS_TABLE_MISS, ports(&[1, 2]), Instant::now());
    assert_eq!(packet_in_meter(&engine, 2), Some(false));
}

/// Lets every link of `engine` expire: rounds of probes nobody answers, past the age.
fn expire_all_links(engine: &mut Engine, from: Instant) -> Instant {
    let mut now = from;
    for _ in 0..5 {
        now += Duration::from_secs(2);
        engine.tick(now);
    }
    assert!(engine.links().is_empty());
    engine.take_commands();
    now
}

#[test]
fn a_link_port_with_traffic_right_after_its_link_went_still_gets_its_link_back() {
    let mut engine = line(config(), Membership::default());
    let now = expire_all_links(&mut engine, Instant::now());
    // A standalone switch's flood arrives at the former link ends meanwhile.
    engine.packet_in(1, 2, frame(9, BROADCAST), now);
    engine.packet_in(2, 2, frame(9, BROADCAST), now);
    let later = now + Duration::from_millis(500);
    let (from_1, from_2) = (
        engine.probe_from(p(1, 2), later),
        engine.probe_from(p(2, 2), later),
    );
    engine.packet_in(2, 2, discovery(from_1), later);
    engine.packet_in(1, 2, discovery(from_2), later);
    assert_eq!(
        engine.links().len(),
        2,
        "the link between 0x1 and 0x2 is back"
    );
    assert_eq!(dropped(&engine, 1).lldp_at_host_port, 0);
}

#[test]
fn a_reconnecting_neighbour_gets_its_link_back_despite_a_flows_tail() {
    let mut engine = line(config(), Membership::default());
    let now = Instant::now();
    engine.switch_disconnected_at(2, now);
    // 0x1:2 is an edge port now, and carries a flow's tail before 0x2 is back.
    engine.packet_in(1, 2, frame(9, BROADCAST), now);
    let back = now + Duration::from_secs(1);
    engine.switch_connected(2, NEEDS_TABLE_MISS, ports(&[1, 2, 3]), back);
    let probe = engine.probe_from(p(2, 2), back);
    engine.packet_in(1, 2, discovery(probe), back);
    let probe = engine.probe_from(p(1, 2), back);
    engine.packet_in(2, 2, discovery(probe), back);
    assert_eq!(engine.links().len(), 2);
}

#[test]
fn hosts_that_talk_past_the_grace_still_cannot_relay_a_link() {
    let mut engine = line(config(), Membership::default());
    let now = expire_all_links(&mut engine, Instant::now());
    // Long after the link went, hosts speak at the ports: they are host ports.
    let late = now + Duration::from_secs(30);
    engine.packet_in(1, 2, frame(8, mac(9)), late);
    engine.packet_in(2, 2, frame(9, mac(8)), late);
    let relayed = engine.probe_from(p(1, 2), late);
    engine.packet_in(2, 2, discovery(relayed), late);
    assert!(engine.links().is_empty());
    assert_eq!(dropped(&engine, 2).lldp_at_host_port, 1);
}

#[test]
fn remembered_drops_expire_with_their_flows_and_stay_under_the_cap() {
    let capped = EngineConfig {
        max_drops_per_switch: 50,
        ..config()
    };
    // h1 and h3 share no slice: every frame between them gets a drop flow.
    let index = membership(&[("blue", &[(1, 1, 1)]), ("red", &[(3, 1, 3)])]);
    let mut engine = line(capped, index);
    let start = Instant::now();
    engine.packet_in(3, 1, frame(3, BROADCAST), start);
    for source in 0..200u8 {
        let rotated = Frame {
            src: MacAddress::new([2, 0, 0, 0, 1, source]),
            ..frame(0, mac(3))
        };
        engine.packet_in(1, 1, rotated, start);
    }
    assert_eq!(engine.remembered_drops(), 50, "capped per switch");
    let after = start + Duration::from_secs(u64::from(engine.config.drop_timeout) + 1);
    engine.tick(after);
    assert_eq!(engine.remembered_drops(), 0, "gone with their hard timeout");
}

#[test]
fn a_spoofed_frame_does_not_move_a_bound_host() {
    let index = membership(&[("blue", &[(1, 1, 1), (3, 1, 3)])]);
    let mut engine = line(config(), index);
    send(&mut engine, p(3, 1), 3, BROADCAST);
    send(&mut engine, p(1, 1), 1, mac(3));
    assert_eq!(engine.paths().len(), 1);
    // An impostor on 0x2:1 with h1's MAC.
    let commands = send(&mut engine, p(2, 1), 1, mac(3));
    assert!(flow_deletes(&commands).is_empty(), "h1's path stays");
    assert!(flow_adds(&commands).is_empty());
    let h1 = engine
        .hosts()
        .into_iter()
        .find(|h| h.mac == mac(1))
        .unwrap();
    assert_eq!(h1.port, p(1, 1));
    assert_eq!(dropped(&engine, 2).hosts_spoofed, 1);
}

#[test]
fn a_legitimate_move_lifts_the_drops_judged_at_the_old_port() {
    // mac 1 is unbound at 0x1:1 (so h3 drops it) and bound with h3 at 0x2:1.
    let index = membership(&[("blue", &[(2, 1, 1), (3, 1, 3)])]);
    let mut engine = line(config(), index);
    send(&mut engine, p(1, 1), 1, BROADCAST);
    send(&mut engine, p(3, 1), 3, mac(1));
    assert_eq!(engine.remembered_drops(), 1);
    let commands = send(&mut engine, p(2, 1), 1, BROADCAST);
    assert_eq!(engine.remembered_drops(), 0);
    assert!(commands.iter().any(|(dpid, command)| *dpid == 3
        && matches!(command, Command::FlowDelete { priority, .. } if *priority == DROP_PRIORITY)));
}

// ---- the cluster ---------------------------------------------------------------------

fn master(generation: u64) -> Leadership {
    Leadership::Master { generation }
}

fn standby(generation: Option<u64>) -> Leadership {
    Leadership::Standby {
        master: generation.map(|_| "other".to_owned()),
        generation,
    }
}

fn role_requests(commands: &[(u64, Command)]) -> Vec<(u64, Role, u64)> {
    commands
        .iter()
        .filter_map(|(dpid, command)| match command {
            Command::SetRole { role, generation } => Some((*dpid, *role, *generation)),
            _ => None,
        })
        .collect()
}

// ---- reconciling with what a switch holds ----------------------------------------------

/// A flow as a read-back reports it; `tag` (its raw match) tells the deletes apart.
fn entry(cookie: u64, tag: u8, rule: Option<Rule>, action: FlowAction) -> FlowEntry {
    FlowEntry {
        cookie,
        table_id: 0,
        priority: PATH_PRIORITY,
        in_port: rule.map(|rule| rule.in_port),
        eth_src: rule.map(|rule| rule.eth_src),
        eth_dst: rule.map(|rule| rule.eth_dst),
        other_fields: false,
        action,
        idle_timeout: 60,
        hard_timeout: 0,
        handle: FlowHandle(openflow::RawFlowDelete {
            table_id: 0,
            priority: PATH_PRIORITY,
            raw_match: vec![tag],
        }),
        pipeline: None,
    }
}

fn rule(in_port: u32, src: u8, dst: u8) -> Rule {
    Rule {
        in_port,
        eth_src: mac(src),
        eth_dst: mac(dst),
    }
}

/// A hop of a path from the host bound at `from` to the one bound at `to`, as sliced
/// installs it.
fn path_flow(tag: u8, hop: (u32, u32), pair: (u8, u8), ends: (PortId, PortId)) -> FlowEntry {
    entry(
        FlowKind::path(ends.0, ends.1).cookie(),
        tag,
        Some(rule(hop.0, pair.0, pair.1)),
        FlowAction::Output(hop.1),
    )
}

fn table_miss(tag: u8) -> FlowEntry {
    FlowEntry {
        priority: 0,
        ..entry(
            FlowKind::TableMiss.cookie(),
            tag,
            None,
            FlowAction::Output(openflow::port::CONTROLLER),
        )
    }
}

fn read(entries: Vec<FlowEntry>) -> FlowsRead {
    FlowsRead {
        entries,
        complete: true,
    }
}

/// The tags of the flows deleted exactly, per switch.
fn exact_deletes(commands: &[(u64, Command)]) -> Vec<(u64, u8)> {
    commands
        .iter()
        .filter_map(|(dpid, command)| match command {
            Command::FlowDeleteExact(FlowHandle(delete)) => Some((*dpid, delete.raw_match[0])),
            _ => None,
        })
        .collect()
}

#[test]
fn a_single_instance_asks_for_no_role() {
    let mut engine = Engine::new(config(), membership(&[]));
    engine.switch_connected(1, NEEDS_TABLE_MISS, ports(&[1]), Instant::now());
    let commands = engine.take_commands();
    assert_eq!(role_requests(&commands), []);
    assert_eq!(
        commands[..2],
        [(1, Command::TableMiss), (1, Command::ReadFlows)]
    );
}

#[test]
fn a_standby_asks_to_be_slave_and_writes_nothing() {
    let now = Instant::now();
    let mut engine = Engine::new(config(), membership(&[("blue", &[(1, 1, 1), (1, 2, 2)])]));
    engine.set_leadership(standby(Some(7)), now);
    engine.switch_connected(1, NEEDS_TABLE_MISS, ports(&[1, 2]), now);
    assert_eq!(
        engine.take_commands(),
        [(
            1,
            Command::SetRole {
                role: Role::Slave,
                generation: 7
            }
        )]
    );
    // PACKET_INs are ignored, ticks send no probes, but the switch and its ports are kept.
    assert_eq!(send(&mut engine, p(1, 1), 1, BROADCAST), []);
    assert_eq!(send(&mut engine, p(1, 2), 2, mac(1)), []);
    engine.tick(now + Duration::from_secs(1));
    engine.port_changed(p(1, 2), None, now);
    assert_eq!(engine.take_commands(), []);
    assert_eq!(engine.hosts(), []);
    let switches = engine.switches();
    assert_eq!(switches.len(), 1);
    assert_eq!(switches[0].ports.len(), 1);
}

#[test]
fn a_standby_that_knows_no_generation_asks_nothing() {
    let now = Instant::now();
    let mut engine = Engine::new(config(), membership(&[]));
    engine.set_leadership(Leadership::UNDECIDED, now);
    engine.switch_connected(1, SENDS_MISSES, ports(&[1]), now);
    assert_eq!(engine.take_commands(), []);
}

#[test]
fn becoming_master_claims_every_switch_first_then_takes_it_over() {
    let now = Instant::now();
    let mut engine = Engine::new(config(), membership(&[]));
    engine.set_leadership(standby(Some(3)), now);
    engine.switch_connected(1, NEEDS_TABLE_MISS, ports(&[1, 2]), now);
    engine.switch_connected(2, SENDS_MISSES, ports(&[1]), now);
    engine.take_commands();
    engine.set_leadership(master(9), now);
    let commands = engine.take_commands();
    assert_eq!(
        role_requests(&commands),
        [(1, Role::Master, 9), (2, Role::Master, 9)]
    );
    // The role requests come before anything else.
    assert!(matches!(commands[0].1, Command::SetRole { .. }));
    assert!(matches!(commands[1].1, Command::SetRole { .. }));
    let rest: Vec<&(u64, Command)> = commands[2..].iter().collect();
    // Nothing is flushed; the 1.3 switch gets its table-miss flow; LLDP goes out at once.
    assert!(!rest.iter().any(|(_, c)| *c == Command::ClearFlows));
    assert!(rest.contains(&&(1, Command::TableMiss)));
    assert!(!rest
        .iter()
        .any(|(dpid, c)| *dpid == 2 && *c == Command::TableMiss));
    // Each switch's flow table is read back, to keep what the old master installed.
    assert!(rest.contains(&&(1, Command::ReadFlows)));
    assert!(rest.contains(&&(2, Command::ReadFlows)));
    let probes: Vec<(u64, u32)> = rest
        .iter()
        .filter_map(|(dpid, c)| match c {
            Command::Discovery { port_no, .. } => Some((*dpid, *port_no)),
            _ => None,
        })
        .collect();
    assert_eq!(probes, [(1, 1), (1, 2), (2, 1)]);
    // And the master acts on traffic: it learns the host.
    send(&mut engine, p(2, 1), 1, BROADCAST);
    assert_eq!(engine.hosts().len(), 1);
}

#[test]
fn a_standby_neither_reads_back_nor_judges_a_flow_table() {
    let now = Instant::now();
    let mut engine = blue_line();
    engine.set_leadership(standby(Some(3)), now);
    engine.take_commands();
    engine.reconcile(1);
    // A read that arrives for a standby (asked for before it was deposed) changes nothing:
    // a flow no slice allows stays, for the master to judge.
    let allowed = path_flow(3, (1, 2), (1, 2), (p(1, 1), p(2, 1)));
    let foreign = entry(7, 2, None, FlowAction::Drop);
    engine.flows_read(1, read(vec![table_miss(1), foreign, allowed]), now);
    assert_eq!(engine.take_commands(), []);
    assert_eq!(engine.adopted_flows(), 0);
}

#[test]
fn a_master_connecting_a_switch_claims_it_before_writing() {
    let now = Instant::now();
    let mut engine = Engine::new(config(), membership(&[]));
    engine.set_leadership(master(4), now);
    engine.switch_connected(1, NEEDS_TABLE_MISS, ports(&[1]), now);
    let commands = engine.take_commands();
    assert_eq!(
        commands[0],
        (
            1,
            Command::SetRole {
                role: Role::Master,
                generation: 4
            }
        )
    );
    assert!(commands.contains(&(1, Command::TableMiss)));
}

#[test]
fn a_deposed_master_stops_writing_at_once_and_asks_to_be_slave() {
    let now = Instant::now();
    let mut engine = line(config(), membership(&[("blue", &[(1, 1, 1), (3, 1, 3)])]));
    engine.set_leadership(master(5), now);
    send(&mut engine, p(1, 1), 1, BROADCAST);
    send(&mut engine, p(3, 1), 3, mac(1));
    assert_eq!(engine.paths().len(), 1);
    engine.set_leadership(standby(None), now);
    let commands = engine.take_commands();
    // Slave with the newest generation it knows (its own), and no flow deleted.
    assert_eq!(
        role_requests(&commands),
        [
            (1, Role::Slave, 5),
            (2, Role::Slave, 5),
            (3, Role::Slave, 5)
        ]
    );
    assert_eq!(commands.len(), 3);
    assert_eq!(engine.paths(), []);
    assert_eq!(send(&mut engine, p(1, 1), 1, mac(3)), []);
}

#[test]
fn a_stale_refusal_makes_the_switch_off_limits_until_the_next_election() {
    let now = Instant::now();
    let mut engine = Engine::new(config(), membership(&[]));
    engine.set_leadership(master(2), now);
    engine.switch_connected(1, SENDS_MISSES, ports(&[1]), now);
    engine.switch_connected(2, SENDS_MISSES, ports(&[1]), now);
    engine.take_commands();
    engine.role_changed(2, Role::Master);
    engine.role_refused(1, RoleRefusal::Stale);
    assert_eq!(
        engine.switch_roles().0.clone(),
        BTreeMap::from([(1, Role::Slave), (2, Role::Master)])
    );
    assert_eq!(send(&mut engine, p(1, 1), 1, BROADCAST), []);
    engine.tick(now);
    let commands = engine.take_commands();
    assert!(commands.iter().all(|(dpid, _)| *dpid == 2), "{commands:?}");
    // A later election won claims it again.
    engine.set_leadership(master(8), now);
    let commands = engine.take_commands();
    assert!(role_requests(&commands).contains(&(1, Role::Master, 8)));
    assert!(commands.iter().any(|(dpid, c)| *dpid == 1 && c.writes()));
}

#[test]
fn confirmed_roles_are_versioned_and_forgotten_with_the_switch() {
    let now = Instant::now();
    let mut engine = Engine::new(config(), membership(&[]));
    engine.set_leadership(master(1), now);
    engine.switch_connected(1, SENDS_MISSES, ports(&[1]), now);
    let (_, before) = engine.switch_roles();
    engine.role_changed(1, Role::Master);
    let (roles, after) = engine.switch_roles();
    assert_eq!(roles.get(&1), Some(&Role::Master));
    assert_ne!(before, after);
    engine.role_changed(1, Role::Master);
    assert_eq!(engine.switch_roles().1, after);
    engine.switch_disconnected_at(1, now);
    assert!(engine.switch_roles().0.is_empty());
    // A role for a switch the engine does not know is ignored.
    engine.role_changed(9, Role::Master);
    assert!(engine.switch_roles().0.is_empty());
}

/// h1 and h2 share "blue" (h1 at 0x1:1, h2 at 0x2:1); h3 at 0x3:1 is in "red" alone.
fn blue_line() -> Engine {
    line(
        config(),
        membership(&[("blue", &[(1, 1, 1), (2, 1, 2)]), ("red", &[(3, 1, 3)])]),
    )
}

/// The hops of h1 -> h2 read back at switches 1 and 2 and adopted.
fn adopt_h1_to_h2(engine: &mut Engine) {
    let ends = (p(1, 1), p(2, 1));
    engine.flows_read(
        1,
        read(vec![path_flow(1, (1, 2), (1, 2), ends)]),
        Instant::now(),
    );
    engine.flows_read(
        2,
        read(vec![path_flow(2, (2, 1), (1, 2), ends)]),
        Instant::now(),
    );
    assert_eq!(exact_deletes(&engine.take_commands()), vec![]);
    assert_eq!(engine.adopted_flows(), 2);
}

#[test]
fn a_read_back_keeps_our_table_miss_and_allowed_paths_and_deletes_the_rest_exactly() {
    let mut engine = blue_line();
    let h1_to_h2 = (p(1, 1), p(2, 1));
    let foreign_table = FlowEntry {
        table_id: 3,
        ..path_flow(6, (1, 2), (2, 1), (p(2, 1), p(1, 1)))
    };
    let entries = vec![
        table_miss(1),
        path_flow(2, (1, 2), (1, 2), h1_to_h2),
        path_flow(3, (2, 1), (2, 1), (p(2, 1), p(1, 1))),
        // Not ours: another controller's, or an operator's.
        entry(0, 4, Some(rule(1, 1, 2)), FlowAction::Output(2)),
        entry(0x1234, 5, None, FlowAction::Other),
        // Ours, but in a table sliced never uses.
        foreign_table,
        // A drop flow: judged afresh by the next packet.
        FlowEntry {
            priority: DROP_PRIORITY,
            ..entry(
                FlowKind::Drop.cookie(),
                7,
                Some(rule(1, 1, 3)),
                FlowAction::Drop,
            )
        },
        // h1 and h3 share no slice.
        path_flow(8, (1, 2), (1, 3), (p(1, 1), p(3, 1))),
        // Our table-miss cookie on a flow that is no table-miss flow.
        FlowEntry {
            priority: 5,
            ..table_miss(9)
        },
        // A path flow that matches more than the pair.
        FlowEntry {
            other_fields: true,
            ..path_flow(10, (1, 2), (1, 2), h1_to_h2)
        },
    ];
    engine.flows_read(1, read(entries), Instant::now());
    let commands = engine.take_commands();
    assert_eq!(
        exact_deletes(&commands),
        vec![(1, 4), (1, 5), (1, 6), (1, 7), (1, 8), (1, 9), (1, 10)]
    );
    assert!(!commands.contains(&(1, Command::ClearFlows)));
    assert_eq!(engine.adopted_flows(), 2);
}

#[test]
fn a_path_flow_for_a_binding_removed_while_nobody_watched_is_deleted() {
    // h2 was bound at 0x2:1 when the flow went in; now it is bound at 0x2:3.
    let mut engine = line(config(), membership(&[("blue", &[(1, 1, 1), (2, 3, 2)])]));
    let entries = vec![
        path_flow(1, (1, 2), (1, 2), (p(1, 1), p(2, 1))),
        path_flow(2, (1, 2), (1, 2), (p(1, 1), p(2, 3))),
    ];
    engine.flows_read(1, read(entries), Instant::now());
    assert_eq!(exact_deletes(&engine.take_commands()), vec![(1, 1)]);
    assert_eq!(engine.adopted_flows(), 1);
}

#[test]
fn an_incomplete_read_flushes_the_switch_and_forgets_what_was_there() {
    let mut engine = blue_line();
    adopt_h1_to_h2(&mut engine);
    // A drop remembered at switch 1.
    send(&mut engine, p(3, 1), 3, BROADCAST);
    send(&mut engine, p(1, 1), 1, mac(3));
    assert_eq!(engine.remembered_drops(), 1);
    let incomplete = FlowsRead {
        entries: Vec::new(),
        complete: false,
    };
    engine.flows_read(1, incomplete, Instant::now());
    let commands = engine.take_commands();
    assert_eq!(
        commands[..2],
        [(1, Command::ClearFlows), (1, Command::TableMiss)]
    );
    assert_eq!(engine.remembered_drops(), 0);
    assert_eq!(engine.adopted_flows(), 1, "switch 1's adopted flow is gone");

    let mut engine = Engine::new(config(), Membership::default());
    engine.switch_connected(9, SENDS_MISSES, ports(&[1]), Instant::now());
    engine.take_commands();
    let incomplete = FlowsRead {
        entries: Vec::new(),
        complete: false,
    };
    engine.flows_read(9, incomplete, Instant::now());
    assert_eq!(engine.take_commands(), vec![(9, Command::ClearFlows)]);
}

#[test]
fn a_read_over_the_bound_is_a_flush_however_it_arrives() {
    let mut engine = blue_line();
    let ends = (p(1, 1), p(2, 1));
    let entries = vec![path_flow(1, (1, 2), (1, 2), ends); MAX_FLOWS_READ + 1];
    engine.flows_read(1, read(entries), Instant::now());
    let commands = engine.take_commands();
    assert_eq!(commands[0], (1, Command::ClearFlows));
    assert_eq!(exact_deletes(&commands), vec![]);
    assert_eq!(engine.adopted_flows(), 0);
}

#[test]
fn adopted_flows_go_when_the_membership_forbids_the_pair() {
    let mut engine = blue_line();
    adopt_h1_to_h2(&mut engine);
    engine.membership_changed(&Change::MacDeleted {
        slice: name("blue"),
        port: p(2, 1),
        mac: mac(2),
    });
    let mut deletes = flow_deletes(&engine.take_commands());
    deletes.sort();
    assert_eq!(
        deletes,
        vec![(1, 1, mac(1), mac(2)), (2, 2, mac(1), mac(2))]
    );
    assert_eq!(engine.adopted_flows(), 0);
}

#[test]
fn adopted_flows_are_listed_as_their_pairs_path_until_a_path_of_its_own_replaces_them() {
    let mut engine = blue_line();
    adopt_h1_to_h2(&mut engine);
    assert_eq!(
        engine.paths(),
        vec![PathView {
            src: mac(1),
            dst: mac(2),
            hops: vec![p(1, 1), p(1, 2), p(2, 2), p(2, 1)],
            adopted: true,
        }]
    );
    // The engine's own path for the pair replaces the adopted flows, in the view too.
    send(&mut engine, p(2, 1), 2, BROADCAST);
    send(&mut engine, p(1, 1), 1, mac(2));
    let paths = engine.paths();
    assert_eq!(paths.len(), 1, "{paths:?}");
    assert!(!paths[0].adopted);
}

#[test]
fn adopted_flows_stay_while_the_pair_may_talk() {
    let mut engine = blue_line();
    adopt_h1_to_h2(&mut engine);
    engine.membership_changed(&Change::MacDeleted {
        slice: name("red"),
        port: p(3, 1),
        mac: mac(3),
    });
    assert_eq!(flow_deletes(&engine.take_commands()), vec![]);
    assert_eq!(engine.adopted_flows(), 2);
}

#[test]
fn adopted_flows_go_when_a_port_of_theirs_goes_down() {
    let mut engine = blue_line();
    adopt_h1_to_h2(&mut engine);
    let down = PortState {
        name: "eth1".into(),
        live: false,
    };
    engine.port_changed(p(2, 1), Some(down), Instant::now());
    let mut deletes = flow_deletes(&engine.take_commands());
    deletes.sort();
    assert_eq!(
        deletes,
        vec![(1, 1, mac(1), mac(2)), (2, 2, mac(1), mac(2))]
    );
    assert_eq!(engine.adopted_flows(), 0);
}

#[test]
fn adopted_flows_go_with_their_switch() {
    let mut engine = blue_line();
    adopt_h1_to_h2(&mut engine);
    engine.switch_disconnected(2);
    assert_eq!(
        flow_deletes(&engine.take_commands()),
        vec![(1, 1, mac(1), mac(2))],
        "what is left elsewhere goes; the gone switch is sent nothing"
    );
    assert_eq!(engine.adopted_flows(), 0);
}

#[test]
fn an_adopted_ingress_flow_that_expires_takes_its_pair_along() {
    let mut engine = blue_line();
    adopt_h1_to_h2(&mut engine);
    engine.flow_removed(1, rule(1, 1, 2), PATH_PRIORITY);
    assert!(flow_deletes(&engine.take_commands()).contains(&(2, 2, mac(1), mac(2))));
    assert_eq!(engine.adopted_flows(), 0);
}

#[test]
fn a_new_path_for_the_pair_deletes_the_adopted_flows_off_it() {
    let mut engine = blue_line();
    let ends = (p(1, 1), p(2, 1));
    // Switch 1 holds the pair's flow from port 3 (an older route); switch 2 one on the
    // route the engine will pick.
    engine.flows_read(
        1,
        read(vec![path_flow(1, (3, 2), (1, 2), ends)]),
        Instant::now(),
    );
    engine.flows_read(
        2,
        read(vec![path_flow(2, (2, 1), (1, 2), ends)]),
        Instant::now(),
    );
    engine.take_commands();
    send(&mut engine, p(2, 1), 2, BROADCAST);
    let commands = send(&mut engine, p(1, 1), 1, mac(2));
    assert_eq!(
        flow_deletes(&commands),
        vec![(1, 3, mac(1), mac(2))],
        "the flow on the new path is replaced by its ADD, never deleted after it"
    );
    assert_eq!(
        flow_adds(&commands),
        vec![
            (2, 2, Some(1), PATH_PRIORITY),
            (1, 1, Some(2), PATH_PRIORITY)
        ]
    );
    assert_eq!(engine.adopted_flows(), 0);
}

#[test]
fn a_read_back_leaves_the_engines_own_path_alone() {
    let mut engine = blue_line();
    send(&mut engine, p(2, 1), 2, BROADCAST);
    send(&mut engine, p(1, 1), 1, mac(2));
    let ends = (p(1, 1), p(2, 1));
    // The answer may predate the path's ADD (another output) or show a stale hop.
    let entries = vec![
        path_flow(1, (1, 3), (1, 2), ends),
        path_flow(2, (3, 2), (1, 2), ends),
    ];
    engine.flows_read(1, read(entries), Instant::now());
    assert_eq!(exact_deletes(&engine.take_commands()), vec![(1, 2)]);
    assert_eq!(
        engine.adopted_flows(),
        0,
        "the engine tracks its path already"
    );
}

#[test]
fn a_drop_flow_read_back_is_deleted_and_forgotten() {
    let mut engine = blue_line();
    send(&mut engine, p(3, 1), 3, BROADCAST);
    send(&mut engine, p(1, 1), 1, mac(3));
    assert_eq!(engine.remembered_drops(), 1);
    let drop = FlowEntry {
        priority: DROP_PRIORITY,
        ..entry(
            FlowKind::Drop.cookie(),
            1,
            Some(rule(1, 1, 3)),
            FlowAction::Drop,
        )
    };
    engine.flows_read(1, read(vec![drop]), Instant::now());
    assert_eq!(exact_deletes(&engine.take_commands()), vec![(1, 1)]);
    assert_eq!(engine.remembered_drops(), 0);
}

#[test]
fn without_slicing_every_path_flow_of_ours_is_kept() {
    let config = EngineConfig {
        slicing: false,
        ..config()
    };
    let mut engine = line(config, Membership::default());
    let entries = vec![path_flow(1, (1, 2), (1, 3), (p(1, 1), p(3, 1)))];
    engine.flows_read(1, read(entries), Instant::now());
    assert_eq!(exact_deletes(&engine.take_commands()), vec![]);
    assert_eq!(engine.adopted_flows(), 1);
}

#[test]
fn reconcile_reads_a_known_switch_back() {
    let mut engine = blue_line();
    engine.reconcile(2);
    engine.reconcile(42);
    assert_eq!(engine.take_commands(), vec![(2, Command::ReadFlows)]);
}

#[test]
fn every_flow_the_engine_installs_says_what_it_is_in_its_cookie() {
    let mut engine = blue_line();
    send(&mut engine, p(2, 1), 2, BROADCAST);
    let commands = send(&mut engine, p(1, 1), 1, mac(2));
    let cookies: Vec<u64> = commands
        .iter()
        .filter_map(|(_, command)| match command {
            Command::FlowAdd { cookie, .. } => Some(*cookie),
            _ => None,
        })
        .collect();
    let path = FlowKind::path(p(1, 1), p(2, 1)).cookie();
    assert_eq!(cookies, vec![path, path]);
    send(&mut engine, p(3, 1), 3, BROADCAST);
    let commands = send(&mut engine, p(1, 1), 1, mac(3));
    assert!(commands.iter().any(|(_, command)| matches!(
        command,
        Command::FlowAdd { cookie, .. } if *cookie == FlowKind::Drop.cookie()
    )));
}

#[test]
fn every_change_of_the_network_is_noticed_in_order() {
    let index = membership(&[("blue", &[(1, 1, 1), (3, 1, 3)])]);
    let mut engine = line(config(), index);
    let set_up: Vec<Notice> = engine.drain_notices().collect();
    assert_eq!(
        set_up[..3],
        [
            Notice::SwitchUp { dpid: 1 },
            Notice::SwitchUp { dpid: 2 },
            Notice::SwitchUp { dpid: 3 }
        ]
    );
    let links: Vec<&Notice> = set_up[3..].iter().collect();
    assert_eq!(links.len(), 4, "{links:?}");
    assert!(links
        .iter()
        .all(|notice| matches!(notice, Notice::LinkUp { .. })));
    assert!(links.contains(&&Notice::LinkUp {
        src: p(1, 2),
        dst: p(2, 2)
    }));

    send(&mut engine, p(3, 1), 3, BROADCAST);
    send(&mut engine, p(1, 1), 1, mac(3));
    assert_eq!(
        engine.drain_notices().collect::<Vec<_>>(),
        [
            Notice::HostLearned {
                mac: mac(3),
                port: p(3, 1)
            },
            Notice::HostLearned {
                mac: mac(1),
                port: p(1, 1)
            },
            Notice::PathInstalled {
                src: mac(1),
                dst: mac(3)
            },
        ]
    );
    // The same path again is no news.
    send(&mut engine, p(1, 1), 1, mac(3));
    assert_eq!(engine.drain_notices().count(), 0);

    engine.switch_disconnected_at(2, Instant::now());
    let gone: Vec<Notice> = engine.drain_notices().collect();
    assert_eq!(
        gone.iter()
            .filter(|notice| matches!(notice, Notice::LinkDown { .. }))
            .count(),
        4,
        "{gone:?}"
    );
    assert!(gone.contains(&Notice::PathDeleted {
        src: mac(1),
        dst: mac(3)
    }));
    assert_eq!(gone.last(), Some(&Notice::SwitchDown { dpid: 2 }));
}

#[test]
fn a_host_that_moves_is_noticed_with_both_ports() {
    let mut engine = line(config(), membership(&[]));
    send(&mut engine, p(1, 1), 1, BROADCAST);
    engine.drain_notices().for_each(drop);
    send(&mut engine, p(3, 1), 1, BROADCAST);
    assert_eq!(
        engine.drain_notices().collect::<Vec<_>>(),
        [Notice::HostMoved {
            mac: mac(1),
            from: p(1, 1),
            to: p(3, 1)
        }]
    );
}

/// Answers the pending read-back of each switch with an empty flow table.
fn read_back_empty(engine: &mut Engine, dpids: &[u64]) {
    for &dpid in dpids {
        engine.flows_read(dpid, read(Vec::new()), Instant::now());
    }
    engine.take_commands();
}

#[test]
fn a_kept_ingress_flow_whose_next_hop_is_gone_is_deleted_so_the_pair_is_routed_again() {
    let mut engine = blue_line();
    read_back_empty(&mut engine, &[1, 2, 3]);
    send(&mut engine, p(2, 1), 2, BROADCAST);
    send(&mut engine, p(1, 1), 1, mac(2));
    // Switch 1 is cut off from the controller (or the controller stops while switch 1
    // is already gone): the path's hop at switch 2 is deleted, its ingress flow at
    // switch 1 stays, since nobody could reach switch 1 to delete it.
    engine.switch_disconnected(1);
    assert_eq!(
        flow_deletes(&engine.take_commands()),
        vec![(2, 2, mac(1), mac(2))]
    );
    let now = Instant::now();
    engine.switch_connected(1, NEEDS_TABLE_MISS, ports(&[1, 2, 3]), now);
    for (a, b) in [(p(1, 2), p(2, 2)), (p(2, 2), p(1, 2))] {
        engine.packet_in(b.dpid, b.port_no, discovery(engine.probe_from(a, now)), now);
    }
    let ends = (p(1, 1), p(2, 1));
    engine.flows_read(1, read(vec![path_flow(1, (1, 2), (1, 2), ends)]), now);
    assert_eq!(exact_deletes(&engine.take_commands()), vec![]);
    assert_eq!(engine.adopted_flows(), 1, "allowed by the slices, so kept");

    // Its packets would leave switch 1 and find no flow at switch 2, never missing at
    // switch 1: a black hole, unless the engine sees that the flows lead nowhere.
    engine.tick(now);
    assert_eq!(
        flow_deletes(&engine.take_commands()),
        vec![(1, 1, mac(1), mac(2))]
    );
    assert_eq!(engine.adopted_flows(), 0);
    let commands = send(&mut engine, p(1, 1), 1, mac(2));
    assert_eq!(
        flow_adds(&commands),
        vec![
            (2, 2, Some(1), PATH_PRIORITY),
            (1, 1, Some(2), PATH_PRIORITY)
        ],
        "the next packet misses at switch 1 and gets a whole path"
    );
}

#[test]
fn adopted_flows_that_lead_all_the_way_stay() {
    let mut engine = blue_line();
    adopt_h1_to_h2(&mut engine);
    let later = Instant::now() + Duration::from_secs(60);
    engine.tick(Instant::now());
    engine.tick(later);
    assert_eq!(flow_deletes(&engine.take_commands()), vec![]);
    assert_eq!(engine.adopted_flows(), 2);
}

#[test]
fn adopted_flows_over_a_link_lldp_does_not_find_go_after_the_grace() {
    let now = Instant::now();
    let mut engine = Engine::new(config(), membership(&[("blue", &[(1, 1, 1), (2, 1, 2)])]));
    for dpid in 1..=2 {
        engine.switch_connected(dpid, SENDS_MISSES, ports(&[1, 2, 3]), now);
    }
    // The flows were set up over a cable between 0x1:2 and 0x2:2 that was cut while
    // no controller watched (its ports still up at this end: a cut further along).
    let ends = (p(1, 1), p(2, 1));
    engine.flows_read(1, read(vec![path_flow(1, (1, 2), (1, 2), ends)]), now);
    engine.flows_read(2, read(vec![path_flow(2, (2, 1), (1, 2), ends)]), now);
    engine.take_commands();
    engine.tick(now + Duration::from_secs(1));
    assert_eq!(
        flow_deletes(&engine.take_commands()),
        vec![],
        "LLDP may not have found the link yet"
    );
    engine.tick(now + engine.link_return_grace());
    let mut deletes = flow_deletes(&engine.take_commands());
    deletes.sort();
    assert_eq!(
        deletes,
        vec![(1, 1, mac(1), mac(2)), (2, 2, mac(1), mac(2))]
    );
    assert_eq!(engine.adopted_flows(), 0);
}

#[test]
fn adopted_flows_out_of_a_port_that_is_down_go_at_the_next_tick() {
    let now = Instant::now();
    let mut engine = Engine::new(config(), membership(&[("blue", &[(1, 1, 1), (2, 1, 2)])]));
    let mut down = ports(&[1, 2, 3]);
    down.insert(
        2,
        PortState {
            name: "eth2".into(),
            live: false,
        },
    );
    engine.switch_connected(1, SENDS_MISSES, down, now);
    let ends = (p(1, 1), p(2, 1));
    engine.flows_read(1, read(vec![path_flow(1, (1, 2), (1, 2), ends)]), now);
    engine.take_commands();
    engine.tick(now);
    assert_eq!(
        flow_deletes(&engine.take_commands()),
        vec![(1, 1, mac(1), mac(2))]
    );
}
