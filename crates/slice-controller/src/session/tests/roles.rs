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
        assert_eq!(
            sent_messages(&mut session),
            [Message::NxRoleRequest(nicira)]
        );
        session.handle_bytes(&wire(OF10, 77, &Message::NxRoleReply(nicira)), now);
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

#[test]
fn a_standby_refused_the_meter_gets_it_when_it_becomes_master() {
    let now = Instant::now();
    let mut session = connected_1_3(config(), now);
    let features = Message::MeterFeaturesReply(meter_features());
    session.handle_bytes(&wire(OF13, 0x4d54_5201, &features), now);
    sent(&mut session);
    // As a slave's, the switch refuses the meter.
    let is_slave = Message::Error {
        err_type: ErrorType::BadRequest,
        code: BadRequestCode::IsSlave.into(),
        data: Vec::new(),
    };
    session.handle_bytes(&wire(OF13, 0x4d54_5204, &is_slave), now);
    assert_eq!(
        events(&mut session),
        [SwitchEvent::PacketInMeter { metered: false }]
    );
    // Claiming the switch asks for the meter again, and the table-miss flow waits for it.
    session.queue(Command::SetRole {
        role: Role::Master,
        generation: 5,
    });
    session.queue(Command::TableMiss);
    let claimed = sent_messages(&mut session);
    assert!(matches!(claimed[0], Message::RoleRequest(_)));
    assert_eq!(
        claimed[1..],
        [Message::MeterFeaturesRequest, Message::BarrierRequest]
    );
    session.handle_bytes(&wire(OF13, 0x4d54_5201, &features), now);
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
    // A switch that has its meter is not asked again.
    session.queue(Command::SetRole {
        role: Role::Master,
        generation: 6,
    });
    let again = sent_messages(&mut session);
    assert_eq!(again.len(), 1);
    assert!(matches!(again[0], Message::RoleRequest(_)));
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
        session.queue(Command::Pipeline(entry.clone()));
        let out = sent_messages(&mut session);
        if version == OF10 {
            assert!(out.is_empty(), "{out:?}");
        } else {
            assert_eq!(out, [Message::FlowMod(entry)]);
        }
        assert_eq!(session.close_reason(), None);
    }
}
