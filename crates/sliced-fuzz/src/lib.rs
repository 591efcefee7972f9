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

use actix_web::ResponseError;
use serde::de::DeserializeOwned;
use slice_core::{PortId, SliceName};
use slice_http::{decode_body, ApiError, BodyShape, Credentials, MacBody, PortRequest, SliceBody};

use openflow::packet::{
    self, ArpPacket, ArpRepr, EthernetFrame, EthernetRepr, Ipv4Packet, Ipv4Repr, LldpRepr,
    VlanRepr, VlanTag,
};
use openflow::role::NxVendorError;
use openflow::{frame_len, ErrorType, Message};

/// The names of the targets, as `cargo xtask fuzz` and the corpus folders know them.
pub const TARGETS: &[&str] = &["openflow_stream", "request_body"];

/// Runs the harness called `target` on `data`; false when there is no such target.
pub fn run(target: &str, data: &[u8]) -> bool {
    match target {
        "openflow_stream" => openflow_stream(data),
        "request_body" => request_body(data),
        _ => return false,
    }
    true
}

/// What the controller does with bytes from a switch: cut the stream into frames, decode
/// each, and look inside the packets that PACKET_INs carry. Every message that decodes
/// and can be encoded again must decode to itself from its own encoding. Flow statistics
/// replies (the flow-table read-back) go through the same decoder, and their entries are
/// cut once more with the iterator the codec offers, which must agree with it.
pub fn openflow_stream(mut stream: &[u8]) {
    while let Ok(Some(len)) = frame_len(stream) {
        let (frame, rest) = stream.split_at(len);
        stream = rest;
        let Ok((header, message)) = Message::parse(frame) else {
            continue;
        };
        match &message {
            Message::PacketIn(packet_in) => inspect_packet(&packet_in.data),
            // Open vSwitch's 1.0 vendor errors (what a slave's writes may earn) carry
            // their real type and code in the data.
            Message::Error {
                err_type: ErrorType::NiciraVendor,
                data,
                ..
            } => {
                if let Ok(error) = NxVendorError::new_checked(data.as_slice()) {
                    let _ = (error.vendor(), error.err_type(), error.code());
                }
            }
            _ => {}
        }
        if let Message::FlowStatsReply { flows, .. } = &message {
            let body_at = if header.version == openflow::Version::Of10 {
                openflow::flow_stats::STATS_V10_HEADER_LEN
            } else {
                openflow::multipart::MULTIPART_HEADER_LEN
            };
            let entries: Result<Vec<_>, _> =
                openflow::flow_stats::FlowStatsEntries::new(header.version, &frame[body_at..])
                    .collect();
            assert_eq!(entries.as_ref(), Ok(flows), "the entry iterator disagrees");
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

/// The Content-Types a request body comes with, the first byte of an input picking one.
const CONTENT_TYPES: &[Option<&str>] = &[
    None,
    Some("application/json"),
    Some("application/x-www-form-urlencoded"),
    Some("application/json; charset=utf-8"),
    Some("application/merge-patch+json"),
    Some("text/plain"),
];

/// What the REST API does with a request body: the first byte picks the Content-Type,
/// the rest is the body, read as each endpoint's body type. Bad input is a 4xx, never a
/// 5xx; and what decodes names a valid resource that survives its own JSON.
pub fn request_body(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let content_type = CONTENT_TYPES[usize::from(selector) % CONTENT_TYPES.len()];
    if let Some(slice) = decoded::<SliceBody>(content_type, body) {
        assert_eq!(
            slice.name.to_string().parse::<SliceName>(),
            Ok(slice.name.clone())
        );
        let again: SliceBody = reencoded(&slice);
        assert_eq!(again.name, slice.name);
    }
    if let Some(mac) = decoded::<MacBody>(content_type, body) {
        let again: MacBody = reencoded(&mac);
        assert_eq!(again.name, mac.name);
    }
    if let Some(port) = decoded::<PortRequest>(content_type, body) {
        let id = PortId {
            dpid: port.dpid,
            port_no: port.port_no,
        };
        assert_eq!(id.to_string().parse::<PortId>(), Ok(id));
    }
    let _ = decoded::<Credentials>(content_type, body);
}

fn decoded<T: DeserializeOwned + BodyShape>(content_type: Option<&str>, body: &[u8]) -> Option<T> {
    match decode_body::<T>(content_type, body) {
        Ok(value) => Some(value),
        Err(err) => {
            assert_client_error(&err);
            None
        }
    }
}

fn assert_client_error(err: &ApiError) {
    let status = err.status_code();
    assert!(
        status.is_client_error(),
        "a request body got {status} ({err}), not a 4xx"
    );
}

fn reencoded<T: serde::Serialize + DeserializeOwned + BodyShape>(value: &T) -> T {
    let json = serde_json::to_vec(value).expect("a decoded body encodes as JSON");
    match decode_body(Some("application/json"), &json) {
        Ok(again) => again,
        Err(err) => panic!("a decoded body does not decode from its own JSON: {err}"),
    }
}
