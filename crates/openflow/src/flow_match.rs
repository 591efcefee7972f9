//! Flow matches: 1.0's fixed `ofp_match` with wildcard bits, and 1.3's `ofp_match`
//! carrying OXM TLVs.
//!
//! [`Match`] models the fields this controller uses. Anything else a peer sends is
//! dropped on parsing (a 1.0 field that is not wildcarded, an OXM field of another class
//! or number, a masked OXM field, a match on "no VLAN tag"), so a parsed match can be
//! wider than the one on the wire; on emitting, every field the model lacks is left
//! wildcarded.

use crate::port;
use crate::wire::{length_u16, pad8, read_field, sub, tail, write_field};
use crate::Error;

/// 1.0 `OFPFW_*` wildcard bits.
pub mod wildcards {
    /// Switch input port.
    pub const IN_PORT: u32 = 1 << 0;
    /// VLAN id.
    pub const DL_VLAN: u32 = 1 << 1;
    /// Ethernet source address.
    pub const DL_SRC: u32 = 1 << 2;
    /// Ethernet destination address.
    pub const DL_DST: u32 = 1 << 3;
    /// Ethernet frame type.
    pub const DL_TYPE: u32 = 1 << 4;
    /// IP protocol.
    pub const NW_PROTO: u32 = 1 << 5;
    /// TCP/UDP source port.
    pub const TP_SRC: u32 = 1 << 6;
    /// TCP/UDP destination port.
    pub const TP_DST: u32 = 1 << 7;
    /// IP source address, fully wildcarded (a 6-bit count of ignored low bits at 8..14).
    pub const NW_SRC_ALL: u32 = 32 << 8;
    /// IP destination address, fully wildcarded (a 6-bit count at 14..20).
    pub const NW_DST_ALL: u32 = 32 << 14;
    /// VLAN priority.
    pub const DL_VLAN_PCP: u32 = 1 << 20;
    /// IP type of service.
    pub const NW_TOS: u32 = 1 << 21;
    /// Every field wildcarded.
    pub const ALL: u32 = (1 << 22) - 1;
}

/// 1.0 `dl_vlan` value meaning "untagged" (`OFP_VLAN_NONE`).
const V10_VLAN_NONE: u16 = 0xffff;
/// 1.3 `OFPVID_PRESENT`: set in VLAN_VID when a tag is present.
const VID_PRESENT: u16 = 0x1000;
/// Largest 12-bit VLAN id.
const VID_MASK: u16 = 0x0fff;

/// Byte offsets of 1.0's `ofp_match`.
mod field_v10 {
    pub(super) const WILDCARDS: usize = 0;
    pub(super) const IN_PORT: usize = 4;
    pub(super) const DL_SRC: usize = 6;
    pub(super) const DL_DST: usize = 12;
    pub(super) const DL_VLAN: usize = 18;
    pub(super) const DL_VLAN_PCP: usize = 20;
    pub(super) const DL_TYPE: usize = 22;
    pub(super) const NW_TOS: usize = 24;
    pub(super) const NW_PROTO: usize = 25;
    pub(super) const NW_SRC: usize = 28;
    pub(super) const NW_DST: usize = 32;
    pub(super) const TP_SRC: usize = 36;
    pub(super) const TP_DST: usize = 38;
}

/// Length of 1.0's `ofp_match`.
pub const MATCH_V10_LEN: usize = 40;

view! {
    /// A view of OpenFlow 1.0's `ofp_match` (40 bytes).
    MatchV10
}

fields!(MatchV10 {
    /// `OFPFW_*` bits of the fields to ignore.
    wildcards / set_wildcards: u32 = field_v10::WILDCARDS;
    /// 16-bit input port.
    in_port / set_in_port: u16 = field_v10::IN_PORT;
    /// Ethernet source.
    dl_src / set_dl_src: [u8; 6] = field_v10::DL_SRC;
    /// Ethernet destination.
    dl_dst / set_dl_dst: [u8; 6] = field_v10::DL_DST;
    /// VLAN id, or `0xffff` for untagged.
    dl_vlan / set_dl_vlan: u16 = field_v10::DL_VLAN;
    /// VLAN priority.
    dl_vlan_pcp / set_dl_vlan_pcp: u8 = field_v10::DL_VLAN_PCP;
    /// Ethernet frame type.
    dl_type / set_dl_type: u16 = field_v10::DL_TYPE;
    /// IP type of service.
    nw_tos / set_nw_tos: u8 = field_v10::NW_TOS;
    /// IP protocol, or the ARP opcode.
    nw_proto / set_nw_proto: u8 = field_v10::NW_PROTO;
    /// IP source address.
    nw_src / set_nw_src: u32 = field_v10::NW_SRC;
    /// IP destination address.
    nw_dst / set_nw_dst: u32 = field_v10::NW_DST;
    /// TCP/UDP source port.
    tp_src / set_tp_src: u16 = field_v10::TP_SRC;
    /// TCP/UDP destination port.
    tp_dst / set_tp_dst: u16 = field_v10::TP_DST;
});

impl<T: AsRef<[u8]>> MatchV10<T> {
    /// Checks that the buffer holds the whole structure.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need("ofp_match", self.buffer.as_ref(), MATCH_V10_LEN)
    }
}

/// `OFPMT_OXM`, the only 1.3 match type accepted.
pub const MATCH_TYPE_OXM: u16 = 1;

/// Byte offsets of 1.3's `ofp_match` header.
mod field_v13 {
    pub(super) const TYPE: usize = 0;
    pub(super) const LENGTH: usize = 2;
    pub(super) const OXM_FIELDS: usize = 4;
}

view! {
    /// A view of OpenFlow 1.3's `ofp_match`: type, length (not counting the padding),
    /// OXM TLVs, then zero padding to a multiple of 8 bytes.
    OxmMatch
}

fields!(OxmMatch {
    /// Match type; [`MATCH_TYPE_OXM`] is the one in use.
    match_type / set_match_type: u16 = field_v13::TYPE;
    /// Length of type, length and OXM fields, without the padding.
    length / set_length: u16 = field_v13::LENGTH;
});

impl<T: AsRef<[u8]>> OxmMatch<T> {
    /// Checks that the length field covers at least the 4-byte header and that the
    /// buffer holds the match including its padding.
    pub fn check_len(&self) -> Result<(), Error> {
        let buffer = self.buffer.as_ref();
        Error::need("ofp_match", buffer, field_v13::OXM_FIELDS)?;
        let length = usize::from(self.length());
        if length < field_v13::OXM_FIELDS {
            return Err(Error::BadLength {
                what: "ofp_match",
                length,
            });
        }
        Error::need("ofp_match", buffer, pad8(length))
    }

    /// Bytes the match occupies on the wire, padding included.
    pub fn padded_len(&self) -> usize {
        pad8(usize::from(self.length()))
    }

    /// The OXM TLVs.
    pub fn oxm_fields(&self) -> &[u8] {
        sub(
            self.buffer.as_ref(),
            field_v13::OXM_FIELDS,
            usize::from(self.length()),
        )
    }
}

/// OXM class of the standard fields (`OFPXMC_OPENFLOW_BASIC`).
pub const OXM_CLASS_BASIC: u16 = 0x8000;

/// OXM field numbers of the basic class that [`Match`] models.
pub mod oxm_field {
    /// Switch input port, 32 bits.
    pub const IN_PORT: u8 = 0;
    /// Metadata passed between tables, 64 bits, maskable.
    pub const METADATA: u8 = 2;
    /// Ethernet destination, 48 bits.
    pub const ETH_DST: u8 = 3;
    /// Ethernet source, 48 bits.
    pub const ETH_SRC: u8 = 4;
    /// Ethernet frame type, 16 bits.
    pub const ETH_TYPE: u8 = 5;
    /// VLAN id with the `OFPVID_PRESENT` bit, 16 bits.
    pub const VLAN_VID: u8 = 6;
}

/// Length of an OXM TLV header.
pub const OXM_HEADER_LEN: usize = 4;

view! {
    /// A view of one OXM TLV: a 32-bit header (class 16 bits, field 7, has-mask 1,
    /// payload length 8) and the payload (value, then mask when present).
    Oxm
}

fields!(Oxm {
    /// The whole 32-bit header.
    header / set_header: u32 = 0;
});

impl<T: AsRef<[u8]>> Oxm<T> {
    /// Checks that the buffer holds the header and the payload it announces.
    pub fn check_len(&self) -> Result<(), Error> {
        let buffer = self.buffer.as_ref();
        Error::need("OXM header", buffer, OXM_HEADER_LEN)?;
        Error::need("OXM field", buffer, self.total_len())
    }

    /// OXM class.
    pub fn class(&self) -> u16 {
        (self.header() >> 16) as u16
    }

    /// Field number within the class.
    pub fn field(&self) -> u8 {
        ((self.header() >> 9) & 0x7f) as u8
    }

    /// Whether a mask follows the value.
    pub fn has_mask(&self) -> bool {
        self.header() & 0x100 != 0
    }

    /// Payload length.
    pub fn payload_len(&self) -> u8 {
        (self.header() & 0xff) as u8
    }

    /// Header plus payload.
    pub fn total_len(&self) -> usize {
        OXM_HEADER_LEN + usize::from(self.payload_len())
    }

    /// The payload (value and mask).
    pub fn payload(&self) -> &[u8] {
        sub(self.buffer.as_ref(), OXM_HEADER_LEN, self.total_len())
    }
}

/// An OXM header word for a basic-class field; a masked field's payload is the value
/// then the mask.
fn oxm_header(field: u8, masked: bool, payload_len: u8) -> u32 {
    (u32::from(OXM_CLASS_BASIC) << 16)
        | (u32::from(field) << 9)
        | (u32::from(masked) << 8)
        | u32::from(payload_len)
}

/// A value of which only the bits set in `mask` must match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Masked<T> {
    /// The bits to match (those outside the mask are ignored).
    pub value: T,
    /// 1: the bit must equal `value`'s; 0: any.
    pub mask: T,
}

impl Masked<u64> {
    /// Every bit must match.
    pub fn exact(value: u64) -> Self {
        Self { value, mask: !0 }
    }
}

/// The match fields this controller uses; `None` means "any".
/// `Match::default()` matches every packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Match {
    /// Input port, 32-bit numbering.
    pub in_port: Option<u32>,
    /// Ethernet destination.
    pub eth_dst: Option<[u8; 6]>,
    /// Bits of `eth_dst` that must match (1.3); None: all of them. An all-ones mask
    /// reads back as None, and one without `eth_dst` is not sent.
    pub eth_dst_mask: Option<[u8; 6]>,
    /// Ethernet source.
    pub eth_src: Option<[u8; 6]>,
    /// Ethernet frame type.
    pub eth_type: Option<u16>,
    /// 12-bit VLAN id of a tagged frame (1.3's `OFPVID_PRESENT` bit is added and
    /// stripped at the wire).
    pub vlan_vid: Option<u16>,
    /// The metadata an earlier table wrote (1.3).
    pub metadata: Option<Masked<u64>>,
}

impl Match {
    /// Reads a 1.0 match.
    pub fn parse_v10<T: AsRef<[u8]>>(view: &MatchV10<T>) -> Result<Match, Error> {
        view.check_len()?;
        let wildcards = view.wildcards();
        let exact = |bit: u32| wildcards & bit == 0;
        Ok(Match {
            in_port: exact(wildcards::IN_PORT).then(|| port::from_v10(view.in_port())),
            eth_dst: exact(wildcards::DL_DST).then(|| view.dl_dst()),
            eth_src: exact(wildcards::DL_SRC).then(|| view.dl_src()),
            eth_type: exact(wildcards::DL_TYPE).then(|| view.dl_type()),
            vlan_vid: if exact(wildcards::DL_VLAN) && view.dl_vlan() != V10_VLAN_NONE {
                Some(view.dl_vlan() & VID_MASK)
            } else {
                None
            },
            ..Match::default()
        })
    }

    /// Writes a 1.0 match into a view of [`MATCH_V10_LEN`] zeroed bytes. Fails when the
    /// input port has no 1.0 form, the VLAN id is wider than 12 bits, or the match has
    /// metadata or a masked destination (1.0 has neither).
    pub fn emit_v10<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        view: &mut MatchV10<T>,
    ) -> Result<(), Error> {
        for (what, present) in [
            ("match metadata", self.metadata.is_some()),
            ("match eth_dst mask", self.masked_eth_dst().is_some()),
        ] {
            if present {
                return Err(Error::NotInVersion {
                    what,
                    version: crate::Version::Of10,
                });
            }
        }
        let mut wildcards = wildcards::ALL;
        if let Some(in_port) = self.in_port {
            view.set_in_port(port::encode_v10("match in_port", in_port)?);
            wildcards &= !wildcards::IN_PORT;
        }
        if let Some(eth_dst) = self.eth_dst {
            view.set_dl_dst(eth_dst);
            wildcards &= !wildcards::DL_DST;
        }
        if let Some(eth_src) = self.eth_src {
            view.set_dl_src(eth_src);
            wildcards &= !wildcards::DL_SRC;
        }
        if let Some(eth_type) = self.eth_type {
            view.set_dl_type(eth_type);
            wildcards &= !wildcards::DL_TYPE;
        }
        if let Some(vid) = self.vlan_vid {
            view.set_dl_vlan(checked_vid(vid)?);
            wildcards &= !wildcards::DL_VLAN;
        }
        view.set_wildcards(wildcards);
        Ok(())
    }

    /// Reads a 1.3 match.
    pub fn parse_v13<T: AsRef<[u8]>>(view: &OxmMatch<T>) -> Result<Match, Error> {
        view.check_len()?;
        if view.match_type() != MATCH_TYPE_OXM {
            return Err(Error::UnknownValue {
                what: "match type",
                value: u32::from(view.match_type()),
            });
        }
        let mut parsed = Match::default();
        let mut rest = view.oxm_fields();
        while !rest.is_empty() {
            let oxm = Oxm::new_checked(rest)?;
            rest = tail(rest, oxm.total_len());
            if oxm.class() != OXM_CLASS_BASIC {
                continue;
            }
            let value = oxm.payload();
            if oxm.has_mask() {
                // Only the masked fields the model has; the others are skipped.
                match (oxm.field(), value.len()) {
                    (oxm_field::ETH_DST, 12) => {
                        parsed.eth_dst = Some(read_field(value, 0));
                        let mask: [u8; 6] = read_field(value, 6);
                        parsed.eth_dst_mask = (mask != [0xff; 6]).then_some(mask);
                    }
                    (oxm_field::METADATA, 16) => {
                        parsed.metadata = Some(Masked {
                            value: read_field(value, 0),
                            mask: read_field(value, 8),
                        });
                    }
                    (oxm_field::ETH_DST | oxm_field::METADATA, length) => {
                        return Err(Error::BadLength {
                            what: "masked OXM field",
                            length,
                        })
                    }
                    _ => {}
                }
                continue;
            }
            let expect_len = |len: usize| {
                if value.len() == len {
                    Ok(())
                } else {
                    Err(Error::BadLength {
                        what: "OXM field value",
                        length: value.len(),
                    })
                }
            };
            match oxm.field() {
                oxm_field::IN_PORT => {
                    expect_len(4)?;
                    parsed.in_port = Some(read_field(value, 0));
                }
                oxm_field::ETH_DST => {
                    expect_len(6)?;
                    parsed.eth_dst = Some(read_field(value, 0));
                }
                oxm_field::ETH_SRC => {
                    expect_len(6)?;
                    parsed.eth_src = Some(read_field(value, 0));
                }
                oxm_field::ETH_TYPE => {
                    expect_len(2)?;
                    parsed.eth_type = Some(read_field(value, 0));
                }
                oxm_field::METADATA => {
                    expect_len(8)?;
                    parsed.metadata = Some(Masked::exact(read_field(value, 0)));
                }
                oxm_field::VLAN_VID => {
                    expect_len(2)?;
                    let vid: u16 = read_field(value, 0);
                    // Without OFPVID_PRESENT this matches untagged frames, which the
                    // model cannot say.
                    if vid & VID_PRESENT != 0 {
                        parsed.vlan_vid = Some(vid & VID_MASK);
                    }
                }
                _ => {}
            }
        }
        Ok(parsed)
    }

    /// The value of 1.3's match length field: header plus OXM TLVs, no padding.
    fn unpadded_len_v13(&self) -> usize {
        let doubled_if = |masked: bool, len: usize| if masked { 2 * len } else { len };
        let fields = [
            self.in_port.map(|_| 4),
            self.eth_dst
                .map(|_| doubled_if(self.masked_eth_dst().is_some(), 6)),
            self.eth_src.map(|_| 6),
            self.eth_type.map(|_| 2),
            self.vlan_vid.map(|_| 2),
            self.metadata.map(|m| doubled_if(m.mask != !0, 8)),
        ];
        field_v13::OXM_FIELDS
            + fields
                .iter()
                .flatten()
                .map(|len| OXM_HEADER_LEN + len)
                .sum::<usize>()
    }

    /// Bytes a 1.3 match takes on the wire, padding included.
    pub fn buffer_len_v13(&self) -> usize {
        pad8(self.unpadded_len_v13())
    }

    /// Writes a 1.3 match into a view of [`Self::buffer_len_v13`] zeroed bytes. Fails
    /// when the VLAN id is wider than 12 bits.
    pub fn emit_v13<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        view: &mut OxmMatch<T>,
    ) -> Result<(), Error> {
        view.set_match_type(MATCH_TYPE_OXM);
        view.set_length(length_u16("ofp_match", self.unpadded_len_v13())?);
        let buffer = view.buffer.as_mut();
        let mut at = field_v13::OXM_FIELDS;
        let mut put_masked = |field: u8, value: &[u8], mask: Option<&[u8]>| {
            let mask = mask.unwrap_or_default();
            // A modelled value and its mask take at most 16 bytes together.
            let len = (value.len() + mask.len()) as u8;
            write_field(buffer, at, oxm_header(field, !mask.is_empty(), len));
            crate::wire::write_slice(buffer, at + OXM_HEADER_LEN, value);
            crate::wire::write_slice(buffer, at + OXM_HEADER_LEN + value.len(), mask);
            at += OXM_HEADER_LEN + usize::from(len);
        };
        if let Some(in_port) = self.in_port {
            put_masked(oxm_field::IN_PORT, &in_port.to_be_bytes(), None);
        }
        if let Some(metadata) = self.metadata {
            let mask = metadata.mask.to_be_bytes();
            let masked = (metadata.mask != !0).then_some(&mask[..]);
            put_masked(oxm_field::METADATA, &metadata.value.to_be_bytes(), masked);
        }
        if let Some(eth_dst) = self.eth_dst {
            let mask = self.masked_eth_dst();
            put_masked(oxm_field::ETH_DST, &eth_dst, mask.as_ref().map(|m| &m[..]));
        }
        if let Some(eth_src) = self.eth_src {
            put_masked(oxm_field::ETH_SRC, &eth_src, None);
        }
        if let Some(eth_type) = self.eth_type {
            put_masked(oxm_field::ETH_TYPE, &eth_type.to_be_bytes(), None);
        }
        if let Some(vid) = self.vlan_vid {
            put_masked(
                oxm_field::VLAN_VID,
                &(checked_vid(vid)? | VID_PRESENT).to_be_bytes(),
                None,
            );
        }
        Ok(())
    }

    /// The destination mask when it leaves some bit out (with a destination to mask).
    fn masked_eth_dst(&self) -> Option<[u8; 6]> {
        self.eth_dst?;
        self.eth_dst_mask.filter(|mask| *mask != [0xff; 6])
    }

    /// A 1.3 match holding only the input port, as packet-ins carry it.
    pub(crate) fn in_port_only(in_port: u32) -> Match {
        Match {
            in_port: Some(in_port),
            ..Match::default()
        }
    }
}

fn checked_vid(vid: u16) -> Result<u16, Error> {
    if vid > VID_MASK {
        return Err(Error::OutOfRange {
            what: "VLAN id",
            value: u64::from(vid),
        });
    }
    Ok(vid)
}

/// Reads a 1.3 match at the start of `bytes`; gives the match and its padded length.
pub(crate) fn parse_prefix_v13(bytes: &[u8]) -> Result<(Match, usize), Error> {
    let view = OxmMatch::new_checked(bytes)?;
    Ok((Match::parse_v13(&view)?, view.padded_len()))
}
