//! Black-box tests of the controller against hostile hosts and switches: forged LLDP,
//! and switches or hosts that try to make the daemon hold unbounded memory or work.
//! The real `sliced`, emulated or hand-driven switches over real TCP.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::common::switch::{self, eventually, frame, host, Network, BROADCAST};
use crate::common::Daemon;
use openflow::{Message, PacketOut, PortDesc, Version};
use serde_json::Value;

mod connection_caps;
mod fabric_api;
mod links;
mod overload;

/// Generous: a loaded two-core machine runs the test binaries in parallel.
const WAIT: Duration = Duration::from_secs(10);

/// Per-pair flows on 1.3 too: the traffic the tests check for takes the controller's
/// paths, which an emulated switch records (it applies no pipeline).
fn daemon(dir: &std::path::Path, extra: &[&str]) -> Daemon {
    let mut args = vec!["--lldp-interval-ms", "100", "--per-pair-flows"];
    args.extend_from_slice(extra);
    Daemon::start_with(dir, &args)
}

/// The `dropped` counters of switch `dpid`, or None while it is not connected.
fn dropped(daemon: &Daemon, dpid: u64) -> Option<Value> {
    daemon
        .switch_view(dpid)
        .map(|switch| switch["dropped"].clone())
}

fn has_switch(daemon: &Daemon, dpid: u64) -> bool {
    dropped(daemon, dpid).is_some()
}

fn links(daemon: &Daemon) -> Vec<Value> {
    daemon
        .get_json("/topology/links")
        .as_array()
        .unwrap()
        .clone()
}

fn hosts(daemon: &Daemon) -> Vec<Value> {
    daemon
        .get_json("/topology/hosts")
        .as_array()
        .unwrap()
        .clone()
}

fn has_host(daemon: &Daemon, last: u8) -> bool {
    let mac = format!("00:00:00:00:00:{last:02x}");
    hosts(daemon).iter().any(|host| host["mac"] == mac.as_str())
}

/// The LLDP probes the controller sent out of `port` of `switch`, as sent.
fn probes_out_of(switch: &switch::Switch, port: u32) -> Vec<Vec<u8>> {
    switch
        .received()
        .into_iter()
        .filter_map(|message| {
            match message {
            Message::PacketOut(PacketOut { actions, data, .. })
                if openflow::packet::parse_discovery(&data).is_some()
                    && actions.iter().any(|action| {
                        matches!(action, openflow::Action::Output { port: out, .. } if *out == port)
                    }) =>
            {
                Some(data)
            }
            _ => None,
        }
        })
        .collect()
}

/// Switches 1 and 2 cabled on port 3; hosts a (mac 1) on 0x1:1 and b (mac 2) on 0x2:1 in
/// slice "blue"; attackers on 0x1:2 (mac 0xa1) and 0x2:2 (mac 0xa2). The attackers forge
/// old-style probes "from" each other's port and from the victim's, then, once they are
/// hosts (each has sent a unicast frame), relay three rounds of genuine probes captured at
/// their ports: the rounds a port that heard only chatter needs. Old sliced made a link of
/// each forgery, routed a -> b out of the attacker's port 2 (the lower port wins a tie),
/// and forgot host a.
/// Genuine probes relayed, one round each: as many as a link over chatter takes.
const RELAYED_ROUNDS: usize = 3;

#[test]
fn forged_and_relayed_lldp_makes_no_link_and_moves_no_traffic() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path(), &[]);
    daemon.add_host("blue", "0x1:1", "00:00:00:00:00:01");
    daemon.add_host("blue", "0x2:1", "00:00:00:00:00:02");
    let mut network = Network::new();
    network.cable((1, 3), (2, 3));
    let s1 = network.connect(daemon.openflow, 1, Version::Of13, 3);
    let s2 = network.connect(daemon.openflow, 2, Version::Of13, 3);
    assert!(eventually(WAIT, || links(&daemon).len() == 2), "the cable");

    // The victim speaks first, so that forging "from" its port could make it vanish.
    s1.packet_in(1, frame(1, BROADCAST));
    assert!(eventually(WAIT, || has_host(&daemon, 1)));

    // Old-style probes, byte-identical to what sliced used to send, from silent ports.
    let forged = |dpid: u64, port: u32| {
        let mut bytes = Vec::new();
        openflow::packet::discovery_frame(dpid, port, [0x02, 0x5c, 0x1c, 0xed, 0, 1], &mut bytes);
        bytes
    };
    s2.packet_in(2, forged(1, 2));
    s1.packet_in(2, forged(2, 2));
    s2.packet_in(2, forged(1, 1));

    // Now the attackers are hosts too, and relay the genuine probes sent to their ports.
    s1.packet_in(2, frame(0xa1, host(0xa2)));
    s2.packet_in(2, frame(0xa2, host(0xa1)));
    assert!(eventually(WAIT, || has_host(&daemon, 0xa1) && has_host(&daemon, 0xa2)));
    let (mut from_1, mut from_2) = (Vec::new(), Vec::new());
    assert!(eventually(WAIT, || {
        from_1 = probes_out_of(&s1, 2);
        from_2 = probes_out_of(&s2, 2);
        from_1.len() >= RELAYED_ROUNDS && from_2.len() >= RELAYED_ROUNDS
    }));
    for round in 0..RELAYED_ROUNDS {
        s2.packet_in(2, from_1[from_1.len() - RELAYED_ROUNDS + round].clone());
        s1.packet_in(2, from_2[from_2.len() - RELAYED_ROUNDS + round].clone());
    }

    // Every forgery is counted before anything is checked, so none is still in flight.
    // Whether one counts as unsigned or as touching a host port depends on the order of
    // frames across the two connections.
    let refused = |dpid| {
        let counts = dropped(&daemon, dpid).unwrap();
        [
            "lldp_unsigned",
            "lldp_forged",
            "lldp_stale",
            "lldp_at_host_port",
        ]
        .iter()
        .map(|cause| counts[cause].as_u64().unwrap())
        .sum::<u64>()
    };
    let relayed = RELAYED_ROUNDS as u64;
    assert!(
        eventually(WAIT, || refused(1) == 1 + relayed
            && refused(2) == 2 + relayed),
        "drops counted: {}",
        daemon.get_json("/topology/switches")
    );
    assert_eq!(
        links(&daemon).len(),
        2,
        "only the cable: {:?}",
        links(&daemon)
    );
    assert!(has_host(&daemon, 1), "the victim is still a host");

    // a -> b goes over the cable, never out of the attacker's port.
    s2.packet_in(1, frame(2, BROADCAST));
    assert!(eventually(WAIT, || has_host(&daemon, 2)));
    s1.packet_in(1, frame(1, host(2)));
    assert!(eventually(WAIT, || s1.path_flows().contains(&(1, Some(3)))));
    assert!(!s1.path_flows().contains(&(1, Some(2))));
}

// ---- hand-driven switches -------------------------------------------------------------

/// A switch driven by hand: HELLO and FEATURES (1.3, no ports) done, the controller's
/// PORT_DESC request read.
fn raw_switch(daemon: &Daemon, dpid: u64) -> TcpStream {
    let mut stream = TcpStream::connect(daemon.openflow).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    send(
        &mut stream,
        &Message::Hello {
            versions: Some(Version::Of13.bitmap_bit()),
        },
    );
    loop {
        match read_message(&mut stream) {
            Message::FeaturesRequest => break,
            _ => continue,
        }
    }
    send(
        &mut stream,
        &Message::FeaturesReply(openflow::FeaturesReply {
            datapath_id: dpid,
            n_buffers: 0,
            n_tables: 1,
            auxiliary_id: 0,
            capabilities: 0,
            ports: Vec::new(),
        }),
    );
    stream
}

fn send(stream: &mut TcpStream, message: &Message) {
    let mut bytes = Vec::new();
    message.emit(Version::Of13, 1, &mut bytes).unwrap();
    stream.write_all(&bytes).unwrap();
}

fn read_message(stream: &mut TcpStream) -> Message {
    let mut header = [0u8; 8];
    stream.read_exact(&mut header).unwrap();
    let len = usize::from(u16::from_be_bytes([header[2], header[3]]));
    let mut bytes = header.to_vec();
    bytes.resize(len, 0);
    stream.read_exact(&mut bytes[8..]).unwrap();
    Message::parse(&bytes).unwrap().1
}

fn ports(numbers: std::ops::Range<u32>) -> Vec<PortDesc> {
    numbers
        .map(|port_no| PortDesc {
            port_no,
            name: format!("p{port_no}"),
            ..PortDesc::default()
        })
        .collect()
}

/// Writes port lists until the controller closes the connection; returns the bytes
/// written by then, or None if it never closed.
fn port_desc_flood(
    stream: &mut TcpStream,
    mut next: impl FnMut(usize) -> Vec<PortDesc>,
    up_to: usize,
) -> Option<usize> {
    let mut written = 0;
    for round in 0.. {
        let mut bytes = Vec::new();
        let message = Message::PortDescReply {
            ports: next(round),
            more: true,
        };
        message.emit(Version::Of13, 2, &mut bytes).unwrap();
        if stream.write_all(&bytes).is_err() {
            return Some(written);
        }
        written += bytes.len();
        if written > up_to {
            return None;
        }
    }
    None
}

fn resident_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Old sliced reassembled "more" port lists until the handshake timed out (2 GB in
/// 10 s); now the list is cut at 1 MiB, the connection closes, and memory stays put.
#[test]
fn an_endless_port_list_is_cut_off_with_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path(), &[]);
    let before = resident_kib(daemon.pid());
    let mut stream = raw_switch(&daemon, 9);
    // The same 900 ports again and again: only the reassembly bound stops this.
    let written = port_desc_flood(&mut stream, |_| ports(1..901), 64 << 20);
    let written = written.expect("the controller closes the connection");
    assert!(written < 8 << 20, "closed after {written} bytes");
    assert!(!has_switch(&daemon, 9));
    let after = resident_kib(daemon.pid());
    assert!(
        after < before + 100 * 1024,
        "resident memory grew from {before} KiB to {after} KiB"
    );
}

/// 200,000 ports are refused (the default limit is 4096), and a smaller limit holds for
/// the emulated switch's three ports.
#[test]
fn a_switch_with_too_many_ports_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path(), &[]);
    let mut stream = raw_switch(&daemon, 9);
    let written = port_desc_flood(
        &mut stream,
        |round| {
            let start = 1 + 1000 * round as u32;
            ports(start..start + 1000)
        },
        200 * 1000 * 64,
    );
    assert!(written.is_some(), "the controller closes the connection");
    assert!(!has_switch(&daemon, 9));

    let dir = tempfile::tempdir().unwrap();
    let small = self::daemon(dir.path(), &["--max-ports-per-switch", "2"]);
    let mut network = Network::new();
    network.connect(small.openflow, 1, Version::Of13, 3);
    network.connect(small.openflow, 2, Version::Of13, 2);
    assert!(eventually(WAIT, || has_switch(&small, 2)));
    assert!(!has_switch(&small, 1));
}

/// Whether the daemon's end of the TCP connection from local port `port` is still
/// established, from the kernel's socket table (without reading from it, which would
/// unblock a daemon stuck writing).
fn daemon_side_established(daemon: &Daemon, port: u16) -> bool {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let (local, remote) = (
        format!(":{:04X}", daemon.openflow.port()),
        format!(":{port:04X}"),
    );
    table.lines().skip(1).any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        fields.len() > 3
            && fields[1].ends_with(&local)
            && fields[2].ends_with(&remote)
            && fields[3] == "01"
    })
}

/// A switch that stops reading while broadcasts flow toward it. Old sliced forgot it in
/// the engine but its connection task waited on the write forever, holding the queue.
#[test]
fn a_switch_that_stops_reading_is_disconnected() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(
        dir.path(),
        &[
            "--no-slicing",
            "--packet-in-rate",
            "1000000",
            "--packet-in-burst",
            "1000000",
            "--packet-in-port-rate",
            "1000000",
        ],
    );
    let mut network = Network::new();
    let s1 = network.connect(daemon.openflow, 1, Version::Of13, 1);
    let mut deaf = raw_switch(&daemon, 2);
    send(
        &mut deaf,
        &Message::PortDescReply {
            ports: ports(1..9),
            more: false,
        },
    );
    assert!(eventually(WAIT, || has_switch(&daemon, 1) && has_switch(&daemon, 2)));
    let port = deaf.local_addr().unwrap().port();
    assert!(daemon_side_established(&daemon, port));

    // Big broadcasts, each flooded out of the deaf switch's eight ports.
    let mut broadcast = frame(1, BROADCAST);
    broadcast.resize(1400, 0);
    let mut sent = 0;
    let gone = eventually(Duration::from_secs(60), || {
        for _ in 0..200 {
            s1.packet_in(1, broadcast.clone());
        }
        sent += 200;
        !daemon_side_established(&daemon, port)
    });
    assert!(gone, "still connected after {sent} broadcasts");
    assert!(!has_switch(&daemon, 2));
    drop(deaf);
}

/// A host that sends from thousands of source addresses learns at most the port's cap.
#[test]
fn a_mac_flood_learns_at_most_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    // Rate limits out of the way: this is about the host cap alone.
    let daemon = daemon(
        dir.path(),
        &[
            "--max-hosts-per-port",
            "100",
            "--packet-in-port-rate",
            "1000000",
        ],
    );
    let mut network = Network::new();
    let s1 = network.connect(daemon.openflow, 1, Version::Of13, 2);
    assert!(eventually(WAIT, || has_switch(&daemon, 1)));
    for n in 0..1000u32 {
        let mut flood = frame(0, BROADCAST);
        flood[6..12].copy_from_slice(&[0x02, 0, 0, 0, (n >> 8) as u8, n as u8]);
        s1.packet_in(1, flood);
    }
    assert!(
        eventually(WAIT, || dropped(&daemon, 1).unwrap()["hosts_refused"]
            == 900),
        "{}",
        daemon.get_json("/topology/switches")
    );
    assert_eq!(hosts(&daemon).len(), 100);
    // Another port still learns.
    s1.packet_in(2, frame(7, BROADCAST));
    assert!(eventually(WAIT, || has_host(&daemon, 7)));
}

/// A switch flooding PACKET_INs is held to its rate while another switch's hosts still
/// get their path.
#[test]
fn a_packet_in_flood_is_rate_limited_and_slows_no_other_switch() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(
        dir.path(),
        &["--packet-in-rate", "50", "--packet-in-burst", "50"],
    );
    daemon.add_host("blue", "0x2:1", "00:00:00:00:00:01");
    daemon.add_host("blue", "0x2:2", "00:00:00:00:00:02");
    let mut network = Network::new();
    let s1 = network.connect(daemon.openflow, 1, Version::Of13, 1);
    let s2 = network.connect(daemon.openflow, 2, Version::Of13, 2);
    assert!(eventually(WAIT, || has_switch(&daemon, 1) && has_switch(&daemon, 2)));
    for n in 0..5000u32 {
        let mut flood = frame(0, BROADCAST);
        flood[6..12].copy_from_slice(&[0x02, 0, 0, 1, (n >> 8) as u8, n as u8]);
        s1.packet_in(1, flood);
    }
    s2.packet_in(2, frame(2, BROADCAST));
    assert!(eventually(WAIT, || has_host(&daemon, 2)));
    s2.packet_in(1, frame(1, host(2)));
    assert!(eventually(WAIT, || s2.path_flows().contains(&(1, Some(2)))));
    assert!(
        eventually(WAIT, || {
            let limited = dropped(&daemon, 1).unwrap()["packet_ins_rate_limited"].as_u64();
            limited.is_some_and(|count| count > 0)
        }),
        "{}",
        daemon.get_json("/topology/switches")
    );
}

/// The probe secret and the limits can come from the config file: probes are signed
/// with the file's secret (HMAC-SHA256 over dpid, port and timestamp, as documented),
/// and a host cap set there holds. A limit of 0 is refused, naming the key.
#[test]
fn the_probe_secret_and_the_limits_come_from_the_config_file() {
    use slice_controller::{ProbeKey, Verdict};
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("lldp.key");
    std::fs::write(&secret, b"a secret shared by a cluster").unwrap();
    owner_only(&secret);
    let config = dir.path().join("sliced.toml");
    std::fs::write(
        &config,
        format!(
            "[controller]\nlldp_interval_ms = 100\nlldp_secret_file = {:?}\nmax_hosts_per_port = 1\n",
            secret.display().to_string()
        ),
    )
    .unwrap();
    let data = dir.path().join("db");
    let daemon = Daemon::start_with(&data, &["--config", config.to_str().unwrap()]);
    let mut network = Network::new();
    network.cable((1, 2), (2, 2));
    let s1 = network.connect(daemon.openflow, 1, Version::Of13, 2);
    network.connect(daemon.openflow, 2, Version::Of13, 2);
    assert!(eventually(WAIT, || links(&daemon).len() == 2), "the cable");

    let probe = probes_out_of(&s1, 1)
        .pop()
        .expect("a probe out of a host port");
    let proof = openflow::packet::parse_probe(&probe)
        .unwrap()
        .proof
        .unwrap();
    let now = std::time::Instant::now();
    let age = Duration::from_secs(60);
    let shared = ProbeKey::from_secret(b"a secret shared by a cluster").unwrap();
    assert_eq!(shared.verify(1, 1, &proof, now, age), Verdict::Genuine);
    let other = ProbeKey::from_secret(b"another secret").unwrap();
    assert_eq!(other.verify(1, 1, &proof, now, age), Verdict::Forged);

    s1.packet_in(1, frame(1, BROADCAST));
    s1.packet_in(1, frame(2, BROADCAST));
    assert!(eventually(WAIT, || dropped(&daemon, 1).unwrap()
        ["hosts_refused"]
        == 1));
    assert_eq!(hosts(&daemon).len(), 1);

    std::fs::write(&config, "[controller]\nmax_hosts_per_port = 0\n").unwrap();
    let output = std::process::Command::new(crate::common::SLICED)
        .args([
            "--db",
            data.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("max_hosts_per_port"), "{stderr}");
}

/// A host flooding PACKET_INs from one port for as long as it takes: another host pair
/// on the same switch still gets its path, because the flood only spends its port's
/// share of the switch's budget.
#[test]
fn a_flooding_host_leaves_room_for_the_others_on_its_switch() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(
        dir.path(),
        &[
            "--packet-in-rate",
            "100",
            "--packet-in-burst",
            "100",
            "--packet-in-port-rate",
            "20",
        ],
    );
    daemon.add_host("blue", "0x1:2", "00:00:00:00:00:02");
    daemon.add_host("blue", "0x1:3", "00:00:00:00:00:03");
    let mut network = Network::new();
    let s1 = network.connect(daemon.openflow, 1, Version::Of13, 3);
    assert!(eventually(WAIT, || has_switch(&daemon, 1)));

    let flooding = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let flooder = {
        let (s1, flooding) = (std::sync::Arc::clone(&s1), std::sync::Arc::clone(&flooding));
        std::thread::spawn(move || {
            let mut n = 0u32;
            while flooding.load(std::sync::atomic::Ordering::Relaxed) {
                let mut flood = frame(0, BROADCAST);
                flood[6..12].copy_from_slice(&[
                    0x02,
                    0,
                    0,
                    (n >> 16) as u8,
                    (n >> 8) as u8,
                    n as u8,
                ]);
                s1.packet_in(1, flood);
                n = n.wrapping_add(1);
            }
        })
    };
    // Under way: the flood is being refused.
    assert!(eventually(WAIT, || {
        let limited = dropped(&daemon, 1).unwrap()["packet_ins_rate_limited"].as_u64();
        limited.is_some_and(|count| count > 1000)
    }));
    s1.packet_in(3, frame(3, BROADCAST));
    assert!(eventually(WAIT, || has_host(&daemon, 3)));
    s1.packet_in(2, frame(2, host(3)));
    let routed = eventually(WAIT, || s1.path_flows().contains(&(2, Some(3))));
    flooding.store(false, std::sync::atomic::Ordering::Relaxed);
    flooder.join().unwrap();
    assert!(
        routed,
        "the pair on ports 2 and 3 got its path during the flood"
    );
}

/// Learned hosts age out when idle, except those an operator bound in a slice.
#[test]
fn idle_hosts_age_out_but_bound_hosts_stay() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path(), &["--host-idle-timeout", "1"]);
    daemon.add_host("blue", "0x1:1", "00:00:00:00:00:01");
    let mut network = Network::new();
    let s1 = network.connect(daemon.openflow, 1, Version::Of13, 2);
    assert!(eventually(WAIT, || has_switch(&daemon, 1)));
    s1.packet_in(1, frame(1, BROADCAST));
    s1.packet_in(2, frame(2, BROADCAST));
    assert!(eventually(WAIT, || has_host(&daemon, 1) && has_host(&daemon, 2)));
    assert!(
        eventually(WAIT, || dropped(&daemon, 1).unwrap()["hosts_aged_out"] == 1),
        "{}",
        daemon.get_json("/topology/switches")
    );
    assert!(!has_host(&daemon, 2), "the idle host is forgotten");
    assert!(has_host(&daemon, 1), "the bound host stays");
}

/// A frame with the MAC of a host bound at 0x1:1, sent from 0x1:2, is an impostor: the
/// victim stays where it is bound and its peer keeps reaching it. Old sliced "moved" the
/// victim to the attacker's port, deleted its paths and dropped its peer's traffic.
#[test]
fn a_spoofed_frame_does_not_move_a_bound_host() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path(), &[]);
    daemon.add_host("blue", "0x1:1", "00:00:00:00:00:01");
    daemon.add_host("blue", "0x1:3", "00:00:00:00:00:03");
    let mut network = Network::new();
    let s1 = network.connect(daemon.openflow, 1, Version::Of13, 3);
    assert!(eventually(WAIT, || has_switch(&daemon, 1)));
    s1.packet_in(1, frame(1, BROADCAST));
    s1.packet_in(3, frame(3, host(1)));
    assert!(eventually(WAIT, || s1.path_flows() == vec![(3, Some(1))]));
    // The attacker on 0x1:2 speaks with the victim's MAC.
    s1.packet_in(2, frame(1, BROADCAST));
    assert!(
        eventually(WAIT, || dropped(&daemon, 1).unwrap()["hosts_spoofed"] == 1),
        "{}",
        daemon.get_json("/topology/switches")
    );
    s1.forget();
    s1.packet_in(3, frame(3, host(1)));
    assert!(
        eventually(WAIT, || s1.path_flows() == vec![(3, Some(1))]),
        "the peer still reaches the victim: {:?}",
        s1.path_flows()
    );
    let victim: Vec<Value> = hosts(&daemon)
        .into_iter()
        .filter(|host| host["mac"] == "00:00:00:00:00:01")
        .collect();
    assert_eq!(victim.len(), 1);
    assert_eq!(victim[0]["port"], "0x1:1", "{victim:?}");
}

fn owner_only(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// Runs `sliced` with `--lldp-secret-file FILE`, which must stop it; returns its stderr.
fn refused_with_secret(dir: &std::path::Path, secret: &std::path::Path) -> String {
    let openflow = crate::common::free_port().to_string();
    let secret = secret.display().to_string();
    crate::common::refused_start(
        &dir.join("db"),
        &["--openflow", &openflow, "--lldp-secret-file", &secret],
    )
}

/// Whoever reads the LLDP secret can forge links, and a short one can be guessed: the
/// daemon refuses a file others may read, or one under 16 bytes, naming it.
#[test]
fn an_open_or_short_lldp_secret_file_stops_the_daemon() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("lldp.key");
    std::fs::write(&secret, b"a secret shared by a cluster\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
    let stderr = refused_with_secret(dir.path(), &secret);
    assert!(
        stderr.contains(&format!("chmod 600 {}", secret.display())),
        "{stderr}"
    );
    assert!(stderr.contains("mode 644"), "{stderr}");

    std::fs::write(&secret, b"too short\n").unwrap();
    owner_only(&secret);
    let stderr = refused_with_secret(dir.path(), &secret);
    assert!(stderr.contains("holds 9 bytes"), "{stderr}");
    assert!(stderr.contains(&secret.display().to_string()), "{stderr}");
}

// ---- the PACKET_IN meter on OpenFlow 1.3 ------------------------------------------------

/// Whether switch `dpid` reports a PACKET_IN meter, or None while it is not connected.
fn packet_in_meter(daemon: &Daemon, dpid: u64) -> Option<bool> {
    daemon
        .get_json("/topology/switches")
        .as_array()
        .unwrap()
        .iter()
        .find(|switch| switch["dpid"] == dpid)
        .and_then(|switch| switch["packet_in_meter"].as_bool())
}

/// Where in what the switch received the table-miss flow is, and its meter.
fn table_misses(switch: &switch::Switch) -> Vec<(usize, Option<u32>)> {
    switch
        .received()
        .into_iter()
        .enumerate()
        .filter_map(|(at, message)| match message {
            Message::FlowMod(flow) if flow.priority == 0 && flow.r#match == Default::default() => {
                (flow.command == openflow::FlowModCommand::Add).then_some((at, flow.meter_id))
            }
            _ => None,
        })
        .collect()
}

/// On a 1.3 switch with meters, a flood is dropped in the switch: the controller
/// installs a meter whose drop band is the PACKET_IN rate, and only then the table-miss
/// flow through it. Old sliced sent the table-miss flow without a meter and never a
/// METER_MOD.
#[test]
fn a_1_3_switch_with_meters_gets_a_metered_table_miss_flow() {
    use openflow::meter::{METER_FLAG_BURST, METER_FLAG_PKTPS, METER_FLAG_STATS};
    use openflow::{MeterBand, MeterModCommand};

    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(
        dir.path(),
        &["--packet-in-rate", "300", "--packet-in-burst", "600"],
    );
    let mut network = Network::new();
    let s1 = network.connect_with_meters(
        daemon.openflow,
        1,
        2,
        switch::Meters::Offered(switch::OVS_METERS),
    );
    assert!(
        eventually(WAIT, || packet_in_meter(&daemon, 1) == Some(true)),
        "{}",
        daemon.get_json("/topology/switches")
    );
    assert!(eventually(WAIT, || !table_misses(&s1).is_empty()));

    let received = s1.received();
    let add = received
        .iter()
        .position(|m| matches!(m, Message::MeterMod(m) if m.command == MeterModCommand::Add))
        .expect("a meter is added");
    let Message::MeterMod(meter) = &received[add] else {
        unreachable!()
    };
    assert_eq!(meter.meter_id, 1);
    assert_eq!(
        meter.flags,
        METER_FLAG_PKTPS | METER_FLAG_BURST | METER_FLAG_STATS
    );
    assert_eq!(
        meter.bands,
        [MeterBand::Drop {
            rate: 300,
            burst_size: 600
        }]
    );
    let misses = table_misses(&s1);
    assert_eq!(misses.len(), 1, "{received:?}");
    let (at, meter_id) = misses[0];
    assert_eq!(meter_id, Some(1), "the table-miss flow passes the meter");
    assert!(add < at, "the meter goes in before the flow that uses it");
}

/// Switches that cannot meter get today's table-miss flow (1.3) or none (1.0) and the
/// controller's token buckets: a 1.3 switch that refuses the meter features request, one
/// that refuses the meter itself, and a 1.0 switch. Each says `"packet_in_meter": false`,
/// which old sliced did not report at all.
#[test]
fn switches_without_meters_get_the_plain_table_miss_flow() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path(), &[]);
    let mut network = Network::new();
    let absent = network.connect_with_meters(daemon.openflow, 1, 2, switch::Meters::Absent);
    let refused = network.connect_with_meters(
        daemon.openflow,
        2,
        2,
        switch::Meters::Refused(switch::OVS_METERS),
    );
    let old = network.connect(daemon.openflow, 3, openflow::Version::Of10, 2);
    for (dpid, switch) in [(1, &absent), (2, &refused)] {
        assert!(
            eventually(WAIT, || packet_in_meter(&daemon, dpid) == Some(false)
                && !table_misses(switch).is_empty()),
            "switch {dpid}: {}",
            daemon.get_json("/topology/switches")
        );
        assert_eq!(
            table_misses(switch)
                .into_iter()
                .map(|(_, meter)| meter)
                .collect::<Vec<_>>(),
            [None]
        );
    }
    assert!(absent.meter_mods().is_empty());
    // The refusing switch was asked, refused, and the flow went in without the meter.
    assert!(refused
        .meter_mods()
        .iter()
        .any(|m| m.command == openflow::MeterModCommand::Add));

    // The read-back of its flow table comes after any table-miss flow it would get.
    assert!(eventually(WAIT, || packet_in_meter(&daemon, 3)
        == Some(false)
        && old
            .received()
            .iter()
            .any(|m| matches!(m, openflow::Message::FlowStatsRequest))));
    assert!(
        table_misses(&old).is_empty(),
        "1.0 sends misses to the controller by itself"
    );
    assert!(!old
        .received()
        .iter()
        .any(|m| matches!(m, Message::MeterMod(_) | Message::MeterFeaturesRequest)));
}
