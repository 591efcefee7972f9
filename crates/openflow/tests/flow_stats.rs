//! Flow statistics: the request's bytes, replies that survive a trip through each
//! version with their summary derived from the switch's bytes, an entry iterator that
//! stops at the first bad length, and the strict delete of a reported match.

use openflow::flow_stats::{FlowStatsEntries, FlowStatsV10, FlowStatsV13};
use openflow::Masked;
use openflow::{
    port, Action, FlowMod, FlowModCommand, FlowOutput, FlowStats, Match, Message, RawFlowDelete,
    Version,
};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

#[test]
fn the_request_asks_for_every_flow_of_every_table_on_1_0() {
    #[rustfmt::skip]
    let bytes = [
        0x01, 16, 0x00, 56, 0, 0, 0, 9,           // header: STATS_REQUEST
        0x00, 0x01, 0x00, 0x00,                   // OFPST_FLOW, no flags
        0x00, 0x3f, 0xff, 0xff,                   // match: every field wildcarded
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0xff, 0x00,                               // table: all, pad
        0xff, 0xff,                               // out_port: OFPP_NONE
    ];
    let mut out = Vec::new();
    Message::FlowStatsRequest
        .emit(Version::Of10, 9, &mut out)
        .unwrap();
    assert_eq!(out, bytes);
    assert_eq!(Message::parse(&bytes).unwrap().1, Message::FlowStatsRequest);
}

#[test]
fn the_request_asks_for_every_flow_of_every_table_on_1_3() {
    #[rustfmt::skip]
    let bytes = [
        0x04, 18, 0x00, 56, 0, 0, 0, 9,           // header: MULTIPART_REQUEST
        0x00, 0x01, 0x00, 0x00, 0, 0, 0, 0,       // OFPMP_FLOW, no flags, pad
        0xff, 0, 0, 0,                            // table: all, pad
        0xff, 0xff, 0xff, 0xff,                   // out_port: OFPP_ANY
        0xff, 0xff, 0xff, 0xff,                   // out_group: OFPG_ANY
        0, 0, 0, 0,                               // pad
        0, 0, 0, 0, 0, 0, 0, 0,                   // cookie
        0, 0, 0, 0, 0, 0, 0, 0,                   // cookie mask: any cookie
        0x00, 0x01, 0x00, 0x04, 0, 0, 0, 0,       // match: OXM, no fields
    ];
    let mut out = Vec::new();
    Message::FlowStatsRequest
        .emit(Version::Of13, 9, &mut out)
        .unwrap();
    assert_eq!(out, bytes);
    assert_eq!(Message::parse(&bytes).unwrap().1, Message::FlowStatsRequest);
}

fn path_flow() -> FlowMod {
    FlowMod {
        r#match: Match {
            in_port: Some(3),
            eth_src: Some([2, 0, 0, 0, 0, 1]),
            eth_dst: Some([2, 0, 0, 0, 0, 2]),
            ..Match::default()
        },
        cookie: 0x5c1c_0200_1234_5678,
        priority: 100,
        idle_timeout: 60,
        actions: vec![Action::Output {
            port: 4,
            max_len: 0,
        }],
        ..FlowMod::default()
    }
}

#[test]
fn a_reported_path_flow_is_summarised_in_the_controllers_terms() {
    for version in [Version::Of10, Version::Of13] {
        let entry = FlowStats::of_flow(version, &path_flow()).unwrap();
        assert_eq!(entry.r#match.in_port, Some(3));
        assert_eq!(entry.r#match.eth_src, Some([2, 0, 0, 0, 0, 1]));
        assert_eq!(entry.r#match.eth_dst, Some([2, 0, 0, 0, 0, 2]));
        assert!(!entry.r#match.other_fields, "{version:?}");
        assert_eq!(entry.output, FlowOutput::Port(4));
        assert_eq!(entry.cookie, 0x5c1c_0200_1234_5678);
        assert_eq!((entry.priority, entry.idle_timeout), (100, 60));

        let mut wider = path_flow();
        wider.r#match.eth_type = Some(0x0800);
        let entry = FlowStats::of_flow(version, &wider).unwrap();
        assert!(entry.r#match.other_fields, "{version:?}");

        let mut drop = path_flow();
        drop.actions.clear();
        assert_eq!(
            FlowStats::of_flow(version, &drop).unwrap().output,
            FlowOutput::Drop
        );
        let mut two = path_flow();
        two.actions.push(Action::Output {
            port: 5,
            max_len: 0,
        });
        assert_eq!(
            FlowStats::of_flow(version, &two).unwrap().output,
            FlowOutput::Other
        );
    }
}

#[test]
fn a_metered_table_miss_flow_outputs_to_the_controller() {
    let table_miss = FlowMod {
        meter_id: Some(1),
        actions: vec![Action::Output {
            port: port::CONTROLLER,
            max_len: 0xffff,
        }],
        ..FlowMod::default()
    };
    let entry = FlowStats::of_flow(Version::Of13, &table_miss).unwrap();
    assert_eq!(entry.output, FlowOutput::Port(port::CONTROLLER));
    assert_eq!(entry.r#match, Default::default());
}

#[test]
fn a_zero_or_short_entry_length_ends_the_iteration_with_an_error() {
    for version in [Version::Of10, Version::Of13] {
        let entry = FlowStats::of_flow(version, &path_flow()).unwrap();
        let mut body = vec![0; entry.buffer_len(version)];
        entry.emit(version, &mut body).unwrap();
        let good = body.clone();
        body.extend_from_slice(&[0, 0, 0, 0]); // a zero length
        body.extend_from_slice(&good);
        let mut entries = FlowStatsEntries::new(version, &body);
        assert_eq!(entries.next(), Some(Ok(entry.clone())));
        assert!(matches!(entries.next(), Some(Err(_))));
        assert_eq!(
            entries.next(),
            None,
            "{version:?}: no entry after a bad one"
        );

        let short = &good[..good.len() - 1];
        let mut entries = FlowStatsEntries::new(version, short);
        assert!(matches!(entries.next(), Some(Err(_))));
        assert_eq!(entries.next(), None);
    }
}

#[test]
fn a_raw_delete_removes_exactly_the_reported_match() {
    for version in [Version::Of10, Version::Of13] {
        let mut flow = path_flow();
        flow.table_id = if version == Version::Of13 { 3 } else { 0 };
        let entry = FlowStats::of_flow(version, &flow).unwrap();
        let delete = RawFlowDelete {
            table_id: entry.table_id,
            priority: entry.priority,
            raw_match: entry.raw_match.clone(),
        };
        let mut out = Vec::new();
        delete.emit(version, 7, &mut out).unwrap();
        let (header, Message::FlowMod(parsed)) = Message::parse(&out).unwrap() else {
            panic!("not a FLOW_MOD");
        };
        assert_eq!(header.xid, 7);
        assert_eq!(parsed.command, FlowModCommand::DeleteStrict);
        assert_eq!(parsed.r#match, flow.r#match);
        assert_eq!(parsed.priority, 100);
        assert_eq!(parsed.table_id, flow.table_id);
        assert_eq!(parsed.out_port, port::ANY);
        assert!(parsed.actions.is_empty());

        let other = if version == Version::Of10 {
            Version::Of13
        } else {
            Version::Of10
        };
        let mut out = vec![1, 2, 3];
        assert!(delete.emit(other, 7, &mut out).is_err());
        assert_eq!(out, [1, 2, 3], "a failed emit writes nothing");
    }
}

fn flow_match() -> impl Strategy<Value = Match> {
    (
        option::of(0u32..0xff00),
        option::of(any::<[u8; 6]>()),
        option::of(any::<[u8; 6]>()),
        option::of(any::<u16>()),
        option::of(0u16..=0x0fff),
    )
        .prop_map(|(in_port, eth_dst, eth_src, eth_type, vlan_vid)| Match {
            in_port,
            eth_dst,
            eth_src,
            eth_type,
            vlan_vid,
            ..Match::default()
        })
}

fn flow() -> impl Strategy<Value = FlowMod> {
    (
        flow_match(),
        any::<u64>(),
        any::<[u16; 4]>(),
        any::<u8>(),
        vec(0u32..0xff00, 0..3),
    )
        .prop_map(
            |(r#match, cookie, [idle_timeout, hard_timeout, priority, flags], table_id, ports)| {
                FlowMod {
                    r#match,
                    cookie,
                    idle_timeout,
                    hard_timeout,
                    priority,
                    flags,
                    table_id,
                    actions: ports
                        .into_iter()
                        .map(|port| Action::Output { port, max_len: 0 })
                        .collect(),
                    ..FlowMod::default()
                }
            },
        )
}

proptest! {
    #[test]
    fn flow_stats_replies_round_trip_on_both_versions(
        flows in vec(flow(), 0..4),
        more in any::<bool>(),
        counters in any::<[u64; 2]>(),
    ) {
        for version in [Version::Of10, Version::Of13] {
            let flows: Vec<FlowStats> = flows
                .iter()
                .map(|flow| {
                    let mut entry = FlowStats::of_flow(version, flow).unwrap();
                    [entry.packet_count, entry.byte_count] = counters;
                    if version == Version::Of10 {
                        entry.table_id = flow.table_id;
                    }
                    entry
                })
                .collect();
            for (entry, flow) in flows.iter().zip(&flows_of(version, &flows)) {
                prop_assert_eq!(entry.r#match.in_port, flow.0);
                prop_assert_eq!(entry.r#match.eth_src, flow.1);
            }
            let reply = Message::FlowStatsReply { flows, more };
            let mut out = Vec::new();
            reply.emit(version, 1, &mut out).unwrap();
            prop_assert_eq!(Message::parse(&out).unwrap().1, reply);
        }
    }

    #[test]
    fn an_entry_gives_back_the_flow_that_added_it_metadata_and_next_table_included(
        flow in flow(),
        metadata in option::of(any::<(u64, u64)>()),
        write_metadata in option::of(any::<(u64, u64)>()),
        goto_table in option::of(1u8..0xfe),
        meter_id in option::of(1u32..0xffff_0000),
    ) {
        let mut flow = flow;
        // The switch reports what it holds: an ADD whose delete filters are unset.
        flow.r#match.metadata = metadata.map(|(value, mask)| Masked { value: value & mask, mask });
        flow.r#match.metadata = flow.r#match.metadata.filter(|masked| masked.mask != 0);
        flow.write_metadata = write_metadata.map(|(value, mask)| Masked { value: value & mask, mask });
        flow.goto_table = goto_table;
        flow.meter_id = meter_id;
        let entry = FlowStats::of_flow(Version::Of13, &flow).unwrap();
        prop_assert_eq!(entry.flow_mod(Version::Of13).unwrap(), flow.clone());
        let mut flow_v10 = flow;
        flow_v10.r#match.metadata = None;
        flow_v10.write_metadata = None;
        flow_v10.goto_table = None;
        flow_v10.meter_id = None;
        flow_v10.table_id = 0;
        flow_v10.flags = 0;
        let entry = FlowStats::of_flow(Version::Of10, &flow_v10).unwrap();
        prop_assert_eq!(entry.flow_mod(Version::Of10).unwrap(), flow_v10);
    }

    #[test]
    fn entries_never_panic_on_random_bodies(body in vec(any::<u8>(), 0..400)) {
        for version in [Version::Of10, Version::Of13] {
            let count = FlowStatsEntries::new(version, &body).count();
            prop_assert!(count <= body.len() / 48 + 1);
        }
        let _ = FlowStats::parse_v10(&FlowStatsV10::new_unchecked(&body[..]));
        let _ = FlowStats::parse_v13(&FlowStatsV13::new_unchecked(&body[..]));
    }
}

/// The (in_port, eth_src) each entry's summary must carry, read from its raw match by
/// the FLOW_MOD parser rather than the summariser.
fn flows_of(version: Version, flows: &[FlowStats]) -> Vec<(Option<u32>, Option<[u8; 6]>)> {
    flows
        .iter()
        .map(|entry| {
            let delete = RawFlowDelete {
                table_id: entry.table_id,
                priority: entry.priority,
                raw_match: entry.raw_match.clone(),
            };
            let mut out = Vec::new();
            delete.emit(version, 1, &mut out).unwrap();
            match Message::parse(&out).unwrap().1 {
                Message::FlowMod(flow_mod) => (flow_mod.r#match.in_port, flow_mod.r#match.eth_src),
                other => panic!("{other:?}"),
            }
        })
        .collect()
}
