//! The fuzz targets of sliced, as plain functions over bytes.
//!
//! `cargo xtask fuzz TARGET` builds the binaries in `src/bin/` with AFL++'s
//! instrumentation (`cargo afl build`) and runs `afl-fuzz` on them, starting from the
//! seed corpus in `corpus/TARGET/`. The same functions run in the ordinary test suite
//! over that corpus (`tests/corpus.rs`), so a harness that stops compiling or a seed
//! that crashes fails CI, not just the next fuzzing campaign.
//!
//! A harness fails by panicking: on any input the decoders must return, and what they
//! return must be self-consistent.

use openflow::packet::{
    self, ArpPacket, ArpRepr, EthernetFrame, EthernetRepr, Ipv4Packet, Ipv4Repr, LldpRepr,
    VlanRepr, VlanTag,
};
use openflow::{frame_len, Message};

/// The names of the targets, as `cargo xtask fuzz` and the corpus folders know them.
pub const TARGETS: &[&str] = &["openflow_stream"];

/// Runs the harness called `target` on `data`; false when there is no such target.
pub fn run(target: &str, data: &[u8]) -> bool {
    match target {
        "openflow_stream" => openflow_stream(data),
        _ => return false,
    }
    true
}

/// What the controller does with bytes from a switch: cut the stream into frames, decode
/// each, and look inside the packets that PACKET_INs carry. Every message that decodes
/// and can be encoded again must decode to itself from its own encoding.
pub fn openflow_stream(mut stream: &[u8]) {
    while let Ok(Some(len)) = frame_len(stream) {
        let (frame, rest) = stream.split_at(len);
        stream = rest;
        let Ok((header, message)) = Message::parse(frame) else {
            continue;
        };
        if let Message::PacketIn(packet_in) = &message {
            inspect_packet(&packet_in.data);
        }
        let mut encoded = Vec::new();
        if message
            .emit(header.version, header.xid, &mut encoded)
            .is_ok()
        {
            match Message::parse(&encoded) {
                Ok((_, again)) => assert_eq!(again, message, "re-encoding changed a message"),
                Err(err) => panic!("an encoded message does not decode: {err}"),
            }
        }
    }
}

/// Every packet decoder the controller applies to a PACKET_IN's payload.
fn inspect_packet(bytes: &[u8]) {
    let _ = EthernetRepr::parse(&EthernetFrame::new_unchecked(bytes));
    let _ = packet::parse_discovery(bytes);
    let Ok(frame) = EthernetFrame::new_checked(bytes) else {
        return;
    };
    let payload = frame.payload();
    match VlanTag::new_checked(payload) {
        Ok(tag) => {
            let _ = VlanRepr::parse(&tag);
            inspect_network_layer(tag.payload());
        }
        Err(_) => inspect_network_layer(payload),
    }
}

fn inspect_network_layer(payload: &[u8]) {
    let _ = ArpRepr::parse(&ArpPacket::new_unchecked(payload));
    let _ = Ipv4Repr::parse(&Ipv4Packet::new_unchecked(payload));
    let _ = LldpRepr::parse(payload);
}
