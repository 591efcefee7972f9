//! A hostile host's LLDP: `cargo xtask e2e` runs its own binary inside a host's network
//! namespace (`ip netns exec NS xtask lldp ...`) to send frames through a raw packet
//! socket, as an attacker on that host would. Two commands:
//!
//! - `lldp forge IFACE DPID PORT COUNT INTERVAL_MS`: old-style probes (sliced's format
//!   before probes were signed) claiming to come from DPID's PORT.
//! - `lldp capture IFACE FILE` / `lldp replay IFACE FILE COUNT INTERVAL_MS`: wait for one
//!   genuine (signed) probe on IFACE and keep its bytes; send those bytes out of another
//!   host's interface.
//! - `lldp flood IFACE KIND RATE SECONDS`: RATE frames of 64 bytes a second for SECONDS
//!   (both bounded): `lldp`, EtherType 0x88cc with a junk payload from the interface's
//!   own address, or `random-src`, each from a new random (unicast, locally
//!   administered) source address, so that every one misses the switch's tables. Prints
//!   `sent N frames in S s` when done.

use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};
use openflow::packet::{EtherType, EthernetFrame};

use super::packet_socket::PacketSocket;

/// The source address sliced's probes used before they were signed.
const OLD_PROBE_SOURCE: [u8; 6] = [0x02, 0x5c, 0x1c, 0xed, 0x00, 0x01];
/// A flood's frames: 64 bytes each, the minimum Ethernet frame with its checksum.
const FLOOD_FRAME_LEN: usize = 64;
/// A flood stays bounded whatever the command line says: at most this many frames a
/// second, for at most this long.
const FLOOD_MAX_RATE: u32 = 20_000;
const FLOOD_MAX_SECONDS: u64 = 60;
/// LLDP's nearest-bridge group address, where genuine probes go.
const LLDP_GROUP: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e];
const LLDP_ETHER_TYPE: u16 = 0x88cc;
/// IEEE 802's local experimental EtherType: no host's stack takes it for anything.
const EXPERIMENTAL_ETHER_TYPE: u16 = 0x88b5;

/// `xtask lldp ...`: the scenarios build these command lines (scenarios.rs), so the
/// positional interface is fixed.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Lldp {
    /// Send COUNT old-style (unsigned) probes claiming to come from DPID's PORT
    Forge {
        iface: String,
        /// The claimed switch, in hex (with or without 0x)
        #[arg(value_parser = parse_hex_dpid)]
        dpid: u64,
        port: u32,
        count: u32,
        interval_ms: u64,
    },
    /// Wait for one genuine (signed) probe on IFACE and write its bytes to FILE
    Capture { iface: String, file: String },
    /// Send the probe in FILE out of IFACE, COUNT times
    Replay {
        iface: String,
        file: String,
        count: u32,
        interval_ms: u64,
    },
    /// Send RATE frames of 64 bytes a second out of IFACE for SECONDS
    Flood {
        iface: String,
        kind: FloodKind,
        #[arg(value_parser = clap::value_parser!(u32).range(1..=i64::from(FLOOD_MAX_RATE)))]
        rate: u32,
        #[arg(value_parser = clap::value_parser!(u64).range(1..=FLOOD_MAX_SECONDS))]
        seconds: u64,
    },
}

/// What a flood sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum FloodKind {
    /// EtherType 0x88cc (LLDP) to LLDP's group address, a junk payload, the interface's
    /// own source address: what the switch's LLDP entry sends to the controller
    Lldp,
    /// A new random source address each, to the broadcast address: misses every table
    RandomSrc,
}

fn parse_hex_dpid(text: &str) -> Result<u64, String> {
    u64::from_str_radix(text.trim_start_matches("0x"), 16)
        .map_err(|err| format!("DPID in hex: {err}"))
}

pub(crate) fn main(command: Lldp) -> anyhow::Result<()> {
    match command {
        Lldp::Forge {
            iface,
            dpid,
            port,
            count,
            interval_ms,
        } => {
            let mut frame = Vec::new();
            openflow::packet::discovery_frame(dpid, port, OLD_PROBE_SOURCE, &mut frame);
            send_repeatedly(&iface, &frame, count, interval_ms)
        }
        Lldp::Capture { iface, file } => {
            let frame = capture_signed_probe(&iface, Duration::from_secs(10))?;
            std::fs::write(&file, frame).with_context(|| format!("writing {file}"))
        }
        Lldp::Replay {
            iface,
            file,
            count,
            interval_ms,
        } => {
            let frame = std::fs::read(&file).with_context(|| format!("reading {file}"))?;
            send_repeatedly(&iface, &frame, count, interval_ms)
        }
        Lldp::Flood {
            iface,
            kind,
            rate,
            seconds,
        } => {
            let started = Instant::now();
            let (sent, refused) = flood(&iface, kind, rate, Duration::from_secs(seconds))?;
            println!(
                "sent {sent} frames in {:.2} s ({refused} refused by the socket)",
                started.elapsed().as_secs_f64()
            );
            Ok(())
        }
    }
}

fn send_repeatedly(iface: &str, frame: &[u8], count: u32, interval_ms: u64) -> anyhow::Result<()> {
    let socket = PacketSocket::open(iface)?;
    for sent in 0..count {
        if sent > 0 {
            std::thread::sleep(Duration::from_millis(interval_ms));
        }
        socket.send(frame)?;
    }
    Ok(())
}

/// Sends `rate` frames a second of `kind` for `duration`, paced every millisecond;
/// returns (frames sent, frames the socket refused).
fn flood(
    iface: &str,
    kind: FloodKind,
    rate: u32,
    duration: Duration,
) -> anyhow::Result<(u64, u64)> {
    ensure!(
        (1..=FLOOD_MAX_RATE).contains(&rate) && duration <= Duration::from_secs(FLOOD_MAX_SECONDS),
        "a flood is at most {FLOOD_MAX_RATE} frames a second for {FLOOD_MAX_SECONDS} s"
    );
    let socket = PacketSocket::open(iface)?;
    let own = own_address(iface)?;
    let total = u64::from(rate) * duration.as_secs();
    let mut junk = [0u8; FLOOD_FRAME_LEN - 14];
    rand::fill(&mut junk[..]);
    let (mut sent, mut refused) = (0u64, 0u64);
    let started = Instant::now();
    while sent + refused < total && started.elapsed() < duration + Duration::from_secs(1) {
        let due = (started.elapsed().as_secs_f64() * f64::from(rate)) as u64 + 1;
        while sent + refused < due.min(total) {
            let frame = match kind {
                FloodKind::Lldp => flood_frame(LLDP_GROUP, own, LLDP_ETHER_TYPE, &junk),
                FloodKind::RandomSrc => {
                    let mut source: [u8; 6] = rand::random();
                    // Unicast, locally administered: no vendor's, and never a group.
                    source[0] = (source[0] & 0xfc) | 0x02;
                    flood_frame([0xff; 6], source, EXPERIMENTAL_ETHER_TYPE, &junk)
                }
            };
            if socket.try_send(&frame)? {
                sent += 1;
            } else {
                refused += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok((sent, refused))
}

fn flood_frame(dst: [u8; 6], src: [u8; 6], ether_type: u16, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(FLOOD_FRAME_LEN);
    frame.extend_from_slice(&dst);
    frame.extend_from_slice(&src);
    frame.extend_from_slice(&ether_type.to_be_bytes());
    frame.extend_from_slice(payload);
    frame.truncate(FLOOD_FRAME_LEN);
    frame
}

/// The interface's own MAC address, as the kernel shows it for the namespace
/// (`ip netns exec` mounts the namespace's own /sys).
fn own_address(iface: &str) -> anyhow::Result<[u8; 6]> {
    let path = format!("/sys/class/net/{iface}/address");
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    let mut address = [0u8; 6];
    let mut parts = text.trim().split(':');
    for byte in &mut address {
        let part = parts.next().with_context(|| format!("{path}: {text:?}"))?;
        *byte = u8::from_str_radix(part, 16).with_context(|| format!("{path}: {text:?}"))?;
    }
    ensure!(parts.next().is_none(), "{path}: {text:?}");
    Ok(address)
}

fn capture_signed_probe(iface: &str, timeout: Duration) -> anyhow::Result<Vec<u8>> {
    let socket = PacketSocket::open(iface)?;
    let deadline = Instant::now() + timeout;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let Some(frame) = socket.receive_within(left.max(Duration::from_millis(1)))? else {
            break;
        };
        let is_lldp = EthernetFrame::new_checked(&frame[..])
            .is_ok_and(|frame| EtherType::from(frame.ethertype()) == EtherType::Lldp);
        let signed = openflow::packet::parse_probe(&frame).is_some_and(|p| p.proof.is_some());
        if is_lldp && signed {
            return Ok(frame);
        }
    }
    bail!("no signed LLDP probe arrived on {iface} within {timeout:?}")
}
