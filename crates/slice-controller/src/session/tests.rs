//! The session driven with frames built by the codec and a made-up clock.

use bytes::Bytes;
use openflow::error_msg::{BadRequestCode, HelloFailedCode, RoleRequestFailedCode};
use openflow::{
    port, Action, ControllerRole, FeaturesReply, FlowMod, FlowModCommand, FlowRemoved, Match,
    MeterFeatures, NxRole, PacketIn, PacketOut, PortReason, RoleMsg,
};
use slice_core::MacAddress;

use super::outbound::rule_match;
use super::*;
use crate::config::ControllerConfig;
use crate::protocol::{Command, FlowAction, Role, Rule, SwitchProfile, MAX_FLOWS_READ};

const OF10: Version = Version::Of10;
const OF13: Version = Version::Of13;
const DPID: u64 = 0xabc;
const SECOND: Duration = Duration::from_secs(1);

fn config() -> ControllerConfig {
    ControllerConfig::default()
}

fn session(config: ControllerConfig, now: Instant) -> SwitchSession {
    SwitchSession::new(Arc::new(config.session()), now)
}

/// `message` as a switch speaking `version` sends it.
fn wire(version: Version, xid: u32, message: &Message) -> Vec<u8> {
    let mut bytes = Vec::new();
    message
        .emit(version, xid, &mut bytes)
        .expect("test messages encode");
    bytes
}

/// Everything the session has to send, decoded.
fn sent(session: &mut SwitchSession) -> Vec<(HeaderRepr, Message)> {
    let mut bytes = Vec::new();
    // Nothing to send leaves `bytes` empty, which decodes to no messages.
    let _ = session.poll_transmit(&mut bytes);
    let mut messages = Vec::new();
    let mut rest = &bytes[..];
    while let Some(len) = openflow::frame_len(rest).expect("the session frames its output") {
        messages.push(Message::parse(&rest[..len]).expect("the session sends valid OpenFlow"));
        rest = &rest[len..];
    }
    assert!(rest.is_empty(), "a partial message in the output");
    messages
}

fn sent_messages(session: &mut SwitchSession) -> Vec<Message> {
    sent(session)
        .into_iter()
        .map(|(_, message)| message)
        .collect()
}

fn events(session: &mut SwitchSession) -> Vec<SwitchEvent> {
    std::iter::from_fn(|| session.poll_event()).collect()
}

fn port(port_no: u32) -> PortDesc {
    PortDesc {
        port_no,
        name: format!("eth{port_no}"),
        ..PortDesc::default()
    }
}

fn features(ports: Vec<PortDesc>) -> Message {
    Message::FeaturesReply(FeaturesReply {
        datapath_id: DPID,
        n_buffers: 0,
        n_tables: 1,
        auxiliary_id: 0,
        capabilities: 0,
        ports,
    })
}

fn port_states(numbers: &[u32]) -> BTreeMap<u32, PortState> {
    numbers.iter().map(|&n| (n, port_state(&port(n)))).collect()
}

fn hello(version: Version) -> Vec<u8> {
    wire(
        version,
        1,
        &Message::Hello {
            versions: Some(version.bitmap_bit()),
        },
    )
}

/// A 1.0 session through its handshake, with ports 1 and 2; its output and events taken.
fn connected_1_0(config: ControllerConfig, now: Instant) -> SwitchSession {
    let mut session = session(config, now);
    session.handle_bytes(&hello(OF10), now);
    session.handle_bytes(&wire(OF10, 2, &features(vec![port(1), port(2)])), now);
    sent(&mut session);
    let events = events(&mut session);
    assert!(
        matches!(events[0], SwitchEvent::Connected { .. }),
        "{events:?}"
    );
    session
}

/// A 1.3 session through its handshake with ports 1 and 2, the meter setup still open.
fn connected_1_3(config: ControllerConfig, now: Instant) -> SwitchSession {
    let mut session = session(config, now);
    session.handle_bytes(&hello(OF13), now);
    session.handle_bytes(&wire(OF13, 2, &features(Vec::new())), now);
    let parts = Message::PortDescReply {
        ports: vec![port(1), port(2)],
        more: false,
    };
    session.handle_bytes(&wire(OF13, 3, &parts), now);
    sent(&mut session);
    events(&mut session);
    session
}

fn ethernet(src: u8) -> Vec<u8> {
    let mut frame = vec![0xff; 6];
    frame.extend_from_slice(&[2, 0, 0, 0, 0, src]);
    frame.extend_from_slice(&[0x08, 0x00]);
    frame.extend_from_slice(&[0; 46]);
    frame
}

fn packet_in(version: Version, in_port: u32, data: Vec<u8>) -> Vec<u8> {
    let packet = PacketIn {
        buffer_id: None,
        total_len: u16::try_from(data.len()).unwrap_or(u16::MAX),
        in_port,
        reason: openflow::PacketInReason::NoMatch,
        table_id: 0,
        cookie: 0,
        data,
    };
    wire(version, 9, &Message::PacketIn(packet))
}

// ---- handshake ------------------------------------------------------------------------

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
fn a_first_message_other_than_hello_closes_the_session() {
    let now = Instant::now();
    let mut session = session(config(), now);
    session.handle_bytes(&wire(OF13, 2, &features(Vec::new())), now);
    assert_eq!(session.close_reason(), Some(&CloseReason::NoHello(6)));
    assert!(events(&mut session).is_empty());
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

// ---- bounds ---------------------------------------------------------------------------

#[test]
fn a_1_0_switch_with_too_many_ports_is_closed() {
    let now = Instant::now();
    let mut config = config();
    config.engine.max_ports_per_switch = 2;
    let mut session = session(config, now);
    session.handle_bytes(&hello(OF10), now);
    session.handle_bytes(
        &wire(OF10, 2, &features(vec![port(1), port(2), port(3)])),
        now,
    );
    assert_eq!(session.close_reason(), Some(&CloseReason::TooManyPorts(2)));
    assert!(events(&mut session).is_empty());
}

#[test]
fn a_1_3_port_list_with_too_many_ports_is_closed() {
    let now = Instant::now();
    let mut config = config();
    config.engine.max_ports_per_switch = 2;
    let mut session = session(config, now);
    session.handle_bytes(&hello(OF13), now);
    session.handle_bytes(&wire(OF13, 2, &features(Vec::new())), now);
    for number in 1..=2 {
        let part = Message::PortDescReply {
            ports: vec![port(number)],
            more: true,
        };
        session.handle_bytes(&wire(OF13, 3, &part), now);
    }
    assert!(!session.is_closed());
    let part = Message::PortDescReply {
        ports: vec![port(3)],
        more: true,
    };
    session.handle_bytes(&wire(OF13, 3, &part), now);
    assert_eq!(session.close_reason(), Some(&CloseReason::TooManyPorts(2)));
}

#[test]
fn an_endless_port_list_is_closed_at_the_multipart_bound() {
    let now = Instant::now();
    let mut config = config();
    config.max_multipart_bytes = 1000;
    let mut session = session(config, now);
    session.handle_bytes(&hello(OF13), now);
    session.handle_bytes(&wire(OF13, 2, &features(Vec::new())), now);
    // The same port again and again: the port count stays at one, the bytes grow.
    let part = wire(
        OF13,
        3,
        &Message::PortDescReply {
            ports: vec![port(1)],
            more: true,
        },
    );
    let fit = 1000 / part.len();
    for _ in 0..fit {
        session.handle_bytes(&part, now);
    }
    assert!(!session.is_closed());
    session.handle_bytes(&part, now);
    assert_eq!(
        session.close_reason(),
        Some(&CloseReason::MultipartTooLong(1000))
    );
}

#[test]
fn a_flood_is_one_packet_out_with_an_output_a_port_up_to_its_bound() {
    let now = Instant::now();
    let mut session = connected_1_3(config(), now);
    let frame = ethernet(1);
    let ports: Vec<u32> = (1..=300).collect();
    session.queue(Command::Flood {
        out_ports: ports.clone(),
        data: Bytes::from(frame.clone()),
    });
    let mut outputs = Vec::new();
    let messages = sent_messages(&mut session);
    assert_eq!(
        messages.len(),
        2,
        "300 ports: 256 in the first message, 44 in the next"
    );
    for message in messages {
        let Message::PacketOut(packet) = message else {
            panic!("not a PACKET_OUT: {message:?}");
        };
        assert_eq!(packet.data, frame);
        outputs.extend(packet.actions.iter().map(|action| match action {
            Action::Output { port, .. } => *port,
            other => panic!("{other:?}"),
        }));
    }
    assert_eq!(outputs, ports);
}

#[test]
fn output_the_switch_does_not_take_is_bounded() {
    let now = Instant::now();
    let mut config = config();
    config.max_outbound_bytes = 4096;
    let mut session = connected_1_0(config, now);
    let packet_out = || Command::PacketOut {
        out_port: 1,
        data: Bytes::from(ethernet(1)),
    };
    // Taken away as it is queued: no bound is reached.
    for _ in 0..100 {
        session.queue(packet_out());
        sent(&mut session);
    }
    assert!(!session.is_closed());
    // Left waiting: the session closes instead of growing.
    for _ in 0..100 {
        session.queue(packet_out());
    }
    assert_eq!(
        session.close_reason(),
        Some(&CloseReason::OutboundFull(4096))
    );
    assert!(
        sent(&mut session).is_empty(),
        "a closed session frees its output"
    );
}

#[test]
fn packet_ins_over_the_rate_are_dropped_and_reported() {
    let start = Instant::now();
    let mut config = config();
    config.packet_in_rate = 1;
    config.packet_in_burst = 2;
    let mut session = connected_1_0(config, start);
    for _ in 0..5 {
        session.handle_bytes(&packet_in(OF10, 1, ethernet(1)), start);
    }
    let events_now = events(&mut session);
    assert_eq!(events_now.len(), 2, "the burst only: {events_now:?}");
    assert!(events_now
        .iter()
        .all(|event| matches!(event, SwitchEvent::PacketIn { .. })));
    // The count is reported by the next deadline even if no PACKET_IN gets through.
    let due = session
        .poll_timeout()
        .expect("an open session has a deadline");
    session.handle_timeout(due);
    assert_eq!(
        events(&mut session),
        [SwitchEvent::PacketInsRateLimited { count: 3 }]
    );
    // A refill later, an admitted PACKET_IN carries the count of those dropped since.
    let later = start + SECOND * 2;
    session.handle_bytes(&packet_in(OF10, 1, ethernet(1)), start + SECOND / 2);
    session.handle_bytes(&packet_in(OF10, 1, ethernet(1)), later);
    let events_later = events(&mut session);
    assert!(matches!(events_later[0], SwitchEvent::PacketIn { .. }));
    assert_eq!(
        events_later[1],
        SwitchEvent::PacketInsRateLimited { count: 1 }
    );
}

// ---- PACKET_IN and commands -----------------------------------------------------------

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
    assert_eq!(sent(&mut session).len(), 2, "add, barrier");
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

// ---- reading the flow table back -------------------------------------------------------

fn both_versions(now: Instant) -> [(Version, SwitchSession); 2] {
    [
        (OF10, connected_1_0(config(), now)),
        (OF13, connected_1_3(config(), now)),
    ]
}

/// The xid of the one flow statistics request in what the session sent.
fn flow_stats_request(session: &mut SwitchSession) -> u32 {
    let requests: Vec<u32> = sent(session)
        .into_iter()
        .filter(|(_, message)| *message == Message::FlowStatsRequest)
        .map(|(header, _)| header.xid)
        .collect();
    assert_eq!(requests.len(), 1, "one request expected");
    requests[0]
}

fn sliced_path_flow(in_port: u32, out_port: u32) -> FlowMod {
    FlowMod {
        r#match: Match {
            in_port: Some(in_port),
            eth_src: Some([2, 0, 0, 0, 0, 1]),
            eth_dst: Some([2, 0, 0, 0, 0, 2]),
            ..Match::default()
        },
        cookie: crate::cookie::FlowKind::Path { endpoints: 7 }.cookie(),
        priority: 100,
        idle_timeout: 60,
        actions: vec![Action::Output {
            port: out_port,
            max_len: 0,
        }],
        ..FlowMod::default()
    }
}

fn stats_part(version: Version, xid: u32, flows: &[FlowMod], more: bool) -> Vec<u8> {
    let flows = flows
        .iter()
        .map(|flow| openflow::FlowStats::of_flow(version, flow).unwrap())
        .collect();
    wire(version, xid, &Message::FlowStatsReply { flows, more })
}

#[test]
fn reading_flows_asks_for_the_whole_table_once_at_a_time() {
    let now = Instant::now();
    for (_, mut session) in both_versions(now) {
        session.queue(Command::ReadFlows);
        session.queue(Command::ReadFlows);
        flow_stats_request(&mut session);
    }
}

#[test]
fn flow_stats_parts_become_one_read_in_the_engines_terms() {
    let now = Instant::now();
    for (version, mut session) in both_versions(now) {
        session.queue(Command::ReadFlows);
        let xid = flow_stats_request(&mut session);
        let foreign = FlowMod {
            r#match: Match {
                eth_type: Some(0x0806),
                ..Match::default()
            },
            priority: 7,
            ..FlowMod::default()
        };
        session.handle_bytes(
            &stats_part(version, xid, &[sliced_path_flow(1, 2)], true),
            now,
        );
        // Another transaction's part is not part of this read.
        session.handle_bytes(
            &stats_part(version, xid + 100, std::slice::from_ref(&foreign), false),
            now,
        );
        assert_eq!(
            events(&mut session),
            vec![],
            "{version:?}: more parts to come"
        );
        session.handle_bytes(
            &stats_part(version, xid, std::slice::from_ref(&foreign), false),
            now,
        );
        let events = events(&mut session);
        let [SwitchEvent::FlowsRead(read)] = &events[..] else {
            panic!("{version:?}: one read expected, got {events:?}");
        };
        assert!(read.complete);
        assert_eq!(read.entries.len(), 2);
        let path = &read.entries[0];
        assert_eq!(path.cookie, sliced_path_flow(1, 2).cookie);
        assert_eq!(path.in_port, Some(1));
        assert_eq!(path.eth_src, Some(MacAddress::new([2, 0, 0, 0, 0, 1])));
        assert_eq!(path.eth_dst, Some(MacAddress::new([2, 0, 0, 0, 0, 2])));
        assert_eq!(path.action, FlowAction::Output(2));
        assert!(!path.other_fields);
        let other = &read.entries[1];
        assert!(other.other_fields, "{version:?}: it matches the EtherType");
        assert_eq!(other.action, FlowAction::Drop);

        // The foreign flow is deleted by exactly its own match and priority.
        session.queue(Command::FlowDeleteExact(other.handle.clone()));
        let sent = sent_messages(&mut session);
        let [Message::FlowMod(delete)] = &sent[..] else {
            panic!("{version:?}: one FLOW_MOD expected: {sent:?}");
        };
        assert_eq!(delete.command, FlowModCommand::DeleteStrict);
        assert_eq!(delete.r#match, foreign.r#match);
        assert_eq!(delete.priority, 7);

        // The read is over: a new one may start.
        session.queue(Command::ReadFlows);
        flow_stats_request(&mut session);
    }
}

#[test]
fn a_flow_table_over_the_bound_reads_as_incomplete() {
    let now = Instant::now();
    for (version, mut session) in both_versions(now) {
        session.queue(Command::ReadFlows);
        let xid = flow_stats_request(&mut session);
        // As many flows as fit one message, in as many parts as cross the bound.
        let per_part = 500;
        let part: Vec<FlowMod> = (0..per_part).map(|n| sliced_path_flow(n + 1, 1)).collect();
        let parts = MAX_FLOWS_READ / per_part as usize + 1;
        let part_bytes = stats_part(version, xid, &part, true);
        for _ in 0..parts {
            session.handle_bytes(&part_bytes, now);
        }
        assert_eq!(events(&mut session), vec![]);
        session.handle_bytes(&stats_part(version, xid, &[], false), now);
        assert_eq!(
            events(&mut session),
            vec![SwitchEvent::FlowsRead(FlowsRead {
                entries: Vec::new(),
                complete: false,
            })],
            "{version:?}"
        );
        assert!(
            !session.is_closed(),
            "a large table is no reason to disconnect"
        );
    }
}

#[test]
fn a_read_the_switch_never_answers_is_given_up_as_incomplete() {
    // Other deadlines run meanwhile (the 1.3 meter setup gives up too): only the reads
    // matter here.
    fn reads(session: &mut SwitchSession) -> Vec<SwitchEvent> {
        events(session)
            .into_iter()
            .filter(|event| matches!(event, SwitchEvent::FlowsRead(_)))
            .collect()
    }
    let now = Instant::now();
    let given_up_at = now + super::FLOW_READ_TIMEOUT;
    for (version, mut session) in both_versions(now) {
        session.queue(Command::ReadFlows);
        let xid = flow_stats_request(&mut session);
        // The switch keeps answering echoes, but never lists its flows.
        let mut at = now;
        while at < given_up_at {
            session.handle_timeout(at);
            let _ = sent_messages(&mut session);
            session.handle_bytes(&wire(version, 0, &Message::EchoReply(Vec::new())), at);
            assert_eq!(reads(&mut session), vec![], "{version:?}: given up early");
            assert!(session.poll_timeout().is_some_and(|due| due <= given_up_at));
            at += Duration::from_millis(500);
        }
        session.handle_timeout(given_up_at);
        assert_eq!(
            reads(&mut session),
            vec![SwitchEvent::FlowsRead(FlowsRead {
                entries: Vec::new(),
                complete: false,
            })],
            "{version:?}"
        );
        assert!(
            !session.is_closed(),
            "{version:?}: a slow read is no reason to disconnect"
        );
        // A part that comes after all is of a read that is over.
        let late = given_up_at + SECOND;
        session.handle_bytes(
            &stats_part(version, xid, &[sliced_path_flow(1, 2)], false),
            late,
        );
        assert_eq!(reads(&mut session), vec![], "{version:?}");
        // And the next read is asked for.
        session.queue(Command::ReadFlows);
        flow_stats_request(&mut session);
    }
}

#[test]
fn a_refused_read_reads_as_incomplete() {
    let now = Instant::now();
    for (version, mut session) in both_versions(now) {
        session.queue(Command::ReadFlows);
        let xid = flow_stats_request(&mut session);
        let refusal = Message::Error {
            err_type: ErrorType::BadRequest,
            code: BadRequestCode::BadMultipart.into(),
            data: Vec::new(),
        };
        session.handle_bytes(&wire(version, xid, &refusal), now);
        assert_eq!(
            events(&mut session),
            vec![SwitchEvent::FlowsRead(FlowsRead {
                entries: Vec::new(),
                complete: false,
            })],
            "{version:?}"
        );
    }
}

#[test]
fn a_flow_add_and_the_table_miss_flow_carry_their_cookies() {
    let now = Instant::now();
    for (_, mut session) in both_versions(now) {
        session.queue(Command::FlowAdd {
            rule: Rule {
                in_port: 1,
                eth_src: MacAddress::new([2, 0, 0, 0, 0, 1]),
                eth_dst: MacAddress::new([2, 0, 0, 0, 0, 2]),
            },
            out_port: Some(2),
            priority: 100,
            idle_timeout: 60,
            hard_timeout: 0,
            notify_removal: true,
            cookie: 0x5c1c_0200_0000_0007,
        });
        let sent = sent_messages(&mut session);
        let [Message::FlowMod(add)] = &sent[..] else {
            panic!("one FLOW_MOD expected: {sent:?}");
        };
        assert_eq!(add.cookie, 0x5c1c_0200_0000_0007);
    }
    let Message::FlowMod(table_miss) = crate::meter::table_miss_flow(None) else {
        panic!("the table-miss flow is a FLOW_MOD");
    };
    assert_eq!(
        table_miss.cookie,
        crate::cookie::FlowKind::TableMiss.cookie()
    );
}

// ---- whatever a switch sends ----------------------------------------------------------

/// A frame with a well-formed header (so the decoders are reached) around any body.
fn framed(version: Version, msg_type: u8, body: &[u8]) -> Vec<u8> {
    let length = u16::try_from(8 + body.len()).unwrap_or(u16::MAX);
    let mut frame = vec![u8::from(version), msg_type];
    frame.extend_from_slice(&length.to_be_bytes());
    frame.extend_from_slice(&[0, 0, 0, 1]);
    frame.extend_from_slice(body);
    frame
}

proptest::proptest! {
    #[test]
    fn whatever_a_connected_switch_sends_never_panics_and_any_close_has_a_reason(
        version_13 in proptest::bool::ANY,
        frames in proptest::collection::vec(
            (0u8..32, proptest::collection::vec(proptest::num::u8::ANY, 0..120)),
            0..12,
        ),
        garbage in proptest::collection::vec(proptest::num::u8::ANY, 0..64),
    ) {
        let start = Instant::now();
        let (version, mut session) = if version_13 {
            (OF13, connected_1_3(config(), start))
        } else {
            (OF10, connected_1_0(config(), start))
        };
        let mut now = start;
        for (msg_type, body) in &frames {
            now += SECOND;
            session.handle_bytes(&framed(version, *msg_type, body), now);
            session.handle_timeout(now);
            session.queue(Command::ReadFlows);
            session.queue(Command::ClearFlows);
            sent(&mut session);
            events(&mut session);
        }
        session.handle_bytes(&garbage, now);
        session.handle_timeout(now + Duration::from_secs(60));
        proptest::prop_assert!(session.is_closed(), "silent for a minute: closed");
        proptest::prop_assert!(session.close_reason().is_some());
        proptest::prop_assert_eq!(session.poll_timeout(), None);
    }

    #[test]
    fn whatever_answers_a_flow_table_read_never_panics_and_ends_the_read_or_the_session(
        version_13 in proptest::bool::ANY,
        parts in proptest::collection::vec(
            (
                proptest::bool::ANY,
                // Empty parts half the time, so that reads also end without an error.
                proptest::prop_oneof![
                    proptest::strategy::Just(Vec::new()),
                    proptest::collection::vec(proptest::num::u8::ANY, 1..200),
                ],
            ),
            1..6,
        ),
    ) {
        let now = Instant::now();
        let (version, mut session) = if version_13 {
            (OF13, connected_1_3(config(), now))
        } else {
            (OF10, connected_1_0(config(), now))
        };
        session.queue(Command::ReadFlows);
        let xid = flow_stats_request(&mut session);
        let last = parts.len() - 1;
        let mut reads_ended = 0;
        for (index, (known_type, noise)) in parts.iter().enumerate() {
            // A reply header (flow type or noise, "more" on all but the last part), then
            // any bytes as the entries.
            let mut body = vec![0, if *known_type { 1 } else { noise.len() as u8 }];
            body.extend_from_slice(&[0, u8::from(index != last)]);
            if version == OF13 {
                body.extend_from_slice(&[0; 4]);
            }
            body.extend_from_slice(noise);
            let reply = if version == OF13 { v13::MULTIPART_REPLY } else { v10::STATS_REPLY };
            let mut frame = framed(version, reply, &body);
            frame[4..8].copy_from_slice(&xid.to_be_bytes());
            session.handle_bytes(&frame, now);
            for event in events(&mut session) {
                if matches!(event, SwitchEvent::FlowsRead(_)) {
                    reads_ended += 1;
                }
            }
        }
        let (last_is_flows, _) = parts[last];
        if session.is_closed() {
            proptest::prop_assert!(session.close_reason().is_some());
        } else if last_is_flows {
            // A last part that parsed ends the read, exactly once.
            proptest::prop_assert_eq!(reads_ended, 1);
            session.queue(Command::ReadFlows);
            flow_stats_request(&mut session);
        } else {
            proptest::prop_assert_eq!(reads_ended, 0);
        }
    }
}

// ---- roles -------------------------------------------------------------------------

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
    assert_eq!(sent(&mut session).len(), 2, "add, barrier");
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
