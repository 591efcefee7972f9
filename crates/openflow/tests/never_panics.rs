//! Property tests: no input makes a decoder panic.
//!
//! Plain random bytes rarely get past the header check, so besides them the tests
//! feed random bodies behind a consistent header of every message type, and damaged
//! copies of real messages.

use openflow::packet::{
    self, ArpPacket, ArpRepr, EthernetFrame, EthernetRepr, Ipv4Packet, Ipv4Repr, LldpRepr,
    VlanRepr, VlanTag,
};
use openflow::{
    frame_len, Action, FlowMod, FlowModCommand, Match, Message, MeterBand, MeterFeatures, MeterMod,
    MeterModCommand, PacketIn, PacketInReason, Version,
};
use proptest::collection::vec;
use proptest::prelude::*;

/// `body` behind an 8-byte header whose length field is right.
fn framed(version: Version, msg_type: u8, body: &[u8]) -> Vec<u8> {
    let length = (8 + body.len()) as u16;
    let mut frame = vec![u8::from(version), msg_type];
    frame.extend_from_slice(&length.to_be_bytes());
    frame.extend_from_slice(&[0, 0, 0, 1]);
    frame.extend_from_slice(body);
    frame
}

fn sample_messages() -> Vec<Vec<u8>> {
    let flow_mod = Message::FlowMod(FlowMod {
        command: FlowModCommand::Add,
        r#match: Match {
            in_port: Some(1),
            eth_dst: Some([1; 6]),
            eth_src: Some([2; 6]),
            eth_type: Some(0x0800),
            vlan_vid: Some(7),
            ..Match::default()
        },
        cookie: 1,
        cookie_mask: 0,
        table_id: 0,
        idle_timeout: 1,
        hard_timeout: 2,
        priority: 3,
        buffer_id: None,
        out_port: openflow::port::ANY,
        out_group: openflow::port::ANY,
        flags: 1,
        meter_id: None,
        write_metadata: None,
        goto_table: None,
        actions: vec![
            Action::Output {
                port: 2,
                max_len: 0,
            },
            Action::Other {
                kind: 0xffff,
                body: vec![0; 12],
            },
        ],
    });
    let packet_in = Message::PacketIn(PacketIn {
        buffer_id: Some(9),
        total_len: 64,
        in_port: 3,
        reason: PacketInReason::NoMatch,
        table_id: 0,
        cookie: 0,
        data: vec![0xab; 64],
    });
    let mut out = Vec::new();
    for version in [Version::Of10, Version::Of13] {
        for message in [&flow_mod, &packet_in] {
            let mut bytes = Vec::new();
            message.emit(version, 1, &mut bytes).unwrap();
            out.push(bytes);
        }
    }
    let mut nicira = Vec::new();
    Message::NxRoleReply(openflow::NxRole::Master)
        .emit(Version::Of10, 1, &mut nicira)
        .unwrap();
    out.push(nicira);
    let Message::FlowMod(mut metered) = flow_mod else {
        unreachable!("built as a FLOW_MOD above")
    };
    metered.meter_id = Some(1);
    let meter_messages = [
        Message::FlowMod(metered),
        Message::MeterMod(MeterMod {
            command: MeterModCommand::Add,
            flags: 0x0f,
            meter_id: 1,
            bands: vec![
                MeterBand::Drop {
                    rate: 1000,
                    burst_size: 2000,
                },
                MeterBand::Other {
                    band_type: 0xffff,
                    rate: 1,
                    burst_size: 2,
                    body: vec![0; 12],
                },
            ],
        }),
        Message::RoleRequest(openflow::RoleMsg {
            role: openflow::ControllerRole::Master,
            generation_id: 7,
        }),
        Message::MeterFeaturesReply(MeterFeatures {
            max_meter: 7,
            band_types: 2,
            capabilities: 0x0f,
            max_bands: 1,
            max_color: 0,
        }),
    ];
    let mut inner = Vec::new();
    meter_messages[0]
        .emit(Version::Of13, 1, &mut inner)
        .unwrap();
    let bundle_messages = [
        Message::BundleControl(openflow::BundleControl {
            bundle_id: 1,
            ctrl_type: openflow::BundleCtrlType::OpenRequest,
            flags: 3,
        }),
        Message::BundleAdd(openflow::BundleAdd {
            bundle_id: 1,
            flags: 3,
            message: inner,
        }),
    ];
    for message in meter_messages.iter().chain(&bundle_messages) {
        let mut bytes = Vec::new();
        message.emit(Version::Of13, 1, &mut bytes).unwrap();
        out.push(bytes);
    }
    out
}

fn run_packet_parsers(bytes: &[u8]) {
    let _ = EthernetRepr::parse(&EthernetFrame::new_unchecked(bytes));
    let _ = VlanRepr::parse(&VlanTag::new_unchecked(bytes));
    let _ = ArpRepr::parse(&ArpPacket::new_unchecked(bytes));
    let _ = Ipv4Repr::parse(&Ipv4Packet::new_unchecked(bytes));
    let _ = LldpRepr::parse(bytes);
    let _ = packet::parse_discovery(bytes);
    let _ = packet::parse_probe(bytes);
    let _ = packet::lldp::find_organization_tlv(bytes, packet::PROOF_OUI, packet::PROOF_SUBTYPE);
    // Unchecked views over short buffers read zeros rather than panic.
    let ipv4 = Ipv4Packet::new_unchecked(bytes);
    let _ = (ipv4.payload(), ipv4.verify_checksum(), ipv4.src_addr());
    let ethernet = EthernetFrame::new_unchecked(bytes);
    let _ = (ethernet.payload(), ethernet.dst(), ethernet.ethertype());
}

proptest! {
    #[test]
    fn frame_len_never_panics(bytes in vec(any::<u8>(), 0..64)) {
        if let Ok(Some(len)) = frame_len(&bytes) {
            prop_assert!(len >= 8 && len <= bytes.len());
        }
    }

    #[test]
    fn parse_never_panics_on_random_bytes(bytes in vec(any::<u8>(), 0..256)) {
        let _ = Message::parse(&bytes);
    }

    #[test]
    fn parse_never_panics_on_random_bodies(
        version in prop_oneof![Just(Version::Of10), Just(Version::Of13), Just(Version::from(6))],
        msg_type in 0u8..32,
        body in vec(any::<u8>(), 0..300),
    ) {
        let _ = Message::parse(&framed(version, msg_type, &body));
    }

    #[test]
    fn parse_never_panics_on_damaged_messages(
        which in any::<prop::sample::Index>(),
        flips in vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut samples = sample_messages();
        let mut frame = samples.swap_remove(which.index(samples.len()));
        for (at, value) in flips {
            // Leave the header alone so that the damage reaches the body decoders.
            let at = 8 + at.index(frame.len() - 8);
            frame[at] = value;
        }
        let keep = 8 + cut.index(frame.len() - 7);
        frame.truncate(keep);
        let length = (frame.len() as u16).to_be_bytes();
        frame[2..4].copy_from_slice(&length);
        let _ = Message::parse(&frame);
    }

    #[test]
    fn packet_parsers_never_panic(bytes in vec(any::<u8>(), 0..128)) {
        run_packet_parsers(&bytes);
    }

    #[test]
    fn packet_parsers_never_panic_on_lldp_like_frames(
        tagged in any::<bool>(),
        payload in vec(any::<u8>(), 0..96),
    ) {
        let mut frame = vec![0x01, 0x80, 0xc2, 0, 0, 0x0e, 2, 0, 0, 0, 0, 1];
        if tagged {
            frame.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
        }
        frame.extend_from_slice(&[0x88, 0xcc]);
        frame.extend_from_slice(&payload);
        run_packet_parsers(&frame);
        let _ = LldpRepr::parse(&payload);
    }
}
