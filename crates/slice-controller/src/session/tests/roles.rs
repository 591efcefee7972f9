//! Role requests, their replies and refusals, and what a slave is refused.

use super::*;

/// What the session sent, with the transaction id of each message.
fn sent_with_xids(session: &mut SwitchSession) -> Vec<(u32, Message)> {
    sent(session)
        .into_iter()
        .map(|(header, message)| (header.xid, message))
        .collect()
}

#[test]
fn a_role_request_on_1_3_carries_the_generation_and_its_reply_becomes_an_event() {
    let now = Instant::now();
    let mut session = connected_1_3(config(), now);
    session.queue(Command::SetRole {
        role: Role::Master,
        generation: 42,
    });
    let request = RoleMsg {
        role: ControllerRole::Master,
        generation_id: 42,
    };
    let sent = sent_with_xids(&mut session);
    let [(xid, message)] = &sent[..] else {
        panic!("{sent:?}");
    };
    assert_eq!(message, &Message::RoleRequest(request));
    session.handle_bytes(&wire(OF13, *xid, &Message::RoleReply(request)), now);
    assert_eq!(
        events(&mut session),
        [SwitchEvent::RoleChanged { role: Role::Master }]
    );
}

#[test]
fn a_role_request_on_1_0_is_nicira_s_and_its_reply_becomes_an_event() {
    let now = Instant::now();
    let mut session = connected_1_0(config(), now);
    for (role, nicira) in [
        (Role::Slave, NxRole::Slave),
        (Role::Master, NxRole::Master),
        (Role::Equal, NxRole::Other),
    ] {
        session.queue(Command::SetRole {
            role,
            generation: 42,
        });
        let sent = sent_with_xids(&mut session);
        assert_eq!(
            sent.iter().map(|(_, m)| m.clone()).collect::<Vec<_>>(),
            [Message::NxRoleRequest(nicira)]
        );
        session.handle_bytes(&wire(OF10, sent[0].0, &Message::NxRoleReply(nicira)), now);
        assert_eq!(events(&mut session), [SwitchEvent::RoleChanged { role }]);
    }
}

#[test]
fn a_stale_generation_is_a_refusal_that_keeps_the_session_open() {
    let now = Instant::now();
    let mut session = connected_1_3(config(), now);
    session.queue(Command::SetRole {
        role: Role::Master,
        generation: 3,
    });
    let (xid, _) = sent_with_xids(&mut session)[0].clone();
    let stale = Message::Error {
        err_type: ErrorType::RoleRequestFailed,
        code: RoleRequestFailedCode::Stale.into(),
        data: Vec::new(),
    };
    session.handle_bytes(&wire(OF13, xid, &stale), now);
    assert_eq!(
        events(&mut session),
        [SwitchEvent::RoleRefused {
            reason: RoleRefusal::Stale
        }]
    );
    assert!(!session.is_closed());
    // The same error for another request is not taken for the role's refusal.
    session.handle_bytes(&wire(OF13, xid.wrapping_add(100), &stale), now);
    assert_eq!(events(&mut session), []);
}

#[test]
fn a_1_0_switch_without_roles_or_a_wrapped_vendor_error_refuses_the_request() {
    let now = Instant::now();
    let mut session = connected_1_0(config(), now);
    session.queue(Command::SetRole {
        role: Role::Master,
        generation: 0,
    });
    let (xid, _) = sent_with_xids(&mut session)[0].clone();
    let bad_vendor = Message::Error {
        err_type: ErrorType::BadRequest,
        code: 3,
        data: Vec::new(),
    };
    session.handle_bytes(&wire(OF10, xid, &bad_vendor), now);
    assert_eq!(
        events(&mut session),
        [SwitchEvent::RoleRefused {
            reason: RoleRefusal::Unsupported
        }]
    );
    session.queue(Command::SetRole {
        role: Role::Master,
        generation: 0,
    });
    let (xid, _) = sent_with_xids(&mut session)[0].clone();
    // Open vSwitch's NXET_VENDOR: nx_vendor_error { NX_VENDOR_ID, BAD_REQUEST, BAD_ROLE }.
    let mut data = vec![0x00, 0x00, 0x23, 0x20, 0x00, 0x01, 0x02, 0x01];
    data.extend_from_slice(&[0; 8]);
    let wrapped = Message::Error {
        err_type: ErrorType::NiciraVendor,
        code: 0,
        data,
    };
    session.handle_bytes(&wire(OF10, xid, &wrapped), now);
    assert_eq!(
        events(&mut session),
        [SwitchEvent::RoleRefused {
            reason: RoleRefusal::Other {
                err_type: ErrorType::BadRequest,
                code: BadRequestCode::NxBadRole.into()
            }
        }]
    );
    assert!(!session.is_closed());
}

#[test]
fn writes_refused_to_a_slave_are_counted_not_a_reason_to_close() {
    let now = Instant::now();
    for (version, code) in [
        (OF13, BadRequestCode::IsSlave),
        (OF10, BadRequestCode::Eperm),
    ] {
        let mut session = if version == OF13 {
            connected_1_3(config(), now)
        } else {
            connected_1_0(config(), now)
        };
        let refusal = Message::Error {
            err_type: ErrorType::BadRequest,
            code: code.into(),
            data: Vec::new(),
        };
        session.handle_bytes(&wire(version, 900, &refusal), now);
        session.handle_bytes(&wire(version, 901, &refusal), now);
        assert_eq!(events(&mut session), [], "{version:?}");
        assert!(!session.is_closed(), "{version:?}");
        assert_eq!(session.refused_writes(), 2, "{version:?}");
    }
}

fn meter_features() -> MeterFeatures {
    MeterFeatures {
        max_meter: 16,
        band_types: 1 << openflow::meter::METER_BAND_DROP,
        capabilities: u32::from(openflow::meter::METER_FLAG_PKTPS),
        max_bands: 1,
        max_color: 0,
    }
}

/// A session of one instance of a cluster.
fn clustered() -> ControllerConfig {
    ControllerConfig {
        in_cluster: true,
        ..config()
    }
}

fn a_flow() -> Command {
    Command::FlowDelete {
        rule: Rule {
            in_port: 1,
            eth_src: MacAddress::new([2, 0, 0, 0, 0, 1]),
            eth_dst: MacAddress::new([2, 0, 0, 0, 0, 2]),
        },
        priority: 100,
    }
}

fn role_reply(role: ControllerRole, generation_id: u64) -> Message {
    Message::RoleReply(RoleMsg {
        role,
        generation_id,
    })
}

/// Issue 34, row 12: a connection starts EQUAL, which may write, and a stale refusal
/// leaves it so; in a cluster nothing is written, the meter included, until the switch
/// confirms this instance as master.
#[test]
fn in_a_cluster_nothing_is_written_before_the_switch_confirms_this_instance_as_master() {
    let now = Instant::now();
    let (mut session, handshake) = handshake_1_3(clustered(), now);
    // SET_CONFIG is no write a slave is refused (OpenFlow 1.3.5, 6.3.5): it asks for
    // whole PACKET_INs on this connection, with the default fragment handling.
    assert!(
        handshake.iter().all(|message| matches!(
            message,
            Message::Hello { .. }
                | Message::FeaturesRequest
                | Message::PortDescRequest
                | Message::SetConfig { .. }
        )),
        "{handshake:?}"
    );
    let connected = events(&mut session);
    assert_eq!(
        connected[1..],
        [SwitchEvent::PacketInMeter { metered: false }]
    );

    // A claim with a generation the switch has seen bettered: refused, nothing written.
    session.queue(Command::SetRole {
        role: Role::Master,
        generation: 3,
    });
    session.queue(Command::TableMiss);
    session.queue(a_flow());
    let claimed = sent_with_xids(&mut session);
    let [(xid, Message::RoleRequest(_))] = &claimed[..] else {
        panic!("only the role request: {claimed:?}");
    };
    let stale = Message::Error {
        err_type: ErrorType::RoleRequestFailed,
        code: RoleRequestFailedCode::Stale.into(),
        data: Vec::new(),
    };
    session.handle_bytes(&wire(OF13, *xid, &stale), now);
    assert_eq!(sent_messages(&mut session), []);
    session.queue(a_flow());
    assert_eq!(
        sent_messages(&mut session),
        [],
        "still EQUAL: nothing written"
    );

    // Confirmed: the meter is set up first, then what was held since goes, in order,
    // the table-miss flow waiting for the meter.
    session.queue(Command::SetRole {
        role: Role::Master,
        generation: 5,
    });
    session.queue(Command::TableMiss);
    let request = sent_with_xids(&mut session);
    assert_eq!(request.len(), 1, "{request:?}");
    session.handle_bytes(
        &wire(OF13, request[0].0, &role_reply(ControllerRole::Master, 5)),
        now,
    );
    let Command::FlowDelete { rule, priority } = a_flow() else {
        unreachable!("a_flow is a delete")
    };
    let flow = Message::FlowMod(openflow::FlowMod {
        command: openflow::FlowModCommand::DeleteStrict,
        r#match: rule_match(rule),
        priority,
        ..openflow::FlowMod::default()
    });
    assert_eq!(
        sent_messages(&mut session),
        [
            Message::MeterFeaturesRequest,
            Message::BarrierRequest,
            flow.clone()
        ]
    );
    let features = Message::MeterFeaturesReply(meter_features());
    session.handle_bytes(&wire(OF13, 0x4d54_5201, &features), now);
    assert_eq!(sent(&mut session).len(), 3, "two adds, barrier");
    session.handle_bytes(&wire(OF13, 0x4d54_5205, &Message::BarrierReply), now);
    assert_eq!(
        sent_messages(&mut session),
        [crate::meter::table_miss_flow(Some(
            crate::meter::PACKET_IN_METER_ID
        ))]
    );
    // A switch that has its meter is not asked again on a new claim.
    session.queue(Command::SetRole {
        role: Role::Master,
        generation: 6,
    });
    let again = sent_messages(&mut session);
    assert!(matches!(again[..], [Message::RoleRequest(_)]), "{again:?}");

    // Standing by: writes stop with the request, whatever the switch answers.
    session.queue(Command::SetRole {
        role: Role::Slave,
        generation: 7,
    });
    session.queue(a_flow());
    let request = sent_messages(&mut session);
    assert!(
        matches!(request[..], [Message::RoleRequest(_)]),
        "{request:?}"
    );
}

#[test]
fn in_a_cluster_a_1_0_switch_takes_writes_once_it_confirms_the_master_and_not_as_slave() {
    let now = Instant::now();
    let mut session = connected_1_0(clustered(), now);
    session.queue(a_flow());
    assert_eq!(sent_messages(&mut session), []);
    session.queue(Command::SetRole {
        role: Role::Master,
        generation: 1,
    });
    let master = sent_with_xids(&mut session);
    assert!(
        matches!(master[..], [(_, Message::NxRoleRequest(NxRole::Master))]),
        "{master:?}"
    );
    session.handle_bytes(
        &wire(OF10, master[0].0, &Message::NxRoleReply(NxRole::Master)),
        now,
    );
    let out = sent_messages(&mut session);
    assert!(matches!(out[..], [Message::FlowMod(_)]), "{out:?}");
    // Standing by: the gate closes with the request, and a late MASTER reply to the
    // earlier request does not open it again.
    session.queue(Command::SetRole {
        role: Role::Slave,
        generation: 2,
    });
    let slave = sent_with_xids(&mut session);
    session.handle_bytes(
        &wire(OF10, master[0].0, &Message::NxRoleReply(NxRole::Master)),
        now,
    );
    session.queue(a_flow());
    assert_eq!(sent_messages(&mut session), []);
    assert_eq!(
        events(&mut session),
        [SwitchEvent::RoleChanged { role: Role::Master }]
    );
    session.handle_bytes(
        &wire(OF10, slave[0].0, &Message::NxRoleReply(NxRole::Slave)),
        now,
    );
    assert_eq!(
        events(&mut session),
        [SwitchEvent::RoleChanged { role: Role::Slave }]
    );
    session.queue(a_flow());
    assert_eq!(sent_messages(&mut session), []);
}

#[test]
fn in_a_cluster_writes_held_for_a_role_are_bounded() {
    let now = Instant::now();
    let config = ControllerConfig {
        max_outbound_bytes: 4096,
        ..clustered()
    };
    let mut session = connected_1_3(config, now);
    for _ in 0..4096 {
        session.queue(a_flow());
    }
    assert!(session.is_closed());
}

#[test]
fn a_full_table_is_reported_in_either_versions_numbers_and_a_pipeline_entry_never_reaches_1_0() {
    let now = Instant::now();
    for (version, mut session) in both_versions(now) {
        // OFPET_FLOW_MOD_FAILED with the full-table code: 3/0 on 1.0, 5/1 on 1.3.
        let (ours, theirs) = if version == OF10 {
            ((3, 0), (5, 1))
        } else {
            ((5, 1), (3, 0))
        };
        for ((err_type, code), reported) in [(ours, true), (theirs, false)] {
            let error = Message::Error {
                err_type: ErrorType::from(err_type),
                code,
                data: vec![version.into(), 14, 0, 72],
            };
            session.handle_bytes(&wire(version, 77, &error), now);
            let expected = if reported {
                vec![SwitchEvent::TableFull]
            } else {
                Vec::new()
            };
            assert_eq!(
                events(&mut session),
                expected,
                "{version:?} {err_type}/{code}"
            );
        }
        sent(&mut session);
        let entry = openflow::FlowMod {
            table_id: 2,
            goto_table: Some(2),
            ..openflow::FlowMod::default()
        };
        session.queue(Command::Pipeline(vec![entry.clone()]));
        let out = sent_messages(&mut session);
        if version == OF10 {
            assert!(out.is_empty(), "{out:?}");
        } else {
            assert_eq!(super::bundles::unbundle(&out), [vec![entry]]);
        }
        assert_eq!(session.close_reason(), None);
    }
}
