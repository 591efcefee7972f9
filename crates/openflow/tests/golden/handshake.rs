//! The session's first messages and its roles: hellos and version negotiation, the
//! features reply, and the 1.3 and Nicira role requests.

use openflow::{
    negotiate, ControllerRole, Error, FeaturesReply, Message, NxRole, PortDesc, RoleMsg, Version,
};

use super::assert_golden;

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
