//! ARP for IPv4 over Ethernet (RFC 826), the only kind this controller meets.

use std::net::Ipv4Addr;

use crate::Error;

/// Length of an Ethernet/IPv4 ARP packet.
pub const PACKET_LEN: usize = 28;
/// Hardware type Ethernet.
const HTYPE_ETHERNET: u16 = 1;
/// Protocol type IPv4.
const PTYPE_IPV4: u16 = 0x0800;

enum_with_unknown! {
    /// The ARP operation.
    pub enum ArpOperation(u16) {
        /// Who has this address?
        Request = 1,
        /// I have it.
        Reply = 2,
    }
}

mod field {
    pub(super) const HTYPE: usize = 0;
    pub(super) const PTYPE: usize = 2;
    pub(super) const HLEN: usize = 4;
    pub(super) const PLEN: usize = 5;
    pub(super) const OPER: usize = 6;
    pub(super) const SHA: usize = 8;
    pub(super) const SPA: usize = 14;
    pub(super) const THA: usize = 18;
    pub(super) const TPA: usize = 24;
}

view! {
    /// A view of an Ethernet/IPv4 ARP packet.
    ArpPacket
}

fields!(ArpPacket {
    /// Hardware type (1 for Ethernet).
    hardware_type / set_hardware_type: u16 = field::HTYPE;
    /// Protocol type (0x0800 for IPv4).
    protocol_type / set_protocol_type: u16 = field::PTYPE;
    /// Hardware address length (6).
    hardware_len / set_hardware_len: u8 = field::HLEN;
    /// Protocol address length (4).
    protocol_len / set_protocol_len: u8 = field::PLEN;
    /// Operation; see [`ArpOperation`].
    operation / set_operation: u16 = field::OPER;
    /// Sender MAC address.
    sender_mac / set_sender_mac: [u8; 6] = field::SHA;
    /// Sender IPv4 address.
    sender_ip / set_sender_ip: [u8; 4] = field::SPA;
    /// Target MAC address.
    target_mac / set_target_mac: [u8; 6] = field::THA;
    /// Target IPv4 address.
    target_ip / set_target_ip: [u8; 4] = field::TPA;
});

impl<T: AsRef<[u8]>> ArpPacket<T> {
    /// Checks that the buffer holds an Ethernet/IPv4 ARP packet.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need("ARP packet", self.buffer.as_ref(), PACKET_LEN)
    }
}

/// A decoded Ethernet/IPv4 ARP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArpRepr {
    /// Request or reply.
    pub operation: ArpOperation,
    /// Sender MAC address.
    pub sender_mac: [u8; 6],
    /// Sender IPv4 address.
    pub sender_ip: Ipv4Addr,
    /// Target MAC address.
    pub target_mac: [u8; 6],
    /// Target IPv4 address.
    pub target_ip: Ipv4Addr,
}

impl ArpRepr {
    /// Reads a packet; fails for ARP of another hardware or protocol type.
    pub fn parse<T: AsRef<[u8]>>(packet: &ArpPacket<T>) -> Result<Self, Error> {
        packet.check_len()?;
        let kinds = [
            ("ARP hardware type", packet.hardware_type(), HTYPE_ETHERNET),
            ("ARP protocol type", packet.protocol_type(), PTYPE_IPV4),
            ("ARP hardware length", u16::from(packet.hardware_len()), 6),
            ("ARP protocol length", u16::from(packet.protocol_len()), 4),
        ];
        for (what, value, expected) in kinds {
            if value != expected {
                return Err(Error::UnknownValue {
                    what,
                    value: u32::from(value),
                });
            }
        }
        Ok(ArpRepr {
            operation: ArpOperation::from(packet.operation()),
            sender_mac: packet.sender_mac(),
            sender_ip: Ipv4Addr::from(packet.sender_ip()),
            target_mac: packet.target_mac(),
            target_ip: Ipv4Addr::from(packet.target_ip()),
        })
    }

    /// Bytes the packet takes.
    pub const fn buffer_len(&self) -> usize {
        PACKET_LEN
    }

    /// Writes the packet.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut ArpPacket<T>) {
        packet.set_hardware_type(HTYPE_ETHERNET);
        packet.set_protocol_type(PTYPE_IPV4);
        packet.set_hardware_len(6);
        packet.set_protocol_len(4);
        packet.set_operation(u16::from(self.operation));
        packet.set_sender_mac(self.sender_mac);
        packet.set_sender_ip(self.sender_ip.octets());
        packet.set_target_mac(self.target_mac);
        packet.set_target_ip(self.target_ip.octets());
    }
}
