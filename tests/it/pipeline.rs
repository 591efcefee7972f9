//! The proactive OpenFlow 1.3 pipeline, seen from the switches: what the real `sliced`
//! writes to emulated 1.3 switches, that traffic between bound hosts sets up nothing,
//! and that a restart reads the pipeline back instead of writing it again. Whether the
//! entries carry traffic as they should is the lab's part, on real Open vSwitch.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::common::switch::{eventually, frame, host, Network, BROADCAST};
use crate::common::Daemon;
use openflow::{FlowMod, FlowModCommand, Version};
use serde_json::Value;
use slice_controller::cookie::FlowKind;
use slice_controller::pipeline::{Entry, EntryMatch};

const WAIT: Duration = Duration::from_secs(10);

fn daemon(dir: &std::path::Path) -> Daemon {
    Daemon::start_with(dir, &["--lldp-interval-ms", "100"])
}

/// Switches 1 - 2 - 3 in a line on ports 2 and 3, host ports 1 on each, all 1.3;
/// h1 at 0x1:1 and h3 at 0x3:1 bound in "blue". Returns once every cable is found.
fn line(daemon: &Daemon) -> Network {
    daemon.add_host("blue", "0x1:1", "00:00:00:00:00:01");
    daemon.add_host("blue", "0x3:1", "00:00:00:00:00:03");
    let mut network = Network::new();
    // As real switches do: what the controller reads back after each write is what it
    // wrote (a switch that lost it is written again, which is a repair).
    network.keeping_tables();
    network.cable((1, 2), (2, 2));
    network.cable((2, 3), (3, 2));
    for dpid in 1..=3 {
        network.connect(daemon.openflow, dpid, Version::Of13, 3);
    }
    assert!(
        eventually(WAIT, || daemon
            .get_json("/topology/links")
            .as_array()
            .unwrap()
            .len()
            == 4),
        "links: {}",
        daemon.get_json("/topology/links")
    );
    network
}

/// The pipeline a switch holds after the FLOW_MODs it was sent, in order.
fn pipeline_of(flow_mods: &[FlowMod]) -> BTreeSet<Entry> {
    let mut held = BTreeSet::new();
    for flow_mod in flow_mods {
        match flow_mod.command {
            FlowModCommand::Add => {
                if let Some(entry) = Entry::of_flow_mod(flow_mod) {
                    let key = (entry.table, entry.priority, entry.rule);
                    held.retain(|e: &Entry| (e.table, e.priority, e.rule) != key);
                    held.insert(entry);
                }
            }
            FlowModCommand::DeleteStrict => held.retain(|e: &Entry| {
                let delete = e.delete_flow_mod();
                (delete.table_id, delete.priority, &delete.r#match)
                    != (flow_mod.table_id, flow_mod.priority, &flow_mod.r#match)
            }),
            _ => {}
        }
    }
    held
}

fn pipeline_entries(daemon: &Daemon, dpid: u64) -> Value {
    daemon
        .switch_view(dpid)
        .map_or(Value::Null, |switch| switch["pipeline_entries"].clone())
}

/// The pipeline of switch `dpid` of the line with h1 and h3 bound: LLDP, and LLDP and
/// transit at each link port, the transit miss, the other end's host in transit over the
/// link it comes by, both hosts as destinations, one flood entry; the ends admit their
/// host at home.
fn entries_on(dpid: u64) -> usize {
    match dpid {
        2 => 1 + 2 * 2 + 1 + 2 + 2 + 1,
        _ => 1 + 2 + 1 + 1 + 2 + 1 + 1,
    }
}

/// Waits until switch `dpid` of the line holds its whole pipeline, as sliced counts it too.
fn pipeline_in_place(daemon: &Daemon, network: &Network, dpid: u64) {
    let expected = entries_on(dpid);
    let switch = network.switch(dpid);
    assert!(
        eventually(WAIT, || pipeline_of(&switch.flow_mods()).len() == expected
            && pipeline_entries(daemon, dpid) == expected),
        "switch {dpid}: {:#?} ({} in the view)",
        pipeline_of(&switch.flow_mods()),
        pipeline_entries(daemon, dpid)
    );
}

fn forwards_to(held: &BTreeSet<Entry>) -> BTreeSet<String> {
    held.iter()
        .filter_map(|entry| match entry.rule {
            EntryMatch::TaggedTo { mac, .. } => Some(mac.to_string()),
            _ => None,
        })
        .collect()
}

#[test]
fn bound_hosts_get_the_pipeline_on_every_switch_and_their_traffic_sets_up_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path());
    let network = line(&daemon);
    for dpid in 1..=3 {
        let switch = network.switch(dpid);
        pipeline_in_place(&daemon, &network, dpid);
        let held = pipeline_of(&switch.flow_mods());
        assert_eq!(
            forwards_to(&held),
            BTreeSet::from(["00:00:00:00:00:01".into(), "00:00:00:00:00:03".into()])
        );
        for flow_mod in switch.flow_mods() {
            let kind = FlowKind::of_cookie(flow_mod.cookie);
            assert!(
                flow_mod.command != FlowModCommand::Add
                    || matches!(kind, Some(FlowKind::Pipeline | FlowKind::TableMiss)),
                "switch {dpid} got a flow that is not the pipeline's: {flow_mod:?}"
            );
        }
    }

    // h1 speaks to h3 and broadcasts: a switch that had lost the entries would ask the
    // controller, which sets up no per-pair flow and forwards nothing for a bound host.
    let s1 = network.switch(1);
    let before = s1.flow_mods().len();
    s1.packet_in(1, frame(1, host(3)));
    s1.packet_in(1, frame(1, BROADCAST));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        s1.flow_mods().len(),
        before,
        "{:?}",
        &s1.flow_mods()[before..]
    );
    assert!(network.switch(3).delivered().is_empty());
    assert_eq!(daemon.get_json("/paths"), serde_json::json!([]));

    // A third host joins: the switches are sent what changed, not the pipeline again.
    let s2 = network.switch(2);
    let before = s2.flow_mods().len();
    daemon.add_host("blue", "0x2:1", "00:00:00:00:00:02");
    // The view counts what was sent; the switch reads it a moment later.
    assert!(eventually(WAIT, || pipeline_entries(&daemon, 2)
        == entries_on(2) + 2
        && pipeline_of(&s2.flow_mods()).len() == entries_on(2) + 2));
    let sent = s2.flow_mods().len() - before;
    // Admission at home, forwarding to it, and the flood entry changed; nothing admits
    // it in transit at its own switch.
    assert_eq!(sent, 3, "{:?}", &s2.flow_mods()[before..]);
}

#[test]
fn a_restarted_daemon_reads_the_pipeline_back_and_writes_nothing_again() {
    let dir = tempfile::tempdir().unwrap();
    let first = daemon(dir.path());
    let network = line(&first);
    let mut tables = Vec::new();
    for dpid in 1..=3 {
        assert!(eventually(WAIT, || pipeline_entries(&first, dpid) == entries_on(dpid)));
        let held: Vec<FlowMod> = pipeline_of(&network.switch(dpid).flow_mods())
            .iter()
            .map(|entry| entry.flow_mod(None))
            .collect();
        tables.push((dpid, held));
    }
    drop(network);
    first.terminate();

    // The switches come back holding what they held, one by one, before their links are
    // found again: nothing is deleted meanwhile, and nothing written again after.
    let second = daemon(dir.path());
    let mut network = Network::new();
    network.cable((1, 2), (2, 2));
    network.cable((2, 3), (3, 2));
    for (dpid, held) in tables {
        network.connect_holding(second.openflow, dpid, Version::Of13, 3, held);
    }
    assert!(eventually(WAIT, || (1..=3).all(|dpid| pipeline_entries(
        &second, dpid
    ) == entries_on(
        dpid
    ))));
    // Past the grace in which links are found (two rounds of the link's maximum age,
    // at least two seconds), the tables are what the graph says.
    std::thread::sleep(Duration::from_secs(3));
    for dpid in 1..=3 {
        let switch = network.switch(dpid);
        let pipeline_writes: Vec<FlowMod> = switch
            .flow_mods()
            .into_iter()
            .filter(|f| {
                f.command == FlowModCommand::DeleteStrict
                    || (f.command == FlowModCommand::Add
                        && FlowKind::of_cookie(f.cookie) == Some(FlowKind::Pipeline))
            })
            .collect();
        assert_eq!(pipeline_writes, Vec::new(), "switch {dpid}");
        assert_eq!(pipeline_entries(&second, dpid), entries_on(dpid));
    }
}

#[test]
fn on_the_pipeline_a_spoofer_is_counted_and_an_unbound_sender_gets_a_drop_flow() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path());
    let network = line(&daemon);
    let s2 = network.switch(2);
    assert!(eventually(WAIT, || pipeline_entries(&daemon, 2) == entries_on(2)));
    // h1's MAC at 0x2:1, while h1's port 0x1:1 is up.
    s2.packet_in(1, frame(1, host(3)));
    assert!(
        eventually(WAIT, || daemon.get_json("/topology/switches")[1]["dropped"]
            ["hosts_spoofed"]
            == 1),
        "{}",
        daemon.get_json("/topology/switches")
    );
    // An unbound host at 0x2:1 writing to h3: dropped at its port, above the table-miss
    // flow, for a while.
    s2.forget();
    s2.packet_in(1, frame(9, host(3)));
    assert!(eventually(WAIT, || s2.path_flows() == vec![(1, None)]));
    assert!(network.switch(3).delivered().is_empty());
}

/// A switch without bundles (it answers them BAD_EXPERIMENTER, as one lacking the
/// extension does) is written one FLOW_MOD per entry instead, and holds the same
/// pipeline as its neighbours that take bundles (issue 36 item 3).
#[test]
fn a_switch_without_bundles_gets_the_pipeline_one_flow_mod_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path());
    daemon.add_host("blue", "0x1:1", "00:00:00:00:00:01");
    daemon.add_host("blue", "0x2:1", "00:00:00:00:00:02");
    let mut network = Network::new();
    network.lacking_bundles(2);
    network.cable((1, 2), (2, 2));
    for dpid in 1..=2 {
        network.connect(daemon.openflow, dpid, Version::Of13, 3);
    }
    for dpid in 1..=2 {
        let switch = network.switch(dpid);
        assert!(
            eventually(WAIT, || {
                let held = pipeline_entries(&daemon, dpid).as_u64().unwrap_or(0);
                held > 0 && pipeline_of(&switch.flow_mods()).len() as u64 == held
            }),
            "switch {dpid}: {} entries written, {} in the view",
            pipeline_of(&switch.flow_mods()).len(),
            pipeline_entries(&daemon, dpid)
        );
    }
    // Its refusal is remembered: bundles sent before the refusal came back may be
    // refused too, but once it is written FLOW_MODs no bundle is opened on it again.
    let received = network.switch(2).received();
    let is_open = |message: &openflow::Message| {
        matches!(message, openflow::Message::BundleControl(control)
            if control.ctrl_type == openflow::BundleCtrlType::OpenRequest)
    };
    let first_pipeline_flow_mod = received
        .iter()
        .position(|message| {
            matches!(message, openflow::Message::FlowMod(flow)
                if FlowKind::of_cookie(flow.cookie) == Some(FlowKind::Pipeline))
        })
        .expect("pipeline FLOW_MODs");
    let last_open = received.iter().rposition(is_open).expect("a bundle tried");
    assert!(
        last_open < first_pipeline_flow_mod,
        "a bundle opened after the fallback"
    );
    let opened_on_1 = network
        .switch(1)
        .received()
        .iter()
        .filter(|m| is_open(m))
        .count();
    assert!(
        opened_on_1 >= 1,
        "the switch with bundles is written in bundles"
    );
}

/// Links found within 100 ms of the last plan they made wait to be planned together; the
/// daemon's own timer plans them, with nothing else happening: LLDP rounds here are a
/// minute apart, so after the probes a port coming up sends no event reaches the engine.
#[test]
fn links_found_together_are_planned_without_waiting_for_the_next_round_of_probes() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with(dir.path(), &["--lldp-interval-ms", "60000"]);
    daemon.add_host("blue", "0x1:1", "00:00:00:00:00:01");
    daemon.add_host("blue", "0x3:1", "00:00:00:00:00:03");
    let mut network = Network::new();
    network.keeping_tables();
    let link_ports = [(1, 2), (2, 2), (2, 3), (3, 2)];
    network.cable(link_ports[0], link_ports[1]);
    network.cable(link_ports[2], link_ports[3]);
    for dpid in 1..=3 {
        network.connect(daemon.openflow, dpid, Version::Of13, 3);
    }
    assert!(eventually(WAIT, || (1..=3)
        .all(|dpid| pipeline_entries(&daemon, dpid).is_u64())));
    // The cables' ports go down and come up together: each port coming up sends its
    // probes at once, so the four links are found within milliseconds of each other.
    for live in [false, true] {
        for (dpid, port) in link_ports {
            network.switch(dpid).port_status(port, live);
        }
    }
    let links = || daemon.get_json("/topology/links").as_array().unwrap().len();
    assert!(eventually(WAIT, || links() == 4), "links: {}", links());
    for dpid in 1..=3 {
        pipeline_in_place(&daemon, &network, dpid);
    }
}
