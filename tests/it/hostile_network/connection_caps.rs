//! The caps on OpenFlow connections: how many may be open, and how many in their
//! handshake, against a storm of switches and against sockets that say nothing.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use super::{daemon, has_host, has_switch, WAIT};
use crate::common::switch::{eventually, frame, Network, BROADCAST};
use crate::common::Daemon;
use openflow::Version;

/// An OpenFlow 1.3 HELLO, with `xid`.
fn hello_13(xid: u8) -> [u8; 8] {
    [4, 0, 0, 8, 0, 0, 0, xid]
}

/// Reads one OpenFlow header and its body; returns the message type.
fn read_message_type(stream: &mut TcpStream) -> std::io::Result<u8> {
    let mut header = [0u8; 8];
    stream.read_exact(&mut header)?;
    let length = usize::from(u16::from_be_bytes([header[2], header[3]]));
    let mut body = vec![0u8; length.saturating_sub(8)];
    stream.read_exact(&mut body)?;
    Ok(header[1])
}

/// Whether the controller has asked `stream` for its features (read without waiting);
/// false while nothing has come.
fn features_requested(stream: &mut TcpStream) -> bool {
    stream.set_nonblocking(true).unwrap();
    let mut header = [0u8; 8];
    let peeked = stream.peek(&mut header);
    stream.set_nonblocking(false).unwrap();
    match peeked {
        Ok(8) => read_message_type(stream).unwrap() == OFPT_FEATURES_REQUEST,
        Ok(0) => panic!("closed while waiting for a place"),
        Ok(_) => false,
        Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => false,
        Err(err) => panic!("{err}"),
    }
}

const OFPT_HELLO: u8 = 0;
const OFPT_FEATURES_REQUEST: u8 = 5;

/// Opens a TCP connection to the OpenFlow port that answers the HELLO and then says
/// nothing; returns it once it holds a place among the handshakes (the controller asked
/// for its features, which it does only with a place taken).
fn silent_peer(daemon: &Daemon) -> TcpStream {
    let mut stream = TcpStream::connect(daemon.openflow).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    assert_eq!(read_message_type(&mut stream).unwrap(), OFPT_HELLO);
    stream.write_all(&hello_13(1)).unwrap();
    assert_eq!(
        read_message_type(&mut stream).unwrap(),
        OFPT_FEATURES_REQUEST
    );
    stream
}

/// Sockets that say nothing after the HELLO hold a place for the whole handshake
/// timeout; past the cap of pending handshakes a new connection is still greeted at once
/// (Open vSwitch gives up on a controller whose HELLO takes more than a second, and
/// comes back only on its backoff: a cold start of hundreds of switches became a storm
/// of retries), but its handshake goes on only when a place is free. The connected
/// switch keeps working, nothing is refused (issue 36 item 1).
#[test]
fn connections_beyond_the_handshake_cap_are_greeted_and_wait_their_turn() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path(), &["--max-pending-handshakes", "2"]);
    let mut network = Network::new();
    let s1 = network.connect(daemon.openflow, 1, Version::Of13, 2);
    assert!(eventually(WAIT, || has_switch(&daemon, 1)));
    let silent = [silent_peer(&daemon), silent_peer(&daemon)];
    // More than one, all arriving while the places are taken.
    let mut waiting: Vec<TcpStream> = (0..8)
        .map(|_| TcpStream::connect(daemon.openflow).unwrap())
        .collect();
    for stream in &mut waiting {
        // Half the handshake timeout (10 s), which frees the silent peers' places: the
        // HELLO must not wait for that.
        stream.set_read_timeout(Some(WAIT / 2)).unwrap();
        assert_eq!(
            read_message_type(stream).expect("greeted at once, place or not"),
            OFPT_HELLO
        );
        stream.write_all(&hello_13(1)).unwrap();
    }
    // Far below the handshake timeout (10 s), which alone frees a silent peer's place.
    waiting[0]
        .set_read_timeout(Some(Duration::from_millis(1500)))
        .unwrap();
    let early = read_message_type(&mut waiting[0]);
    assert!(
        matches!(&early, Err(err) if matches!(err.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)),
        "no handshake beyond the HELLO while the places are taken: {early:?}"
    );
    s1.packet_in(1, frame(1, BROADCAST));
    assert!(eventually(WAIT, || has_host(&daemon, 1)), "0x1 works on");
    assert!(!s1.is_closed());
    drop(silent);
    // The places go to whichever waiting connections asked for one first, which need not
    // be the first accepted: both freed places are taken, and no more than the cap.
    let mut asked = vec![false; waiting.len()];
    assert!(
        eventually(WAIT, || {
            for (stream, asked) in waiting.iter_mut().zip(asked.iter_mut()) {
                *asked = *asked || features_requested(stream);
            }
            asked.iter().filter(|asked| **asked).count() == 2
        }),
        "the handshakes go on once the places are free: {asked:?}"
    );
    std::thread::sleep(Duration::from_millis(500));
    for (stream, asked) in waiting.iter_mut().zip(asked.iter_mut()) {
        *asked = *asked || features_requested(stream);
    }
    assert_eq!(
        asked.iter().filter(|asked| **asked).count(),
        2,
        "no more handshakes than places"
    );
    assert_eq!(
        crate::common::metric(&daemon, "sliced_switch_connections_refused_total"),
        Some(0.0)
    );
}

/// The caps come from the settings file too. Past the cap of open connections a new one
/// is closed at once, counted in `/metrics` and logged; refusals after the first line
/// are reported by the next line, due within the limiter's 10 s, even when no later
/// refusal comes to carry it (issue 36 item 1).
#[test]
fn the_connection_caps_come_from_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("sliced.toml");
    std::fs::write(
        &config,
        "[controller]\nmax_switch_connections = 1\nmax_pending_handshakes = 1\n",
    )
    .unwrap();
    let log = dir.path().join("sliced.log");
    let daemon = Daemon::start_filtered_with(
        dir.path(),
        &["--per-pair-flows", "--config", config.to_str().unwrap()],
        "warn",
        &log,
    );
    let mut network = Network::new();
    let _s1 = network.connect(daemon.openflow, 1, Version::Of13, 2);
    assert!(eventually(WAIT, || has_switch(&daemon, 1)));
    for _ in 0..3 {
        let mut refused = TcpStream::connect(daemon.openflow).unwrap();
        refused.set_read_timeout(Some(WAIT)).unwrap();
        let mut byte = [0u8; 1];
        assert_eq!(
            refused.read(&mut byte).unwrap(),
            0,
            "closed without a HELLO"
        );
    }
    assert!(eventually(WAIT, || {
        crate::common::metric(&daemon, "sliced_switch_connections_refused_total") == Some(3.0)
    }));
    let reported = |count: &str| {
        std::fs::read_to_string(&log).unwrap().lines().any(|line| {
            line.contains(&format!("{count} OpenFlow connection(s) closed at once"))
                && line.contains("max_switch_connections")
        })
    };
    assert!(eventually(WAIT, || reported("1")), "the first at once");
    // The other two within the next report period (10 s), with time to spare.
    assert!(
        eventually(3 * WAIT, || reported("2")),
        "the rest on the timer"
    );
}
