//! Ports: the description request and reply, port status, 1.0 port numbers in 1.3
//! numbering, and port names cut to fit their field.

use openflow::{port, Message, PortDesc, PortReason, Version};

use super::assert_golden;

#[test]
fn port_desc_request_and_reply_v13() {
    let request = [
        0x04, 0x12, 0x00, 0x10, 0x00, 0x00, 0x00,
        0x07, // 1.3, MULTIPART_REQUEST, length 16, xid 7
        0x00, 0x0d, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // OFPMP_PORT_DESC, flags 0, pad
    ];
    assert_golden(&request, Version::Of13, 7, &Message::PortDescRequest);

    let mut reply = vec![
        0x04, 0x13, 0x00, 0x50, 0x00, 0x00, 0x00,
        0x07, // 1.3, MULTIPART_REPLY, length 80, xid 7
        0x00, 0x0d, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, // OFPMP_PORT_DESC, REPLY_MORE, pad
        0xff, 0xff, 0xff, 0xfe, 0x00, 0x00, 0x00, 0x00, // port_no OFPP_LOCAL, pad
        0x0a, 0x00, 0x00, 0x00, 0x00, 0x09, 0x00, 0x00, // hw_addr, pad
    ];
    reply.extend_from_slice(b"br0\0\0\0\0\0\0\0\0\0\0\0\0\0"); // name
    reply.extend_from_slice(&[
        0x00, 0x00, 0x00, 0x01, // config OFPPC_PORT_DOWN
        0x00, 0x00, 0x00, 0x00, // state
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // curr, advertised
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // supported, peer
        0x00, 0x0f, 0x42, 0x40, // curr_speed 1 Gb/s in kb/s
        0x00, 0x98, 0x96, 0x80, // max_speed 10 Gb/s
    ]);
    let desc = PortDesc {
        port_no: port::LOCAL,
        hw_addr: [0x0a, 0, 0, 0, 0, 9],
        name: "br0".into(),
        config: 1,
        curr_speed: 1_000_000,
        max_speed: 10_000_000,
        ..PortDesc::default()
    };
    assert!(!desc.is_live());
    let message = Message::PortDescReply {
        ports: vec![desc],
        more: true,
    };
    assert_golden(&reply, Version::Of13, 7, &message);
}

#[test]
fn port_status_v10_maps_reserved_port_numbers() {
    let mut bytes = vec![
        0x01, 0x0c, 0x00, 0x40, 0x00, 0x00, 0x00, 0x08, // 1.0, PORT_STATUS, length 64, xid 8
        0x02, 0, 0, 0, 0, 0, 0, 0, // reason OFPPR_MODIFY, pad
        0xff, 0xfe, // port_no OFPP_LOCAL (16-bit)
        0, 0, 0, 0, 0, 0, // hw_addr
    ];
    bytes.extend_from_slice(&[0; 16]); // empty name
    bytes.extend_from_slice(&[0; 24]); // config .. peer
    let message = Message::PortStatus {
        reason: PortReason::Modify,
        desc: PortDesc {
            port_no: port::LOCAL,
            ..PortDesc::default()
        },
    };
    assert_golden(&bytes, Version::Of10, 8, &message);
}

#[test]
fn v10_port_numbers_map_to_v13_numbering() {
    assert_eq!(port::from_v10(0xfffd), port::CONTROLLER);
    assert_eq!(port::from_v10(0xffff), port::ANY);
    assert_eq!(port::from_v10(0xff00), port::MAX);
    assert_eq!(port::from_v10(7), 7);
    assert_eq!(port::to_v10(port::IN_PORT), Some(0xfff8));
    assert_eq!(port::to_v10(0xfeff), Some(0xfeff));
    assert_eq!(port::to_v10(0xff00), None);
    assert_eq!(port::to_v10(0x1_0000), None);
    for p in 0..=u16::MAX {
        assert_eq!(port::to_v10(port::from_v10(p)), Some(p));
    }
}

#[test]
fn long_port_names_are_cut_at_a_character_boundary() {
    let desc = PortDesc {
        port_no: 1,
        name: "a-very-long-port-name-ü".into(),
        ..PortDesc::default()
    };
    let name_with_umlaut = PortDesc {
        name: "fourteen-bytesü".into(),
        ..desc.clone()
    };
    for (desc, expected) in [
        (desc, "a-very-long-por"),
        (name_with_umlaut, "fourteen-bytes"),
    ] {
        let mut out = Vec::new();
        Message::PortStatus {
            reason: PortReason::Add,
            desc,
        }
        .emit(Version::Of13, 1, &mut out)
        .unwrap();
        let (_, Message::PortStatus { desc, .. }) = Message::parse(&out).unwrap() else {
            panic!("not a PORT_STATUS");
        };
        assert_eq!(desc.name, expected);
    }
}

/// Found by `cargo xtask fuzz openflow_stream`: a name field with no NUL, or one whose
/// invalid UTF-8 grows when replaced, decoded to a name longer than the field can carry,
/// so the port did not survive its own re-encoding.
#[test]
fn a_parsed_port_name_always_fits_its_field() {
    let mut unterminated = [b'A'; 16];
    let mut invalid_utf8 = [0xf1u8; 16];
    invalid_utf8[12] = 0;
    for (field, expected) in [
        (&mut unterminated, "AAAAAAAAAAAAAAA".to_string()),
        (&mut invalid_utf8, "\u{fffd}".repeat(5)),
    ] {
        let mut out = Vec::new();
        Message::PortStatus {
            reason: PortReason::Add,
            desc: PortDesc::default(),
        }
        .emit(Version::Of13, 1, &mut out)
        .unwrap();
        // ofp_port starts after the header and 8 bytes of reason and padding; its name
        // after port_no, 4 bytes of padding, hw_addr and 2 more bytes of padding.
        let name_at = 8 + 8 + 4 + 4 + 6 + 2;
        out[name_at..name_at + 16].copy_from_slice(field);
        let (_, parsed) = Message::parse(&out).unwrap();
        let Message::PortStatus { desc, .. } = &parsed else {
            panic!("not a PORT_STATUS");
        };
        assert_eq!(desc.name, expected);
        let mut again = Vec::new();
        parsed.emit(Version::Of13, 1, &mut again).unwrap();
        assert_eq!(Message::parse(&again).unwrap().1, parsed);
    }
}
