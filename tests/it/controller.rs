//! Black-box tests of the controller: the real `sliced`, emulated switches over real TCP.
//!
//! These check per-pair flows set up by traffic, what OpenFlow 1.0 switches always get,
//! so the daemon runs with `--per-pair-flows` and gives 1.3 switches the same. An
//! emulated switch applies no flows; the proactive 1.3 pipeline is checked by what the
//! switches are sent in `pipeline.rs`, and by traffic on real Open vSwitch in the lab.

use std::time::Duration;

use crate::common::switch::{self, eventually, frame, host, Network, BROADCAST};
use crate::common::{agent, status_json, Daemon};
use openflow::{ErrorType, FlowModCommand, Message, Version};
use serde_json::{json, Value};

/// Generous: a loaded two-core machine runs the test binaries in parallel.
const WAIT: Duration = Duration::from_secs(10);

/// A daemon with a fast LLDP interval, so discovery takes a fraction of a second.
fn daemon(dir: &std::path::Path) -> Daemon {
    Daemon::start_with(dir, &["--lldp-interval-ms", "100", "--per-pair-flows"])
}

fn post(daemon: &Daemon, path: &str, body: Value) {
    let (status, response) = status_json(agent().post(&daemon.url(path)).send_json(body));
    assert_eq!(status, 201, "POST {path}: {response}");
}

fn delete(daemon: &Daemon, path: &str, body: Value) {
    let (status, response) = status_json(agent().delete(&daemon.url(path)).send_json(body));
    assert_eq!(status, 200, "DELETE {path}: {response}");
}

/// Host `last` speaks up (a broadcast) on `port` of `switch`; returns once the controller
/// has learned it, so that a unicast sent next, on another switch's connection, cannot
/// overtake it.
fn announce(daemon: &Daemon, switch: &switch::Switch, port: u32, last: u8) {
    switch.packet_in(port, frame(last, BROADCAST));
    assert!(
        eventually(WAIT, || knows_host(daemon, last)),
        "host {last:#x} learned"
    );
}

/// Whether the controller has learned host `last` (the last octet of its MAC address).
fn knows_host(daemon: &Daemon, last: u8) -> bool {
    host_of(daemon, last).is_some()
}

/// Host `last` as `/topology/hosts` shows it, if the controller has learned it.
fn host_of(daemon: &Daemon, last: u8) -> Option<Value> {
    let mac = format!("00:00:00:00:00:{last:02x}");
    daemon
        .get_json("/topology/hosts")
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["mac"] == mac.as_str())
        .cloned()
}

/// An ARP request from host `last` (the last octet of its MAC address) announcing `ip`,
/// asking for 10.0.0.254.
pub(crate) fn arp_request(last: u8, ip: [u8; 4]) -> Vec<u8> {
    let mut frame = BROADCAST.to_vec();
    frame.extend_from_slice(&host(last));
    // ARP; Ethernet and IPv4, 6- and 4-octet addresses; a request.
    frame.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0x00, 6, 4, 0, 1]);
    frame.extend_from_slice(&host(last));
    frame.extend_from_slice(&ip);
    frame.extend_from_slice(&[0; 6]);
    frame.extend_from_slice(&[10, 0, 0, 254]);
    frame.resize(60, 0);
    frame
}

/// A neighbour solicitation from host `last` with IPv6 source `source`.
fn neighbour_solicitation(last: u8, source: std::net::Ipv6Addr) -> Vec<u8> {
    let mut frame = vec![0x33, 0x33, 0xff, 0, 0, 0x01];
    frame.extend_from_slice(&host(last));
    // IPv6, 24 octets of ICMPv6, hop limit 255 as on-link neighbour discovery must have.
    frame.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0, 0, 24, 58, 255]);
    frame.extend_from_slice(&source.octets());
    let solicited: std::net::Ipv6Addr = "ff02::1:ff00:1".parse().unwrap();
    frame.extend_from_slice(&solicited.octets());
    frame.extend_from_slice(&[135, 0, 0, 0, 0, 0, 0, 0]);
    let target: std::net::Ipv6Addr = "2001:db8::1".parse().unwrap();
    frame.extend_from_slice(&target.octets());
    frame
}

/// The addresses `/topology/hosts` shows for host `last`.
fn ip_addresses_of(daemon: &Daemon, last: u8) -> Value {
    host_of(daemon, last).map_or(Value::Null, |h| h["ip_addresses"].clone())
}

/// A host's ARP request and neighbour solicitation, as PACKET_INs, put its IPv4 and IPv6
/// addresses in `/topology/hosts` (most recent first), the last four only.
#[test]
fn hosts_show_the_ip_addresses_they_announced() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path());
    let mut network = Network::new();
    network.connect(daemon.openflow, 1, Version::Of13, 2);
    let switch = network.switch(1);
    // A PACKET_IN before the handshake ends counts for nothing.
    assert!(eventually(WAIT, || daemon.switch_view(1).is_some()));
    switch.packet_in(1, arp_request(1, [10, 0, 0, 1]));
    assert!(
        eventually(WAIT, || ip_addresses_of(&daemon, 1) == json!(["10.0.0.1"])),
        "{}",
        daemon.get_json("/topology/hosts")
    );
    switch.packet_in(1, neighbour_solicitation(1, "fe80::1".parse().unwrap()));
    assert!(
        eventually(WAIT, || ip_addresses_of(&daemon, 1)
            == json!(["fe80::1", "10.0.0.1"])),
        "{}",
        daemon.get_json("/topology/hosts")
    );
    for last in 2..=5 {
        switch.packet_in(1, arp_request(1, [10, 0, 0, last]));
    }
    assert!(
        eventually(WAIT, || ip_addresses_of(&daemon, 1)
            == json!(["10.0.0.5", "10.0.0.4", "10.0.0.3", "10.0.0.2"])),
        "{}",
        daemon.get_json("/topology/hosts")
    );
    // Plain traffic teaches a host but no address.
    announce(&daemon, &switch, 2, 2);
    assert_eq!(ip_addresses_of(&daemon, 2), json!([]));
}

fn link_count(daemon: &Daemon) -> usize {
    daemon.get_json("/topology/links").as_array().unwrap().len()
}

/// Switches 1 - 2 - 3 in a line on ports 2 and 3; a host port 1 on each.
fn line(daemon: &Daemon, version: Version) -> Network {
    cabled(daemon, version, &[((1, 2), (2, 2)), ((2, 3), (3, 2))])
}

/// Switches 1, 2 and 3 with three ports each, cabled as given; returns once the
/// controller has discovered every cable in both directions.
/// A cable between two (dpid, port) ends.
type Cable = ((u64, u32), (u64, u32));

fn cabled(daemon: &Daemon, version: Version, cables: &[Cable]) -> Network {
    let mut network = Network::new();
    for (a, b) in cables {
        network.cable(*a, *b);
    }
    for dpid in 1..=3 {
        network.connect(daemon.openflow, dpid, version, 3);
    }
    assert!(
        eventually(WAIT, || link_count(daemon) == 2 * cables.len()),
        "links discovered: {}",
        daemon.get_json("/topology/links")
    );
    network
}

/// `/topology/switches` without the drop counters, which the `hostile_network` tests
/// cover.
fn handshake(version: Version) {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path());
    let mut network = Network::new();
    let switch = network.connect(daemon.openflow, 0xabc, version, 2);
    assert!(eventually(WAIT, || {
        daemon.switches_without_drops()
            == json!([{"dpid": 0xabc, "name": "0xabc", "version": u8::from(version), "ports": [
                {"port_no": 1, "name": "eth1", "live": true},
                {"port_no": 2, "name": "eth2", "live": true},
            ]}])
    }));
    let received = switch.received();
    assert!(
        matches!(received.first(), Some(Message::Hello { .. })),
        "{received:?}"
    );
    assert!(received
        .iter()
        .any(|m| matches!(m, Message::FeaturesRequest)));
    assert!(
        eventually(WAIT, || switch
            .received()
            .iter()
            .any(|m| matches!(m, Message::FlowStatsRequest))),
        "the flow table is read back"
    );
    let flushes = switch
        .flow_mods()
        .iter()
        .any(|f| f.command == FlowModCommand::Delete);
    assert!(!flushes, "a connect reconciles rather than flushes");
    let has_table_miss = || {
        switch.flow_mods().into_iter().any(|f| {
            f.command == FlowModCommand::Add
                && f.priority == 0
                && f.r#match == openflow::Match::default()
        })
    };
    if version == Version::Of13 {
        // It follows the meter negotiation, which may end after the switch is listed.
        assert!(eventually(WAIT, has_table_miss), "a table-miss flow on 1.3");
    } else {
        assert!(!has_table_miss(), "no table-miss flow on 1.0");
    }
    assert_eq!(
        received
            .iter()
            .any(|m| matches!(m, Message::PortDescRequest)),
        version == Version::Of13
    );
}

/// PORT_STATUS's reason decides between a port that is down and one that is gone.
#[test]
fn a_port_status_tells_a_changed_port_from_a_deleted_one() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path());
    let mut network = Network::new();
    let switch = network.connect(daemon.openflow, 0xabc, Version::Of13, 2);
    let ports = |ports: Value| json!([{"dpid": 0xabc, "name": "0xabc", "version": u8::from(Version::Of13), "ports": ports}]);
    assert!(eventually(WAIT, || daemon.switches_without_drops()
        == ports(json!([
            {"port_no": 1, "name": "eth1", "live": true},
            {"port_no": 2, "name": "eth2", "live": true},
        ]))));

    switch.port_status(2, false);
    assert!(eventually(WAIT, || daemon.switches_without_drops()
        == ports(json!([
            {"port_no": 1, "name": "eth1", "live": true},
            {"port_no": 2, "name": "eth2", "live": false},
        ]))));

    switch.port_deleted(2);
    assert!(eventually(WAIT, || daemon.switches_without_drops()
        == ports(json!([{"port_no": 1, "name": "eth1", "live": true}]))));
}

#[test]
fn handshake_on_openflow_1_0() {
    handshake(Version::Of10);
}

#[test]
fn handshake_on_openflow_1_3() {
    handshake(Version::Of13);
}

#[test]
fn links_are_discovered_by_lldp() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path());
    let _network = line(&daemon, Version::Of13);
    assert_eq!(
        daemon.get_json("/topology/links"),
        json!([
            {"src": "0x1:2", "dst": "0x2:2"},
            {"src": "0x2:2", "dst": "0x1:2"},
            {"src": "0x2:3", "dst": "0x3:2"},
            {"src": "0x3:2", "dst": "0x2:3"},
        ])
    );
}

fn path_installed_hop_by_hop(version: Version) {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path());
    daemon.add_host("blue", "0x1:1", "00:00:00:00:00:01");
    daemon.add_host("blue", "0x3:1", "00:00:00:00:00:03");
    let network = line(&daemon, version);
    let (s1, s2, s3) = (network.switch(1), network.switch(2), network.switch(3));

    s3.packet_in(1, frame(3, BROADCAST));
    assert!(
        eventually(WAIT, || !s1.delivered().is_empty()),
        "h3's broadcast reaches h1"
    );
    s1.packet_in(1, frame(1, host(3)));
    assert!(eventually(WAIT, || s1.path_flows() == vec![(1, Some(2))]));
    // Each switch has its own connection: the flows arrive in no fixed order.
    assert!(eventually(WAIT, || s2.path_flows() == vec![(2, Some(3))]));
    assert!(eventually(WAIT, || s3.path_flows() == vec![(2, Some(1))]));
    assert!(eventually(WAIT, || s3
        .delivered()
        .iter()
        .any(|(port, data)| *port == 1 && data[..6] == host(3))));
    assert_eq!(
        daemon.get_json("/paths"),
        json!([{"src": "00:00:00:00:00:01", "dst": "00:00:00:00:00:03",
                "hops": ["0x1:1", "0x1:2", "0x2:2", "0x2:3", "0x3:2", "0x3:1"]}])
    );
    assert_eq!(
        daemon.get_json("/topology/hosts"),
        json!([{"mac": "00:00:00:00:00:01", "port": "0x1:1", "ip_addresses": []},
               {"mac": "00:00:00:00:00:03", "port": "0x3:1", "ip_addresses": []}])
    );
}

#[test]
fn a_path_is_installed_hop_by_hop_on_1_0() {
    path_installed_hop_by_hop(Version::Of10);
}

#[test]
fn a_path_is_installed_hop_by_hop_on_1_3() {
    path_installed_hop_by_hop(Version::Of13);
}

#[test]
fn slices_are_isolated_and_broadcasts_stay_inside() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path());
    daemon.add_host("blue", "0x1:1", "00:00:00:00:00:01");
    daemon.add_host("blue", "0x3:1", "00:00:00:00:00:03");
    daemon.add_host("red", "0x2:1", "00:00:00:00:00:02");
    let network = line(&daemon, Version::Of13);
    let (s1, s2, s3) = (network.switch(1), network.switch(2), network.switch(3));

    s2.packet_in(1, frame(2, BROADCAST));
    s1.packet_in(1, frame(1, BROADCAST));
    assert!(
        eventually(WAIT, || !s3.delivered().is_empty()),
        "blue's broadcast reaches blue"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        s1.delivered().is_empty(),
        "red's broadcast never reaches blue: {:?}",
        s1.delivered()
    );
    assert!(
        s2.delivered().is_empty(),
        "blue's broadcast never reaches red: {:?}",
        s2.delivered()
    );

    // h1 knows h2's MAC: unicast across slices is dropped at the ingress, not routed.
    s1.packet_in(1, frame(1, host(2)));
    assert!(eventually(WAIT, || s1.path_flows().contains(&(1, None))));
    std::thread::sleep(Duration::from_millis(200));
    assert!(s2.path_flows().is_empty());
    assert_eq!(daemon.get_json("/paths"), json!([]));
}

#[test]
fn removing_a_member_deletes_its_flows_from_every_switch() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path());
    daemon.add_host("blue", "0x1:1", "00:00:00:00:00:01");
    daemon.add_host("blue", "0x3:1", "00:00:00:00:00:03");
    let network = line(&daemon, Version::Of10);
    let (s1, s2, s3) = (network.switch(1), network.switch(2), network.switch(3));
    announce(&daemon, &s3, 1, 3);
    s1.packet_in(1, frame(1, host(3)));
    assert!(eventually(WAIT, || s1.path_flows().len() == 1
        && s3.path_flows().len() == 1));

    delete(
        &daemon,
        "/slices/blue/ports/0x3:1/mac_addresses",
        json!({"name": "00:00:00:00:00:03"}),
    );
    assert!(
        eventually(Duration::from_secs(1), || [&s1, &s2, &s3]
            .iter()
            .all(|s| s.strict_deletes().len() == 1)),
        "flows withdrawn within a second"
    );
    let withdrawn = s2.strict_deletes().remove(0);
    assert_eq!(withdrawn.r#match.in_port, Some(2));
    assert_eq!(withdrawn.r#match.eth_src, Some(host(1)));
    assert_eq!(withdrawn.r#match.eth_dst, Some(host(3)));
    assert_eq!(daemon.get_json("/paths"), json!([]));
}

#[test]
fn a_slice_made_with_the_tool_through_the_daemon_reaches_the_controller() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path());
    let network = line(&daemon, Version::Of13);
    for args in [
        &["add", "blue"][..],
        &[
            "add_host",
            "--mac",
            "00:00:00:00:00:01",
            "--port",
            "0x1:1",
            "--slice",
            "blue",
        ],
        &[
            "add_host",
            "--mac",
            "00:00:00:00:00:03",
            "--port",
            "0x3:1",
            "--slice",
            "blue",
        ],
    ] {
        let output = crate::common::slice(dir.path(), args);
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let (s1, s3) = (network.switch(1), network.switch(3));
    announce(&daemon, &s3, 1, 3);
    s1.packet_in(1, frame(1, host(3)));
    assert!(eventually(WAIT, || s1.path_flows() == vec![(1, Some(2))]));
}

#[test]
fn a_failed_link_withdraws_its_paths() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path());
    daemon.add_host("blue", "0x1:1", "00:00:00:00:00:01");
    daemon.add_host("blue", "0x3:1", "00:00:00:00:00:03");
    let network = line(&daemon, Version::Of13);
    let (s1, s2, s3) = (network.switch(1), network.switch(2), network.switch(3));
    announce(&daemon, &s3, 1, 3);
    s1.packet_in(1, frame(1, host(3)));
    assert!(eventually(WAIT, || s1.path_flows().len() == 1));

    s2.port_status(3, false);
    assert!(eventually(WAIT, || s1.strict_deletes().len() == 1
        && s3.strict_deletes().len() == 1));
    assert!(eventually(WAIT, || link_count(&daemon) == 2));
    assert_eq!(daemon.get_json("/paths"), json!([]));
}

/// Reads until the controller ends the connection; false when it is still open after
/// `WAIT`.
fn closed_by_controller(stream: &mut std::net::TcpStream) -> bool {
    use std::io::Read;
    stream.set_read_timeout(Some(WAIT)).unwrap();
    let mut sink = [0u8; 4096];
    loop {
        match stream.read(&mut sink) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(err) if err.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

fn switch_count(daemon: &Daemon) -> usize {
    daemon
        .get_json("/topology/switches")
        .as_array()
        .unwrap()
        .len()
}

#[test]
fn a_hostile_switch_is_cut_off_and_the_others_carry_on() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path());
    let mut network = Network::new();
    let good = network.connect(daemon.openflow, 1, Version::Of13, 2);
    assert!(eventually(WAIT, || switch_count(&daemon) == 1));

    // A header that claims a length shorter than itself, then garbage.
    let mut short = std::net::TcpStream::connect(daemon.openflow).unwrap();
    short
        .write_all(&[0x04, 0x00, 0x00, 0x02, 0, 0, 0, 1, 0xde, 0xad])
        .unwrap();
    assert!(
        closed_by_controller(&mut short),
        "an unframeable stream is closed"
    );

    // Well framed, but not a HELLO first.
    let mut rude = std::net::TcpStream::connect(daemon.openflow).unwrap();
    rude.write_all(&[0x04, 0x02, 0x00, 0x08, 0, 0, 0, 1])
        .unwrap();
    assert!(
        closed_by_controller(&mut rude),
        "a peer skipping HELLO is closed"
    );

    // A megabyte of noise.
    let mut noisy = std::net::TcpStream::connect(daemon.openflow).unwrap();
    let noise: Vec<u8> = (0..1_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let _ = noisy.write_all(&noise);
    assert!(closed_by_controller(&mut noisy), "noise is closed");

    // A message that lies about its length in a valid header: stalls only itself.
    let mut stalled = std::net::TcpStream::connect(daemon.openflow).unwrap();
    stalled
        .write_all(&[0x04, 0x00, 0xff, 0xff, 0, 0, 0, 1])
        .unwrap();

    good.forget();
    assert!(
        eventually(WAIT, || good
            .received()
            .iter()
            .any(|m| matches!(m, Message::PacketOut(_)))),
        "LLDP still flows to the good switch"
    );
    assert_eq!(switch_count(&daemon), 1);
    assert_eq!(
        daemon.get_json("/slices"),
        json!([]),
        "the REST API still answers"
    );
}

#[test]
fn a_connected_switch_that_sends_garbage_is_disconnected_and_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path());
    let mut network = Network::new();
    let good = network.connect(daemon.openflow, 1, Version::Of13, 2);
    let bad = network.connect(daemon.openflow, 2, Version::Of13, 2);
    assert!(eventually(WAIT, || switch_count(&daemon) == 2));

    // A PACKET_IN header whose body is far too short for a PACKET_IN.
    bad.send_raw(&[0x04, 10, 0x00, 0x0c, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff]);
    assert!(
        eventually(WAIT, || daemon.switches_without_drops()
            == json!([{"dpid": 1, "name": "0x1", "version": u8::from(Version::Of13), "ports": [
                {"port_no": 1, "name": "eth1", "live": true},
                {"port_no": 2, "name": "eth2", "live": true},
            ]}])),
        "the bad switch is gone, the good one stays: {}",
        daemon.get_json("/topology/switches")
    );
    good.forget();
    assert!(eventually(WAIT, || good
        .received()
        .iter()
        .any(|m| matches!(m, Message::PacketOut(_)))));
}

#[test]
fn a_switch_without_a_common_version_is_told_and_closed() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path());
    let mut stream = std::net::TcpStream::connect(daemon.openflow).unwrap();
    // HELLO of version 1.5 (wire 0x06) whose version bitmap element offers 1.5 only:
    // header, then element type 1, length 8, bitmap with bit 6 set.
    let hello = [0x06, 0, 0, 16, 0, 0, 0, 1, 0, 1, 0, 8, 0, 0, 0, 0x40];
    stream.write_all(&hello).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    let mut received = Vec::new();
    let _ = stream.read_to_end(&mut received);
    let mut messages = Vec::new();
    let mut rest = &received[..];
    while let Ok(Some(len)) = openflow::frame_len(rest) {
        messages.push(Message::parse(&rest[..len]).map(|(_, m)| m));
        rest = &rest[len..];
    }
    assert!(
        messages.iter().any(|m| matches!(
            m,
            Ok(Message::Error {
                err_type: ErrorType::HelloFailed,
                ..
            })
        )),
        "an OFPET_HELLO_FAILED error: {messages:?}"
    );
    assert_eq!(switch_count(&daemon), 0);
}

/// Switches 1, 2 and 3 in a triangle: 1:2-2:2, 2:3-3:2, 3:3-1:3; a host port 1 on each.
fn triangle(daemon: &Daemon, version: Version) -> Network {
    cabled(
        daemon,
        version,
        &[((1, 2), (2, 2)), ((2, 3), (3, 2)), ((3, 3), (1, 3))],
    )
}

#[test]
fn after_a_link_fails_new_packets_take_another_path() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path());
    daemon.add_host("blue", "0x1:1", "00:00:00:00:00:01");
    daemon.add_host("blue", "0x2:1", "00:00:00:00:00:02");
    let network = triangle(&daemon, Version::Of13);
    let (s1, s2) = (network.switch(1), network.switch(2));
    announce(&daemon, &s2, 1, 2);
    s1.packet_in(1, frame(1, host(2)));
    assert!(eventually(WAIT, || daemon.get_json("/paths")
        == json!([{"src": "00:00:00:00:00:01", "dst": "00:00:00:00:00:02",
                   "hops": ["0x1:1", "0x1:2", "0x2:2", "0x2:1"]}])));

    // The direct link goes down at switch 1's end.
    s1.port_status(2, false);
    assert!(
        eventually(WAIT, || s1.strict_deletes().len() == 1
            && s2.strict_deletes().len() == 1),
        "the old path's flows are withdrawn"
    );
    s1.packet_in(1, frame(1, host(2)));
    assert!(
        eventually(WAIT, || daemon.get_json("/paths")
            == json!([{"src": "00:00:00:00:00:01", "dst": "00:00:00:00:00:02",
                       "hops": ["0x1:1", "0x1:3", "0x3:3", "0x3:2", "0x2:3", "0x2:1"]}])),
        "rerouted through switch 3: {}",
        daemon.get_json("/paths")
    );
    let s3 = network.switch(3);
    assert!(eventually(WAIT, || s3.path_flows().contains(&(3, Some(2)))));
}

#[test]
fn a_pair_allowed_later_is_routed_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path());
    daemon.add_host("blue", "0x1:1", "00:00:00:00:00:01");
    daemon.add_host("red", "0x3:1", "00:00:00:00:00:03");
    let network = line(&daemon, Version::Of10);
    let (s1, s3) = (network.switch(1), network.switch(3));
    announce(&daemon, &s3, 1, 3);
    s1.packet_in(1, frame(1, host(3)));
    assert!(
        eventually(WAIT, || s1.path_flows() == vec![(1, None)]),
        "dropped at the ingress while they share no slice"
    );

    post(
        &daemon,
        "/slices/blue/ports/0x3:1/mac_addresses",
        json!({"name": "00:00:00:00:00:03"}),
    );
    assert!(
        eventually(WAIT, || s1
            .strict_deletes()
            .iter()
            .any(|f| f.priority == 50)),
        "the drop flow is withdrawn as soon as the pair may talk"
    );
    s1.packet_in(1, frame(1, host(3)));
    assert!(eventually(WAIT, || s1.path_flows().contains(&(1, Some(2)))));
    assert!(eventually(WAIT, || s3
        .delivered()
        .iter()
        .any(|(port, data)| *port == 1 && data[..6] == host(3))));
}

/// A switch that comes (back) to the controller keeps the flows sliced installed for a
/// pair that may talk, and loses, each by a strict delete, the others: a path for a
/// pair no slice allows, and a flow sliced never installed. Nothing is flushed.
#[test]
fn a_connecting_switch_keeps_what_the_slices_allow_and_loses_the_rest() {
    use openflow::{Action, FlowMod, Match};
    use slice_controller::cookie::FlowKind;
    use slice_core::PortId;

    for version in [Version::Of10, Version::Of13] {
        let dir = tempfile::tempdir().unwrap();
        let daemon = daemon(dir.path());
        daemon.add_host("blue", "0xabc:1", "00:00:00:00:00:01");
        daemon.add_host("blue", "0xabc:2", "00:00:00:00:00:02");
        let path = |src: u8, dst: u8, in_port: u32, out_port: u32, ends: (u32, u32)| FlowMod {
            r#match: Match {
                in_port: Some(in_port),
                eth_src: Some(host(src)),
                eth_dst: Some(host(dst)),
                ..Match::default()
            },
            cookie: FlowKind::path(PortId::new(0xabc, ends.0), PortId::new(0xabc, ends.1)).cookie(),
            priority: 100,
            idle_timeout: 60,
            actions: vec![Action::Output {
                port: out_port,
                max_len: 0,
            }],
            ..FlowMod::default()
        };
        let foreign = FlowMod {
            r#match: Match {
                eth_type: Some(0x0806),
                ..Match::default()
            },
            priority: 7,
            ..FlowMod::default()
        };
        let holds = vec![
            path(1, 2, 1, 2, (1, 2)),
            path(2, 1, 2, 1, (2, 1)),
            // h3 is bound nowhere.
            path(1, 3, 1, 3, (1, 3)),
            foreign.clone(),
        ];
        let mut network = Network::new();
        let switch = network.connect_holding(daemon.openflow, 0xabc, version, 3, holds);
        // The deletes of one read-back go out together, in the order of the entries:
        // once the last entry's is in, any wrong one before it would be too.
        assert!(
            eventually(WAIT, || switch
                .strict_deletes()
                .iter()
                .any(|f| f.priority == 7)),
            "{version:?}: {:?}",
            switch.flow_mods()
        );
        let mut deleted: Vec<(Match, u16)> = switch
            .strict_deletes()
            .into_iter()
            .map(|f| (f.r#match, f.priority))
            .collect();
        deleted.sort_by_key(|(m, _)| m.eth_type);
        assert_eq!(
            deleted,
            vec![
                (path(1, 3, 1, 3, (1, 3)).r#match, 100),
                (foreign.r#match, 7)
            ],
            "{version:?}"
        );
        assert!(
            !switch
                .flow_mods()
                .iter()
                .any(|f| f.command == FlowModCommand::Delete),
            "{version:?}: no flush"
        );
        // The kept flows are the pairs' paths until the controller sets up its own.
        assert_eq!(
            daemon.get_json("/paths"),
            json!([
                {"src": "00:00:00:00:00:01", "dst": "00:00:00:00:00:02",
                 "hops": ["0xabc:1", "0xabc:2"],
                 "adopted": true},
                {"src": "00:00:00:00:00:02", "dst": "00:00:00:00:00:01",
                 "hops": ["0xabc:2", "0xabc:1"],
                 "adopted": true},
            ]),
            "{version:?}"
        );
    }
}

/// Issue 23: in Mininet the kernel's IPv6 stack on each switch-side veth sends router
/// solicitations and MLD reports into the neighbouring switch, often before its first
/// probe. Here they reach one end of the cable before the second switch connects (and
/// the other as soon as it has); the cable is still found, and the veths are not left
/// behind as hosts.
#[test]
fn ipv6_chatter_from_a_switchs_own_interface_does_not_cost_the_cable() {
    const ALL_ROUTERS: [u8; 6] = [0x33, 0x33, 0, 0, 0, 2];
    const MLDV2_REPORTS: [u8; 6] = [0x33, 0x33, 0, 0, 0, 0x16];
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path());
    let mut network = Network::new();
    network.cable((1, 2), (2, 2));
    let s1 = network.connect(daemon.openflow, 1, Version::Of13, 2);
    assert!(eventually(WAIT, || switch_count(&daemon) == 1));
    // The veth behind 0x2:2 speaks into 0x1:2 before 0x2 is even connected.
    s1.packet_in(2, frame(0x22, ALL_ROUTERS));
    // Chatter teaches a (passing) host.
    assert!(eventually(WAIT, || knows_host(&daemon, 0x22)));
    let s2 = network.connect(daemon.openflow, 2, Version::Of13, 2);
    assert!(eventually(WAIT, || switch_count(&daemon) == 2));
    s2.packet_in(2, frame(0x12, MLDV2_REPORTS));
    s2.packet_in(2, frame(0x12, ALL_ROUTERS));
    assert!(
        eventually(WAIT, || link_count(&daemon) == 2),
        "the cable, both ways: {}",
        daemon.get_json("/topology/switches")
    );
    let hosts = daemon.get_json("/topology/hosts");
    assert_eq!(hosts, json!([]), "the veths were passing, not hosts");
}
