//! The IPv4 header (RFC 791): enough to learn who talks to whom.

use std::net::Ipv4Addr;

use crate::wire::{length_u16, read_field, sub};
use crate::Error;

/// Length of a header without options.
pub const MIN_HEADER_LEN: usize = 20;

mod field {
    pub(super) const VERSION_IHL: usize = 0;
    pub(super) const DSCP_ECN: usize = 1;
    pub(super) const TOTAL_LEN: usize = 2;
    pub(super) const IDENT: usize = 4;
    pub(super) const FLAGS_FRAGMENT: usize = 6;
    pub(super) const TTL: usize = 8;
    pub(super) const PROTOCOL: usize = 9;
    pub(super) const CHECKSUM: usize = 10;
    pub(super) const SRC: usize = 12;
    pub(super) const DST: usize = 16;
}

view! {
    /// A view of an IPv4 packet.
    Ipv4Packet
}

fields!(Ipv4Packet {
    /// Version (high 4 bits) and header length in 32-bit words (low 4 bits).
    version_ihl / set_version_ihl: u8 = field::VERSION_IHL;
    /// DSCP and ECN.
    dscp_ecn / set_dscp_ecn: u8 = field::DSCP_ECN;
    /// Length of header and payload.
    total_len / set_total_len: u16 = field::TOTAL_LEN;
    /// Fragment identification.
    ident / set_ident: u16 = field::IDENT;
    /// Flags (3 bits) and fragment offset (13 bits).
    flags_fragment / set_flags_fragment: u16 = field::FLAGS_FRAGMENT;
    /// Time to live.
    ttl / set_ttl: u8 = field::TTL;
    /// Payload protocol number.
    protocol / set_protocol: u8 = field::PROTOCOL;
    /// Header checksum.
    checksum / set_checksum: u16 = field::CHECKSUM;
    /// Source address.
    src_addr / set_src_addr: [u8; 4] = field::SRC;
    /// Destination address.
    dst_addr / set_dst_addr: [u8; 4] = field::DST;
});

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Checks that the header length is at least 20 bytes, that the total length
    /// covers the header, and that the buffer holds the total length.
    pub fn check_len(&self) -> Result<(), Error> {
        let buffer = self.buffer.as_ref();
        Error::need("IPv4 header", buffer, MIN_HEADER_LEN)?;
        let header_len = self.header_len();
        if header_len < MIN_HEADER_LEN {
            return Err(Error::BadLength {
                what: "IPv4 header",
                length: header_len,
            });
        }
        Error::need("IPv4 header", buffer, header_len)?;
        let total_len = usize::from(self.total_len());
        if total_len < header_len {
            return Err(Error::BadLength {
                what: "IPv4 packet",
                length: total_len,
            });
        }
        Error::need("IPv4 packet", buffer, total_len)
    }

    /// IP version, 4 for IPv4.
    pub fn version(&self) -> u8 {
        self.version_ihl() >> 4
    }

    /// Header length in bytes, options included.
    pub fn header_len(&self) -> usize {
        usize::from(self.version_ihl() & 0x0f) * 4
    }

    /// The payload, up to the total length (Ethernet padding excluded).
    pub fn payload(&self) -> &[u8] {
        sub(
            self.buffer.as_ref(),
            self.header_len(),
            usize::from(self.total_len()),
        )
    }

    /// Whether the header checksum is right.
    pub fn verify_checksum(&self) -> bool {
        checksum(sub(self.buffer.as_ref(), 0, self.header_len())) == 0
    }
}

/// The Internet checksum (RFC 1071) of `bytes`.
pub fn checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut words = bytes.chunks_exact(2);
    for word in &mut words {
        sum += u32::from(read_field::<u16>(word, 0));
        sum = (sum & 0xffff) + (sum >> 16);
    }
    if let Some(&last) = words.remainder().first() {
        sum += u32::from(last) << 8;
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !((sum & 0xffff) + (sum >> 16)) as u16
}

/// A decoded IPv4 header (options are skipped).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Repr {
    /// Source address.
    pub src_addr: Ipv4Addr,
    /// Destination address.
    pub dst_addr: Ipv4Addr,
    /// Payload protocol number.
    pub protocol: u8,
    /// Time to live.
    pub ttl: u8,
    /// Payload length.
    pub payload_len: usize,
}

impl Ipv4Repr {
    /// Reads a header; fails for another IP version.
    pub fn parse<T: AsRef<[u8]>>(packet: &Ipv4Packet<T>) -> Result<Self, Error> {
        packet.check_len()?;
        if packet.version() != 4 {
            return Err(Error::UnknownValue {
                what: "IP version",
                value: u32::from(packet.version()),
            });
        }
        Ok(Ipv4Repr {
            src_addr: Ipv4Addr::from(packet.src_addr()),
            dst_addr: Ipv4Addr::from(packet.dst_addr()),
            protocol: packet.protocol(),
            ttl: packet.ttl(),
            payload_len: usize::from(packet.total_len()).saturating_sub(packet.header_len()),
        })
    }

    /// Bytes the header takes (no options are emitted).
    pub const fn buffer_len(&self) -> usize {
        MIN_HEADER_LEN
    }

    /// Writes a 20-byte header with its checksum; fails when the payload is too long
    /// for the total length field.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut Ipv4Packet<T>,
    ) -> Result<(), Error> {
        let total_len = length_u16(
            "IPv4 packet",
            MIN_HEADER_LEN.saturating_add(self.payload_len),
        )?;
        packet.set_version_ihl(0x45);
        packet.set_dscp_ecn(0);
        packet.set_total_len(total_len);
        packet.set_ident(0);
        packet.set_flags_fragment(0);
        packet.set_ttl(self.ttl);
        packet.set_protocol(self.protocol);
        packet.set_src_addr(self.src_addr.octets());
        packet.set_dst_addr(self.dst_addr.octets());
        packet.set_checksum(0);
        let sum = checksum(sub(packet.buffer.as_ref(), 0, MIN_HEADER_LEN));
        packet.set_checksum(sum);
        Ok(())
    }
}
