//! A hostile host's LLDP: `cargo xtask e2e` runs its own binary inside a host's network
//! namespace (`ip netns exec NS xtask lldp ...`) to send frames through a raw packet
//! socket, as an attacker on that host would. Two commands:
//!
//! - `lldp forge IFACE DPID PORT COUNT INTERVAL_MS`: old-style probes (sliced's format
//!   before probes were signed) claiming to come from DPID's PORT.
//! - `lldp capture IFACE FILE` / `lldp replay IFACE FILE COUNT INTERVAL_MS`: wait for one
//!   genuine (signed) probe on IFACE and keep its bytes; send those bytes out of another
//!   host's interface.

use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};
use openflow::packet::{EtherType, EthernetFrame};

/// The source address sliced's probes used before they were signed.
const OLD_PROBE_SOURCE: [u8; 6] = [0x02, 0x5c, 0x1c, 0xed, 0x00, 0x01];
const ETH_P_ALL: u16 = 0x0003;

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
    }
}

/// A packet socket bound to one interface, closed on drop.
struct PacketSocket {
    fd: libc::c_int,
}

impl PacketSocket {
    fn open(iface: &str) -> anyhow::Result<Self> {
        let name = std::ffi::CString::new(iface)?;
        // SAFETY: a NUL-terminated string that outlives the call.
        let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
        ensure!(index != 0, "no interface {iface}");
        let protocol = ETH_P_ALL.to_be();
        // SAFETY: plain system call with constant arguments.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, i32::from(protocol)) };
        ensure!(
            fd >= 0,
            "packet socket: {}",
            std::io::Error::last_os_error()
        );
        let socket = Self { fd };
        // SAFETY: sockaddr_ll is plain data; zero is a valid value for every field.
        let mut address: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        address.sll_family = libc::AF_PACKET as u16;
        address.sll_protocol = protocol;
        address.sll_ifindex = index as i32;
        // SAFETY: the address is a valid sockaddr_ll of the size given.
        let bound = unsafe {
            libc::bind(
                socket.fd,
                std::ptr::addr_of!(address).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        ensure!(
            bound == 0,
            "bind to {iface}: {}",
            std::io::Error::last_os_error()
        );
        Ok(socket)
    }

    fn send(&self, frame: &[u8]) -> anyhow::Result<()> {
        // SAFETY: the buffer is valid for its length.
        let sent = unsafe { libc::send(self.fd, frame.as_ptr().cast(), frame.len(), 0) };
        ensure!(
            usize::try_from(sent).ok() == Some(frame.len()),
            "send: {}",
            std::io::Error::last_os_error()
        );
        Ok(())
    }

    /// The next frame, or None when `timeout` passes first.
    fn receive(&self, timeout: Duration) -> anyhow::Result<Option<Vec<u8>>> {
        let timeval = libc::timeval {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_usec: libc::suseconds_t::from(timeout.subsec_micros() as i32),
        };
        // SAFETY: the option value is a valid timeval of the size given.
        unsafe {
            libc::setsockopt(
                self.fd,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                std::ptr::addr_of!(timeval).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            );
        }
        let mut buffer = vec![0u8; 65536];
        // SAFETY: the buffer is valid for its length.
        let got = unsafe { libc::recv(self.fd, buffer.as_mut_ptr().cast(), buffer.len(), 0) };
        if got < 0 {
            let err = std::io::Error::last_os_error();
            if matches!(
                err.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) {
                return Ok(None);
            }
            bail!("recv: {err}");
        }
        buffer.truncate(got as usize);
        Ok(Some(buffer))
    }
}

impl Drop for PacketSocket {
    fn drop(&mut self) {
        // SAFETY: the descriptor is ours and closed once.
        unsafe { libc::close(self.fd) };
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

fn capture_signed_probe(iface: &str, timeout: Duration) -> anyhow::Result<Vec<u8>> {
    let socket = PacketSocket::open(iface)?;
    let deadline = Instant::now() + timeout;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let Some(frame) = socket.receive(left.max(Duration::from_millis(1)))? else {
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
