//! The IP address a frame's sender says it has, from the two kinds of frame in which a
//! host announces it: ARP (its sender fields) and IPv6 neighbour discovery (the source of
//! a solicitation or an advertisement). The controller already sees these frames (ARP
//! requests and solicitations go to broadcast or multicast addresses). What they say is
//! the sender's claim and nothing checks it, so it is for showing an operator only,
//! never for forwarding or for any decision.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use openflow::packet::{ArpPacket, ArpRepr, EtherType};
use slice_core::MacAddress;

const ETHERNET_HEADER: usize = 14;
const VLAN_TAG: usize = 4;
const IPV6_HEADER: usize = 40;
const NEXT_HEADER_ICMPV6: u8 = 58;
const NEIGHBOR_SOLICITATION: u8 = 135;
const NEIGHBOR_ADVERTISEMENT: u8 = 136;
/// RFC 4861 has hosts drop neighbour discovery with any other hop limit: it proves the
/// message came from the link, not through a router.
const ND_HOP_LIMIT: u8 = 255;

/// The address `frame` (a whole Ethernet frame from `src`) announces for its sender, if
/// it is an ARP packet or a neighbour solicitation or advertisement that names one.
/// Packets that speak for another MAC than the frame's sender, and the unspecified
/// addresses of duplicate address detection and ARP probes, announce nothing.
pub(crate) fn sender_address(frame: &[u8], src: MacAddress) -> Option<IpAddr> {
    let mut ethertype = EtherType::from(u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]));
    let mut payload = frame.get(ETHERNET_HEADER..)?;
    if ethertype == EtherType::Vlan {
        ethertype = EtherType::from(u16::from_be_bytes([*payload.get(2)?, *payload.get(3)?]));
        payload = payload.get(VLAN_TAG..)?;
    }
    match ethertype {
        EtherType::Arp => arp_sender(payload, src),
        EtherType::Ipv6 => neighbour_discovery_source(payload),
        _ => None,
    }
}

fn arp_sender(payload: &[u8], src: MacAddress) -> Option<IpAddr> {
    let arp = ArpRepr::parse(&ArpPacket::new_unchecked(payload)).ok()?;
    if arp.sender_mac != src.octets() || !usable_v4(arp.sender_ip) {
        return None;
    }
    Some(IpAddr::V4(arp.sender_ip))
}

fn usable_v4(ip: Ipv4Addr) -> bool {
    !(ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast())
}

fn neighbour_discovery_source(payload: &[u8]) -> Option<IpAddr> {
    let header = payload.get(..IPV6_HEADER)?;
    if header[0] >> 4 != 6 || header[6] != NEXT_HEADER_ICMPV6 || header[7] != ND_HOP_LIMIT {
        return None;
    }
    let icmp_type = *payload.get(IPV6_HEADER)?;
    if icmp_type != NEIGHBOR_SOLICITATION && icmp_type != NEIGHBOR_ADVERTISEMENT {
        return None;
    }
    let source: [u8; 16] = header[8..24].try_into().ok()?;
    let source = Ipv6Addr::from(source);
    if source.is_unspecified() || source.is_multicast() {
        return None;
    }
    Some(IpAddr::V6(source))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];

    fn ethernet(ethertype: u16, payload: &[u8]) -> Vec<u8> {
        let mut frame = vec![0xff; 6];
        frame.extend_from_slice(&MAC);
        frame.extend_from_slice(&ethertype.to_be_bytes());
        frame.extend_from_slice(payload);
        frame
    }

    fn arp(operation: u16, sender_mac: [u8; 6], sender_ip: [u8; 4]) -> Vec<u8> {
        let mut packet = vec![0, 1, 0x08, 0x00, 6, 4];
        packet.extend_from_slice(&operation.to_be_bytes());
        packet.extend_from_slice(&sender_mac);
        packet.extend_from_slice(&sender_ip);
        packet.extend_from_slice(&[0; 6]);
        packet.extend_from_slice(&[192, 0, 2, 254]);
        packet
    }

    fn neighbour_discovery(icmp_type: u8, source: Ipv6Addr, hop_limit: u8) -> Vec<u8> {
        let mut packet = vec![0x60, 0, 0, 0, 0, 24, NEXT_HEADER_ICMPV6, hop_limit];
        packet.extend_from_slice(&source.octets());
        packet.extend_from_slice(&"ff02::1:ff00:1".parse::<Ipv6Addr>().unwrap().octets());
        packet.extend_from_slice(&[icmp_type, 0, 0, 0, 0, 0, 0, 0]);
        packet.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
        packet
    }

    fn from_host(frame: &[u8]) -> Option<IpAddr> {
        sender_address(frame, MacAddress::new(MAC))
    }

    #[test]
    fn arp_requests_and_replies_name_their_sender() {
        for operation in [1, 2] {
            let frame = ethernet(0x0806, &arp(operation, MAC, [192, 0, 2, 7]));
            assert_eq!(from_host(&frame), Some("192.0.2.7".parse().unwrap()));
        }
        // Behind an 802.1Q tag too.
        let mut tagged = vec![0, 10, 0x08, 0x06];
        tagged.extend_from_slice(&arp(1, MAC, [192, 0, 2, 8]));
        let frame = ethernet(0x8100, &tagged);
        assert_eq!(from_host(&frame), Some("192.0.2.8".parse().unwrap()));
    }

    #[test]
    fn arp_for_another_mac_probes_and_short_packets_name_nobody() {
        let other = [0x02, 0, 0, 0, 0, 0x0b];
        assert_eq!(
            from_host(&ethernet(0x0806, &arp(1, other, [192, 0, 2, 7]))),
            None
        );
        // An ARP probe (RFC 5227) has no sender address yet.
        assert_eq!(from_host(&ethernet(0x0806, &arp(1, MAC, [0; 4]))), None);
        assert_eq!(from_host(&ethernet(0x0806, &arp(1, MAC, [255; 4]))), None);
        let whole = ethernet(0x0806, &arp(1, MAC, [192, 0, 2, 7]));
        for cut in 0..whole.len() {
            assert_eq!(from_host(&whole[..cut]), None, "cut at {cut}");
        }
    }

    #[test]
    fn solicitations_and_advertisements_name_their_source() {
        let source: Ipv6Addr = "fe80::2:ff:fe00:a".parse().unwrap();
        for icmp_type in [NEIGHBOR_SOLICITATION, NEIGHBOR_ADVERTISEMENT] {
            let frame = ethernet(0x86dd, &neighbour_discovery(icmp_type, source, 255));
            assert_eq!(from_host(&frame), Some(IpAddr::V6(source)));
        }
    }

    #[test]
    fn other_icmpv6_routed_nd_and_duplicate_address_detection_name_nobody() {
        let source: Ipv6Addr = "2001:db8::a".parse().unwrap();
        // An echo request, a solicitation that crossed a router, one during duplicate
        // address detection (from ::).
        let echo = ethernet(0x86dd, &neighbour_discovery(128, source, 255));
        let routed = ethernet(
            0x86dd,
            &neighbour_discovery(NEIGHBOR_SOLICITATION, source, 64),
        );
        let dad = ethernet(
            0x86dd,
            &neighbour_discovery(NEIGHBOR_SOLICITATION, Ipv6Addr::UNSPECIFIED, 255),
        );
        for frame in [echo, routed, dad] {
            assert_eq!(from_host(&frame), None);
        }
        let whole = ethernet(
            0x86dd,
            &neighbour_discovery(NEIGHBOR_SOLICITATION, source, 255),
        );
        for cut in 0..=ETHERNET_HEADER + IPV6_HEADER {
            assert_eq!(from_host(&whole[..cut]), None, "cut at {cut}");
        }
        // IPv4 traffic announces nothing.
        assert_eq!(from_host(&ethernet(0x0800, &[0x45; 40])), None);
    }
}
