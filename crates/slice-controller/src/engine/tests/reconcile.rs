//! Flow tables read back: what is kept, adopted, deleted or flushed.

use super::*;

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
        raw: None,
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
        raw: None,
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
    engine.tick_kept_up(now);
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
    engine.tick_kept_up(Instant::now());
    engine.tick_kept_up(later);
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
    engine.tick_kept_up(now + Duration::from_secs(1));
    assert_eq!(
        flow_deletes(&engine.take_commands()),
        vec![],
        "LLDP may not have found the link yet"
    );
    engine.tick_kept_up(now + engine.link_return_grace());
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
    engine.tick_kept_up(now);
    assert_eq!(
        flow_deletes(&engine.take_commands()),
        vec![(1, 1, mac(1), mac(2))]
    );
}
