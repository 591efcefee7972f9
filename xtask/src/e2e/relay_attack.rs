//! Two colluding hosts that relay frames between their ports over a channel of their own
//! (issue 33): `cargo xtask e2e` runs its own binary inside the first host's network
//! namespace (`ip netns exec NS xtask relay ...`). Three commands:
//!
//! - `relay run IFACE PEER_NETNS PEER_IFACE MILLIS [--all]`: a packet socket on IFACE,
//!   then, after `setns` into PEER_NETNS (a name under /run/netns, or a path), a second
//!   one on PEER_IFACE there; every LLDP frame (EtherType 0x88cc; with `--all` every
//!   frame) that arrives at one interface is sent out of the other, both ways, for MILLIS
//!   (bounded). Frames the sockets themselves send are never relayed back. It prints
//!   `relay ready` once both sockets are open, then a progress line whenever its counts
//!   changed (at most every 100 ms) and a last one when done:
//!   `relayed lldp_there=N lldp_back=N other_there=N other_back=N skipped=N errors=N`
//!   (`there`: out of the peer's interface; `back`: out of IFACE).
//! - `relay send IFACE SRC DST MARKER COUNT`: COUNT frames from SRC to DST (MAC
//!   addresses), EtherType 0x88b5 (IEEE's local experimental type) with MARKER in the
//!   payload.
//! - `relay watch IFACE MARKER MILLIS`: counts the frames arriving at IFACE that carry
//!   MARKER, for MILLIS; prints `watching` once its socket is open and `seen N` at the
//!   end.

use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};

use super::packet_socket::PacketSocket;

const LLDP_ETHER_TYPE: u16 = 0x88cc;
/// IEEE 802's local experimental EtherType: no host's stack takes it for anything.
const EXPERIMENTAL_ETHER_TYPE: u16 = 0x88b5;
/// A relay or a watch stays bounded whatever the command line says.
const MAX_MILLIS: u64 = 120_000;
const MAX_SEND: u32 = 1000;
/// The shortest Ethernet frame without its checksum.
const MIN_FRAME: usize = 60;

/// `xtask relay ...`: the fake-link scenario builds these command lines (fake_link.rs).
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Relay {
    /// Relay LLDP (with --all every frame) between IFACE here and PEER_IFACE in
    /// PEER_NETNS, both ways, for MILLIS
    Run {
        iface: String,
        /// A network namespace's name (under /run/netns) or path
        peer_netns: String,
        peer_iface: String,
        #[arg(value_parser = clap::value_parser!(u64).range(1..=MAX_MILLIS))]
        millis: u64,
        /// Relay every frame, not only LLDP
        #[arg(long)]
        all: bool,
    },
    /// Send COUNT frames from SRC to DST (EtherType 0x88b5, MARKER in the payload)
    Send {
        iface: String,
        #[arg(value_parser = parse_mac)]
        src: [u8; 6],
        #[arg(value_parser = parse_mac)]
        dst: [u8; 6],
        marker: String,
        #[arg(value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_SEND)))]
        count: u32,
    },
    /// Count the frames arriving at IFACE that carry MARKER, for MILLIS
    Watch {
        iface: String,
        marker: String,
        #[arg(value_parser = clap::value_parser!(u64).range(1..=MAX_MILLIS))]
        millis: u64,
    },
}

fn parse_mac(text: &str) -> Result<[u8; 6], String> {
    let mut mac = [0u8; 6];
    let mut parts = text.split(':');
    for byte in &mut mac {
        let part = parts.next().ok_or_else(|| format!("{text:?}: six bytes"))?;
        *byte = u8::from_str_radix(part, 16).map_err(|err| format!("{text:?}: {err}"))?;
    }
    if parts.next().is_some() {
        return Err(format!("{text:?}: six bytes"));
    }
    Ok(mac)
}

pub(crate) fn main(command: Relay) -> anyhow::Result<()> {
    match command {
        Relay::Run {
            iface,
            peer_netns,
            peer_iface,
            millis,
            all,
        } => relay(&iface, &peer_netns, &peer_iface, millis, all),
        Relay::Send {
            iface,
            src,
            dst,
            marker,
            count,
        } => {
            let socket = PacketSocket::open(&iface)?;
            let frame = marked_frame(src, dst, marker.as_bytes());
            for at in 0..count {
                if at > 0 {
                    std::thread::sleep(Duration::from_millis(20));
                }
                socket.send(&frame)?;
            }
            Ok(())
        }
        Relay::Watch {
            iface,
            marker,
            millis,
        } => {
            let socket = PacketSocket::open(&iface)?;
            say("watching")?;
            let deadline = Instant::now() + Duration::from_millis(millis);
            let mut seen = 0u64;
            while let Some(left) = deadline.checked_duration_since(Instant::now()) {
                if !socket.readable(left.min(Duration::from_millis(100)))? {
                    continue;
                }
                while let Some(frame) = socket.receive()? {
                    let incoming = frame.packet_type != libc::PACKET_OUTGOING;
                    if incoming && contains(&frame.bytes, marker.as_bytes()) {
                        seen += 1;
                    }
                }
            }
            say(&format!("seen {seen}"))
        }
    }
}

/// Prints a line at once (the lab reads the file while the command runs).
fn say(line: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()?;
    Ok(())
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

fn marked_frame(src: [u8; 6], dst: [u8; 6], marker: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(MIN_FRAME.max(14 + marker.len()));
    frame.extend_from_slice(&dst);
    frame.extend_from_slice(&src);
    frame.extend_from_slice(&EXPERIMENTAL_ETHER_TYPE.to_be_bytes());
    frame.extend_from_slice(marker);
    frame.resize(frame.len().max(MIN_FRAME), 0);
    frame
}

/// What the relay did so far: frames sent out of the peer's interface (`there`) and out
/// of the own one (`back`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Counts {
    lldp_there: u64,
    lldp_back: u64,
    other_there: u64,
    other_back: u64,
    /// Frames received and not relayed (not LLDP, without --all).
    skipped: u64,
    /// Frames the sockets failed to send (an interface down, a frame too long).
    errors: u64,
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "relayed lldp_there={} lldp_back={} other_there={} other_back={} skipped={} \
             errors={}",
            self.lldp_there,
            self.lldp_back,
            self.other_there,
            self.other_back,
            self.skipped,
            self.errors
        )
    }
}

fn relay(
    iface: &str,
    peer_netns: &str,
    peer_iface: &str,
    millis: u64,
    all: bool,
) -> anyhow::Result<()> {
    ensure!(millis <= MAX_MILLIS, "a relay runs at most {MAX_MILLIS} ms");
    let own = PacketSocket::open(iface)?;
    enter_netns(peer_netns)?;
    let peer = PacketSocket::open(peer_iface)?;
    say("relay ready")?;
    let deadline = Instant::now() + Duration::from_millis(millis);
    let mut counts = Counts::default();
    let mut printed = counts;
    let mut last_print = Instant::now();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let ready = poll_two(&own, &peer, left.min(Duration::from_millis(50)))?;
        for (from, to, there) in [(&own, &peer, true), (&peer, &own, false)] {
            if !ready[usize::from(!there)] {
                continue;
            }
            while let Some(frame) = from.receive()? {
                if frame.packet_type == libc::PACKET_OUTGOING {
                    continue;
                }
                let lldp = frame.bytes.get(12..14) == Some(&LLDP_ETHER_TYPE.to_be_bytes()[..]);
                if !lldp && !all {
                    counts.skipped += 1;
                    continue;
                }
                if !to.try_send(&frame.bytes)? {
                    counts.errors += 1;
                    continue;
                }
                *match (lldp, there) {
                    (true, true) => &mut counts.lldp_there,
                    (true, false) => &mut counts.lldp_back,
                    (false, true) => &mut counts.other_there,
                    (false, false) => &mut counts.other_back,
                } += 1;
            }
        }
        if counts != printed && last_print.elapsed() >= Duration::from_millis(100) {
            say(&counts.to_string())?;
            printed = counts;
            last_print = Instant::now();
        }
    }
    say(&counts.to_string())
}

/// Moves this (single-threaded) process into another network namespace: sockets opened
/// afterwards, and interface names, are that namespace's; those opened before stay where
/// they were.
fn enter_netns(netns: &str) -> anyhow::Result<()> {
    let path = if netns.contains('/') {
        netns.to_owned()
    } else {
        format!("/run/netns/{netns}")
    };
    let file = std::fs::File::open(&path).with_context(|| format!("opening {path}"))?;
    use std::os::fd::AsRawFd;
    // SAFETY: a valid descriptor of a namespace file, kept open for the call.
    let entered = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
    ensure!(
        entered == 0,
        "setns into {path}: {}",
        std::io::Error::last_os_error()
    );
    Ok(())
}

/// Which of the two sockets has something to read, within `timeout`.
fn poll_two(a: &PacketSocket, b: &PacketSocket, timeout: Duration) -> anyhow::Result<[bool; 2]> {
    let mut fds = [a.pollfd(), b.pollfd()];
    let millis = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: two valid pollfd entries, as many as passed.
    let got = unsafe { libc::poll(fds.as_mut_ptr(), 2, millis) };
    if got < 0 {
        let err = std::io::Error::last_os_error();
        if err.kind() == std::io::ErrorKind::Interrupted {
            return Ok([false, false]);
        }
        bail!("poll: {err}");
    }
    Ok(fds.map(|fd| fd.revents != 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, clap::Parser)]
    struct Cli {
        #[command(subcommand)]
        relay: Relay,
    }

    fn parse(args: &[&str]) -> Result<Relay, clap::Error> {
        use clap::Parser;
        Cli::try_parse_from(std::iter::once("relay").chain(args.iter().copied())).map(|c| c.relay)
    }

    #[test]
    fn command_lines_are_bounded() {
        let run = parse(&["run", "eth0", "sl0001h6", "eth0", "60000", "--all"]).unwrap();
        assert!(matches!(
            run,
            Relay::Run {
                all: true,
                millis: 60000,
                ..
            }
        ));
        assert!(parse(&["run", "eth0", "sl0001h6", "eth0", "120001"]).is_err());
        assert!(parse(&[
            "send",
            "eth0",
            "00:00:00:00:00:01",
            "00:00:00:00:00:02",
            "m",
            "5"
        ])
        .is_ok());
        assert!(parse(&["send", "eth0", "00:00:00:00:00:01", "nope", "m", "5"]).is_err());
        assert!(parse(&[
            "send",
            "eth0",
            "00:00:00:00:00:01",
            "00:00:00:00:00:02",
            "m",
            "1001"
        ])
        .is_err());
        assert!(parse(&["watch", "eth0", "m", "3000"]).is_ok());
    }

    #[test]
    fn reads_mac_addresses() {
        assert_eq!(parse_mac("00:00:00:00:00:0a"), Ok([0, 0, 0, 0, 0, 10]));
        assert!(parse_mac("00:00:00:00:00").is_err());
        assert!(parse_mac("00:00:00:00:00:00:00").is_err());
        assert!(parse_mac("zz:00:00:00:00:00").is_err());
    }

    #[test]
    fn a_marked_frame_is_at_least_the_shortest_frame_and_carries_its_marker() {
        let frame = marked_frame([2; 6], [4; 6], b"spoof-7");
        assert_eq!(frame.len(), MIN_FRAME);
        assert_eq!(&frame[..6], &[4; 6]);
        assert_eq!(&frame[6..12], &[2; 6]);
        assert_eq!(&frame[12..14], &[0x88, 0xb5]);
        assert!(contains(&frame, b"spoof-7"));
        assert!(!contains(&frame, b"spoof-8"));
    }

    #[test]
    fn progress_lines_name_every_count() {
        let counts = Counts {
            lldp_there: 1,
            lldp_back: 2,
            other_there: 3,
            other_back: 0,
            skipped: 4,
            errors: 5,
        };
        assert_eq!(
            counts.to_string(),
            "relayed lldp_there=1 lldp_back=2 other_there=3 other_back=0 skipped=4 errors=5"
        );
    }
}
