//! Golden byte tests: each array is written by hand from the specification's struct
//! layout, one line per field group, and must both parse to the repr and be what the
//! repr emits. This file holds the check both directions share; one module per area:
//! `handshake` (hellos, negotiation, features, roles), `flows` (flow mods), `meters`,
//! `ports`, `packets` (packet-in and packet-out) and `framing` (frames, unmodelled
//! messages and errors).

mod flows;
mod framing;
mod handshake;
mod meters;
mod packets;
mod ports;

use openflow::{HeaderRepr, Message, Version};

/// Parses `bytes` and emits `message`, checking both directions.
fn assert_golden(bytes: &[u8], version: Version, xid: u32, message: &Message) {
    let (header, parsed) = Message::parse(bytes).expect("golden bytes parse");
    assert_eq!(
        header,
        HeaderRepr {
            version,
            msg_type: bytes[1],
            length: bytes.len() as u16,
            xid,
        }
    );
    assert_eq!(&parsed, message);
    let mut out = Vec::new();
    message
        .emit(version, xid, &mut out)
        .expect("golden repr emits");
    assert_eq!(out, bytes);
}
