//! Small networks with tables written by hand: two switches joined by one cable, three
//! hosts, two slices (blue: a and c; red: b alone).

use openflow::{port, Action, FlowMod, FlowModCommand, FlowStats, Masked, Match, Version};
use slice_core::{MacAddress, Membership, PortId, SliceName};

use super::*;

const A: [u8; 6] = [0, 0, 0, 0, 0, 1];
const B: [u8; 6] = [0, 0, 0, 0, 0, 2];
const C: [u8; 6] = [0, 0, 0, 0, 0, 3];
const GROUP: [u8; 6] = [1, 0, 0, 0, 0, 0];
const LINK: u32 = 3;

fn out(ports: &[u32]) -> Vec<Action> {
    ports
        .iter()
        .map(|&port| Action::Output { port, max_len: 0 })
        .collect()
}

#[derive(Clone)]
struct Flow {
    table: u8,
    priority: u16,
    r#match: Match,
    actions: Vec<Action>,
    tag: Option<u64>,
    goto: Option<u8>,
}

fn flow(table: u8, priority: u16, r#match: Match, actions: Vec<Action>) -> Flow {
    Flow {
        table,
        priority,
        r#match,
        actions,
        tag: None,
        goto: None,
    }
}

fn admit(in_port: u32, mac: [u8; 6], tag: u64) -> Flow {
    Flow {
        table: 0,
        priority: 300,
        r#match: Match {
            in_port: Some(in_port),
            eth_src: Some(mac),
            ..Match::default()
        },
        actions: vec![],
        tag: Some(tag),
        goto: Some(1),
    }
}

fn to(tag: u64, mac: [u8; 6], ports: &[u32]) -> Flow {
    flow(
        1,
        100,
        Match {
            metadata: Some(Masked::exact(tag)),
            eth_dst: Some(mac),
            ..Match::default()
        },
        out(ports),
    )
}

fn flood(tag: u64, ports: &[u32]) -> Flow {
    flow(
        1,
        50,
        Match {
            metadata: Some(Masked::exact(tag)),
            eth_dst: Some(GROUP),
            eth_dst_mask: Some(GROUP),
            ..Match::default()
        },
        out(ports),
    )
}

fn stats(version: Version, flows: Vec<Flow>) -> Vec<FlowStats> {
    flows
        .into_iter()
        .map(|f| {
            let flow_mod = FlowMod {
                command: FlowModCommand::Add,
                r#match: f.r#match,
                cookie: 7,
                table_id: f.table,
                priority: f.priority,
                actions: f.actions,
                write_metadata: f.tag.map(Masked::exact),
                goto_table: f.goto,
                ..FlowMod::default()
            };
            FlowStats::of_flow(version, &flow_mod).expect("encodable flow")
        })
        .collect()
}

fn s1() -> Vec<Flow> {
    vec![
        admit(1, A, 1),
        admit(2, B, 2),
        admit(LINK, C, 1),
        to(1, A, &[1]),
        to(1, C, &[LINK]),
        to(2, B, &[2]),
        flood(1, &[1, LINK]),
    ]
}

fn s2() -> Vec<Flow> {
    vec![
        admit(1, C, 1),
        admit(LINK, A, 1),
        to(1, A, &[LINK]),
        to(1, C, &[1]),
        flood(1, &[1, LINK]),
    ]
}

fn mac(octets: [u8; 6]) -> MacAddress {
    MacAddress::new(octets)
}

/// blue holds a and c, red holds b.
fn slices() -> Membership {
    let blue: SliceName = "blue".parse().expect("name");
    let red: SliceName = "red".parse().expect("name");
    let mut m = Membership::default();
    m.add_slice(&blue);
    m.add_slice(&red);
    m.add_mac(&blue, PortId::new(1, 1), mac(A));
    m.add_mac(&blue, PortId::new(2, 1), mac(C));
    m.add_mac(&red, PortId::new(1, 2), mac(B));
    m
}

fn network(s1: Vec<Flow>, s2: Vec<Flow>) -> Verifier {
    let mut v = Verifier::new();
    assert!(v
        .set_tables(1, Version::Of13, stats(Version::Of13, s1))
        .is_empty());
    assert!(v
        .set_tables(2, Version::Of13, stats(Version::Of13, s2))
        .is_empty());
    v.set_links([
        (PortId::new(1, LINK), PortId::new(2, LINK)),
        (PortId::new(2, LINK), PortId::new(1, LINK)),
    ]);
    let m = slices();
    v.set_hosts(
        &m,
        [
            (mac(A), PortId::new(1, 1)),
            (mac(B), PortId::new(1, 2)),
            (mac(C), PortId::new(2, 1)),
        ],
    );
    v
}

fn pairs(list: &[Violation]) -> Vec<(String, String, FrameKind)> {
    let name = |e: &Endpoint| match e {
        Endpoint::Host { mac, .. } => mac.to_string(),
        Endpoint::Unbound { port } => format!("unbound@{port}"),
    };
    let mut all: Vec<_> = list
        .iter()
        .map(|v| {
            (
                name(&v.src),
                v.dst.as_ref().map(name).unwrap_or_default(),
                v.frame,
            )
        })
        .collect();
    all.sort();
    all
}

#[test]
fn correct_tables_prove_isolation() {
    let mut v = network(s1(), s2());
    let report = v.verify();
    assert!(report.is_clean(), "{report:#?}");
    assert_eq!(report.pairs_checked, 6);
    assert_eq!(report.hosts, 3);
    assert_eq!(report.switches, 2);
    assert_eq!(report.entries, 12);
}

#[test]
fn a_leak_entry_is_found_with_its_entries() {
    let mut tables = s1();
    tables.push(flow(
        0,
        500,
        Match {
            in_port: Some(2),
            ..Match::default()
        },
        out(&[1]),
    ));
    let report = network(tables, s2()).verify();
    let leaks = pairs(&report.leaks);
    assert!(
        leaks.contains(&(
            "00:00:00:00:00:02".into(),
            "00:00:00:00:00:01".into(),
            FrameKind::Unicast
        )),
        "{leaks:?}"
    );
    let leak = &report.leaks[0];
    assert_eq!(leak.entries.len(), 1);
    assert_eq!(leak.entries[0].r#match, "in_port=2");
    assert_eq!(leak.entries[0].actions, "output:1");
    assert_eq!(leak.entries[0].priority, 500);
    assert!(report.black_holes.is_empty(), "{report:#?}");
}

#[test]
fn a_deleted_forward_entry_is_a_black_hole() {
    let mut tables = s2();
    tables.retain(|f| !(f.table == 1 && f.r#match.eth_dst == Some(C)));
    let report = network(s1(), tables).verify();
    assert_eq!(
        pairs(&report.black_holes),
        vec![(
            "00:00:00:00:00:01".into(),
            "00:00:00:00:00:03".into(),
            FrameKind::Unicast
        )]
    );
    let hole = &report.black_holes[0];
    assert!(
        hole.reason.contains("no entry of table 1"),
        "{}",
        hole.reason
    );
    // The way there: admitted and sent over the cable at s1, admitted at s2.
    assert_eq!(hole.entries.len(), 3);
    assert!(report.leaks.is_empty());
}

#[test]
fn a_frame_sent_back_and_forth_is_a_loop() {
    let mut one = s1();
    one.push(flow(
        0,
        600,
        Match {
            in_port: Some(LINK),
            eth_dst: Some(C),
            ..Match::default()
        },
        out(&[port::IN_PORT]),
    ));
    let mut two = s2();
    for f in &mut two {
        if f.table == 1 && f.r#match.eth_dst == Some(C) {
            f.actions = out(&[port::IN_PORT]);
        }
    }
    let report = network(one, two).verify();
    assert!(!report.loops.is_empty(), "{report:#?}");
    assert!(
        report.loops[0].reason.contains("comes back"),
        "{}",
        report.loops[0].reason
    );
    assert_eq!(
        pairs(&report.black_holes),
        vec![(
            "00:00:00:00:00:01".into(),
            "00:00:00:00:00:03".into(),
            FrameKind::Unicast
        )]
    );
}

#[test]
fn a_masked_destination_takes_every_address_under_its_mask() {
    let mut tables = s1();
    tables.push(flow(
        0,
        500,
        Match {
            in_port: Some(2),
            eth_dst: Some([0; 6]),
            eth_dst_mask: Some([0xff, 0xff, 0xff, 0xff, 0xff, 0xfc]),
            ..Match::default()
        },
        out(&[1, LINK]),
    ));
    let report = network(tables, s2()).verify();
    // b reaches a; its frames to c cross the cable but s2 admits nobody but a from it,
    // while a sender at b's port faking a's MAC gets through to c as well. A broadcast is
    // outside the mask.
    assert_eq!(
        pairs(&report.leaks),
        vec![
            (
                "00:00:00:00:00:02".into(),
                "00:00:00:00:00:01".into(),
                FrameKind::Unicast
            ),
            (
                "unbound@0x1:2".into(),
                "00:00:00:00:00:01".into(),
                FrameKind::Unicast
            ),
            (
                "unbound@0x1:2".into(),
                "00:00:00:00:00:03".into(),
                FrameKind::Unicast
            ),
        ]
    );
    assert_eq!(
        report.leaks[0].entries[0].r#match,
        "in_port=2,dl_dst=00:00:00:00:00:00/ff:ff:ff:ff:ff:fc"
    );
}

#[test]
fn a_shadowed_entry_leaks_only_for_what_reaches_it() {
    let mut tables = s1();
    tables.push(flow(
        0,
        10,
        Match {
            in_port: Some(2),
            ..Match::default()
        },
        out(&[1]),
    ));
    let report = network(tables, s2()).verify();
    // b itself meets its admission first; only a sender faking another MAC at b's port
    // falls to the low entry.
    assert_eq!(
        pairs(&report.leaks),
        vec![(
            "unbound@0x1:2".into(),
            "00:00:00:00:00:01".into(),
            FrameKind::Unicast
        )]
    );
}

#[test]
fn a_wrong_tag_written_to_the_metadata_leaks() {
    let mut tables = s1();
    for f in &mut tables {
        if f.r#match.eth_src == Some(B) {
            f.tag = Some(1);
        }
    }
    let report = network(tables, s2()).verify();
    // s2 admits nobody from the cable but a: b reaches a only, by unicast and broadcast.
    assert_eq!(
        pairs(&report.leaks),
        vec![
            (
                "00:00:00:00:00:02".into(),
                "00:00:00:00:00:01".into(),
                FrameKind::Unicast
            ),
            (
                "00:00:00:00:00:02".into(),
                "00:00:00:00:00:01".into(),
                FrameKind::Broadcast
            ),
        ]
    );
}

#[test]
fn flood_reaches_every_port_but_the_one_it_came_in() {
    let mut tables = s1();
    for f in &mut tables {
        if f.r#match.eth_dst_mask.is_some() {
            f.actions = out(&[port::FLOOD]);
        }
    }
    let report = network(tables, s2()).verify();
    assert_eq!(
        pairs(&report.leaks),
        vec![
            (
                "00:00:00:00:00:01".into(),
                "00:00:00:00:00:02".into(),
                FrameKind::Broadcast
            ),
            (
                "00:00:00:00:00:03".into(),
                "00:00:00:00:00:02".into(),
                FrameKind::Broadcast
            ),
        ]
    );
    assert!(report.black_holes.is_empty());
}

#[test]
fn on_one_zero_a_frame_for_the_controller_is_its_decision() {
    // One 1.0 switch holding the per-pair flow a to b only; both in one slice.
    let mut v = Verifier::new();
    let pair = flow(
        0,
        100,
        Match {
            in_port: Some(1),
            eth_src: Some(A),
            eth_dst: Some(B),
            ..Match::default()
        },
        out(&[2]),
    );
    assert!(v
        .set_tables(1, Version::Of10, stats(Version::Of10, vec![pair]))
        .is_empty());
    let slice: SliceName = "s".parse().expect("name");
    let mut m = Membership::default();
    m.add_slice(&slice);
    m.add_mac(&slice, PortId::new(1, 1), mac(A));
    m.add_mac(&slice, PortId::new(1, 2), mac(B));
    v.set_hosts(
        &m,
        [(mac(A), PortId::new(1, 1)), (mac(B), PortId::new(1, 2))],
    );
    let report = v.verify();
    assert!(report.is_clean(), "{report:#?}");
    // b to a (unicast) and both broadcasts wait for the controller.
    assert_eq!(report.via_controller, 3);
}

#[test]
fn only_traces_that_saw_a_change_run_again() {
    let mut v = network(s1(), s2());
    let first = v.verify();
    // Three hosts and one edge port each: six traces.
    assert_eq!(first.traced, 6);
    assert_eq!(v.verify().traced, 0);
    let mut tables = s2();
    tables.retain(|f| !(f.table == 1 && f.r#match.eth_dst == Some(C)));
    assert!(v
        .set_tables(2, Version::Of13, stats(Version::Of13, tables))
        .is_empty());
    let report = v.verify();
    // a's frames (tag 1) met the removed entry at s2, and so did c's to itself; b's and
    // the unbound senders' did not.
    assert_eq!(report.traced, 2, "{report:#?}");
    assert_eq!(report.black_holes.len(), 1);
    let mut whole = network(s1(), s2());
    let mut tables = s2();
    tables.retain(|f| !(f.table == 1 && f.r#match.eth_dst == Some(C)));
    whole.set_tables(2, Version::Of13, stats(Version::Of13, tables));
    let again = whole.verify();
    assert_eq!(
        (again.leaks, again.black_holes),
        (report.leaks, report.black_holes)
    );
}

#[test]
fn equal_priorities_reported_in_another_order_are_looked_up_in_that_order() {
    // Two entries for c at one priority: the first reported forwards, the other drops.
    let dropper = |tables: &mut Vec<Flow>| {
        let at = tables
            .iter()
            .position(|f| f.table == 1 && f.r#match.eth_dst == Some(C))
            .expect("the entry for c");
        let mut drop = tables[at].clone();
        drop.actions = vec![];
        tables.insert(at + 1, drop);
        at
    };
    let mut first = s1();
    dropper(&mut first);
    let mut v = network(first.clone(), s2());
    assert!(v.verify().is_clean());
    // The same entries, the dropping one reported first: a's unicast to c is lost.
    let mut swapped = first;
    let at = dropper(&mut s1());
    swapped.swap(at, at + 1);
    assert!(v
        .set_tables(1, Version::Of13, stats(Version::Of13, swapped.clone()))
        .is_empty());
    let report = v.verify();
    let mut whole = network(swapped, s2());
    let again = whole.verify();
    assert_eq!(again.black_holes_total, 1, "{again:#?}");
    assert_eq!(
        (report.leaks, report.black_holes),
        (again.leaks, again.black_holes)
    );
}

#[test]
fn unreadable_and_unmodelled_entries_are_returned() {
    let mut v = Verifier::new();
    let mut entries = stats(Version::Of13, vec![to(1, A, &[1])]);
    let mut broken = entries[0].clone();
    broken.raw_actions = vec![0, 4, 0, 3];
    let mut group = entries[0].clone();
    group.priority = 7;
    // APPLY_ACTIONS holding one GROUP action (group 9).
    group.raw_actions = vec![0, 4, 0, 16, 0, 0, 0, 0, 0, 22, 0, 8, 0, 0, 0, 9];
    entries.push(broken);
    entries.push(group);
    let unreadable = v.set_tables(1, Version::Of13, entries);
    assert_eq!(unreadable.len(), 2, "{unreadable:?}");
    assert!(
        unreadable[0].reason.contains("instruction"),
        "{unreadable:?}"
    );
    assert!(unreadable[1].reason.contains("group 9"), "{unreadable:?}");
    assert_eq!(v.verify().entries, 2);
}

#[test]
fn an_address_bound_at_a_port_but_served_elsewhere_is_no_unbound_sender_there() {
    // B is bound at 0x1:2 and admitted there, but heard (served) at 0x2:2: a frame from
    // 0x1:2 in B's name is what the slices allow at that port, not a stranger's.
    let mut v = network(s1(), s2());
    let m = slices();
    v.set_hosts(
        &m,
        [
            (mac(A), PortId::new(1, 1)),
            (mac(B), PortId::new(2, 2)),
            (mac(C), PortId::new(2, 1)),
        ],
    );
    let mut s1 = s1();
    // B's admission at 0x1:2 tagged blue, as a slice of both would: were B's address
    // taken for a stranger's at 0x1:2, this would be a leak to A.
    s1[1] = admit(2, B, 1);
    assert!(v
        .set_tables(1, Version::Of13, stats(Version::Of13, s1))
        .is_empty());
    let report = v.verify();
    let unbound: Vec<_> = pairs(&report.leaks)
        .into_iter()
        .filter(|(src, _, _)| src.starts_with("unbound@"))
        .collect();
    assert!(unbound.is_empty(), "{unbound:?}");
}

/// One switch with `n` hosts, one a port, under `slices` (host i in slice `slices(i)`),
/// holding one entry of table 0 for every frame.
fn one_switch(n: u8, slices: impl Fn(u8) -> usize, actions: Vec<Action>) -> Verifier {
    let mut m = Membership::default();
    let mut served = Vec::new();
    for i in 1..=n {
        let slice: SliceName = format!("s{}", slices(i)).parse().expect("name");
        m.add_slice(&slice);
        let host = mac([0, 0, 0, 0, 1, i]);
        m.add_mac(&slice, PortId::new(1, u32::from(i)), host);
        served.push((host, PortId::new(1, u32::from(i))));
    }
    let mut v = Verifier::new();
    let every = flow(0, 1, Match::default(), actions);
    assert!(v
        .set_tables(1, Version::Of13, stats(Version::Of13, vec![every]))
        .is_empty());
    v.set_ports(1, 1..=u32::from(n));
    v.set_hosts(&m, served);
    v
}

#[test]
fn a_table_that_leaks_everything_makes_a_bounded_report_with_exact_totals() {
    // Eight hosts, each alone in its slice, and a flood of everything: each ordered pair
    // leaks twice (frames addressed to the receiver, and the others), and each port's
    // unbound senders reach the seven other hosts.
    let mut v = one_switch(8, usize::from, out(&[port::FLOOD]));
    let report = v.verify();
    assert_eq!(report.pairs_checked, 56);
    assert_eq!(report.leaks_total, 8 * 7 * 2 + 8 * 7);
    assert_eq!(report.leaks.len(), VIOLATIONS_KEPT);
    assert_eq!((report.black_holes_total, report.loops_total), (0, 0));
    assert!(!report.is_clean());
    // The first found are kept, in the order senders are judged: bound hosts by port.
    let senders: Vec<Endpoint> = report.leaks.iter().map(|l| l.src).collect();
    let mut sorted = senders.clone();
    sorted.sort();
    assert_eq!(senders, sorted);
    assert!(senders.iter().all(|s| matches!(s, Endpoint::Host { .. })));
    // The same tables give the same report, verified again from nothing or not.
    let again = one_switch(8, usize::from, out(&[port::FLOOD])).verify();
    assert_eq!(again.leaks, report.leaks);
    assert_eq!(again.leaks_total, report.leaks_total);

    // Everyone in one slice, and every frame dropped: each ordered pair is a unicast
    // black hole, and each port a broadcast one.
    let mut v = one_switch(8, |_| 0, Vec::new());
    let report = v.verify();
    assert_eq!(report.black_holes_total, 8 * 7 * 2);
    assert_eq!(report.black_holes.len(), VIOLATIONS_KEPT);
    assert_eq!((report.leaks_total, report.leaks.len()), (0, 0));
}

#[test]
fn a_verifier_told_a_list_limit_lists_that_many_and_counts_the_same() {
    // The flood of everything above: 168 leaks, of which a limit of 500 lists all and a
    // limit of 3 the first three; the totals and the judging order do not change.
    let everything = || one_switch(8, usize::from, out(&[port::FLOOD]));
    let default = everything().verify();
    let all = everything().with_list_limit(500).verify();
    assert_eq!((all.list_limit, all.leaks_total), (500, 168));
    assert_eq!(all.leaks.len(), 168);
    assert_eq!(all.leaks[..VIOLATIONS_KEPT], default.leaks[..]);
    let few = everything().with_list_limit(3).verify();
    assert_eq!((few.list_limit, few.leaks_total), (3, 168));
    assert_eq!(few.leaks[..], all.leaks[..3]);
    assert_eq!(default.list_limit, VIOLATIONS_KEPT);
}
