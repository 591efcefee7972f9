//! Meters on 1.3: a meter mod with a drop band, and the meter features request and reply.

use openflow::{Error, Message, MeterBand, MeterFeatures, MeterMod, MeterModCommand, Version};

use super::assert_golden;

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
