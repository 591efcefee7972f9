//! A packet socket bound to one interface, for the lab's attackers: what a host that
//! sends raw frames (forged or relayed probes, floods) uses inside its namespace. Non-
//! blocking, closed on drop, and calm about an interface that goes down for a moment.

use std::time::Duration;

use anyhow::{bail, ensure};

/// Every protocol, in the host order `ETH_P_ALL` has in the kernel's headers.
const ETH_P_ALL: u16 = 0x0003;

/// A frame and how it passed the interface (`PACKET_HOST`, `PACKET_OUTGOING`...).
pub(super) struct Received {
    pub(super) bytes: Vec<u8>,
    pub(super) packet_type: u8,
}

/// A packet socket bound to one interface, closed on drop.
pub(super) struct PacketSocket {
    fd: libc::c_int,
    iface: String,
}

impl PacketSocket {
    pub(super) fn open(iface: &str) -> anyhow::Result<Self> {
        let name = std::ffi::CString::new(iface)?;
        // SAFETY: a NUL-terminated string that outlives the call.
        let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
        ensure!(index != 0, "no interface {iface}");
        let protocol = ETH_P_ALL.to_be();
        // SAFETY: plain system call with constant arguments.
        let fd = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                i32::from(protocol),
            )
        };
        ensure!(
            fd >= 0,
            "packet socket: {}",
            std::io::Error::last_os_error()
        );
        let socket = Self {
            fd,
            iface: iface.to_owned(),
        };
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

    pub(super) fn pollfd(&self) -> libc::pollfd {
        libc::pollfd {
            fd: self.fd,
            events: libc::POLLIN,
            revents: 0,
        }
    }

    pub(super) fn readable(&self, timeout: Duration) -> anyhow::Result<bool> {
        let mut fds = [self.pollfd()];
        let millis = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        // SAFETY: one valid pollfd entry.
        let got = unsafe { libc::poll(fds.as_mut_ptr(), 1, millis) };
        Ok(got > 0)
    }

    pub(super) fn send(&self, frame: &[u8]) -> anyhow::Result<()> {
        ensure!(
            self.try_send(frame)?,
            "send on {}: {}",
            self.iface,
            std::io::Error::last_os_error()
        );
        Ok(())
    }

    /// Sends a frame; false when the interface refused it for a reason that passes (its
    /// queue full, the interface down while a host flaps it, a frame too long for it).
    pub(super) fn try_send(&self, frame: &[u8]) -> anyhow::Result<bool> {
        // SAFETY: the buffer is valid for its length.
        let sent = unsafe { libc::send(self.fd, frame.as_ptr().cast(), frame.len(), 0) };
        if usize::try_from(sent).ok() == Some(frame.len()) {
            return Ok(true);
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            Some(code) if transient(code) || code == libc::EMSGSIZE => Ok(false),
            _ => bail!("send on {}: {err}", self.iface),
        }
    }

    /// The next frame waiting, or None when none is (or the interface went down: the
    /// socket reports it once and works again when the interface is back up).
    pub(super) fn receive(&self) -> anyhow::Result<Option<Received>> {
        let mut buffer = vec![0u8; 65536];
        // SAFETY: sockaddr_ll is plain data; zero is a valid value for every field.
        let mut address: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        let mut length = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        // SAFETY: the buffer and the address are valid for the lengths given.
        let got = unsafe {
            libc::recvfrom(
                self.fd,
                buffer.as_mut_ptr().cast(),
                buffer.len(),
                libc::MSG_DONTWAIT,
                std::ptr::addr_of_mut!(address).cast(),
                &mut length,
            )
        };
        if got < 0 {
            let err = std::io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EAGAIN | libc::EINTR) => return Ok(None),
                Some(code) if transient(code) => return Ok(None),
                _ => bail!("recv on {}: {err}", self.iface),
            }
        }
        buffer.truncate(got as usize);
        Ok(Some(Received {
            bytes: buffer,
            packet_type: address.sll_pkttype,
        }))
    }
}

/// Errors of a packet socket whose interface is down for a moment or whose queue is full.
fn transient(code: i32) -> bool {
    matches!(
        code,
        libc::ENETDOWN | libc::ENXIO | libc::ENODEV | libc::ENOBUFS | libc::EAGAIN
    )
}

impl Drop for PacketSocket {
    fn drop(&mut self) {
        // SAFETY: the descriptor is ours and closed once.
        unsafe { libc::close(self.fd) };
    }
}

impl PacketSocket {
    /// The next frame to arrive within `timeout`, its bytes only.
    pub(super) fn receive_within(&self, timeout: Duration) -> anyhow::Result<Option<Vec<u8>>> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if let Some(frame) = self.receive()? {
                return Ok(Some(frame.bytes));
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() || !self.readable(left)? {
                return Ok(None);
            }
        }
    }
}
