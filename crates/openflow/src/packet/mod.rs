//! The Ethernet frames that PACKET_IN and PACKET_OUT carry, in the same view-and-repr
//! style as the OpenFlow structures: Ethernet II, 802.1Q tags, ARP, IPv4 and LLDP,
//! plus the LLDP discovery frames this controller sends out of every port to learn the
//! links between switches.
//!
//! Like the rest of the crate, nothing here panics on any input.

pub mod arp;
mod discovery;
pub mod ethernet;
pub mod ipv4;
pub mod lldp;
pub mod vlan;

pub use arp::{ArpOperation, ArpPacket, ArpRepr};
pub use discovery::{
    discovery_frame, parse_discovery, parse_probe, signed_discovery_frame, Probe, ProbeProof,
    PROOF_OUI, PROOF_SUBTYPE, PROOF_TAG_LEN,
};
pub use ethernet::{EthernetFrame, EthernetRepr};
pub use ipv4::{Ipv4Packet, Ipv4Repr};
pub use lldp::{LldpRepr, LldpTlv};
pub use vlan::{VlanRepr, VlanTag};

enum_with_unknown! {
    /// The EtherType of an Ethernet frame, or of what follows an 802.1Q tag.
    pub enum EtherType(u16) {
        /// IPv4.
        Ipv4 = 0x0800,
        /// ARP.
        Arp = 0x0806,
        /// An 802.1Q VLAN tag follows.
        Vlan = 0x8100,
        /// IPv6.
        Ipv6 = 0x86dd,
        /// LLDP.
        Lldp = 0x88cc,
    }
}
