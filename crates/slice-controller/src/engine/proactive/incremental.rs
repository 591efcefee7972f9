//! The engine's pipeline changed step by step against the reference: after every change
//! of slices or cables, each switch (emulated from the commands it was sent) holds what
//! [`pipeline::build`] computes from scratch, or while it settles what the rule for a
//! settling switch makes of what it held, and it was sent exactly the difference; and
//! what the engine keeps beside the plan follows a change of slices patched into it.

use std::collections::BTreeMap;

use openflow::FlowModCommand;
use proptest::prelude::*;
use slice_core::Change;

use super::super::tests::{config, discovery, mac, p, ports};
use super::tests::{relayed_at_host_ports, two_switches_read_back, AnsweringSwitches};
use super::*;

const PIPELINE: SwitchProfile = SwitchProfile {
    needs_table_miss_flow: true,
    protocol: openflow::Version::Of13,
    pipeline: true,
};
const SWITCHES: u64 = 4;
const SLICES: [&str; 2] = ["red", "blue"];

/// Four switches in a ring, the cable from a to b at port 10 + b of a; host ports 1 to 3.
fn ring() -> (Engine, Instant) {
    let mut engine = Engine::new(config(), Membership::default());
    let now = Instant::now();
    for dpid in 1..=SWITCHES {
        engine.switch_connected(dpid, PIPELINE, ports(&[1, 2, 3, 11, 12, 13, 14]), now);
    }
    for a in 1..=SWITCHES {
        let b = a % SWITCHES + 1;
        let (at_a, at_b) = (p(a, 10 + b as u32), p(b, 10 + a as u32));
        for (from, to) in [(at_a, at_b), (at_b, at_a)] {
            let probe = engine.probe_from(from, now);
            engine.packet_in(to.dpid, to.port_no, discovery(probe), now);
        }
    }
    for slice in SLICES {
        engine.membership_changed(&Change::SliceCreated(slice.parse().unwrap()));
    }
    engine.take_commands();
    // Every table read back empty (what `flows_read` tells the pipeline of one).
    for dpid in 1..=SWITCHES {
        engine.proactive.holds(dpid, BTreeSet::new());
    }
    (engine, now)
}

/// Applies what the engine sent each switch to its emulated table; the flow mods each
/// switch got.
fn apply(
    engine: &mut Engine,
    tables: &mut BTreeMap<u64, BTreeSet<Entry>>,
) -> BTreeMap<u64, Vec<openflow::FlowMod>> {
    let mut sent: BTreeMap<u64, Vec<openflow::FlowMod>> = BTreeMap::new();
    for (dpid, command) in engine.take_commands() {
        let Command::Pipeline(flow_mods) = command else {
            continue;
        };
        engine.pipeline_written(dpid);
        let table = tables.entry(dpid).or_default();
        for flow_mod in flow_mods {
            match flow_mod.command {
                FlowModCommand::DeleteStrict => {
                    table.retain(|entry| entry.delete_flow_mod() != flow_mod);
                }
                FlowModCommand::Add => {
                    let entry = Entry::of_flow_mod(&flow_mod).expect("an entry of the pipeline");
                    table.retain(|held| pipeline::key(held) != pipeline::key(&entry));
                    table.insert(entry);
                }
                other => panic!("a pipeline {other:?}"),
            }
            sent.entry(dpid).or_default().push(flow_mod);
        }
    }
    sent
}

/// What each switch should hold now that it held `tables`, and the flow mods that take
/// it there, as the engine computed them before it kept its state as a plan: everything
/// from scratch.
fn reference(
    engine: &Engine,
    tables: &BTreeMap<u64, BTreeSet<Entry>>,
) -> BTreeMap<u64, (BTreeSet<Entry>, Vec<openflow::FlowMod>)> {
    let wanted = pipeline::build(&Fabric::of_topology(&engine.topology), &engine.membership);
    let judge = Judge::of(&engine.membership);
    let mut out = BTreeMap::new();
    for (dpid, mut entries) in wanted {
        let held = tables.get(&dpid).cloned().unwrap_or_default();
        if engine.proactive.settling.contains_key(&dpid) {
            let host_port = |port_no| engine.guard.is_host_port(PortId::new(dpid, port_no));
            entries = settled(&judge, dpid, &engine.topology, &held, entries, host_port);
        }
        let diff = pipeline::diff(&held, &entries);
        let flow_mods = (diff.delete.iter().map(Entry::delete_flow_mod))
            .chain(diff.add.iter().map(|entry| entry.flow_mod(None)))
            .collect();
        out.insert(dpid, (entries, flow_mods));
    }
    out
}

#[derive(Debug, Clone)]
enum Step {
    Bind {
        dpid: u64,
        port_no: u32,
        mac: u8,
        slice: usize,
    },
    Unbind(usize),
    /// A link port goes down.
    PortDown(u64, u32),
    /// The switches stop settling.
    Settled,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (1..=SWITCHES, 1u32..4, 1u8..9, 0usize..2)
            .prop_map(|(dpid, port_no, mac, slice)| Step::Bind { dpid, port_no, mac, slice }),
        3 => (0usize..32).prop_map(Step::Unbind),
        1 => (1..=SWITCHES, 11u32..15).prop_map(|(dpid, port_no)| Step::PortDown(dpid, port_no)),
        1 => Just(Step::Settled),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_change_sends_exactly_what_a_sync_from_scratch_would(
        steps in proptest::collection::vec(step(), 1..30),
    ) {
        let (mut engine, now) = ring();
        let mut tables = BTreeMap::new();
        apply(&mut engine, &mut tables);
        let mut bound: Vec<(usize, PortId, MacAddress)> = Vec::new();
        for step in &steps {
            match *step {
                Step::Bind { dpid, port_no, mac: n, slice } => {
                    let (name, port) = (SLICES[slice].parse().unwrap(), p(dpid, port_no));
                    engine.membership_changed(&Change::PortAdded { slice: SLICES[slice].parse().unwrap(), port });
                    engine.membership_changed(&Change::MacAdded { slice: name, port, mac: mac(n) });
                    bound.push((slice, port, mac(n)));
                }
                Step::Unbind(n) if !bound.is_empty() => {
                    let (slice, port, mac) = bound.remove(n % bound.len());
                    engine.membership_changed(&Change::MacDeleted { slice: SLICES[slice].parse().unwrap(), port, mac });
                }
                Step::Unbind(_) => {}
                Step::PortDown(dpid, port_no) => {
                    let down = PortState { name: format!("eth{port_no}"), live: false };
                    engine.port_changed(p(dpid, port_no), Some(down), now);
                }
                Step::Settled => engine.end_settling(now + Duration::from_secs(86_400)),
            }
            let expected = reference(&engine, &tables);
            let sent = apply(&mut engine, &mut tables);
            for (dpid, (entries, flow_mods)) in &expected {
                prop_assert_eq!(&tables[dpid], entries, "switch {} after {:?}", dpid, step);
                let got = sent.get(dpid).cloned().unwrap_or_default();
                prop_assert_eq!(&got, flow_mods, "switch {} after {:?}", dpid, step);
                prop_assert_eq!(engine.proactive.entries_held(*dpid), Some(entries.len()));
            }
        }
    }
}

#[test]
fn a_port_bound_or_freed_by_a_change_of_slices_is_judged_so_by_the_link_guard() {
    let (mut engine, _) = two_switches_read_back();
    let now = Instant::now();
    let slice: slice_core::SliceName = "s".parse().unwrap();
    // h3 leaves 1:3 and a new host is bound at 2:3, in a slice that has members: the
    // plan is patched for their MACs, and so is where the bound ports are.
    engine.membership_changed(&Change::MacDeleted {
        slice: slice.clone(),
        port: p(1, 3),
        mac: mac(3),
    });
    engine.membership_changed(&Change::MacAdded {
        slice: slice.clone(),
        port: p(2, 3),
        mac: mac(4),
    });
    engine.take_commands_answered();
    assert_eq!(relayed_at_host_ports(&mut engine, 3, now), 10);
    let links = engine.links();
    assert_eq!(links.len(), 2, "only the cable: {links:?}");
    // Now neither end is bound: those probes are judged as any other.
    engine.membership_changed(&Change::MacDeleted {
        slice,
        port: p(2, 3),
        mac: mac(4),
    });
    engine.take_commands_answered();
    let later = now + Duration::from_secs(1);
    assert_eq!(relayed_at_host_ports(&mut engine, 3, later), 10);
}
