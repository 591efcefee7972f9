//! The flow-setup floor: a controller with no logic, the machine's lower bound on a round
//! trip.
//!
//! `sliced-bench floor-controller` (a process of its own, started by the harness) answers
//! every PACKET_IN at once with one FLOW_MOD and one PACKET_OUT that floods the frame, in
//! one write, from a blocking thread per switch: no event loop, no learning, no lookups,
//! no slices. A round trip against it costs what loopback TCP, the scheduler's wake-ups
//! and the emulator cost on this machine, and nothing else; what sliced's round trip
//! costs beyond it is sliced's own. It speaks through the workspace's OpenFlow codec,
//! the one sliced uses, so the floor includes the codec's cost too.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

use anyhow::Context;
use openflow::{action::WHOLE_PACKET, port, Action, FlowMod, Match, Message, Version};

/// Accepts switches on `addr` until killed, each served by a thread of its own.
pub(crate) fn serve(addr: &str) -> anyhow::Result<()> {
    let listener = TcpListener::bind(addr).with_context(|| format!("cannot listen on {addr}"))?;
    for stream in listener.incoming() {
        let stream = stream.context("accept")?;
        std::thread::spawn(move || {
            if let Err(err) = serve_switch(stream) {
                eprintln!("floor-controller: a switch's connection ended: {err:#}");
            }
        });
    }
    Ok(())
}

/// The largest message the floor reads; OpenFlow's length field cannot say more.
const MAX_MESSAGE: usize = 1 << 16;

fn serve_switch(mut stream: TcpStream) -> anyhow::Result<()> {
    stream.set_nodelay(true)?;
    let mut version = None;
    let mut pending: Vec<u8> = Vec::with_capacity(2 * MAX_MESSAGE);
    let mut chunk = vec![0u8; MAX_MESSAGE];
    let mut out = Vec::with_capacity(MAX_MESSAGE);
    // Offer both versions; the switch's HELLO settles which one is spoken.
    Message::Hello {
        versions: Some(1 << u8::from(Version::Of10) | 1 << u8::from(Version::Of13)),
    }
    .emit(Version::Of13, 0, &mut out)?;
    stream.write_all(&out)?;
    loop {
        let got = stream.read(&mut chunk)?;
        if got == 0 {
            return Ok(());
        }
        pending.extend_from_slice(&chunk[..got]);
        out.clear();
        let mut consumed = 0;
        while let Some(len) = openflow::frame_len(&pending[consumed..])? {
            let frame = &pending[consumed..consumed + len];
            consumed += len;
            answer(frame, &mut version, &mut out)?;
        }
        pending.drain(..consumed);
        if !out.is_empty() {
            stream.write_all(&out)?;
        }
    }
}

/// Appends the answer to one message, if it needs one.
fn answer(frame: &[u8], version: &mut Option<Version>, out: &mut Vec<u8>) -> anyhow::Result<()> {
    let (header, message) = Message::parse(frame)?;
    match message {
        Message::Hello { versions } => {
            let spoken =
                openflow::negotiate(&[Version::Of10, Version::Of13], header.version, versions)
                    .context("the switch speaks neither OpenFlow 1.0 nor 1.3")?;
            *version = Some(spoken);
            Message::FeaturesRequest.emit(spoken, 1, out)?;
        }
        Message::EchoRequest(payload) => {
            Message::EchoReply(payload).emit(header.version, header.xid, out)?;
        }
        Message::PacketIn(packet_in) => {
            let spoken = version.context("a PACKET_IN before the HELLO")?;
            let flood = vec![Action::Output {
                port: port::FLOOD,
                max_len: WHOLE_PACKET,
            }];
            Message::FlowMod(FlowMod {
                r#match: Match {
                    in_port: Some(packet_in.in_port),
                    ..Match::default()
                },
                priority: 1,
                actions: flood.clone(),
                ..FlowMod::default()
            })
            .emit(spoken, 0, out)?;
            Message::PacketOut(openflow::PacketOut {
                buffer_id: None,
                in_port: packet_in.in_port,
                actions: flood,
                data: packet_in.data,
            })
            .emit(spoken, 0, out)?;
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use openflow::{PacketIn, PacketInReason};

    fn messages(mut bytes: &[u8]) -> Vec<Message> {
        let mut parsed = Vec::new();
        while let Some(len) = openflow::frame_len(bytes).expect("framing") {
            parsed.push(Message::parse(&bytes[..len]).expect("a message").1);
            bytes = &bytes[len..];
        }
        assert!(bytes.is_empty(), "a partial message is left");
        parsed
    }

    fn emitted(message: Message, version: Version) -> Vec<u8> {
        let mut out = Vec::new();
        message.emit(version, 7, &mut out).expect("emit");
        out
    }

    #[test]
    fn a_packet_in_is_answered_with_a_flow_mod_and_the_frame_back() {
        for spoken in [Version::Of10, Version::Of13] {
            let mut version = None;
            let mut out = Vec::new();
            let hello = emitted(Message::Hello { versions: None }, spoken);
            answer(&hello, &mut version, &mut out).expect("the HELLO");
            assert_eq!(version, Some(spoken));
            assert_eq!(messages(&out), vec![Message::FeaturesRequest]);

            out.clear();
            let frame = vec![0xab; 60];
            let packet_in = Message::PacketIn(PacketIn {
                buffer_id: None,
                total_len: 60,
                in_port: 3,
                reason: PacketInReason::NoMatch,
                table_id: 0,
                cookie: 0,
                data: frame.clone(),
            });
            answer(&emitted(packet_in, spoken), &mut version, &mut out).expect("the PACKET_IN");
            match messages(&out).as_slice() {
                [Message::FlowMod(flow_mod), Message::PacketOut(packet_out)] => {
                    assert_eq!(flow_mod.r#match.in_port, Some(3));
                    assert_eq!(packet_out.data, frame);
                    assert_eq!(packet_out.in_port, 3);
                }
                other => panic!("{spoken:?}: answered {other:?}"),
            }
        }
    }

    #[test]
    fn a_packet_in_before_the_hello_ends_the_connection() {
        let packet_in = Message::PacketIn(PacketIn {
            buffer_id: None,
            total_len: 1,
            in_port: 1,
            reason: PacketInReason::NoMatch,
            table_id: 0,
            cookie: 0,
            data: vec![0],
        });
        let mut out = Vec::new();
        assert!(answer(&emitted(packet_in, Version::Of13), &mut None, &mut out).is_err());
        assert!(out.is_empty());
    }
}
