//! Where links may form (issue 33): two hosts that hand each other the controller's own
//! probes make no link once their switches' discovery window has closed, port flaps or
//! not, and none at all off a declared fabric; a fabric entry that is not one stops the
//! start. Emulated switches over real TCP, the real `sliced`.

use std::time::Duration;

use super::{daemon, dropped, links, probes_out_of, WAIT};
use crate::common::switch::{eventually, Network};
use crate::common::Daemon;
use openflow::Version;
use serde_json::{json, Value};

/// Rounds of genuine probes the attackers relay: far more than any rule counts.
const ROUNDS: usize = 6;

pub(super) fn off_fabric(daemon: &Daemon, dpid: u64) -> u64 {
    dropped(daemon, dpid).map_or(0, |counts| counts["lldp_off_fabric"].as_u64().unwrap())
}

/// Switches 1 and 2 cabled on port 3; silent attackers behind 0x1:2 and 0x2:2 relay the
/// newest `rounds` probes sent out of their ports to each other, and the daemon counts
/// every one as off the fabric.
fn relay_makes_no_link(daemon: &Daemon, network: &Network, rounds: usize, expected_off: u64) {
    let (s1, s2) = (network.switch(1), network.switch(2));
    let (mut from_1, mut from_2) = (Vec::new(), Vec::new());
    assert!(eventually(WAIT, || {
        from_1 = probes_out_of(&s1, 2);
        from_2 = probes_out_of(&s2, 2);
        from_1.len() >= rounds && from_2.len() >= rounds
    }));
    for round in 0..rounds {
        s2.packet_in(2, from_1[from_1.len() - rounds + round].clone());
        s1.packet_in(2, from_2[from_2.len() - rounds + round].clone());
    }
    // A relayed probe older than its link's age limit (a loaded machine) is refused as
    // stale before its place is judged: refused either way.
    let refused = |dpid: u64| {
        dropped(daemon, dpid).map_or(0, |counts| {
            counts["lldp_off_fabric"].as_u64().unwrap() + counts["lldp_stale"].as_u64().unwrap()
        })
    };
    assert!(
        eventually(WAIT, || refused(1) == expected_off
            && refused(2) == expected_off),
        "every relayed probe counted: {}",
        daemon.get_json("/topology/switches")
    );
    assert_eq!(
        links(daemon).len(),
        2,
        "only the cable: {:?}",
        links(daemon)
    );
}

#[test]
fn past_the_discovery_window_relayed_probes_make_no_link_port_flaps_or_not() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path(), &["--discovery-window", "3"]);
    assert_eq!(
        daemon.get_json("/topology/fabric"),
        json!({
            "mode": "discovered",
            "source": null,
            "declared": [],
            "down": [],
            "refused": [],
            "discovery_window_secs": 3,
        })
    );
    let mut network = Network::new();
    network.cable((1, 3), (2, 3));
    let s1 = network.connect(daemon.openflow, 1, Version::Of13, 3);
    let s2 = network.connect(daemon.openflow, 2, Version::Of13, 3);
    assert!(eventually(WAIT, || links(&daemon).len() == 2), "the cable");
    // The windows opened as the switches connected, before the cable was found: 3 s
    // from now both are closed, and a probe signed within them counts for at most the
    // ceiling of a probe's age after that (7.5 s at the default LLDP interval); a second
    // and a half more to spare.
    std::thread::sleep(Duration::from_millis(3000 + 7500 + 1500));

    relay_makes_no_link(&daemon, &network, ROUNDS, ROUNDS as u64);

    // The attackers take their links down and up, which clears what their ports showed.
    for switch in [&s1, &s2] {
        switch.port_status(2, false);
        switch.port_status(2, true);
    }
    relay_makes_no_link(&daemon, &network, ROUNDS, 2 * ROUNDS as u64);
}

#[test]
fn off_a_declared_fabric_relayed_probes_make_no_link_from_the_first_round() {
    let dir = tempfile::tempdir().unwrap();
    // LLDP every second, the default: refused probes are shown for two rounds of the
    // link's maximum age (7 s), far longer than this test takes to look.
    let daemon = Daemon::start_with(dir.path(), &["--per-pair-flows", "--fabric", "0x2:3-0x1:3"]);
    let fabric = |down: &[&str], refused: Value| {
        json!({
            "mode": "declared",
            "source": "settings",
            "declared": ["0x1:3-0x2:3"],
            "down": down,
            "refused": refused,
            "discovery_window_secs": null,
        })
    };
    assert_eq!(
        daemon.get_json("/topology/fabric"),
        fabric(&["0x1:3-0x2:3"], json!([])),
        "the declared cable is down until its switches connect"
    );
    let mut network = Network::new();
    network.cable((1, 3), (2, 3));
    network.connect(daemon.openflow, 1, Version::Of13, 3);
    network.connect(daemon.openflow, 2, Version::Of13, 3);
    assert!(eventually(WAIT, || links(&daemon).len() == 2), "the cable");
    assert_eq!(daemon.get_json("/topology/fabric"), fabric(&[], json!([])));
    // The two newest probes: fresh at one a second, and within a port's LLDP budget.
    relay_makes_no_link(&daemon, &network, 2, 2);
    // The refused pair is shown, for an operator who plugged in a cable to declare it.
    let refused = json!([
        {"src": "0x1:2", "dst": "0x2:2"},
        {"src": "0x2:2", "dst": "0x1:2"},
    ]);
    assert_eq!(daemon.get_json("/topology/fabric"), fabric(&[], refused));
}

/// sliced with `extra` on a data directory in `dir`, and a free OpenFlow port: refused.
fn refused_start(dir: &std::path::Path, extra: &[&str]) -> String {
    let openflow = crate::common::free_port().to_string();
    let args: Vec<&str> = ["--openflow", openflow.as_str()]
        .into_iter()
        .chain(extra.iter().copied())
        .collect();
    crate::common::refused_start(&dir.join("db"), &args)
}

#[test]
fn a_fabric_that_is_not_one_stops_the_start_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let stderr = refused_start(dir.path(), &["--fabric", "1:3-0x2:3"]);
    assert!(stderr.contains("1:3"), "names the entry: {stderr}");
    let config = dir.path().join("sliced.toml");
    std::fs::write(
        &config,
        "[controller]\nfabric = [\"0x1:3-0x2:3\", \"0x1:3-0x3:3\"]\n",
    )
    .unwrap();
    let stderr = refused_start(dir.path(), &["--config", config.to_str().unwrap()]);
    assert!(
        stderr.contains("port 0x1:3 is declared twice"),
        "names the port: {stderr}"
    );
    assert!(
        !dir.path().join("db").join("store").exists(),
        "no store made"
    );
}
