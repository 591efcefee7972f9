//! PACKET_INs handed on and the engine's commands encoded.

use super::*;

#[test]
fn a_packet_in_reaches_the_engine_as_a_slice_of_the_read_buffer() {
    let now = Instant::now();
    for (version, mut session) in [
        (OF10, connected_1_0(config(), now)),
        (OF13, connected_1_3(config(), now)),
    ] {
        let frame = ethernet(7);
        let read = session.read_buffer();
        read.extend_from_slice(&packet_in(version, 3, frame.clone()));
        let buffer = read.as_ptr_range();
        session.handle_read(now);
        let events = events(&mut session);
        let [SwitchEvent::PacketIn {
            in_port,
            src,
            dst,
            probe,
            data,
        }] = &events[..]
        else {
            panic!("one PACKET_IN event expected: {events:?}");
        };
        assert_eq!(
            (*in_port, *src, *dst, probe),
            (
                3,
                MacAddress::new([2, 0, 0, 0, 0, 7]),
                MacAddress::new([0xff; 6]),
                &None
            )
        );
        assert_eq!(data[..], frame[..]);
        assert!(
            buffer.contains(&data.as_ptr()),
            "the payload was copied out of the read buffer (version {version:?})"
        );
    }
}

#[test]
fn a_read_is_handed_on_one_event_at_a_time() {
    let now = Instant::now();
    let mut session = connected_1_3(config(), now);
    let read = session.read_buffer();
    for host in 1..=3 {
        read.extend_from_slice(&packet_in(OF13, host, ethernet(host as u8)));
    }
    let mut handed_on = Vec::new();
    while session.handle_read_until_event(now) {
        handed_on.push(events(&mut session).len());
    }
    handed_on.push(events(&mut session).len());
    // The first two stop at their event with whole frames left; the last finds none.
    assert_eq!(handed_on, [1, 1, 1]);
    assert!(!session.is_closed());
}

#[test]
fn a_packet_in_without_an_ethernet_frame_is_ignored() {
    let now = Instant::now();
    let mut session = connected_1_0(config(), now);
    session.handle_bytes(&packet_in(OF10, 1, vec![1, 2, 3]), now);
    assert!(events(&mut session).is_empty());
    assert!(!session.is_closed());
}

#[test]
fn a_packet_out_carries_its_data_whole_in_either_version() {
    let now = Instant::now();
    for mut session in [connected_1_0(config(), now), connected_1_3(config(), now)] {
        let data = Bytes::from(ethernet(9));
        session.queue(Command::PacketOut {
            out_port: 2,
            data: data.clone(),
        });
        let sent = sent_messages(&mut session);
        assert_eq!(
            sent,
            [Message::PacketOut(PacketOut {
                buffer_id: None,
                in_port: port::CONTROLLER,
                actions: vec![Action::Output {
                    port: 2,
                    max_len: 0
                }],
                data: data.to_vec(),
            })]
        );
    }
}

#[test]
fn clearing_flows_deletes_from_every_table_on_1_3_and_the_only_one_on_1_0() {
    let now = Instant::now();
    for (mut session, table_id) in [
        (connected_1_0(config(), now), 0),
        (connected_1_3(config(), now), 0xff),
    ] {
        session.queue(Command::ClearFlows);
        let sent = sent_messages(&mut session);
        let [Message::FlowMod(flow_mod)] = &sent[..] else {
            panic!("one FLOW_MOD expected: {sent:?}");
        };
        assert_eq!(flow_mod.command, FlowModCommand::Delete);
        assert_eq!(flow_mod.table_id, table_id);
    }
}

#[test]
fn the_table_miss_flow_waits_for_the_meter_setup_on_1_3() {
    let now = Instant::now();
    let mut session = connected_1_3(config(), now);
    session.queue(Command::TableMiss);
    assert!(sent(&mut session).is_empty(), "held while the setup runs");
    // A switch without meters refuses the features request.
    let refusal = Message::Error {
        err_type: ErrorType::BadRequest,
        code: BadRequestCode::BadMultipart.into(),
        data: Vec::new(),
    };
    let features_xid = 0x4d54_5201;
    session.handle_bytes(&wire(OF13, features_xid, &refusal), now);
    assert_eq!(
        sent_messages(&mut session),
        [crate::meter::table_miss_flow(None)]
    );
    assert_eq!(
        events(&mut session),
        [SwitchEvent::PacketInMeter { metered: false }]
    );
}

#[test]
fn a_meter_setup_without_an_answer_is_given_up_at_its_deadline() {
    let start = Instant::now();
    let config = config();
    let patience = config.handshake_timeout;
    let mut session = connected_1_3(config, start);
    session.queue(Command::TableMiss);
    // The switch keeps answering echoes, so it is not dead, but never the meter request.
    let mut now = start;
    while now < start + patience {
        now += SECOND;
        session.handle_bytes(&wire(OF13, 1, &Message::EchoReply(Vec::new())), now);
        session.handle_timeout(now);
    }
    let metered = events(&mut session);
    assert_eq!(metered, [SwitchEvent::PacketInMeter { metered: false }]);
    assert!(sent_messages(&mut session).contains(&crate::meter::table_miss_flow(None)));
    assert!(!session.is_closed());
}

#[test]
fn a_switch_with_meters_gets_a_metered_table_miss_flow() {
    let now = Instant::now();
    let mut session = connected_1_3(config(), now);
    session.queue(Command::TableMiss);
    let features = MeterFeatures {
        max_meter: 16,
        band_types: 1 << openflow::meter::METER_BAND_DROP,
        capabilities: u32::from(openflow::meter::METER_FLAG_PKTPS),
        max_bands: 1,
        max_color: 0,
    };
    session.handle_bytes(
        &wire(OF13, 0x4d54_5201, &Message::MeterFeaturesReply(features)),
        now,
    );
    assert_eq!(sent(&mut session).len(), 3, "two adds, barrier");
    session.handle_bytes(&wire(OF13, 0x4d54_5205, &Message::BarrierReply), now);
    assert_eq!(
        sent_messages(&mut session),
        [crate::meter::table_miss_flow(Some(
            crate::meter::PACKET_IN_METER_ID
        ))]
    );
    assert_eq!(
        events(&mut session),
        [SwitchEvent::PacketInMeter { metered: true }]
    );
}

#[test]
fn port_changes_and_removed_flows_become_events() {
    let now = Instant::now();
    let mut session = connected_1_0(config(), now);
    let status = |reason, port_no| Message::PortStatus {
        reason,
        desc: port(port_no),
    };
    session.handle_bytes(&wire(OF10, 0, &status(PortReason::Add, 3)), now);
    session.handle_bytes(&wire(OF10, 0, &status(PortReason::Delete, 1)), now);
    // Reserved ports are not places for hosts or links.
    session.handle_bytes(&wire(OF10, 0, &status(PortReason::Add, port::LOCAL)), now);
    let rule = Rule {
        in_port: 1,
        eth_src: MacAddress::new([2, 0, 0, 0, 0, 1]),
        eth_dst: MacAddress::new([2, 0, 0, 0, 0, 2]),
    };
    let removed = FlowRemoved {
        cookie: 0,
        priority: 100,
        reason: openflow::FlowRemovedReason::IdleTimeout,
        table_id: 0,
        duration_sec: 0,
        duration_nsec: 0,
        idle_timeout: 60,
        hard_timeout: 0,
        packet_count: 0,
        byte_count: 0,
        r#match: rule_match(rule),
    };
    session.handle_bytes(&wire(OF10, 0, &Message::FlowRemoved(removed)), now);
    assert_eq!(
        events(&mut session),
        [
            SwitchEvent::PortStatus {
                port_no: 3,
                state: Some(port_state(&port(3)))
            },
            SwitchEvent::PortStatus {
                port_no: 1,
                state: None
            },
            SwitchEvent::FlowRemoved {
                rule,
                priority: 100
            },
        ]
    );
}

#[test]
fn commands_get_increasing_transaction_ids() {
    let now = Instant::now();
    let mut session = connected_1_0(config(), now);
    session.queue(Command::ClearFlows);
    session.queue(Command::ClearFlows);
    let xids: Vec<u32> = sent(&mut session).iter().map(|(h, _)| h.xid).collect();
    assert_eq!(xids.len(), 2);
    assert_eq!(xids[1], xids[0] + 1);
}

/// The barrier after a round of probes says the switch has worked through that round,
/// on either version; a reply answers the rounds before it too, and any other barrier's
/// reply says nothing of probes.
#[test]
fn the_barrier_after_a_round_of_probes_says_when_the_switch_has_worked_through_it() {
    let now = Instant::now();
    for (version, mut session) in both_versions(now) {
        session.queue(Command::ProbeRoundSent { round: 7 });
        let (seventh, message) = sent(&mut session).pop().unwrap();
        assert_eq!(message, Message::BarrierRequest, "{version:?}");
        session.queue(Command::ProbeRoundSent { round: 8 });
        session.queue(Command::ProbeRoundSent { round: 9 });
        let (ninth, _) = sent(&mut session).pop().unwrap();
        session.handle_bytes(&wire(version, seventh.xid, &Message::BarrierReply), now);
        assert_eq!(
            events(&mut session),
            [SwitchEvent::ProbeRoundAnswered { round: 7 }]
        );
        session.handle_bytes(&wire(version, ninth.xid, &Message::BarrierReply), now);
        assert_eq!(
            events(&mut session),
            [SwitchEvent::ProbeRoundAnswered { round: 9 }]
        );
        for xid in [seventh.xid, ninth.xid, ninth.xid + 100] {
            session.handle_bytes(&wire(version, xid, &Message::BarrierReply), now);
            assert_eq!(events(&mut session), [], "{version:?} xid {xid}");
        }
    }
}
