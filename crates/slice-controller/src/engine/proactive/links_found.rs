//! Links found in a burst are planned together: at once after a quiet spell, then at
//! most every [`LINKS_FOUND_PLANNED_EVERY`]; a link gone and a change of slices are
//! planned at the next sync whatever links wait.

use slice_core::Change;

use super::super::tests::{config, discovery, membership, p, ports};
use super::tests::{changes, empty_table, is_deleted, AnsweringSwitches, Changes};
use super::*;

const PIPELINE: SwitchProfile = SwitchProfile {
    needs_table_miss_flow: true,
    protocol: openflow::Version::Of13,
    pipeline: true,
};

/// Switches 1, 2 and 3, host ports 1 on each (MAC 1 at 1:1 and MAC 3 at 3:1 share slice
/// "s"), every table read back empty at `t0`; no cable found yet.
fn three_switches() -> (Engine, Instant) {
    let index = membership(&[("s", &[(1, 1, 1), (3, 1, 3)])]);
    let mut engine = Engine::new(config(), index);
    let t0 = Instant::now();
    for dpid in 1..=3 {
        engine.switch_connected(dpid, PIPELINE, ports(&[1, 2, 3]), t0);
        engine.flows_read(dpid, empty_table(), t0);
    }
    engine.take_commands_answered();
    (engine, t0)
}

/// The cable between `a` and `b`, its probes heard both ways at `at`.
fn cable_found(engine: &mut Engine, a: PortId, b: PortId, at: Instant) {
    let (from_a, from_b) = (engine.probe_from(a, at), engine.probe_from(b, at));
    engine.packet_in(b.dpid, b.port_no, discovery(from_a), at);
    engine.packet_in(a.dpid, a.port_no, discovery(from_b), at);
}

/// Whether `changes` add the entry that takes frames arriving over a link at `port`.
fn link_port_added(changes: &Changes, port: PortId) -> bool {
    let rule = EntryMatch::LinkPort {
        in_port: port.port_no,
    };
    (changes.added.get(&port.dpid)).is_some_and(|added| added.iter().any(|e| e.rule == rule))
}

/// Cable 1:2-2:2 found at `t0` (planned at once), then 2:3-3:2 at `t0` + 10 ms (waiting).
fn second_cable_waiting() -> (Engine, Instant) {
    let (mut engine, t0) = three_switches();
    cable_found(&mut engine, p(1, 2), p(2, 2), t0);
    let first = changes(&engine.take_commands_answered());
    assert!(link_port_added(&first, p(1, 2)) && link_port_added(&first, p(2, 2)));
    cable_found(
        &mut engine,
        p(2, 3),
        p(3, 2),
        t0 + Duration::from_millis(10),
    );
    (engine, t0)
}

#[test]
fn links_found_within_the_spacing_of_the_last_plan_wait_for_it_and_go_together() {
    let (mut engine, t0) = second_cable_waiting();
    let waiting = changes(&engine.take_commands_answered());
    assert!(
        !link_port_added(&waiting, p(2, 3)) && !link_port_added(&waiting, p(3, 2)),
        "planned before its time: {waiting:?}"
    );
    assert_eq!(engine.links().len(), 4, "the engine knows both cables");
    let due = t0 + LINKS_FOUND_PLANNED_EVERY;
    assert_eq!(engine.poll_timeout(), Some(due));

    // A probe over the first cable just before it is due plans nothing.
    let just_before = due - Duration::from_millis(1);
    let probe = engine.probe_from(p(1, 2), just_before);
    engine.packet_in(2, 2, discovery(probe), just_before);
    engine.handle_timeout(just_before);
    assert_eq!(
        changes(&engine.take_commands_answered()),
        Changes::default()
    );

    engine.handle_timeout(due);
    let planned = changes(&engine.take_commands_answered());
    assert!(link_port_added(&planned, p(2, 3)) && link_port_added(&planned, p(3, 2)));
    // The route between the two hosts crosses both cables now.
    let tag = pipeline::hash_of_set(&["s".parse().unwrap()].into(), 0);
    let to_3 = EntryMatch::TaggedTo {
        tag,
        mac: super::super::tests::mac(3),
    };
    assert!(
        (planned.added.get(&2)).is_some_and(|added| added
            .iter()
            .any(|e| e.rule == to_3 && e.action == EntryAction::Output(vec![3]))),
        "switch 2 forwards to MAC 3 over the second cable: {planned:?}"
    );
    assert_eq!(engine.poll_timeout(), None);

    // A quiet spell later, a link found is planned at once again.
    let found_at = due + LINKS_FOUND_PLANNED_EVERY;
    cable_found(&mut engine, p(1, 3), p(3, 3), found_at);
    let at_once = changes(&engine.take_commands_answered());
    assert!(link_port_added(&at_once, p(1, 3)) && link_port_added(&at_once, p(3, 3)));
    assert_eq!(engine.poll_timeout(), None);
}

#[test]
fn a_tick_plans_the_links_found_that_are_due() {
    let (mut engine, t0) = second_cable_waiting();
    engine.take_commands_answered();
    engine.tick_kept_up(t0 + LINKS_FOUND_PLANNED_EVERY);
    let planned = changes(&engine.take_commands_answered());
    assert!(link_port_added(&planned, p(2, 3)) && link_port_added(&planned, p(3, 2)));
}

#[test]
fn a_link_gone_is_planned_at_once_while_links_found_wait() {
    let (mut engine, t0) = second_cable_waiting();
    engine.take_commands_answered();
    // Past the switches' settling, in which they keep the link ends they hold.
    engine.proactive.settling.clear();
    // The first cable goes 20 ms after it was planned, the second still waiting.
    let down = PortState {
        name: "eth2".into(),
        live: false,
    };
    engine.port_changed(p(1, 2), Some(down), t0 + Duration::from_millis(20));
    let gone = changes(&engine.take_commands_answered());
    let deleted_at = |dpid: u64, port_no| {
        let entry = Entry {
            table: pipeline::ADMISSION_TABLE,
            priority: pipeline::LINK_PORT_PRIORITY,
            rule: EntryMatch::LinkPort { in_port: port_no },
            action: EntryAction::ToTransit,
        };
        is_deleted(&gone, dpid, &entry)
    };
    assert!(deleted_at(1, 2) && deleted_at(2, 2), "{gone:?}");
    // That plan was made with the topology as it is: the cable waiting is in it.
    assert!(link_port_added(&gone, p(2, 3)) && link_port_added(&gone, p(3, 2)));
    assert_eq!(engine.poll_timeout(), None);
}

#[test]
fn a_change_of_slices_while_links_found_wait_makes_the_plan_anew_with_them() {
    let (mut engine, _) = second_cable_waiting();
    engine.take_commands_answered();
    let slice: slice_core::SliceName = "s".parse().unwrap();
    engine.membership_changed(&Change::PortAdded {
        slice: slice.clone(),
        port: p(3, 3),
    });
    engine.membership_changed(&Change::MacAdded {
        slice,
        port: p(3, 3),
        mac: super::super::tests::mac(4),
    });
    let planned = changes(&engine.take_commands_answered());
    assert!(link_port_added(&planned, p(2, 3)) && link_port_added(&planned, p(3, 2)));
    let host = EntryMatch::HostAtPort {
        in_port: 3,
        mac: super::super::tests::mac(4),
    };
    assert!(
        (planned.added.get(&3)).is_some_and(|added| added.iter().any(|e| e.rule == host)),
        "{planned:?}"
    );
    assert_eq!(engine.poll_timeout(), None);
}
