//! Flow mods on 1.0 and 1.3: matches, masks, metadata, the next table, VLAN ids and the
//! meter instruction.

use openflow::{port, Action, Error, FlowMod, FlowModCommand, Masked, Match, Message, Version};

use super::assert_golden;

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
