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

mod bounds;
mod bundles;
mod commands;
mod flow_read;
mod handshake;
mod roles;

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
    let (mut session, _) = handshake_1_3(config, now);
    events(&mut session);
    session
}

/// [`connected_1_3`], with what the session sent meanwhile; its events are left to read.
fn handshake_1_3(config: ControllerConfig, now: Instant) -> (SwitchSession, Vec<Message>) {
    let mut session = session(config, now);
    session.handle_bytes(&hello(OF13), now);
    session.handle_bytes(&wire(OF13, 2, &features(Vec::new())), now);
    let parts = Message::PortDescReply {
        ports: vec![port(1), port(2)],
        more: false,
    };
    session.handle_bytes(&wire(OF13, 3, &parts), now);
    let sent = sent_messages(&mut session);
    (session, sent)
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
