//! The handshake, keep-alive and malformed input.

use super::*;

#[test]
fn the_session_opens_with_a_hello_offering_1_0_and_1_3() {
    let mut session = session(config(), Instant::now());
    let sent = sent(&mut session);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].0.version, OF13);
    assert_eq!(
        sent[0].1,
        Message::Hello {
            versions: Some(OF10.bitmap_bit() | OF13.bitmap_bit())
        }
    );
}

#[test]
fn a_1_0_switch_is_connected_by_its_features_reply_with_its_physical_ports() {
    let now = Instant::now();
    let mut session = session(config(), now);
    sent(&mut session);
    // A 1.0 HELLO without a version bitmap: 1.0 by its header.
    session.handle_bytes(&wire(OF10, 1, &Message::Hello { versions: None }), now);
    let asked = sent(&mut session);
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].0.version, OF10);
    assert_eq!(asked[0].1, Message::FeaturesRequest);
    assert!(events(&mut session).is_empty());

    let local = port(port::LOCAL);
    session.handle_bytes(
        &wire(OF10, 2, &features(vec![port(1), local, port(2)])),
        now,
    );
    assert_eq!(
        sent_messages(&mut session),
        [Message::SetConfig {
            flags: 0,
            miss_send_len: openflow::action::WHOLE_PACKET
        }]
    );
    assert_eq!(
        events(&mut session),
        [
            SwitchEvent::Connected {
                dpid: DPID,
                ports: port_states(&[1, 2]),
                profile: SwitchProfile {
                    needs_table_miss_flow: false,
                    protocol: OF10,
                    pipeline: false
                },
            },
            SwitchEvent::PacketInMeter { metered: false },
        ]
    );
    assert_eq!(session.dpid(), Some(DPID));
    assert!(!session.is_closed());
}

#[test]
fn a_1_3_switch_is_connected_once_its_port_list_has_come_in_several_parts() {
    let now = Instant::now();
    let mut session = session(config(), now);
    sent(&mut session);
    session.handle_bytes(&hello(OF13), now);
    assert_eq!(sent_messages(&mut session), [Message::FeaturesRequest]);
    session.handle_bytes(&wire(OF13, 2, &features(Vec::new())), now);
    assert_eq!(
        sent_messages(&mut session),
        [
            Message::PortDescRequest,
            Message::SetConfig {
                flags: 0,
                miss_send_len: openflow::action::WHOLE_PACKET
            }
        ]
    );
    for (ports, more) in [(vec![port(1)], true), (vec![port(2)], true)] {
        session.handle_bytes(&wire(OF13, 3, &Message::PortDescReply { ports, more }), now);
        assert!(
            events(&mut session).is_empty(),
            "not connected before the last part"
        );
    }
    let last = Message::PortDescReply {
        ports: vec![port(3)],
        more: false,
    };
    session.handle_bytes(&wire(OF13, 3, &last), now);
    assert_eq!(
        events(&mut session),
        [SwitchEvent::Connected {
            dpid: DPID,
            ports: port_states(&[1, 2, 3]),
            profile: SwitchProfile {
                needs_table_miss_flow: true,
                protocol: OF13,
                pipeline: true
            },
        }]
    );
    // The meter setup begins at once.
    assert_eq!(
        sent_messages(&mut session),
        [Message::MeterFeaturesRequest, Message::BarrierRequest]
    );
}

#[test]
fn the_whole_handshake_in_one_read_or_a_byte_at_a_time_comes_out_the_same() {
    let now = Instant::now();
    let mut stream = hello(OF10);
    stream.extend(wire(OF10, 2, &features(vec![port(1)])));

    let mut at_once = session(config(), now);
    at_once.handle_bytes(&stream, now);
    let mut trickled = session(config(), now);
    for byte in &stream {
        trickled.handle_bytes(std::slice::from_ref(byte), now);
    }
    let connected = events(&mut at_once);
    assert!(matches!(
        connected[0],
        SwitchEvent::Connected { dpid: DPID, .. }
    ));
    assert_eq!(events(&mut trickled), connected);
    assert_eq!(sent(&mut trickled), sent(&mut at_once));
}

#[test]
fn an_unsolicited_port_list_before_the_features_reply_counts() {
    let now = Instant::now();
    let mut session = session(config(), now);
    session.handle_bytes(&hello(OF13), now);
    let early = Message::PortDescReply {
        ports: vec![port(5)],
        more: false,
    };
    session.handle_bytes(&wire(OF13, 7, &early), now);
    session.handle_bytes(&wire(OF13, 2, &features(Vec::new())), now);
    let rest = Message::PortDescReply {
        ports: vec![port(6)],
        more: false,
    };
    session.handle_bytes(&wire(OF13, 3, &rest), now);
    let connected = events(&mut session);
    assert!(
        matches!(&connected[0], SwitchEvent::Connected { ports, .. } if *ports == port_states(&[5, 6])),
        "{connected:?}"
    );
}

#[test]
fn echo_requests_are_answered_during_the_handshake_and_after() {
    let now = Instant::now();
    let mut session = session(config(), now);
    sent(&mut session);
    session.handle_bytes(&hello(OF13), now);
    sent(&mut session);
    let echo = Message::EchoRequest(b"ping".to_vec());
    session.handle_bytes(&wire(OF13, 77, &echo), now);
    let reply = sent(&mut session);
    assert_eq!(reply.len(), 1);
    assert_eq!(reply[0].0.xid, 77);
    assert_eq!(reply[0].1, Message::EchoReply(b"ping".to_vec()));

    let mut session = connected_1_0(config(), now);
    session.handle_bytes(&wire(OF10, 78, &echo), now);
    assert_eq!(sent(&mut session)[0].0.xid, 78);
}

#[test]
fn a_first_message_other_than_hello_closes_the_session_with_hello_failed() {
    let now = Instant::now();
    // An echo request too: answering it would keep the peer until the handshake timeout.
    for (first, msg_type) in [
        (features(Vec::new()), 6),
        (Message::EchoRequest(b"ping".to_vec()), 2),
    ] {
        let mut session = session(config(), now);
        sent(&mut session);
        session.handle_bytes(&wire(OF13, 9, &first), now);
        assert_eq!(
            session.close_reason(),
            Some(&CloseReason::NoHello(msg_type))
        );
        assert!(events(&mut session).is_empty());
        let farewell = sent(&mut session);
        assert_eq!(farewell.len(), 1, "{first:?}: {farewell:?}");
        assert_eq!(farewell[0].0.xid, 9);
        assert!(
            matches!(
                farewell[0].1,
                Message::Error {
                    err_type: ErrorType::HelloFailed,
                    code,
                    ..
                } if code == u16::from(HelloFailedCode::Eperm)
            ),
            "{farewell:?}"
        );
    }
}

#[test]
fn no_common_version_is_refused_with_hello_failed_and_closes() {
    let now = Instant::now();
    let mut session = session(config(), now);
    sent(&mut session);
    // A switch that speaks only OpenFlow 1.5.
    let of15 = Version::from(0x06);
    session.handle_bytes(
        &wire(
            of15,
            42,
            &Message::Hello {
                versions: Some(of15.bitmap_bit()),
            },
        ),
        now,
    );
    assert_eq!(
        session.close_reason(),
        Some(&CloseReason::NoCommonVersion(of15))
    );
    let farewell = sent(&mut session);
    assert_eq!(farewell.len(), 1);
    assert_eq!((farewell[0].0.version, farewell[0].0.xid), (OF10, 42));
    assert!(matches!(
        farewell[0].1,
        Message::Error {
            err_type: ErrorType::HelloFailed,
            code,
            ..
        } if code == u16::from(HelloFailedCode::Incompatible)
    ));
    assert_eq!(session.poll_timeout(), None);
}

#[test]
fn an_error_during_the_handshake_closes_the_session() {
    let now = Instant::now();
    let mut session = session(config(), now);
    session.handle_bytes(&hello(OF13), now);
    let error = Message::Error {
        err_type: ErrorType::BadRequest,
        code: BadRequestCode::BadType.into(),
        data: Vec::new(),
    };
    session.handle_bytes(&wire(OF13, 1, &error), now);
    assert_eq!(
        session.close_reason(),
        Some(&CloseReason::HandshakeError {
            err_type: ErrorType::BadRequest,
            code: BadRequestCode::BadType.into()
        })
    );
}

#[test]
fn a_switch_that_never_finishes_the_handshake_is_closed_at_the_deadline() {
    let start = Instant::now();
    let config = config();
    let patience = config.handshake_timeout;
    let mut session = session(config, start);
    session.handle_bytes(&hello(OF13), start);
    assert_eq!(session.poll_timeout(), Some(start + patience));
    // Echoes keep nothing alive during the handshake.
    session.handle_bytes(
        &wire(OF13, 5, &Message::EchoRequest(Vec::new())),
        start + SECOND,
    );
    session.handle_timeout(start + patience - SECOND);
    assert!(!session.is_closed());
    session.handle_timeout(start + patience);
    assert_eq!(
        session.close_reason(),
        Some(&CloseReason::HandshakeTimeout(patience))
    );
}

#[test]
fn a_switch_that_is_not_allowed_is_closed_before_the_engine_hears_of_it() {
    let now = Instant::now();
    let mut config = config();
    config.allowed_dpids = Some([1, 2].into());
    let mut session = session(config, now);
    session.handle_bytes(&hello(OF10), now);
    session.handle_bytes(&wire(OF10, 2, &features(vec![port(1)])), now);
    assert_eq!(session.close_reason(), Some(&CloseReason::NotAllowed(DPID)));
    assert!(events(&mut session).is_empty());
}

// ---- keep-alive -----------------------------------------------------------------------

#[test]
fn a_quiet_switch_is_asked_for_an_echo_and_a_silent_one_closed() {
    let start = Instant::now();
    let config = config();
    let (echo, dead) = (config.echo_interval, config.dead_after);
    let mut session = connected_1_0(config, start);
    assert_eq!(session.poll_timeout(), Some(start + echo));
    session.handle_timeout(start + echo - SECOND);
    assert!(sent(&mut session).is_empty(), "no echo before the interval");

    session.handle_timeout(start + echo);
    assert_eq!(
        sent_messages(&mut session),
        [Message::EchoRequest(Vec::new())]
    );
    // Still quiet one interval later: asked again.
    session.handle_timeout(start + echo * 2);
    assert_eq!(
        sent_messages(&mut session),
        [Message::EchoRequest(Vec::new())]
    );
    session.handle_timeout(start + dead - SECOND);
    assert!(!session.is_closed());
    session.handle_timeout(start + dead);
    assert_eq!(session.close_reason(), Some(&CloseReason::Silent(dead)));
}

#[test]
fn anything_from_the_switch_puts_off_the_echo_and_the_dead_peer_deadline() {
    let start = Instant::now();
    let config = config();
    let (echo, dead) = (config.echo_interval, config.dead_after);
    let mut session = connected_1_0(config, start);
    let later = start + dead - SECOND;
    session.handle_bytes(&wire(OF10, 3, &Message::EchoReply(Vec::new())), later);
    assert_eq!(session.poll_timeout(), Some(later + echo));
    session.handle_timeout(start + dead);
    assert!(!session.is_closed());
    session.handle_timeout(later + dead);
    assert!(session.is_closed());
}

// ---- malformed input ------------------------------------------------------------------

#[test]
fn a_frame_shorter_than_a_header_closes_the_session() {
    let now = Instant::now();
    let mut session = connected_1_0(config(), now);
    // Length 4: less than the 8-byte header itself.
    session.handle_bytes(&[u8::from(OF10), 2, 0, 4, 0, 0, 0, 1], now);
    assert!(matches!(
        session.close_reason(),
        Some(CloseReason::Malformed(_))
    ));
    // Nothing more is taken or sent.
    session.handle_bytes(&wire(OF10, 3, &Message::EchoRequest(Vec::new())), now);
    session.queue(Command::ClearFlows);
    assert!(sent(&mut session).is_empty());
    assert!(events(&mut session).is_empty());
}

#[test]
fn a_malformed_packet_in_closes_the_session() {
    let now = Instant::now();
    let mut session = connected_1_3(config(), now);
    let mut bytes = packet_in(OF13, 1, ethernet(1));
    // Claim a match far longer than the message.
    bytes[26..28].copy_from_slice(&0x0400u16.to_be_bytes());
    session.handle_bytes(&bytes, now);
    assert!(matches!(
        session.close_reason(),
        Some(CloseReason::Malformed(_))
    ));
    assert!(events(&mut session).is_empty());
}

#[test]
fn a_message_in_an_unknown_version_closes_the_session() {
    let now = Instant::now();
    let mut session = connected_1_0(config(), now);
    session.handle_bytes(&[0x09, 2, 0, 8, 0, 0, 0, 1], now);
    assert!(matches!(
        session.close_reason(),
        Some(CloseReason::Malformed(openflow::Error::UnsupportedVersion(version)))
            if *version == Version::from(9)
    ));
}

#[test]
fn a_tls_client_hello_on_the_plain_listener_is_named_as_such() {
    let now = Instant::now();
    let mut session = session(config(), now);
    // The first bytes of a TLS 1.2 ClientHello record, as `ovs-vsctl set-controller ssl:` sends.
    session.handle_bytes(&[0x16, 0x03, 0x01, 0x00, 0xf1, 0x01, 0x00, 0x00, 0xed], now);
    let reason = session.close_reason().cloned();
    assert_eq!(reason, Some(CloseReason::TlsOnPlainListener));
    assert!(reason.unwrap().to_string().contains("--openflow-tls"));
}
