//! The LLDP frames the controller sends out of every switch port to find links: the
//! chassis id names the sending switch (`dpid:` and 16 lowercase hex digits) and the
//! port id its port (decimal), both with subtype "locally assigned".
//!
//! A signed probe also carries a [`ProbeProof`] in an organisationally specific TLV:
//! a nonce and a message authentication code that only the controller can compute, so
//! that a host cannot forge a probe. This module only carries the proof; computing and
//! checking it is the controller's business.

use super::ethernet::{self, EthernetFrame, EthernetRepr};
use super::lldp::{self, tlv_type, LldpRepr, SUBTYPE_LOCAL};
use super::vlan::VlanTag;
use super::EtherType;
use crate::wire::{grow, tail_mut};

/// The nearest-bridge LLDP group address, which no bridge forwards.
pub(super) const LLDP_MULTICAST: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e];
/// Seconds a receiver may keep the information.
const TTL_SECONDS: u16 = 120;
const DPID_PREFIX: &[u8] = b"dpid:";
const DPID_HEX_DIGITS: usize = 16;

/// The OUI of the proof TLV: a locally administered value (the U/L bit of the first
/// octet is set), so it can clash with no IEEE-assigned organisation.
pub const PROOF_OUI: [u8; 3] = [0x02, 0x5c, 0x1c];
/// The proof TLV's subtype under [`PROOF_OUI`].
pub const PROOF_SUBTYPE: u8 = 0x01;
/// Length of the truncated message authentication code in a proof.
pub const PROOF_TAG_LEN: usize = 16;
const PROOF_LEN: usize = 8 + PROOF_TAG_LEN;

/// What a signed probe carries besides its sender: the nonce it was signed with and the
/// (truncated) message authentication code over sender and nonce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProbeProof {
    /// Chosen by the signer; the verifier decides which nonces are still fresh.
    pub nonce: u64,
    /// The message authentication code, truncated to [`PROOF_TAG_LEN`] bytes.
    pub tag: [u8; PROOF_TAG_LEN],
}

/// A discovery frame as received: who claims to have sent it, and its proof if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Probe {
    /// The switch the frame claims to come from.
    pub dpid: u64,
    /// The port of that switch it claims to have left by.
    pub port_no: u32,
    /// The proof TLV, absent in an unsigned (or old-style) probe.
    pub proof: Option<ProbeProof>,
}

/// Appends an LLDP frame from `src` to the nearest-bridge group address naming switch
/// `dpid` and its port `port_no`: chassis id `dpid:<16 lowercase hex digits>`, port id
/// the decimal port number, TTL 120, end TLV. The frame is zero-padded to Ethernet's
/// 60-byte minimum, because a switch may send a PACKET_OUT's data as is.
pub fn discovery_frame(dpid: u64, port_no: u32, src: [u8; 6], out: &mut Vec<u8>) {
    build_frame(dpid, port_no, src, None, out);
}

/// [`discovery_frame`] with `proof` in an organisationally specific TLV ([`PROOF_OUI`],
/// [`PROOF_SUBTYPE`], the nonce as 8 big-endian bytes, then the tag) before the end TLV.
pub fn signed_discovery_frame(
    dpid: u64,
    port_no: u32,
    src: [u8; 6],
    proof: &ProbeProof,
    out: &mut Vec<u8>,
) {
    build_frame(dpid, port_no, src, Some(proof), out);
}

fn build_frame(
    dpid: u64,
    port_no: u32,
    src: [u8; 6],
    proof: Option<&ProbeProof>,
    out: &mut Vec<u8>,
) {
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
        ethertype: EtherType::Lldp,
    };
    let nonce = proof.map(|proof| proof.nonce.to_be_bytes());
    let extra_len = 4 + PROOF_LEN;
    let lldpdu_len = match proof {
        Some(_) => lldp.buffer_len_with(extra_len),
        None => lldp.buffer_len(),
    };
    let length = (ethernet::HEADER_LEN + lldpdu_len).max(ethernet::MIN_FRAME_LEN);
    let frame = grow(out, length);
    ethernet.emit(&mut EthernetFrame::new_unchecked(&mut *frame));
    // The ids are 21 bytes and at most 10 digits, well inside LLDP's 255-byte limit, and
    // the proof's 28 bytes inside a TLV's 511.
    let subtype = [PROOF_SUBTYPE];
    let extra = match (proof, nonce.as_ref()) {
        (Some(proof), Some(nonce)) => Some([
            PROOF_OUI.as_slice(),
            subtype.as_slice(),
            nonce.as_slice(),
            proof.tag.as_slice(),
        ]),
        _ => None,
    };
    lldp.emit_unchecked_with(
        tail_mut(frame, ethernet::HEADER_LEN),
        extra
            .as_ref()
            .map(|parts| (tlv_type::ORGANIZATION, parts.as_slice())),
    );
}

/// `Some((dpid, port_no))` when `frame` is an LLDP frame as [`discovery_frame`] builds
/// them, untagged or behind one 802.1Q tag; `None` for anything else. The destination
/// address is not checked, so frames sent to the other LLDP group addresses count too.
pub fn parse_discovery(frame: &[u8]) -> Option<(u64, u32)> {
    parse_probe(frame).map(|probe| (probe.dpid, probe.port_no))
}

/// Like [`parse_discovery`], with the frame's [`ProbeProof`] when it carries one of the
/// right length (a proof TLV of any other length counts as no proof).
pub fn parse_probe(frame: &[u8]) -> Option<Probe> {
    let ethernet = EthernetFrame::new_checked(frame).ok()?;
    let (kind, payload) = match EtherType::from(ethernet.ethertype()) {
        EtherType::Vlan => {
            let tag = VlanTag::new_checked(ethernet.payload()).ok()?;
            (
                EtherType::from(tag.ethertype()),
                tag.into_inner().get(super::vlan::TAG_LEN..)?,
            )
        }
        kind => (kind, ethernet.payload()),
    };
    if kind != EtherType::Lldp {
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
    let proof = lldp::find_organization_tlv(payload, PROOF_OUI, PROOF_SUBTYPE)
        .and_then(|value| <[u8; PROOF_LEN]>::try_from(value).ok())
        .map(|value| {
            let (nonce, tag) = value.split_at(8);
            ProbeProof {
                // Both splits are of a fixed-size array at constant offsets.
                nonce: u64::from_be_bytes(nonce.try_into().unwrap_or_default()),
                tag: tag.try_into().unwrap_or_default(),
            }
        });
    Some(Probe {
        dpid,
        port_no,
        proof,
    })
}
