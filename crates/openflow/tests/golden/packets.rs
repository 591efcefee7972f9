//! Packets between switch and controller: packet-in on 1.3, with and without its in
//! port, and packet-out on 1.0.

use openflow::{port, Action, Error, Message, PacketIn, PacketInReason, Version};

use super::assert_golden;

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
