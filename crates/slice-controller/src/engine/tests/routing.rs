//! Paths, slices, broadcasts, links and hosts as the network changes.

use super::*;

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
    // Past twice the ceiling: no probe of any switch answered is a stall that long.
    let later = Instant::now() + Duration::from_secs(16);
    // Three whole rounds of probes go unanswered; the fourth tick finds them missed.
    for _ in 0..3 {
        engine.tick_kept_up(later);
        assert_eq!(
            engine.links().len(),
            4,
            "not yet: the rounds are not all missed"
        );
    }
    engine.take_commands();
    engine.tick_kept_up(later);
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
    engine.tick_kept_up(Instant::now() + Duration::from_secs(60));
    assert_eq!(engine.links().len(), 4);
    assert!(flow_deletes(&engine.take_commands()).is_empty());
}

#[test]
fn rounds_missed_quickly_expire_nothing_until_the_clock_agrees() {
    let index = membership(&[]);
    let mut engine = line(EngineConfig::default(), index);
    // Ticks in a burst, as after a stall: many rounds, no time.
    for _ in 0..10 {
        engine.tick_kept_up(Instant::now());
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
