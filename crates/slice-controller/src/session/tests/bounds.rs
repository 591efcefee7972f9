//! The per-switch bounds: ports, multipart bytes, floods, unwritten output, PACKET_IN rates.

use super::*;

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
