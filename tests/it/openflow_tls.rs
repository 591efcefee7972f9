//! Black-box tests of the authenticated OpenFlow channel: the real `sliced`, emulated
//! switches over TLS with certificates the test makes, and the plain-TCP and allow-list
//! settings around it.

use std::path::Path;
use std::time::Duration;

use crate::common::switch::{eventually, frame, host, Network, BROADCAST};
use crate::common::tls::{self, Pki};
use crate::common::{free_port, Daemon};
use openflow::Version;
use serde_json::json;

/// Generous: a loaded two-core machine runs the test binaries in parallel.
const WAIT: Duration = Duration::from_secs(10);

fn switch_dpids(daemon: &Daemon) -> Vec<u64> {
    daemon
        .get_json("/topology/switches")
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["dpid"].as_u64().unwrap())
        .collect()
}

fn log_text(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

/// A daemon serving TLS only (plain TCP left at its default, which TLS turns off).
fn tls_daemon(dir: &Path, pki: &Pki, extra: &[&str]) -> (Daemon, std::net::SocketAddr) {
    let tls_addr = free_port();
    let mut args: Vec<String> = pki.flags(tls_addr);
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let daemon = Daemon::start_logged(&dir.join("db"), &args, false, &dir.join("sliced.log"));
    (daemon, tls_addr)
}

fn tls_switch_gets_its_flows(version: Version) {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(dir.path(), "lab");
    let (daemon, tls_addr) = tls_daemon(dir.path(), &pki, &["--no-slicing"]);

    let mut network = Network::new();
    let stream = tls::bridge(tls_addr, pki.client("switch-abc"));
    let switch = network.connect_over(stream, 0xabc, version, 2);
    assert!(eventually(WAIT, || daemon.switches_without_drops()
        == json!([{"dpid": 0xabc, "name": "0xabc", "version": u8::from(version), "ports": [
            {"port_no": 1, "name": "eth1", "live": true},
            {"port_no": 2, "name": "eth2", "live": true},
        ]}])));

    // Host 2 speaks up, then host 1 sends to it: the path flow goes down the TLS channel.
    switch.packet_in(2, frame(2, BROADCAST));
    assert!(eventually(WAIT, || daemon
        .get_json("/topology/hosts")
        .as_array()
        .unwrap()
        .len()
        == 1));
    switch.packet_in(1, frame(1, host(2)));
    assert!(
        eventually(WAIT, || switch.path_flows() == vec![(1, Some(2))]),
        "{:?}",
        switch.path_flows()
    );
    assert!(!switch.is_closed());

    let log = log_text(&dir.path().join("sliced.log"));
    assert!(
        !log.contains("unauthenticated"),
        "with TLS on, plain TCP is off unless asked for: {log}"
    );
}

#[test]
fn a_switch_with_a_ca_signed_certificate_gets_flows_over_tls_on_1_0() {
    tls_switch_gets_its_flows(Version::Of10);
}

#[test]
fn a_switch_with_a_ca_signed_certificate_gets_flows_over_tls_on_1_3() {
    tls_switch_gets_its_flows(Version::Of13);
}

#[test]
fn peers_without_a_certificate_from_the_ca_are_refused_and_others_carry_on() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(dir.path(), "lab");
    let rogue = Pki::new(dir.path(), "rogue");
    let (daemon, tls_addr) = tls_daemon(dir.path(), &pki, &[]);

    // A peer that connects and never says a word holds only its own handshake.
    let _stalled = std::net::TcpStream::connect(tls_addr).unwrap();

    assert!(
        tls::refused(tls_addr, pki.anonymous_client(), WAIT),
        "a client without a certificate is refused"
    );
    assert!(
        tls::refused(tls_addr, rogue.client_for(&pki, "rogue"), WAIT),
        "a client with a certificate from another CA is refused"
    );
    // A switch speaking plain OpenFlow to the TLS port.
    let mut network = Network::new();
    let plain = network.connect(tls_addr, 0x66, Version::Of13, 1);
    let mut hello = Vec::new();
    openflow::Message::Hello { versions: None }
        .emit(Version::Of13, 1, &mut hello)
        .unwrap();
    plain.send_raw(&hello);
    assert!(
        eventually(WAIT, || plain.is_closed()),
        "plain OpenFlow is closed"
    );
    // The same attempts through the emulated switch: none of them becomes a switch.
    let anonymous = network.connect_over(
        tls::bridge(tls_addr, pki.anonymous_client()),
        0x67,
        Version::Of13,
        1,
    );
    let impostor = network.connect_over(
        tls::bridge(tls_addr, rogue.client_for(&pki, "x")),
        0x68,
        Version::Of13,
        1,
    );
    assert!(eventually(WAIT, || anonymous.is_closed() && impostor.is_closed()));

    let good = network.connect_over(
        tls::bridge(tls_addr, pki.client("good")),
        1,
        Version::Of13,
        1,
    );
    assert!(eventually(WAIT, || switch_dpids(&daemon) == vec![1]));
    assert!(!good.is_closed());
    assert!(
        tls::refused(tls_addr, pki.anonymous_client(), WAIT),
        "still refused while a switch is served"
    );
    assert_eq!(switch_dpids(&daemon), vec![1]);
}

#[test]
fn plain_tcp_can_be_turned_off_and_the_settings_file_has_the_tls_keys() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(dir.path(), "lab");
    // The file asks for plain TCP and TLS, the flag turns plain TCP off again.
    let (plain_addr, tls_addr) = (free_port(), free_port());
    let config = dir.path().join("sliced.toml");
    std::fs::write(
        &config,
        format!(
            "openflow = \"{plain_addr}\"\nopenflow_tls = \"{tls_addr}\"\n\
             [controller]\nopenflow_cert = {:?}\nopenflow_key = {:?}\nopenflow_ca = {:?}\n\
             allowed_dpids = [1, \"0x2\"]\n",
            pki.cert_file, pki.key_file, pki.ca_file
        ),
    )
    .unwrap();
    let config = config.display().to_string();
    let log = dir.path().join("sliced.log");
    let daemon = Daemon::start_logged(
        &dir.path().join("db"),
        &["--config", &config, "--openflow", "none"],
        false,
        &log,
    );

    let refused = std::net::TcpStream::connect(plain_addr);
    assert!(refused.is_err(), "nothing listens on the plain port");
    let mut network = Network::new();
    let outsider =
        network.connect_over(tls::bridge(tls_addr, pki.client("s5")), 5, Version::Of13, 1);
    network.connect_over(tls::bridge(tls_addr, pki.client("s1")), 1, Version::Of13, 1);
    network.connect_over(tls::bridge(tls_addr, pki.client("s2")), 2, Version::Of10, 1);
    assert!(eventually(WAIT, || switch_dpids(&daemon) == vec![1, 2]));
    assert!(
        eventually(WAIT, || outsider.is_closed()),
        "0x5 is not listed"
    );
    assert!(!log_text(&log).contains("unauthenticated"));
}

#[test]
fn plain_tcp_is_announced_as_unauthenticated() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sliced.log");
    let daemon = Daemon::start_logged(&dir.path().join("db"), &[], true, &log);
    let text = log_text(&log);
    let warning = text
        .lines()
        .find(|line| line.contains("unauthenticated"))
        .unwrap_or_else(|| panic!("no warning in the log: {text}"));
    assert!(warning.contains("WARN"), "{warning}");
    assert!(
        warning.contains(&daemon.openflow.to_string()),
        "names the address: {warning}"
    );
}

#[test]
fn a_datapath_id_off_the_allow_list_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(dir.path(), "lab");
    let (daemon, tls_addr) = tls_daemon(
        dir.path(),
        &pki,
        &["--allowed-dpid", "0x1", "--allowed-dpid", "3"],
    );
    let mut network = Network::new();
    // A valid certificate does not make any datapath id acceptable.
    let stranger =
        network.connect_over(tls::bridge(tls_addr, pki.client("s2")), 2, Version::Of13, 1);
    let first = network.connect_over(tls::bridge(tls_addr, pki.client("s1")), 1, Version::Of13, 1);
    let third = network.connect_over(tls::bridge(tls_addr, pki.client("s3")), 3, Version::Of10, 1);
    assert!(eventually(WAIT, || stranger.is_closed()));
    assert!(eventually(WAIT, || switch_dpids(&daemon) == vec![1, 3]));
    assert!(!first.is_closed() && !third.is_closed());
    let log = log_text(&dir.path().join("sliced.log"));
    assert!(
        log.contains("datapath id 0x2 is not allowed"),
        "the refusal is logged: {log}"
    );
}

#[test]
fn a_second_connection_for_a_datapath_id_replaces_the_first_and_is_logged() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sliced.log");
    let daemon = Daemon::start_logged(&dir.path().join("db"), &[], true, &log);
    let mut network = Network::new();
    let first = network.connect(daemon.openflow, 7, Version::Of13, 1);
    assert!(eventually(WAIT, || switch_dpids(&daemon) == vec![7]));
    let _second = network.connect(daemon.openflow, 7, Version::Of13, 1);
    assert!(
        eventually(WAIT, || first.is_closed()),
        "the first is closed"
    );
    assert!(
        eventually(WAIT, || log_text(&log)
            .contains("switch 0x7 connected again")),
        "{}",
        log_text(&log)
    );
    assert_eq!(switch_dpids(&daemon), vec![7]);
}

/// With both listeners on, anyone who reaches the plain one could claim the datapath id
/// of a switch that proved itself over TLS and take its place; the claim is refused.
#[test]
fn a_plain_connection_never_replaces_a_tls_switch() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(dir.path(), "lab");
    let plain_addr = free_port();
    let plain = plain_addr.to_string();
    let (daemon, tls_addr) = tls_daemon(dir.path(), &pki, &["--openflow", &plain]);
    let mut network = Network::new();
    let genuine =
        network.connect_over(tls::bridge(tls_addr, pki.client("s7")), 7, Version::Of13, 1);
    assert!(eventually(WAIT, || switch_dpids(&daemon) == vec![7]));
    let impostor = network.connect(plain_addr, 7, Version::Of13, 1);
    let log = dir.path().join("sliced.log");
    assert!(
        eventually(WAIT, || impostor.is_closed()),
        "the impostor is closed"
    );
    assert!(
        eventually(WAIT, || log_text(&log)
            .contains("switch 0x7: unauthenticated connection")),
        "{}",
        log_text(&log)
    );
    assert!(!genuine.is_closed(), "the TLS switch keeps its connection");
    // ...and is still the one the controller talks to.
    genuine.forget();
    genuine.packet_in(1, frame(1, BROADCAST));
    assert!(eventually(WAIT, || daemon
        .get_json("/topology/hosts")
        .as_array()
        .is_some_and(|hosts| hosts.len() == 1)));
}

/// Runs `sliced` with arguments that must stop it during start-up; returns its stderr.
fn refused_start(dir: &Path, args: &[&str]) -> String {
    crate::common::refused_start(&dir.join("db"), args)
}

#[test]
fn unusable_tls_files_stop_the_daemon_with_their_names() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(dir.path(), "lab");
    let other = Pki::new(dir.path(), "other");
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "not PEM at all\n").unwrap();
    let missing = dir.path().join("missing.pem");
    let tls_addr = free_port().to_string();
    let path = |p: &Path| p.display().to_string();
    let with = |cert: &Path, key: &Path, ca: &Path| {
        let args = [
            "--openflow-tls".to_string(),
            tls_addr.clone(),
            "--openflow-cert".into(),
            path(cert),
            "--openflow-key".into(),
            path(key),
            "--openflow-ca".into(),
            path(ca),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused_start(dir.path(), &args)
    };

    let message = with(&missing, &pki.key_file, &pki.ca_file);
    assert!(message.contains(&path(&missing)), "{message}");
    let message = with(&pki.cert_file, &garbage, &pki.ca_file);
    assert!(message.contains(&path(&garbage)), "{message}");
    let message = with(&pki.cert_file, &pki.key_file, &garbage);
    assert!(message.contains(&path(&garbage)), "{message}");
    let message = with(&pki.cert_file, &other.key_file, &pki.ca_file);
    assert!(
        message.contains(&path(&pki.cert_file)) && message.contains(&path(&other.key_file)),
        "{message}"
    );
    let message = refused_start(dir.path(), &["--openflow-tls", &tls_addr]);
    assert!(message.contains("openflow_cert"), "{message}");
    let message = refused_start(dir.path(), &["--allowed-dpid", "0xzz"]);
    assert!(message.contains("0xzz"), "{message}");
}
