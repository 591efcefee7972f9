//! The enums of named wire values: every value of the field decodes to exactly one arm
//! and encodes back to itself, named values decode to their named arm, and unnamed ones
//! to `Unknown`. The fields are small enough to try every value.

use openflow::error_msg::{
    BadRequestCode, HelloFailedCode, MeterModFailedCode, RoleRequestFailedCode,
};
use openflow::packet::{ArpOperation, ArpPacket, ArpRepr, EtherType};
use openflow::{BundleCtrlType, BundleFailedCode, ControllerRole, NxRole};
use openflow::{
    ErrorType, FlowRemovedReason, HeaderRepr, Message, PacketInReason, PortReason, Version,
};
use std::net::Ipv4Addr;

/// Checks one enum over every value of its wire type `$ty`.
macro_rules! check_every_value {
    ($name:ident, $ty:ty) => {{
        let mut named = 0;
        for value in <$ty>::MIN..=<$ty>::MAX {
            let decoded = $name::from(value);
            assert_eq!(<$ty>::from(decoded), value, "{decoded:?}");
            match decoded {
                $name::Unknown(inner) => assert_eq!(inner, value),
                known => {
                    assert!($name::KNOWN.contains(&known), "{known:?}");
                    named += 1;
                }
            }
        }
        // Every named arm is reached by exactly one value.
        assert_eq!(named, $name::KNOWN.len(), stringify!($name));
    }};
}

#[test]
fn every_value_of_every_field_enum_round_trips() {
    check_every_value!(Version, u8);
    check_every_value!(PortReason, u8);
    check_every_value!(PacketInReason, u8);
    check_every_value!(FlowRemovedReason, u8);
    check_every_value!(ErrorType, u16);
    check_every_value!(HelloFailedCode, u16);
    check_every_value!(BadRequestCode, u16);
    check_every_value!(MeterModFailedCode, u16);
    check_every_value!(RoleRequestFailedCode, u16);
    check_every_value!(BundleCtrlType, u16);
    check_every_value!(BundleFailedCode, u16);
    check_every_value!(ArpOperation, u16);
    check_every_value!(EtherType, u16);
}

/// The role enums are 32 bits wide: every value up to past the last named one, and the
/// far end of the range, instead of all four billion.
#[test]
fn role_enums_round_trip_and_name_their_values() {
    for value in (0..=0x1_0000).chain(u32::MAX - 0x100..=u32::MAX) {
        assert_eq!(u32::from(ControllerRole::from(value)), value);
        assert_eq!(u32::from(NxRole::from(value)), value);
    }
    for (index, role) in ControllerRole::KNOWN.iter().enumerate() {
        assert_eq!(u32::from(*role), index as u32);
    }
    assert_eq!(u32::from(ControllerRole::Master), 2);
    assert_eq!(u32::from(ControllerRole::Slave), 3);
    assert_eq!(ControllerRole::from(4), ControllerRole::Unknown(4));
    assert_eq!(u32::from(NxRole::Other), 0);
    assert_eq!(u32::from(NxRole::Master), 1);
    assert_eq!(u32::from(NxRole::Slave), 2);
    assert_eq!(NxRole::from(3), NxRole::Unknown(3));
}

#[test]
fn named_values_are_the_specifications() {
    assert_eq!(u8::from(Version::Of10), 0x01);
    assert_eq!(u8::from(Version::Of13), 0x04);
    assert_eq!(
        Version::Of10.bitmap_bit() | Version::Of13.bitmap_bit(),
        0x12
    );
    assert_eq!(u8::from(PortReason::Delete), 1);
    assert_eq!(u8::from(PacketInReason::Action), 1);
    assert_eq!(u8::from(FlowRemovedReason::HardTimeout), 1);
    assert_eq!(u16::from(ErrorType::HelloFailed), 0);
    assert_eq!(u16::from(ErrorType::MeterModFailed), 12);
    assert_eq!(u16::from(MeterModFailedCode::OutOfMeters), 10);
    assert_eq!(u16::from(ErrorType::RoleRequestFailed), 11);
    assert_eq!(u16::from(ErrorType::NiciraVendor), 0xb0c2);
    assert_eq!(u16::from(RoleRequestFailedCode::Stale), 0);
    assert_eq!(u16::from(RoleRequestFailedCode::BadRole), 2);
    assert_eq!(u16::from(BadRequestCode::Eperm), 5);
    assert_eq!(u16::from(BadRequestCode::IsSlave), 10);
    assert_eq!(u16::from(BadRequestCode::NxBadRole), 0x201);
    assert_eq!(u16::from(ArpOperation::Reply), 2);
    assert_eq!(u16::from(EtherType::Lldp), 0x88cc);
    // 1.0 and 1.3 give 3..=10 different meanings, so none of them is named.
    assert_eq!(ErrorType::from(3), ErrorType::Unknown(3));
}

#[test]
fn the_header_version_is_typed_only_past_the_wire() {
    let mut out = Vec::new();
    Message::BarrierRequest
        .emit(Version::Of13, 9, &mut out)
        .unwrap();
    assert_eq!(out[0], 0x04);
    let (header, _) = Message::parse(&out).unwrap();
    assert_eq!(
        header,
        HeaderRepr {
            version: Version::Of13,
            msg_type: openflow::msg_type::v13::BARRIER_REQUEST,
            length: 8,
            xid: 9
        }
    );
}

#[test]
fn a_hello_emits_and_parses_in_a_version_the_codec_does_not_speak() {
    let newer = Version::from(0x06);
    let hello = Message::Hello {
        versions: Some(newer.bitmap_bit()),
    };
    let mut out = Vec::new();
    hello.emit(newer, 1, &mut out).unwrap();
    let (header, parsed) = Message::parse(&out).unwrap();
    assert_eq!((header.version, parsed), (Version::Unknown(0x06), hello));

    // Anything else in that version is refused and writes nothing.
    let mut out = Vec::new();
    assert_eq!(
        Message::EchoRequest(Vec::new()).emit(newer, 1, &mut out),
        Err(openflow::Error::UnsupportedVersion(newer))
    );
    assert!(out.is_empty());
}

#[test]
fn an_arp_operation_nobody_named_survives_parse_and_emit() {
    for operation in [ArpOperation::Request, ArpOperation::Unknown(0x0309)] {
        let arp = ArpRepr {
            operation,
            sender_mac: [2, 0, 0, 0, 0, 1],
            sender_ip: Ipv4Addr::new(10, 0, 0, 1),
            target_mac: [0; 6],
            target_ip: Ipv4Addr::new(10, 0, 0, 2),
        };
        let mut bytes = [0u8; 28];
        arp.emit(&mut ArpPacket::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes[6..8], u16::from(operation).to_be_bytes());
        let parsed = ArpRepr::parse(&ArpPacket::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(parsed, arp);
    }
}
