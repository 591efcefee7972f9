//! Late switches and flapping links (issue 36 item 2), against the real `sliced`:
//! switches whose LLDP PACKET_INs come later and later keep their cable, and a cable
//! whose port flaps is held out, counted, and let back once steady. Emulated switches over
//! real TCP.

use std::time::Duration;

use super::{links, WAIT};
use crate::common::metric;
use crate::common::switch::{eventually, Network};
use crate::common::Daemon;
use openflow::Version;

/// 250 ms: the age limit's floor is 875 ms (and a probe's freshness a second at least),
/// its ceiling 1,875 ms, and a flap's penalty halves every 3.75 s.
const INTERVAL_MS: &str = "250";

fn daemon(dir: &std::path::Path) -> Daemon {
    Daemon::start_with(
        dir,
        &["--lldp-interval-ms", INTERVAL_MS, "--per-pair-flows"],
    )
}

fn links_down(daemon: &Daemon) -> f64 {
    metric(daemon, "sliced_link_events_total{event=\"down\"}").unwrap_or(0.0)
}

/// Switches 1 and 2 cabled on port 3, the cable found.
fn cabled(daemon: &Daemon) -> Network {
    let mut network = Network::new();
    network.cable((1, 3), (2, 3));
    network.connect(daemon.openflow, 1, Version::Of13, 3);
    network.connect(daemon.openflow, 2, Version::Of13, 3);
    assert!(eventually(WAIT, || links(daemon).len() == 2), "the cable");
    network
}

#[test]
fn switches_that_answer_later_and_later_keep_their_cable() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path());
    let network = cabled(&daemon);
    // Later by 100 ms every two rounds, up to 1.4 s: past the fixed limit of old (the
    // probes went stale after a second and the cable expired over and over), within
    // the ceiling.
    for step in 1..=14u64 {
        for dpid in [1, 2] {
            network
                .switch(dpid)
                .delay_lldp(Duration::from_millis(100 * step));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    // Steadily late for a while: twenty rounds.
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(links(&daemon).len(), 2, "{:?}", links(&daemon));
    assert_eq!(links_down(&daemon), 0.0, "no expiry while the cable stays");
}

#[test]
fn a_flapping_cable_is_held_out_then_let_back() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path());
    let network = cabled(&daemon);
    let s1 = network.switch(1);
    // Down and up five times, each time back as a link before the next.
    for flap in 1..=5 {
        s1.port_status(3, false);
        assert!(
            eventually(WAIT, || links_down(&daemon) == f64::from(2 * flap)),
            "flap {flap}"
        );
        s1.port_status(3, true);
        if flap < 5 {
            assert!(
                eventually(WAIT, || links(&daemon).len() == 2),
                "back after flap {flap}"
            );
        }
    }
    // The fifth within a half-life holds both directions out for several seconds
    // (some 6 s), while the probes keep coming.
    assert!(eventually(WAIT, || {
        metric(&daemon, "sliced_links_held_total") == Some(2.0)
    }));
    assert!(links(&daemon).is_empty(), "held: {:?}", links(&daemon));
    // Let back once steady, with no more flaps counted.
    assert!(
        eventually(Duration::from_secs(30), || links(&daemon).len() == 2),
        "let back"
    );
    assert_eq!(links_down(&daemon), 10.0);
}
