//! Golden byte tests: each array is written by hand from the specification's struct
//! layout, one line per field group, and must both parse to the repr and be what the
//! repr emits.

use openflow::{
    frame_len, negotiate, port, Action, Error, FeaturesReply, FlowMod, FlowModCommand, HeaderRepr,
    Masked, Match, Message, MeterBand, MeterFeatures, MeterMod, MeterModCommand, PacketIn,
    PacketInReason, PortDesc, PortReason, Version,
};
use openflow::{ControllerRole, NxRole, RoleMsg};

/// Parses `bytes` and emits `message`, checking both directions.
fn assert_golden(bytes: &[u8], version: Version, xid: u32, message: &Message) {
    let (header, parsed) = Message::parse(bytes).expect("golden bytes parse");
    assert_eq!(
        header,
        HeaderRepr {
            version,
            msg_type: bytes[1],
            length: bytes.len() as u16,
            xid,
        }
    );
    assert_eq!(&parsed, message);
    let mut out = Vec::new();
    message
        .emit(version, xid, &mut out)
        .expect("golden repr emits");
    assert_eq!(out, bytes);
}

#[test]
fn hello_v10() {
    let bytes = [
        0x01, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x01, // version 1.0, HELLO, length 8, xid 1
    ];
    assert_golden(&bytes, Version::Of10, 1, &Message::Hello { versions: None });
}

#[test]
fn hello_v13_with_version_bitmap() {
    let bytes = [
        0x04, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00,
        0x02, // version 1.3, HELLO, length 16, xid 2
        0x00, 0x01, 0x00, 0x08, // element OFPHET_VERSIONBITMAP, length 8
        0x00, 0x00, 0x00, 0x12, // bitmap: bits 1 (1.0) and 4 (1.3)
    ];
    let versions = Some(Version::Of10.bitmap_bit() | Version::Of13.bitmap_bit());
    assert_golden(&bytes, Version::Of13, 2, &Message::Hello { versions });
}

#[test]
fn flow_mod_v10() {
    let bytes = [
        0x01, 0x0e, 0x00, 0x50, 0x00, 0x00, 0x00, 0x03, // 1.0, FLOW_MOD, length 80, xid 3
        // ofp_match
        0x00, 0x3f, 0xff, 0xf2, // wildcards: OFPFW_ALL but IN_PORT, DL_SRC, DL_DST
        0x00, 0x01, // in_port 1
        0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, // dl_src
        0x00, 0x00, 0x00, 0x00, 0x00, 0x0b, // dl_dst
        0x00, 0x00, 0x00, 0x00, // dl_vlan, dl_vlan_pcp, pad
        0x00, 0x00, 0x00, 0x00, // dl_type, nw_tos, nw_proto
        0x00, 0x00, // pad
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // nw_src, nw_dst
        0x00, 0x00, 0x00, 0x00, // tp_src, tp_dst
        // flow mod body
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // cookie
        0x00, 0x00, // command OFPFC_ADD
        0x00, 0x0a, 0x00, 0x00, // idle_timeout 10, hard_timeout 0
        0x80, 0x00, // priority 0x8000
        0xff, 0xff, 0xff, 0xff, // buffer_id OFP_NO_BUFFER
        0xff, 0xff, // out_port OFPP_NONE
        0x00, 0x01, // flags OFPFF_SEND_FLOW_REM
        // ofp_action_output
        0x00, 0x00, 0x00, 0x08, // OFPAT_OUTPUT, length 8
        0x00, 0x02, 0x00, 0x00, // port 2, max_len 0
    ];
    let flow_mod = FlowMod {
        command: FlowModCommand::Add,
        r#match: Match {
            in_port: Some(1),
            eth_src: Some([0, 0, 0, 0, 0, 0x0a]),
            eth_dst: Some([0, 0, 0, 0, 0, 0x0b]),
            ..Match::default()
        },
        cookie: 0x0102_0304_0506_0708,
        cookie_mask: 0,
        table_id: 0,
        idle_timeout: 10,
        hard_timeout: 0,
        priority: 0x8000,
        buffer_id: None,
        out_port: port::ANY,
        out_group: port::ANY,
        flags: 1,
        meter_id: None,
        write_metadata: None,
        goto_table: None,
        actions: vec![Action::Output {
            port: 2,
            max_len: 0,
        }],
    };
    assert_golden(&bytes, Version::Of10, 3, &Message::FlowMod(flow_mod));
}

#[test]
fn flow_mod_v13() {
    let bytes = [
        0x04, 0x0e, 0x00, 0x68, 0x00, 0x00, 0x00, 0x04, // 1.3, FLOW_MOD, length 104, xid 4
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // cookie
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // cookie_mask
        0x00, 0x00, // table_id 0, command OFPFC_ADD
        0x00, 0x0a, 0x00, 0x1e, // idle_timeout 10, hard_timeout 30
        0x80, 0x00, // priority
        0xff, 0xff, 0xff, 0xff, // buffer_id OFP_NO_BUFFER
        0xff, 0xff, 0xff, 0xff, // out_port OFPP_ANY
        0xff, 0xff, 0xff, 0xff, // out_group OFPG_ANY
        0x00, 0x01, 0x00, 0x00, // flags OFPFF_SEND_FLOW_REM, pad
        // ofp_match
        0x00, 0x01, 0x00, 0x20, // OFPMT_OXM, length 32 (a multiple of 8: no padding)
        0x80, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x01, // OXM IN_PORT = 1
        0x80, 0x00, 0x06, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0b, // OXM ETH_DST
        0x80, 0x00, 0x08, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, // OXM ETH_SRC
        // ofp_instruction_actions
        0x00, 0x04, 0x00, 0x18, 0x00, 0x00, 0x00, 0x00, // APPLY_ACTIONS, length 24, pad
        // ofp_action_output
        0x00, 0x00, 0x00, 0x10, // OFPAT_OUTPUT, length 16
        0x00, 0x00, 0x00, 0x02, // port 2
        0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // max_len OFPCML_NO_BUFFER, pad
    ];
    let flow_mod = FlowMod {
        command: FlowModCommand::Add,
        r#match: Match {
            in_port: Some(1),
            eth_dst: Some([0, 0, 0, 0, 0, 0x0b]),
            eth_src: Some([0, 0, 0, 0, 0, 0x0a]),
            ..Match::default()
        },
        cookie: 0x0102_0304_0506_0708,
        cookie_mask: 0,
        table_id: 0,
        idle_timeout: 10,
        hard_timeout: 30,
        priority: 0x8000,
        buffer_id: None,
        out_port: port::ANY,
        out_group: 0xffff_ffff,
        flags: 1,
        meter_id: None,
        write_metadata: None,
        goto_table: None,
        actions: vec![Action::Output {
            port: 2,
            max_len: 0xffff,
        }],
    };
    assert_golden(&bytes, Version::Of13, 4, &Message::FlowMod(flow_mod));
}

#[test]
fn packet_in_v13() {
    let bytes = [
        0x04, 0x0a, 0x00, 0x2e, 0x00, 0x00, 0x00, 0x05, // 1.3, PACKET_IN, length 46, xid 5
        0xff, 0xff, 0xff, 0xff, // buffer_id OFP_NO_BUFFER
        0x00, 0x04, // total_len 4
        0x01, 0x02, // reason OFPR_ACTION, table_id 2
        0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, // cookie
        // ofp_match
        0x00, 0x01, 0x00, 0x0c, // OFPMT_OXM, length 12
        0x80, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x03, // OXM IN_PORT = 3
        0x00, 0x00, 0x00, 0x00, // padding to 16
        0x00, 0x00, // pad
        0xde, 0xad, 0xbe, 0xef, // data
    ];
    let packet_in = PacketIn {
        buffer_id: None,
        total_len: 4,
        in_port: 3,
        reason: PacketInReason::Action,
        table_id: 2,
        cookie: 0x1122_3344_5566_7788,
        data: vec![0xde, 0xad, 0xbe, 0xef],
    };
    assert_golden(&bytes, Version::Of13, 5, &Message::PacketIn(packet_in));
}

#[test]
fn features_reply_v10_with_one_port() {
    let bytes = [
        0x01, 0x06, 0x00, 0x50, 0x00, 0x00, 0x00,
        0x06, // 1.0, FEATURES_REPLY, length 80, xid 6
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xab, 0xcd, // datapath_id
        0x00, 0x00, 0x01, 0x00, // n_buffers 256
        0xfe, 0x00, 0x00, 0x00, // n_tables 254, pad
        0x00, 0x00, 0x00, 0xc7, // capabilities
        0x00, 0x00, 0x00, 0x00, // actions (sent as 0)
        // ofp_phy_port
        0x00, 0x01, // port_no 1
        0x0a, 0x00, 0x00, 0x00, 0x00, 0x01, // hw_addr
        b'e', b't', b'h', b'1', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // name
        0x00, 0x00, 0x00, 0x00, // config
        0x00, 0x00, 0x00, 0x01, // state OFPPS_LINK_DOWN
        0x00, 0x00, 0x02, 0x80, // curr: 1GB_FD | COPPER
        0x00, 0x00, 0x00, 0x00, // advertised
        0x00, 0x00, 0x02, 0x80, // supported
        0x00, 0x00, 0x00, 0x00, // peer
    ];
    let features = FeaturesReply {
        datapath_id: 0xabcd,
        n_buffers: 256,
        n_tables: 254,
        auxiliary_id: 0,
        capabilities: 0xc7,
        ports: vec![PortDesc {
            port_no: 1,
            hw_addr: [0x0a, 0, 0, 0, 0, 1],
            name: "eth1".into(),
            state: 1,
            curr: 0x280,
            supported: 0x280,
            ..PortDesc::default()
        }],
    };
    assert!(!features.ports[0].is_live());
    assert_golden(&bytes, Version::Of10, 6, &Message::FeaturesReply(features));
}

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
fn packet_out_v10_to_controller_port() {
    let bytes = [
        0x01, 0x0d, 0x00, 0x1c, 0x00, 0x00, 0x00, 0x09, // 1.0, PACKET_OUT, length 28, xid 9
        0xff, 0xff, 0xff, 0xff, // buffer_id OFP_NO_BUFFER
        0xff, 0xfd, 0x00, 0x08, // in_port OFPP_CONTROLLER, actions_len 8
        0x00, 0x00, 0x00, 0x08, 0xff, 0xfb, 0x00, 0x00, // output to OFPP_FLOOD
        0x01, 0x02, 0x03, 0x04, // data
    ];
    let message = Message::PacketOut(openflow::PacketOut {
        buffer_id: None,
        in_port: port::CONTROLLER,
        actions: vec![Action::Output {
            port: port::FLOOD,
            max_len: 0,
        }],
        data: vec![1, 2, 3, 4],
    });
    assert_golden(&bytes, Version::Of10, 9, &message);
}

#[test]
fn flow_mod_v13_reads_masks_and_the_next_table_and_skips_the_rest() {
    let bytes = [
        0x04, 0x0e, 0x00, 0x78, 0x00, 0x00, 0x00, 0x0a, // 1.3, FLOW_MOD, length 120
        0, 0, 0, 0, 0, 0, 0, 0, // cookie
        0, 0, 0, 0, 0, 0, 0, 0, // cookie_mask
        0x01, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x10, // table 1, DELETE, timeouts, priority 16
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // buffer_id, out_port
        0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, // out_group, flags, pad
        0x00, 0x01, 0x00, 0x22, // OFPMT_OXM, length 34
        0x80, 0x00, 0x16, 0x04, 0x0a, 0x00, 0x00, 0x01, // OXM IPV4_SRC (not modelled)
        0x80, 0x00, 0x07, 0x0c, // OXM ETH_DST with mask
        1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, // value, mask: any group address
        0x80, 0x00, 0x0a, 0x02, 0x08, 0x00, // OXM ETH_TYPE = IPv4
        0, 0, 0, 0, 0, 0, // padding to 40
        0x00, 0x01, 0x00, 0x08, 0x02, 0x00, 0x00, 0x00, // GOTO_TABLE 2
        0x00, 0x04, 0x00, 0x18, 0, 0, 0, 0, // APPLY_ACTIONS, length 24
        0x00, 0x00, 0x00, 0x10, 0xff, 0xff, 0xff, 0xfd, // output to CONTROLLER
        0x00, 0x80, 0, 0, 0, 0, 0, 0, // max_len 128, pad
    ];
    let (_, message) = Message::parse(&bytes).unwrap();
    let Message::FlowMod(flow_mod) = message else {
        panic!("not a FLOW_MOD: {message:?}");
    };
    assert_eq!(flow_mod.command, FlowModCommand::Delete);
    assert_eq!(flow_mod.table_id, 1);
    assert_eq!(
        flow_mod.r#match,
        Match {
            eth_dst: Some([1, 0, 0, 0, 0, 0]),
            eth_dst_mask: Some([1, 0, 0, 0, 0, 0]),
            eth_type: Some(0x0800),
            ..Match::default()
        }
    );
    assert_eq!(flow_mod.goto_table, Some(2));
    assert_eq!(
        flow_mod.actions,
        vec![Action::Output {
            port: port::CONTROLLER,
            max_len: 128
        }]
    );
}

/// Hand-assembled from the 1.3 specification: an ingress-table flow that tags packets
/// with metadata and sends them on to table 1, and a table-1 flow that matches a masked
/// metadata bit and any group destination.
#[test]
fn flow_mod_v13_with_metadata_and_a_next_table() {
    let tag = FlowMod {
        table_id: 0,
        priority: 300,
        r#match: Match {
            in_port: Some(1),
            eth_src: Some([0, 0, 0, 0, 0, 1]),
            ..Match::default()
        },
        write_metadata: Some(Masked {
            value: 0x4,
            mask: 0xff,
        }),
        goto_table: Some(1),
        ..FlowMod::default()
    };
    let bytes = [
        0x04, 0x0e, 0x00, 0x68, 0x00, 0x00, 0x00, 0x05, // 1.3, FLOW_MOD, length 104
        0, 0, 0, 0, 0, 0, 0, 0, // cookie
        0, 0, 0, 0, 0, 0, 0, 0, // cookie_mask
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x2c, // table 0, ADD, timeouts, 300
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // buffer_id, out_port
        0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, // out_group, flags, pad
        0x00, 0x01, 0x00, 0x16, // OFPMT_OXM, length 22
        0x80, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x01, // IN_PORT 1
        0x80, 0x00, 0x08, 0x06, 0, 0, 0, 0, 0, 1, // ETH_SRC
        0, 0, // padding to 24
        0x00, 0x02, 0x00, 0x18, 0, 0, 0, 0, // WRITE_METADATA, length 24
        0, 0, 0, 0, 0, 0, 0, 0x04, // metadata
        0, 0, 0, 0, 0, 0, 0, 0xff, // mask
        0x00, 0x01, 0x00, 0x08, 0x01, 0, 0, 0, // GOTO_TABLE 1
    ];
    assert_golden(&bytes, Version::Of13, 5, &Message::FlowMod(tag));

    let forward = FlowMod {
        table_id: 1,
        priority: 100,
        r#match: Match {
            metadata: Some(Masked {
                value: 0x4,
                mask: 0x4,
            }),
            eth_dst: Some([1, 0, 0, 0, 0, 0]),
            eth_dst_mask: Some([1, 0, 0, 0, 0, 0]),
            ..Match::default()
        },
        ..FlowMod::default()
    };
    let bytes = [
        0x04, 0x0e, 0x00, 0x58, 0x00, 0x00, 0x00, 0x06, // 1.3, FLOW_MOD, length 88
        0, 0, 0, 0, 0, 0, 0, 0, // cookie
        0, 0, 0, 0, 0, 0, 0, 0, // cookie_mask
        0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x64, // table 1, ADD, timeouts, 100
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // buffer_id, out_port
        0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, // out_group, flags, pad
        0x00, 0x01, 0x00, 0x28, // OFPMT_OXM, length 40: no padding
        0x80, 0x00, 0x05, 0x10, // METADATA with mask
        0, 0, 0, 0, 0, 0, 0, 0x04, 0, 0, 0, 0, 0, 0, 0, 0x04, // value, mask
        0x80, 0x00, 0x07, 0x0c, // ETH_DST with mask
        1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, // value, mask; no instructions: a drop flow
    ];
    assert_golden(&bytes, Version::Of13, 6, &Message::FlowMod(forward.clone()));
    let mut out = Vec::new();
    assert!(
        Message::FlowMod(forward)
            .emit(Version::Of10, 6, &mut out)
            .is_err(),
        "1.0 has no metadata"
    );
}

#[test]
fn vlan_vid_carries_the_present_bit_on_1_3() {
    let r#match = Match {
        vlan_vid: Some(0x123),
        ..Match::default()
    };
    let mut buffer = vec![0; r#match.buffer_len_v13()];
    r#match
        .emit_v13(&mut openflow::flow_match::OxmMatch::new_unchecked(
            &mut buffer[..],
        ))
        .unwrap();
    assert_eq!(
        buffer,
        [
            0x00, 0x01, 0x00, 0x0a, // OFPMT_OXM, length 10
            0x80, 0x00, 0x0c, 0x02, 0x11, 0x23, // VLAN_VID = OFPVID_PRESENT | 0x123
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // padding to 16
        ]
    );
    let view = openflow::flow_match::OxmMatch::new_checked(&buffer[..]).unwrap();
    assert_eq!(Match::parse_v13(&view).unwrap(), r#match);
}

#[test]
fn hello_of_a_newer_version_parses_for_negotiation() {
    let bytes = [
        0x06, 0x00, 0x00, 0x18, 0, 0, 0, 1, // version 1.5, HELLO, length 24
        0x00, 0x07, 0x00, 0x06, 0xaa, 0xbb, 0, 0, // an unknown element, padded to 8
        0x00, 0x01, 0x00, 0x08, 0x00, 0x00, 0x00, 0x52, // bitmap: 1.0, 1.3, 1.5
    ];
    let (header, message) = Message::parse(&bytes).unwrap();
    assert_eq!(header.version, Version::Unknown(6));
    let Message::Hello { versions } = message else {
        panic!("not a HELLO");
    };
    assert_eq!(versions, Some(0x52));
    assert_eq!(
        negotiate(&[Version::Of10, Version::Of13], header.version, versions),
        Some(Version::Of13)
    );

    let echo = [0x06, 0x02, 0x00, 0x08, 0, 0, 0, 1];
    assert_eq!(
        Message::parse(&echo),
        Err(Error::UnsupportedVersion(Version::Unknown(6)))
    );
}

#[test]
fn unmodelled_messages_come_back_as_other() {
    // 1.0 STATS_REPLY (type 17) of OFPST_DESC.
    let bytes = [0x01, 0x11, 0x00, 0x0c, 0, 0, 0, 1, 0x00, 0x00, 0x00, 0x00];
    let (_, message) = Message::parse(&bytes).unwrap();
    assert_eq!(
        message,
        Message::Other {
            msg_type: 17,
            body: vec![0; 4]
        }
    );
    // 1.3 MULTIPART_REPLY of OFPMP_TABLE (3).
    let bytes = [0x04, 0x13, 0x00, 0x10, 0, 0, 0, 1, 0, 3, 0, 0, 0, 0, 0, 0];
    let (_, message) = Message::parse(&bytes).unwrap();
    assert!(matches!(message, Message::Other { msg_type: 19, .. }));
    // An empty 1.3 MULTIPART_REPLY of OFPMP_FLOW (1) is a flow stats reply now.
    let bytes = [0x04, 0x13, 0x00, 0x10, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0];
    let (_, message) = Message::parse(&bytes).unwrap();
    assert_eq!(
        message,
        Message::FlowStatsReply {
            flows: Vec::new(),
            more: false
        }
    );
}

#[test]
fn frame_must_match_its_header_length() {
    let hello = [0x04, 0x00, 0x00, 0x08, 0, 0, 0, 1];
    assert!(matches!(
        Message::parse(&hello[..7]),
        Err(Error::Truncated { .. })
    ));
    let mut longer = hello.to_vec();
    longer.push(0);
    assert!(matches!(
        Message::parse(&longer),
        Err(Error::BadLength { .. })
    ));
}

#[test]
fn packet_in_v13_without_in_port_is_an_error() {
    let bytes = [
        0x04, 0x0a, 0x00, 0x24, 0, 0, 0, 1, // 1.3, PACKET_IN, length 36
        0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, // buffer_id, total_len, reason, table
        0, 0, 0, 0, 0, 0, 0, 0, // cookie
        0x00, 0x01, 0x00, 0x04, 0, 0, 0, 0, // empty OXM match, padded
        0x00, 0x00, 0x00, 0x00, // pad, 2 bytes of data
    ];
    assert!(matches!(
        Message::parse(&bytes),
        Err(Error::MissingField { .. })
    ));
}

/// The table-miss flow sliced installs on a switch with meters: OFPIT_METER first,
/// then the actions.
#[test]
fn flow_mod_v13_with_a_meter_instruction() {
    let bytes = [
        0x04, 0x0e, 0x00, 0x58, 0x00, 0x00, 0x00, 0x05, // 1.3, FLOW_MOD, length 88, xid 5
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // cookie
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // cookie_mask
        0x00, 0x00, // table_id 0, command OFPFC_ADD
        0x00, 0x00, 0x00, 0x00, // idle_timeout, hard_timeout
        0x00, 0x00, // priority 0
        0xff, 0xff, 0xff, 0xff, // buffer_id OFP_NO_BUFFER
        0xff, 0xff, 0xff, 0xff, // out_port OFPP_ANY
        0xff, 0xff, 0xff, 0xff, // out_group OFPG_ANY
        0x00, 0x00, 0x00, 0x00, // flags, pad
        // ofp_match
        0x00, 0x01, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, // OFPMT_OXM, length 4, pad to 8
        // ofp_instruction_meter
        0x00, 0x06, 0x00, 0x08, // OFPIT_METER, length 8
        0x00, 0x00, 0x00, 0x01, // meter_id 1
        // ofp_instruction_actions
        0x00, 0x04, 0x00, 0x18, 0x00, 0x00, 0x00, 0x00, // APPLY_ACTIONS, length 24, pad
        // ofp_action_output
        0x00, 0x00, 0x00, 0x10, // OFPAT_OUTPUT, length 16
        0xff, 0xff, 0xff, 0xfd, // port OFPP_CONTROLLER
        0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // max_len OFPCML_NO_BUFFER, pad
    ];
    let flow_mod = FlowMod {
        command: FlowModCommand::Add,
        r#match: Match::default(),
        cookie: 0,
        cookie_mask: 0,
        table_id: 0,
        idle_timeout: 0,
        hard_timeout: 0,
        priority: 0,
        buffer_id: None,
        out_port: port::ANY,
        out_group: 0xffff_ffff,
        flags: 0,
        meter_id: Some(1),
        write_metadata: None,
        goto_table: None,
        actions: vec![Action::Output {
            port: port::CONTROLLER,
            max_len: 0xffff,
        }],
    };
    assert_golden(
        &bytes,
        Version::Of13,
        5,
        &Message::FlowMod(flow_mod.clone()),
    );

    // 1.0 has no meters: the FLOW_MOD does not emit there, and nothing is written.
    let mut out = vec![0xaa];
    let error = Message::FlowMod(flow_mod)
        .emit(Version::Of10, 5, &mut out)
        .unwrap_err();
    assert_eq!(
        error,
        Error::NotInVersion {
            what: "FLOW_MOD meter",
            version: Version::Of10
        }
    );
    assert_eq!(out, [0xaa]);
}

#[test]
fn meter_mod_with_a_drop_band() {
    let bytes = [
        0x04, 0x1d, 0x00, 0x20, 0x00, 0x00, 0x00, 0x09, // 1.3, METER_MOD, length 32, xid 9
        0x00, 0x00, // command OFPMC_ADD
        0x00, 0x0e, // flags OFPMF_PKTPS | OFPMF_BURST | OFPMF_STATS
        0x00, 0x00, 0x00, 0x01, // meter_id 1
        // ofp_meter_band_drop
        0x00, 0x01, 0x00, 0x10, // OFPMBT_DROP, length 16
        0x00, 0x00, 0x03, 0xe8, // rate 1000
        0x00, 0x00, 0x07, 0xd0, // burst_size 2000
        0x00, 0x00, 0x00, 0x00, // pad
    ];
    let meter_mod = MeterMod {
        command: MeterModCommand::Add,
        flags: openflow::meter::METER_FLAG_PKTPS
            | openflow::meter::METER_FLAG_BURST
            | openflow::meter::METER_FLAG_STATS,
        meter_id: 1,
        bands: vec![MeterBand::Drop {
            rate: 1000,
            burst_size: 2000,
        }],
    };
    assert_golden(
        &bytes,
        Version::Of13,
        9,
        &Message::MeterMod(meter_mod.clone()),
    );

    let delete = [
        0x04, 0x1d, 0x00, 0x10, 0x00, 0x00, 0x00, 0x0a, // 1.3, METER_MOD, length 16, xid 10
        0x00, 0x02, 0x00, 0x00, // command OFPMC_DELETE, flags 0
        0x00, 0x00, 0x00, 0x01, // meter_id 1
    ];
    let message = Message::MeterMod(MeterMod {
        command: MeterModCommand::Delete,
        flags: 0,
        meter_id: 1,
        bands: Vec::new(),
    });
    assert_golden(&delete, Version::Of13, 10, &message);

    // A band shorter than ofp_meter_band_drop is refused, and 1.0 has no METER_MOD.
    let mut short = bytes;
    short[19] = 0x08;
    assert!(matches!(
        Message::parse(&short),
        Err(Error::BadLength {
            what: "meter band",
            length: 8
        })
    ));
    let mut out = Vec::new();
    assert!(Message::MeterMod(meter_mod)
        .emit(Version::Of10, 1, &mut out)
        .is_err());
    assert!(out.is_empty());
}

#[test]
fn meter_features_request_and_reply() {
    let request = [
        0x04, 0x12, 0x00, 0x10, 0x00, 0x00, 0x00, 0x0b, // 1.3, MULTIPART_REQUEST, 16, xid 11
        0x00, 0x0b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // OFPMP_METER_FEATURES, flags, pad
    ];
    assert_golden(&request, Version::Of13, 11, &Message::MeterFeaturesRequest);

    let reply = [
        0x04, 0x13, 0x00, 0x20, 0x00, 0x00, 0x00, 0x0b, // 1.3, MULTIPART_REPLY, 32, xid 11
        0x00, 0x0b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // OFPMP_METER_FEATURES, flags, pad
        // ofp_meter_features
        0x00, 0x01, 0x00, 0x00, // max_meter 65536
        0x00, 0x00, 0x00, 0x02, // band_types: 1 << OFPMBT_DROP
        0x00, 0x00, 0x00, 0x0f, // capabilities KBPS | PKTPS | BURST | STATS
        0x01, 0x00, 0x00, 0x00, // max_bands 1, max_color 0, pad
    ];
    let features = MeterFeatures {
        max_meter: 65536,
        band_types: 2,
        capabilities: 0x0f,
        max_bands: 1,
        max_color: 0,
    };
    assert!(features.supports_band(openflow::meter::METER_BAND_DROP));
    assert!(!features.supports_band(openflow::meter::METER_BAND_DSCP_REMARK));
    assert!(!features.supports_band(openflow::meter::METER_BAND_EXPERIMENTER));
    assert!(features.supports_flags(openflow::meter::METER_FLAG_PKTPS));
    assert_golden(
        &reply,
        Version::Of13,
        11,
        &Message::MeterFeaturesReply(features),
    );

    // A reply too short for ofp_meter_features is an error, not zeros.
    let mut short = reply[..24].to_vec();
    short[3] = 24;
    assert!(matches!(
        Message::parse(&short),
        Err(Error::Truncated {
            what: "ofp_meter_features",
            ..
        })
    ));
}

#[test]
fn emit_failures_leave_the_buffer_unchanged() {
    let prefix = vec![0xaa; 5];
    let cases = [
        (Version::Of10, Message::PortDescRequest),
        (
            Version::Of10,
            Message::PortDescReply {
                ports: Vec::new(),
                more: false,
            },
        ),
        (
            Version::Of10,
            Message::PacketOut(openflow::PacketOut {
                buffer_id: None,
                in_port: port::CONTROLLER,
                // A port number that 1.0's 16 bits cannot hold.
                actions: vec![Action::Output {
                    port: 0x1_0000,
                    max_len: 0,
                }],
                data: vec![1; 100],
            }),
        ),
        (Version::Of13, Message::EchoRequest(vec![0; 70_000])),
        (Version::Unknown(0x05), Message::BarrierRequest),
        (
            Version::Of13,
            Message::PacketOut(openflow::PacketOut {
                buffer_id: None,
                in_port: 1,
                // 4 + 3 bytes is not a multiple of 8.
                actions: vec![Action::Other {
                    kind: 0xffff,
                    body: vec![1, 2, 3],
                }],
                data: Vec::new(),
            }),
        ),
    ];
    for (version, message) in cases {
        let mut out = prefix.clone();
        let result = message.emit(version, 1, &mut out);
        assert!(result.is_err(), "{message:?} on {version:?}");
        assert_eq!(out, prefix, "{message:?} on {version:?}");
    }
}

#[test]
fn errors_say_what_is_wrong() {
    let error = Message::parse(&[0x01, 0x00, 0x00, 0x04, 0, 0, 0, 0]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "OpenFlow message has an invalid length of 4 bytes"
    );
    assert_eq!(
        Error::UnsupportedVersion(Version::Unknown(2)).to_string(),
        "unsupported OpenFlow wire version 0x02"
    );
}

#[test]
fn frame_len_cases() {
    // Fewer than 8 bytes, length not yet known or known to be fine: wait.
    assert_eq!(frame_len(&[]), Ok(None));
    assert_eq!(frame_len(&[0x04, 0x00, 0x00]), Ok(None));
    assert_eq!(frame_len(&[0x04, 0x00, 0x00, 0x08, 0, 0, 0]), Ok(None));
    // Exactly one message.
    let hello = [0x04, 0x00, 0x00, 0x08, 0, 0, 0, 1];
    assert_eq!(frame_len(&hello), Ok(Some(8)));
    // A message and the start of the next.
    let mut two = hello.to_vec();
    two.extend_from_slice(&hello[..3]);
    assert_eq!(frame_len(&two), Ok(Some(8)));
    // A partial message.
    let echo = [0x04, 0x02, 0x00, 0x0c, 0, 0, 0, 1, 0xaa, 0xbb];
    assert_eq!(frame_len(&echo), Ok(None));
    // A length field below the header size can never be framed.
    assert!(frame_len(&[0x04, 0x00, 0x00, 0x07, 0, 0, 0, 1]).is_err());
    assert!(frame_len(&[0x04, 0x00, 0x00, 0x00]).is_err());
}

#[test]
fn negotiate_cases() {
    let ours = [Version::Of10, Version::Of13];
    // A bitmap picks the highest common version, whatever the header says.
    assert_eq!(
        negotiate(&ours, Version::from(0x06), Some(1 << 1 | 1 << 4 | 1 << 6)),
        Some(Version::Of13)
    );
    assert_eq!(
        negotiate(&ours, Version::from(0x04), Some(1 << 1 | 1 << 2)),
        Some(Version::Of10)
    );
    assert_eq!(
        negotiate(&ours, Version::from(0x04), Some(1 << 2 | 1 << 3)),
        None
    );
    assert_eq!(negotiate(&ours, Version::from(0x04), Some(0)), None);
    // No bitmap: the lower of the two highest versions, if we speak it.
    assert_eq!(
        negotiate(&ours, Version::from(0x01), None),
        Some(Version::Of10)
    );
    assert_eq!(
        negotiate(&ours, Version::from(0x04), None),
        Some(Version::Of13)
    );
    assert_eq!(
        negotiate(&ours, Version::from(0x06), None),
        Some(Version::Of13)
    );
    assert_eq!(negotiate(&ours, Version::from(0x02), None), None);
    assert_eq!(
        negotiate(&[Version::Of10], Version::from(0x04), None),
        Some(Version::Of10)
    );
    assert_eq!(negotiate(&[Version::Of13], Version::from(0x01), None), None);
    assert_eq!(negotiate(&[], Version::from(0x04), None), None);
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

#[test]
fn role_request_v13() {
    let bytes = [
        0x04, 0x18, 0x00, 0x18, 0x00, 0x00, 0x00, 0x05, // 1.3, ROLE_REQUEST, length 24, xid 5
        0x00, 0x00, 0x00, 0x02, // role OFPCR_ROLE_MASTER
        0x00, 0x00, 0x00, 0x00, // pad
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x2c, // generation_id 300
    ];
    let role = RoleMsg {
        role: ControllerRole::Master,
        generation_id: 300,
    };
    assert_golden(&bytes, Version::Of13, 5, &Message::RoleRequest(role));
    let mut reply = bytes;
    reply[1] = 0x19; // ROLE_REPLY
    assert_golden(&reply, Version::Of13, 5, &Message::RoleReply(role));
}

#[test]
fn nicira_role_request_v10() {
    let bytes = [
        0x01, 0x04, 0x00, 0x14, 0x00, 0x00, 0x00, 0x06, // 1.0, VENDOR, length 20, xid 6
        0x00, 0x00, 0x23, 0x20, // vendor NX_VENDOR_ID
        0x00, 0x00, 0x00, 0x0a, // subtype NXT_ROLE_REQUEST
        0x00, 0x00, 0x00, 0x02, // role NX_ROLE_SLAVE
    ];
    assert_golden(
        &bytes,
        Version::Of10,
        6,
        &Message::NxRoleRequest(NxRole::Slave),
    );
    let mut reply = bytes;
    reply[15] = 0x0b; // NXT_ROLE_REPLY
    assert_golden(
        &reply,
        Version::Of10,
        6,
        &Message::NxRoleReply(NxRole::Slave),
    );
}

#[test]
fn other_vendor_messages_stay_unmodelled() {
    let mut bytes = vec![
        0x01, 0x04, 0x00, 0x14, 0x00, 0x00, 0x00, 0x06, // 1.0, VENDOR, length 20, xid 6
        0x00, 0x00, 0x23, 0x20, // vendor NX_VENDOR_ID
        0x00, 0x00, 0x00, 0x0c, // subtype 12, not a role message
        0x00, 0x00, 0x00, 0x01,
    ];
    let (_, parsed) = Message::parse(&bytes).unwrap();
    assert_eq!(
        parsed,
        Message::Other {
            msg_type: 4,
            body: bytes[8..].to_vec()
        }
    );
    // A role request cut short is an error, not a misread role.
    bytes.truncate(18);
    bytes[3] = 18;
    bytes[15] = 0x0a;
    assert!(matches!(
        Message::parse(&bytes),
        Err(Error::Truncated { .. })
    ));
}
