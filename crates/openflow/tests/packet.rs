//! The Ethernet payload codecs and the LLDP discovery frames.

use std::net::Ipv4Addr;

use openflow::packet::{
    discovery_frame, parse_discovery, ArpOperation, ArpPacket, ArpRepr, EtherType, EthernetFrame,
    EthernetRepr, Ipv4Packet, Ipv4Repr, LldpRepr, VlanRepr, VlanTag,
};
use proptest::prelude::*;

const SRC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];

#[test]
fn discovery_frame_golden_bytes() {
    let mut out = Vec::new();
    discovery_frame(0xabc, 2, SRC, &mut out);
    let mut expected = vec![
        0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e, // nearest-bridge group address
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // source
        0x88, 0xcc, // LLDP
        0x02, 0x16, 0x07, // chassis id TLV, length 22, locally assigned
    ];
    expected.extend_from_slice(b"dpid:0000000000000abc");
    expected.extend_from_slice(&[
        0x04, 0x02, 0x07, b'2', // port id TLV, length 2, locally assigned, "2"
        0x06, 0x02, 0x00, 0x78, // TTL TLV, 120 s
        0x00, 0x00, // end TLV
    ]);
    expected.resize(60, 0); // padded to the Ethernet minimum
    assert_eq!(out, expected);
    assert_eq!(parse_discovery(&out), Some((0xabc, 2)));
}

#[test]
fn discovery_frame_appends() {
    let mut out = vec![9, 9];
    discovery_frame(u64::MAX, u32::MAX, SRC, &mut out);
    assert_eq!(&out[..2], &[9, 9]);
    assert_eq!(parse_discovery(&out[2..]), Some((u64::MAX, u32::MAX)));
}

#[test]
fn discovery_behind_a_vlan_tag() {
    let mut untagged = Vec::new();
    discovery_frame(7, 42, SRC, &mut untagged);
    let mut tagged = untagged[..12].to_vec();
    tagged.extend_from_slice(&[0x81, 0x00, 0x00, 0x0a]); // 802.1Q, VLAN 10
    tagged.extend_from_slice(&untagged[12..]);
    assert_eq!(parse_discovery(&tagged), Some((7, 42)));

    // Two tags are one too many.
    let mut double = tagged[..16].to_vec();
    double.extend_from_slice(&tagged[12..]);
    assert_eq!(parse_discovery(&double), None);
}

#[test]
fn other_frames_are_not_discovery() {
    let mut frame = Vec::new();
    discovery_frame(7, 42, SRC, &mut frame);

    let mut ipv4 = frame.clone();
    ipv4[12..14].copy_from_slice(&u16::from(EtherType::Ipv4).to_be_bytes());
    assert_eq!(parse_discovery(&ipv4), None);

    // An LLDP frame from some other sender: MAC address chassis id, name port id.
    let foreign = LldpRepr {
        chassis_id_subtype: 4,
        chassis_id: &[0, 1, 2, 3, 4, 5],
        port_id_subtype: 5,
        port_id: b"ge-0/0/1",
        ttl: 120,
    };
    assert_eq!(parse_discovery(&lldp_frame(&foreign)), None);

    // Locally assigned ids that are not ours.
    let lookalikes: [(&[u8], &[u8]); 7] = [
        (b"dpid:0000000000000ABC", b"1"),          // upper case
        (b"dpid:abc", b"1"),                       // too short
        (b"dpid:00000000000000abc", b"1"),         // too long
        (b"dpid:000000000000xabc", b"1"),          // not hex
        (b"dpid:0000000000000abc", b"+1"),         // sign
        (b"dpid:0000000000000abc", b"4294967296"), // over u32
        (b"switch:000000000000ab", b"1"),
    ];
    for (chassis_id, port_id) in lookalikes {
        let lldp = LldpRepr {
            chassis_id_subtype: 7,
            chassis_id,
            port_id_subtype: 7,
            port_id,
            ttl: 120,
        };
        assert_eq!(parse_discovery(&lldp_frame(&lldp)), None, "{lldp:?}");
    }

    // Cut anywhere before the end of the TTL TLV (byte 46), it is no longer a
    // discovery frame; the end TLV after it is optional.
    for len in 0..46 {
        assert_eq!(parse_discovery(&frame[..len]), None, "cut at {len}");
    }
    assert_eq!(parse_discovery(b"junk"), None);
}

fn lldp_frame(lldp: &LldpRepr) -> Vec<u8> {
    let mut frame = vec![0; 14 + lldp.buffer_len()];
    EthernetRepr {
        dst: [0x01, 0x80, 0xc2, 0, 0, 0x0e],
        src: SRC,
        ethertype: EtherType::Lldp,
    }
    .emit(&mut EthernetFrame::new_unchecked(&mut frame[..]));
    lldp.emit(&mut frame[14..]).unwrap();
    frame
}

#[test]
fn lldp_skips_optional_tlvs_and_requires_the_mandatory_ones() {
    let lldpdu = [
        0x02, 0x07, 0x04, 0, 1, 2, 3, 4, 5, // chassis id: MAC address
        0x04, 0x03, 0x05, b'p', b'1', // port id: interface name
        0x06, 0x02, 0x00, 0x3c, // TTL 60
        0x0a, 0x02, b's', b'w', // system name (optional)
        0x00, 0x00, // end
        0xff, 0xff, // padding junk after the end
    ];
    let lldp = LldpRepr::parse(&lldpdu).unwrap();
    assert_eq!(lldp.chassis_id, &[0, 1, 2, 3, 4, 5]);
    assert_eq!(lldp.port_id, b"p1");
    assert_eq!(lldp.ttl, 60);

    // Port id before chassis id.
    let swapped = [0x04, 0x03, 0x05, b'p', b'1', 0x02, 0x02, 0x07, b'x'];
    assert!(LldpRepr::parse(&swapped).is_err());
    // A chassis id TLV with only a subtype.
    assert!(LldpRepr::parse(&[0x02, 0x01, 0x07]).is_err());
    // A TTL of the wrong size.
    let bad_ttl = [
        0x02, 0x02, 0x07, b'x', 0x04, 0x02, 0x07, b'1', 0x06, 0x01, 0x00,
    ];
    assert!(LldpRepr::parse(&bad_ttl).is_err());
    // An id too long to emit.
    let long = [b'x'; 256];
    let lldp = LldpRepr {
        chassis_id: &long,
        ..lldp
    };
    assert!(lldp.emit(&mut vec![0; lldp.buffer_len()]).is_err());
}

#[test]
fn arp_request_parses() {
    let bytes = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, // Ethernet, IPv4, lengths 6 and 4
        0x00, 0x01, // request
        0x02, 0, 0, 0, 0, 0x01, 10, 0, 0, 1, // sender
        0, 0, 0, 0, 0, 0, 10, 0, 0, 2, // target
    ];
    let arp = ArpRepr::parse(&ArpPacket::new_checked(&bytes[..]).unwrap()).unwrap();
    assert_eq!(
        arp,
        ArpRepr {
            operation: ArpOperation::Request,
            sender_mac: SRC,
            sender_ip: Ipv4Addr::new(10, 0, 0, 1),
            target_mac: [0; 6],
            target_ip: Ipv4Addr::new(10, 0, 0, 2),
        }
    );
    let mut out = [0u8; 28];
    arp.emit(&mut ArpPacket::new_unchecked(&mut out[..]));
    assert_eq!(out, bytes);

    let mut ipv6 = bytes;
    ipv6[2..4].copy_from_slice(&[0x86, 0xdd]);
    assert!(ArpRepr::parse(&ArpPacket::new_unchecked(&ipv6[..])).is_err());
    assert!(ArpPacket::new_checked(&bytes[..27]).is_err());
}

#[test]
fn ipv4_header_parses_and_checks_lengths() {
    let bytes = [
        0x45, 0x00, 0x00, 0x1c, // version 4, IHL 5, total length 28
        0x00, 0x00, 0x40, 0x00, // id, don't fragment
        0x40, 0x11, 0x00, 0x00, // TTL 64, UDP, checksum (filled below)
        10, 0, 0, 1, // source
        10, 0, 0, 2, // destination
        1, 2, 3, 4, 5, 6, 7, 8, // payload
        0, 0, // Ethernet padding past the total length
    ];
    let mut bytes = bytes;
    let sum = openflow::packet::ipv4::checksum(&bytes[..20]);
    bytes[10..12].copy_from_slice(&sum.to_be_bytes());
    let packet = Ipv4Packet::new_checked(&bytes[..]).unwrap();
    assert!(packet.verify_checksum());
    assert_eq!(packet.payload(), &[1, 2, 3, 4, 5, 6, 7, 8]);
    let ipv4 = Ipv4Repr::parse(&packet).unwrap();
    assert_eq!(
        ipv4,
        Ipv4Repr {
            src_addr: Ipv4Addr::new(10, 0, 0, 1),
            dst_addr: Ipv4Addr::new(10, 0, 0, 2),
            protocol: 17,
            ttl: 64,
            payload_len: 8,
        }
    );

    let mut short_ihl = bytes;
    short_ihl[0] = 0x44;
    assert!(Ipv4Packet::new_checked(&short_ihl[..]).is_err());
    let mut long_ihl = bytes;
    long_ihl[0] = 0x4f; // 60-byte header in a 30-byte buffer
    assert!(Ipv4Packet::new_checked(&long_ihl[..]).is_err());
    let mut total_below_header = bytes;
    total_below_header[3] = 19;
    assert!(Ipv4Packet::new_checked(&total_below_header[..]).is_err());
    let mut total_past_buffer = bytes;
    total_past_buffer[3] = 31;
    assert!(Ipv4Packet::new_checked(&total_past_buffer[..]).is_err());
    let mut ipv6 = bytes;
    ipv6[0] = 0x65;
    assert!(Ipv4Repr::parse(&Ipv4Packet::new_unchecked(&ipv6[..])).is_err());
}

#[test]
fn vlan_tagged_ethernet_frame() {
    let frame = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // broadcast
        0x02, 0, 0, 0, 0, 0x01, // source
        0x81, 0x00, // 802.1Q
        0xa0, 0x64, // PCP 5, DEI 0, VID 100
        0x08, 0x06, // ARP
    ];
    let ethernet = EthernetFrame::new_checked(&frame[..]).unwrap();
    let repr = EthernetRepr::parse(&ethernet).unwrap();
    assert_eq!(repr.ethertype, EtherType::Vlan);
    let tag = VlanTag::new_checked(ethernet.payload()).unwrap();
    assert_eq!(tag.vid(), 100);
    let vlan = VlanRepr::parse(&tag).unwrap();
    assert_eq!(
        vlan,
        VlanRepr {
            pcp: 5,
            dei: false,
            vid: 100,
            ethertype: EtherType::Arp
        }
    );
    let mut out = [0u8; 4];
    vlan.emit(&mut VlanTag::new_unchecked(&mut out[..]))
        .unwrap();
    assert_eq!(out, frame[14..]);
    let too_wide = VlanRepr {
        vid: 0x1000,
        ..vlan
    };
    assert!(too_wide
        .emit(&mut VlanTag::new_unchecked(&mut out[..]))
        .is_err());
    assert!(EthernetFrame::new_checked(&frame[..13]).is_err());
}

proptest! {
    #[test]
    fn discovery_round_trips(dpid in any::<u64>(), port_no in any::<u32>(), src in any::<[u8; 6]>()) {
        let mut frame = Vec::new();
        discovery_frame(dpid, port_no, src, &mut frame);
        prop_assert!(frame.len() >= 60);
        prop_assert_eq!(parse_discovery(&frame), Some((dpid, port_no)));
    }

    #[test]
    fn ipv4_round_trips(
        src in any::<[u8; 4]>(),
        dst in any::<[u8; 4]>(),
        protocol in any::<u8>(),
        ttl in any::<u8>(),
        payload_len in 0usize..100,
    ) {
        let repr = Ipv4Repr {
            src_addr: src.into(),
            dst_addr: dst.into(),
            protocol,
            ttl,
            payload_len,
        };
        let mut bytes = vec![0; repr.buffer_len() + payload_len];
        repr.emit(&mut Ipv4Packet::new_unchecked(&mut bytes[..])).unwrap();
        let packet = Ipv4Packet::new_checked(&bytes[..]).unwrap();
        prop_assert!(packet.verify_checksum());
        prop_assert_eq!(Ipv4Repr::parse(&packet).unwrap(), repr);
    }
}

#[test]
fn a_signed_probe_carries_its_proof_in_an_organisation_tlv() {
    let proof = openflow::packet::ProbeProof {
        nonce: 0x0102_0304_0506_0708,
        tag: [0xaa; 16],
    };
    let mut out = Vec::new();
    openflow::packet::signed_discovery_frame(0xabc, 2, SRC, &proof, &mut out);
    // The TTL TLV, then type 127 with 28 value bytes: OUI, subtype, nonce, tag; then end.
    let ttl_end = 14 + 2 + 22 + 4 + 4;
    let mut expected_tail = vec![0xfe, 28, 0x02, 0x5c, 0x1c, 0x01];
    expected_tail.extend_from_slice(&proof.nonce.to_be_bytes());
    expected_tail.extend_from_slice(&[0xaa; 16]);
    expected_tail.extend_from_slice(&[0, 0]);
    assert_eq!(&out[ttl_end..], expected_tail.as_slice());
    let parsed = openflow::packet::parse_probe(&out).unwrap();
    assert_eq!((parsed.dpid, parsed.port_no), (0xabc, 2));
    assert_eq!(parsed.proof, Some(proof));
    assert_eq!(parse_discovery(&out), Some((0xabc, 2)));

    // An old-style probe parses, without a proof.
    let mut plain = Vec::new();
    discovery_frame(0xabc, 2, SRC, &mut plain);
    assert_eq!(openflow::packet::parse_probe(&plain).unwrap().proof, None);

    // A proof TLV of the wrong length is no proof.
    let mut short = out.clone();
    short[ttl_end + 1] = 27;
    short.remove(ttl_end + 2 + 27);
    assert_eq!(openflow::packet::parse_probe(&short).unwrap().proof, None);
}
