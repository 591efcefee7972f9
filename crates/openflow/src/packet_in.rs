//! PACKET_IN: a packet the switch hands to the controller.

use crate::flow_match::{self, Match, OxmMatch};
use crate::wire::{tail, tail_mut, write_slice};
use crate::{port, Error};

/// `OFP_NO_BUFFER`: the packet is not buffered on the switch and travels whole.
pub const NO_BUFFER: u32 = 0xffff_ffff;

pub(crate) fn buffer_id_from_wire(id: u32) -> Option<u32> {
    (id != NO_BUFFER).then_some(id)
}

pub(crate) fn buffer_id_to_wire(id: Option<u32>) -> u32 {
    id.unwrap_or(NO_BUFFER)
}

/// Byte offsets of 1.0's `ofp_packet_in`, header included.
mod field_v10 {
    pub(super) const BUFFER_ID: usize = 8;
    pub(super) const TOTAL_LEN: usize = 12;
    pub(super) const IN_PORT: usize = 14;
    pub(super) const REASON: usize = 16;
    pub(super) const DATA: usize = 18;
}

enum_with_unknown! {
    /// Why the switch sent a packet to the controller (`ofp_packet_in_reason`; 1.3 adds
    /// `InvalidTtl`).
    pub enum PacketInReason(u8) {
        /// `OFPR_NO_MATCH`: no flow matched (a table miss on 1.0).
        NoMatch = 0,
        /// `OFPR_ACTION`: a flow's action output it to the controller.
        Action = 1,
        /// `OFPR_INVALID_TTL` (1.3): the packet's TTL ran out.
        InvalidTtl = 2,
    }
}

/// Length of 1.0's `ofp_packet_in` before the packet data (one pad byte after the
/// reason).
pub const PACKET_IN_V10_LEN: usize = field_v10::DATA;

view! {
    /// A view of a 1.0 PACKET_IN message, header included.
    PacketInV10
}

fields!(PacketInV10 {
    /// Switch buffer holding the packet, or [`NO_BUFFER`].
    buffer_id / set_buffer_id: u32 = field_v10::BUFFER_ID;
    /// Length of the whole packet (the data may be a prefix).
    total_len / set_total_len: u16 = field_v10::TOTAL_LEN;
    /// 16-bit input port.
    in_port / set_in_port: u16 = field_v10::IN_PORT;
    /// `OFPR_*` reason.
    reason / set_reason: u8 = field_v10::REASON;
});

impl<T: AsRef<[u8]>> PacketInV10<T> {
    /// Checks that the buffer holds the fixed part.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need("PACKET_IN", self.buffer.as_ref(), PACKET_IN_V10_LEN)
    }

    /// The packet bytes.
    pub fn data(&self) -> &[u8] {
        tail(self.buffer.as_ref(), field_v10::DATA)
    }
}

/// Byte offsets of 1.3's `ofp_packet_in`, header included. The match is followed by 2
/// pad bytes, so that an Ethernet frame's IP header lands 4-byte aligned.
mod field_v13 {
    pub(super) const BUFFER_ID: usize = 8;
    pub(super) const TOTAL_LEN: usize = 12;
    pub(super) const REASON: usize = 14;
    pub(super) const TABLE_ID: usize = 15;
    pub(super) const COOKIE: usize = 16;
    pub(super) const MATCH: usize = 24;
    pub(super) const PAD_AFTER_MATCH: usize = 2;
}

view! {
    /// A view of a 1.3 PACKET_IN message, header included.
    PacketInV13
}

fields!(PacketInV13 {
    /// Switch buffer holding the packet, or [`NO_BUFFER`].
    buffer_id / set_buffer_id: u32 = field_v13::BUFFER_ID;
    /// Length of the whole packet (the data may be a prefix).
    total_len / set_total_len: u16 = field_v13::TOTAL_LEN;
    /// `OFPR_*` reason.
    reason / set_reason: u8 = field_v13::REASON;
    /// Table the packet was looked up in.
    table_id / set_table_id: u8 = field_v13::TABLE_ID;
    /// Cookie of the flow that sent it.
    cookie / set_cookie: u64 = field_v13::COOKIE;
});

impl<T: AsRef<[u8]>> PacketInV13<T> {
    /// Checks that the buffer holds the fixed part, a well-formed match and the 2 pad
    /// bytes after it.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need("PACKET_IN", self.buffer.as_ref(), field_v13::MATCH)?;
        let match_len = OxmMatch::new_checked(self.match_bytes())?.padded_len();
        let data_at = field_v13::MATCH + match_len + field_v13::PAD_AFTER_MATCH;
        Error::need("PACKET_IN", self.buffer.as_ref(), data_at)
    }

    /// The match and everything after it.
    pub fn match_bytes(&self) -> &[u8] {
        tail(self.buffer.as_ref(), field_v13::MATCH)
    }

    fn data_offset(&self) -> usize {
        let match_len = OxmMatch::new_unchecked(self.match_bytes()).padded_len();
        field_v13::MATCH + match_len + field_v13::PAD_AFTER_MATCH
    }

    /// The packet bytes.
    pub fn data(&self) -> &[u8] {
        tail(self.buffer.as_ref(), self.data_offset())
    }
}

/// A packet from the switch.
///
/// Per version: 1.0 has no `table_id` or `cookie` (0 after parsing, not sent); 1.3
/// carries `in_port` as the OXM `IN_PORT` field of the packet-in's match (other match
/// fields are ignored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketIn {
    /// Switch buffer holding the packet; `None` when it is not buffered
    /// (`OFP_NO_BUFFER`).
    pub buffer_id: Option<u32>,
    /// Length of the whole packet.
    pub total_len: u16,
    /// Input port, 32-bit numbering.
    pub in_port: u32,
    /// Why the switch sent the packet.
    pub reason: PacketInReason,
    /// Table the packet was looked up in (1.3).
    pub table_id: u8,
    /// Cookie of the flow that sent it (1.3).
    pub cookie: u64,
    /// The packet, or its first bytes.
    pub data: Vec<u8>,
}

impl PacketIn {
    /// Reads a 1.0 PACKET_IN.
    pub fn parse_v10<T: AsRef<[u8]>>(view: &PacketInV10<T>) -> Result<Self, Error> {
        view.check_len()?;
        Ok(PacketIn {
            buffer_id: buffer_id_from_wire(view.buffer_id()),
            total_len: view.total_len(),
            in_port: port::from_v10(view.in_port()),
            reason: PacketInReason::from(view.reason()),
            table_id: 0,
            cookie: 0,
            data: view.data().to_vec(),
        })
    }

    /// Length of the 1.0 message, header included.
    pub fn buffer_len_v10(&self) -> usize {
        PACKET_IN_V10_LEN.saturating_add(self.data.len())
    }

    /// Writes the 1.0 body into a zeroed view of [`Self::buffer_len_v10`] bytes. Fails
    /// when the input port has no 1.0 form.
    pub fn emit_v10<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        view: &mut PacketInV10<T>,
    ) -> Result<(), Error> {
        view.set_buffer_id(buffer_id_to_wire(self.buffer_id));
        view.set_total_len(self.total_len);
        view.set_in_port(port::encode_v10("packet-in in_port", self.in_port)?);
        view.set_reason(u8::from(self.reason));
        write_slice(view.buffer.as_mut(), field_v10::DATA, &self.data);
        Ok(())
    }

    /// Reads a 1.3 PACKET_IN. Fails when the match has no `IN_PORT` field, which 1.3
    /// requires.
    pub fn parse_v13<T: AsRef<[u8]>>(view: &PacketInV13<T>) -> Result<Self, Error> {
        view.check_len()?;
        let (r#match, _) = flow_match::parse_prefix_v13(view.match_bytes())?;
        let in_port = r#match.in_port.ok_or(Error::MissingField {
            what: "PACKET_IN match in_port",
        })?;
        Ok(PacketIn {
            buffer_id: buffer_id_from_wire(view.buffer_id()),
            total_len: view.total_len(),
            in_port,
            reason: PacketInReason::from(view.reason()),
            table_id: view.table_id(),
            cookie: view.cookie(),
            data: view.data().to_vec(),
        })
    }

    /// Length of the 1.3 message, header included.
    pub fn buffer_len_v13(&self) -> usize {
        (field_v13::MATCH + field_v13::PAD_AFTER_MATCH)
            .saturating_add(Match::in_port_only(self.in_port).buffer_len_v13())
            .saturating_add(self.data.len())
    }

    /// Writes the 1.3 body into a zeroed view of [`Self::buffer_len_v13`] bytes.
    pub fn emit_v13<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        view: &mut PacketInV13<T>,
    ) -> Result<(), Error> {
        view.set_buffer_id(buffer_id_to_wire(self.buffer_id));
        view.set_total_len(self.total_len);
        view.set_reason(u8::from(self.reason));
        view.set_table_id(self.table_id);
        view.set_cookie(self.cookie);
        let r#match = Match::in_port_only(self.in_port);
        let buffer = view.buffer.as_mut();
        r#match.emit_v13(&mut OxmMatch::new_unchecked(tail_mut(
            buffer,
            field_v13::MATCH,
        )))?;
        let data_at = field_v13::MATCH + r#match.buffer_len_v13() + field_v13::PAD_AFTER_MATCH;
        write_slice(buffer, data_at, &self.data);
        Ok(())
    }
}
