//! The LLDP frames the controller sends out of every switch port to find links: the
//! chassis id names the sending switch (`dpid:` and 16 lowercase hex digits) and the
//! port id its port (decimal), both with subtype "locally assigned".

use super::ethernet::{self, EthernetFrame, EthernetRepr};
use super::ethertype;
use super::lldp::{LldpRepr, SUBTYPE_LOCAL};
use super::vlan::VlanTag;
use crate::wire::{grow, tail_mut};

/// The nearest-bridge LLDP group address, which no bridge forwards.
pub const LLDP_MULTICAST: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e];
/// Seconds a receiver may keep the information.
const TTL_SECONDS: u16 = 120;
const DPID_PREFIX: &[u8] = b"dpid:";
const DPID_HEX_DIGITS: usize = 16;

/// Appends an LLDP frame from `src` to the nearest-bridge group address naming switch
/// `dpid` and its port `port_no`: chassis id `dpid:<16 lowercase hex digits>`, port id
/// the decimal port number, TTL 120, end TLV. The frame is zero-padded to Ethernet's
/// 60-byte minimum, because a switch may send a PACKET_OUT's data as is.
pub fn discovery_frame(dpid: u64, port_no: u32, src: [u8; 6], out: &mut Vec<u8>) {
    let chassis_id = format!("dpid:{dpid:016x}");
    let port_id = port_no.to_string();
    let lldp = LldpRepr {
        chassis_id_subtype: SUBTYPE_LOCAL,
        chassis_id: chassis_id.as_bytes(),
        port_id_subtype: SUBTYPE_LOCAL,
        port_id: port_id.as_bytes(),
        ttl: TTL_SECONDS,
    };
    let ethernet = EthernetRepr {
        dst: LLDP_MULTICAST,
        src,
        ethertype: ethertype::LLDP,
    };
    let length = (ethernet::HEADER_LEN + lldp.buffer_len()).max(ethernet::MIN_FRAME_LEN);
    let frame = grow(out, length);
    ethernet.emit(&mut EthernetFrame::new_unchecked(&mut *frame));
    // The ids are 21 bytes and at most 10 digits, well inside LLDP's 255-byte limit.
    lldp.emit_unchecked(tail_mut(frame, ethernet::HEADER_LEN));
}

/// `Some((dpid, port_no))` when `frame` is an LLDP frame as [`discovery_frame`] builds
/// them, untagged or behind one 802.1Q tag; `None` for anything else. The destination
/// address is not checked, so frames sent to the other LLDP group addresses count too.
pub fn parse_discovery(frame: &[u8]) -> Option<(u64, u32)> {
    let ethernet = EthernetFrame::new_checked(frame).ok()?;
    let (kind, payload) = match ethernet.ethertype() {
        ethertype::VLAN => {
            let tag = VlanTag::new_checked(ethernet.payload()).ok()?;
            (
                tag.ethertype(),
                tag.into_inner().get(super::vlan::TAG_LEN..)?,
            )
        }
        kind => (kind, ethernet.payload()),
    };
    if kind != ethertype::LLDP {
        return None;
    }
    let lldp = LldpRepr::parse(payload).ok()?;
    if lldp.chassis_id_subtype != SUBTYPE_LOCAL || lldp.port_id_subtype != SUBTYPE_LOCAL {
        return None;
    }
    let hex = lldp.chassis_id.strip_prefix(DPID_PREFIX)?;
    let lowercase_hex = |&b: &u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    if hex.len() != DPID_HEX_DIGITS || !hex.iter().all(lowercase_hex) {
        return None;
    }
    let dpid = u64::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
    if lldp.port_id.is_empty() || !lldp.port_id.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let port_no = std::str::from_utf8(lldp.port_id).ok()?.parse().ok()?;
    Some((dpid, port_no))
}
