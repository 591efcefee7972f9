//! LLDP (IEEE 802.1AB): an LLDPDU is a run of TLVs, each a 16-bit header (type in the
//! top 7 bits, value length in the low 9) and a value. It opens with the chassis id,
//! port id and time-to-live TLVs and closes with an end TLV (type 0, length 0).

use crate::wire::{sub, tail, write_field, write_slice};
use crate::Error;

/// Length of a TLV header.
pub const TLV_HEADER_LEN: usize = 2;
/// Longest chassis or port id, subtype excluded.
pub const MAX_ID_LEN: usize = 255;

/// TLV types.
pub mod tlv_type {
    /// End of LLDPDU.
    pub const END: u8 = 0;
    /// Chassis id: a subtype byte, then the id.
    pub const CHASSIS_ID: u8 = 1;
    /// Port id: a subtype byte, then the id.
    pub const PORT_ID: u8 = 2;
    /// Time to live: 16-bit seconds.
    pub const TTL: u8 = 3;
    /// Organisationally specific: a 3-byte OUI, a subtype byte, then the owner's data.
    pub const ORGANIZATION: u8 = 127;
}

/// Longest value a TLV can carry (its length field has 9 bits).
pub const MAX_VALUE_LEN: usize = 0x01ff;

/// Chassis and port id subtype "locally assigned": free text chosen by the sender.
pub const SUBTYPE_LOCAL: u8 = 7;

view! {
    /// A view of one LLDP TLV and whatever follows it.
    LldpTlv
}

fields!(LldpTlv {
    /// The packed type and length.
    type_length / set_type_length: u16 = 0;
});

impl<T: AsRef<[u8]>> LldpTlv<T> {
    /// Checks that the buffer holds the header and the value it announces.
    pub fn check_len(&self) -> Result<(), Error> {
        let buffer = self.buffer.as_ref();
        Error::need("LLDP TLV header", buffer, TLV_HEADER_LEN)?;
        Error::need("LLDP TLV", buffer, self.total_len())
    }

    /// TLV type.
    pub fn tlv_type(&self) -> u8 {
        (self.type_length() >> 9) as u8
    }

    /// Value length.
    pub fn value_len(&self) -> usize {
        usize::from(self.type_length() & 0x01ff)
    }

    /// Header plus value.
    pub fn total_len(&self) -> usize {
        TLV_HEADER_LEN + self.value_len()
    }

    /// The value.
    pub fn value(&self) -> &[u8] {
        sub(self.buffer.as_ref(), TLV_HEADER_LEN, self.total_len())
    }
}

/// The mandatory TLVs of an LLDPDU, borrowing the ids from the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LldpRepr<'a> {
    /// How to read `chassis_id`.
    pub chassis_id_subtype: u8,
    /// The chassis id (1 to 255 bytes).
    pub chassis_id: &'a [u8],
    /// How to read `port_id`.
    pub port_id_subtype: u8,
    /// The port id (1 to 255 bytes).
    pub port_id: &'a [u8],
    /// Seconds the information stays valid.
    pub ttl: u16,
}

impl<'a> LldpRepr<'a> {
    /// Reads an LLDPDU (the Ethernet payload). The first three TLVs must be chassis id,
    /// port id and TTL; optional TLVs after them are skipped up to an end TLV or the
    /// end of the buffer, and anything after an end TLV (Ethernet padding) is ignored.
    pub fn parse(lldpdu: &'a [u8]) -> Result<Self, Error> {
        let mut rest = lldpdu;
        let mut next = |expected: u8| -> Result<&'a [u8], Error> {
            let tlv = LldpTlv::new_checked(rest)?;
            if tlv.tlv_type() != expected {
                return Err(Error::UnknownValue {
                    what: "LLDP TLV type",
                    value: u32::from(tlv.tlv_type()),
                });
            }
            let value = sub(rest, TLV_HEADER_LEN, tlv.total_len());
            rest = tail(rest, tlv.total_len());
            Ok(value)
        };
        let (chassis_id_subtype, chassis_id) = split_id(next(tlv_type::CHASSIS_ID)?)?;
        let (port_id_subtype, port_id) = split_id(next(tlv_type::PORT_ID)?)?;
        let ttl = next(tlv_type::TTL)?;
        let ttl = match ttl {
            [high, low] => u16::from_be_bytes([*high, *low]),
            _ => {
                return Err(Error::BadLength {
                    what: "LLDP TTL TLV",
                    length: ttl.len(),
                })
            }
        };
        while !rest.is_empty() {
            let tlv = LldpTlv::new_checked(rest)?;
            if tlv.tlv_type() == tlv_type::END {
                break;
            }
            rest = tail(rest, tlv.total_len());
        }
        Ok(LldpRepr {
            chassis_id_subtype,
            chassis_id,
            port_id_subtype,
            port_id,
            ttl,
        })
    }

    /// Bytes the LLDPDU takes, end TLV included.
    pub fn buffer_len(&self) -> usize {
        // Four TLV headers, the two id subtypes and the 16-bit TTL.
        (4 * TLV_HEADER_LEN + 1 + 1 + 2)
            .saturating_add(self.chassis_id.len())
            .saturating_add(self.port_id.len())
    }

    /// Like [`Self::buffer_len`] with one more TLV of `extra_value_len` value bytes.
    pub fn buffer_len_with(&self, extra_value_len: usize) -> usize {
        self.buffer_len()
            .saturating_add(TLV_HEADER_LEN)
            .saturating_add(extra_value_len)
    }

    /// Writes the LLDPDU into a buffer of [`Self::buffer_len`] bytes; fails when an id
    /// is empty or longer than [`MAX_ID_LEN`].
    pub fn emit(&self, buffer: &mut [u8]) -> Result<(), Error> {
        for id in [self.chassis_id, self.port_id] {
            if id.is_empty() || id.len() > MAX_ID_LEN {
                return Err(Error::BadLength {
                    what: "LLDP id",
                    length: id.len(),
                });
            }
        }
        self.emit_unchecked(buffer);
        Ok(())
    }

    /// [`Self::emit`] for ids already known to be 1 to [`MAX_ID_LEN`] bytes long
    /// (longer ones would corrupt the TLV lengths, not panic).
    pub(crate) fn emit_unchecked(&self, buffer: &mut [u8]) {
        self.emit_unchecked_with(buffer, None);
    }

    /// [`Self::emit_unchecked`] with an optional extra TLV `(type, value parts)` between
    /// the TTL and the end TLV, into a buffer of [`Self::buffer_len_with`] bytes. The
    /// value must be at most [`MAX_VALUE_LEN`] bytes.
    pub(crate) fn emit_unchecked_with(&self, buffer: &mut [u8], extra: Option<(u8, &[&[u8]])>) {
        let mut at = 0;
        let mut put = |tlv_type: u8, parts: &[&[u8]]| {
            let len = parts.iter().map(|part| part.len()).sum::<usize>();
            let header = (u16::from(tlv_type) << 9) | (len as u16 & 0x01ff);
            write_field(buffer, at, header);
            at += TLV_HEADER_LEN;
            for part in parts {
                write_slice(buffer, at, part);
                at += part.len();
            }
        };
        put(
            tlv_type::CHASSIS_ID,
            &[&[self.chassis_id_subtype], self.chassis_id],
        );
        put(tlv_type::PORT_ID, &[&[self.port_id_subtype], self.port_id]);
        put(tlv_type::TTL, &[&self.ttl.to_be_bytes()]);
        if let Some((tlv_type, parts)) = extra {
            put(tlv_type, parts);
        }
        put(tlv_type::END, &[]);
    }
}

/// Splits a chassis or port id value into its subtype and the id, which must not be
/// empty.
fn split_id(value: &[u8]) -> Result<(u8, &[u8]), Error> {
    match value {
        [subtype, id @ ..] if !id.is_empty() => Ok((*subtype, id)),
        _ => Err(Error::BadLength {
            what: "LLDP id TLV",
            length: value.len(),
        }),
    }
}

/// The value (after OUI and subtype) of the first organisationally specific TLV of
/// `lldpdu` with this OUI and subtype, searching every TLV up to the end TLV; `None` when
/// there is none or the LLDPDU is malformed before it.
pub fn find_organization_tlv(lldpdu: &[u8], oui: [u8; 3], subtype: u8) -> Option<&[u8]> {
    let mut rest = lldpdu;
    while !rest.is_empty() {
        let tlv = LldpTlv::new_checked(rest).ok()?;
        match tlv.tlv_type() {
            tlv_type::END => return None,
            tlv_type::ORGANIZATION => {
                let value = sub(rest, TLV_HEADER_LEN, tlv.total_len());
                if let [a, b, c, kind, data @ ..] = value {
                    if [*a, *b, *c] == oui && *kind == subtype {
                        return Some(data);
                    }
                }
            }
            _ => {}
        }
        rest = tail(rest, tlv.total_len());
    }
    None
}
